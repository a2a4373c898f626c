"""`sglang-contracts patch rebase`: a patch made against release A, rewritten against release B.

Hunk by hunk, in patch order, on B's copy of each file (followed by content when it moved):
- a hunk git apply places on B (at an offset, no fuzz) is carried;
- one whose reversal git would place on B is already there: dropped, with the line;
- else it is merged three ways by `git merge-file`: the base is A's file with the patch's
  earlier hunks, one side the same with this hunk, the other B's file as rebased so far. A clean
  merge is carried as merged (or dropped when it leaves B as it was); a conflict keeps git's
  three texts, and `--tree` writes the file with git's conflict markers.
With a skeleton (a patch of B the project's derives from), a hunk making the same change as one
of the skeleton's is taken from the skeleton (class A); the project's other changes are ported on
top of it (B, on files both patch; C, on files only the project patches).
The new patch is what `git diff` says between B's files and their rebased contents; it is
verified by `git apply --check` on a fresh tree of B, and every Python file it leaves must parse.
Merging is git's: no diff3 of our own.
"""

from __future__ import annotations

import ast
import os
import re
import stat
import subprocess
import tempfile
from collections import Counter, deque
from dataclasses import dataclass, field
from difflib import get_close_matches
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Callable, Iterator

from sglang_contracts.patch.gitapply import Image, what_changed
from sglang_contracts.patch.release import (
    files_added, find_moved, outside_package_reason, release_relpath, tree_reader,
)
from sglang_contracts.fix.document import write_atomically
from sglang_contracts.infra.errors import UsageError
from sglang_contracts.infra.gitsafety import safe_git_environment, safe_git_options
from sglang_contracts.infra.display import patch_for, printable, printable_path
from sglang_contracts.infra.files import Unreadable, read_limited
from sglang_contracts.infra.roots import working_folder
from sglang_contracts.infra.lines import git_lines, numbered_lines
from sglang_contracts.infra.markdown import code, code_block, inline, plain
from sglang_contracts.infra.output import standard_output, write_file, writing
from sglang_contracts.infra.wording import plural
from sglang_contracts.infra.pysource import TooComplex, parse_quietly
from sglang_contracts.patch.classify import change_of, read_patch
from sglang_contracts.patch.patchfile import FilePatch, Hunk, PatchFile, parse_patch, unsafe_path_reason
from sglang_contracts.sources.base import Release

CARRIED = "carried"  # applies on B as it is (at an offset)
MERGED = "merged"  # its context changed; git merge-file merged it cleanly
DROPPED = "dropped"  # B already has it
SKELETON = "from-skeleton"  # the skeleton's hunk making the same change was taken
CONFLICT = "conflict"  # git merge-file left a conflict
GONE = "file-gone"  # B no longer has the file, and no file of B holds its content
NOT_ON_OLD = "not-on-old"  # the hunk is not against A: it does not apply there, so there is no base to merge from
UNCHECKED = "not-checked"  # carried as it is, unjudged: binary, outside the package, a file the release source lacks
LEFT = (CONFLICT, GONE, NOT_ON_OLD)  # hunks the new patch lacks

MARKER_LABELS = ("patched", "release-A", "release-B")  # ours, base, theirs in git merge-file's markers


@dataclass
class Outcome:
    file: FilePatch
    hunk: Hunk | None
    number: int  # 1-based within its file patch
    verdict: str
    detail: str = ""
    path: str | None = None  # the patch path on B; differs from file.path when the file moved
    at: int | None = None  # 1-based line of B's rebased file where the hunk is (or was found already)
    label: str = ""  # with a skeleton: A, B or C
    conflict: tuple[str, str, str] | None = None  # (release A, patched A, release B): git's conflict texts

    @property
    def moved(self) -> bool:
        return self.path is not None and self.path != self.file.path


@dataclass
class RebasedFile:
    """One file of B the new patch changes: before (B's, None when B lacks it), after (None: deleted)."""

    path: str  # patch path on B
    before: str | None
    after: str | None
    target: str  # where `after` goes (a rename in the patch moves it)
    a_text: str = ""  # A's file, the base of the merges
    hunks: list[tuple[Hunk, bool]] = field(default_factory=list)  # (hunk, left in conflict), in order


@dataclass
class Rebase:
    outcomes: list[Outcome]
    files: list[RebasedFile]
    sections: list[tuple[str, object]]  # ("file", RebasedFile) or ("verbatim", patch text), in patch order
    skeleton_left: list[tuple[str, Hunk]] = field(default_factory=list)  # skeleton hunks not taken
    patch_text: str = ""
    verified: bool = False
    verification: str = ""

    def count(self, verdict: str) -> int:
        return sum(o.verdict == verdict for o in self.outcomes)

    @property
    def complete(self) -> bool:
        return self.verified and not any(o.verdict in LEFT or o.verdict == UNCHECKED for o in self.outcomes)


# -- git -------------------------------------------------------------------------------------

GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C",
           "GIT_AUTHOR_NAME": "sglang-contracts", "GIT_AUTHOR_EMAIL": "rebase@sglang-contracts.invalid",
           "GIT_COMMITTER_NAME": "sglang-contracts", "GIT_COMMITTER_EMAIL": "rebase@sglang-contracts.invalid"}


def git(cwd: Path, *args: str, git_dir: Path | None = None, must_succeed: bool = False) -> subprocess.CompletedProcess:
    """git itself, free of the user's configuration (a diff.noprefix, colours, autocrlf) and of
    any the tree could carry; with `git_dir`, the repository lives there, apart from the files.
    `must_succeed`: a run on a tree this tool built, whose failure (a file git cannot take) is
    one line, never a patch made of what happened to work."""
    where = ["--git-dir", str(git_dir), "--work-tree", str(cwd)] if git_dir is not None else []
    try:
        run = subprocess.run(["git", *safe_git_options(), *where, *args], cwd=cwd, capture_output=True,
                             env=safe_git_environment(GIT_ENV), text=True, encoding="utf-8",
                             errors="surrogateescape")
    except FileNotFoundError:
        raise UsageError("patch rebase needs git on PATH (git apply and git merge-file do the work)") from None
    except ValueError:  # a NUL byte in a path a patch names: no process can be given it
        raise UsageError("a path of the patch holds a NUL byte; git cannot be given it") from None
    if must_succeed and run.returncode:
        first = next((line for line in numbered_lines(run.stderr) if line.strip()), f"exit status {run.returncode}")
        raise UsageError(f"git {args[0]} failed on the rebased tree: {printable(first)}")
    return run


def _write(path: Path, text: str) -> None:
    write_file(path, text.encode("utf-8", "surrogateescape"))


