"""Run CPU-bound parsing on every core when there is enough of it to pay for the processes."""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import pickle
import signal
import threading
import warnings
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager, nullcontext
from functools import lru_cache
from multiprocessing.connection import Connection
from typing import Callable, Iterator, NoReturn, Sequence, TypeVar

from sglang_contracts.infra.executors import ended_by, stop, stopped_at_end
from sglang_contracts.infra.files import open_files_limit
from sglang_contracts.infra.interrupts import interrupt_numbers
from sglang_contracts.infra.limits import cannot_start
from sglang_contracts.infra.pythonpath import safe_path_environment

Job = TypeVar("Job")
Result = TypeVar("Result")

PARALLEL_MIN_BYTES = 256_000
RUNNING_POOL_MIN_BYTES = 32_000
# File descriptors: a pool holds ten (its queues, the fork server's and the resource tracker's
# pipes, the parent watch), each worker two and one more while it starts; the run beside them
# reads files and releases.
FILES_BESIDE_THE_WORKERS = 48
FILES_PER_WORKER = 4
PRELOAD = ["sglang_contracts.infra.worker_start", "sglang_contracts.project.scanner",
           "sglang_contracts.upstream.extract", "griffe"]


def default_workers() -> int:
    return min(os.cpu_count() or 1, 4)


