"""Which of the project's files that are not Python the stack's readers leave unread: a file git
ignores, a link to one, and a `.env` the project does not commit.

`.env` files set a compose file's SGLANG_VERSION and hold the tokens of a developer's machine;
so do the files a project's .gitignore keeps out of it (docker-compose.override.yml,
secrets.toml, a requirements-local.txt with a private index's credentials). One was read, and
`fix --diff` printed its lines beside the mention it fixed (campaign 18, R02; campaign 19, R02;
campaign 20, R05). Each repository is asked by its own rules: a submodule's or a nested
repository's .gitignore and info/exclude, which the project's repository does not read
(campaign 20, R01).

git is asked with `safe.directory` naming the repository: a checkout owned by another user (a
CI job run as root in a container, on the runner's checkout) is refused by git otherwise, and
every stack file was left unread, silently (campaign 20, R02). Asking what it ignores runs
nothing of the repository's (gitsafety's settings). Where git cannot tell all the same (no
git beside a `.git`, no answer in GIT_PATIENCE), the files are unread and the reader says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sglang_contracts.infra.files import is_below
from sglang_contracts.infra.gitsafety import ls_files
from sglang_contracts.infra.lines import numbered_lines
from sglang_contracts.project.index import once_per_run

ENVIRONMENT_SUFFIX = ".env"
# Repositories below the root asked about (submodules, nested repositories): the files of any
# further one are taken as git's answer could not be had.
MOST_REPOSITORIES = 32


@dataclass(frozen=True)
class Unread:
    """Of the files asked about: those left unread (ignored, a link to an ignored file, a `.env`
    not committed), and those of a repository git could not tell about, and why."""

    ignored: frozenset[Path]
    untold: frozenset[Path]
    why: str = ""


def unread_files(root: Path, paths: list[Path]) -> Unread:
    """What of `paths` (files below `root`) git ignores, by the rules of the repository each is in."""
    root_name = os.fspath(root)
    tops: dict[str, str | None] = {}  # folder -> the top of the repository it is in, None for none
    # the folder each file's repository is asked in (the root, for the root's own repository), or None
    asked_in = {path: _asked_in(_repository_top(os.path.dirname(os.fspath(path)), tops), root_name)
                for path in paths}
    folders = sorted({folder for folder in asked_in.values() if folder is not None}, key=len)
    listings = {folder: once_per_run(("ignored", folder), lambda folder=folder: _ignored_by(folder, tops[folder]))
                for folder in folders[:MOST_REPOSITORIES]}
    why = next((listing for listing in listings.values() if isinstance(listing, str)), "")
    if len(folders) > MOST_REPOSITORIES:
        why = why or f"more than {MOST_REPOSITORIES} repositories below the project"
    ignored, untold = set(), set()
    asked = set(folders)
    enclosing_of: dict[str, list[_Listing | str]] = {}
    for path, folder in asked_in.items():
        if folder is None:  # in no repository: nothing is ignored, and no `.env` committed
            if path.name.endswith(ENVIRONMENT_SUFFIX):
                ignored.add(path)
            continue
        if folder not in enclosing_of:
            enclosing_of[folder] = _enclosing(folder, root_name, asked, listings, why)
        enclosing = enclosing_of[folder]
        own = listings.get(folder, why)
        if any(isinstance(listing, str) for listing in enclosing):
            untold.add(path)
        elif any(_ignores(listing, path) for listing in enclosing) or _uncommitted_environment(own, path):
            ignored.add(path)
    return Unread(frozenset(ignored), frozenset(untold), why)


def _enclosing(folder: str, root: str, asked: set[str], listings: dict[str, _Listing | str],
               why: str) -> list[_Listing | str]:
    """The listings of the repositories that hold `folder`, by its folders up to the root (each
    repository's against each other: 6,000 nested repositories took 41 s, campaign 20 R14)."""
    found = []
    while True:
        if folder in asked:
            found.append(listings.get(folder, why))
        parent = os.path.dirname(folder)
        if folder == root or parent == folder:
            return found
        folder = parent


def _repository_top(folder: str, tops: dict[str, str | None]) -> str | None:
    """The top of the repository that holds `folder`: the nearest folder at or above it with a
    `.git` (a submodule's or a worktree's is a file); None where there is none."""
    chain = []
    found: str | None = None
    while True:
        if folder in tops:
            found = tops[folder]
            break
        chain.append(folder)
        if os.path.lexists(os.path.join(folder, ".git")):
            found = folder
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    for seen in chain:
        tops[seen] = found
    return found


def _asked_in(top: str | None, root: str) -> str | None:
    """Where a repository is asked what it ignores: at its top below the root, else at the root."""
    if top is None:
        return None
    return top if top == root or is_below(top, root) else root


@dataclass(frozen=True)
class _Listing:
    folder: str  # where git was asked: the paths are relative to it
    ignored: frozenset[str]  # an ignored folder as `folder/`
    committed_environments: frozenset[str]


def _ignored_by(folder: str, top: str | None) -> _Listing | str:
    """What the repository at `top` ignores below `folder`, and the `.env` files it tracks there;
    or why git cannot tell."""
    trusted = (f"safe.directory={top or folder}",)
    listed = ls_files(folder, "-z", "--others", "--ignored", "--exclude-standard", "--directory", settings=trusted)
    tracked = ls_files(folder, "-z", "--", f"*{ENVIRONMENT_SUFFIX}", settings=trusted) if listed is not None else None
    for done in (listed, tracked):
        if done is None:
            return f"git did not answer in {folder}, or there is none"
        if done.returncode != 0:
            reason = numbered_lines(os.fsdecode(done.stderr).strip())
            return f"git: {reason[0][:200] if reason else f'exit {done.returncode}'}"
    return _Listing(folder, _names(listed.stdout), _names(tracked.stdout))


def _names(output: bytes) -> frozenset[str]:
    return frozenset(os.fsdecode(name) for name in output.split(b"\0") if name)


def _ignores(listing: _Listing | str, path: Path) -> bool:
    """Whether the repository ignores the file, or the file a link makes of it."""
    if isinstance(listing, str) or not listing.ignored:
        return False
    names = [os.path.relpath(path, listing.folder), os.path.relpath(os.path.realpath(path), listing.folder)]
    return any(_ignored(name, listing.ignored) for name in names if not name.startswith(".."))


def _uncommitted_environment(listing: _Listing | str, path: Path) -> bool:
    """Whether the file is a `.env` its own repository does not track."""
    return path.name.endswith(ENVIRONMENT_SUFFIX) and not (
        isinstance(listing, _Listing) and os.path.relpath(path, listing.folder) in listing.committed_environments)


def _ignored(name: str, ignored: frozenset[str]) -> bool:
    parts = name.split(os.sep)
    return name in ignored or any("/".join(parts[:end]) + "/" in ignored for end in range(1, len(parts)))
