"""TOML text parsed with one more bound than tomllib's: nesting deep enough to exhaust Python's
recursion (tomllib reads arrays and inline tables recursively; `x = [[[...]]]` 500 deep does it)
is invalid TOML like any other, never a RecursionError. And where the strings of a TOML text are
written, for the positions of findings in it."""

from __future__ import annotations

import re
import tomllib
from functools import lru_cache
from typing import Any, Iterator

from sglang_contracts.infra.lines import numbered_lines

# A string on one line: basic (`"`, its escapes as written) or literal (`'`). A `"` after a
# backslash opens none (TOML has no backslash outside strings): an unclosed string `"\"\"\"...`
# was tried again from each of its escaped quotes, reading the rest each time.
ONE_LINE_STRING = re.compile(r'(?<!\\)"((?:[^"\\]|\\.)*)"|\'([^\']*)\'')


def parse_toml(text: str) -> dict[str, Any]:
    """`tomllib.loads`, raising `tomllib.TOMLDecodeError` for every text it cannot read. The
    project's pyproject.toml is read by the configuration and by each reader of its requirements
    (five times a run): one parse of a text serves them all, and callers never change what it
    returns (a 4.9 MB list of 290,000 requirements took tomllib four seconds a parse: campaign
    18, R01)."""
    return _parsed(text)


@lru_cache(maxsize=4)
def _parsed(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise tomllib.TOMLDecodeError("nested too deeply") from None


def table(data: Any, *keys: str) -> dict[str, Any]:
    """The table at `keys` in a parsed document, or {} where a level is missing or is not a table
    (`optional-dependencies = "x"` in a project's pyproject is its text, not ours to trust)."""
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def toml_strings(text: str) -> Iterator[tuple[str, int, int, str]]:
    """(value as written, line, column of its opening quote (both from 1), the line's comment when
    the string precedes it) for each string on each line of a TOML text. Each line is read once,
    whatever the strings on it: a copy of the rest of the line per string made a one-line list of
    80,000 requirements a minute and a half's work (campaign 10, R05's class)."""
    for number, line in enumerate(numbered_lines(text), start=1):
        strings = list(ONE_LINE_STRING.finditer(line))
        comment_at = _comment_start(line, strings)
        comment = line[comment_at + 1:].strip() if comment_at is not None else ""
        for match in strings:
            value = match.group(1) if match.group(1) is not None else match.group(2)
            yield value, number, match.start() + 1, comment if comment_at is None or match.end() <= comment_at else ""


def _comment_start(line: str, strings: list[re.Match[str]]) -> int | None:
    """The line's first `#` outside its strings, or None."""
    after = 0
    for match in strings:
        at = line.find("#", after, match.start())
        if at >= 0:
            return at
        after = match.end()
    at = line.find("#", after)
    return at if at >= 0 else None
