"""Reading a file of the project or of an SGLang tree, safely: only regular files, never more
than a size bound, never blocking.

A FIFO named `m.py` would block a plain `open` forever, a link to `/dev/zero` would fill the
memory, and a 50 MB generated module would cost a minute and gigabytes; each of these is an
`Unreadable` with a reason the run reports (SGC000), never a hang, a crash or silence.
"""

from __future__ import annotations

import codecs
import errno
import os
import stat
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from sglang_contracts.infra.errors import shown

try:  # imported now: out of file descriptors, importing it would fail too
    import resource
except ImportError:  # Windows: no limit to read
    resource = None  # type: ignore[assignment]

# Above the largest module SGLang ships (under 400 kB in 0.5.22) by a wide margin.
MAX_PYTHON_BYTES = 4 * 1024 * 1024
# Requirements, Dockerfiles, workflows, docs and patch files.
MAX_TEXT_BYTES = 8 * 1024 * 1024

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class Unreadable(Exception):
    """A file that is not read, with the reason in words ("permission denied", "a FIFO")."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def resolved(path: Path) -> Path:
    """`path.resolve()`, a link that leads back to itself an OSError (ELOOP) as on Python 3.13,
    not 3.11's RuntimeError, which no caller that reads a path given to it expected (campaign
    17, R07, R08: `old = "dir:loop"`, `--cache-dir loop`, `package-index = "loop"`)."""
    try:
        return path.resolve()
    except RuntimeError:
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), os.fspath(path)) from None


def os_reason(error: OSError) -> str:
    """Why a file could not be opened or listed, in words."""
    if error.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if error.errno == errno.ENOENT:
        return "no such file (a dangling link?)"
    if error.errno == errno.ELOOP:
        return "a loop of symbolic links"
    return error.strerror or type(error).__name__


def open_files_limit() -> int | None:
    """How many files this process may have open at once (`ulimit -n`), or None for no limit."""
    if resource is None:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def why_unwritable(folder: Path, error: OSError) -> str:
    """What stops `folder` being written: the first of it and its parents that exists and is
    not a folder, or the system's reason."""
    for path in (folder, *folder.parents):
        try:
            if path.exists():
                if not path.is_dir():
                    return f"{shown(path)} is not a folder"
                break
        except (OSError, ValueError):
            continue
    return error.strerror or type(error).__name__


def describe_size(size: int) -> str:
    return f"{size / 1024 / 1024:.1f} MB" if size >= 1024 * 1024 else f"{size} bytes"


# Absolute path -> the text of an editor's buffer not yet saved (the language server's), read in
# place of the file on disk while `unsaved_buffers` is in force.
_UNSAVED: dict[str, bytes] = {}


@contextmanager
def unsaved_buffers(buffers: dict[str, bytes]) -> Iterator[None]:
    """Read these absolute paths' bytes from `buffers`, not from disk, for the duration."""
    _UNSAVED.update(buffers)
    try:
        yield
    finally:
        for path in buffers:
            _UNSAVED.pop(path, None)


def any_unsaved() -> bool:
    """Is some file read from an editor's buffer (a run whose inputs stat cannot tell)?"""
    return bool(_UNSAVED)


def unsaved_buffer_items() -> list[tuple[str, bytes]]:
    """(absolute path, bytes) of every unsaved editor buffer read in place of its file."""
    return list(_UNSAVED.items())


def unsaved_buffer(path: Path | str) -> bytes | None:
    """The unsaved editor buffer read in place of this file (`unsaved_buffers`), if any."""
    return _UNSAVED.get(os.fspath(path)) if _UNSAVED else None


def read_limited(path: Path | str, limit: int = MAX_TEXT_BYTES, within: Path | str | None = None,
                 within_what: str = "the project", owned: bool = False) -> bytes:
    """The bytes of a regular file (a link is followed to one) of at most `limit` bytes, or of
    its unsaved editor buffer (`unsaved_buffers`). With `within`, a file that is really outside
    that folder (a link out, or a link to a folder on its way) is not read: a pull request's
    `docs/env.md -> /proc/self/environ` would otherwise put the CI's secrets in a finding."""
    if (buffer := unsaved_buffer(path)) is not None:
        if len(buffer) > limit:
            raise Unreadable(f"{describe_size(len(buffer))}, over the {describe_size(limit)} this tool reads")
        return buffer
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as error:
        raise Unreadable(os_reason(error)) from None
    try:
        _refuse_unfit(fd, path, limit, within, within_what, owned)
        return _read_at_most(fd, limit)
    except OSError as error:
        raise Unreadable(os_reason(error)) from None
    finally:
        os.close(fd)


def read_head(path: Path | str, size: int, within: Path | str | None = None) -> bytes:
    """The first `size` bytes of a regular file, whatever its length, under read_limited's
    refusals (`within`: a link out of that folder, or into its version control folder)."""
    if (buffer := unsaved_buffer(path)) is not None:
        return buffer[:size]
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as error:
        raise Unreadable(os_reason(error)) from None
    try:
        _refuse_unfit(fd, path, sys.maxsize, within, "the project", False)
        return os.read(fd, size)
    except OSError as error:
        raise Unreadable(os_reason(error)) from None
    finally:
        os.close(fd)


