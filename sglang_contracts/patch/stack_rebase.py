"""`sglang-contracts patch rebase --new B` in a project: the live patch stack rebased as a stack.

The stack is the one `check` judges (patch/stack.py: the Dockerfile's or build script's order),
and release A the one `check` takes (the project's pin). Each patch is rebased (rebase.py) from
A with the stack's earlier originals applied onto B with the earlier patches as rebased
applied, so a hunk whose context an earlier patch wrote (slime's `sglang-pull_weights.patch`
over `sglang.patch`) finds it on both sides. The new stack goes where the project keeps it: a
folder named for B beside one named for A (`docker/patch/v0.5.15.post1/` ->
`docker/patch/v0.5.23/`, the old folder left as it is, and the variable or path of the file that
applies it moved to the new one), or in place for a folder named otherwise (`latest/`).
"Verified" is git's word: every new patch, in order, passes `git apply --check` (`--3way` where
the project applies with it) on a fresh tree of B with the ones before it applied.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable

from sglang_contracts.fix.document import ChangedMeanwhile
from sglang_contracts.infra.display import printable, printable_path, unified_text_diff
from sglang_contracts.infra.errors import UsageError
from sglang_contracts.infra.files import Unreadable, read_limited
from sglang_contracts.infra.lines import numbered_lines
from sglang_contracts.infra.markdown import cell, code, inline, plain
from sglang_contracts.infra.output import write_file
from sglang_contracts.patch.classify import read_patch
from sglang_contracts.patch.gitapply import check_stack
from sglang_contracts.patch.patchfile import PATCH_SUFFIXES, PatchFile, parse_patch, unsafe_path_reason
from sglang_contracts.infra.wording import plural
from sglang_contracts.patch.rebase import (
    CARRIED, CONFLICT, DROPPED, GONE, LEFT, MERGED, NOT_ON_OLD, SKELETON, UNCHECKED, Rebase,
    check_tree_folder, checked_text, git, read_patch_text, rebase_patch, refuse_link_out, release_tree,
    render_plan, shown_path, unchecked_excludes, verification_said, where, write_file_below, write_under,
)
from sglang_contracts.patch.release import PatchedTree, release_relpath, tree_reader
from sglang_contracts.patch.stack import PatchStacks, Stack, patch_stacks
from sglang_contracts.requirements import version_in_tag
from sglang_contracts.sources.base import Release, file_name_part

COLUMNS = (CARRIED, SKELETON, MERGED, DROPPED, CONFLICT, GONE, NOT_ON_OLD, UNCHECKED)
DEFAULT_PLAN = "docs/draft/sglang-{new}-upgrade-plan.md"


@dataclass
class Edit:
    """One file of the project the rebase writes: its text before (None: a new file) and after."""

    relpath: str
    before: str | None
    after: str


@dataclass
class PatchRebase:
    relpath: str  # the original, relative to the project's root
    rebase: Rebase
    tree: Path | None = None  # the files with git's conflict markers, when hunks are left

    @property
    def name(self) -> str:
        return PurePosixPath(self.relpath).name


@dataclass
class StackRebase:
    root: Path
    stack: Stack
    old: Release
    new: Release
    patches: list[PatchRebase]
    folder: str  # where the stack is kept, relative to the root
    new_folder: str  # where its rebased patches go
    verified: bool = False
    verification: str = ""
    others: list[Stack] = field(default_factory=list)  # other live stacks, left as they are
    edits: list[Edit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what is left to do by hand, one line each
    unwritten: list[str] = field(default_factory=list)  # files that changed while the run worked: left as they are

    def count(self, verdict: str) -> int:
        return sum(p.rebase.count(verdict) for p in self.patches)

    @property
    def hunks(self) -> int:
        return sum(len(p.rebase.outcomes) for p in self.patches)

    @property
    def complete(self) -> bool:
        return self.verified and not any(self.count(v) for v in (*LEFT, UNCHECKED)) and not self.unwritten


def live_stack(root: Path, named: list[str] | tuple[str, ...] = ()) -> tuple[Stack, PatchStacks]:
    """The stack `check` judges first (the plain Dockerfile's, else a variant's, else a script's)."""
    stacks = patch_stacks(root, named)
    if not stacks.stacks:
        raise UsageError(f"no patch file against SGLang in {root}: nothing to rebase (give PATCH to rebase one file)")
    if stacks.guessed:
        folders = ", ".join(sorted({str(PurePosixPath(p).parent) for p in stacks.patches}))
        raise UsageError(f"no Dockerfile or script applies the patch files ({folders}): name the live stack in "
                         "`patch-files` ([tool.sglang-contracts]) or give PATCH")
    return stacks.stacks[0], stacks


def _overlay(release: Release, patched: dict[str, str | None]) -> Release:
    """`release` with files of patch paths replaced (None: deleted): a stack's earlier patches."""
    if not patched:
        return release
    files = {relpath: None if text is None else text.encode("utf-8", "surrogateescape")
             for path, text in patched.items() if (relpath := release_relpath(path))}
    tree = PatchedTree(release.tree, files, PatchStacks({}, [], []), [])
    return dataclasses.replace(release, tree=tree, identity=None)


def _after_rebase(rebase: Rebase) -> dict[str, str | None]:
    """The files of B the rebased patch changes, by patch path, as it leaves them."""
    changed: dict[str, str | None] = {}
    for rebased in rebase.files:
        if rebased.before is not None and (rebased.after is None or rebased.target != rebased.path):
            changed[rebased.path] = None
        if rebased.after is not None:
            changed[rebased.target] = rebased.after
    return changed


def rebase_stack(stack: Stack, patches: dict[str, PatchFile], texts: dict[str, str], old: Release, new: Release,
                 skeletons: dict[str, PatchFile] | None = None, trees: Path | None = None,
                 write_trees: bool = True) -> list[PatchRebase]:
    """Each patch of `stack` rebased from A with the earlier originals applied (as check_stack
    applies them: what applies of each) onto B with the earlier patches as rebased; `trees`:
    a folder per patch with hunks left, its files there with git's conflict markers (only
    named, with `write_trees` False: bump's dry run)."""
    on_old: dict[str, str | None] = {}
    on_new: dict[str, str | None] = {}
    done = []
    for relpath in stack.patches:
        name = PurePosixPath(relpath).name
        old_here, new_here = _overlay(old, on_old), _overlay(new, on_new)
        rebase = rebase_patch(patches[relpath], texts[relpath], old_here, new_here, (skeletons or {}).get(name),
                              tree=trees / name if trees is not None and write_trees else None, tree_if_left=True)
        left = any(o.verdict in LEFT for o in rebase.outcomes)
        done.append(PatchRebase(relpath, rebase, trees / name if trees is not None and left else None))
        on_old.update(check_stack([patches[relpath]], *tree_reader(old_here.tree)).patched)
        on_new.update(_after_rebase(rebase))
    return done


def _failing_hunk(patch_text: str, stderr: str) -> str:
    """git's first error, and the hunk of the new patch it names (`patch failed: PATH:LINE`)."""
    first = next((line for line in numbered_lines(stderr) if line.startswith("error:")), stderr.strip() or "git failed")
    match = re.search(r"patch failed: (.+):(\d+)$", first)
    if match:
        path, line = match.group(1), int(match.group(2))
        for file in parse_patch(patch_text).files:
            for number, hunk in enumerate(file.hunks, 1):
                if file.path == path and hunk.old_start == line:
                    return f"{first} (hunk #{number} of {path}, {hunk.header.split(' @@')[0]} @@)"
    return first


def verify_stack(done: list[PatchRebase], new: Release, three_way: bool, scratch: Path) -> tuple[bool, str]:
    """Do the new patches apply in order, with real `git apply --check` (`--3way` when the
    project applies with it), on a fresh tree of B? Each is applied for real after its check,
    for the next to be checked on it. (ok, what was found)."""
    read = tree_reader(new.tree)[0]
    paths = dict.fromkeys(path for each in done for f in each.rebase.files for path in (f.path, f.target))
    texts = {path: text for path in paths if (text := read(path)) is not None}
    git_dir = scratch / "stack-repository"
    repo = release_tree(scratch / "stack", texts, git_dir)
    flags = ["--3way"] if three_way else []
    applied = 0
    for index, each in enumerate(done):
        checked = checked_text(each.rebase.patch_text)
        if not checked.strip():
            continue
        patch_file = scratch / f"stack-{index}.patch"
        write_file(patch_file, checked.encode("utf-8", "surrogateescape"))
        excluded = unchecked_excludes(each.rebase)
        run = git(repo, "apply", "--check", *flags, *excluded, str(patch_file), git_dir=git_dir)
        if run.returncode:
            return False, (f"{each.name}: git apply --check{' --3way' * three_way} on a fresh tree of {new.short} with "
                           f"the {applied} patch{'es' * (applied != 1)} before it applied fails: "
                           f"{_failing_hunk(each.rebase.patch_text, run.stderr)}")
        git(repo, "apply", *flags, *excluded, str(patch_file), git_dir=git_dir, must_succeed=True)
        git(repo, "add", "-A", git_dir=git_dir, must_succeed=True)
        applied += 1
    unparsed = [f"{each.name}: {each.rebase.verification}" for each in done if not each.rebase.verified]
    if unparsed:
        return False, unparsed[0]
    unchecked = sum(each.rebase.count(UNCHECKED) for each in done)
    return True, (f"the {applied} new patch{'es apply' if applied != 1 else ' applies'} in order with git apply "
                  f"--check{' --3way' * three_way} on a fresh tree of {new.short}, and every Python file "
                  f"{'they leave parses' if applied != 1 else 'it leaves parses'}"
                  + (f"; {unchecked} hunks carried unchecked (not in the check)" if unchecked else ""))


def _folder_of(stack: Stack) -> str:
    folders = {str(PurePosixPath(path).parent) for path in stack.patches}
    if len(folders) != 1:
        raise UsageError(f"the live stack ({stack.source}) is in {len(folders)} folders: give -o FOLDER for the new one")
    return folders.pop()


def new_folder_for(folder: str, new: Release) -> str:
    """Where the rebased stack goes: a folder named for B beside one named for a release
    (`v0.5.15.post1` -> `v0.5.23`, keeping its `v`), else the folder itself (`latest`)."""
    path = PurePosixPath(folder)
    if version_in_tag(path.name) is None:
        return folder
    if new.version is None:
        raise UsageError(f"the stack is kept in a folder per release ({folder}) and --new {new.short} is no version: "
                         "give -o FOLDER")
    prefix = path.name[0] if path.name[0] in "vV" else ""
    return str(path.parent / f"{prefix}{file_name_part(new.version)}")


def folder_renamed(text: str, old_name: str, new_name: str) -> str:
    """The text of the file that applies the stack with its folder's name moved where it is a
    value (`ARG PATCH_VERSION=v0.5.14`, `export V="v0.5.14"`, `${1:-v0.5.14}`) or a path's part
    (`docker/patch/v0.5.14/`); an image tag that starts alike (`v0.5.14-cu129`) is not it."""
    return folder_pattern(old_name).sub(new_name, text)


def folder_pattern(name: str) -> re.Pattern:
    """`name` where folder_renamed moves it: after `=`, `="`, `:-` or `/`, before a quote, `/`,
    `}`, a blank or the line's end (a literal between fixed contexts: linear on any text)."""
    return re.compile(r"(?:(?<==)|(?<==[\"'])|(?<=:-)|(?<=/))" + re.escape(name) + r"(?=[\"'/}\s]|$)", re.M)


def _project_text(root: Path, relpath: str) -> str | None:
    """A file of the project as written (bytes that are not UTF-8 kept, for the edit to keep them)."""
    try:
        return read_limited(root / relpath, within=root).decode("utf-8", "surrogateescape")
    except Unreadable:
        return None


def _unwritten_note(each: PatchRebase, result: StackRebase) -> str:
    """Why a patch of the stack is not written: upstream took every hunk (take it out), or none
    was carried (a conflict to resolve: an empty text is no sign that upstream has it, campaign
    9, R14)."""
    outcomes = each.rebase.outcomes
    if outcomes and all(o.verdict == DROPPED for o in outcomes):
        return (f"{each.relpath}: every hunk is upstream in {result.new.short}: not written; take it out of "
                f"{result.stack.source.rsplit(':', 1)[0]}")
    left = sum(o.verdict in LEFT for o in outcomes)
    unchecked = sum(o.verdict == UNCHECKED for o in outcomes)
    return (f"{each.relpath}: no hunk was carried to {result.new.short} ({left} left to resolve, {unchecked} "
            "unchecked): not written; it is still needed once its conflicts are resolved")


def stack_edits(root: Path, result: StackRebase, current: Callable[[str], str | None] | None = None) -> list[Edit]:
    """The files the rebase writes: each new patch, and the file that applies the stack when the
    new folder needs naming there. `current(relpath)`: a file's text as an earlier step left it
    (bump's fixes, not yet written), else None for the file as it is."""
    def text_of(relpath: str) -> str | None:
        given = current(relpath) if current is not None else None
        return given if given is not None else _project_text(root, relpath)

    edits = []
    for each in result.patches:
        relpath = f"{result.new_folder}/{each.name}"
        if each.rebase.patch_text.strip():
            edits.append(Edit(relpath, text_of(relpath), each.rebase.patch_text))
        else:
            result.notes.append(_unwritten_note(each, result))
    if result.new_folder == result.folder:
        return edits
    source = result.stack.source.rsplit(":", 1)[0]
    text = text_of(source) if ":" in result.stack.source else None
    renamed = folder_renamed(text, PurePosixPath(result.folder).name, PurePosixPath(result.new_folder).name) \
        if text is not None else None
    if renamed is not None and renamed != text:
        edits.append(Edit(source, text, renamed))
    else:
        result.notes.append(f"{result.stack.source}: no variable or path there names {result.folder}: point it at "
                            f"{result.new_folder} by hand")
    return edits


def write_edits(root: Path, result: StackRebase) -> None:
    """Each edit written below the root, and nowhere else (write_under: no link followed out);
    a file that no longer holds the text its edit was made from (an editor saved the Dockerfile
    while the stack was verified) is left as it is, and said in the notes."""
    for edit in list(result.edits):
        try:
            write_under(root, edit.relpath, edit.after, before=edit.before)
        except ChangedMeanwhile as error:
            result.edits.remove(edit)
            result.unwritten.append(edit.relpath)
            result.notes.append(f"{printable_path(edit.relpath)}: not written: {error}")


def edits_diff(edits: list[Edit]) -> str:
    return "".join(unified_text_diff(edit.relpath, edit.before, edit.after) for edit in edits)


def _skeletons(given: Path | None, stack: Stack) -> dict[str, PatchFile]:
    """`--skeleton DIR`: the skeleton stack's patch of each name the stack has (a folder of one
    patch stands for a stack of one patch, whatever its name)."""
    if given is None:
        return {}
    if not given.is_dir():
        raise UsageError(f"--skeleton {given}: give the skeleton's stack, a folder of patch files, to rebase a stack")
    found = sorted(p for p in given.iterdir() if p.name.endswith(PATCH_SUFFIXES) and p.is_file())
    names = [PurePosixPath(p).name for p in stack.patches]
    if len(found) == 1 and len(names) == 1:
        return {names[0]: read_patch(found[0])}
    return {p.name: read_patch(p) for p in found if p.name in names}


def rebase_live_stack(root: Path, old: Release, new: Release, named: list[str] | tuple[str, ...] = (),
                      skeleton: Path | None = None, trees: Path | None = None, folder: str | None = None,
                      current: Callable[[str], str | None] | None = None, write_trees: bool = True) -> StackRebase:
    """The live stack rebased and verified, and the edits that write it (not yet written);
    the conflicts' trees are written unless `write_trees` is False."""
    stack, stacks = live_stack(root, named)
    kept = _folder_of(stack) if folder is None else None
    new_folder = folder if folder is not None else new_folder_for(kept, new)
    if unsafe_path_reason(new_folder):
        raise UsageError(f"-o {new_folder}: {unsafe_path_reason(new_folder)}: give a folder of the project")
    refuse_link_out(root, root / new_folder, "the new stack's folder")
    if trees is not None and write_trees:
        check_tree_folder(trees)  # an earlier run's conflicts, maybe half resolved: never overwritten
        refuse_link_out(root, trees, "--tree")
    patches, texts = {}, {}
    for relpath in stack.patches:  # as bump's fixes left them (an upstream hunk dropped), when they did
        patches[relpath], texts[relpath] = read_patch_text(root / relpath, current(relpath) if current else None)
    done = rebase_stack(stack, patches, texts, old, new, _skeletons(skeleton, stack), trees, write_trees)
    result = StackRebase(root, stack, old, new, done, kept or new_folder, new_folder,
                         others=[s for s in stacks.stacks if s is not stack])
    with tempfile.TemporaryDirectory(prefix="sglang-contracts-stack-") as scratch:
        result.verified, result.verification = verify_stack(done, new, stack.three_way, Path(scratch))
    result.edits = stack_edits(root, result, current)
    return result


# -- reports ---------------------------------------------------------------------------------

def _applies(verified: bool, left: int) -> str:
    return ("yes" if not left else f"no: {left} left out") if verified else "no"


def summary_table(result: StackRebase) -> str:
    """One row per patch: its hunks by verdict, and whether its rebased text verified."""
    shown = [v for v in COLUMNS if result.count(v)]
    header = ["patch", "hunks", *shown, "verified"]
    rows = [[printable_path(each.name), str(len(each.rebase.outcomes)), *(str(each.rebase.count(v)) for v in shown),
             _applies(each.rebase.verified, sum(each.rebase.count(v) for v in LEFT))] for each in result.patches]
    rows.append(["(stack)", str(result.hunks), *(str(result.count(v)) for v in shown),
                 _applies(result.verified, sum(result.count(v) for v in LEFT))])
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    line = lambda row: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))  # noqa: E731
    return "\n".join(line(row).rstrip() for row in [header, *rows]) + "\n"