def _workers_with_files(workers: int) -> int:
    """As many of `workers` as the limit of open files (`ulimit -n`) leaves room for: short of
    descriptors, a pool's workers failed to start (EMFILE) and broke it, and its exit handlers
    printed tracebacks (campaign 14, R07). One, a run of its jobs in this process, if that."""
    limit = open_files_limit()
    return workers if limit is None else max(1, min(workers, (limit - FILES_BESIDE_THE_WORKERS) // FILES_PER_WORKER))


class _RunPool:
    """The pool of the run in progress, started when a stage first needs one."""

    def __init__(self) -> None:
        self.active = 0
        self.pool: ProcessPoolExecutor | None = None
        self.lock = threading.Lock()
        # In a forked copy of the run (start_forked) the pool's threads are not there: its
        # jobs run in the copy itself.
        self.forked_copy = False
        # The run was interrupted: a stage still at work in another thread starts no pool (its
        # semaphores, made as the process ends, were left to the resource tracker, which warned).
        self.interrupted = False


_RUN = _RunPool()


@contextmanager
def run_pool() -> Iterator[None]:
    """One process pool for every stage of a run (the scan, each round of extraction, the
    per-file analyses): a pool per stage took 0.15 s to start, and a run has a dozen stages.
    Its workers are stopped when the run ends."""
    with _RUN.lock:
        _RUN.interrupted = _RUN.interrupted and _RUN.active > 0
        _RUN.active += 1
    with ended_by(_leave_run):
        yield


def _leave_run(interrupted: bool) -> None:
    """One `run_pool` block ended: the last one stops the pool."""
    with _RUN.lock:
        _RUN.active -= 1
        _RUN.interrupted = _RUN.interrupted or interrupted
        pool, _RUN.pool = (_RUN.pool, None) if not _RUN.active else (None, _RUN.pool)
    if pool is not None:  # an interrupted run's workers end with it (_watch_parent)
        stop(pool, interrupted)


def start_early(workers: int | None = None) -> None:
    """Start the run's pool now, inside `run_pool`, for a run whose first stage will need it:
    its workers take 0.8 s to deliver a first result (the server imports the parsers), which
    then overlaps with reading the project and opening the releases."""
    workers = _workers_with_files(workers if workers is not None else default_workers())
    if workers <= 1:
        return
    with _RUN.lock:
        if _RUN.active <= 0 or _RUN.forked_copy:
            return
        if _RUN.pool is None:
            try:
                _RUN.pool = _new_pool(workers)
            except (OSError, RuntimeError):  # only a head start: a stage that needs the pool meets it again
                return
        pool = _RUN.pool
    # From a thread of its own: the first submission waits for the server to import the parsers
    # (a third of a second), which this thread spends reading the project instead.
    try:
        threading.Thread(target=_warm, args=(pool, workers), name="pool start", daemon=True).start()
    except RuntimeError:  # no thread left for a head start (`ulimit -v`): the first stage starts the workers
        pass


def running_pool() -> ProcessPoolExecutor | None:
    """The run's pool once it runs (start_early), for work handed to it in the background."""
    with _RUN.lock:
        return _RUN.pool if _RUN.active > 0 and not _RUN.forked_copy else None


def _warm(pool: ProcessPoolExecutor, workers: int) -> None:
    """Start the workers ahead of their first job. Only a head start: whatever stops it (the run
    ended first and shut the pool down, or took its temporary folder, where the forkserver's
    socket is, away under load) is met again, and reported, by the job that needs the pool; a
    traceback from this thread was a second line on standard error."""
    try:
        for _ in range(workers):  # the executor starts a worker per job submitted while none is idle
            pool.submit(os.getpid)
    except Exception:  # noqa: BLE001 - see above
        pass


def _new_pool(workers: int) -> ProcessPoolExecutor:
    # forkserver: forking a process whose other threads are busy (release downloads) can
    # copy a held lock into the child.
    context = multiprocessing.get_context("forkserver")
    # Workers fork from the server with the parsers already imported: a pool then costs no
    # import (griffe takes a third of a second per worker).
    context.set_forkserver_preload(PRELOAD)
    with safe_path_environment():  # the server is `python -c`: the working folder not on its path
        # The server's resource tracker first, each start holding the interrupts back: the
        # tracker's own start lets go of SIGINT and SIGTERM (which it ignores) but not of SIGHUP
        # and SIGQUIT, which killed it (campaign 14, R01).
        with _interrupts_held(), _tracker_says_nothing():
            multiprocessing.resource_tracker.ensure_running()
        with _interrupts_held():
            multiprocessing.forkserver.ensure_running()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_watch_parent,
                               initargs=(_parent_alive(os.getpid())[0],))
    try:
        _start_threads(pool)
    except BaseException:
        pool.shutdown(wait=False)  # not waited for: joining a thread that never started raises
        raise
    return pool


def _start_threads(pool: ProcessPoolExecutor) -> None:
    """Start `pool`'s two threads here, before any worker: the one that hands the workers their
    jobs and the executor's own, which the first job started, and which started the first.
    Refused a thread (`ulimit -v`), the first job raised "can't start new thread" with a worker
    already forked, and the executor's thread printed its traceback and left the run waiting
    for good for the job's result (CPython 3.11; 3.12 breaks the pool: gh-109047). Refused
    here, the pool is not used (_pool_or_none). Private names of CPython's executor, where it
    has them: without them a refusal is met, and said, at the first job."""
    queue = getattr(pool, "_call_queue", None)
    if queue is not None and getattr(queue, "_thread", False) is None:
        queue._start_thread()
    start_executor_thread = getattr(pool, "_start_executor_manager_thread", None)
    if start_executor_thread is not None:
        start_executor_thread()


def _pool_or_none(workers: int) -> ProcessPoolExecutor | None:
    """A new pool, or None when the system refuses it a thread or a process (`ulimit -v`, `ulimit -u`)."""
    try:
        return _new_pool(workers)
    except (OSError, RuntimeError) as error:
        if cannot_start(error):
            return None
        raise


@contextmanager
def _tracker_says_nothing() -> Iterator[None]:
    """The resource tracker started meanwhile writes to nowhere (unless SGLANG_CONTRACTS_DEBUG):
    a run ends without teardown (infra/process_exit.py), and the tracker, cleaning after it, warned
    now and then of a semaphore it could not unlink on the run's standard error (campaign 15, R10:
    1 run in 12 of two signals at once). What it says is of its own cleanup, not of the run."""
    if os.environ.get("SGLANG_CONTRACTS_DEBUG"):
        yield
        return
    try:
        kept = os.dup(2)
    except OSError:  # no standard error to keep
        yield
        return
    try:
        with open(os.devnull, "wb") as nowhere:
            os.dup2(nowhere.fileno(), 2)
        yield
    finally:
        os.dup2(kept, 2)
        os.close(kept)


@contextmanager
def _interrupts_held() -> Iterator[None]:
    """Hold back, in this thread, the signals that interrupt a run (Ctrl-C, and ENDING_SIGNALS,
    which a `timeout`, a cancelled CI job or a closed terminal send the whole process group):
    the fork server started meanwhile, and every worker it forks, inherit the mask and never
    receive them. The run meets them and ends, and its workers with it (_watch_parent). Killed by
    them, the server and workers broke the pool under the ending run: the executor's thread
    failed on the futures the run had cancelled (Python 3.11's traceback on standard error) and
    its queue's feeder waited for ever to hand the dead workers their next jobs (campaign 13,
    R13). Held back here, not ignored: one that comes meanwhile is delivered when let go."""
    if not hasattr(signal, "pthread_sigmask"):  # Windows: no fork server either
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, interrupt_numbers())
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


