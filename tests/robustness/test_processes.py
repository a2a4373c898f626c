"""The processes a run starts (its pool's workers, the fork server, the resource tracker) end
with it, however it ends."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from sglang_contracts.infra.executors import stopped_at_end
from sglang_contracts.infra.interrupts import Terminated, interrupt_behind
from tests.helpers import NEW, OLD, checkout_env, lsp_frame
from tests.helpers import write_tree as write

# Enough source for the scan to go to the pool (parallel.PARALLEL_MIN_BYTES), and to last a while.
MODULE = "from sglang.srt.layers.linear import thing\n\n" + "".join(
    f"def f{i}(x):\n    return thing(x) + {i}\n\n" for i in range(300))
REMOVED_NAME = "from sglang.srt.layers.moe.fused_moe_triton import fused_experts\n"  # gone from NEW: SGC102


def _marked(marker: str) -> dict[int, int]:
    """pid -> parent pid of every process whose environment holds `marker`."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if marker.encode() not in Path(f"/proc/{entry}/environ").read_bytes().split(b"\0"):
                continue
            found[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):  # gone meanwhile
            continue
    return found


def _until(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _as_a_terminal_starts_it() -> None:
    """A child's signals as a terminal's shell leaves them: SIGINT, SIGTERM, SIGHUP and SIGQUIT at
    their defaults and none held back. A child inherits ignored and held-back signals, and the
    suite's worker processes do not leave them as a terminal does (a full run's SIGINT and
    SIGQUIT tests saw them ignored: the run went on to its end, status 0)."""
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())


def _users_env(**extra: str) -> dict[str, str]:
    """checkout_env without the suite's SGLANG_CONTRACTS_DEBUG: what a user's run says is asserted."""
    env = checkout_env(**extra)
    env.pop("SGLANG_CONTRACTS_DEBUG", None)
    return env


@contextmanager
def check_at_work(tmp_path: Path, stderr: int = subprocess.DEVNULL, modules: int = 80, module: str = MODULE,
                  own_group: bool = False, planted: dict[str, str] | None = None
                  ) -> Iterator[tuple[subprocess.Popen, str]]:
    """A check of a project large enough for the pool, once a worker has started; the marker in
    the environment of every process it starts. What it started is killed at the end.
    `own_group`: the run leads a process group of its own (as under `timeout`, or a CI job);
    `planted`: files of the project, which is then the run's working folder (a pre-commit hook's)."""
    project = write(tmp_path / "project", {"app/__init__.py": "", **{f"app/m{n}.py": module for n in range(modules)},
                                           **(planted or {})})
    run_id = uuid.uuid4().hex
    marker = f"SGLANG_CONTRACTS_TEST_RUN={run_id}"  # in the environment of every process the run starts
    env = _users_env(SGLANG_CONTRACTS_CACHE=str(tmp_path / "cache"), SGLANG_CONTRACTS_TEST_RUN=run_id)
    run = subprocess.Popen([sys.executable, "-m", "sglang_contracts", "check", str(project), "--old", str(OLD),
                            "--new", str(NEW)], env=env, stdout=subprocess.DEVNULL, stderr=stderr,
                           start_new_session=own_group, cwd=project if planted else None,
                           preexec_fn=_as_a_terminal_starts_it)
    try:
        # Workers are the fork server's children; the server and the tracker are the run's.
        assert _until(lambda: any(parent in found and parent != run.pid for found in [_marked(marker)]
                                  for parent in found.values()), 60), "no worker started"
        yield run, marker
    finally:
        run.kill()
        for pid in _marked(marker):  # what this test started, and only that
            os.kill(pid, signal.SIGKILL)


def test_a_check_killed_with_9_leaves_no_process_behind(tmp_path):
    with check_at_work(tmp_path) as (run, marker):
        run.kill()
        run.wait()
        assert _until(lambda: not _marked(marker), 5), f"left running: {_marked(marker)}"


FORKING = """
import time
from sglang_contracts.infra.parallel import run_pool, start_forked
with run_pool():
    wait = start_forked(lambda: time.sleep(120))
    print("forked", flush=True)
    wait(None)
"""