def render_stack_plan(result: StackRebase) -> str:
    """The decision log of the stack: where it went, whether git takes it, the counts per patch,
    then each patch's own log (rebase.render_plan, one level down)."""
    old, new = plain(result.old.short), plain(result.new.short)
    moved = result.new_folder != result.folder
    out = [f"# Rebase of the patch stack {code(result.folder + '/')}: sglang {old} -> {new}", "",
           f"- applied by {code(result.stack.source)}" + (" with `git apply --3way`" if result.stack.three_way else ""),
           f"- written to {code(result.new_folder + '/')}" + (f" ({code(result.folder + '/')} is left as it is)" if moved else ""),
           f"- {inline(verification_said(result.verified, result.verification, sum(result.count(v) for v in LEFT)))}",
           ""]
    shown = [v for v in COLUMNS if result.count(v)]
    out += ["| patch | hunks | " + " | ".join(shown) + " | verified |", "|---" * (len(shown) + 3) + "|"]
    for each in result.patches:
        out.append(f"| {cell(code(each.name))} | {len(each.rebase.outcomes)} | "
                   + " | ".join(str(each.rebase.count(v)) for v in shown)
                   + f" | {_applies(each.rebase.verified, sum(each.rebase.count(v) for v in LEFT))} |")
    out.append("")
    trees = [each for each in result.patches if each.tree is not None]
    if trees:
        out += ["## Conflicts to resolve", "",
                "Each folder holds the files of the patch as rebased, git's conflict markers where hunks are left; "
                "resolve them there, and `git diff` there is the patch.", ""]
        out += [f"- {code(each.name)}: {code(shown_path(each.tree, result.root))}, "
                + ", ".join(code(where(o)) for o in each.rebase.outcomes if o.verdict in LEFT) for each in trees]
        out.append("")
    if result.notes or result.others:
        out += ["## Left to do by hand", ""]
        out += [f"- {inline(note)}" for note in result.notes]
        out += [f"- {inline(not_rebased(other, result.new, result.stack))}" for other in result.others]
        out.append("")
    for each in result.patches:
        out.append(render_plan(each.rebase, each.relpath, result.old, result.new, None, depth=2))
    return "\n".join(out).rstrip("\n") + "\n"


