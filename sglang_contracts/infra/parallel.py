"""Run CPU-bound parsing on every core when there is enough of it to pay for the processes."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from typing import Callable, Iterator, Sequence, TypeVar

Job = TypeVar("Job")
Result = TypeVar("Result")

PARALLEL_MIN_BYTES = 256_000
PRELOAD = ["sglang_contracts.project.scanner", "sglang_contracts.upstream.extract", "griffe"]


def default_workers() -> int:
    return min(os.cpu_count() or 1, 4)


def map_jobs(function: Callable[[Job], Result], jobs: Sequence[Job], size: int, workers: int | None = None,
             progress: str | None = None) -> list[Result]:
    """`function` over `jobs` (of `size` bytes of source in all), in processes when worthwhile;
    `progress` names the stage in the progress display (progress.py)."""
    return list(iter_jobs(function, jobs, size, workers, progress))


def iter_jobs(function: Callable[[Job], Result], jobs: Sequence[Job], size: int, workers: int | None = None,
              progress: str | None = None) -> Iterator[Result]:
    """`map_jobs`, each result yielded, in order, as soon as it is there: a caller that turns
    each into something else need never hold all of them at once. Consume it to the end."""
    from sglang_contracts.infra import progress as display

    workers = workers if workers is not None else default_workers()
    with display.task(progress, total=len(jobs)) if progress else nullcontext(display.Task()) as task:
        if workers <= 1 or size < PARALLEL_MIN_BYTES or len(jobs) < 2:
            for job in jobs:
                yield _counted(function(job), task)
            return
        # forkserver: forking a process whose other threads are busy (release downloads) can
        # copy a held lock into the child.
        context = multiprocessing.get_context("forkserver")
        # Workers fork from the server with the parsers already imported: a pool per stage then
        # costs no import (griffe takes a third of a second per worker).
        context.set_forkserver_preload(PRELOAD)
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            for result in pool.map(function, jobs, chunksize=4):
                yield _counted(result, task)


def _counted(result: Result, task) -> Result:
    task.advance()
    return result
