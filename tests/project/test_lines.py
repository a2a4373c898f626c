"""Reading lines of text (infra/lines.py)."""

from __future__ import annotations

import ast
import re

from sglang_contracts.infra.lines import LINE_BREAK, git_lines, matches_at_line_start, numbered_lines
from tests.helpers import CHECKOUT

TEXT = '''\
from a import b
x = "from c import (d"
  from e import f
import g; from h import i
)
\tfrom j import (k,
    l)
'''


def test_matches_at_line_start_are_those_of_a_line_anchored_pattern() -> None:
    """Only matches that spaces and tabs alone precede on their line, each with that indent, and
    one a rejected match spans (the string's "from c import (d" runs to the `)` four lines on)
    is still found: what `(?m)^[ \\t]*from ...` finds, which was tried at every position."""
    clause = r"from[ \t]+(\w+)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)"
    found = [(indent, match.group(1)) for indent, match in matches_at_line_start(re.compile(clause), TEXT)]
    anchored = re.compile(r"^([ \t]*)" + clause.replace("(\\w+)", "(?P<m>\\w+)"), re.M)
    assert found == [(m.group(1), m.group("m")) for m in anchored.finditer(TEXT)]
    assert found == [("", "a"), ("  ", "e"), ("\t", "j")]


def test_lines_end_where_the_parser_ends_them() -> None:
    assert LINE_BREAK.split("a\nb\r\nc\x0cd\re") == ["a", "b", "c\x0cd", "e"]  # not at the form feed


SEPARATED = "a\x0bb\x0cc\x1cd\x1de\x1ef\x85g\u2028h\u2029i"  # one line to Python, nine to str.splitlines


def test_numbered_lines_are_the_lines_python_numbers() -> None:
    text = f"a = 1  # {SEPARATED}\r\nb = 2\rc = 3\n\nd = 4  # {SEPARATED}\n"
    lines, statements = numbered_lines(text), ast.parse(text).body
    assert [lines[s.lineno - 1][:1] for s in statements] == [s.targets[0].id for s in statements]
    assert len(lines) == statements[-1].lineno  # no line after the last newline, as str.splitlines
    kept = numbered_lines(text, keepends=True)
    assert "".join(kept) == text and [LINE_BREAK.sub("", line) for line in kept] == lines
    assert numbered_lines("") == numbered_lines("", keepends=True) == [] and numbered_lines(SEPARATED) == [SEPARATED]


def test_git_lines_end_at_a_newline_alone() -> None:
    assert git_lines(f"{SEPARATED}\r\nx\ry\nz") == [f"{SEPARATED}\r\n", "x\ry\n", "z"]
    assert git_lines("") == [] and git_lines("\n\n") == ["\n", "\n"]


def test_no_module_splits_lines_but_infra_lines() -> None:
    """str.splitlines also ends a line at a form feed and U+2028 (ninth campaign, R08): a line
    number it counts is not Python's, an editor's or git's. Every text goes through
    infra/lines.py (numbered_lines, or git_lines for diffs and patches)."""
    found = []
    for path in sorted((CHECKOUT / "sglang_contracts").rglob("*.py")):
        if path.relative_to(CHECKOUT).as_posix() == "sglang_contracts/infra/lines.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{path.relative_to(CHECKOUT)}:{node.lineno}" for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and node.attr == "splitlines"]
    assert found == []


def test_source_segment_is_the_standard_segment_from_the_nodes_own_lines() -> None:
    import ast

    from sglang_contracts.infra.lines import source_segment

    text = ("def f(a='é', b=(1,\r\n        2), *, c={'k':\r 'v'}):\n"
            "\x0c    return [a,\n  b]  # ünïcode before: byte columns\nx = '\u2028'; y = f(\n1)")
    nodes = [node for node in ast.walk(ast.parse(text)) if hasattr(node, "end_lineno")]
    assert len(nodes) > 20
    for node in nodes:
        for padded in (False, True):
            assert source_segment(text, node, padded) == ast.get_source_segment(text, node, padded=padded)
    assert source_segment(text, ast.Name("q")) is None  # no position: none, as the standard one says