def write_under(root: Path, relpath: str, text: str | None, before: str | None = None) -> None:
    """Write (None: remove) a file a patch names inside `root`, and nowhere else: the path is
    checked as a patch path (no absolute path, no `..`, no `.git`), each folder on its way is
    made or entered only if it is a real folder (never a link), and the file itself is never a
    link followed out. `before`: the text `text` was made from, which the file must still hold
    (write_atomically's ChangedMeanwhile)."""
    target = root / relpath
    with writing(target):
        why = _refusal_below(root, relpath, make_folders=True)
        if why:
            raise UsageError(f"refused to write {printable_path(relpath)} under {printable_path(str(root))}: {why}")
        if text is None:
            target.unlink()
            return
        _replace_file(target, text.encode("utf-8", "surrogateescape"), relpath, root,
                      None if before is None else before.encode("utf-8", "surrogateescape"))


def _refusal_below(root: Path, relpath: str, make_folders: bool) -> str:
    """Why a file `relpath` below the root may not be written, or "": a patch path's refusals
    (unsafe_path_reason), or a folder on its way that is not a real folder (a link); the
    missing folders made with `make_folders` (else the walk stops at the first one missing)."""
    why = unsafe_path_reason(relpath)
    folder = root
    for part in relpath.split("/")[:-1] if not why else ():
        folder = folder / part
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            return f"{printable_path(str(folder.relative_to(root)))} is not a folder of the tree"
        if not folder.exists():
            if not make_folders:
                break
            folder.mkdir()
    return why


def text_below(root: Path, path: Path) -> str | None:
    """The text a report's file holds now, which write_file_below would replace (a dry run's
    diff), None when there is none. Read only as it would be written: below the root by the
    same checks, never through a link nor from `.git` (a pull request's `pr-body` linked to
    /proc/self/environ, or naming .git/config, put the CI's secrets in the diff: seventh
    campaign, P04, P05), and refused as the write is; elsewhere where the user named it."""
    relpath = _relpath_below(root, path)
    if relpath is None:
        absolute = _absolute(path)
        return absolute.read_text(errors="surrogateescape") if absolute.is_file() else None
    target = root / relpath
    why = _refusal_below(root, relpath, make_folders=False)
    if not why:
        try:
            existing = os.lstat(target)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:
            why = error.strerror or str(error)
        else:
            why = "" if stat.S_ISREG(existing.st_mode) else "not a regular file (a link, a FIFO or a device)"
    if not why:
        try:
            return read_limited(target, within=root).decode("utf-8", "surrogateescape")
        except Unreadable as unreadable:
            why = unreadable.reason
    raise UsageError(f"refused to write {printable_path(relpath)} under {printable_path(str(root))}: {why}")


def shown_path(path: Path, root: Path) -> str:
    """A path the run wrote, relative to the project's root when it is in it."""
    absolute = _absolute(path)
    return absolute.relative_to(root).as_posix() if absolute.is_relative_to(root) else str(path)


PLAN_HEADING = "# Rebase of "  # how every plan this tool writes starts (render_plan, render_stack_plan)


def draft_below(root: Path, path: Path, heading: str, setting: str) -> None:
    """A draft the configuration's `setting` names (`pr-body`, `upgrade-plan`: a pull request's
    text) is written over a file there only when the file is one: empty, or starting with the
    draft's `heading`; else refused before anything is written. `pr-body = "pyproject.toml"`
    replaced the configuration with markdown, `"m.py"` a source file (campaign 12, R03). Read
    as text_below reads it (no link, nothing of `.git`)."""
    existing = text_below(root, path)
    if existing is not None and existing.strip() and not existing.startswith(heading):
        raise UsageError(f"refused to write {printable_path(shown_path(path, root))}, which `{setting}` names: it is "
                         f"not a draft this tool wrote (one starts with {heading.strip()!r}); name another file")


def _replace_file(target: Path, data: bytes, relpath: str, root: Path, read: bytes | None = None) -> None:
    """A new file made exclusively, an existing regular file replaced by rename (its mode kept):
    never written through, so a hard link's other name (a file out of the project) keeps its
    content, and a FIFO or device at the path is refused rather than opened (campaign 5's N02, N03)."""
    try:
        existing = os.lstat(target)
    except FileNotFoundError:
        existing = None
    if existing is None:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        with os.fdopen(fd, "wb") as file:
            file.write(data)
    elif stat.S_ISREG(existing.st_mode):
        write_atomically(target, data, read)
    else:
        raise UsageError(f"refused to write {printable_path(relpath)} under {printable_path(str(root))}: "
                         "not a regular file (a link, a FIFO or a device)")


def refuse_link_out(root: Path, folder: Path, what: str) -> None:
    """A folder named below the root (the new stack's, the conflicts' beside the plan) that a
    link on its way leads out of the project is refused before anything is written: a pull
    request's `docs/draft -> ~/.ssh`."""
    absolute = Path(os.path.abspath(folder))
    real_root = Path(os.path.realpath(root))
    if absolute.is_relative_to(root) and not Path(os.path.realpath(absolute)).is_relative_to(real_root):
        raise UsageError(f"{what} {folder}: a link on its way leads out of the project; give another")


def write_file_below(root: Path, path: Path, text: str) -> None:
    """A report the run writes: below the root through write_under (no link followed out of
    it), elsewhere where the user named it."""
    relpath = _relpath_below(root, path)
    if relpath is None:  # write_file makes its folder: a file in the way is one line, not a traceback
        write_file(_absolute(path), text.encode("utf-8", "surrogateescape"))
        return
    write_under(root, relpath, text)


def refusal_to_write(root: Path, path: Path) -> str:
    """Why a file the user named, which the command writes in its own way (a baseline), may not
    be: below the root, what write_under refuses (a folder link on its way, a name in `.git`:
    campaign 14, R05); "" elsewhere."""
    relpath = _relpath_below(root, path)
    return "" if relpath is None else _refusal_below(root, relpath, make_folders=False)


def _absolute(path: Path) -> Path:
    return path if path.is_absolute() else Path(working_folder()) / path


def _relpath_below(root: Path, path: Path) -> str | None:
    """`path`'s name below the root, None for a path elsewhere: by its normal name (`../p/plan.md`,
    named from beside the project, is in it too)."""
    try:
        return Path(os.path.normpath(_absolute(path))).relative_to(root).as_posix()
    except ValueError:
        return None


