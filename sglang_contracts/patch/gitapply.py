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
from bisect import bisect_right
from collections import Counter
from typing import Callable, Iterator

from sglang_contracts.infra.lines import git_lines
from sglang_contracts.infra.markdown import code_span
from sglang_contracts.patch.patchfile import FilePatch, Hunk, PatchFile

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


# A rarest line with more copies than this: where a preimage may start is first narrowed by
# two of its lines' places, as sets (Image._possible_starts).
MANY_COPIES = 64

class Image:
    """A file's lines while hunks are applied to it, with git's LINE_PATCHED marks.

    Where a line's text is, is indexed in blocks of BLOCK lines (text -> offsets in the block),
    and a hunk's preimage is looked for only where its line of the fewest copies is: searching
    the whole file, place by place, for each hunk of a patch of thousands took minutes
    (audit 7, P12). An applied hunk re-indexes the blocks it touches and moves the later ones."""

    BLOCK = 256

    def __init__(self, text: str) -> None:
        self.lines = git_lines(text)
        self.patched = [False] * len(self.lines)
        self.copies = Counter(self.lines)
        self._possible: dict[tuple[str, int, str, int], set[int]] = {}  # _possible_starts', until the image changes
        self.crlf = sum(line.endswith("\r\n") for line in self.lines)  # lines that end in CRLF
        self.starts: list[int] = []  # of each block, in the file
        self.blocks: list[dict[str, list[int]]] = []  # text -> its offsets in the block, ascending
        self.starts, self.blocks = self._indexed(0, len(self.lines))

    def _indexed(self, begin: int, end: int) -> tuple[list[int], list[dict[str, list[int]]]]:
        """Lines [begin, end) in blocks of BLOCK to 2 * BLOCK lines (fewer where they are fewer)."""
        count = (end - begin) and max((end - begin) // self.BLOCK, 1)
        starts = [begin + (end - begin) * number // count for number in range(count)]
        blocks = []
        for start, stop in zip(starts, [*starts[1:], end]):
            block: dict[str, list[int]] = {}
            for offset, line in enumerate(self.lines[start:stop]):
                block.setdefault(line, []).append(offset)
            blocks.append(block)
        return starts, blocks

    def _block_of(self, line: int) -> int:
        return max(bisect_right(self.starts, line) - 1, 0)

    def _forwards(self, text: str, line: int) -> Iterator[int]:
        """Where `text` is, from `line` on, nearest first."""
        for number in range(self._block_of(line), len(self.blocks)):
            start = self.starts[number]
            yield from (start + offset for offset in self.blocks[number].get(text, ()) if start + offset >= line)

    def _backwards(self, text: str, line: int) -> Iterator[int]:
        """Where `text` is before `line`, nearest first."""
        for number in range(min(self._block_of(line), len(self.blocks) - 1), -1, -1):
            start = self.starts[number]
            offsets = reversed(self.blocks[number].get(text, ()))
            yield from (start + offset for offset in offsets if start + offset < line)

    def _outwards(self, text: str, line: int) -> Iterator[int]:
        """Where `text` is, in the order git's find_pos tries places: nearest `line` first, the
        one after before the one before where two are as near."""
        forwards, backwards = self._forwards(text, line), self._backwards(text, line)
        after, before = next(forwards, None), next(backwards, None)
        while after is not None or before is not None:
            if before is None or (after is not None and after - line <= line - before):
                yield after
                after = next(forwards, None)
            else:
                yield before
                before = next(backwards, None)

    def matches(self, at: int, preimage: list[str], match_beginning: bool, match_end: bool,
                marked: bool = True) -> bool:
        if at + len(preimage) > len(self.lines):
            return False
        if match_end and at + len(preimage) != len(self.lines):
            return False
        if match_beginning and at:
            return False
        return all((not marked or not self.patched[at + i]) and self.lines[at + i] == line
                   for i, line in enumerate(preimage))

    def _rarest(self, preimage: list[str]) -> int:
        """The preimage's line with the fewest copies in the file."""
        return min(range(len(preimage)), key=lambda index: self.copies[preimage[index]])

    def _possible_starts(self, preimage: list[str], key: int) -> set[int] | None:
        """Where the preimage may start, by where its rarest line (`key`) and its next rarest
        both are (a superset of where it matches); None when the rarest line is rare enough
        for each of its places to be tried. A file of a few repeated lines and hunks that
        match nowhere made every copy a try: 1,000 hunks on 30,000 lines, past a minute
        (eighth campaign, Q03)."""
        if len(preimage) < 2 or self.copies[preimage[key]] <= MANY_COPIES:
            return None
        other = min((index for index in range(len(preimage)) if index != key),
                    key=lambda index: self.copies[preimage[index]])
        asked = (preimage[key], key, preimage[other], other)
        known = self._possible.get(asked)
        if known is None:  # kept until a hunk is applied: such hunks come by the thousand
            starts = {place - key for place in self._forwards(preimage[key], 0)}
            others = self._forwards(preimage[other], 0)
            known = self._possible[asked] = starts.intersection(place - other for place in others)
        return known

    def find(self, hunk: Hunk, marked: bool = True) -> int | None:
        """Where the hunk's preimage matches (git's find_pos), or None; `marked=False` matches
        lines earlier hunks produced too, as a fresh image of the same text does."""
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
        if match_beginning or match_end or not preimage:  # one place only can match
            return line if self.matches(line, preimage, match_beginning, match_end, marked) else None
        key = self._rarest(preimage)
        possible = self._possible_starts(preimage, key)
        if possible is not None and not possible:
            return None
        for found in self._outwards(preimage[key], line + key):
            at = found - key
            if at >= 0 and (possible is None or at in possible) and self.matches(at, preimage, False, False, marked):
                return at
        return None

    def places(self, hunk: Hunk, enough: int = 2) -> int:
        """How many places the hunk's preimage matches, counted up to `enough`: more than one,
        and where git puts it is only the one nearest its header's line (a context of blank
        lines matches in every class)."""
        preimage = hunk.preimage
        match_beginning, match_end = hunk.old_start <= 1, hunk.trailing == 0
        if not preimage:
            at_most = 1 if match_beginning or match_end else len(self.lines) + 1
            return min(enough, at_most if not match_end or not match_beginning or not self.lines else 0)
        key = self._rarest(preimage)
        possible = self._possible_starts(preimage, key)
        if possible is not None and not possible:
            return 0
        found = 0
        for place in self._forwards(preimage[key], key):
            if (possible is None or place - key in possible) and self.matches(place - key, preimage, match_beginning,
                                                                              match_end):
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
        self.copies.subtract(self.lines[at:at + size])
        self.copies.update(postimage)
        self.crlf += sum(line.endswith("\r\n") for line in postimage) - sum(
            line.endswith("\r\n") for line in self.lines[at:at + size])
        self.lines[at:at + size] = postimage
        self.patched[at:at + size] = [True] * len(postimage)
        self._reindex(at, size, len(postimage))
        self._possible.clear()
        return at

    def _reindex(self, at: int, size: int, replaced_by: int) -> None:
        """The blocks lines [at, at + size) were in, indexed again now that they are replaced."""
        first = self._block_of(at)
        last = self._block_of(at + size - 1) if size else first
        if last + 1 < len(self.blocks) and self.starts[last + 1] - self.starts[first] + replaced_by - size < self.BLOCK:
            last += 1  # too few lines left for a block: joined to the next one
        begin = self.starts[first] if self.blocks else 0
        end = self.starts[last + 1] if last + 1 < len(self.blocks) else len(self.lines) - replaced_by + size
        moved = replaced_by - size
        starts, blocks = self._indexed(begin, end + moved)
        self.starts[first:last + 1], self.blocks[first:last + 1] = starts, blocks
        for number in range(first + len(starts), len(self.starts)):
            self.starts[number] += moved

    def text(self) -> str:
        return "".join(self.lines)

    def text_before(self, at: int, hunk: Hunk) -> str:
        """The text as it was before `hunk` was applied at `at`, the last change made."""
        return "".join(self.lines[:at]) + "".join(hunk.preimage) + "".join(self.lines[at + len(hunk.postimage):])


def what_changed(image: Image, hunk: Hunk) -> str:
    """Why a hunk's preimage is not in the file: its first line that is gone, or that its lines
    are no longer together."""
    if hunk.preimage and all(line.endswith("\r\n") for line in hunk.preimage) != (image.crlf > 0):
        ends = ("CRLF", "LF") if hunk.preimage[0].endswith("\r\n") else ("LF", "CRLF")
        return f"its lines end in {ends[0]} and the file's in {ends[1]}"
    for line in hunk.preimage:
        if image.copies[line] <= 0 and line.strip():
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
        at = image.apply(hunk)  # a hunk that does not apply leaves the image as it was
        if at is not None:
            verdicts.append(HunkVerdict(file, hunk, number, APPLIES, at=at + 1))
        elif image.find(hunk.reversed(), marked=False) is not None:  # as on a fresh image of its text
            verdicts.append(HunkVerdict(file, hunk, number, ALREADY))
        else:
            verdicts.append(HunkVerdict(file, hunk, number, CONTEXT, what_changed(image, hunk)))
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