def test_a_forked_copy_ends_when_the_process_that_made_it_is_killed() -> None:
    """helper-7's audit: the copy a check makes for its second half (start_forked) had no watch on
    its maker, and held the workers' watch pipe open: a kill -9 left it, and them, running."""
    marker = f"SGLANG_CONTRACTS_TEST_MARK_{uuid.uuid4().hex}=1"
    name, value = marker.split("=")
    run = subprocess.Popen([sys.executable, "-c", FORKING], env=checkout_env(**{name: value}),
                           stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert run.stdout.readline().strip() == "forked"
        assert _until(lambda: len(_marked(marker)) >= 2, 10)  # the maker and its copy
        os.kill(run.pid, signal.SIGKILL)
        run.wait()
        assert _until(lambda: not _marked(marker), 10), _marked(marker)
    finally:
        for pid in _marked(marker):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT], ids=lambda s: s.name)
def test_a_check_terminated_ends_quietly_with_the_status_of_its_signal(tmp_path, ending):
    """SIGTERM (a cancelled CI job, `timeout`), SIGHUP (the terminal or ssh session closed) and
    SIGQUIT are met as an interrupt: the workers and their semaphores are let go, nothing is said
    on standard error, the status is 128 + the signal (campaign 9, R25, and campaign 13, R10: the
    resource tracker warned of leaked semaphores)."""
    # enough modules that the run is still at work when the signal comes (80 had finished, now and then)
    with check_at_work(tmp_path, stderr=subprocess.PIPE, modules=400) as (run, marker):
        run.send_signal(ending)
        _, err = run.communicate(timeout=60)
        assert run.returncode == 128 + ending
        assert _until(lambda: not _marked(marker), 5), f"left running: {_marked(marker)}"
        assert err == b""


@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_check_whose_whole_process_group_is_signalled_ends_at_once(tmp_path, ending):
    """`timeout`, a cancelled CI job and Ctrl-C at a terminal signal the run's whole process
    group: its fork server and workers too. Killed by it, they broke the pool under the ending
    run: Python's executor thread printed a traceback (InvalidStateError on a future the run had
    cancelled), and the run's exit waited for ever on the queue that fed the dead workers their
    next files (campaign 13, R13: 856 s, until a kill -9). Large files, so that the queue is full
    of them when the signal comes; the status is the signal's, nothing is said, nothing is left."""
    large = MODULE * 16  # 200 kB: a few of them fill the pipe to a worker
    with check_at_work(tmp_path, stderr=subprocess.PIPE, modules=120, module=large, own_group=True) as (run, marker):
        os.killpg(run.pid, ending)
        try:
            _, err = run.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("the run did not end within 60 s of the signal")
        assert run.returncode == (130 if ending == signal.SIGINT else 128 + ending)
        assert _until(lambda: not _marked(marker), 5), f"left running: {_marked(marker)}"
        assert err == b""


def _held_back(pid: int) -> set[int]:
    """The signals process `pid` holds back (its blocked mask)."""
    status = Path(f"/proc/{pid}/status").read_text()
    mask = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigBlk:")), 16)
    return {number for number in range(1, 65) if mask >> (number - 1) & 1}


def test_the_fork_server_and_workers_hold_back_the_signals_that_end_a_run(tmp_path):
    """The run meets an interrupt and ends, its workers with it; the fork server and the workers
    never meet it themselves (R13: killed by it, they broke the pool under the ending run). The
    run itself holds none back (but for an instant while it starts a process)."""
    ending = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT}
    with check_at_work(tmp_path) as (run, marker):
        started = {pid: parent for pid, parent in _marked(marker).items() if pid != run.pid}
        # the fork server (the run's child that has children) and its children, the workers
        pool = {pid for pid, parent in started.items() if parent != run.pid or pid in started.values()}
        assert pool, started
        assert all(ending <= _held_back(pid) for pid in pool), {pid: _held_back(pid) for pid in pool}
        # Python blocks every signal of the parent for the moment a vfork'd child takes to exec
        # (each git the run asks): a mask seen then is not the run's own, so it is read again
        assert _until(lambda: not ending & _held_back(run.pid), 5), _held_back(run.pid)


EXIT_HANDLER_THAT_NEVER_ENDS = """
import atexit, sys, threading
from sglang_contracts.infra.process_exit import exit_without_teardown
atexit.register(threading.Event().wait)  # as multiprocessing's joining a feeder no worker reads
print("exiting", flush=True)
exit_without_teardown(143, interrupted=sys.argv[1] == "interrupted")
"""