class Merger:
    """`git merge-file --diff3` in one scratch folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def merge(self, ours: str, base: str, theirs: str) -> tuple[str, int]:
        """The merged text (with git's conflict markers) and the number of conflicts."""
        names = ("ours", "base", "theirs")
        for name, text in zip(names, (ours, base, theirs)):
            _write(self.folder / name, text)
        labels = [arg for label in MARKER_LABELS for arg in ("-L", label)]
        run = git(self.folder, "merge-file", "-p", "--diff3", *labels, *names)
        if run.returncode > 127:
            raise UsageError(f"git merge-file failed: {run.stderr.strip()}")
        return run.stdout, run.returncode


def conflict_texts(merged: str) -> tuple[str, str, str]:
    """(release A, patched A, release B) of every conflict git marked, regions joined in order."""
    ours_mark, base_mark, theirs_mark = (f"{c * 7} {label}" for c, label in zip("<|>", MARKER_LABELS))
    parts = {"ours": [], "base": [], "theirs": []}
    state = None
    for line in git_lines(merged):
        bare = line.rstrip("\n")
        if bare == ours_mark:
            state = "ours"
        elif bare == base_mark and state == "ours":
            state = "base"
        elif bare == "=" * 7 and state == "base":
            state = "theirs"
        elif bare == theirs_mark and state == "theirs":
            state = None
        elif state is not None:
            parts[state].append(line)
    return "".join(parts["base"]), "".join(parts["ours"]), "".join(parts["theirs"])


def _significant_lines(lines: list[str]) -> list[str]:
    """The lines that say something (stripped; not blank, not a lone bracket or keyword)."""
    return [line.strip() for line in lines if len(line.strip()) >= 8 and any(c.isalnum() for c in line)]


def upstream_has_it(hunk: Hunk, base: str, b_text: str, near: int) -> int | None:
    """Where B already holds what the hunk adds, or None: every line it adds that says
    something is one upstream added between A (`base`, with the patch's earlier hunks) and B
    (the same line, or one that differs by a character or two: `.shape` for `tuple(.shape)`),
    within a hunk's length of `near` (0-based: where the three-way merge puts the hunk), and
    every line it removes is gone from B. Merged, they would be there twice (slime's
    `and "zero" not in weight_name` inside and outside the parenthesis). The 0-based line of
    B where the first of them is."""
    added = _significant_lines(hunk.added)
    if sum(map(len, added)) < 24:  # too little to tell upstream's lines from a coincidence
        return None
    b_lines = [line.strip() for line in git_lines(b_text)]
    a_counts, b_counts = Counter(line.strip() for line in git_lines(base)), Counter(b_lines)
    if Counter(_significant_lines(hunk.removed)) - (a_counts - b_counts):  # a line it removes that B keeps
        return None
    gained = b_counts - a_counts
    window = len(hunk.body) + 8
    nearby = sorted(range(max(0, near - window), min(len(b_lines), near + window + 1)), key=lambda i: abs(i - near))
    found = []
    for line in added:
        close = get_close_matches(line, list(+gained), n=1, cutoff=0.9)
        upstream = line if gained[line] > 0 else next(iter(close), None)
        at = next((index for index in nearby if b_lines[index] == upstream), None) if upstream is not None else None
        if at is None:
            return None
        gained[upstream] -= 1
        found.append(at)
    return min(found)


DEFINED = re.compile(r"^\s*(?:async\s+)?def\s+(\w+)\s*\(")


def _definition_of(name: str) -> re.Pattern[str]:
    """A `def name(` at a line's start."""
    return re.compile(rf"(?m)^[ \t]*(?:async[ \t]+)?def[ \t]+{re.escape(name)}[ \t]*\(")


def defined_twice(hunk: Hunk, before: str, after: str) -> str | None:
    """`Class.method` when the hunk defines a method its class in B already defines (B's
    `DecodePreallocQueue.release_memory_occupation`, which the patch adds again at the class's
    end): the second definition silently replaces the first. None when it does not, or when
    either text does not parse. Only hunks adding a `def` whose name B's file has are parsed."""
    names = {name for name in _added_definitions(hunk) if f"def {name}" in before}
    if not names:
        return None
    was, now = _methods_named(before, frozenset(names)), _methods_named(after, frozenset(names))
    if was is None or now is None:
        return None
    twice = sorted(key for key, number in now.items() if number > 1 and number > was[key] >= 1)
    return ".".join(twice[0]) if twice else None


def _added_definitions(hunk: Hunk) -> set[str]:
    """The names of the functions the hunk's added lines define."""
    return {match.group(1) for line in hunk.added if (match := DEFINED.match(line))}


@lru_cache(maxsize=2)  # a hunk's file before it is often the one after the hunk before
def _methods_named(text: str, names: frozenset[str]) -> Counter | None:
    """(class, method) -> how many times the class body defines it, for the undecorated
    methods named in `names` (a property's setter is decorated); None when it does not parse."""
    try:
        tree = parse_quietly(text)
    except (SyntaxError, ValueError, TooComplex):
        return None
    return Counter((node.name, member.name) for node in _classes(tree)
                   for member in node.body if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and member.name in names and not member.decorator_list)


def _classes(tree: ast.Module) -> Iterator[ast.ClassDef]:
    """Every class the module defines, at any depth. A class is a statement: only lists of
    statements (and of except and case clauses) are followed, not the expressions that make
    most of a file's nodes (a walk of every node, for each hunk that adds a method, took most
    of a rebase of many such hunks)."""
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.ClassDef):
            yield node
        for field_name in ("body", "orelse", "finalbody", "handlers", "cases"):
            statements = getattr(node, field_name, None)
            if isinstance(statements, list):
                todo.extend(statements)


# -- rebasing --------------------------------------------------------------------------------

def _prefix(path: str) -> str:
    """`python/` of `python/sglang/x.py`: what a release-relative path needs to be a patch path."""
    relpath = release_relpath(path) or path
    return path[: len(path) - len(relpath)]


def _first_difference(before: str, after: str) -> int:
    lines_before, lines_after = numbered_lines(before), numbered_lines(after)
    for index, (one, other) in enumerate(zip(lines_before, lines_after)):
        if one != other:
            return index + 1
    return min(len(lines_before), len(lines_after)) + 1


def _verbatim(text_lines: list[str], patch: PatchFile, index: int) -> str:
    """The text of file patch `index` as it stands in the patch file."""
    start = patch.files[index].line - 1
    end = patch.files[index + 1].line - 1 if index + 1 < len(patch.files) else len(text_lines)
    return "".join(text_lines[start:end])


GIT_CONTROL_FILES = (".gitattributes", ".gitignore", ".gitmodules")


