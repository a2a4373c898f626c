"""Progress on standard error while releases download, modules are extracted and the project is scanned.

Stages call `task(...)`; nothing is shown unless the command line turned a display on with
`showing(...)` (only when standard error is a terminal and without --quiet).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator


class Task:
    """One stage's progress; `advance` counts finished units when the total is known."""

    def advance(self, amount: int = 1) -> None:
        pass


class _RichTask(Task):
    def __init__(self, progress, task_id) -> None:
        self._progress, self._id = progress, task_id

    def advance(self, amount: int = 1) -> None:
        self._progress.advance(self._id, amount)


_display = None  # a rich.progress.Progress while showing
_lock = threading.Lock()


@contextmanager
def task(description: str, total: int | None = None) -> Iterator[Task]:
    display = _display
    if display is None:
        yield Task()
        return
    with _lock:
        task_id = display.add_task(description, total=total)
    try:
        yield _RichTask(display, task_id)
    finally:
        with _lock:
            task = display.tasks[[t.id for t in display.tasks].index(task_id)]
            display.update(task_id, total=task.total or 1, completed=task.total or 1)


def detach() -> None:
    """In a forked copy of the process: show nothing more. The display's refreshing thread is
    not in the copy, and may have held the display's lock when it was made."""
    global _display, _lock
    _display = None
    _lock = threading.Lock()


@contextmanager
def showing(enabled: bool) -> Iterator[None]:
    """Show the stages' progress on standard error for the duration (when `enabled`)."""
    global _display
    if not enabled:
        yield
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    display = Progress(
        SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=Console(stderr=True), transient=True,
    )
    _display = display
    try:
        with display:
            yield
    finally:
        _display = None