def test_an_interrupted_run_does_not_wait_for_an_exit_handler_that_never_ends():
    """R13's last wait: multiprocessing's exit handler joined a queue's feeder thread that wrote to
    workers gone; the interrupted run waited for ever (856 s, until kill -9)."""
    run = subprocess.run([sys.executable, "-c", EXIT_HANDLER_THAT_NEVER_ENDS, "interrupted"], env=checkout_env(),
                         capture_output=True, timeout=60)
    assert (run.returncode, run.stdout, run.stderr) == (143, b"exiting\n", b"")
    # a run that was not interrupted runs its handlers to their end (a download folder removed)
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", EXIT_HANDLER_THAT_NEVER_ENDS, "finished"], env=checkout_env(),
                       capture_output=True, timeout=5)


def test_an_interrupted_run_refused_a_thread_for_its_exit_handlers_ends_now():
    """The thread that runs an interrupted run's exit handlers could not start (`ulimit -v`):
    "can't start new thread", and the interpreter's own exit then waited for the handlers
    (campaign 15, R06). The run ends now, with its status."""
    refused = EXIT_HANDLER_THAT_NEVER_ENDS.replace("print(", "def refused(thread):\n"
                                                   "    raise RuntimeError(\"can't start new thread\")\n"
                                                   "threading.Thread.start = refused\nprint(", 1)
    try:
        run = subprocess.run([sys.executable, "-c", refused, "interrupted"], env=checkout_env(), capture_output=True,
                             timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("the run waited for its exit handlers")
    assert (run.returncode, run.stdout, run.stderr) == (143, b"exiting\n", b"")


def test_a_worker_refused_its_parent_watch_works_unwatched(monkeypatch):
    """A pool's worker could not start the thread watching its parent (`ulimit -v`): the
    initializer's error broke the pool, its traceback on standard error (campaign 15, R06)."""
    import multiprocessing

    from sglang_contracts.infra import parallel

    def refused(thread):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refused)
    read_end, write_end = multiprocessing.Pipe(duplex=False)
    try:
        assert parallel._watch_parent(read_end) is None
    finally:
        read_end.close()
        write_end.close()


def test_an_interrupted_block_leaves_its_threads_work_and_cancels_what_waits():
    """The check's download and scan threads (runner.py): interrupted, the run waited for the
    whole scan of a large folder (R13); now it leaves at once, the jobs not begun cancelled."""
    from concurrent.futures import ThreadPoolExecutor

    release = threading.Event()
    try:
        with pytest.raises(KeyboardInterrupt):
            with stopped_at_end(ThreadPoolExecutor(max_workers=1)) as threads:
                running = threads.submit(release.wait)
                waiting = threads.submit(release.wait)
                raise KeyboardInterrupt
        assert not running.done() and waiting.cancelled()
    finally:
        release.set()
    # not interrupted, the block waits for its jobs
    with stopped_at_end(ThreadPoolExecutor(max_workers=1)) as threads:
        done = threads.submit(time.sleep, 0.01)
    assert done.done() and not done.cancelled()


@pytest.mark.parametrize("refusal", [RuntimeError("can't start new thread"), OSError(errno.EAGAIN, "no process")],
                         ids=["a thread", "a process"])
def test_a_block_the_system_refused_a_thread_or_process_leaves_its_executors_work(refusal):
    """A run short of processes (`ulimit -u`) waited for ever in its pool's shutdown for a worker
    that never started (helper-92's audit, R01): a block that ends with the system's refusal
    leaves its executor as an interrupted one does; another error waits for the jobs."""
    from concurrent.futures import ThreadPoolExecutor

    from sglang_contracts.infra.limits import cannot_start

    assert cannot_start(refusal)
    release = threading.Event()
    try:
        with pytest.raises(type(refusal)):
            with stopped_at_end(ThreadPoolExecutor(max_workers=1)) as threads:
                running = threads.submit(release.wait, 5)  # waited for, the block would end in 5 s
                waiting = threads.submit(release.wait, 5)
                raise refusal
        assert not running.done() and waiting.cancelled()
    finally:
        release.set()
    with pytest.raises(ValueError):
        with stopped_at_end(ThreadPoolExecutor(max_workers=1)) as threads:
            done = threads.submit(time.sleep, 0.01)
            raise ValueError("another error")
    assert done.done() and not done.cancelled()


