"""Temporary folders for one process, and the temporary files `fix` writes beside a project
file before renaming them over it.

A fix killed between the two (kill -9, a power cut) leaves one behind. Its name says it is this
tool's and which process wrote it (`.devices.py.sglang-contracts-4242-k3j2h1.tmp`), so that the
project walk never shows one to a reader, and removes one whose writer is gone.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

from sglang_contracts.infra.gitsafety import ls_files, no_repository

_MARK = ".sglang-contracts-"
_NAME = re.compile(r"\..+\.sglang-contracts-(\d+)-[a-z0-9_]+\.tmp")
# A write takes milliseconds: one older than this is not being written, whatever runs under
# its writer's number now (a number is reused; a process in another container is not seen).
STALE_SECONDS = 60


def temporary_beside(path: Path) -> tuple[int, str]:
    """(open descriptor, name) of a new temporary file in `path`'s folder, named as this
    process's (mkstemp: created exclusively, mode 0600)."""
    return tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}{_MARK}{os.getpid()}-", suffix=".tmp")


def is_temporary(name: str) -> bool:
    """Whether a file name is one `temporary_beside` gives."""
    return name.endswith(".tmp") and _MARK in name and _NAME.fullmatch(name) is not None


def remove_if_stale(folder: str, name: str) -> None:
    """Remove the temporary file `name` of `folder` if no one writes it any more: its writer
    is not running and it is older than STALE_SECONDS. A file that cannot be removed (a
    read-only checkout) stays, unread."""
    match = _NAME.fullmatch(name)
    if match is None or _running(int(match.group(1))):
        return
    path = os.path.join(folder, name)
    try:
        if time.time() - os.lstat(path).st_mtime > STALE_SECONDS and _untracked(folder, name):
            os.unlink(path)
    except OSError:
        pass


def _untracked(folder: str, name: str) -> bool:
    """Whether git says it does not track the file (or that there is no repository): a tracked
    one is the project's (a pull request committed a file named like a temporary one, and `check`
    deleted it: eighth campaign, Q04), never removed, and neither is one git cannot vouch for: no
    git, one that does not answer (its index a FIFO: campaign 15, R13), or one that refuses the
    repository (another user's: campaign 16, R05). Asked only of the rare name that looks like a
    stale temporary file."""
    listed = ls_files(folder, "--error-unmatch", "--", name)
    return listed is not None and (listed.returncode == 1 or no_repository(listed))


def _running(pid: int) -> bool:
    if pid <= 0:  # os.kill would signal a process group
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:  # another user's
        return True
    except (ProcessLookupError, OverflowError):
        return False
    return True


def private_temporary_folder(prefix: str) -> Path:
    """A new folder (mode 700) for this process alone, removed when it ends: where a download
    goes when the cache cannot take it. Raises OSError when none can be made."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder
