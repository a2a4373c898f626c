"""Counts and articles in messages read as English (issue 37 §7: "1 positional arguments", "a attribute")."""

from __future__ import annotations

from sglang_contracts.contracts.calls import bind
from sglang_contracts.infra.wording import plural, with_article
from sglang_contracts.project.facts import ArgFact, Position
from sglang_contracts.upstream.model import Signature


def test_counts_and_articles() -> None:
    assert [plural(n, "file") for n in (0, 1, 2)] == ["0 files", "1 file", "2 files"]
    assert [with_article(noun) for noun in ("attribute", "class", "override")] == ["an attribute", "a class", "an override"]


def test_too_many_positional_arguments_are_counted_in_english() -> None:
    no_positional = Signature((("flag", "ko", True),), "m.f")
    one = bind(no_positional, (ArgFact("pos", "x", Position(1, 5)),))
    assert [problem.detail for problem in one.problems] == ["1 positional argument given, it takes 0"]
    two = bind(no_positional, (ArgFact("pos", "x", Position(1, 5)), ArgFact("pos", "y", Position(1, 8))))
    assert [problem.detail for problem in two.problems] == ["2 positional arguments given, it takes 0"]


def test_a_changed_line_cut_in_a_name_is_one_code_span_in_markdown() -> None:
    """SGC303's preview of a long changed line starts and ends inside names: as one span per
    line, markdown shows it whole, never half a name as code and the rest as prose."""
    from sglang_contracts.infra.markdown import code_span, inline

    cut = "...hed_prefix_chunk(req, allow_send=not load_pending)"
    message = f"body changed (first change: -{code_span(cut[:30] + '...')} | +{code_span(cut)})"
    shown = inline(message)
    assert f"-`{cut[:30]}...`" in shown and f"+`{cut}`" in shown