# The write ends of this process's _parent_alive pipes: a forked copy closes its inherited ones,
# or the workers would wait for the copy too (helper-7's audit: they outlived a kill -9 by it).
_ALIVE_WRITE_ENDS: list[Connection] = []


@lru_cache(maxsize=1)
def _parent_alive(pid: int) -> tuple[Connection, Connection]:
    """(read end, write end) of a pipe whose write end this process alone holds (`pid`: one
    per process, a forked copy makes its own): a worker reading it meets its end when this
    process ends, however it ends. A worker's own queues never end (it holds both of their
    ends), and its parent is the fork server, not this process: without this, a run killed
    with -9 left its workers, and through them the fork server and the resource tracker
    (which wait for every holder of their pipes), alive for good."""
    pipe = multiprocessing.Pipe(duplex=False)
    _ALIVE_WRITE_ENDS.append(pipe[1])
    return pipe


def _watch_parent(parent_alive: Connection) -> None:
    """A worker's initializer: the worker exits when the process that made its pool is gone.
    Refused the thread (`ulimit -v`), the worker works unwatched: an initializer's error broke
    the pool, its traceback on standard error (campaign 15, R06)."""
    try:
        threading.Thread(target=_exit_at_end_of, args=(parent_alive,), name="parent watch", daemon=True).start()
    except RuntimeError:
        pass


def _exit_at_end_of(parent_alive: Connection) -> None:
    """Exit once the other end of `parent_alive` is closed everywhere: the process holding it is gone."""
    try:
        parent_alive.recv_bytes()  # nothing is ever sent: this returns at the end of the pipe
    except (EOFError, OSError):
        pass
    os._exit(1)


@contextmanager
def _pool(workers: int) -> Iterator[ProcessPoolExecutor | None]:
    """The run's pool inside `run_pool`, else one for this stage alone; None when the system
    refuses one (_pool_or_none): the stage's jobs then run here."""
    with _RUN.lock:
        if _RUN.interrupted:
            raise KeyboardInterrupt  # the run is ending: this stage's thread ends with it
        shared = _RUN.active > 0
        if shared and _RUN.pool is None:
            _RUN.pool = _pool_or_none(workers)
        pool = _RUN.pool if shared else None
    if not shared:
        own = _pool_or_none(workers)
        with stopped_at_end(own) if own is not None else nullcontext():
            yield own
        return
    try:
        yield pool
    except BrokenProcessPool:  # a worker died: the next stage starts a pool of its own
        with _RUN.lock:
            if _RUN.pool is pool:
                _RUN.pool = None
        raise


def map_jobs(function: Callable[[Job], Result], jobs: Sequence[Job], size: int, workers: int | None = None,
             progress: str | None = None, small: bool = False) -> list[Result]:
    """`function` over `jobs` (of `size` bytes of source in all), in processes when worthwhile;
    `progress` names the stage in the progress display (progress.py)."""
    return list(iter_jobs(function, jobs, size, workers, progress, small))


def iter_jobs(function: Callable[[Job], Result], jobs: Sequence[Job], size: int, workers: int | None = None,
              progress: str | None = None, small: bool = False) -> Iterator[Result]:
    """`map_jobs`, each result yielded, in order, as soon as it is there: a caller that turns
    each into something else need never hold all of them at once. Consume it to the end."""
    from sglang_contracts.infra import progress as display

    workers = _workers_with_files(workers if workers is not None else default_workers())
    with display.task(progress, total=len(jobs)) if progress else nullcontext(display.Task()) as task:
        if _in_this_process(len(jobs), size, workers, small):
            for job in jobs:
                yield _counted(function(job), task)
            return
        # Chunks of a few jobs save round trips; a short stage hands them out one by one, so
        # that no worker is left waiting while another works through a chunk.
        chunk = 4 if len(jobs) >= 16 * workers else 1
        with _pool(workers) as pool:  # none the system allows (`ulimit -v`): the jobs are run here
            for result in pool.map(function, jobs, chunksize=chunk) if pool is not None else map(function, jobs):
                yield _counted(result, task)