SECOND_SIGNAL = """
import os, signal, sys
from sglang_contracts.infra.interrupts import interrupted_status, meet_interrupts
meet_interrupts()
try:
    os.kill(os.getpid(), getattr(signal, sys.argv[1]))
    signal.pause()
except KeyboardInterrupt as interrupt:
    os.kill(os.getpid(), signal.SIGINT)  # a second one, as the run ends: ignored
    os.kill(os.getpid(), signal.SIGTERM)
    print(interrupted_status(interrupt), *(signal.getsignal(number).__name__ for number in
          (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)))
"""


@pytest.mark.parametrize("first", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_after_the_first_interrupt_every_later_one_is_ignored(first):
    """Campaign 14, R02: Ctrl-C twice, or `timeout` signalling the run and then its group, raised
    a second interrupt inside the ending run's exit: a traceback and status 1, or a hang when it
    cut the killing of the workers short."""
    run = subprocess.run([sys.executable, "-c", SECOND_SIGNAL, first], env=checkout_env(), capture_output=True,
                         timeout=60, preexec_fn=_as_a_terminal_starts_it)
    assert (run.returncode, run.stderr) == (0, b"")
    assert run.stdout.split() == [str(128 + getattr(signal, first)).encode()] + [b"_met_already"] * 4


TWO_AT_ONCE = """
import os, signal
from sglang_contracts.infra.interrupts import interrupted_status, meet_interrupts
meet_interrupts()
both = {signal.SIGHUP, signal.SIGTERM}
signal.pthread_sigmask(signal.SIG_BLOCK, both)
os.kill(os.getpid(), signal.SIGHUP)
os.kill(os.getpid(), signal.SIGTERM)
try:
    # both caught at once, as a closing terminal and a supervisor send them
    signal.pthread_sigmask(signal.SIG_UNBLOCK, both)
    for _ in range(1000):
        pass
except KeyboardInterrupt as interrupt:
    for _ in range(1000):  # the second one is handled here
        pass
    print(interrupted_status(interrupt))
"""


def test_two_signals_caught_at_once_end_the_run_quietly():
    """Campaign 15, R10: SIGHUP and SIGTERM caught together (a terminal closing, a supervisor):
    the first one's handler ignored the second with SIG_IGN while it was caught already, and
    CPython printed "OSError: Signal 15 ignored due to race condition" as the run ended."""
    run = subprocess.run([sys.executable, "-c", TWO_AT_ONCE], env=checkout_env(), capture_output=True,
                         timeout=60, preexec_fn=_as_a_terminal_starts_it)
    assert (run.returncode, run.stderr, run.stdout.split()) == (0, b"", [str(128 + signal.SIGHUP).encode()])


def test_an_interrupt_met_while_a_class_is_made_is_the_interrupt():
    """Campaign 15, R10: a signal met during an import, while a class was made, came out as
    "RuntimeError: Error calling __set_name__ ..." (its cause, the interrupt): an internal error."""
    def wrapped(interrupt: BaseException) -> RuntimeError:
        try:
            try:
                raise interrupt
            except BaseException as cause:
                raise RuntimeError("Error calling __set_name__") from cause
        except RuntimeError as error:
            return error

    terminated = Terminated(signal.SIGTERM)
    assert interrupt_behind(wrapped(terminated)) is terminated
    assert interrupt_behind(wrapped(ValueError())) is None
    assert interrupt_behind(ValueError()) is None


PLANTED = "import os, sys\nopen(os.path.join({marks!r}, 'ran-%d' % os.getpid()), 'w').write(' '.join(sys.argv))\n"


def test_a_group_sighup_runs_nothing_the_working_folder_holds(tmp_path):
    """Campaign 14, R01: a closed terminal's SIGHUP to the group killed multiprocessing's resource
    tracker (it ignores SIGINT and SIGTERM only); the ending run let go of its semaphores and
    multiprocessing started the tracker again as `python -c`, whose path begins with the working
    folder: the project's `multiprocessing/__init__.py` ran. Now the tracker holds the signal back,
    and no Python process of the run imports from its working folder."""
    marks = tmp_path / "marks"
    marks.mkdir()
    planted = {"multiprocessing/__init__.py": PLANTED.format(marks=str(marks))}
    with check_at_work(tmp_path, stderr=subprocess.PIPE, modules=400, own_group=True, planted=planted) as (run, marker):
        os.killpg(run.pid, signal.SIGHUP)
        _, err = run.communicate(timeout=60)
        assert (run.returncode, err) == (128 + signal.SIGHUP, b"")
        assert _until(lambda: not _marked(marker), 5), f"left running: {_marked(marker)}"
    assert list(marks.iterdir()) == []


@pytest.mark.parametrize("ending", ["SIGTERM", "exit"])
def test_the_language_server_stopped_while_it_checks_ends_at_once(tmp_path, ending):
    """Campaign 14, R03: pygls took the interrupt for a request to stop, then waited for the check
    at work in its threads (35-46 s on a 160-file workspace) and ended with status 0; after the
    protocol's `shutdown` and `exit`, multiprocessing's exit handler waited for that check's
    workers (26-48 s)."""
    project = write(tmp_path / "project", {
        "pyproject.toml": f'[project]\nname = "p"\n[tool.sglang-contracts]\nold = "{OLD}"\nnew = "{NEW}"\n',
        "app/__init__.py": "", **{f"app/m{n}.py": MODULE * 4 for n in range(400)}})
    run_id = uuid.uuid4().hex
    marker = f"SGLANG_CONTRACTS_TEST_RUN={run_id}"
    env = _users_env(SGLANG_CONTRACTS_CACHE=str(tmp_path / "cache"), SGLANG_CONTRACTS_TEST_RUN=run_id)
    server = subprocess.Popen([sys.executable, "-m", "sglang_contracts", "lsp"], cwd=project, env=env,
                              preexec_fn=_as_a_terminal_starts_it,
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        uri = (project / "app" / "m0.py").as_uri()
        server.stdin.write(lsp_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                   "params": {"processId": None, "rootUri": project.as_uri(), "capabilities": {}}})
                           + lsp_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
                           + lsp_frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
                               "uri": uri, "languageId": "python", "version": 1, "text": MODULE}}}))
        server.stdin.flush()
        # a worker: the child of the fork server, the server's child
        assert _until(lambda: any(parent not in (server.pid, os.getpid()) for parent in _marked(marker).values()), 60), \
            "no worker started"
        if ending == "exit":
            server.stdin.write(lsp_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
                               + lsp_frame({"jsonrpc": "2.0", "method": "exit"}))
            server.stdin.flush()
        else:
            server.send_signal(signal.SIGTERM)
        try:
            _, err = server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the server did not end within 30 s of {ending}")
        assert (server.returncode, err) == (0 if ending == "exit" else 128 + signal.SIGTERM, b"")
        assert _until(lambda: not _marked(marker), 5), f"left running: {_marked(marker)}"
    finally:
        server.kill()
        for pid in _marked(marker):
            os.kill(pid, signal.SIGKILL)