def git_control_file(file: FilePatch) -> str:
    """Why a file patch is not written into the trees git diffs, or "": a `.gitattributes` there
    would set filters and encodings for git's own reading (UTF-16 made `git add` fail, and the
    new patch empty), a `.gitignore` would hide files from it."""
    names = {path.rsplit("/", 1)[-1] for path in (file.old_path, file.new_path) if path}
    return "a file git reads as its own settings" if names & set(GIT_CONTROL_FILES) else ""


def _copy_or_mode(file: FilePatch) -> str:
    """Why a file patch's change is not one the rebased trees can carry, or "": they hold text
    files at B's paths, so a copy (a second file from the first) or a file mode (a link, an
    executable) would come out as an edit of the source or a plain file."""
    if file.is_copy:
        return "a copy"
    return "a change of file mode (a link or an executable)" if file.mode_change else ""


def _carried_detail(at: int, hunk: Hunk, ambiguous: bool) -> str:
    """What a carried hunk's outcome says: how far git apply moved it, and that the three-way
    merge agrees where its context matches several places."""
    offset = at + 1 - hunk.new_start
    return ", ".join(part for part in (f"offset {offset:+d}" if offset else "", "its context matches several "
                     "places, and the three-way merge puts it at the same one" if ambiguous else "") if part)


@dataclass
class _Step:
    """One hunk being rebased: how its outcome is made, and A's file around it."""

    made: Callable[..., Outcome]
    file: FilePatch
    hunk: Hunk
    path: str  # the patch path on B
    on_a: Image  # A's file with the patch's hunks so far, this one included where it applied
    a_at: int | None  # where it applied on A
    a_known: bool  # A has the file

    @property
    def placed_on_a(self) -> bool:
        return self.a_at is not None

    @cached_property
    def base(self) -> str:
        """A's file before this hunk: the merge's base (joined only when a merge or a message
        needs it: once per hunk, a patch of thousands of hunks joined the file thousands of times)."""
        return self.on_a.text_before(self.a_at, self.hunk) if self.a_at is not None else self.on_a.text()


