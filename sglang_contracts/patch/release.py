"""A patch against a release tree: where its paths live in the release, how the release's files
are read for `git apply`'s rules, and where a patched file that left the release went."""

from __future__ import annotations

from sglang_contracts.infra.files import Unreadable
from sglang_contracts.patch.patchfile import FilePatch, PatchFile
from sglang_contracts.sources.base import PACKAGE, Release, ReleaseTree

PYTHON = (".py", ".pyi")  # what every release carries whole


def release_relpath(patch_path: str | None) -> str | None:
    """Where a patch path of SGLang's repository lives in a release tree (the folder holding
    `sglang/`): `python/sglang/srt/x.py` -> `sglang/srt/x.py`; None for paths outside the package."""
    if patch_path is None:
        return None
    path = patch_path[len("python/"):] if patch_path.startswith("python/") else patch_path
    return path if path.startswith("sglang/") else None


def targets_sglang(patch: PatchFile) -> bool:
    return any(release_relpath(f.old_path) or release_relpath(f.new_path) for f in patch.files)


def stock_tree(release: Release) -> ReleaseTree:
    """The release as published, without the project's patch stack applied."""
    return release.tree


def tree_reader(tree: ReleaseTree):
    """(read, unchecked) for check_patch: files by their patch path (`python/sglang/...`).
    A file of the release that cannot be read leaves its hunks unchecked, never judged; so does
    a file that is not text, and one a wheel does not ship (the repository's other files)."""

    def read(path: str) -> str | None:
        relpath = release_relpath(path)
        try:
            data = tree.read_member(relpath) if relpath else None
        except Unreadable:
            return None  # only asked of files `unchecked` passed, or whether another file exists
        return None if data is None else data.decode("utf-8", "surrogateescape")

    def unchecked(path: str) -> str:
        relpath = release_relpath(path)
        if relpath is None:
            return "outside the sglang package"
        try:
            data = tree.read_member(relpath)
        except Unreadable as unreadable:
            return f"a file of the release that cannot be read ({unreadable.reason})"
        if data is None and not tree.carries_all_files and not relpath.endswith(PYTHON):
            return "a file the wheel does not ship"
        if data is not None and b"\0" in data:
            return "not a text file in the release"
        return ""

    return read, unchecked


def _significant(lines: list[str]) -> set[str]:
    return {line.strip() for line in lines if len(line.strip()) >= 8}


def _exists(tree: ReleaseTree, relpath: str) -> bool:
    try:
        return tree.read_bytes(relpath) is not None
    except Unreadable:
        return True  # there, though it cannot be read


def find_moved(file: FilePatch, new: ReleaseTree, old: ReleaseTree | None) -> str | None:
    """The likely new home of a patched file the new release no longer has: the file added by the
    bump (or any file, without an old release) holding most of the patch's preimage lines."""
    wanted = _significant([line for hunk in file.hunks for line in hunk.preimage])
    relpath = release_relpath(file.old_path)
    if not wanted or relpath is None:
        return None
    suffix = relpath.rsplit(".", 1)[-1]
    candidates = [p for p in new.iter_files(PACKAGE) if p.endswith("." + suffix)]
    if old is not None:
        candidates = [p for p in candidates if not _exists(old, p)]
    best, best_score = None, 0
    for candidate in candidates:
        text = new.readable_text(candidate) or ""
        score = len(wanted & _significant(text.splitlines()))
        if score > best_score:
            best, best_score = candidate, score
    return best if best is not None and best_score * 2 >= len(wanted) else None