def test_a_check_too_short_of_open_files_for_the_pool_runs_its_jobs_itself(tmp_path):
    """Under `ulimit -n 10` or 20 a check large enough for the pool ended with "internal error:
    OSError: [Errno 24] Too many open files" or a BrokenProcessPool, and a traceback from
    multiprocessing's exit handler (campaign 14, R07): its workers, or the forked copy's pipes,
    found no descriptor. It now runs what it cannot hand out itself, and reports as it does
    without the limit."""
    import resource

    project = write(tmp_path / "project", {"app/__init__.py": "", "app/gone.py": REMOVED_NAME,
                                           **{f"app/m{n}.py": MODULE for n in range(80)}})
    env = _users_env(SGLANG_CONTRACTS_CACHE=str(tmp_path / "cache"))
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)

    def check(limit: int | None) -> tuple[int, str, str]:
        def limited() -> None:
            if limit is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))

        run = subprocess.run([sys.executable, "-m", "sglang_contracts", "check", str(project), "--old", str(OLD),
                              "--new", str(NEW), "--no-cache"], env=env, capture_output=True, text=True,
                             timeout=300, preexec_fn=limited)
        return run.returncode, run.stdout, run.stderr

    unlimited = check(None)
    assert unlimited[0] == 1 and "app/gone.py:1:" in unlimited[1] and unlimited[2] == ""
    for limit in (10, 20):
        assert check(limit) == unlimited, limit


