"""A release read straight from a tag (or any ref) of a local SGLang clone, with GitPython.

Nothing is checked out and nothing in the clone changes: blobs are read from the ref's tree.
The package lives under `python/sglang` in SGLang's repository.
"""

from __future__ import annotations

import os
import re
import stat
import threading
from functools import lru_cache
from pathlib import Path
from typing import Iterator

from sglang_contracts.infra.errors import SourceError, shown
from sglang_contracts.infra.files import Unreadable, describe_size
from sglang_contracts.infra.lines import git_lines
from sglang_contracts.infra.gitsafety import (GIT_PATIENCE, SAFE_ENVIRONMENT, SAFE_SETTINGS, callers_git_variables,
                                              git_in)
from sglang_contracts.sources.base import Release, ReleaseTree, check_is_sglang, read_limit
from sglang_contracts.sources.directory import version_from_tree

PACKAGE_PREFIX = "python"


_INHERITED: list = []  # the first process's `git cat-file` commands, in a forked copy


class GitTree(ReleaseTree):
    keeps_sources = True  # one commit's files

    def __init__(self, root_tree) -> None:  # a git.Tree: the `python/` folder of one commit
        self.root_tree = root_tree
        # GitPython asks its `git cat-file` processes one object at a time over shared pipes: two
        # threads asking at once (the early extraction and the closure walk) read each other's
        # answers, and one waits for ever. Every read of the repository holds this lock.
        self._reading = threading.RLock()

    def _entry(self, relpath: str):
        with self._reading:
            try:
                return self.root_tree.join(relpath)
            except KeyError:
                return None

    def read_bytes(self, relpath: str) -> bytes | None:
        """The blob's bytes; a blob over the bound is refused by the size git records for it,
        unread, and no more than the bound is ever read."""
        from gitdb.exc import ODBError

        entry = self._entry(relpath)
        if entry is None or entry.type != "blob":
            return None
        limit = read_limit(relpath)
        try:
            with self._reading:
                size = entry.size
                if size > limit:
                    raise Unreadable(f"{describe_size(size)}, over the {describe_size(limit)} this tool reads")
                data = entry.data_stream.read(limit + 1)
        except (ODBError, ValueError, OSError) as error:  # an object missing from a partial clone
            raise Unreadable(f"not in the clone's object store ({type(error).__name__})") from None
        if len(data) > limit:
            raise Unreadable(f"over the {describe_size(limit)} this tool reads")
        return data

    def content_key(self, relpath: str) -> str:
        entry = self._entry(relpath)
        return entry.hexsha if entry is not None and entry.type == "blob" else super().content_key(relpath)

    def list_dir(self, relpath: str) -> list[str] | None:
        entry = self._entry(relpath)
        if entry is None or entry.type != "tree":
            return None
        with self._reading:
            return sorted(item.name for item in entry)

    def iter_files(self, under: str) -> Iterator[str]:
        entry = self._entry(under)
        if entry is None or entry.type != "tree":
            return
        with self._reading:  # the whole walk, not across the caller's own reads between items
            found = [f"{under}/{item.path[len(entry.path) + 1:]}" for item in entry.traverse() if item.type == "blob"]
        yield from found

    def metadata_text(self) -> str | None:
        return self.readable_text("pyproject.toml")

    def in_forked_copy(self) -> None:
        # GitPython reads objects through long-lived `git cat-file` processes, by pipes both
        # processes now hold: the copy starts its own. The first process's are kept referenced,
        # never ended from here (dropping them would stop the processes the first one reads with).
        command = self.root_tree.repo.git
        _INHERITED.append((command.cat_file_all, command.cat_file_header))
        command.cat_file_all = command.cat_file_header = None
        self._reading = threading.RLock()  # a thread of the first process may have held it at the fork


def open_repo(path: Path):
    import git

    _refuse_special_files(path)
    try:
        repo = git.Repo(path)
        repo.git.set_persistent_git_options(c=list(SAFE_SETTINGS))  # nothing of the repository's runs
        # nor its remote's (a partial clone's lazy fetch), nor a repository the environment names (GIT_DIR)
        repo.git.update_environment(**dict.fromkeys(callers_git_variables()), **SAFE_ENVIRONMENT)
        return repo
    except git.NoSuchPathError:
        raise SourceError(f"--sglang-repo {path}: no such directory") from None
    except git.InvalidGitRepositoryError:
        raise SourceError(f"--sglang-repo {path}: not a git repository") from None


def resolve_ref(repo, ref: str):
    """The commit for `ref`; a bare version such as 0.5.22 also finds the tag v0.5.22."""
    candidates = [ref] if ref.startswith("v") or not re.match(r"\d", ref) else [ref, f"v{ref}"]
    for candidate in candidates:
        try:
            return candidate, repo.commit(candidate)
        except Exception:  # gitdb BadName, BadObject, ValueError: all mean "no such ref"
            continue
    tried = " or ".join(candidates)
    raise SourceError(f"{repo.working_dir}: no ref {shown(tried)} (try `git fetch --tags`)")


def _refuse_special_files(path: Path) -> None:
    """A clone whose git folder holds a FIFO, a device or a socket (a loose object, a ref, its
    config) is refused in one line: git and GitPython open what they read and wait on a FIFO for
    ever (campaign 15, R12: a check of such a clone never ended)."""
    why = unreadable_git_folder(path)
    if why is not None:
        raise SourceError(f"--sglang-repo {shown(path)}: {why}")