def not_rebased(other: Stack, new: Release, rebased: Stack | None = None) -> str:
    """The line for another live stack (slime's `build_conda.sh`): when it applies the first
    patches of the rebased stack, that it is rebased with it; else which it is, and how to
    rebase it."""
    folders = sorted({str(PurePosixPath(path).parent) + "/" for path in other.patches})
    if rebased is not None and other.patches == rebased.patches[:len(other.patches)]:
        names = ", ".join(PurePosixPath(path).name for path in other.patches)
        first = "the first patch" if len(other.patches) == 1 else f"the first {len(other.patches)} patches"
        return (f"rebased with it: the stack of {other.source} applies {first} of this one ({names} in "
                f"{', '.join(folders)})")
    return (f"not rebased: the stack of {other.source} ({plural(len(other.patches), 'patch')} in "
            f"{', '.join(folders)}), which another build applies: only the image's stack is rebased; rebase it "
            f"with `patch-files` naming it, or each patch with `sglang-contracts patch rebase PATCH --new {new.short}`")


def summary_lines(result: StackRebase, written: bool = True) -> list[str]:
    """What the terminal gets: where the stack went, the table, git's verdict, what is left
    (`written` False: a dry run's, whose conflicts' files are not written)."""
    lines = [f"{result.folder}/ -> {result.new_folder}/: sglang {result.old.short} -> {result.new.short} "
             f"({result.stack.source}{', git apply --3way' if result.stack.three_way else ''})",
             *numbered_lines(summary_table(result)),
             verification_said(result.verified, result.verification, sum(result.count(v) for v in LEFT))]
    lines += [f"conflicts left in {each.name}: resolve them in {shown_path(each.tree, result.root)} (git diff there is "
              "the patch)" if written else f"conflicts left in {each.name}: a run that writes puts its files, with "
              f"git's markers, in {shown_path(each.tree, result.root)}" for each in result.patches if each.tree is not None]
    lines += result.notes
    lines += [not_rebased(other, result.new, result.stack) for other in result.others]
    return [printable(line) for line in lines]


