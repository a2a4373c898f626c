"""The processes this tool starts never run code from the folder they were started in.

The tool runs in the project's folder (the pre-commit hook, a CI step, the editor), and the
project may be a pull request's files. Python puts the working folder first on `sys.path` of
`python -c` and `python -m`: a committed `griffe.py`, `pip/__main__.py` or `multiprocessing/`
would be imported, and run, by a process of this tool (campaign 12, R07). `-P` (and
`PYTHONSAFEPATH` for what multiprocessing starts itself) leaves that entry out; `PYTHONPATH`
and the installed packages are read as before. A program run by its name (`git`) is looked
for on PATH's absolute folders only: an empty entry (`export PATH=$EXTRA:$PATH` with EXTRA
unset) or `.` would run a `git` the project committed (campaign 15, R01).
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Iterator


def python_command(*arguments: str) -> list[str]:
    """`python -P ARGUMENTS` with this interpreter."""
    return [sys.executable, "-P", *arguments]


@contextmanager
def safe_path_environment() -> Iterator[None]:
    """PYTHONSAFEPATH set while a process this one does not start by command line starts (the
    multiprocessing forkserver and resource tracker: `python -c`), and restored after."""
    before = os.environ.get("PYTHONSAFEPATH")
    os.environ["PYTHONSAFEPATH"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONSAFEPATH", None)
        else:
            os.environ["PYTHONSAFEPATH"] = before


def never_from_the_working_folder() -> None:
    """PYTHONSAFEPATH for every Python process this one starts from now on, whoever starts it,
    and a PATH of absolute folders only. A one-run process's entry sets them: multiprocessing
    starts its resource tracker again, as `python -c`, when a signal killed it (campaign 14, R01:
    a committed `multiprocessing/__init__.py` ran as the run ended), and no process of this tool
    imports, or runs a program, from its working folder."""
    os.environ["PYTHONSAFEPATH"] = "1"
    os.environ["PATH"] = absolute_path_folders(os.environ.get("PATH", os.defpath))
    if "PYTHONPATH" in os.environ:  # an empty or relative entry is the working folder, to Python too
        os.environ["PYTHONPATH"] = os.pathsep.join(_absolute_folders(os.environ["PYTHONPATH"]))


def absolute_path_folders(path: str) -> str:
    """PATH's absolute folders, in order; the system's default when none is (an empty PATH is
    the working folder, to Python's exec and to the shell alike)."""
    return os.pathsep.join(_absolute_folders(path)) or os.defpath


def _absolute_folders(search_path: str) -> list[str]:
    """The absolute folders of a search path (PATH, PYTHONPATH), in order."""
    return [folder for folder in search_path.split(os.pathsep) if os.path.isabs(folder)]
