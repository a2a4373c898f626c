"""Patch contracts (SGC901, SGC902): the project's `.patch` files against SGLang's source tree."""

from __future__ import annotations

from typing import Iterator

from sglang_contracts.contracts.base import CheckContext, contract
from sglang_contracts.diagnostics import Diagnostic, finding_at
from sglang_contracts.patch.gitapply import (
    ALREADY, APPLIES, CONTEXT, CORRUPT, EXISTS, GONE, UNKNOWN, HunkVerdict, Image, check_patch,
)
from sglang_contracts.patch.patchfile import PatchFile
from sglang_contracts.patch.release import find_moved, tree_reader
from sglang_contracts.patch.stack import sglang_patch_files


def _verdicts(ctx: CheckContext) -> list[tuple[str, PatchFile, list[HunkVerdict], list[HunkVerdict]]]:
    def compute(c: CheckContext):
        found = []
        named = c.settings.get("patch-files") or ()
        for relpath, patch in sorted(sglang_patch_files(c.project.root, named).items()):
            found.append((relpath, patch, check_patch(patch, *tree_reader(c.old.release.tree)),
                          check_patch(patch, *tree_reader(c.new.release.tree))))
        return found

    return ctx.shared("patch-verdicts", compute)


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