def patch_rebase_stack(args, root: Path, plan_for: Callable[[str], Path]) -> int:
    """The command's stack form: 0 when every hunk was rebased and the stack verified, else 1.
    `args.old`/`args.new`: the releases as the project names them (cli.py); `plan_for`: where
    the plan goes, given the new release's version."""
    from sglang_contracts.config import find_config
    from sglang_contracts.infra.cache import cache_for_project, cache_root
    from sglang_contracts.sources import open_release

    cache = cache_for_project(args.cache_dir or cache_root(), root)
    old, new = (open_release(spec, sglang_repo=args.sglang_repo, cache=cache) for spec in (args.old, args.new))
    named = find_config(root, None).get("patch-files") or ()
    plan = plan_for(new.in_file_name)
    trees = args.tree if args.tree is not None else plan.parent / f"sglang-{new.in_file_name}-conflicts"
    folder = args.output.as_posix() if args.output is not None else None
    result = rebase_live_stack(root, old, new, named, args.skeleton, trees, folder)
    write_edits(root, result)
    write_file_below(root, plan, render_stack_plan(result))
    for line in summary_lines(result):
        print(line, file=sys.stderr)
    print(printable(f"written: {', '.join(edit.relpath for edit in result.edits) or 'nothing'}; "
                    f"plan: {shown_path(plan, root)}"), file=sys.stderr)
    return 0 if result.complete else 1
