"""The files pip opens before it does anything: its configuration files and its cache folder.

pip opens them with blocking calls and no timeout: a FIFO there (XDG_CACHE_HOME naming one, a
pip.conf made a FIFO) made a release's download wait for ever (campaign 18, R06). They are
looked at first, without opening them, as pip would find them (pip's configuration module:
PIP_CONFIG_FILE, the XDG folders, ~/.pip, /etc, the environment's own pip.conf).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path


def _xdg(variable: str, default: str) -> list[Path]:
    folders = [Path(part) for part in os.environ.get(variable, "").split(os.pathsep) if os.path.isabs(part)]
    return folders or [Path(os.path.expanduser(default))]


def configuration_files() -> list[Path]:
    """Every configuration file pip reads, whether or not it is there."""
    named = os.environ.get("PIP_CONFIG_FILE")
    files = [Path(named)] if named and named != os.devnull else []
    files += [folder / "pip" / "pip.conf" for folder in _xdg("XDG_CONFIG_DIRS", "/etc/xdg")]
    files += [Path("/etc/pip.conf"), Path(os.path.expanduser("~/.pip/pip.conf"))]
    files += [folder / "pip" / "pip.conf" for folder in _xdg("XDG_CONFIG_HOME", "~/.config")]
    files.append(Path(sys.prefix) / "pip.conf")
    return files


def cache_folder() -> Path:
    """Where pip keeps its cache when nothing on its command line says otherwise."""
    named = os.environ.get("PIP_CACHE_DIR")
    if named and os.path.isabs(named):
        return Path(named)
    return _xdg("XDG_CACHE_HOME", "~/.cache")[0] / "pip"


def blocking(path: Path) -> str | None:
    """What a path pip would open is, when pip could wait on it (a FIFO, a device, a socket) or
    on a folder on its way; None for a regular file, a folder, or nothing there."""
    for step in [*reversed(path.parents), path]:
        try:
            mode = os.stat(step).st_mode
        except OSError:
            return None  # nothing there (or nothing this process may look at): pip makes or skips it
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
            return f"{step} is {kind}"
    return None


def blocking_configuration() -> str | None:
    """Why pip would wait reading its configuration, if it would (the first such file)."""
    return next((why for path in configuration_files() if (why := blocking(path)) is not None), None)
