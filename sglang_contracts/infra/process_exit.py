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
import threading
from typing import NoReturn

# How long an interrupted run's exit handlers may take: one of them (multiprocessing's, joining a
# queue's feeder thread) can wait for ever on a pool cut short (campaign 13, R13: `timeout`'s SIGTERM
# met, then 856 s at exit until a kill -9).
INTERRUPTED_EXIT_PATIENCE = 2.0


def exit_without_teardown(status: int, interrupted: bool = False) -> NoReturn:
    """End the process now with `status`. The run's threads are all daemons (none is waited
    for at an interpreter exit either). An `interrupted` run (a signal, Ctrl-C) gives its exit
    handlers INTERRUPTED_EXIT_PATIENCE seconds: whoever stopped it is waiting for it to end."""
    _flush_standard_streams()
    # CPython's own call at exit; atexit has no public one. Each handler's error is printed
    # and the others run, as at exit.
    if interrupted:
        _say_nothing_more()
        handlers = threading.Thread(target=atexit._run_exitfuncs, name="exit handlers", daemon=True)
        try:
            handlers.start()
        except RuntimeError:  # no thread left to wait for them (`ulimit -v`): the process ends now all the same
            pass
        else:
            handlers.join(INTERRUPTED_EXIT_PATIENCE)
    else:
        atexit._run_exitfuncs()
    _flush_standard_streams()
    os._exit(status)


def _say_nothing_more() -> None:
    """Standard error, once what was written is flushed, goes nowhere: a stopped run has nothing
    more to say, and its threads, cut short, would (the language server's check thread, meeting
    its pool shut down under it: campaign 14, R03). Its workers, busy, are not killed: killing
    them left the resource tracker a semaphore to warn of now and then; they end with the run
    (infra/parallel.py _watch_parent), after at most INTERRUPTED_EXIT_PATIENCE seconds."""
    try:
        with open(os.devnull, "wb") as nowhere:
            os.dup2(nowhere.fileno(), sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):  # no standard error to silence
        pass


def _flush_standard_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # a reader that left, a closed stream (None): nothing more to say
            pass
