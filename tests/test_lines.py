"""Reading lines of text (infra/lines.py)."""

from __future__ import annotations

import re

from sglang_contracts.infra.lines import LINE_BREAK, matches_at_line_start

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