class _Rebaser:
    def __init__(self, patch: PatchFile, patch_text: str, old: Release, new: Release,
                 skeleton: PatchFile | None, scratch: Path) -> None:
        self.patch, self.lines = patch, git_lines(patch_text)
        self.old, self.new = old, new
        self.read_old, self.unchecked_old = tree_reader(old.tree)
        self.read_new, self.unchecked_new = tree_reader(new.tree)
        self.merger = Merger(scratch)
        self.files: dict[str, RebasedFile] = {}
        self.sections: list[tuple[str, object]] = []
        self.outcomes: list[Outcome] = []
        self.skeleton = {f.path: f for f in skeleton.files} if skeleton is not None else None
        self.skeleton_used: set[tuple[str, int]] = set()
        self.skeleton_changes: dict[str, dict[tuple, deque[int]]] = {}  # path -> change -> its hunks' numbers
        self.a_after: dict[str, str] = {}  # A's file after the file patches before this one (a file patched twice)
        self.added_files: list[str] | None = None  # B's modules A lacks, release paths (once asked)

    def run(self) -> Rebase:
        for index, file in enumerate(self.patch.files):
            self.outcomes += self._file(file, index)
        left = []
        if self.skeleton is not None:
            left = [(path, hunk) for path, file in self.skeleton.items() for number, hunk in enumerate(file.hunks)
                    if (path, number) not in self.skeleton_used]
        return Rebase(self.outcomes, list(self.files.values()), self.sections, left)

    def _every(self, file: FilePatch, verdict: str, detail: str = "", **extra) -> list[Outcome]:
        return [Outcome(file, hunk, n, verdict, detail, **extra) for n, hunk in enumerate(file.hunks or [None], 1)]

    def _label(self, path: str) -> str:
        if self.skeleton is None:
            return ""
        return "B" if path in self.skeleton else "C"

    def _file(self, file: FilePatch, index: int) -> list[Outcome]:
        target = file.new_path if file.is_new else file.old_path
        why = "binary patch" if file.binary else "" if target else "no file name"
        why = why or outside_package_reason(file) or git_control_file(file) or _copy_or_mode(file) \
            or self.unchecked_old(target) or self._unchecked_on_new(file, target)
        if why:
            self.sections.append(("verbatim", _verbatim(self.lines, self.patch, index)))
            return self._every(file, UNCHECKED, f"{why}: carried as it is, not checked", label=self._label(target))
        if file.is_new:
            return self._new_file(file, target)
        a_text = self.a_after[target] if target in self.a_after else self.read_old(target)
        path, moved_from = target, None
        rebased = self.files.get(path)
        b_text = rebased.after if rebased is not None else self.read_new(path)
        if rebased is None and b_text is None:
            if a_text is None:
                return self._every(file, NOT_ON_OLD, f"neither {self.old.short} nor {self.new.short} has {target}")
            moved = find_moved(file, self.new.tree, self.old.tree)
            if moved is None:
                if file.is_delete:
                    return self._every(file, DROPPED, f"{self.new.short} no longer has {target}")
                return self._hunks_gone(file, target)
            path, moved_from = _prefix(target) + moved, target
            rebased = self.files.get(path)
            b_text = rebased.after if rebased is not None else self.read_new(path)
        if rebased is None:
            rebased = self.files[path] = RebasedFile(path, b_text, b_text, path, a_text or "")
            self.sections.append(("file", rebased))
        if file.is_rename and file.new_path and not moved_from:
            rebased.target = file.new_path
        if not file.hunks:  # a pure rename
            return self._every(file, CARRIED, "a rename", path=path, label=self._label(path))
        return self._hunks(file, rebased, a_text)

    def _unchecked_on_new(self, file: FilePatch, target: str) -> str:
        """Why B's file cannot be judged, or "": a file B's wheel lacks that A's shipped has
        moved or gone (0.5.23 ships 0.5.15.post1's `jit_kernel/csrc/gemm/*.cuh` under
        `kernels/jit/csrc/gemm/`), and is followed as a Python file is, not carried unchecked."""
        why = self.unchecked_new(target)
        if why and not file.is_new and self.read_new(target) is None and self.read_old(target) is not None:
            return ""
        return why

    def _new_file(self, file: FilePatch, target: str) -> list[Outcome]:
        content = "".join(line for hunk in file.hunks for line in hunk.postimage)
        existing = self.read_new(target) if target not in self.files else self.files[target].after
        label = self._label(target)
        if existing is None:
            rebased = self.files[target] = RebasedFile(target, None, content, target)
            self.sections.append(("file", rebased))
            theirs = self.skeleton.get(target) if self.skeleton is not None else None
            if theirs is not None and [change_of(h) for h in theirs.hunks] == [change_of(h) for h in file.hunks]:
                self.skeleton_used.update((target, number) for number in range(len(theirs.hunks)))
                return self._every(file, SKELETON, "the skeleton creates the same file", path=target, label="A")
            return self._every(file, CARRIED, "a new file", path=target, label=label)
        if existing == content:
            return self._every(file, DROPPED, f"{self.new.short} ships {target} with the same content",
                               path=target, at=1, label=label)
        return self._every(file, CONFLICT, f"{self.new.short} ships {target} with other content", path=target,
                           label=label, conflict=("", content, existing))

    def _skeleton_partner(self, path: str, hunk: Hunk) -> tuple[int, Hunk] | None:
        """The skeleton's unused hunk on the same file making exactly this change."""
        theirs = self.skeleton.get(path) if self.skeleton is not None else None
        if theirs is None:
            return None
        if path not in self.skeleton_changes:  # each file's hunks by change, once: not all of them for each hunk
            by_change = self.skeleton_changes[path] = {}
            for number, other in enumerate(theirs.hunks):
                by_change.setdefault(change_of(other), deque()).append(number)
        numbers = self.skeleton_changes[path].get(change_of(hunk), deque())
        while numbers and (path, numbers[0]) in self.skeleton_used:  # a hunk once used stays used
            numbers.popleft()
        return (numbers[0], theirs.hunks[numbers[0]]) if numbers else None

    def _hunks(self, file: FilePatch, rebased: RebasedFile, a_text: str | None) -> list[Outcome]:
        path = rebased.path
        on_a = Image(a_text if a_text is not None else "")
        on_b = Image(rebased.after or "")
        outcomes = []
        for number, hunk in enumerate(file.hunks, start=1):
            made = lambda verdict, detail="", **extra: Outcome(  # noqa: E731
                file, hunk, number, verdict, detail, **{"path": path, "label": self._label(path), **extra})
            step = _Step(made, file, hunk, path, on_a, on_a.apply(hunk) if a_text is not None else None,
                         a_text is not None)
            outcome, on_b, conflicted = self._rebase_hunk(step, on_b)
            outcomes.append(outcome)
            if conflicted is not None:  # what --tree's conflicted_text replays
                rebased.hunks.append((hunk, conflicted))
        if a_text is not None:
            self.a_after[file.path] = on_a.text()
        if file.is_delete:
            if on_b.text():
                return self._every(file, CONFLICT, f"{self.new.short}'s {path} has lines the deletion does not remove",
                                   path=path, conflict=(a_text or "", "", on_b.text()))
            rebased.after = None
        else:
            rebased.after = on_b.text()
        return outcomes

    def _rebase_hunk(self, step: "_Step", on_b: Image) -> tuple[Outcome, Image, bool | None]:
        """One hunk on B's file as rebased so far: its outcome, B's file after it, and whether
        it is left in conflict (None: not against A, nothing to replay)."""
        hunk, path, made = step.hunk, step.path, step.made
        partner = self._skeleton_partner(path, hunk)
        at = on_b.apply(partner[1]) if partner is not None else None
        if partner is not None and at is not None:
            self.skeleton_used.add((path, partner[0]))
            return made(SKELETON, "the skeleton's hunk, the same change", at=at + 1, label="A"), on_b, False
        # A context that matches several places of B (blank lines, a `def` every class has):
        # git takes the one nearest the header's line, which can be another class; where the
        # three-way merge puts it, by the whole file's alignment, is the place (rebasecmp).
        ambiguous = step.placed_on_a and on_b.places(hunk) > 1
        at = on_b.apply(hunk)
        if at is not None and not ambiguous and not _added_definitions(hunk):  # git apply's place, no method twice
            return made(CARRIED, _carried_detail(at, hunk, ambiguous), at=at + 1), on_b, False
        before = on_b.text() if at is None else on_b.text_before(at, hunk)
        if at is None:
            already = on_b.find(hunk.reversed(), marked=False)  # as on a fresh image of its text
            if already is not None:
                return made(DROPPED, f"{self.new.short} has its lines at {path}:{already + 1}", at=already + 1), \
                    on_b, False
            if not step.placed_on_a:
                return made(NOT_ON_OLD, f"{self.old.short} has no {step.file.path}: the patch is not against it"
                            if not step.a_known else f"it does not apply on {self.old.short} either: "
                            f"{what_changed(Image(step.base), hunk)}"), on_b, None
            return self._merged(step, before, on_b, "")
        merged, conflicts = self.merger.merge(step.on_a.text(), step.base, before) if ambiguous else (on_b.text(), 0)
        twice = defined_twice(hunk, before, on_b.text()) if not conflicts and merged == on_b.text() else None
        if twice is not None:
            return self._defined_again(step, before, twice)
        if not conflicts and merged == on_b.text():
            return made(CARRIED, _carried_detail(at, hunk, ambiguous), at=at + 1), on_b, False
        note = f"its context matches several places: git apply would put it at {path}:{at + 1}, which the " \
               "three-way merge of the whole file does not; "
        return self._merged(step, before, Image(before), note)

    def _merged(self, step: "_Step", before: str, on_b: Image, note: str) -> tuple[Outcome, Image, bool | None]:
        """A hunk B's file does not take as it is, merged three ways (git merge-file): dropped
        when upstream has its lines or the merge changes nothing, carried to a file B added
        that holds its lines, left in conflict, or merged."""
        hunk, path, made = step.hunk, step.path, step.made
        merged, conflicts = self.merger.merge(step.on_a.text(), step.base, before)
        upstream = upstream_has_it(hunk, step.base, before, _first_difference(before, merged) - 1)
        if upstream is not None:
            said = f"{note}{self.new.short} already has the lines it adds (upstream added them, at {path}:" \
                   f"{upstream + 1})"
            return made(DROPPED, f"{said}: merged, they would be there twice", at=upstream + 1), on_b, False
        ported = self._port_elsewhere(hunk, path) if conflicts else None
        if ported is not None:
            return made(CARRIED, f"{note}its lines are no longer together in {path}: they moved to {ported[0]}, a "
                                 f"file {self.new.short} added, where it applies", path=ported[0], at=ported[1] + 1), \
                on_b, None
        if conflicts:
            return made(CONFLICT, f"{note}{conflicts} conflict{'s' * (conflicts != 1)} in the three-way merge",
                        at=_first_difference(before, merged), conflict=conflict_texts(merged)), on_b, True
        if merged == before:
            return made(DROPPED, f"{note}the three-way merge leaves {self.new.short}'s {path} as it is: it already "
                                 "makes this change"), on_b, False
        twice = defined_twice(hunk, before, merged)
        if twice is not None:
            return self._defined_again(step, before, twice)
        return made(MERGED, note.removesuffix("; "), at=_first_difference(before, merged)), Image(merged), False

    def _defined_again(self, step: "_Step", before: str, twice: str) -> tuple[Outcome, Image, bool | None]:
        """A hunk that would define a method its class in B already has: left in conflict, the
        patch's definition beside B's, for a person to choose or join them."""
        method = twice.rpartition(".")[2]
        ours = "".join(line for line in step.hunk.added)
        found = _definition_of(method).search(before)
        return step.made(CONFLICT, f"{self.new.short} already defines {twice}: the hunk would define it a second "
                                   "time in the class, and the second would replace the first",
                         at=before.count("\n", 0, found.start()) + 1 if found else None,
                         conflict=("", ours, before[found.start():found.start() + len(ours)] if found else "")), \
            Image(before), True

    def _hunks_gone(self, file: FilePatch, target: str) -> list[Outcome]:
        """The hunks of a file B no longer has, with no one file of B holding them: each carried
        where a file B added has its lines in one place (a file split in two: 0.5.23's
        `kernels/jit/utils/compile/paths.py` from `jit_kernel/utils.py`), the rest gone."""
        why = f"{self.new.short} no longer has {target}, and no file it added holds the hunks' lines"
        outcomes = []
        for number, hunk in enumerate(file.hunks or [None], 1):
            ported = self._port_elsewhere(hunk, target) if hunk is not None else None
            if ported is None:
                outcomes.append(Outcome(file, hunk, number, GONE, why))
            else:
                outcomes.append(Outcome(file, hunk, number, CARRIED, f"{self.new.short} no longer has {target}: "
                                        f"its lines are in {ported[0]}, a file it added, where it applies",
                                        path=ported[0], at=ported[1] + 1, label=self._label(ported[0])))
        return outcomes

    def _port_elsewhere(self, hunk: Hunk, path: str) -> tuple[str, int] | None:
        """A hunk its file no longer takes, applied to a file B added that holds its lines in the
        one place (0.5.15's `pool_host/base.py`, where `HostKVCache` went from
        `memory_pool_host.py`): (that file's patch path, the 0-based line), or None."""
        if len(_significant_lines(hunk.preimage)) < 2:  # blank lines or a bracket: any file has them
            return None
        if self.added_files is None:
            self.added_files = files_added(self.new.tree, self.old.tree, ".py")
        wanted = [line for line in hunk.preimage if line.strip()]
        for relpath in self.added_files:
            candidate = _prefix(path) + relpath
            rebased = self.files.get(candidate)
            text = rebased.after if rebased is not None else self.read_new(candidate)
            if candidate == path or not text or not all(line in text for line in wanted):
                continue
            image = Image(text)
            if image.places(hunk) != 1:
                continue
            at = image.apply(hunk)
            if rebased is None:
                rebased = self.files[candidate] = RebasedFile(candidate, text, text, candidate)
                self.sections.append(("file", rebased))
            rebased.after = image.text()
            return candidate, at
        return None

    def conflicted_text(self, rebased: RebasedFile) -> str | None:
        """The rebased file with git's markers at each hunk left in conflict (for --tree)."""
        if not any(conflicted for _, conflicted in rebased.hunks) or rebased.after is None:
            return None
        patched, without = Image(rebased.a_text), Image(rebased.a_text)
        for hunk, conflicted in rebased.hunks:
            patched.apply(hunk)
            if not conflicted:
                without.apply(hunk)
        merged, _ = self.merger.merge(patched.text(), without.text(), rebased.after)
        return merged


