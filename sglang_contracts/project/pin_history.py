"""The project's pin before the bump, when the pin in its files already names the target.

In a bump branch (or after `fix` rewrote the pin) the pin read from the files is the release
the project moves to: a check of it against `--new` compares a release with itself and reports
nothing. The release the project moves from is the pin of the same file where the branch left
the default branch: the merge base of HEAD with `origin/HEAD`, `main` or `master`.

git runs with the settings no configuration of the repository can override (a pull request's
checkout is the repository here), in the repository it finds for the project, never one the
project's files make (infra/gitsafety.py git_in), and reads one file of one commit.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from pathlib import Path

from packaging.version import InvalidVersion, Version

from sglang_contracts.infra.gitsafety import git_in
from sglang_contracts.project.pins import ProjectPin, find_sglang_pin

# The branches a bump branch leaves, in the order asked: the remote's default, then the usual names.
DEFAULT_BRANCHES = ("origin/HEAD", "main", "master", "origin/main", "origin/master")
GIT_SECONDS = 20
MAX_PIN_FILE_BYTES = 4 * 1024 * 1024  # a requirements file, a Dockerfile, a build script


def names_the_same_release(pinned: str, spec: str) -> bool:
    """Does `--new` (`0.5.23`, `v0.5.23`, with its source: `git:v0.5.23`, `pypi:0.5.23`) name the
    release the project pins (`0.5.23`)? The source's prefix made a bump branch's check compare
    the release with itself, silently (campaign 17, R10)."""
    kind, _, rest = spec.strip().partition(":")
    named = rest if kind in RELEASE_SOURCES and rest else spec.strip()
    try:
        return Version(pinned) == Version(named)
    except InvalidVersion:
        return pinned == named


RELEASE_SOURCES = ("git", "pypi")  # the prefixes of a release that is a version or a ref (sources._kind)


def pin_before_the_bump(root: Path, pin: ProjectPin) -> tuple[ProjectPin | None, str]:
    """The pin of `pin.where` at the merge base of HEAD with the default branch, when it names
    another release; else None and why not (one clause, for the error the run stops with)."""
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None:
        return None, (f"{root} is not in a git repository whose history says what it pinned before (a folder "
                      "shaped like a bare repository is not read as one)")
    try:
        in_repository = (root.resolve() / pin.where).relative_to(Path(os.fsdecode(top.strip())).resolve())
    except ValueError:
        return None, f"{pin.where} is not in the repository at {os.fsdecode(top.strip())}"
    asked = []
    for branch in DEFAULT_BRANCHES:
        if _git(root, "rev-parse", "--verify", "--quiet", f"{branch}^{{commit}}") is None:
            continue
        asked.append(branch)
        base = _git(root, "merge-base", "HEAD", branch)
        if base is None:
            continue
        return _pin_at(root, pin, in_repository, branch, base.decode("ascii", "replace").strip())
    if not asked:
        return None, f"the repository has none of the branches {', '.join(DEFAULT_BRANCHES)} to find where the bump began"
    return None, f"HEAD shares no history with {', '.join(asked)}"


def _pin_at(root: Path, pin: ProjectPin, in_repository: Path, branch: str, commit: str
            ) -> tuple[ProjectPin | None, str]:
    """pin_before_the_bump's answer from the pin file as it was at `commit`, HEAD's merge base with `branch`."""
    blob = f"{commit}:{in_repository.as_posix()}"
    size = _git(root, "cat-file", "-s", blob)
    text = _git(root, "cat-file", "blob", blob, limit=MAX_PIN_FILE_BYTES) \
        if size is not None and size.strip().isdigit() and int(size) <= MAX_PIN_FILE_BYTES else None
    before = _pin_of_file(pin.where, text) if text is not None else None
    if before is not None and before.version != pin.version:
        reason = (f"the pin in the files already names {pin.version}, the target: the release the bump leaves is "
                  f"{pin.where}'s pin at {commit[:12]}, where HEAD left {_shown_branch(root, branch)}")
        return dataclasses.replace(before, reason=reason, others=()), ""
    if before is not None:
        return None, (f"{pin.where} already pinned {pin.version} at {commit[:12]}, where HEAD left "
                      f"{_shown_branch(root, branch)}")
    return None, f"{pin.where} names no SGLang release at {commit[:12]}, where HEAD left {_shown_branch(root, branch)}"


def _pin_of_file(relpath: str, text: bytes) -> ProjectPin | None:
    """The pin one file declares, read as the project's pin reader reads it in place."""
    with tempfile.TemporaryDirectory(prefix="sglang-contracts-pin-") as folder:
        path = Path(folder, relpath)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text)
        found = find_sglang_pin(Path(folder))
    return found if found is not None and found.where == relpath else None


def _shown_branch(root: Path, branch: str) -> str:
    """`origin/HEAD` as the branch it points to (`origin/main`)."""
    if branch != "origin/HEAD":
        return branch
    named = _git(root, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    return named.decode("utf-8", "replace").strip() if named else branch


def _git(root: Path, *arguments: str, limit: int = 64 * 1024) -> bytes | None:
    """git's output, or None when it fails, is missing, does not answer, or says more than `limit`."""
    done = git_in(os.fspath(root), *arguments, timeout=GIT_SECONDS,
                  extra={"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"})
    if done is None or done.returncode != 0 or len(done.stdout) > limit:
        return None
    return done.stdout
