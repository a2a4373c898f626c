"""Reading one line of text the way a shell, a YAML file or Python would."""

from __future__ import annotations


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
