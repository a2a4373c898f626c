"""Ending a block of work handed to an executor (threads or processes): after its work, or, when
the run is interrupted, at once.

An interrupted run (Ctrl-C, or a `timeout`, a cancelled CI job, a closed terminal: cli.py's
ending signals) is waited for by whoever stopped it. An executor's own `with` waits for every job
it was given: the project's whole scan, a download. Interrupted, a block leaves its executor with
its pending jobs cancelled and its running ones left to the process's end (campaign 13, R13: a
run in a large folder met `timeout`'s SIGTERM, then waited 856 s for its scan until a kill -9).
"""

from __future__ import annotations

from concurrent.futures import Executor
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

from sglang_contracts.infra.limits import cannot_start

AnyExecutor = TypeVar("AnyExecutor", bound=Executor)


def stop(executor: Executor, interrupted: bool) -> None:
    """Shut `executor` down: after its jobs, or, for a run `interrupted`, now, its pending jobs
    cancelled (its running ones end with the process)."""
    if interrupted:
        executor.shutdown(wait=False, cancel_futures=True)
    else:
        executor.shutdown()


@contextmanager
def stopped_at_end(executor: AnyExecutor) -> Iterator[AnyExecutor]:
    """`executor` for the block, stopped at its end (`stop`): at once if the block was interrupted."""
    with ended_by(lambda interrupted: stop(executor, interrupted)):
        yield executor


@contextmanager
def ended_by(end: Callable[[bool], None]) -> Iterator[None]:
    """The block, then `end(interrupted)`: whether the run was interrupted in it (a signal or
    Ctrl-C: KeyboardInterrupt, which goes on up), or ends because the system refused it a thread
    or a process: a pool's shutdown then waited for ever for a worker that never started
    (helper-92's audit, R01: `ulimit -u 6`)."""
    interrupted = False
    try:
        yield
    except KeyboardInterrupt:
        interrupted = True
        raise
    except (OSError, RuntimeError) as error:
        interrupted = cannot_start(error)
        raise
    finally:
        end(interrupted)