# Files the git folders of a clone given to a run may hold: SGLang's own clone holds a few
# thousand (packed); a clone's alternates naming one large folder in many spellings walked it
# again for each (campaign 16, R07).
MAX_GIT_FOLDER_ENTRIES = 200_000


@lru_cache(maxsize=None)
def unreadable_git_folder(path: Path) -> str | None:
    """Why the clone's git folders (its own, a worktree's common one, the object stores it
    borrows from) cannot be read: an entry neither a regular file nor a folder (links followed),
    or more than MAX_GIT_FOLDER_ENTRIES files; None when they can. Only the git folders are
    walked, never the work tree."""
    pending = [folder for folder in (path / ".git", path) if _is_git_folder(folder)][:1]
    if not pending and (path / ".git").is_file():
        pending = _pointed_to(path / ".git", "gitdir:", path)
    seen: set[str] = set()
    budget = [MAX_GIT_FOLDER_ENTRIES]
    while pending:
        folder = os.path.realpath(pending.pop())  # however many spellings name it, walked once
        if folder in seen:
            continue
        seen.add(folder)
        why = _unreadable_below(folder, budget)
        if why is not None:
            return why
        pending += _pointed_to(Path(folder, "commondir"), "", Path(folder)) + \
            _pointed_to(Path(folder, "objects", "info", "alternates"), "", Path(folder, "objects"))
    return None


def _unreadable_below(folder: str, budget: list[int]) -> str | None:
    """unreadable_git_folder's answer for one folder; `budget`: the entries left to read."""
    below = [folder]
    while below:
        try:
            listed = list(os.scandir(below.pop()))
        except OSError:  # git cannot read it either: what it needs there, git itself refuses
            continue
        budget[0] -= len(listed)
        if budget[0] < 0:
            return f"its git folders hold more than {MAX_GIT_FOLDER_ENTRIES:,} files (read up to {shown(folder)})"
        for entry in listed:
            if entry.is_file(follow_symlinks=False):
                continue
            kind = _followed_kind(entry)  # a link's target: a loop of them ends with the budget
            if kind is not None and stat.S_ISDIR(kind):
                below.append(entry.path)
            elif kind is not None and not stat.S_ISREG(kind):
                return f"{shown(entry.path)} is not a regular file (a FIFO, a device or a socket), which git waits on"
    return None


def _followed_kind(entry: os.DirEntry) -> int | None:
    """The mode of what an entry is, links followed; None for a link to nothing (git reads nothing there)."""
    if entry.is_dir(follow_symlinks=False):
        return stat.S_IFDIR
    try:
        return os.stat(entry.path).st_mode
    except OSError:
        return None


def _is_git_folder(folder: Path) -> bool:
    return folder.is_dir() and (folder / "HEAD").exists()


def _pointed_to(pointer: Path, prefix: str, base: Path) -> list[Path]:
    """The folders a small regular file of git's names, one a line (`gitdir: X`, `commondir`,
    `objects/info/alternates`), relative to `base`."""
    try:
        if not stat.S_ISREG(os.stat(pointer).st_mode):
            return []
        lines = git_lines(pointer.read_text(errors="replace")[:65536])
    except OSError:
        return []
    found = [line.removeprefix(prefix).strip() for line in lines if line.startswith(prefix) and line.strip()]
    return [folder for folder in (base / line for line in found if not line.startswith("#")) if folder.is_dir()]


def git_commit_identity(repo_path: Path, ref: str) -> str | None:
    """`git:<commit>` of a ref of the clone, asked of git itself (GitPython costs 40 ms to
    import; this is on every run's path). None when git does not know the ref or does not answer
    within GIT_PATIENCE (milliseconds when it can; a clone git waits on, a FIFO, is refused by open_repo)."""
    candidates = [ref] if ref.startswith("v") or not re.match(r"\d", ref) else [ref, f"v{ref}"]
    for candidate in candidates:
        done = git_in(str(repo_path), "rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}",
                      timeout=GIT_PATIENCE, named_repository=True)
        if done is None:
            return None
        commit = done.stdout.decode(errors="replace").strip()
        if done.returncode == 0 and commit:
            return f"git:{commit}"
    return None


def git_release(repo_path: Path, ref: str) -> Release:
    repo = open_repo(repo_path.expanduser())
    name, commit = resolve_ref(repo, ref)
    try:
        root_tree = commit.tree / PACKAGE_PREFIX
    except KeyError:
        raise SourceError(f"{repo_path}@{name}: no python/ folder; is this an SGLang clone?") from None
    if root_tree.type != "tree":  # a file (or a submodule) named `python`
        kind = "a file" if root_tree.type == "blob" else f"a {root_tree.type}"
        raise SourceError(f"{repo_path}@{name}: python is {kind}, not a folder, so this ref has no sglang "
                          "package; is this an SGLang clone?")
    tree = GitTree(root_tree)
    label = f"sglang {name} ({repo_path})"
    check_is_sglang(tree, label)
    tag_version = re.fullmatch(r"v?(\d+(?:\.\d+)+\S*)", name)
    version = tag_version.group(1) if tag_version else version_from_tree(tree)
    return Release(label=label, version=version, tree=tree, ref=name, identity=f"git:{commit.hexsha}")