def _in_this_process(count: int, size: int, workers: int, small: bool) -> bool:
    """Whether `count` jobs of `size` bytes in all are run here rather than in the pool."""
    # A pool already running costs nothing to start: a smaller stage pays for it, where the
    # caller says this process has nothing else to do meanwhile (`small`).
    least = RUNNING_POOL_MIN_BYTES if small and running_pool() is not None else PARALLEL_MIN_BYTES
    return workers <= 1 or size < least or count < 2 or _RUN.forked_copy


def _counted(result: Result, task) -> Result:
    task.advance()
    return result


def start_forked(function: Callable[[], Result]) -> Callable[[float | None], Result | None]:
    """Run `function` in a forked copy of this process, which has everything this one built
    (a pool's worker would have to rebuild it), beside this process's own work; returns how to
    wait for its result: None when there is none (no fork on this system, the copy raised or
    died, the result does not pickle), and the caller then does the work itself. The copy's
    exceptions are not shown: the caller's second attempt raises them where they can be.

    Only for a one-shot run: the copy holds none of this process's other threads, so it never
    uses the run's pool (its jobs run in the copy), and it ends with os._exit, flushing none
    of the buffers it inherited. A copy still at work `patience` seconds after it is waited
    for is stopped (a lock some thread held when it was made would stall it forever)."""
    if not hasattr(os, "fork"):
        return lambda patience=None: None
    ends: list[int] = []
    try:
        ends += os.pipe()
        ends += os.pipe()  # the copy reads to its end when this process is gone
        with warnings.catch_warnings():
            # Python 3.12 warns of forking beside other threads: the copy never uses theirs (the
            # pool's, the progress display's), which is what makes it safe here.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:  # no fork, or no descriptors left for the pipes (`ulimit -n`): the work is done here
        for end in ends:
            os.close(end)
        return lambda patience=None: None
    if pid == 0:
        _be_the_copy(function, ends)
    read_end, write_end, copy_watch, first_alive = ends
    os.close(write_end)
    os.close(copy_watch)
    received: list[bytes] = []
    # Read as it is written: a result larger than the pipe would otherwise stall the copy.
    reader = threading.Thread(target=lambda: received.append(_read_all(read_end)), daemon=True)
    try:
        reader.start()
    except RuntimeError:  # no thread to read it (`ulimit -v`): the copy is stopped and the work done here
        os.close(read_end)
        _stopped(pid, first_alive)
        return lambda patience=None: None

    def result(patience: float | None = None) -> Result | None:
        reader.join(patience)
        if reader.is_alive():
            return _stopped(pid, first_alive)
        _, status = os.waitpid(pid, 0)
        os.close(first_alive)  # held while the copy lives: its end, were this process killed, ends the copy
        if status != 0 or not received:
            return None
        try:
            return pickle.loads(received[0])
        except Exception:
            return None

    return result


def _be_the_copy(function: Callable[[], object], ends: list[int]) -> NoReturn:
    """The forked copy of start_forked: `function()`'s result down the pipe, then its exit."""
    read_end, write_end, copy_watch, first_alive = ends
    status = 1
    try:
        from sglang_contracts.infra import progress

        os.close(first_alive)
        for inherited in _ALIVE_WRITE_ENDS:
            inherited.close()
        threading.Thread(target=_exit_at_end_of, args=(Connection(copy_watch, writable=False),),
                         name="first process watch", daemon=True).start()
        os.close(read_end)
        progress.detach()
        _RUN.forked_copy = True
        payload = pickle.dumps(function(), protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write_end, "wb") as out:
            out.write(payload)
        status = 0
    finally:
        os._exit(status)


def _stopped(pid: int, first_alive: int) -> None:
    """Stop the forked copy `pid`, its result unread (None)."""
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(first_alive)


def _read_all(fd: int) -> bytes:
    with os.fdopen(fd, "rb") as stream:
        return stream.read()
