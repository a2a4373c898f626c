"""What a command writes: its report on standard output, and the files the user names
(`-o`, `--plan`, `--tree`, `--write-baseline`); and standard input, which `lsp` reads.

A reader that leaves early (`check | head -1`) is not an error: it changes neither the rest of
the run nor its exit status. An output that cannot be written (`> /dev/full`, a read-only
folder, a path under a file) is one line, `error: cannot write X (reason)`, exit 2, never an
internal error.
"""

from __future__ import annotations

import errno
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator, TextIO

from sglang_contracts.infra.files import why_unwritable
from sglang_contracts.infra.errors import ContractsError, shown


class WriteError(ContractsError):
    """An output the user named cannot be written."""


class ReadError(ContractsError):
    """Standard input cannot be read: closed, or opened for writing only."""


def usable_standard_streams() -> None:
    """A standard stream closed when the process started (`>&-`, a daemonised CI step) is None
    in Python, and the first write to it an AttributeError: writes to it go nowhere instead,
    so that the report reaches the stream that is open and the run keeps its own status."""
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the process's standard output, for good
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115


class StandardInput:
    """The `readline` and `read` of standard input's bytes, whose failure is one line (ReadError):
    standard input opened for writing only (`0>file`) was an OSError at the first read, an
    internal error."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream

    def readline(self, size: int = -1) -> bytes:
        with _reading():
            return self._stream.readline(size)

    def read(self, size: int = -1) -> bytes:
        with _reading():
            return self._stream.read(size)


@contextmanager
def _reading() -> Iterator[None]:
    try:
        yield
    except OSError as error:
        raise ReadError(f"cannot read standard input ({error.strerror or type(error).__name__})") from None


def standard_input() -> StandardInput:
    """Standard input, for a command that reads it. Closed when the process started (`<&-`, a
    daemonised launcher), it is None in Python and was an AttributeError, an internal error
    (campaign 13, R09): one line that says so instead, nothing being there to read."""
    if sys.stdin is None:
        raise ReadError("standard input is closed: there is nothing to read")
    return StandardInput(sys.stdin.buffer)


def blocking_standard_streams() -> None:
    """Standard output and error as blocking files. A parent may leave a pipe non-blocking (a
    Node-based CI step can, and it is shared with the child): a write then fails part-way once
    the pipe is full, and Python dropped the rest of the report with no word. Made blocking, a
    full pipe waits for its reader."""
    for stream in (sys.stdout, sys.stderr):
        try:
            descriptor = stream.fileno()
            if not os.get_blocking(descriptor):
                os.set_blocking(descriptor, True)
        except (AttributeError, OSError, ValueError):  # no descriptor (a test's capture), a closed one
            pass


def discard_standard_output() -> None:
    """What is still to be written, and the flush at exit, go to /dev/null: the output is gone."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    os.close(null)


class WholeWrites:
    """A text stream (standard output) whose every write reaches its file whole, or raises. A
    write Python's buffered file makes in one piece that the system takes only part of (a file
    size limit, a full disk) was cut short with no error: a JSON or SARIF report left half
    written, exit 1, as if it were whole (campaign 4, D09). Here each write goes to the file
    descriptor until every byte is taken; the system's refusal of the rest is the OSError."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def isatty(self) -> bool:
        return self._stream.isatty()

    def write(self, text: str) -> int:
        try:
            descriptor = self._stream.fileno()
        except (AttributeError, OSError, ValueError):  # no descriptor (a test's capture): as it is
            return self._stream.write(text)
        self._stream.flush()  # what was written before goes first
        view = memoryview(text.encode(self._stream.encoding or "utf-8", self._stream.errors or "strict"))
        while view:
            written = os.write(descriptor, view)
            if not written:
                raise OSError(errno.EIO, "the output took nothing")
            view = view[written:]
        return len(text)


@contextmanager
def standard_output() -> Iterator[None]:
    """Around what a command writes to standard output (flushed at the end, where a pipe's
    reader that left shows): a reader that left ends the writing, not the command."""
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        discard_standard_output()
    except OSError as error:
        discard_standard_output()
        raise WriteError(f"cannot write standard output ({error.strerror or type(error).__name__})") from None


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """Around the writing of `path`: an error is one line naming it and the reason."""
    try:
        yield
    except (OSError, ValueError) as error:  # ValueError: a NUL in the name
        reason = why_unwritable(path.parent, error) if isinstance(error, OSError) else str(error)
        raise WriteError(f"cannot write {shown(path)} ({reason})") from None


def write_file(path: Path, data: bytes) -> None:
    """`data` in the file `path` (its folder made if missing), written in place: a name such as
    /dev/stdout or a FIFO is written to, not replaced."""
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
