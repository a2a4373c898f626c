"""The error boundary: a bug met while analysing one file, one upstream module or one rule
costs that piece of the report, never the run.

What the boundary catches becomes a `Problem`, reported as SGC001 (a bug of this tool: the
report is incomplete, and the exit status says so) or SGC000 (an input it cannot analyse:
unreadable, too large, nested too deeply). With SGLANG_CONTRACTS_DEBUG=1 a bug is raised
with its traceback instead; the test suite runs that way, so the boundary hides nothing there.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from sglang_contracts.infra.files import MAX_TEXT_BYTES, Unreadable, decoded_text, read_limited
from sglang_contracts.infra.lines import numbered_lines

DEBUG_VARIABLE = "SGLANG_CONTRACTS_DEBUG"


def debugging() -> bool:
    return os.environ.get(DEBUG_VARIABLE, "") not in ("", "0")


def describe(error: BaseException) -> str:
    """`Type: first line of the message`, for a one-line diagnostic."""
    text = numbered_lines(str(error).strip())
    return f"{type(error).__name__}: {text[0]}" if text and text[0] else type(error).__name__


# The deepest syntax tree in sglang 0.5.22's 4,300 modules is 39 levels; this tool's walks take
# two or three frames a level, so Python's recursion limit (1,000) is met near 300.
DEEP_TREE = 150


def too_deep(error: BaseException, depth: Callable[[], int] | None) -> bool:
    """Python's recursion limit met while walking a syntax tree deeper than any real code's:
    the input is nested too deeply for this tool (SGC000). Met on a shallow tree, it is a bug:
    a resolution that loops (SGC001). The depth costs half a parse: computed only here."""
    return isinstance(error, (RecursionError, MemoryError)) and depth is not None and depth() > DEEP_TREE


@dataclass(frozen=True)
class Problem:
    """A part of the report that is missing, and why."""

    path: str  # the project file the finding is reported at (relative to the root)
    line: int
    col: int
    stage: str  # what was being done: "scanning the file", "rule SGC312", "reading sglang.srt.x in sglang 0.5.22"
    error: str  # what went wrong, one line
    internal: bool  # a bug of this tool (SGC001), or an input it cannot analyse (SGC000)
    module: str = ""  # the upstream module it is about, if any (reported where the project imports it)
    unchecked: str = ""  # what goes unchecked because of it, where not the module's contracts

    def to_json(self) -> list:
        return [self.path, self.line, self.col, self.stage, self.error, self.internal]

    @classmethod
    def from_json(cls, data: list) -> "Problem":
        path, line, col, stage, error, internal = data
        return cls(str(path), int(line), int(col), str(stage), str(error), bool(internal))


def problem_for(error: BaseException, path: str, stage: str, line: int = 1, col: int = 1,
                depth: Callable[[], int] | None = None) -> Problem:
    """The problem an exception caught at a boundary stands for, `depth` giving the depth of
    the syntax tree being walked, if any. A bug is raised again when debugging."""
    if too_deep(error, depth):
        return Problem(path, line, col, stage, "nested too deeply to analyse", internal=False)
    if debugging():
        raise error
    return Problem(path, line, col, stage, describe(error), internal=True)


# Problems met where no report is at hand (the readers of requirement files, Dockerfiles,
# patches): the runner collects them for the run that is going on.
_noted: ContextVar[list[Problem] | None] = ContextVar("sglang_contracts_problems", default=None)


@contextmanager
def collecting_problems() -> Iterator[list[Problem]]:
    problems: list[Problem] = []
    token = _noted.set(problems)
    try:
        yield problems
    finally:
        _noted.reset(token)


def note(problem: Problem) -> None:
    sink = _noted.get()
    if sink is not None:
        sink.append(problem)


def read_project_text(path: Path, root: Path, limit: int = MAX_TEXT_BYTES, errors: str = "replace") -> str | None:
    """A project file other than Python (requirements, a Dockerfile, a patch) as text, or None
    when it cannot be read, which is noted for the report (SGC000), never silent."""
    try:
        return decoded_text(read_limited(path, limit, within=root), errors)
    except Unreadable as unreadable:
        try:
            relpath = path.relative_to(root).as_posix()
        except ValueError:
            relpath = path.as_posix()
        note(Problem(relpath, 1, 1, "reading the file", unreadable.reason, internal=False))
        return None
