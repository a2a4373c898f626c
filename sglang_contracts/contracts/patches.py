"""Patch contracts (SGC901, SGC902, SGC903): the project's patch stack (patch/) against SGLang's source tree."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Iterator

from sglang_contracts.contracts.base import CheckContext, Process, Reads, contract, fixes
from sglang_contracts.diagnostics import Diagnostic, finding_at
from sglang_contracts.infra.lines import git_lines
from sglang_contracts.infra.markdown import code_span
from sglang_contracts.patch.gitapply import (
    ALREADY, APPLIES, CONTEXT, CORRUPT, EXISTS, GONE, UNKNOWN, HunkVerdict, Image, check_patch, check_stack,
)
from sglang_contracts.patch.patchfile import FilePatch, Hunk, PatchFile, parse_patch
from sglang_contracts.patch.release import PatchedTree, find_moved, stock_tree, tree_reader
from sglang_contracts.patch.stack import PatchStacks, Stack as PatchStack, content_numbers, patch_stacks
from sglang_contracts.requirements import names_release, version_in_tag


@dataclass
class Judged:
    """One live patch file's verdicts on both releases, each with the stack's earlier patches applied."""

    relpath: str
    patch: PatchFile
    old: list[HunkVerdict]
    new: list[HunkVerdict]
    before: list[str] = field(default_factory=list)  # the patches its stack applies before it
    # the same patch kept in other folders, applied on the same patches (slime's `v0.5.15.post1/`
    # beside `latest/`, one patch more): judged once, here (mdreview: 131 findings twice)
    copies: list[str] = field(default_factory=list)


def _tree_keys(stacks: PatchStacks) -> list[list[int]]:
    """For each stack, a number for each position: the same for two positions whose patch and
    patches before it are equal, whatever their files' paths. Numbered in one pass: comparing each
    patch's stack with every judged one's was cubic in a stack's length (sixth campaign M07: 2,000
    tiny patches, over 5 minutes)."""
    content = content_numbers(stacks.patches)
    trees: dict[tuple[int, int], int] = {}  # (the patches before, this one) -> a number for all of them
    keys = []
    for stack in stacks.stacks:
        before, numbers = -1, []
        for path in stack.patches:
            before = trees.setdefault((before, content[path]), len(trees))
            numbers.append(before)
        keys.append(numbers)
    return keys


def judged_stacks(ctx: CheckContext) -> tuple[PatchStacks, list[Judged]]:
    """The project's patch stacks (patch/stack.py) and each live patch's verdicts, shared by the rules."""
    def compute(c: CheckContext):
        old, new = c.old.release.tree, c.new.release.tree
        if isinstance(old, PatchedTree) and isinstance(new, PatchedTree):  # the runner applied the stacks
            stacks, on_old, on_new = old.stacks, [r.verdicts for r in old.results], [r.verdicts for r in new.results]
        else:
            stacks = patch_stacks(c.project.root, c.settings.get("patch-files") or ())
            on_old, on_new = (
                [check_stack([stacks.patches[p] for p in stack.patches], *tree_reader(tree)).verdicts
                 for stack in stacks.stacks]
                for tree in (old, new))
        seen: set[str] = set()
        judged: list[Judged] = []
        by_tree: dict[int, Judged] = {}  # the first judged patch of each (patches before, patch)
        for index, (stack, keys) in enumerate(zip(stacks.stacks, _tree_keys(stacks))):
            for position, relpath in enumerate(stack.patches):
                if relpath in seen:  # a file in two stacks is judged in the first
                    continue
                seen.add(relpath)
                twin = by_tree.get(keys[position])
                if twin is not None:  # a copy in another folder, on the same patches: the same verdicts
                    twin.copies.append(relpath)
                    continue
                by_tree[keys[position]] = Judged(relpath, stacks.patches[relpath], on_old[index][position],
                                                 on_new[index][position], stack.patches[:position])
                judged.append(by_tree[keys[position]])
        return stacks, sorted(judged, key=lambda j: j.relpath)

    return ctx.shared("patch-verdicts", compute)


def _folder(stack: PatchStack) -> str:
    """`docker/patch/latest/`: where a stack's patches are, when they are in one folder."""
    folders = {str(PurePosixPath(path).parent) for path in stack.patches}
    return f"{folders.pop()}/" if len(folders) == 1 else f"of {len(stack.patches)} patches"


def _reason(ctx: CheckContext, verdict: HunkVerdict) -> str:
    if verdict.status == CONTEXT:
        return f"its context changed ({verdict.detail})"
    if verdict.status == EXISTS:
        return "the file it creates already exists, with other content"
    if verdict.status == GONE:
        moved = ctx.shared(f"moved:{verdict.file.old_path}",
                           lambda c: find_moved(verdict.file, stock_tree(c.new.release), stock_tree(c.old.release)))
        if moved is None:
            return "its file is gone"
        text = stock_tree(ctx.new.release).readable_text(moved) or ""
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


@contract("SGC901", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def patch_hunk_no_longer_applies(ctx: CheckContext) -> Iterator[Diagnostic]:
    for judged in judged_stacks(ctx)[1]:
        relpath, patch, old, new = judged.relpath, judged.patch, judged.old, judged.new
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
                             what=_what(now), reason=_reason(ctx, now), old=ctx.old_version, new=ctx.new_version,
                             copies=judged.copies)


