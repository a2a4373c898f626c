"""The system's limits a run can meet (open files, threads and processes, address space): the
user's to raise, so each is said in one line naming it, not as an internal error of this tool.
So is the length of a name the file system takes, which a name the user gives must keep to."""

from __future__ import annotations

import errno
import os

from sglang_contracts.infra.display import printable
from sglang_contracts.infra.errors import shown
from sglang_contracts.infra.files import open_files_limit

try:
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]

# What CPython's thread start raises when the system refuses a thread (EAGAIN: `ulimit -u`;
# ENOMEM: no address space left for its stack, `ulimit -v`).
THREAD_REFUSED = "can't start new thread"


def cannot_start(error: BaseException) -> bool:
    """Whether `error` is the system refusing this process a thread or a process (fork)."""
    if isinstance(error, RuntimeError):
        return str(error) == THREAD_REFUSED
    return isinstance(error, OSError) and error.errno in (errno.EAGAIN, errno.ENOMEM)


# What a path given to the tool may meet on its way (files.resolved makes a link loop an ELOOP).
PATH_LIMITS = {errno.ENAMETOOLONG: "a name longer than the file system takes",
               errno.ELOOP: "a link that leads back to itself"}


def limit_reached(error: BaseException) -> str | None:
    """`error` in words when it is a limit of the system the user can raise or must keep to, else None.
    A name longer than the file system takes (a 300-byte part) meets pathlib's `exists()` and
    `is_symlink()`, which let ENAMETOOLONG out, wherever the tool looks at a path given to it
    (campaign 17, R06: --write-baseline, --sglang-repo, patch-files); so does a link loop."""
    if isinstance(error, OSError) and error.errno in PATH_LIMITS:
        named = f": {shown(printable(os.fsdecode(error.filename)))}" if isinstance(error.filename, (str, bytes)) else ""
        return f"{PATH_LIMITS[error.errno]}{named}"
    if isinstance(error, OSError) and error.errno == errno.EMFILE:
        limit = open_files_limit()
        return f"too many open files: raise the limit (`ulimit -n`{f', now {limit}' if limit else ''})"
    if cannot_start(error):
        memory = _address_space_limit()
        return ("cannot start a thread or process: raise the limits on memory (`ulimit -v`"
                f"{f', now {memory} kB' if memory else ''}) and processes (`ulimit -u`)")
    if isinstance(error, OSError) and error.strerror and isinstance(error.filename, (str, bytes)):
        # a path the system refused (permission denied, a file where a folder was named): the
        # input's condition, said with the path, wherever a path given to the tool meets it
        return f"{shown(printable(os.fsdecode(error.filename)))}: {error.strerror}"
    return None


def _address_space_limit() -> int | None:
    """This process's address space limit in kB (`ulimit -v`), or None for no limit."""
    if resource is None:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else soft // 1024