# -- the new patch, verified ------------------------------------------------------------------

def release_tree(folder: Path, texts: dict[str, str], git_dir: Path | None = None) -> Path:
    """A git repository holding `texts` (patch path -> a file of release B), committed; with
    `git_dir`, the repository's own folder is there, out of reach of what the files are."""
    with writing(folder):
        folder.mkdir(parents=True, exist_ok=True)
    git(folder, "init", "-q", git_dir=git_dir, must_succeed=True)
    for path, text in texts.items():
        write_under(folder, path, text)
    git(folder, "add", "-A", git_dir=git_dir, must_succeed=True)
    git(folder, "commit", "-q", "--allow-empty", "-m", "release B", git_dir=git_dir, must_succeed=True)
    return folder


def _tree_of(folder: Path, files: list[RebasedFile], git_dir: Path | None = None) -> Path:
    """release_tree of B's copies of `files`, at their patch paths."""
    return release_tree(folder, {f.path: f.before for f in files if f.before is not None}, git_dir)


def _put_after(folder: Path, rebased: RebasedFile, text: str | None) -> None:
    if rebased.before is not None and (text is None or rebased.target != rebased.path):
        write_under(folder, rebased.path, None)
    if text is not None:
        write_under(folder, rebased.target, text)


def new_patch_text(rebase: Rebase, scratch: Path) -> str:
    """`git diff` of B's files against their rebased contents, in the patch's file order; the
    sections carried unchecked as they were."""
    repo = _tree_of(scratch / "tree", rebase.files, git_dir := scratch / "repository")
    for rebased in rebase.files:
        _put_after(repo, rebased, rebased.after)
    git(repo, "add", "-A", git_dir=git_dir, must_succeed=True)
    parts = []
    for kind, section in rebase.sections:
        if kind == "verbatim":
            parts.append(section)
            continue
        paths = sorted({section.path, section.target})
        diff = git(repo, "diff", "--cached", "-M", "--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/",
                   "--dst-prefix=b/", "HEAD", "--", *paths, git_dir=git_dir, must_succeed=True)
        parts.append(diff.stdout)
    return "".join(parts)


def unchecked_excludes(rebase: Rebase) -> list[str]:
    """`git apply --exclude` of each file patch carried unchecked: both names (git's --exclude
    matches a rename by its new one); none git cannot be given."""
    carried = [o.file for o in rebase.outcomes if o.verdict == UNCHECKED]
    named = {path for file in carried for path in (file.old_path, file.new_path) if path and "\0" not in path}
    return [f"--exclude={path}" for path in sorted(named)]


def checked_text(patch_text: str) -> str:
    """What `git apply --check` is given of a new patch: its file sections but the binary ones,
    which are carried unchecked (and excluded by name, unchecked_excludes) but which git would
    still inflate whole before excluding them (a 0.7 MB patch inflating to 512 MB: seventh
    campaign, P14)."""
    sections = re.split(r"(?m)^(?=diff --git )", patch_text)
    return "".join(section for section in sections if not re.search(r"(?m)^GIT binary patch$", section))


