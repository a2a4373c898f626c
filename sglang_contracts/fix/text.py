"""Text edits the stack fixes share: a requirement or a release tag at a finding's position,
found by their own syntax in the line, so a fix works in any file the check reads as text."""

from __future__ import annotations

import re
from dataclasses import dataclass


# `name[extras] <specifiers>` up to a marker, a quote, a comment or the end of the string.
REQUIREMENT = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*"
                         r"(?P<spec>(?:[<>=!~]=?|===)[^;\"'#\s\]]*(?:\s*,\s*(?:[<>=!~]=?)[^;\"'#\s,\]]*)*)")
EXACT = re.compile(r"==\s*(?P<v>[0-9][^,;\s]*)$")
# A release as a tag or a version: `v0.5.22.post1-cu129` -> `v`, `0.5.22.post1`, `-cu129`.
TAG_VERSION = re.compile(r"(?P<v>v?)(?P<number>\d+(?:\.\d+)+(?:(?:\.?post|rc|a|b)\d+)?)")


@dataclass(frozen=True)
class Span:
    start: int  # 0-based, in the line
    end: int
    text: str


def requirement_at(line: str, start: int) -> tuple[str, Span] | None:
    """(name, its specifier's span) of the requirement that starts at `start` of `line`."""
    match = REQUIREMENT.match(line, start)
    if match is None:
        return None
    return match.group("name"), Span(match.start("spec"), match.end("spec"), match.group("spec"))


def exact_pin(spec: str) -> str | None:
    """`0.5.21` of `==0.5.21`; None for a range."""
    match = EXACT.match(spec.strip())
    return match.group("v") if match else None


def version_at(line: str, start: int) -> Span | None:
    """The release number (after any `v`) of a tag or version that starts at `start`."""
    match = TAG_VERSION.match(line, start)
    return Span(match.start("number"), match.end("number"), match.group("number")) if match else None


def ordered_specifiers(spelled: str) -> str:
    """SGLang's spelling of a range, lower bounds first (`>=0.15,<0.16`), as people write them."""
    parts = [part.strip() for part in spelled.split(",") if part.strip()]
    return ",".join(sorted(parts, key=lambda p: (not p.startswith(">"), p)))