SHORT_OF_PIPES = """
import os, resource
from sglang_contracts.infra.parallel import start_forked
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

def every_descriptor_left():
    taken = []
    try:
        while True:
            taken.append(os.dup(0))
    except OSError:
        return taken

held = every_descriptor_left()
for fd in held[:3]:  # room for one of the copy's two pipes, not both
    os.close(fd)
wait = start_forked(lambda: 1)
print(wait(None), len(every_descriptor_left()))
"""


def test_a_copy_that_finds_no_descriptor_for_its_pipes_leaves_the_work_to_its_maker() -> None:
    """The forked copy's pipes were made before its fallback: out of descriptors (`ulimit -n`) they
    raised EMFILE, "internal error" for the run (campaign 14, R07). No copy now, and no descriptor
    kept: the caller does the work."""
    run = subprocess.run([sys.executable, "-c", SHORT_OF_PIPES], env=checkout_env(), capture_output=True, text=True,
                         timeout=60)
    assert (run.returncode, run.stdout, run.stderr) == (0, "None 3\n", "")


REFUSED_THREADS = """
import contextlib, sys, threading
from sglang_contracts.infra.parallel import map_jobs, run_pool
start = threading.Thread.start

def start_unless_refused(thread):  # "feeder": the thread feeding the workers; "every": any thread
    if sys.argv[1] == "every" or thread.name == "QueueFeederThread":
        raise RuntimeError("can't start new thread")
    start(thread)

threading.Thread.start = start_unless_refused
with run_pool() if sys.argv[2] == "run" else contextlib.nullcontext():
    print(map_jobs(len, ["a" * n for n in range(40)], 10 ** 6, workers=2))
"""


@pytest.mark.parametrize("refused", ["feeder", "every"])
@pytest.mark.parametrize("pool", ["run", "stage"])
def test_a_pool_refused_its_threads_runs_its_jobs_here(refused, pool) -> None:
    """Under `ulimit -v 300000` the pool's executor thread could not start the thread that feeds
    its workers: its traceback went to standard error and the run waited for good for its jobs'
    results (CPython 3.11); refused the executor thread itself, the first job raised
    "can't start new thread" (campaign 15, R06). A pool the system refuses a thread is not used:
    its jobs run in this process, and nothing is said."""
    try:
        run = subprocess.run([sys.executable, "-c", REFUSED_THREADS, refused, pool], env=checkout_env(),
                             capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the jobs were waited for for good")
    assert (run.returncode, run.stdout, run.stderr) == (0, f"{list(range(40))}\n", "")


COPY_UNREAD = """
import os, threading
from sglang_contracts.infra.parallel import start_forked

def refused(thread):
    raise RuntimeError("can't start new thread")

threading.Thread.start = refused
wait = start_forked(lambda: 1)
try:
    os.waitpid(-1, os.WNOHANG)
    left = "a copy left"
except ChildProcessError:
    left = "no copy left"
print(wait(None), left)
"""


def test_a_copy_whose_result_no_thread_can_read_leaves_the_work_to_its_maker() -> None:
    """The thread that reads the forked copy's result could not start (`ulimit -v`): "can't start
    new thread" ended the run as an internal error, the copy left at work (campaign 15, R06). The
    copy is stopped at once, and the caller does the work."""
    run = subprocess.run([sys.executable, "-c", COPY_UNREAD], env=checkout_env(), capture_output=True, text=True,
                         timeout=60)
    assert (run.returncode, run.stdout, run.stderr) == (0, "None no copy left\n", "")


TRACKER_STDERR = """
import os
from multiprocessing import resource_tracker
from sglang_contracts.infra import parallel
pool = parallel._new_pool(1)
print(os.readlink(f"/proc/{resource_tracker._resource_tracker._pid}/fd/2"))
pool.shutdown()
"""


def test_the_resource_tracker_says_nothing_on_the_run_s_standard_error(tmp_path):
    """A run ends without teardown, and the resource tracker cleaning after it warned now and
    then, on the run's standard error, of a semaphore it could not unlink (campaign 15, R10)."""
    run = subprocess.run([sys.executable, "-c", TRACKER_STDERR], env=_users_env(), capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert (run.returncode, run.stdout.strip()) == (0, os.devnull), run.stderr
