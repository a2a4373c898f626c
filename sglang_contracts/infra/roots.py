"""Where a project's root is: light enough for the daemon's client (resident/client.py)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Callable

from sglang_contracts.infra.errors import UsageError, shown

MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")

# The working folder as a run began, and whether it was found removed since: removed while the
# run went on (its shell's folder deleted), it was an internal error, or a false "cannot write
# standard output" (campaign 20, R09).
_AT_START: list[str] = []
_REMOVED: list[bool] = []


def remember_working_folder() -> str:
    """The working folder, read now and kept for working_folder (OSError where it cannot be read)."""
    _AT_START[:] = [os.getcwd()]
    _REMOVED.clear()
    return _AT_START[0]


def working_folder() -> str:
    """The working folder; where it was removed since remember_working_folder, where it was then.
    The process then works from `/`, which is always there: a pool's worker is started from the
    parent's working folder (multiprocessing reads it), and a pool that could not start one waited
    for good."""
    if _REMOVED:
        return _AT_START[0]
    try:
        return os.getcwd()
    except OSError:
        if not _AT_START:
            raise
        _REMOVED.append(True)
        os.chdir("/")
        return _AT_START[0]


def absolute(path: Path | str) -> str:
    """os.path.abspath, from working_folder (which a removed working folder leaves readable)."""
    return os.path.normpath(os.path.join(working_folder(), path))


def project_root_for(paths: list[Path]) -> Path:
    """The nearest folder at or above the first path with a pyproject.toml, setup.py or .git,
    resolved (the first path's folder when that marker is another user's, in a folder anyone
    may write to: anyones_file). Found by the names given, not through links: a path of a pull request's that is a
    link out of the project (`docs -> /home/u`) is looked for where the link is, and a link below
    the working folder is never taken for a project's root, so a link out cannot move the root
    out of the project (and with it every check of what lies within it)."""
    cwd = working_folder()
    start = absolute(paths[0]) if paths else cwd
    if not _safely(lambda: os.path.isdir(start) and not os.path.islink(start)):
        start = os.path.dirname(start)
    inside_cwd = os.path.join(cwd, "")
    folder = start
    while True:
        link_below_cwd = folder.startswith(inside_cwd) and _safely(lambda: os.path.islink(folder))
        found = [] if link_below_cwd else _markers_at(folder)
        if found and any(anyones_file(os.path.join(folder, marker)) for marker in found):
            return Path(start).resolve()
        if found:
            return Path(folder).resolve()
        parent = os.path.dirname(folder)
        if parent == folder:
            _refuse_a_shared_folder(start)
            return Path(start).resolve()
        folder = parent


def root_of_all(paths: list[Path]) -> Path:
    """The project root every named path is in: each path's (project_root_for), the outermost
    where it holds them all (a repository's top and a package's pyproject.toml below it). Paths
    of no project are read from the folder that holds them all. Paths of projects none of which
    holds the others (pre-commit names the staged files of a monorepo's every package) are one
    usage error: a run checks one project, and the others' files were dropped without a word
    (campaign 20, R11)."""
    starts: dict[str, Path] = {}
    for path in paths:  # one search per folder: pre-commit may name thousands of files
        named = absolute(path)
        starts.setdefault(named if _safely(lambda: os.path.isdir(named)) else os.path.dirname(named), path)
    roots = {project_root_for([path]) for path in starts.values()} or {project_root_for([])}
    outermost = min(roots, key=lambda root: len(root.parts))
    if all(root == outermost or outermost in root.parents for root in roots):
        return outermost
    if not any(holds_a_project(root) for root in roots):
        return project_root_for([Path(os.path.commonpath([os.fspath(root) for root in roots]))])
    named = ", ".join(shown(root) for root in sorted(roots)[:3]) + (", ..." if len(roots) > 3 else "")
    raise UsageError(f"the paths named are in {len(roots)} projects ({named}): check each in a run of its own "
                     "(with pre-commit, a hook per project, each with its `files:`)")


def holds_a_project(root: Path) -> bool:
    """Whether project_root_for found a marker at `root`, rather than taking a file's folder."""
    return bool(_markers_at(os.fspath(root)))


def _markers_at(folder: str) -> list[str]:
    return [marker for marker in MARKERS if _safely(lambda: os.path.exists(os.path.join(folder, marker)))]


def _refuse_a_shared_folder(start: str) -> None:
    """A file in no project is checked with its folder for the project: unless that folder is
    one whose every file no project holds (`/tmp`, which anyone writes to; the home folder; `/`).
    `check /tmp/scratch.py` read and parsed every Python file below /tmp, other users' too, for
    minutes (campaign 18, R10)."""
    why = ("the file system's root" if os.path.dirname(start) == start
           else "the home folder" if _safely(lambda: os.path.samefile(start, os.path.expanduser("~")))
           else "a folder anyone may write to" if _safely(lambda: bool(os.stat(start).st_mode & stat.S_IWOTH))
           else None)
    if why is not None:
        raise UsageError(f"{shown(start)} is in no project (no {', '.join(MARKERS[:-1])} or {MARKERS[-1]} at or above "
                         f"it), and is not read as one: it is {why}; name a file or folder of a project")


def anyones_file(marker: str) -> bool:
    """Whether a marker is another user's, in a folder anyone may write to (`/tmp`): what anyone
    put there is no configuration of this user's run, nor its project (campaign 15, R05: another
    user's pyproject.toml above a scratch file named its own `sglang-repo`). As git refuses
    another user's repository; a project folder of mode 777 (a container's volume) is still the
    project of the files its user made."""
    try:
        return os.lstat(marker).st_uid != os.geteuid() and bool(os.stat(os.path.dirname(marker)).st_mode & stat.S_IWOTH)
    except (OSError, ValueError):
        return False


def require_existing(paths: list[Path]) -> None:
    """Refuse, in one line, a path named on the command line that is not there (or cannot be
    looked up): a check of it, or a daemon started for it, would serve the folder above."""
    for path in paths:
        try:
            exists = path.exists()
        except (OSError, ValueError) as error:  # a name too long for the system, a NUL in it
            raise UsageError(f"{shown(path)}: {getattr(error, 'strerror', None) or error}") from None
        if not exists:
            raise UsageError(f"{shown(path)}: no such file or directory")


def _safely(test: Callable[[], bool]) -> bool:
    """A file-system test that is False for a name the system cannot even look up (too long,
    a NUL in it); the run then names the path in its error."""
    try:
        return test()
    except (OSError, ValueError):
        return False
