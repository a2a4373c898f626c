"""Patch contracts (SGC901, SGC902): the project's `.patch` files against SGLang's source tree."""

from __future__ import annotations

import re
from typing import Iterator

from sglang_contracts.contracts.base import CheckContext, contract, fixes
from sglang_contracts.contracts.gitapply import (
    ALREADY, APPLIES, CONTEXT, CORRUPT, EXISTS, GONE, UNKNOWN, HunkVerdict, Image, check_patch,
)
from sglang_contracts.diagnostics import Diagnostic, finding_at
from sglang_contracts.infra.files import Unreadable
from sglang_contracts.project.patchfile import (
    FilePatch, Hunk, PatchFile, parse_patch, release_relpath, sglang_patch_files, split_lines,
)
from sglang_contracts.sources.base import PACKAGE, ReleaseTree

FULLY_READ = (".py", ".pyi")  # a wheel from the package index reads its other files as empty


def tree_reader(tree: ReleaseTree):
    """(read, unchecked) for check_patch: files by their patch path (`python/sglang/...`).
    A file of the release that cannot be read leaves its hunks unchecked, never judged."""

    def read(path: str) -> str | None:
        relpath = release_relpath(path)
        try:
            data = tree.read_bytes(relpath) if relpath else None
        except Unreadable:
            return None  # only asked of files `unchecked` passed, or whether another file exists
        return None if data is None else data.decode("utf-8", "surrogateescape")

    def unchecked(path: str) -> str:
        relpath = release_relpath(path)
        if relpath is None:
            return "outside the sglang package"
        try:
            data = tree.read_bytes(relpath)
        except Unreadable as unreadable:
            return f"a file of the release that cannot be read ({unreadable.reason})"
        if not relpath.endswith(FULLY_READ) and data == b"":
            return "a file the release source does not carry"
        return ""

    return read, unchecked


def _verdicts(ctx: CheckContext) -> list[tuple[str, PatchFile, list[HunkVerdict], list[HunkVerdict]]]:
    def compute(c: CheckContext):
        found = []
        named = c.settings.get("patch-files") or ()
        for relpath, patch in sorted(sglang_patch_files(c.project.root, named).items()):
            found.append((relpath, patch, check_patch(patch, *tree_reader(c.old.release.tree)),
                          check_patch(patch, *tree_reader(c.new.release.tree))))
        return found

    return ctx.shared("patch-verdicts", compute)


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


def _reason(ctx: CheckContext, verdict: HunkVerdict) -> str:
    if verdict.status == CONTEXT:
        return f"its context changed ({verdict.detail})"
    if verdict.status == EXISTS:
        return "the file it creates already exists, with other content"
    if verdict.status == GONE:
        moved = ctx.shared(f"moved:{verdict.file.old_path}",
                           lambda c: find_moved(verdict.file, c.new.release.tree, c.old.release.tree))
        if moved is None:
            return "its file is gone"
        text = ctx.new.release.tree.readable_text(moved) or ""
        there = "the hunk applies there" if verdict.hunk and Image(text).find(verdict.hunk) is not None \
            else "the hunk does not apply there either"
        return f"its file is gone; it likely moved to python/{moved} (by content; {there})"
    return verdict.detail or verdict.status.replace("-", " ")


def _what(verdict: HunkVerdict) -> str:
    target = verdict.file.path
    if verdict.hunk is None:
        return f"the patch of {target}"
    return f"hunk #{verdict.number} of {target} ({verdict.hunk.header.split(' @@')[0]} @@)"


def _line(verdict: HunkVerdict) -> int:
    return verdict.hunk.line if verdict.hunk is not None else verdict.file.line


