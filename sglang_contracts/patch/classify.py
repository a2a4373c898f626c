"""`sglang-contracts patch classify MINE SKELETON`: a project's patch against the patch it derives from.

Relax derives its `sglang.patch` from slime's patch of the same release and asks, file by file
and hunk by hunk: the same change, an extra change on a shared file, or a file only we patch?
Hunks are compared by their real change, the `+` and `-` lines in order; `@@` offsets and
context lines are ignored, so the same change made against a shifted file still matches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sglang_contracts.infra.errors import UsageError
from sglang_contracts.infra.files import Unreadable, read_limited
from sglang_contracts.patch.patchfile import FilePatch, Hunk, PatchFile, parse_patch

SAME = "same"  # the skeleton has this change
EXTENDS = "extends"  # the skeleton's change plus more lines in the same hunk
EXTRA = "extra"  # a change the skeleton does not make, on a file it patches
ONLY_MINE = "only-mine"  # a file the skeleton does not patch
DROPPED = "dropped"  # a skeleton hunk the project's patch does not have


def change_of(hunk: Hunk) -> tuple[tuple[str, str], ...]:
    return tuple((kind, text.rstrip("\n")) for kind, text in hunk.body if kind != " ")


def _contains_in_order(longer: tuple, shorter: tuple) -> bool:
    items = iter(longer)
    return all(any(item == wanted for item in items) for wanted in shorter)


@dataclass
class HunkClass:
    line: int  # of the hunk header, in the patch it comes from
    header: str
    verdict: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "header": self.header, "verdict": self.verdict}


@dataclass
class FileClass:
    path: str
    verdict: str  # same, shared-with-extra, shared-partial, only-mine, only-skeleton
    hunks: list[HunkClass] = field(default_factory=list)
    dropped: list[HunkClass] = field(default_factory=list)  # skeleton hunks missing from mine

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "verdict": self.verdict, "hunks": [h.to_json() for h in self.hunks],
                "dropped": [h.to_json() for h in self.dropped]}


def _classify_file(mine: FilePatch, skeleton: FilePatch) -> FileClass:
    theirs = [change_of(h) for h in skeleton.hunks]
    matched: set[int] = set()
    hunks = []
    for hunk in mine.hunks:
        change = change_of(hunk)
        verdict = EXTRA
        for index, other in enumerate(theirs):
            if other == change and index not in matched:
                verdict = SAME
                matched.add(index)
                break
        else:
            for index, other in enumerate(theirs):
                if index not in matched and other and _contains_in_order(change, other):
                    verdict = EXTENDS
                    matched.add(index)
                    break
        hunks.append(HunkClass(hunk.line, hunk.header, verdict))
    dropped = [HunkClass(h.line, h.header, DROPPED) for i, h in enumerate(skeleton.hunks) if i not in matched]
    if any(h.verdict in (EXTRA, EXTENDS) for h in hunks):
        verdict = "shared-with-extra"
    elif dropped:
        verdict = "shared-partial"
    else:
        verdict = SAME
    return FileClass(mine.path, verdict, hunks, dropped)


def classify(mine: PatchFile, skeleton: PatchFile) -> list[FileClass]:
    theirs = {f.path: f for f in skeleton.files}
    result = []
    for file in mine.files:
        if file.path in theirs:
            result.append(_classify_file(file, theirs[file.path]))
        else:
            result.append(FileClass(file.path, ONLY_MINE, [HunkClass(h.line, h.header, ONLY_MINE) for h in file.hunks]))
    mine_paths = {f.path for f in mine.files}
    result += [FileClass(f.path, "only-skeleton", dropped=[HunkClass(h.line, h.header, DROPPED) for h in f.hunks])
               for f in skeleton.files if f.path not in mine_paths]
    return result


def read_patch(path: Path) -> PatchFile:
    try:
        text = read_limited(path).decode("utf-8", "surrogateescape")
    except Unreadable as error:
        raise UsageError(f"{path}: cannot read it ({error.reason})") from None
    patch = parse_patch(text)
    if patch.error is not None:
        raise UsageError(f"{path}: git apply would reject it: {patch.error[1]}")
    return patch


def render_text(classes: list[FileClass], mine: str, skeleton: str) -> str:
    words = {SAME: "the same change", "shared-with-extra": "extra changes on a shared file",
             "shared-partial": f"some of {skeleton}'s hunks are missing", ONLY_MINE: f"only in {mine}",
             "only-skeleton": f"only in {skeleton}"}
    out = []
    for file in classes:
        out.append(f"{file.path}: {words[file.verdict]} ({len(file.hunks or file.dropped)} hunks)")
        if file.verdict in ("shared-with-extra", "shared-partial"):
            out += [f"  {mine}:{h.line}: {h.verdict}  {h.header}" for h in file.hunks]
            out += [f"  {skeleton}:{h.line}: {h.verdict}  {h.header}" for h in file.dropped]
    return "".join(line + "\n" for line in out)
