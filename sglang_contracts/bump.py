"""`sglang-contracts bump --new B`: the bump's mechanical part in one command.

Each step is the code of its own command, run once: the safe fixes (`fix`: check/fixes.py), the
live patch stack rebased into its new folder (`patch rebase`: patch/stack_rebase.py), the plan
written, then a last `check`, whose markdown report (`check --format markdown`) is the pull
request's body below what the bump did, its findings the checklist. With `dry_run` nothing is
written: the fixes and the rebase are computed on the files as the earlier step would leave
them, and everything is one unified diff; the checklist is then the findings the fixes leave.
"""

from __future__ import annotations

import dataclasses
import io
from dataclasses import dataclass, field
from pathlib import Path

from sglang_contracts.check.runner import CheckOptions, CheckResult, run_check
from sglang_contracts.check.fixes import FixReport, run_fix
from sglang_contracts.infra.cache import cache_for_project, cache_root
from sglang_contracts.infra.display import unified_text_diff
from sglang_contracts.infra.markdown import code, inline, plain
from sglang_contracts.infra.wording import plural
from sglang_contracts.patch.stack_rebase import (
    COLUMNS, StackRebase, rebase_live_stack, render_stack_plan, shown_path, write_edits,
)
from sglang_contracts.patch.rebase import LEFT, check_tree_folder, text_below, verification_said, write_file_below
from sglang_contracts.patch.release import PatchedTree
from sglang_contracts.project.pins import ProjectPin
from sglang_contracts.reporters.markdown import write_markdown
from sglang_contracts.sources import open_release

DEFAULT_PR_BODY = "docs/draft/sglang-{new}-pr-body.md"
PR_BODY_HEADING = "## What the bump did"  # the PR body's first line (_what_was_done): how a draft is known


@dataclass
class Bump:
    fix: FixReport
    stack: StackRebase | None  # None: the project applies no patch to SGLang
    last: CheckResult  # the last check (with dry_run: the first, its findings those the fixes leave)
    plan: Path
    body: Path
    files: dict[str, tuple[str | None, str]] = field(default_factory=dict)  # relpath -> (before, after), dry_run


def run_bump(paths: list[Path], options: CheckOptions, root: Path, plan: Path, body: Path, pin: ProjectPin | None,
             named: list[str] | tuple[str, ...] = (), trees: Path | None = None, dry_run: bool = False) -> Bump:
    """`options.old` set: every step works from the same release A (the fixes move the pin);
    `pin`: the project's pin before the bump, which the PR body's pins table moves from."""
    if trees is not None and not dry_run:
        check_tree_folder(trees)  # before the fixes write: an earlier bump's conflicts stop this one whole
    for report in (plan, body):  # refused before the fixes write, not after (eighth campaign, Q07)
        text_below(root, report)
    fixed = run_fix(paths, options, write=not dry_run)
    planned = {relpath: after for relpath, (_, after) in fixed.texts.items()}
    stack = None
    if _applies_patches(fixed.last):
        cache = cache_for_project(options.cache_dir or cache_root(), root)
        old, new = (open_release(spec, sglang_repo=options.sglang_repo, cache=cache) for spec in (options.old, options.new))
        stack = rebase_live_stack(root, old, new, named, trees=trees, current=planned.get, write_trees=not dry_run)
        if not dry_run:
            write_edits(root, stack)
    if dry_run:  # the old stack's findings are the rebase's to report (the last check reads the new one)
        rebased = set(stack.stack.patches) if stack is not None else set()
        last = dataclasses.replace(fixed.last, diagnostics=[d for d in fixed.remaining if d.path not in rebased])
    else:
        last = run_check(paths, dataclasses.replace(options, replay=False))
    last = dataclasses.replace(last, pin=pin if pin is not None else last.pin)  # the fixes moved the file's pin
    bump = Bump(fixed, stack, last, plan, body)
    documents = {plan: render_stack_plan(stack)} if stack is not None else {}
    documents[body] = pr_body(bump)
    if dry_run:
        bump.files = _planned_files(root, fixed, stack, documents)
    else:
        for path, text in documents.items():
            write_file_below(root, path, text)
    return bump


def _applies_patches(result: CheckResult) -> bool:
    """Whether the check found a live patch stack (the runner applies it to both releases)."""
    tree = result.old.release.tree
    return isinstance(tree, PatchedTree) and bool(tree.stacks.stacks) and not tree.stacks.guessed


def _planned_files(root: Path, fixed: FixReport, stack: StackRebase | None,
                   documents: dict[Path, str]) -> dict[str, tuple[str | None, str]]:
    """Every file the bump would write, as it is and as it would be (a file both the fixes and
    the rebase edit, the Dockerfile, once: from the first's before to the second's after)."""
    files: dict[str, tuple[str | None, str]] = dict(fixed.texts)
    for edit in stack.edits if stack is not None else []:
        files[edit.relpath] = (files[edit.relpath][0] if edit.relpath in files else edit.before, edit.after)
    for path, text in documents.items():
        files[shown_path(path, root)] = (text_below(root, path), text)
    return files


def bump_diff(bump: Bump) -> str:
    return "".join(unified_text_diff(relpath, before, after) for relpath, (before, after) in sorted(bump.files.items()))


def _what_was_done(bump: Bump) -> list[str]:
    """The pull request's first section: what the fixes and the rebase did, and what is left."""
    fixed, stack = bump.fix, bump.stack
    new = plain(bump.last.new.release.short)
    lines = [PR_BODY_HEADING, "",
             f"- `sglang-contracts fix`: {fixed.fixed} of {plural(fixed.found, 'finding')} fixed in "
             f"{plural(len(fixed.changed), 'file')}"
             + (": " + ", ".join(code(path) for path in fixed.changed[:12]) if fixed.changed else "")]
    if stack is None:
        lines.append("- no patch stack against SGLang to rebase")
    else:
        shown = [v for v in COLUMNS if stack.count(v)]
        counts = ", ".join(f"{stack.count(v)} {v}" for v in shown)
        lines += [f"- `sglang-contracts patch rebase`: the stack {code(stack.folder + '/')} "
                  f"({plain(str(len(stack.patches)))} patches, {stack.hunks} hunks: {counts}) written to "
                  f"{code(stack.new_folder + '/')}; "
                  f"{inline(verification_said(stack.verified, stack.verification, sum(stack.count(v) for v in LEFT)))}",
                  f"- the decisions, hunk by hunk: {code(shown_path(bump.plan, bump.last.project.root))}"]
    root = bump.last.project.root
    checklist = [f"Resolve {plural(sum(o.verdict in LEFT for o in each.rebase.outcomes), 'hunk')} of {code(each.name)} "
                 f"left in conflict: in {code(shown_path(each.tree, root))}, then `git diff` there is the patch"
                 for each in (stack.patches if stack is not None else []) if each.tree is not None]
    checklist += [f"{inline(note)}" for note in (stack.notes if stack is not None else [])]
    if bump.last.diagnostics:
        checklist.append(f"The {plural(len(bump.last.diagnostics), 'finding')} the last check on {new} reports, below")
    if checklist:
        lines += ["", "Left to do:", ""] + [f"- [ ] {item}" for item in checklist]
    return lines + [""]


def pr_body(bump: Bump) -> str:
    out = io.StringIO()
    write_markdown(bump.last, out, fixes=(0, []))  # the fixes ran: "What the bump did" says what they did
    return "\n".join(_what_was_done(bump)) + "\n" + out.getvalue()
