"""`sglang-contracts patch classify MINE SKELETON`: a project's patch against the patch it derives from.

Relax derives its `sglang.patch` from slime's patch of the same release and asks, file by file
and hunk by hunk: the same change, an extra change on a shared file, or a file only we patch?
Hunks are compared by their real change, the `+` and `-` lines in order; `@@` offsets and
context lines are ignored, so the same change made against a shifted file still matches.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sglang_contracts.infra.display import printable, printable_path
from sglang_contracts.infra.errors import UsageError
from sglang_contracts.infra.files import Unreadable, read_limited
from sglang_contracts.patch.patchfile import FilePatch, Hunk, PatchFile, parse_patch
from sglang_contracts.infra.lines import comment_start

SAME = "same"  # the skeleton has this change
FORMATTING = "same (formatting)"  # the same change but for indentation, spacing, comments or blank lines
EXTENDS = "extends"  # the skeleton's change plus more lines in the same hunk
MODIFIED = "modified"  # a change the skeleton makes otherwise at the same place
EXTRA = "extra"  # a change the skeleton does not make, on a file it patches
ONLY_MINE = "only-mine"  # a file the skeleton does not patch
DROPPED = "dropped"  # a skeleton hunk the project's patch does not have
NEAR = 3  # lines apart at most for an extra and a dropped hunk to be one modified hunk
MOVED_SHARE = 0.5  # of the smaller patch's significant lines, for two files to be one that moved
BOILERPLATE = 32  # skeleton files of a kind carrying a line, past which it is no sign of where a file moved


def change_of(hunk: Hunk) -> tuple[tuple[str, str], ...]:
    return tuple((kind, text.rstrip("\n")) for kind, text in hunk.body if kind != " ")


def _without_formatting(line: str) -> str:
    """A changed line with its comment (a `#` outside quotes) and every space removed."""
    start = comment_start(line)
    return "".join((line if start is None else line[:start]).split())


def formatting_free(change: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    return tuple((kind, bare) for kind, text in change if (bare := _without_formatting(text)))


def _contains_in_order(longer: tuple, shorter: tuple) -> bool:
    items = iter(longer)
    return all(any(item == wanted for item in items) for wanted in shorter)


@dataclass
class HunkClass:
    line: int  # of the hunk header, in the patch it comes from
    header: str
    verdict: str
    partner: "HunkClass | None" = None  # the skeleton hunk it matched, for same/extends/modified

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"line": self.line, "header": self.header, "verdict": self.verdict}
        if self.partner is not None:
            data["skeleton"] = {"line": self.partner.line, "header": self.partner.header}
        return data


@dataclass
class FileClass:
    path: str
    verdict: str  # same, shared-with-extra, shared-partial, only-mine, only-skeleton
    hunks: list[HunkClass] = field(default_factory=list)
    dropped: list[HunkClass] = field(default_factory=list)  # skeleton hunks missing from mine
    moved_from: str | None = None  # the skeleton's path of a file that moved between the two patches

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "verdict": self.verdict, "moved_from": self.moved_from,
                "hunks": [h.to_json() for h in self.hunks], "dropped": [h.to_json() for h in self.dropped]}


def _classify_file(mine: FilePatch, skeleton: FilePatch, moved_from: str | None = None) -> FileClass:
    """Hunks paired over the whole file, the closest kind of match first: exact, then but for
    formatting, then a hunk that extends the skeleton's, then an extra and a dropped hunk at
    the same place (one modified hunk); a pass never takes a partner an earlier pass took."""
    verdicts = _Pairing(mine, skeleton).verdicts()
    header = lambda h: HunkClass(h.line, h.header, DROPPED)  # noqa: E731
    hunks = []
    for i, hunk in enumerate(mine.hunks):
        verdict, j = verdicts.get(i, (EXTRA, -1))
        hunks.append(HunkClass(hunk.line, hunk.header, verdict, header(skeleton.hunks[j]) if j >= 0 else None))
    taken = {j for _, j in verdicts.values()}
    dropped = [header(h) for j, h in enumerate(skeleton.hunks) if j not in taken]
    if any(h.verdict in (EXTRA, EXTENDS, MODIFIED) for h in hunks):
        verdict = "shared-with-extra"
    elif dropped:
        verdict = "shared-partial"
    else:
        verdict = SAME
    return FileClass(mine.path, verdict, hunks, dropped, moved_from)


class _Nearest:
    """Skeleton hunks still free, by their first old line: the one nearest a line, the first in
    the patch where two are as near (what `min` over them in patch order picks)."""

    def __init__(self, places: list[tuple[int, int]]) -> None:
        self.free = sorted(places)  # (old_start, index in the skeleton)

    def nearest(self, start: int) -> tuple[int, int] | None:
        """(distance, index) of the nearest free hunk, or None."""
        right = bisect_left(self.free, (start, -1))
        found = []
        if right < len(self.free):
            found.append((self.free[right][0] - start, self.free[right][1]))
        if right:  # the first of the hunks at the nearest line before
            before = self.free[right - 1][0]
            found.append((start - before, self.free[bisect_left(self.free, (before, -1))][1]))
        return min(found) if found else None

    def take(self, place: tuple[int, int]) -> None:
        del self.free[bisect_left(self.free, place)]


class _Reaches:
    """The skeleton hunks' reach (the last old line they cover, plus NEAR) in (old_start, index)
    order, for the nearest free hunk before a line that reaches it: a maximum segment tree, one
    leaf per hunk, a taken hunk reaching nowhere."""

    def __init__(self, reaches: list[int]) -> None:
        self.size = 1 << max(len(reaches) - 1, 0).bit_length()
        self.tree = [-1] * (2 * self.size)
        self.tree[self.size:self.size + len(reaches)] = reaches
        for node in range(self.size - 1, 0, -1):
            self.tree[node] = max(self.tree[2 * node], self.tree[2 * node + 1])

    def clear(self, leaf: int) -> None:
        node = leaf + self.size
        self.tree[node] = -1
        while node > 1:
            node //= 2
            self.tree[node] = max(self.tree[2 * node], self.tree[2 * node + 1])

    def last(self, end: int, line: int, node: int = 1, low: int = 0, high: int | None = None) -> int | None:
        """The last leaf before `end` that reaches `line`."""
        high = self.size if high is None else high
        if low >= end or self.tree[node] < line:
            return None
        if high - low == 1:
            return low
        middle = (low + high) // 2
        found = self.last(end, line, 2 * node + 1, middle, high)
        return found if found is not None else self.last(end, line, 2 * node, low, middle)

    def first(self, begin: int, line: int, node: int = 1, low: int = 0, high: int | None = None) -> int | None:
        """The first leaf from `begin` on that reaches `line`."""
        high = self.size if high is None else high
        if high <= begin or self.tree[node] < line:
            return None
        if high - low == 1:
            return low
        middle = (low + high) // 2
        found = self.first(begin, line, 2 * node, low, middle)
        return found if found is not None else self.first(begin, line, 2 * node + 1, middle, high)


class _Pairing:
    """The four passes of _classify_file, each finding a hunk's candidates through an index of
    the skeleton's hunks (by change, or by place) rather than by trying every skeleton hunk: two
    patches of thousands of hunks on one file took minutes (audit 7, P03). Each picks what
    trying them all picked: the nearest free candidate by first old line, the first in the
    skeleton where two are as near."""

    def __init__(self, mine: FilePatch, skeleton: FilePatch) -> None:
        self.mine, self.skeleton = mine, skeleton
        self.ours, self.theirs = [change_of(h) for h in mine.hunks], [change_of(h) for h in skeleton.hunks]
        self.pairs: dict[int, tuple[str, int]] = {}
        self.taken: set[int] = set()

    def verdicts(self) -> dict[int, tuple[str, int]]:
        self._by_key(SAME, self.ours, self.theirs)
        bare_ours, bare_theirs = [formatting_free(c) for c in self.ours], [formatting_free(c) for c in self.theirs]
        # two changes of comments only are not "the same": nothing would be left to compare
        self._by_key(FORMATTING, [c or None for c in bare_ours], bare_theirs)
        self._extending()
        self._near_places()
        return self.pairs

    def _free(self, keys: list) -> dict[Any, _Nearest]:
        grouped: dict[Any, list[tuple[int, int]]] = {}
        for j, key in enumerate(keys):
            if j not in self.taken:
                grouped.setdefault(key, []).append((self.skeleton.hunks[j].old_start, j))
        return {key: _Nearest(places) for key, places in grouped.items()}

    def _pair(self, verdict: str, i: int, index: _Nearest, j: int) -> None:
        self.pairs[i] = (verdict, j)
        self.taken.add(j)
        index.take((self.skeleton.hunks[j].old_start, j))

    def _by_key(self, verdict: str, ours: list, theirs: list) -> None:
        """Pairs of equal keys (a hunk whose key is None has none)."""
        free = self._free(theirs)
        for i, hunk in enumerate(self.mine.hunks):
            index = free.get(ours[i]) if i not in self.pairs and ours[i] is not None else None
            found = index.nearest(hunk.old_start) if index is not None else None
            if found is not None:
                self._pair(verdict, i, index, found[1])

    def _extending(self) -> None:
        """Pairs of a hunk and a skeleton hunk whose change it holds in order. A skeleton change
        is looked at only for hunks with its line the fewest of ours have."""
        free = self._free(self.theirs)
        holding: dict[tuple[str, str], int] = {}  # a changed line -> how many of our hunks have it
        for change in self.ours:
            for line in set(change):
                holding[line] = holding.get(line, 0) + 1
        by_line: dict[tuple[str, str], list] = {}
        for change in free:
            if change:
                by_line.setdefault(min(change, key=lambda line: holding.get(line, 0)), []).append(change)
        for i, hunk in enumerate(self.mine.hunks):
            if i in self.pairs:
                continue
            candidates = [(found, change) for line in set(self.ours[i]) for change in by_line.get(line, ())
                          if _contains_in_order(self.ours[i], change)
                          and (found := free[change].nearest(hunk.old_start)) is not None]
            if candidates:
                (_, j), change = min(candidates, key=lambda candidate: candidate[0])
                self._pair(EXTENDS, i, free[change], j)

    def _near_places(self) -> None:
        """Pairs of a hunk and a skeleton hunk that cover the same old lines, or lie within NEAR
        lines of each other."""
        order = sorted((self.skeleton.hunks[j].old_start, j) for j in range(len(self.theirs)) if j not in self.taken)
        reaches = _Reaches([self.skeleton.hunks[j].old_start + self.skeleton.hunks[j].old_count + NEAR
                            for _, j in order])
        index = _Nearest(order)
        for i, hunk in enumerate(self.mine.hunks):
            if i in self.pairs:
                continue
            start = hunk.old_start
            right = bisect_left(index.free, (start, -1))
            found = []
            if right < len(index.free) and index.free[right][0] <= start + hunk.old_count + NEAR:
                found.append((index.free[right][0] - start, index.free[right][1]))
            before = reaches.last(bisect_left(order, (start, -1)), start)
            if before is not None:  # the first hunk at that line that reaches this one
                first = reaches.first(bisect_left(order, (order[before][0], -1)), start)
                found.append((start - order[first][0], order[first][1]))
            if found:
                j = min(found)[1]
                self._pair(MODIFIED, i, index, j)
                reaches.clear(bisect_left(order, (self.skeleton.hunks[j].old_start, j)))


def _significant(file: FilePatch) -> set[str]:
    return {text.strip() for hunk in file.hunks for _, text in hunk.body if len(text.strip()) >= 8}


def _kind(file: FilePatch) -> str:
    return file.path.rsplit(".", 1)[-1]


def _moves(mine: list[FilePatch], skeleton: list[FilePatch]) -> dict[str, FilePatch]:
    """Files only one side patches, paired with the other side's file of their kind they share
    most lines with (a file that moved upstream between the releases the two patches were made
    against), the first in the skeleton where two share as much. Each file's lines are read
    once, and only files sharing a line are compared, through the skeleton's lines: comparing
    every pair took minutes on two patches of thousands of files (ninth campaign, R04). A line
    more than BOILERPLATE of the skeleton's files of a kind carry (a licence header, `import
    torch`) points at none of them: it is left out of both sides' lines, which bounds what each
    line costs."""
    carriers: dict[tuple[str, str], list[int]] = {}  # (kind, line) -> the skeleton files that carry it
    skeleton_lines = [_significant(other) for other in skeleton]
    for index, (other, lines) in enumerate(zip(skeleton, skeleton_lines)):
        for line in lines:
            carriers.setdefault((_kind(other), line), []).append(index)
    sizes = [sum(len(carriers[_kind(other), line]) <= BOILERPLATE for line in lines)
             for other, lines in zip(skeleton, skeleton_lines)]
    found: dict[str, FilePatch] = {}
    taken: set[int] = set()
    for file in mine:
        kind = _kind(file)
        lines = [carriers.get((kind, line), []) for line in _significant(file)]
        lines = [carrying for carrying in lines if len(carrying) <= BOILERPLATE]
        shared = Counter(index for carrying in lines for index in carrying if index not in taken)
        # The largest share, and of those the skeleton's first file.
        share, first = max(((count / min(len(lines), sizes[index]), -index) for index, count in shared.items()),
                           default=(0.0, 0))
        if share >= MOVED_SHARE:
            found[file.path] = skeleton[-first]
            taken.add(-first)
    return found


def classify(mine: PatchFile, skeleton: PatchFile) -> list[FileClass]:
    theirs = {f.path: f for f in skeleton.files}
    mine_paths = {f.path for f in mine.files}
    moved = _moves([f for f in mine.files if f.path not in theirs],
                   [f for f in skeleton.files if f.path not in mine_paths])
    followed = {f.path for f in moved.values()}
    result = []
    for file in mine.files:
        if file.path in theirs:
            result.append(_classify_file(file, theirs[file.path]))
        elif file.path in moved:
            result.append(_classify_file(file, moved[file.path], moved_from=moved[file.path].path))
        else:
            result.append(FileClass(file.path, ONLY_MINE, [HunkClass(h.line, h.header, ONLY_MINE) for h in file.hunks]))
    result += [FileClass(f.path, "only-skeleton", dropped=[HunkClass(h.line, h.header, DROPPED) for h in f.hunks])
               for f in skeleton.files if f.path not in mine_paths and f.path not in followed]
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
    """One line per file, and for a shared file one per hunk: `MINE:LINE: verdict  @@ ... @@`,
    a matched or modified hunk followed by the skeleton's (`SKELETON:LINE`). The patches are
    named by the paths given, so two files both called `sglang.patch` read apart. Paths and
    headers come from the patches: shown printable."""
    mine, skeleton = printable_path(mine), printable_path(skeleton)
    words = {SAME: "the same change", "shared-with-extra": "extra changes on a shared file",
             "shared-partial": f"some of {skeleton}'s hunks are missing", ONLY_MINE: f"only in {mine}",
             "only-skeleton": f"only in {skeleton}"}
    out = []
    for file in classes:
        moved = f" (moved from {printable_path(file.moved_from)} in {skeleton})" if file.moved_from else ""
        out.append(f"{printable_path(file.path)}{moved}: {words[file.verdict]} ({len(file.hunks or file.dropped)} hunks)")
        if file.verdict in ("shared-with-extra", "shared-partial") or (file.moved_from and file.verdict == SAME):
            for h in file.hunks:
                out.append(f"  {mine}:{h.line}: {h.verdict}  {printable(h.header)}")
                if h.partner is not None and h.verdict != SAME:
                    out.append(f"    {skeleton}:{h.partner.line}: {'was' if h.verdict == MODIFIED else 'skeleton'}"
                               f"  {printable(h.partner.header)}")
            out += [f"  {skeleton}:{h.line}: {h.verdict}  {printable(h.header)}" for h in file.dropped]
    return "".join(line + "\n" for line in out)
