"""Shared fixtures."""

from __future__ import annotations

import ctypes
import dataclasses
import gc
import hashlib
import json
import os
import shutil
import stat
import tempfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

# The error boundary turns a bug into an SGC001 finding and goes on; the tests want the
# traceback instead, so that it hides nothing from them (tests of the boundary unset this).
os.environ.setdefault("SGLANG_CONTRACTS_DEBUG", "1")
# The dependency closure reads no package index unless a test names one (a local index it
# writes, or the real one in tests/real/test_closure.py): the suite's other bumps stay offline.
os.environ["SGLANG_CONTRACTS_PACKAGE_INDEX"] = "none"
# nor PyTorch's index of a CUDA build (closure/flavour.py)
os.environ["SGLANG_CONTRACTS_CUDA_BUILD_INDEX"] = "none"
# Real releases and downstream sdists are downloaded into the test sessions' own cache, never
# the user's: 400 MB of wheels a suite fetches are not theirs to keep, and a user's cache must
# not decide what a test sees. pip keeps no copy. It is outside the checkout, whose paths the
# reports show relative to the working folder. SGLANG_CONTRACTS_TEST_CACHE names another.


def _test_cache() -> Path:
    if os.environ.get("SGLANG_CONTRACTS_TEST_CACHE"):
        return Path(os.environ["SGLANG_CONTRACTS_TEST_CACHE"])
    folder = Path(tempfile.gettempdir()) / f"sglang-contracts-test-cache-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        status = os.lstat(folder)
        if stat.S_ISDIR(status.st_mode) and status.st_uid == os.getuid() and not status.st_mode & 0o077:
            return folder  # ours alone: kept between sessions
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix="sglang-contracts-test-cache-"))  # another user's name: one of our own


TEST_CACHE = _test_cache()
os.environ["SGLANG_CONTRACTS_CACHE"] = str(TEST_CACHE)
os.environ["PIP_NO_CACHE_DIR"] = "1"

from sglang_contracts.infra.cache import cache_root  # noqa: E402
from sglang_contracts.cli import main  # noqa: E402
from sglang_contracts.check.runner import CheckOptions, run_check  # noqa: E402
from tests.helpers import NEW, OLD, PROJECT  # noqa: E402

# -- the session's memory ------------------------------------------------------------------------
# `main(["check", ...])` sets the cyclic collector's thresholds of a process that ends with its
# run for good (infra/collector.one_run_process: a full collection every 180 million
# allocations), and a run's models and facts are freed by that collector, not by reference
# counting (their caches hold bound methods of their owners). In a test session, which runs
# hundreds of checks, the garbage of every run then stayed: the pytest process grew to 930 MB,
# and every forked copy a check makes of it (contracts/base.py run_checks_in_two) counted as
# much again. Each test starts with the default thresholds, and a test after which the process
# grew by COLLECT_GROWTH is followed by a full collection, with the freed memory handed back.
DEFAULT_GC_THRESHOLDS = gc.get_threshold()
COLLECT_GROWTH = 48 << 20
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_LIBC = ctypes.CDLL(None) if os.name == "posix" else None
_collected_at = [0]


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):  # not Linux: collect after every test that may need it
        return 1 << 62


@pytest.fixture(autouse=True)
def _git_asked_afresh():
    """A git that did not answer in one test (a FIFO made it wait) is asked again in the next:
    the process's memo of it (gitsafety) is the test's, not the session's."""
    from sglang_contracts.infra import gitsafety

    yield
    gitsafety._UNANSWERED.clear()


@pytest.fixture(autouse=True)
def _collected_after_the_test():
    from sglang_contracts.closure import source as unreachable_indexes
    from sglang_contracts.infra import cache, collector

    remembering = cache._REMEMBERED is not None
    yield
    # A resident engine or a language server keeps every record it decodes for the rest of its
    # process (cache.remember_records): in a test session, which is not theirs, every later run
    # on the real releases then kept its records too (300 MB and more by the end).
    if cache._REMEMBERED is not None and not remembering:
        cache._REMEMBERED = None
        cache._DECODED.clear()
    if gc.get_threshold() != DEFAULT_GC_THRESHOLDS:
        gc.set_threshold(*DEFAULT_GC_THRESHOLDS)
    # `main(["check", ...])` marks the process as one that ends with its run, whose re-checks
    # then freeze what they read (collector.kept_to_the_end): never in a test session.
    collector._ONE_RUN[0] = False
    if gc.get_freeze_count():
        gc.unfreeze()
    # An index one test found unreachable is another test's to ask (closure/source.py UNREACHABLE_MEMORY).
    unreachable_indexes._UNREACHABLE.clear()
    if _resident_bytes() > _collected_at[0] + COLLECT_GROWTH:
        gc.collect()
        if _LIBC is not None and hasattr(_LIBC, "malloc_trim"):
            _LIBC.malloc_trim(0)
        _collected_at[0] = _resident_bytes()