def verify(rebase: Rebase, scratch: Path) -> tuple[bool, str]:
    """Does `git apply --check` take the new patch on a fresh tree of B, and does every Python
    file it leaves parse? (ok, what was found)."""
    repo = _tree_of(scratch / "fresh", rebase.files, git_dir := scratch / "fresh-repository")
    patch_file = scratch / "new.patch"
    checked = checked_text(rebase.patch_text)
    _write(patch_file, checked)
    unchecked = sorted({o.file.path for o in rebase.outcomes if o.verdict == UNCHECKED})
    excluded = unchecked_excludes(rebase)
    if checked.strip():
        run = git(repo, "apply", "--check", *excluded, str(patch_file), git_dir=git_dir)
        if run.returncode:
            first = next((line for line in numbered_lines(run.stderr) if line.startswith("error:")), run.stderr.strip())
            return False, f"git apply --check of the new patch on a fresh tree of B fails: {first}"
    broken = []
    for rebased in rebase.files:
        if rebased.after is None or not rebased.target.endswith(".py"):
            continue
        try:
            parse_quietly(rebased.after, rebased.target)
        except SyntaxError as error:
            broken.append(f"{rebased.target}:{error.lineno}: {error.msg}")
        except (TooComplex, ValueError) as error:
            broken.append(f"{rebased.target}: {error}")
    if broken:
        return False, f"{len(broken)} Python file{'s' * (len(broken) != 1)} no longer parse: {'; '.join(broken)}"
    parsed = sum(1 for f in rebase.files if f.after is not None and f.target.endswith(".py"))
    skipped = f"; {len(unchecked)} file patch{'es' * (len(unchecked) != 1)} not checked" if unchecked else ""
    return True, (f"git apply --check on a fresh tree of B passes and {parsed} Python "
                  f"{'file parses' if parsed == 1 else 'files parse'}{skipped}")


def rebase_patch(patch: PatchFile, patch_text: str, old: Release, new: Release,
                 skeleton: PatchFile | None = None, tree: Path | None = None, tree_if_left: bool = False) -> Rebase:
    """Rebase `patch` (parsed from `patch_text`, made against `old`) onto `new`, verified; with
    `tree`, also write B's touched files there as a git repository, rebased, markers in place
    (with `tree_if_left`, only when hunks are left to resolve)."""
    if tree is not None:
        check_tree_folder(tree)
    with tempfile.TemporaryDirectory(prefix="sglang-contracts-rebase-") as scratch:
        scratch_path = Path(scratch)
        (scratch_path / "merge").mkdir()
        rebaser = _Rebaser(patch, patch_text, old, new, skeleton, scratch_path / "merge")
        rebase = rebaser.run()
        rebase.patch_text = new_patch_text(rebase, scratch_path / "diff")
        rebase.verified, rebase.verification = verify(rebase, scratch_path)
        if tree is not None and (not tree_if_left or any(o.verdict in LEFT for o in rebase.outcomes)):
            write_tree(tree, rebase, rebaser)
    return rebase


def check_tree_folder(folder: Path) -> None:
    try:
        taken = folder.exists() and (not folder.is_dir() or any(folder.iterdir()))
    except OSError as error:
        raise UsageError(f"--tree {folder}: {error.strerror}") from None
    if taken:
        raise UsageError(f"--tree {folder}: not an empty folder (an earlier run's conflicts? resolve them, or give "
                         "another --tree)")


def write_tree(folder: Path, rebase: Rebase, rebaser: _Rebaser) -> None:
    """B's touched files committed in a git repository, then their rebased contents with git's
    conflict markers where hunks were left: resolve them, and `git diff` is the patch."""
    repo = _tree_of(folder, rebase.files)
    for rebased in rebase.files:
        _put_after(repo, rebased, rebaser.conflicted_text(rebased) or rebased.after)


# -- reports ---------------------------------------------------------------------------------

def where(outcome: Outcome, shown: Callable[[str], str] = str) -> str:
    """`shown`: how the patch's path and header are shown (the plan shows them as code)."""
    header = shown(outcome.hunk.header.split(" @@")[0] + " @@") if outcome.hunk is not None else "the file patch"
    return f"hunk #{outcome.number} of {shown(outcome.file.path)} ({header})"


def outcome_line(patch_name: str, outcome: Outcome) -> str:
    """One printable line; `patch_name` as printable_path shows it (the line starts with it)."""
    line = outcome.hunk.line if outcome.hunk is not None else outcome.file.line
    moved = f", moved to {outcome.path}" if outcome.moved else ""
    label = f" [{outcome.label}]" if outcome.label else ""
    detail = f": {outcome.detail}" if outcome.detail else ""
    return printable(f"{patch_name}:{line}: {outcome.verdict}{label} {where(outcome)}{moved}{detail}")


def summary(rebase: Rebase) -> str:
    counts = [(rebase.count(v), v) for v in (CARRIED, SKELETON, MERGED, DROPPED, CONFLICT, GONE, NOT_ON_OLD, UNCHECKED)]
    return f"{len(rebase.outcomes)} hunks: " + ", ".join(f"{n} {v}" for n, v in counts if n)


def verification_said(verified: bool, verification: str, left: int) -> str:
    """`verified: ...` only for a stack with nothing left out: git taking the written patches,
    which miss the hunks left in conflict, is no verification of the stack (rebasecmp: "verified:
    yes" beside 43 conflicts, and the stack not importable)."""
    if not verified:
        return f"not verified: {verification}"
    if left:
        return (f"not verified: {plural(left, 'hunk')} left out of the written patches (resolve "
                f"{'it' if left == 1 else 'them'}, then rebase again); without {'it' if left == 1 else 'them'}, "
                f"{verification}")
    return f"verified: {verification}"


