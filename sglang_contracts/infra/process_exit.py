"""Ending a one-run process without freeing what it made.

A check of a large project ends holding a million objects (both releases' records, the
project's facts): the interpreter's own exit walks and frees every one of them, a fifth to a
half of a second after the report is written. A process whose run is over has nothing left to
free, so its entry point leaves with `os._exit`, as mypy's `hard_exit` does, once the standard
streams are flushed and the exit handlers have run (a temporary download folder, the process
pool's folder): everything the interpreter's exit does but the freeing.
"""

from __future__ import annotations

import atexit
import os
import sys
from typing import NoReturn


def exit_without_teardown(status: int) -> NoReturn:
    """End the process now with `status`. The run's threads are all daemons (none is waited
    for at an interpreter exit either)."""
    _flush_standard_streams()
    # CPython's own call at exit; atexit has no public one. Each handler's error is printed
    # and the others run, as at exit.
    atexit._run_exitfuncs()
    _flush_standard_streams()
    os._exit(status)


def _flush_standard_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # a reader that left, a closed stream (None): nothing more to say
            pass
