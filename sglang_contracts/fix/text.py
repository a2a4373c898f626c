"""Text edits the stack fixes share: a requirement or a release tag at a finding's position,
found by their own syntax in the line, so a fix works in any file the check reads as text."""

from __future__ import annotations

import re
from dataclasses import dataclass


# `name[extras] <specifiers>` up to a marker, a quote, a comment or the end of the string.
REQUIREMENT = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*"
                         r"(?P<spec>(?:[<>=!~]=?|===)[^;\"'#\s\]]*(?:\s*,\s*(?:[<>=!~]=?)[^;\"'#\s,\]]*)*)")
EXACT = re.compile(r"==\s*(?P<v>[0-9][^,;\s]*)$")
# Distributions built and released as one set: a pin of one names the build of the others.
MOVES_TOGETHER = (frozenset({"torch", "torchvision", "torchaudio"}),)
# The suffixes of an SGLang image tag a fix rewrites: none, or a CUDA build's (`-cu129`). A dated
# or platform tag (`v0.5.16-rocm720-mi35x-20260730`) has no counterpart of the same shape.
PLAIN_TAG_SUFFIX = re.compile(r"(?:-cu\d+)?")
# A build setting that names one commit of the release (`SGLANG_COMMIT=3f2a...`): it moves with
# the version, and only a clone says which commit the new release is.
COMMIT_SETTING = re.compile(r"(?i)\b(?P<name>[A-Z0-9_]*(?:COMMIT|SHA|REVISION)[A-Z0-9_]*)\s*[:=]\s*[\"']?[0-9a-f]{7,40}\b")
# A setting of a script, a Dockerfile or a workflow: `NAME=value`, `export NAME="value"`,
# `ARG NAME=value`, `ENV NAME value`, `name: value`.
SETTING = re.compile(r"^\s*(?:export\s+|ARG\s+|ENV\s+)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(?:=|:|\s)\s*[\"']?(?P<value>[^\s\"']+)")
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


def requirements_in(line: str) -> list[tuple[str, Span]]:
    """(name, specifier span) of every requirement written in a line (a `pip install` of several)."""
    return [(match.group("name"), Span(match.start("spec"), match.end("spec"), match.group("spec")))
            for match in REQUIREMENT.finditer(line)]


def moves_with(name: str) -> frozenset[str]:
    """The other distributions released with `name` (normalised names), or none."""
    return next((family - {name} for family in MOVES_TOGETHER if name in family), frozenset())


def tag_suffix(line: str, end: int) -> str:
    """What follows a tag's release number at `end` up to the tag's end (`-cu129`, `-rocm720-...`)."""
    match = re.match(r"[\w.+-]*", line[end:])
    return match.group(0) if match else ""
