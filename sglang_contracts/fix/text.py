"""Text edits the stack fixes share: a requirement or a release tag at a finding's position,
found by their own syntax in the line, so a fix works in any file the check reads as text."""

from __future__ import annotations

import re
from dataclasses import dataclass


# `name[extras] <specifiers>` up to a marker, a quote, a comment or the end of the string.
REQUIREMENT = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*"
                         r"(?P<spec>(?:[<>=!~]=?|===)[^;\"'#\s\]]*(?:\s*,\s*(?:[<>=!~]=?)[^;\"'#\s,\]]*)*)")
EXACT = re.compile(r"==\s*(?P<v>[0-9][^,;\s]*)$")
# Where a word starts in a line: a requirement is looked for there only.
WORD_START = re.compile(r"(?<![^\s\"'(\[,])\S")
# Distributions built and released as one set: a pin of one names the build of the others.
MOVES_TOGETHER = (frozenset({"torch", "torchvision", "torchaudio"}),)
# The suffixes of an SGLang image tag a fix rewrites: none, or a CUDA build's (`-cu129`). A dated
# or platform tag (`v0.5.16-rocm720-mi35x-20260730`) has no counterpart of the same shape.
PLAIN_TAG_SUFFIX = re.compile(r"(?:-cu\d+)?")
# A setting of a script, a Dockerfile or a workflow: `NAME=value`, `export NAME="value"`,
# `ARG NAME=value`, `ENV NAME value`, `name: value`. Matched at a line's start only.
SETTING = re.compile(r"\s*(?:export\s+|ARG\s+|ENV\s+)?(?P<name>[A-Za-z_]\w*)(?:\s*[=:]\s*|\s+)[\"']?(?P<value>[^\s\"']+)")
# Words of a setting's name that say it names one commit of the release (`SGLANG_COMMIT=3f2a...`):
# it moves with the version, and only a clone says which commit the new release is.
COMMIT_WORDS = ("COMMIT", "SHA", "REVISION")
COMMIT_VALUE = re.compile(r"[0-9a-fA-F]{7,40}")
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
    """(name, specifier span) of every requirement written in a line (a `pip install` of several),
    each matched where a word starts (a scan for them from every position backtracks)."""
    return [found for word in WORD_START.finditer(line) if (found := requirement_at(line, word.start())) is not None]


def commit_setting(line: str) -> str | None:
    """The name of the setting a line makes when it names a commit of SGLang (`SGLANG_COMMIT=3f2a9c8`);
    another project's commit (slime's `MEGATRON_COMMIT`) is not one."""
    setting = SETTING.match(line)
    name = setting.group("name").upper() if setting is not None else ""
    if "SGL" not in name or not any(word in name for word in COMMIT_WORDS):
        return None
    return setting.group("name") if COMMIT_VALUE.fullmatch(setting.group("value")) else None


def command_at(lines: list[str], row: int) -> tuple[int, int]:
    """The 0-based rows [first, last] of the shell command or Dockerfile instruction that line
    `row` is part of: its lines joined by trailing backslashes."""
    first = row
    while first > 0 and lines[first - 1].rstrip().endswith("\\"):
        first -= 1
    last = row
    while last < len(lines) - 1 and lines[last].rstrip().endswith("\\"):
        last += 1
    return first, last


def held_in_command(lines: list[str], row: int, col: int) -> str | None:
    """The exact version of the requirement at (row, col) when its command names that version
    again (the pins of its companions, an assert of them all: miles' cutlass-dsl block), so that
    it moves only with them; None otherwise."""
    found = requirement_at(lines[row], col) if 0 <= row < len(lines) else None
    pinned = exact_pin(found[1].text) if found is not None else None
    if pinned is None:
        return None
    first, last = command_at(lines, row)
    return pinned if "\n".join(lines[first:last + 1]).count(pinned) > 1 else None


def names_version(text: str, version: str) -> bool:
    """Does `text` name `version` as a whole (`2.11.0` in `== "2.11.0+cu129"`, not in `12.11.0`)?"""
    start = text.find(version)
    while start != -1:
        before = text[start - 1] if start else " "
        after = text[start + len(version)] if start + len(version) < len(text) else " "
        if not (before.isalnum() or before in "._") and not (after.isalnum() or after in "._"):
            return True
        start = text.find(version, start + 1)
    return False


def used_in_a_path(variable: str, text: str) -> bool:
    """Does the text use the shell variable as a part of a path (`/$V/`, `${V}/`, `.../$V`)?"""
    for written in (f"${{{variable}}}", f"${variable}"):
        start = text.find(written)
        while start != -1:
            end = start + len(written)
            after = text[end] if end < len(text) else ""
            whole = written.endswith("}") or not (after.isalnum() or after == "_")
            if whole and (text[start - 1: start] == "/" or after == "/"):
                return True
            start = text.find(written, end)
    return False


def moves_with(name: str) -> frozenset[str]:
    """The other distributions released with `name` (normalised names), or none."""
    return next((family - {name} for family in MOVES_TOGETHER if name in family), frozenset())


def tag_suffix(line: str, end: int) -> str:
    """What follows a tag's release number at `end` up to the tag's end (`-cu129`, `-rocm720-...`)."""
    match = re.match(r"[\w.+-]*", line[end:])
    return match.group(0) if match else ""