@contract("SGC901")
def patch_hunk_no_longer_applies(ctx: CheckContext) -> Iterator[Diagnostic]:
    for relpath, patch, old, new in _verdicts(ctx):
        if patch.error is not None:
            if ctx.report_unresolved:  # git rejects the text itself, whatever the release
                line, message = patch.error
                yield finding_at("SGC901", relpath, line, 1, relpath, severity="info", what="the whole patch",
                                 reason=f"git apply rejects it: {message}", old=ctx.old_version, new=ctx.new_version)
            continue
        for was, now in zip(old, new):
            if now.status in (APPLIES, ALREADY, UNKNOWN, CORRUPT):
                continue
            broken_before = was.status != APPLIES
            if broken_before and not ctx.report_unresolved:
                continue
            yield finding_at("SGC901", relpath, _line(now), 1, now.file.path, severity="info" if broken_before else None,
                             what=_what(now), reason=_reason(ctx, now), old=ctx.old_version, new=ctx.new_version)


@contract("SGC902")
def patch_hunk_already_upstream(ctx: CheckContext) -> Iterator[Diagnostic]:
    for relpath, patch, old, new in _verdicts(ctx):
        for was, now in zip(old, new):
            if now.status != ALREADY:
                continue
            broken_before = was.status != APPLIES
            if broken_before and not ctx.report_unresolved:
                continue
            yield finding_at("SGC902", relpath, _line(now), 1, now.file.path, severity="info" if broken_before else None,
                             what=_what(now), old=ctx.old_version, new=ctx.new_version)


@fixes("SGC902")
def drop_upstream_hunk(diagnostic: Diagnostic, workspace) -> bool:
    """Drop the hunk the new release already contains (its file's section, when it was the
    file's only hunk); the later hunks of that file start where the new release has their
    lines. Written only if every other hunk gets the same `git apply --check` verdict against
    the new release as before; a patch whose every hunk is upstream is left whole (delete it)."""
    document = workspace.document(diagnostic.path)
    patch = parse_patch(document.text)
    if patch.error is not None:
        return False
    located = [(file, hunk) for file in patch.files for hunk in file.hunks if hunk.line == diagnostic.line]
    if not located:
        return False
    file, hunk = located[0]
    if len(patch.files) == 1 and len(file.hunks) == 1:
        document.note(diagnostic.line, diagnostic.col, "SGC902", "every hunk of the patch is upstream: "
                      "delete the patch file (and where it is applied) by hand")
        return False
    edited = _without_hunk(split_lines(document.text), patch, file, hunk)
    tree = workspace.result.new.release.tree
    before = [v.status for v in check_patch(patch, *tree_reader(tree)) if v.hunk is not hunk]
    after = parse_patch(edited)
    if after.error is not None or [v.status for v in check_patch(after, *tree_reader(tree))] != before:
        document.note(diagnostic.line, diagnostic.col, "SGC902", "the patch without this hunk would not apply "
                      "as it does now: drop it by hand")
        return False
    document.text = edited
    return True


def _without_hunk(lines: list[str], patch: PatchFile, file: FilePatch, hunk: Hunk) -> str:
    def end_of(last: Hunk) -> int:  # 0-based index after a hunk's body and its `\ No newline` marks
        index = last.line + len(last.body)
        while index < len(lines) and lines[index].startswith("\\ "):
            index += 1
        return index

    if len(file.hunks) == 1:  # the file's whole section goes: its header up to its last hunk's end
        start, stop = file.line - 1, end_of(hunk)
        return "".join(lines[:start] + lines[stop:])
    delta = hunk.new_count - hunk.old_count
    kept = lines[:hunk.line - 1] + lines[end_of(hunk):]
    for later in file.hunks[file.hunks.index(hunk) + 1:]:
        # The new release has the dropped change: a later hunk's old lines sit `delta` further down.
        index = later.line - 1 - (end_of(hunk) - (hunk.line - 1))
        kept[index] = _renumbered(kept[index], later.old_start + delta)
    return "".join(kept)


def _renumbered(header: str, old_start: int) -> str:
    return re.sub(r"^@@ -\d+", f"@@ -{old_start}", header, count=1)
