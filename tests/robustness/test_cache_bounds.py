"""The cache's records of edits are bounded (infra/cache.py BOUNDED_KINDS, evict_over_bounds):
every edit adds a run's findings and the edited file's facts, and an editor session or a
pre-commit daemon made the cache grow without end (campaign 9, R18). What the next run reads
is kept, and a record removed under a reader is a miss there."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sglang_contracts.check.runner import CheckOptions, run_check
from sglang_contracts.infra import cache as cache_module
from sglang_contracts.infra.cache import RecordCache, evict_over_bounds
from tests.helpers import write_tree

EDITS = 8
HELPERS = 4  # files the edits leave alone: their facts are read by every run


def folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*.record"))


@pytest.fixture()
def edited_project(tmp_path: Path) -> tuple[Path, CheckOptions]:
    """R18's project: one file of 200 findings that each edit appends a comment to, beside files
    no edit changes, checked against two directory releases."""
    for version, a_py in (("1.0.0", "x = 1\ndef f(a, b=1):\n    return a\n"), ("1.0.1", "def f(a):\n    return a\n")):
        srt = tmp_path / version / "sglang" / "srt"
        srt.mkdir(parents=True)
        (srt.parent / "__init__.py").write_text("from sglang.version import __version__\n")
        (srt.parent / "version.py").write_text(f'__version__ = "{version}"\n')
        (srt / "a.py").write_text(a_py)
    project = tmp_path / "p"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (project / "m.py").write_text("from sglang.srt.a import x, f\n"
                                  + "".join(f"def g{j}(a):\n    return f(a, b={j})\n" for j in range(200)))
    for number in range(HELPERS):
        helper = f"from sglang.srt.a import f\n\ndef h(a):\n    return f(a, b={number})\n"
        (project / f"h{number}.py").write_text(helper)
    return project, CheckOptions(old=str(tmp_path / "1.0.0"), new=str(tmp_path / "1.0.1"), cache_dir=tmp_path / "cache",
                                 replay=True)


def findings(result) -> list[dict]:
    return [d.to_json() for d in result.diagnostics]


def edit(project: Path, number: int) -> None:
    with open(project / "m.py", "a") as handle:
        handle.write(f"# edit {number}\n")


def test_edits_leave_the_cache_under_its_bounds_and_the_next_runs_what_they_read(edited_project, monkeypatch) -> None:
    project, options = edited_project
    first = run_check([project], options)
    assert first.replayed_files_with_contracts is None and len(first.diagnostics) >= 200
    cache = options.cache_dir
    # Bounds of a few records: the first run's run record, half the project's facts.
    bounds = {"runs": 2 * folder_bytes(cache / "runs"), "project": folder_bytes(cache / "project") // 2,
              "incremental": 2 * folder_bytes(cache / "incremental")}
    monkeypatch.setattr(cache_module, "BOUNDED_KINDS", bounds)
    live = folder_bytes(cache / "project")
    for number in range(EDITS):
        edit(project, number)
        result = run_check([project], options)
        assert result.replayed_files_with_contracts is None
        for kind, bound in bounds.items():
            # A bound, a sweep's worth written past it, and what the run used, which its own sweep
            # never removes: the facts of every file, and of the edited file as it was too (the plan
            # compares them: incremental.moved_since_recorded).
            limit = bound + bound // cache_module.SWEEP_AFTER + (2 * live if kind == "project" else bound)
            assert folder_bytes(cache / kind) <= limit, (number, kind)
    # Each edit added a run record and the edited file's facts: without a bound, EDITS of each.
    assert len(list((cache / "runs").rglob("*.record"))) < EDITS // 2
    # The next edit reads what the last run left: the unchanged files' facts (only m.py is
    # scanned again) and the incremental plan, with the findings a cold run finds.
    edit(project, EDITS)
    after = run_check([project], options)
    assert after.replayed_files_with_contracts is None and after.project.parsed == 1
    cold = run_check([project], dataclasses.replace(options, cache_dir=cache.parent / "cold"))
    assert findings(after) == findings(cold)
    # And a run of unchanged inputs replays the last run's findings.
    again = run_check([project], options)
    assert again.replayed_files_with_contracts is not None and findings(again) == findings(cold)


def test_an_editor_session_leaves_the_cache_under_its_bounds_and_the_facts_it_holds(edited_project,
                                                                                   monkeypatch) -> None:
    """The language server's engine: an edit's records are written, and the cache swept, once
    the answer is out; the unchanged files' facts, which its index holds and never asks the
    cache for again, are kept for the next run of a process of its own."""
    from sglang_contracts.resident.engine import ResidentEngine

    project, options = edited_project
    engine = ResidentEngine(collect_between=True)
    engine.check([project], options)
    engine.collect()
    cache = options.cache_dir
    live = folder_bytes(cache / "project")
    bounds = {"runs": 2 * folder_bytes(cache / "runs"), "project": live // 2,
              "incremental": 2 * folder_bytes(cache / "incremental")}
    monkeypatch.setattr(cache_module, "BOUNDED_KINDS", bounds)
    for number in range(EDITS):
        edit(project, number)
        assert engine.check([project], options).replayed_files_with_contracts is None
        engine.collect()
    for kind, bound in bounds.items():
        limit = bound + bound // cache_module.SWEEP_AFTER + (2 * live if kind == "project" else bound)
        assert folder_bytes(cache / kind) <= limit, kind
    edit(project, EDITS)
    after = run_check([project], options)
    assert after.replayed_files_with_contracts is None and after.project.parsed == 1
    cold = run_check([project], dataclasses.replace(options, cache_dir=cache.parent / "cold"))
    assert findings(after) == findings(cold)


def test_edits_of_a_directory_release_leave_its_records_under_their_bound(tmp_path: Path, monkeypatch) -> None:
    """A directory release (`--new ../sglang/python`, a tree the user edits) is read by its files'
    state: each save of an upstream module the project reads added that module's records to
    `upstream`, never removed (campaign 10, R10: 380 KB a save of a 4,500-line module). With the
    bounds of every folder the cache bounds made small, the edits leave `upstream` under its
    bound, and the run after them finds what a cold run finds."""
    for version in ("1.0.0", "1.0.1"):
        write_tree(tmp_path / version, {"sglang/__init__.py": "from sglang.version import __version__\n",
                                        "sglang/version.py": f'__version__ = "{version}"\n',
                                        "sglang/srt/a.py": "def f(a, b=1):\n    return a\n"})
    edited = tmp_path / "1.0.1/sglang/srt/a.py"
    edited.write_text("def f(a):\n    return a\n" + "".join(f"def g{n}(a, b=1, *, c=None):\n    return a + b\n"
                                                           for n in range(200)))
    project = write_tree(tmp_path / "p", {"pyproject.toml": '[project]\nname = "p"\n',
                                          "m.py": "from sglang.srt.a import f\nf(1, b=2)\n"})
    options = CheckOptions(old=str(tmp_path / "1.0.0"), new=str(tmp_path / "1.0.1"), cache_dir=tmp_path / "cache")
    first = findings(run_check([project], options))
    upstream = options.cache_dir / "upstream"
    live = folder_bytes(upstream)  # what one run reads and writes there, never swept by its own sweep
    bounds = {kind: 2 * max(folder_bytes(options.cache_dir / kind), 1) for kind in cache_module.BOUNDED_KINDS}
    monkeypatch.setattr(cache_module, "BOUNDED_KINDS", bounds)
    for number in range(EDITS):
        with open(edited, "a") as handle:
            handle.write(f"# edit {number}\n")
        assert findings(run_check([project], options)) == first
    bound = bounds.get("upstream", 2 * live)
    assert folder_bytes(upstream) <= bound + bound // cache_module.SWEEP_AFTER + live
    cold = run_check([project], dataclasses.replace(options, cache_dir=tmp_path / "cold"))
    assert findings(run_check([project], options)) == findings(cold) == first


def test_the_record_read_last_is_kept_over_one_written_later(tmp_path: Path, monkeypatch) -> None:
    """Eviction is by last use, across processes: a record read is marked used (its modification
    time), so an old record every run reads outlives a newer one no run reads again."""
    runs = RecordCache(tmp_path / "runs")
    read_again, not_read, written_later = ("aa" + "0" * 62, "bb" + "0" * 62, "cc" + "0" * 62)
    data = {"diagnostics": ["x" * 1000]}
    runs.put(read_again, data)
    runs.put(not_read, data)
    evict_over_bounds()  # that run's end
    day_ago = time.time() - 86400
    os.utime(runs._path(read_again), (day_ago, day_ago))
    os.utime(runs._path(not_read), (day_ago + 60, day_ago + 60))
    assert runs.get(read_again, dict) == data  # a later run reads the older one
    evict_over_bounds()
    monkeypatch.setattr(cache_module, "BOUNDED_KINDS", {"runs": 2000})  # under the two records
    # A third run writes a sweep's worth since the first run's sweep (a folder's first under this schema).
    later = {"diagnostics": ["y" * 150]}
    runs.put(written_later, later)
    evict_over_bounds()
    assert runs.get(read_again, dict) == data
    assert runs.get(not_read, dict) is None
    assert runs.get(written_later, dict) == later


def _earlier_records(cache: Path) -> list[Path]:
    """Records as the releases before schema 3 wrote them (<key[:2]>/<key>.json), in every
    folder of records: schema 1's plain JSON, schema 2's header line and JSON."""
    written = []
    for number, kind in enumerate(cache_module.RECORD_FOLDERS):
        for schema, key in ((1, f"{number:02x}" + "1" * 62), (2, f"{number:02x}" + "2" * 62)):
            body = '{"diagnostics":[]}'
            text = (f'{{"schema":1,"data":{body}}}' if schema == 1
                    else f"sglang-contracts-cache/2 {key} blake2b={cache_module.data_digest(body.encode())}\n{body}")
            write_tree(cache / kind, {f"{key[:2]}/{key}.json": text})
            written.append(cache / kind / key[:2] / f"{key}.json")
    return written


def test_the_first_run_removes_the_records_an_earlier_schema_left(edited_project) -> None:
    """Records were `<key>.json` before schema 3: the sweep counted and removed `*.record` files
    only, and a cache an earlier release wrote kept its records, never read again, outside every
    bound. The first run of this schema that writes in a bounded folder sweeps it of them (and of
    that schema's count of bytes), and leaves alone what is no record: a wheel's kept directory
    (plain JSON), a JSON file outside the folders of keys."""
    project, options = edited_project
    cache = options.cache_dir
    earlier = _earlier_records(cache)
    for kind in cache_module.BOUNDED_KINDS:  # a count of bytes an earlier schema wrote, far from a sweep
        (cache / kind / ".sglang-unswept").write_text("0")
    not_records = {"wheels/.sglang-1.0.0-py3-none-any.whl.directory": '{"stamp":"1 2"}', "wheels/ab/ab.json": "{}",
                   "runs/notes.json": "{}"}
    write_tree(cache, not_records)
    run_check([project], options)
    bounded = [path for path in earlier if path.parent.parent.name in cache_module.BOUNDED_KINDS]
    assert bounded and not [path for path in bounded if path.exists()]
    assert not list(cache.glob("*/.sglang-unswept"))
    assert all((cache / relpath).read_text() == text for relpath, text in not_records.items())
    assert folder_bytes(cache / "runs") > 0  # the run's own records kept


SWEEPER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from sglang_contracts.infra import cache
    cache.BOUNDED_KINDS = {"runs": 0}
    runs = cache.RecordCache(Path(sys.argv[1]))
    for number in range(int(sys.argv[2])):
        runs.put(f"{number % 256:02x}" + "f" * 62, {"n": number})
        cache.evict_over_bounds()  # every record but the one just written removed, every time
""")


def test_records_removed_under_a_reader_are_misses(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    runs = RecordCache(folder)
    keys = [f"{number:02x}" + "0" * 62 for number in range(64)]
    data = {"diagnostics": list(range(200))}
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), PYTHONDONTWRITEBYTECODE="1")
    sweeper = subprocess.Popen([sys.executable, "-c", SWEEPER, str(folder), "300"], env=environment,
                               stderr=subprocess.PIPE, text=True)
    read = 0
    try:
        while sweeper.poll() is None or read < 200:
            key = keys[read % len(keys)]
            runs.put(key, data)
            got = runs.get(key, dict)
            assert got is None or got == data
            read += 1
    finally:
        _, errors = sweeper.communicate(timeout=300)
    assert sweeper.returncode == 0, errors
    assert read >= 200
    assert all(runs.get(key, dict) in (None, data) for key in keys)
