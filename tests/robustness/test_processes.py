"""The processes a run starts (its pool's workers, the fork server, the resource tracker) end
with it, however it ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from tests.helpers import NEW, OLD, checkout_env
from tests.helpers import write_tree as write

# Enough source for the scan to go to the pool (parallel.PARALLEL_MIN_BYTES), and to last a while.
MODULE = "from sglang.srt.layers.linear import thing\n\n" + "".join(
    f"def f{i}(x):\n    return thing(x) + {i}\n\n" for i in range(300))


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


@contextmanager
def check_at_work(tmp_path: Path, stderr: int = subprocess.DEVNULL,
                  modules: int = 80) -> Iterator[tuple[subprocess.Popen, str]]:
    """A check of a project large enough for the pool, once a worker has started; the marker in
    the environment of every process it starts. What it started is killed at the end."""
    project = write(tmp_path / "project", {"app/__init__.py": "", **{f"app/m{n}.py": MODULE for n in range(modules)}})
    run_id = uuid.uuid4().hex
    marker = f"SGLANG_CONTRACTS_TEST_RUN={run_id}"  # in the environment of every process the run starts
    env = checkout_env(SGLANG_CONTRACTS_CACHE=str(tmp_path / "cache"), SGLANG_CONTRACTS_TEST_RUN=run_id)
    run = subprocess.Popen([sys.executable, "-m", "sglang_contracts", "check", str(project), "--old", str(OLD),
                            "--new", str(NEW)], env=env, stdout=subprocess.DEVNULL, stderr=stderr)
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
