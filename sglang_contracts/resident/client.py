"""The thin side of the daemon: `check` hands its work to a daemon started for the project
(daemon.py), and runs it in its own process when there is none, or it is dead, busy or stale.

It imports nothing of the checker (only the standard library, the command line's parser and
the project-root and cache-folder lookups), so that a `check` the daemon answers costs a Python
start and a round trip. One daemon serves one project root with one set of run options: its
socket is named by a digest of them (`daemon_key`), in the cache folder.
"""

from __future__ import annotations

import _socket  # socket.py's own imports (selectors) cost more than the round trip
import argparse
import hashlib
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

from sglang_contracts.infra.files import resolved
from sglang_contracts.infra.output import standard_output
from sglang_contracts.infra.roots import root_of_all, working_folder

# The options a daemon is started with and a `check` must share to be handed to it; the
# others (the format, --exit-zero, --baseline, the paths...) are the request's own.
KEY_OPTIONS = ("old", "new", "sglang_repo", "config", "select", "ignore", "no_cache", "cache_dir", "package_index")
PACKAGE_DIR = Path(__file__).resolve().parent.parent
SOCKET_PATH_MAX = 100  # AF_UNIX paths are limited to 107 bytes
# What a daemon sends as soon as it has a request (whitespace before its JSON answer), and how
# long a client waits for it: a daemon stopped or wedged once kept every check waiting forever.
ACKNOWLEDGED = b"\n"
HEARD_WITHIN = 5.0
BUSY, STALE = "busy", "stale"


def cache_folder(args: argparse.Namespace) -> Path:
    from sglang_contracts.infra.cache import cache_root

    return resolved((args.cache_dir or cache_root()).expanduser())


def daemon_key(args: argparse.Namespace, cwd: Path) -> tuple[Path, str, str]:
    """(the project root, what its daemon serves, the digest of that naming its socket) for a
    `check` or `daemon` command line: the root, the run options, this installation of the
    tool, the debug switch. The daemon refuses a request whose identity is not its own."""
    paths = [path if path.is_absolute() else cwd / path for path in args.paths]
    root = root_of_all(paths or [cwd])
    options = {}
    for name in KEY_OPTIONS:
        value = getattr(args, name, None)
        if isinstance(value, Path):
            value = str(value if value.is_absolute() else resolved(cwd / value))
        options[name] = value
    options["cache_dir"] = str(cache_folder(args))
    identity = json.dumps({"root": str(root), "options": options, "tool": str(PACKAGE_DIR),
                           "debug": bool(os.environ.get("SGLANG_CONTRACTS_DEBUG"))}, sort_keys=True)
    return root, identity, hashlib.sha256(identity.encode("utf-8", "surrogateescape")).hexdigest()[:24]


def socket_path(args: argparse.Namespace, key: str, root: Path) -> Path:
    """The daemon's socket: in the cache folder, or a private temporary one when that path
    would be too long for a Unix socket, or when the cache folder is inside the project `root`
    and may be the pull request's (a link on the way to it: the socket and the log would be
    made where the link points; infra/cache.py pull_request_reason)."""
    from sglang_contracts.infra.cache import cache_root, pull_request_reason

    folder = cache_folder(args) / "daemons"
    given = (args.cache_dir or cache_root()).expanduser()
    if len(str(folder / f"{key}.sock")) > SOCKET_PATH_MAX or pull_request_reason(given, root) is not None:
        import tempfile

        folder = Path(tempfile.gettempdir()) / f"sglang-contracts-{os.getuid()}"
    return folder / f"{key}.sock"


def not_private_reason(folder: Path) -> str | None:
    """Why a socket folder is not this user's alone, or None. Read with lstat, never through a
    link: in a shared cache or temporary folder, another user may have made the folder, or a link
    named like it to one of ours, for our socket and log to land in. Its parent must let nobody
    else rename it away (not writable by others, or sticky as /tmp is)."""
    try:
        status = os.lstat(folder)
        parent = os.stat(folder.parent)
    except OSError as error:
        return f"{folder}: {error.strerror or error}"
    if stat.S_ISLNK(status.st_mode):
        return f"{folder} is a symbolic link"
    if not stat.S_ISDIR(status.st_mode):
        return f"{folder} is not a folder"
    if status.st_uid != os.getuid():
        return f"{folder} belongs to another user (uid {status.st_uid})"
    if status.st_mode & 0o077:
        return f"{folder} may be entered by other users (mode {stat.S_IMODE(status.st_mode):o})"
    if _others_may_rename_in(parent):
        return f"{folder.parent} may be written by other users, who could replace {folder.name}"
    return None