def render_plan(rebase: Rebase, patch_name: str, old: Release, new: Release, skeleton_name: str | None,
                depth: int = 1) -> str:
    """The upgrade decision log, in markdown: the patch's paths, headers and lines shown as code,
    the other text it brings (a verification's error, a line gone) as prose (infra/markdown).
    `depth`: the level of its title (a stack's plan holds one per patch, one level down)."""
    old_short, new_short = plain(old.short), plain(new.short)
    title, heading, entry = ("#" * (depth + level) for level in range(3))
    out = [f"{title} Rebase of {code(patch_name)}: sglang {old_short} -> {new_short}", ""]
    if skeleton_name:
        out += [f"Skeleton: {code(skeleton_name)} (class A: the skeleton's hunk; B: the project's extra change on a "
                "file both patch; C: a file only the project patches).", ""]
    left = sum(o.verdict in LEFT for o in rebase.outcomes)
    out += [f"- {plain(summary(rebase))}", f"- {inline(verification_said(rebase.verified, rebase.verification, left))}",
            ""]
    hunk = lambda o: where(o, code)  # noqa: E731
    at = lambda o: f"at {code(f'{o.path}:{o.at}' if o.at is not None else o.path)}"  # noqa: E731  (a new file has no line)

    def section(title: str, outcomes: list[Outcome], explain=lambda o: inline(o.detail)) -> None:
        out.extend([f"{heading} {title} ({len(outcomes)})", ""])
        for o in outcomes:
            label = f" [{o.label}]" if o.label else ""
            why = explain(o)
            out.append(f"- {hunk(o)}{label}" + (f": {why}" if why else ""))
        out.append("")

    by = lambda *verdicts: [o for o in rebase.outcomes if o.verdict in verdicts]  # noqa: E731
    section("Kept as they were", by(CARRIED), lambda o: at(o) + (f" ({inline(o.detail)})" if o.detail else ""))
    if skeleton_name:
        section("Taken from the skeleton", by(SKELETON), at)
    section("Merged three ways (git merge-file)", by(MERGED), at)
    section("Dropped: already upstream", by(DROPPED))
    section("Ported to moved files", [o for o in rebase.outcomes if o.moved],
            lambda o: f"{code(o.file.path)} -> {code(o.path or '')} ({o.verdict})")
    out.extend([f"{heading} Conflicts left ({len(by(*LEFT))})", ""])
    for o in by(*LEFT):
        out.append(f"{entry} {hunk(o)}: {o.verdict}\n\n{inline(o.detail)}\n")
        if o.conflict is not None:
            for title, text in zip((f"sglang {old_short}", "patched", f"sglang {new_short}"), o.conflict):
                block = code_block(text.rstrip("\n")) if text.strip() else "(nothing here: the other two add lines at this place)"
                out += [f"{title}:", "", block, ""]
    section("Not checked (carried as they were)", by(UNCHECKED))
    if rebase.skeleton_left:
        out.extend([f"{heading} Skeleton hunks not taken: the project's patch does not make them ({len(rebase.skeleton_left)})", ""])
        out += [f"- {code(path)} ({code(left.header.split(' @@')[0] + ' @@')})" for path, left in rebase.skeleton_left] + [""]
    out.extend([f"{heading} What only a GPU run can verify", ""])
    runtime = by(MERGED) + [o for o in rebase.outcomes if o.moved and o.verdict not in LEFT]
    out += [f"- {hunk(o)}: {o.verdict} onto code that changed upstream; does it still do what it did?" for o in runtime]
    out += [f"- {hunk(o)}: dropped as already upstream; does upstream's version behave as the patch's did?"
            for o in by(DROPPED)]
    out.append("- every carried hunk: its text is unchanged, but what the code around it calls may have changed "
               f"between {old_short} and {new_short}; the project's GPU tests on the patched image are the check")
    return "\n".join(out) + "\n"


# -- the command -----------------------------------------------------------------------------

def read_patch_text(path: Path, text: str | None = None) -> tuple[PatchFile, str]:
    """The patch and its text (`text`: as an earlier step left the file, not yet written);
    one-line errors for what git would reject whole."""
    if text is None:
        patch = read_patch(path)
        text = read_limited(path).decode("utf-8", "surrogateescape")
    else:
        patch = parse_patch(text)
        if patch.error is not None:
            raise UsageError(f"{path}: git apply would reject it: {patch.error[1]}")
    headers = [line for line in text.split("\n") if line.startswith(("diff --git ", "--- ", "+++ ", "@@ "))]
    if headers and all(line.endswith("\r") for line in headers):
        raise UsageError(f"{path}: its lines end in CRLF; git apply compares the carriage returns too and "
                         "rejects every hunk on the release's LF files: convert it to LF line ends first")
    return patch, text


def patch_rebase(args, root: Path) -> int:
    """`sglang-contracts patch rebase`: 0 when every hunk was rebased and the result verified, else 1.
    What it writes in the project (`root`) is written as its other files are (write_file_below):
    a name there that is a link (a pull request's, out of the project) is refused, not written
    through; `--tree` there may not lead out through a link either."""
    import sys

    from sglang_contracts.infra.cache import cache_for_project, cache_root
    from sglang_contracts.sources import open_release

    patch, text = read_patch_text(args.patch)
    skeleton = read_patch_text(args.skeleton)[0] if args.skeleton else None
    if args.tree is not None:
        refuse_link_out(root, args.tree, "--tree")
    if args.plan:  # over an earlier plan only: `--plan x.patch` replaced the patch itself (campaign 17, R04)
        draft_below(root, args.plan, PLAN_HEADING, "--plan")
    cache = cache_for_project(args.cache_dir or cache_root(), root)
    old, new = (open_release(spec, sglang_repo=args.sglang_repo, cache=cache) for spec in (args.old, args.new))
    rebase = rebase_patch(patch, text, old, new, skeleton, args.tree)
    name = printable_path(str(args.patch))
    for outcome in rebase.outcomes:
        if outcome.verdict != CARRIED or outcome.moved:
            print(outcome_line(name, outcome), file=sys.stderr)
    print(printable(f"{name}: sglang {old.short} -> {new.short}: {summary(rebase)}"), file=sys.stderr)
    conflicts = sum(outcome.conflict is not None for outcome in rebase.outcomes)
    if conflicts and not args.plan:  # their three texts ran to thousands of lines on slime's stack
        print(printable(f"{name}: the three texts of {conflicts} conflict{'s' * (conflicts != 1)} are in the plan: "
                        "give --plan PLAN.md (or --tree DIR for the files with git's markers)"), file=sys.stderr)
    if args.plan:
        skeleton_name = args.skeleton and printable_path(str(args.skeleton))
        write_file_below(root, args.plan, render_plan(rebase, name, old, new, skeleton_name))
    if not rebase.verified:
        print(printable(f"{name}: not written: {rebase.verification}"), file=sys.stderr)
        return 1
    if args.output:
        write_file_below(root, args.output, rebase.patch_text)
    else:
        with standard_output():
            sys.stdout.write(patch_for(sys.stdout, rebase.patch_text))
    left = sum(o.verdict in LEFT for o in rebase.outcomes)
    unchecked = rebase.count(UNCHECKED)
    print(printable(f"{name}: {verification_said(rebase.verified, rebase.verification, left)}"
                    + (f"; {unchecked} were carried unchecked" if unchecked else "")), file=sys.stderr)
    if args.tree and left:
        print(printable(f"{name}: resolve the conflicts in {args.tree} (git diff there is the patch)"), file=sys.stderr)
    return 0 if rebase.complete else 1
