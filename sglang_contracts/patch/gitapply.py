"""Does a patch apply to a release? `git apply --check --reject`, hunk by hunk, with git's semantics.

Follows git's `apply.c` with its defaults (no `--recount`, no `-C`, `--whitespace=warn`):
a hunk applies where its preimage (context and `-` lines) matches the file exactly, searched
outward from the line its header names (`find_pos`); a hunk that starts at line 0 or 1 must
match at the top of the file, one with no trailing context at its end; lines an earlier hunk
produced cannot be matched again. No fuzz: every context line must match. Hunks of one file
are applied in order, a failing hunk is skipped (what `--reject` does) and the next is tried.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from sglang_contracts.infra.markdown import code_span
from sglang_contracts.patch.patchfile import FilePatch, Hunk, PatchFile, split_lines

APPLIES = "applies"
ALREADY = "already-applied"
CONTEXT = "context-changed"
GONE = "file-gone"
EXISTS = "file-exists"
LEAVES = "removal-leaves-content"
CORRUPT = "corrupt-patch"
UNKNOWN = "not-checked"  # binary patches, files outside the package, files the release does not ship


@dataclass(frozen=True)
class HunkVerdict:
    file: FilePatch
    hunk: Hunk | None  # None for a file patch without hunks (a binary patch, a pure rename)
    number: int  # 1-based within its file patch
    status: str
    detail: str = ""  # for a context change: what no longer matches
    at: int | None = None  # 1-based line where it applied

    @property
    def applies(self) -> bool:
        return self.status == APPLIES


class Image:
    """A file's lines while hunks are applied to it, with git's LINE_PATCHED marks."""

    def __init__(self, text: str) -> None:
        self.lines = split_lines(text)
        self.patched = [False] * len(self.lines)

    def matches(self, at: int, preimage: list[str], match_beginning: bool, match_end: bool) -> bool:
        if at + len(preimage) > len(self.lines):
            return False
        if match_end and at + len(preimage) != len(self.lines):
            return False
        if match_beginning and at:
            return False
        return all(not self.patched[at + i] and self.lines[at + i] == line for i, line in enumerate(preimage))

    def find(self, hunk: Hunk) -> int | None:
        """Where the hunk's preimage matches (git's find_pos), or None."""
        preimage = hunk.preimage
        match_beginning = hunk.old_start <= 1
        match_end = hunk.trailing == 0
        line = hunk.new_start - 1 if hunk.new_start else 0
        if match_beginning:
            line = 0
        elif match_end:
            line = len(self.lines) - len(preimage)
        if line < 0 or line > len(self.lines):
            line = len(self.lines)
        backwards = forwards = current = line
        step = 0
        while True:
            if self.matches(current, preimage, match_beginning, match_end):
                return current
            while True:
                if backwards == 0 and forwards == len(self.lines):
                    return None
                if step & 1:
                    if backwards == 0:
                        step += 1
                        continue
                    backwards -= 1
                    current = backwards
                else:
                    if forwards == len(self.lines):
                        step += 1
                        continue
                    forwards += 1
                    current = forwards
                break
            step += 1

    def places(self, hunk: Hunk, enough: int = 2) -> int:
        """How many places the hunk's preimage matches, counted up to `enough`: more than one,
        and where git puts it is only the one nearest its header's line (a context of blank
        lines matches in every class)."""
        preimage = hunk.preimage
        match_beginning, match_end = hunk.old_start <= 1, hunk.trailing == 0
        found = 0
        first = preimage[0] if preimage else None
        for at in range(len(self.lines) - len(preimage) + 1):
            if (first is None or self.lines[at] == first) and self.matches(at, preimage, match_beginning, match_end):
                found += 1
                if found >= enough:
                    break
        return found

    def apply(self, hunk: Hunk) -> int | None:
        at = self.find(hunk)
        if at is None:
            return None
        size = len(hunk.preimage)
        postimage = hunk.postimage
        self.lines[at:at + size] = postimage
        self.patched[at:at + size] = [True] * len(postimage)
        return at

    def text(self) -> str:
        return "".join(self.lines)


def what_changed(image_text: str, hunk: Hunk) -> str:
    """Why a hunk's preimage is not in the file: its first line that is gone, or that its lines
    are no longer together."""
    present = set(split_lines(image_text))
    if hunk.preimage and all(line.endswith("\r\n") for line in hunk.preimage) != any(
            line.endswith("\r\n") for line in present):
        ends = ("CRLF", "LF") if hunk.preimage[0].endswith("\r\n") else ("LF", "CRLF")
        return f"its lines end in {ends[0]} and the file's in {ends[1]}"
    for line in hunk.preimage:
        if line not in present and line.strip():
            kind = "removed" if line in hunk.removed else "context"
            return f"{kind} line {code_span(line.strip())} is no longer in the file"
    return "its lines are still there but no longer together"


def check_file(file: FilePatch, read: Callable[[str], str | None], exists: Callable[[str], bool],
               images: dict[str, Image], unchecked: Callable[[str], str] = lambda path: "") -> list[HunkVerdict]:
    """Verdicts for the hunks of one file patch; `images` carries files patched earlier in the patch.
    `unchecked(path)` says why a file cannot be judged (outside the tree read), or ""."""
    hunks = file.hunks or [None]
    every = lambda status, detail="": [  # noqa: E731
        HunkVerdict(file, h, n, status, detail) for n, h in enumerate(hunks, start=1)]
    if file.binary:
        return every(UNKNOWN, "binary patch")
    target = file.new_path if file.is_new else file.old_path
    if target is None:
        return every(UNKNOWN, "no file name")
    if file.unsafe_reason:
        return every(UNKNOWN, file.unsafe_reason)
    if unchecked(target):
        return every(UNKNOWN, unchecked(target))
    if file.is_new:
        if target in images or exists(target):
            return _new_file_exists(file, images[target].text() if target in images else read(target) or "")
        image = Image("")
    else:
        if target in images:  # patched earlier in this patch: git starts from that result, with no marks
            image = Image(images[target].text())
        else:
            text = read(target)
            if text is None:
                return every(ALREADY if file.is_delete else GONE)
            image = Image(text)
    verdicts = []
    for number, hunk in enumerate(file.hunks, start=1):
        before = image.text()
        at = image.apply(hunk)
        if at is not None:
            verdicts.append(HunkVerdict(file, hunk, number, APPLIES, at=at + 1))
        elif Image(before).find(hunk.reversed()) is not None:
            verdicts.append(HunkVerdict(file, hunk, number, ALREADY))
        else:
            verdicts.append(HunkVerdict(file, hunk, number, CONTEXT, what_changed(before, hunk)))
    if file.is_delete and image.text():
        return every(LEAVES, "the file has lines the deletion does not remove")
    images[file.new_path or target] = image
    return verdicts or every(APPLIES)


def _new_file_exists(file: FilePatch, text: str) -> list[HunkVerdict]:
    """A patch that creates a file the release already has: already applied if it has that content."""
    content = "".join(line for hunk in file.hunks for line in hunk.postimage)
    status = ALREADY if content == text else EXISTS
    return [HunkVerdict(file, hunk, n, status) for n, hunk in enumerate(file.hunks or [None], start=1)]


def check_patch(patch: PatchFile, read: Callable[[str], str | None],
                unchecked: Callable[[str], str] = lambda path: "",
                images: dict[str, Image] | None = None) -> list[HunkVerdict]:
    """Every hunk's verdict, in patch order. `read(path)` gives a file of the tree by its patch
    path; `images`, when given, receives each patched file's result by its patch path."""
    exists = lambda path: read(path) is not None  # noqa: E731
    if patch.error is not None:
        line, message = patch.error
        return [HunkVerdict(f, h, n, CORRUPT, message) for f in patch.files for n, h in enumerate(f.hunks or [None], 1)]
    images = {} if images is None else images
    verdicts: list[HunkVerdict] = []
    for file in patch.files:
        verdicts += check_file(file, read, exists, images, unchecked)
    return verdicts