def _others_may_rename_in(parent: os.stat_result) -> bool:
    """Whether other users may write in a folder without its sticky bit (the user's own group,
    umask 002, is theirs)."""
    others_write = parent.st_mode & 0o002 or (parent.st_mode & 0o020 and parent.st_gid != os.getgid())
    return bool(others_write and not parent.st_mode & stat.S_ISVTX)


def private(folder: Path) -> bool:
    """Whether a socket folder is this user's alone (not_private_reason)."""
    return not_private_reason(folder) is None


def make_private_folder(folder: Path) -> str | None:
    """Create the socket folder (mode 700) unless it is there, then why it is not this user's
    alone, or None. Nothing is created in it before this says None."""
    from sglang_contracts.infra.cache import make_private_folder as make_folder  # lazily: the client stays light

    try:
        make_folder(folder)  # its missing parents too, the user's alone whatever the umask (campaign 4, D08)
    except FileExistsError:
        pass
    except OSError as error:
        return f"cannot make {folder}: {error.strerror or error}"
    return not_private_reason(folder)


def same_user(connection) -> bool:
    """Whether the process at the other end of a Unix socket runs as this user (SO_PEERCRED,
    Linux's; elsewhere the private folder is the only guard)."""
    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:
        return True
    credentials = connection.getsockopt(_socket.SOL_SOCKET, option, 12)  # struct ucred: pid, uid, gid
    return int.from_bytes(credentials[4:8], sys.byteorder) == os.getuid()


def ask(path: Path, request: dict[str, Any], timeout: float | None = None) -> dict[str, Any] | None:
    """The daemon's answer to one request, or None when no daemon answers (no socket, a dead
    one, a connection that ends before the answer)."""
    try:
        connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            connection.settimeout(5.0)
            connection.connect(str(path))
            if not same_user(connection):
                return None  # another user's socket: nothing it says is believed
            connection.sendall(json.dumps(request).encode("utf-8", "surrogateescape") + b"\n")
            connection.shutdown(_socket.SHUT_WR)
            # A daemon acknowledges a request as soon as it has it (ACKNOWLEDGED): one that does
            # not within seconds is stopped or wedged, and the check runs here; once heard, a
            # check may take as long as it takes.
            connection.settimeout(min(timeout, HEARD_WITHIN) if timeout is not None else HEARD_WITHIN)
            chunks = [connection.recv(1 << 16)]
            connection.settimeout(timeout)
            while chunk := connection.recv(1 << 16):
                chunks.append(chunk)
        finally:
            connection.close()
        answer = json.loads(b"".join(chunks).decode("utf-8", "surrogateescape"))
        return answer if isinstance(answer, dict) else None
    except (OSError, ValueError, RecursionError):  # refused: a daemon that died, its socket left (the next start replaces it)
        return None


def _a_check_answer(answer: dict[str, Any] | None) -> bool:
    """Whether the daemon ran the check and answered as this tool's daemon does: a status, and
    the output as text."""
    return not (not answer or answer.get("refused") or type(answer.get("status")) is not int
                or not all(isinstance(answer.get(name, ""), str) for name in ("stdout", "stderr")))


def handed_over(argv: list[str], args: argparse.Namespace) -> int | None:
    """Run `check` on the project's daemon: its exit status, with its output written here;
    None when no daemon took it (then the caller runs it in this process)."""
    if os.environ.get("SGLANG_CONTRACTS_NO_DAEMON"):
        return None
    cwd = Path(working_folder())
    try:
        root, identity, key = daemon_key(args, cwd)
    except (OSError, ValueError, RuntimeError):
        return None
    path = socket_path(args, key, root)
    # The folder first, by lstat: another user's (a shared cache, a temporary folder named for
    # this user that someone else made first) cannot even be looked into, and means no daemon.
    if not private(path.parent) or not os.path.exists(path):
        return None
    answer = ask(path, {"check": argv, "identity": identity, "cwd": str(cwd), "tty": sys.stdout.isatty(),
                        "no_color": bool(os.environ.get("NO_COLOR"))})
    if not _a_check_answer(answer):
        return None  # busy, stale, or no answer at all (or one no daemon of ours gives)
    with standard_output():
        sys.stdout.write(answer.get("stdout", ""))
    sys.stderr.write(answer.get("stderr", ""))
    return answer["status"]