def open_regular(path: Path | str) -> BinaryIO:
    """A regular file (a link followed to one) opened for reading, never blocking: a FIFO at
    the path would wait for a writer forever (a pull request's package index linking one:
    seventh campaign, P06). Raises Unreadable for anything else, OSError as opening does."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise Unreadable(f"{_kind(mode)}, not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _refuse_unfit(fd: int, path: Path | str, limit: int, within: Path | str | None, within_what: str,
                  owned: bool) -> None:
    """Raise Unreadable unless the file open as `fd` is one read_limited reads."""
    if within is not None:
        real = _opened_name(fd, path)
        top = os.fspath(within)
        if not (is_below(real, top) or is_below(real, os.path.realpath(top))):  # a top named through a link
            raise Unreadable(f"a link out of {within_what}, not read")
        if in_version_control_folder(real, top) or in_version_control_folder(real, os.path.realpath(top)):
            raise Unreadable(f"a link into {within_what}'s version control folder, not read")
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise Unreadable(f"{_kind(info.st_mode)}, not a regular file")
    if owned and info.st_uid != os.getuid():  # `owned`: a record of the user's cache, not another user's
        raise Unreadable(f"another user's file (uid {info.st_uid})")
    if info.st_size > limit:
        raise Unreadable(f"{describe_size(info.st_size)}, over the {describe_size(limit)} this tool reads")


def _read_at_most(fd: int, limit: int) -> bytes:
    """The file's bytes; Unreadable when it has grown past `limit` since it was looked at."""
    chunks, left = [], limit + 1  # the size can grow between fstat and read
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    data = b"".join(chunks)
    if len(data) > limit:
        raise Unreadable(f"over the {describe_size(limit)} this tool reads")
    return data


def _opened_name(fd: int, path: Path | str) -> str:
    """The real name of the file open as `fd`, links resolved: what the kernel opened
    (/proc/self/fd, one call), not what the name says."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # no /proc (macOS): the name, resolved
        return os.path.realpath(path)


# Folders of the project no command reads or writes: a version control system's, whose config
# holds the remote's credentials (a committed `build.sh -> .git/config` was read, its token shown
# in `fix --diff`, and written through: campaign 14, R04). Compared case-folded, as case-folding
# file systems open `.GIT` as `.git`.
VERSION_CONTROL_FOLDERS = frozenset({".git", ".hg", ".svn"})


def in_version_control_folder(real: str, top: str) -> bool:
    """Whether the real name `real`, below the folder `top`, lies in a version control folder
    of it (at any depth: a nested checkout's too)."""
    if not is_below(real, top):
        return False
    return any(part.lower() in VERSION_CONTROL_FOLDERS for part in real[len(os.path.join(top, "")):].split(os.sep))


def is_below(path: str, folder: str) -> bool:
    """Whether `path` lies in `folder`, by their names (`/p-secret` is not in `/p`)."""
    return path.startswith(os.path.join(folder, ""))


def read_text_limited(path: Path | str, limit: int = MAX_TEXT_BYTES, within: Path | str | None = None) -> str:
    """A text file as UTF-8 (or as its byte-order mark says: text_encoding), bytes that do not
    decode replaced (a latin-1 comment in a pyproject must not cost the whole file)."""
    return decoded_text(read_limited(path, limit, within), "replace")


def file_state(status: os.stat_result) -> str:
    """What says a regular file changed, short of reading it: size, modification time, and the
    change time, inode and device, which no user sets back (`touch -r`, `cp -p`, `rsync -a` and
    mtime-normalised trees keep size and mtime: a changed input was replayed stale, campaign 9, R03)."""
    return f"{status.st_size}\0{status.st_mtime_ns}\0{status.st_ctime_ns}\0{status.st_ino}\0{status.st_dev}"


# Byte-order marks as pip's auto_decode honours them (the UTF-32 ones first: UTF-32-LE's starts
# with UTF-16-LE's). A requirements file a Windows editor saved starts with one.
BYTE_ORDER_MARKS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
                    (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


def text_encoding(raw: bytes) -> tuple[str, bytes]:
    """(encoding, byte-order mark) of a text file other than Python: what its mark says, else
    UTF-8. The mark is no character of the text: positions are counted after it, as an editor
    shows them, and `fix` writes it back (fix/document.py)."""
    for mark, encoding in BYTE_ORDER_MARKS:
        if raw.startswith(mark):
            return encoding, mark
    return "utf-8", b""


def decoded_text(raw: bytes, errors: str = "strict") -> str:
    """A text file's bytes as text (text_encoding): a UTF-16 requirements file lost its every pin,
    and a UTF-8 one with a mark its first (campaign 9, R20)."""
    encoding, mark = text_encoding(raw)
    try:
        return raw[len(mark):].decode(encoding, errors)
    except UnicodeDecodeError:  # surrogateescape keeps bytes of ASCII-like encodings only: not UTF-16's
        return raw[len(mark):].decode(encoding, "replace")

