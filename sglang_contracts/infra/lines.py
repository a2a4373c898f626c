"""Reading lines of text the way a shell, a YAML file or Python would, and finding words on them."""

from __future__ import annotations

import array
import ast
import base64
import io
import re
import zlib
from functools import lru_cache
from types import SimpleNamespace
from typing import Iterator

# What Python's tokenizer ends a line with (str.splitlines also splits at a form feed and
# other separators, and so numbers lines otherwise than the parser).
LINE_BREAK = re.compile(r"\r\n|\r|\n")
# Where str.splitlines ends a line besides LINE_BREAK.
_OTHER_SPLITLINES_BREAKS = "\v\f\x1c\x1d\x1e\x85\u2028\u2029"


def numbered_lines(text: str, keepends: bool = False) -> list[str]:
    """`text.splitlines(keepends)` ended only at LINE_BREAK, where Python's tokenizer and editors
    (the language server protocol) end lines: str.splitlines also ends one at a form feed,
    U+2028 and the rest of _OTHER_SPLITLINES_BREAKS, and so numbered every line after one
    otherwise (a `# noqa` read from the line before it). The package splits text here alone
    (tests/project/test_lines.py)."""
    if not any(char in text for char in _OTHER_SPLITLINES_BREAKS):  # nearly every text: the fast split
        return text.splitlines(keepends)
    if keepends:
        return io.StringIO(text, newline="").readlines()
    lines = LINE_BREAK.split(text)
    return lines[:-1] if not lines[-1] else lines


def pygls_lines(text: str) -> list[str]:
    """A document's lines, ends kept, as pygls numbers them for the positions an editor sends:
    str.splitlines, a form feed and U+2028 ending a line too (lsp/documents.py keeps pygls's text
    edit for edit, and its lines are what pygls places a position on)."""
    return text.splitlines(True)


def ends_a_pygls_line(line: str) -> bool:
    """Whether a line of pygls_lines ends with a line break (the last may not)."""
    return bool(line) and line.splitlines()[0] != line


def git_lines(text: str) -> list[str]:
    """Lines with their `\\n`, split only at `\\n` as git and diff do (a last line may lack it)."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


@lru_cache(maxsize=8)  # the texts of the module or two being read
def line_starts(text: str) -> tuple[int, ...]:
    """Where each line of Python source starts (LINE_BREAK's lines), from line 1."""
    return (0, *(match.end() for match in LINE_BREAK.finditer(text)))


def source_segment(text: str, node: ast.AST, padded: bool = False) -> str | None:
    """`ast.get_source_segment(text, node, padded=padded)`, given only the node's own lines: the
    standard one splits the whole text into lines, a character at a time, at every call (0.4 s
    of a cold run, for the parameter defaults of a few overrides of one large module)."""
    first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    if first is None or last is None or getattr(node, "end_col_offset", None) is None:
        return None
    starts = line_starts(text)
    if not 1 <= first <= last <= len(starts):
        return ast.get_source_segment(text, node, padded=padded)  # as it says of positions off the text
    end = starts[last] if last < len(starts) else len(text)
    local = SimpleNamespace(lineno=1, end_lineno=last - first + 1, col_offset=node.col_offset,
                            end_col_offset=node.end_col_offset)
    return ast.get_source_segment(text[starts[first - 1]:end], local, padded=padded)


def comment_start(line: str, spaced: bool = False) -> int | None:
    """Where a `#` comment starts on the line, outside single or double quotes; None if none does.
    `spaced`: only a `#` at the line's start or after white space opens one (a shell's rule:
    `a#b` is a word)."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (not spaced or index == 0 or line[index - 1].isspace()):
            return index
    return None


def find_from(lines: list[str], word: str, row: int, col: int, last_row: int | None = None) -> tuple[int, int] | None:
    """(row, column), both from 0, of the first `word` written at or after column `col` of row
    `row`, on the rows up to `last_row` (the last one when None); None when there is none. For
    placing each of a command's or a string's words, in order, where it is written."""
    last = len(lines) - 1 if last_row is None else min(last_row, len(lines) - 1)
    while row <= last:
        at = lines[row].find(word, col)
        if at != -1:
            return row, at
        row, col = row + 1, 0
    return None


def matches_at_line_start(pattern: re.Pattern[str], text: str) -> Iterator[tuple[str, re.Match[str]]]:
    """(indent, match) of each match of `pattern` that only spaces and tabs precede on its line,
    in order and without overlaps: what `(?m)^[ \\t]*` followed by `pattern` finds. `pattern`
    starts with a literal word (`from`): the engine then skips ahead to it, four times faster
    than trying `^` at every position of a whole release's text."""
    at = line_start = 0  # line_start: where the line holding `at` begins
    while (match := pattern.search(text, at)) is not None:
        start = match.start()
        line_start = text.rfind("\n", at, start) + 1 or line_start
        indent_end = line_start
        while indent_end < start and text[indent_end] in " \t":
            indent_end += 1
        if indent_end != start:
            # Nothing later on this line is at its start either: on to the next line, so that a
            # line of a million matches costs one pass, not one per match (campaign 4, D07)
            at = text.find("\n", start) + 1
            if not at:
                return
            line_start = at
            continue
        yield text[line_start:start], match
        at = match.end()
        line_start = text.rfind("\n", start, at) + 1 or line_start


def line_digests(text: str) -> list[int]:
    """A 64-bit digest of each line of a text (split at "\\n" alone), the same in every process:
    what tells, of two versions of a file, which lines are the same (incremental.moved_only)
    when only the digests of the old one are kept."""
    return [zlib.crc32(line) << 32 | zlib.adler32(line)
            for line in text.encode("utf-8", "surrogatepass").split(b"\n")]


def encoded_line_digests(text: str) -> str:
    return base64.b64encode(array.array("Q", line_digests(text)).tobytes()).decode("ascii")


def decoded_line_digests(encoded: object) -> list[int] | None:
    """encoded_line_digests' digests; None for anything else."""
    try:
        data = base64.b64decode(encoded, validate=True) if isinstance(encoded, str) else b"?"
        return array.array("Q", data).tolist() if len(data) % 8 == 0 else None
    except ValueError:
        return None
