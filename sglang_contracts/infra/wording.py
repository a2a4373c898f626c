"""English the messages and the reports share: counts with their nouns, nouns with their articles."""

from __future__ import annotations


def plural(count: int, noun: str) -> str:
    """`1 error`, `2 errors`."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def with_article(noun: str) -> str:
    """`an attribute`, `a class`."""
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"