@contract("SGC902", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def patch_hunk_already_upstream(ctx: CheckContext) -> Iterator[Diagnostic]:
    for judged in judged_stacks(ctx)[1]:
        for was, now in zip(judged.old, judged.new):
            if now.status != ALREADY:
                continue
            broken_before = was.status != APPLIES
            if broken_before and not ctx.report_unresolved:
                continue
            yield finding_at("SGC902", judged.relpath, _line(now), 1, now.file.path, severity="info" if broken_before else None,
                             what=_what(now), old=ctx.old_version, new=ctx.new_version, copies=judged.copies)


@contract("SGC903", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def patch_not_judged(ctx: CheckContext) -> Iterator[Diagnostic]:
    """Info only: nothing here is a break of the bump. Said always: a stack judged in place of
    an identical one, and stacks guessed for want of any command that applies a patch (which
    were judged wrongly on a project whose live stack no script names); the rest with
    --report-unresolved."""
    stacks, judged = judged_stacks(ctx)
    for stack, twin in stacks.duplicates:
        yield finding_at("SGC903", stack.patches[0], 1, 1, stack.patches[0], severity="info",
                         what=f"the stack {_folder(stack)} ({stack.source})",
                         reason=f"it is the stack {_folder(twin)} ({twin.source}), patch for patch: judged there",
                         old=ctx.old_version, new=ctx.new_version)
    yield from _copies_judged_once(ctx, stacks, judged)
    if stacks.guessed:
        first = stacks.stacks[0].patches[0]
        yield finding_at("SGC903", first, 1, 1, first, severity="info",
                         what=f"which of the {len(stacks.patches)} patch files the image applies",
                         reason="no Dockerfile or script applies one, so each folder was judged as a stack in name "
                                "order; name the live stack in `patch-files` ([tool.sglang-contracts])",
                         old=ctx.old_version, new=ctx.new_version)
    if not ctx.report_unresolved:
        return
    if stacks.unapplied:
        folders = sorted({p.rsplit("/", 1)[0] if "/" in p else "." for p in stacks.unapplied})
        shown = ", ".join(folders[:6]) + (f" and {len(folders) - 6} more" if len(folders) > 6 else "")
        yield finding_at("SGC903", stacks.unapplied[0], 1, 1, stacks.unapplied[0], severity="info",
                         what=f"{len(stacks.unapplied)} patch files in {len(folders)} folders ({shown})",
                         reason="no Dockerfile or script applies them; list them in `patch-files` to judge them",
                         old=ctx.old_version, new=ctx.new_version)
    for each in judged:
        reported = set()
        for verdict in each.new:
            if verdict.status == UNKNOWN and id(verdict.file) not in reported:
                reported.add(id(verdict.file))
                yield finding_at("SGC903", each.relpath, verdict.file.line, 1, verdict.file.path, severity="info",
                                 what=f"the patch of {verdict.file.path}", reason=verdict.detail,
                                 old=ctx.old_version, new=ctx.new_version)
def _copies_judged_once(ctx: CheckContext, stacks: PatchStacks, judged: list[Judged]) -> Iterator[Diagnostic]:
    """One line per stack whose patches (some of them) are copies of patches judged in another."""
    judged_as = {copy: each for each in judged for copy in each.copies}
    for stack in stacks.stacks:
        copies = [path for path in stack.patches if path in judged_as]
        if not copies:
            continue
        names = ", ".join(PurePosixPath(path).name for path in copies)
        where = sorted({str(PurePosixPath(judged_as[path].relpath).parent) + "/" for path in copies})
        yield finding_at("SGC903", copies[0], 1, 1, copies[0], severity="info",
                         what=f"{len(copies)} of the {len(stack.patches)} patches of {_folder(stack)} "
                              f"({stack.source}): {names}",
                         reason=f"each is the patch of the same name in {', '.join(where)}, applied on the same "
                                "patches before it: judged there, once",
                         old=ctx.old_version, new=ctx.new_version)


@fixes("SGC902")
def drop_upstream_hunk(diagnostic: Diagnostic, workspace) -> bool:
    """Drop the hunk the new release already contains (its file's section, when it was the
    file's only hunk); the later hunks of that file start where the new release has their
    lines. Written only if every other hunk gets the same `git apply --check` verdict against
    the new release as before; a patch whose every hunk is upstream is left whole (delete it)."""
    document = workspace.document(diagnostic.path)
    release_folder = next((part for part in PurePosixPath(diagnostic.path).parts[:-1] if version_in_tag(part)), None)
    if release_folder is not None:  # a build of that release still applies it as it is
        document.note(diagnostic.line, diagnostic.col, "SGC902", f"the patch is in {code_span(release_folder + '/')}, "
                      "the stack of that release: the new release's stack goes in a folder of its own "
                      "(`sglang-contracts patch rebase`)")
        return False
    pin = workspace.result.pin if workspace.result is not None else None
    pinned = version_in_tag(pin.version) if pin is not None else None
    replaced = version_in_tag(str(diagnostic.data.get("old", "")))
    if pin is not None and pinned is not None and replaced is not None and names_release(pinned, replaced):
        # The build applies the stack to the release its pin names: until the stack is rebased for
        # the new one (slime's latest/ under a v0.5.15.post1 image), the hunk is what adds the code
        document.note(diagnostic.line, diagnostic.col, "SGC902", f"the project builds on sglang {pin.version} "
                      f"({pin.where}), where this stack applies the hunk: drop it when the stack is rebased for "
                      f"{diagnostic.data['new']} (`sglang-contracts bump`)")
        return False
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
    edited = _without_hunk(git_lines(document.text), patch, file, hunk)
    tree = stock_tree(workspace.result.new.release)  # the release as shipped, not with the stack applied
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
