"""The checks on two cores (contracts/base.py run_checks_in_two): a forked copy of the run
checks the rules declared Process.COPY beside the first process; what it finds, and the
problems it meets, are the report's as if one process had run every check."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import NEW, OLD, PROJECT
from sglang_contracts.contracts import base
from sglang_contracts.infra import parallel
from sglang_contracts.check.runner import CheckOptions, Fresh, run_check

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")


class OneProcess(Fresh):
    checks_in_two = False


def report(project: Path, keep: Fresh) -> list[str]:
    result = run_check([project], CheckOptions(old=str(OLD), new=str(NEW), use_cache=False, workers=1), keep)
    return [f"{d.path}:{d.line}:{d.col}: {d.code} {d.severity} {d.message}" for d in result.diagnostics]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return Path(shutil.copytree(PROJECT, tmp_path / "project"))


@pytest.fixture(autouse=True)
def copied_whatever_its_size(monkeypatch) -> None:
    """The fixture project is far below COPY_WORTH: its checks are shared with a copy here all the same."""
    monkeypatch.setattr(base, "COPY_WORTH", 0)


def second_process_codes() -> list[str]:
    import sglang_contracts.contracts  # noqa: F401  (registers every check)

    return sorted(code for code in base.CHECKS if code in base.IN_COPY)


def test_both_halves_hold_real_checks() -> None:
    second = second_process_codes()
    assert {"SGC101", "SGC404", "SGC705", "SGC706"} <= set(second)
    assert {"SGC201", "SGC303", "SGC312", "SGC1101"}.isdisjoint(second)


def test_the_fixture_report_is_the_one_process_report(project: Path) -> None:
    one = report(project, OneProcess())
    assert any(" SGC101 " in line for line in one) and any(" SGC303 " in line for line in one)
    assert report(project, Fresh()) == one


def replaced(monkeypatch, code: str, check) -> None:
    """`check` in place of a rule's, counted among the same process's rules."""
    check.__module__ = base.CHECKS[code].__module__
    monkeypatch.setitem(base.CHECKS, code, check)


def test_a_copy_that_dies_leaves_its_checks_to_the_first_process(monkeypatch, project: Path) -> None:
    one = report(project, OneProcess())
    real = base.CHECKS["SGC101"]
    ran_here: list[bool] = []

    def dies_in_the_copy(ctx):
        if parallel._RUN.forked_copy:
            os._exit(3)
        ran_here.append(True)
        return real(ctx)

    replaced(monkeypatch, "SGC101", dies_in_the_copy)
    assert report(project, Fresh()) == one
    assert ran_here == [True]  # run here once the copy had failed (and never in this process before)


def test_a_rule_that_fails_in_the_copy_is_reported_as_in_one_process(monkeypatch, project: Path) -> None:
    monkeypatch.delenv("SGLANG_CONTRACTS_DEBUG", raising=False)  # the boundary reports, not raises

    def fails(ctx):
        raise RuntimeError("the rule's own bug")

    replaced(monkeypatch, "SGC705", fails)
    one = report(project, OneProcess())
    assert any(" SGC001 " in line and "SGC705" in line for line in one)
    assert report(project, Fresh()) == one


def loading_in_the_rule(monkeypatch, module: str) -> list[bool]:
    """SGC101 made to load the new release's `module` first; the list it returns is appended to
    (with whether it ran in the forked copy) in the process where the rule runs."""
    loaded_in: list[bool] = []
    real = base.CHECKS["SGC101"]

    def loads_it(ctx):
        loaded_in.append(parallel._RUN.forked_copy)
        ctx.new.module(module)
        return real(ctx)

    replaced(monkeypatch, "SGC101", loads_it)
    return loaded_in


def test_an_upstream_module_only_the_copy_loads_is_reported_in_the_first(monkeypatch, project: Path, tmp_path: Path) -> None:
    new = Path(shutil.copytree(NEW, tmp_path / "new"))
    os.mkfifo(new / "sglang" / "srt" / "damaged_only_here.py")  # unreadable, even as root
    loaded_in = loading_in_the_rule(monkeypatch, "sglang.srt.damaged_only_here")
    result = run_check([project], CheckOptions(old=str(OLD), new=str(new), use_cache=False, workers=1), Fresh())
    assert loaded_in == []  # appended to in the copy only: the rule ran there
    assert [name for name, *_ in result.new.problems()] == ["sglang.srt.damaged_only_here"]


def test_a_module_the_stack_breaks_that_only_the_copy_loads_is_reported_in_the_first(monkeypatch, project: Path,
                                                                                      tmp_path: Path) -> None:
    """The copy reads a module the project's patch stack leaves unparsable as released: the first
    process reads it so too, and reports the patch (UpstreamModel.read_as_released)."""
    releases = [Path(shutil.copytree(tree, tmp_path / name)) for tree, name in ((OLD, "old"), (NEW, "new"))]
    for release in releases:
        (release / "sglang" / "srt" / "patched_here.py").write_text("def helper():\n    return 1\n")
    shutil.rmtree(project / "docker")  # the fixture's own stack: this one instead
    (project / "docker").mkdir()
    (project / "docker" / "Dockerfile").write_text("COPY docker/sglang.patch /sgl-workspace/sglang/\n"
                                                   "RUN cd /sgl-workspace/sglang && git apply sglang.patch\n")
    (project / "docker" / "sglang.patch").write_text(
        "--- a/python/sglang/srt/patched_here.py\n+++ b/python/sglang/srt/patched_here.py\n"
        "@@ -1,2 +1,3 @@\n+\0import os\n def helper():\n     return 1\n")
    loaded_in = loading_in_the_rule(monkeypatch, "sglang.srt.patched_here")
    result = run_check([project], CheckOptions(old=str(releases[0]), new=str(releases[1]), use_cache=False, workers=1),
                       Fresh())
    assert loaded_in == []  # appended to in the copy only: the rule ran there
    assert list(result.new.read_as_released) == ["sglang.srt.patched_here"]
    assert [(d.path, d.line) for d in result.diagnostics if d.code == "SGC000" and d.path.startswith("docker/")] \
        == [("docker/sglang.patch", 1)]


def test_a_progress_lock_held_at_the_fork_does_not_stall_the_copy(monkeypatch, project: Path) -> None:
    """The display's lock may be held by another thread when the copy is made (rich refreshes
    from a thread of its own): the copy shows nothing and takes no lock of the display."""
    import signal
    import threading

    from sglang_contracts.infra import progress

    one = report(project, OneProcess())
    real_check, real_fork = base.CHECKS["SGC101"], os.fork

    def shows_progress(ctx):
        with progress.task("in the copy"):
            return real_check(ctx)

    def fork_while_another_thread_holds_the_lock() -> int:
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with progress._lock:
                held.set()
                release.wait()

        holder = threading.Thread(target=hold)
        holder.start()
        held.wait()
        pid = real_fork()
        if pid:
            release.set()
            holder.join()
        return pid

    replaced(monkeypatch, "SGC101", shows_progress)
    monkeypatch.setattr(os, "fork", fork_while_another_thread_holds_the_lock)
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("the copy stalled")))
    signal.alarm(60)
    try:
        with progress.showing(True):
            assert report(project, Fresh()) == one
    finally:
        signal.alarm(0)


def test_a_stalled_copy_is_stopped_and_its_checks_run_here(monkeypatch, project: Path) -> None:
    import time

    one = report(project, OneProcess())
    real = base.CHECKS["SGC705"]

    def stalls_in_the_copy(ctx):
        while parallel._RUN.forked_copy:
            time.sleep(1)
        return real(ctx)

    replaced(monkeypatch, "SGC705", stalls_in_the_copy)
    monkeypatch.setattr(base, "COPY_GRACE", 1.0)
    started = time.monotonic()
    assert report(project, Fresh()) == one
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("worth", [0, None])
def test_a_project_too_small_to_gain_from_a_copy_is_checked_in_one_process(monkeypatch, project: Path,
                                                                            worth) -> None:
    """Below COPY_WORTH of text in the files that hold contracts, a fork and its result cost
    what the second core saves (60 ms of each check of the fixture in a 600 MB process): no
    copy is made, and the report is the same."""
    one = report(project, OneProcess())
    size = sum(path.stat().st_size for path in project.rglob("*.py"))
    monkeypatch.setattr(base, "COPY_WORTH", size + 1 if worth is None else worth)
    forked = []
    monkeypatch.setattr(base, "start_forked", lambda function: forked.append(True) or parallel.start_forked(function))
    assert report(project, Fresh()) == one
    assert forked == ([] if worth is None else [True])
