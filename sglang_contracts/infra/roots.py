"""Where a project's root is: light enough for the daemon's client (resident/client.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


def project_root_for(paths: list[Path]) -> Path:
    """The nearest folder at or above the first path with a pyproject.toml, setup.py or .git."""
    start = paths[0].resolve() if paths else Path.cwd()
    start = start if _safely(start.is_dir) else start.parent
    for folder in (start, *start.parents):
        if any(_safely((folder / marker).exists) for marker in MARKERS):
            return folder
    return start


def _safely(test: Callable[[], bool]) -> bool:
    """A file-system test that is False for a name the system cannot even look up (too long,
    a NUL in it); the run then names the path in its error."""
    try:
        return test()
    except (OSError, ValueError):
        return False
