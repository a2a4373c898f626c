"""Run CPU-bound parsing on every core when there is enough of it to pay for the processes."""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Sequence, TypeVar

Job = TypeVar("Job")
Result = TypeVar("Result")

PARALLEL_MIN_BYTES = 256_000


def default_workers() -> int:
    return min(os.cpu_count() or 1, 4)


def map_jobs(function: Callable[[Job], Result], jobs: Sequence[Job], size: int, workers: int | None = None) -> list[Result]:
    """`function` over `jobs` (of `size` bytes of source in all), in processes when worthwhile."""
    workers = workers if workers is not None else default_workers()
    if workers <= 1 or size < PARALLEL_MIN_BYTES or len(jobs) < 2:
        return [function(job) for job in jobs]
    # forkserver: forking a process whose other threads are busy (release downloads) can
    # copy a held lock into the child.
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        return list(pool.map(function, jobs, chunksize=4))