@dataclass
class StackResult:
    verdicts: list[list[HunkVerdict]]  # per patch, in stack order
    patched: dict[str, str | None]  # the tree after the stack, by patch path: text, or None once deleted


def check_stack(patches: list[PatchFile], read: Callable[[str], str | None],
                unchecked: Callable[[str], str] = lambda path: "") -> StackResult:
    """Each patch judged on the tree with the ones before it applied, as a Dockerfile's
    `git apply` loop does; a hunk that fails is left out (`--reject`) and the next patch is
    judged on what did apply, so a hunk that needs it fails too, as it would in the image."""
    patched: dict[str, str | None] = {}
    read_now = lambda path: patched[path] if path in patched else read(path)  # noqa: E731
    unchecked_now = lambda path: "" if patched.get(path) is not None else unchecked(path)  # noqa: E731
    verdicts = []
    for patch in patches:
        images: dict[str, Image] = {}
        judged = check_patch(patch, read_now, unchecked_now, images)
        verdicts.append(judged)
        patched.update((path, image.text()) for path, image in images.items())  # with what applied of it
        applied = {id(v.file) for v in judged if v.applies}
        for file in patch.files:  # a deletion or rename that applied leaves no file at the old path
            if id(file) in applied and file.old_path and (file.is_delete or file.is_rename):
                patched[file.old_path] = None
    return StackResult(verdicts, patched)