# -- pytest-xdist: which tests share a worker ---------------------------------------------------
# `-n 2 --dist loadgroup` (pyproject.toml's addopts) runs the suite in two worker processes. The
# tests of one module on the real releases (those that take the session's cache, real_cache) run
# in one worker, one after the other, so that what their module fixtures make is made once; so
# do the tests of a module whose fixtures outlive one test. Every other test goes to whichever
# worker is free. The real releases' modules are handed out first (ByGroup): they are the
# longest units (a minute or two each), and one left for the end ran alone while the other
# worker idled. In one group they were the suite's floor: 6 of its 8.7 minutes on one worker.
# pytest-xdist's own loadgroup reads `xdist_group` marks into the node ids, which pytest 9.2
# no longer lets a plugin change: the workers write each test's group to a file instead, and
# the controller's scheduler reads them.
REAL_RELEASES_GROUP = "real-releases"
# The tests that compare with full_run_findings, which one worker computes once for them all.
FULL_RUNS_GROUP = f"{REAL_RELEASES_GROUP}:full-runs"
GROUPS_FOLDER = "sglang_contracts_groups"  # the workers' input naming the folder of the files


def worker_group(item) -> str | None:
    """The group of tests `item` runs with in one worker, or None (any worker)."""
    if "full_run_findings" in item.fixturenames:
        return FULL_RUNS_GROUP
    if "real_cache" in item.fixturenames:
        return f"{REAL_RELEASES_GROUP}:{item.nodeid.split('::', 1)[0]}"
    info = getattr(item, "_fixtureinfo", None)
    for definitions in (info.name2fixturedefs.values() if info is not None else ()):
        if definitions and definitions[-1].scope in ("module", "class", "package"):
            return item.nodeid.split("::", 1)[0]
    return None


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by the marks
def pytest_collection_modifyitems(config, items) -> None:
    unmarked = [item.nodeid for item in items if "real_cache" in item.fixturenames and not item.get_closest_marker("network")]
    if unmarked:  # so that `-m "not network"` is an offline run
        raise pytest.UsageError("tests that take real_cache (real downloads) must be marked network: " + ", ".join(unmarked))
    folder = getattr(config, "workerinput", {}).get(GROUPS_FOLDER)
    if folder is None:
        return
    groups = {item.nodeid: group for item in items if (group := worker_group(item)) is not None}
    target = Path(folder) / f"{config.workerinput['workerid']}.json"
    target.with_suffix(".tmp").write_text(json.dumps(groups))
    target.with_suffix(".tmp").replace(target)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    config = node.config
    if not hasattr(config, "_sglang_contracts_groups"):
        config._sglang_contracts_groups = tempfile.mkdtemp(prefix="sglang-contracts-test-groups-")
    node.workerinput[GROUPS_FOLDER] = config._sglang_contracts_groups


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        """Load scheduling of units: a group's tests (worker_group), or one test."""

        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # first asked once every worker has collected (and written)
                self.groups = {}
                for written in sorted(Path(config._sglang_contracts_groups).glob("*.json")):
                    self.groups.update(json.loads(written.read_text()))
            return self.groups.get(nodeid, nodeid)

        ordered = False

        def _assign_work_unit(self, node) -> None:
            # Ordered before the first unit is handed out: LoadScopeScheduling.schedule hands each
            # worker its first two units as soon as it has filled the queue (by their count of tests).
            if not self.ordered:
                self.ordered = True
                self.first_the_longest()
            super()._assign_work_unit(node)

        def first_the_longest(self) -> None:
            """Every real-release module before the rest, and the full runs' group first of all: its
            three edit tests on sglang-omni are the longest unit, and one started late ran on alone."""
            real = [scope for scope in self.workqueue if scope.startswith(REAL_RELEASES_GROUP + ":")]
            real.sort(key=lambda scope: scope != FULL_RUNS_GROUP)  # stable: the rest keep xdist's order
            for scope in real[::-1]:
                self.workqueue.move_to_end(scope, last=False)

    return ByGroup(config, log)


