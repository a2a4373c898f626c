"""File names as git writes them in a patch's header lines, and read back.

git writes a name holding a control character, a `"`, a `\\` or a byte past ASCII in C quotes
(`"a/t\\tb.py"`, `"a/caf\\303\\251.py"`: core.quotePath's default) and `git apply` reads that form;
a name escaped for a terminal (`a/t\\tb.py`) names another file to it (campaign 10, R06).
"""

from __future__ import annotations

import os
import re

# git's own escapes (quote.c); every other byte that must be quoted is written as three octal digits.
_ESCAPES = {0x07: "a", 0x08: "b", 0x09: "t", 0x0A: "n", 0x0B: "v", 0x0C: "f", 0x0D: "r", 0x22: '"', 0x5C: "\\"}
_UNESCAPES = {letter: byte for byte, letter in _ESCAPES.items()}
# A C-quoted name as git writes one, and its pieces: an escape, or a run of characters as they are.
_QUOTED = re.compile(r'"((?:[^"\\]|\\(?:[0-3][0-7]{2}|[abtnvfr"\\]))*)"')
_PIECE = re.compile(r"\\(?:[0-3][0-7]{2}|.)|[^\\]+")


def git_quoted(name: str, octal: str = "") -> str:
    """`name` as git writes it in a header line: as it is, or C-quoted when a byte needs it. A
    name os.fsdecode read with surrogates stands for its bytes, which are what is quoted.
    `octal`: ASCII characters also written as escapes, which git apply reads back as the same
    name (a `#` of `##[`, which GitHub's runner reads as a command anywhere in a line)."""
    raw = os.fsencode(name)
    forced = set(octal.encode("ascii"))
    if not any(byte < 0x20 or byte >= 0x7F or byte in _ESCAPES or byte in forced for byte in raw):
        return name
    return '"' + "".join(_quoted_byte(byte, forced) for byte in raw) + '"'


def _quoted_byte(byte: int, forced: set[int]) -> str:
    if byte in _ESCAPES:
        return f"\\{_ESCAPES[byte]}"
    return f"\\{byte:03o}" if byte < 0x20 or byte >= 0x7F or byte in forced else chr(byte)


def git_unquoted(quoted: str) -> str | None:
    """The name a C-quoted header name stands for (`"a/t\\tb.py"`, its quotes included), its bytes
    read as os.fsdecode reads a file name; None when `quoted` is not one git writes."""
    match = _QUOTED.fullmatch(quoted)
    if match is None:
        return None
    return os.fsdecode(b"".join(_unescaped(piece) if piece.startswith("\\") else os.fsencode(piece)
                                for piece in _PIECE.findall(match.group(1))))


def _unescaped(escape: str) -> bytes:
    code = escape[1:]
    return bytes([int(code, 8) if len(code) == 3 else _UNESCAPES[code]])
