"""Keeping Python's cyclic garbage collector from walking objects it cannot free.

The collector runs every few hundred allocations and, every so often, walks every live object.
While a large structure is being built (a parsed module, a decoded record, a whole run's
project facts and upstream records), those passes find next to nothing to free, yet they cost
a fifth to a third of the time of the work itself.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def collector_paused(collect_after: bool = False) -> Iterator[None]:
    """No automatic collection inside the block; with `collect_after`, one collection of the
    youngest generation when it ends, for work that leaves reference cycles behind."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
        if collect_after:
            gc.collect(0)


BATCH_THRESHOLDS = (200_000, 30, 30)  # the thresholds mypy uses for the same reason


@contextmanager
def batch_collection() -> Iterator[None]:
    """Collect less often during a whole run, whose objects mostly live until it ends; restored
    after."""
    previous = gc.get_threshold()
    gc.set_threshold(*BATCH_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)


_ONE_RUN = [False]  # whether this process ends with its run (one_run_process)


def one_run_process() -> None:
    """For a process that ends with its run (the command line): the run's thresholds for good.
    Restoring the default ones at the end of the run costs a pass over every object it made
    (a third of a second after an edit of a large project), just before they are all freed."""
    gc.set_threshold(*BATCH_THRESHOLDS)
    _ONE_RUN[0] = True


def resident_process() -> None:
    """For a process that runs check after check (the daemon, the language server): the run's
    thresholds for good too. Restoring the default ones after each run cost a pass over every
    live object (both releases' models, the project's facts): a tenth of a second of a re-check."""
    gc.set_threshold(*BATCH_THRESHOLDS)


def kept_to_the_end() -> None:
    """In a process that ends with its run, once a re-check's inputs are read: what it holds
    now (the project's facts, both releases' models) lives until the end, and the collector
    never walks it again. Built with the collector paused, it all sat in the youngest
    generation, and the first collection after it walked every object (a twentieth of a second
    of a re-check of one file in a process of its own). Frozen, garbage among it is never
    freed: a full run, whose build leaves more, does not call it. Elsewhere nothing: a resident
    process frees each run's objects with the collector."""
    if _ONE_RUN[0]:
        gc.freeze()