def pytest_unconfigure(config) -> None:
    folder = getattr(config, "_sglang_contracts_groups", None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def real_cache() -> Path:
    """The test session's cache (TEST_CACHE): real downloads land here once and are reused offline."""
    assert cache_root() == TEST_CACHE
    return TEST_CACHE


def _content_digest(root: Path) -> str:
    """A digest of every file below `root`, by relative path and bytes (not times: a full run's
    findings are a function of what the files hold)."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@pytest.fixture(scope="session")
def full_run_findings(real_cache: Path, tmp_path_factory) -> Callable[[Path, CheckOptions], list[dict]]:
    """The findings (to_json) of a full run of a project against real releases: nothing replayed
    or reused, in a cache of the session's own that holds only links to real_cache's wheels (cold
    for the first run of a release pair). Computed once per (project content, options): the edit
    tests of tests/check/test_incremental.py and tests/resident/test_resident.py bring
    sglang-omni 0.1.9 through the same states on the same bump, and each compared its own full
    run of every state (a fifth of the suite's time). They run in one worker (FULL_RUNS_GROUP)."""
    cache = tmp_path_factory.mktemp("full-runs")
    (cache / "wheels").mkdir()
    computed: dict[tuple[str, str], list[dict]] = {}

    def findings(project: Path, options: CheckOptions) -> list[dict]:
        options = dataclasses.replace(options, replay=False, cache_dir=cache)
        key = (_content_digest(project), repr(options))
        if key not in computed:
            for wheel in (real_cache / "wheels").glob("*.whl"):
                if not (cache / "wheels" / wheel.name).exists():
                    (cache / "wheels" / wheel.name).symlink_to(wheel)
            computed[key] = [d.to_json() for d in run_check([project], options).diagnostics]
        return computed[key]

    return findings


@dataclass
class Run:
    status: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()

    @property
    def prefixes(self) -> list[str]:
        """`path:line:col: CODE` of each reported line, in output order."""
        return [" ".join(line.split(" ", 2)[:2]) for line in self.lines]

    def message(self, prefix: str) -> str:
        """The message of the line `prefix` starts (without the `warning: `/`info: ` a
        non-error's message starts with in text output)."""
        (line,) = [line for line in self.lines if line.startswith(prefix + " ")]
        rest = line[len(prefix) + 1 :]
        for severity in ("warning: ", "info: "):
            rest = rest.removeprefix(severity)
        return rest


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("SGLANG_CONTRACTS_CACHE", str(cache))
    return cache


@pytest.fixture
def check(capsys, monkeypatch, cache_dir):
    """Run `sglang-contracts check ARGS --old OLD --new NEW` in-process from the project folder."""
    monkeypatch.chdir(PROJECT)

    def run(*args: str, old: Path | None = OLD, new: Path | None = NEW, cwd: Path | None = None) -> Run:
        """None for `old` or `new` leaves the flag out."""
        if cwd is not None:
            monkeypatch.chdir(cwd)
        argv = ["check", *args] + (["--new", str(new)] if new is not None else [])
        argv += ["--old", str(old)] if old is not None else []
        status = main(argv)
        out, err = capsys.readouterr()
        return Run(status, out, err)

    return run


def wheel_of(tree: Path, folder: Path) -> None:
    """A wheel of a fixture upstream tree, with its dependencies as Requires-Dist."""
    project = tomllib.loads((tree / "pyproject.toml").read_text())["project"]
    version = project["version"]
    dist_info = f"sglang-{version}.dist-info"
    requires = "".join(f"Requires-Dist: {dependency}\n" for dependency in project.get("dependencies", []))
    with zipfile.ZipFile(folder / f"sglang-{version}-py3-none-any.whl", "w") as archive:
        for path in sorted((tree / "sglang").rglob("*.py")):
            archive.write(path, path.relative_to(tree).as_posix())
        archive.writestr(f"{dist_info}/METADATA", f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n{requires}")
        archive.writestr(f"{dist_info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr(f"{dist_info}/RECORD", "")


@pytest.fixture
def published(tmp_path: Path, monkeypatch) -> tuple[Path, CheckOptions]:
    """The fixture project, and options checking it against the fixture releases published as
    0.9.0 and 0.9.1 on a local package index (pip runs for real, offline)."""
    links = tmp_path / "links"
    links.mkdir()
    for tree in (OLD, NEW):
        wheel_of(tree, links)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    return project, CheckOptions(old="0.9.0", new="0.9.1", cache_dir=tmp_path / "cache", replay=True)
