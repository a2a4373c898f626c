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
