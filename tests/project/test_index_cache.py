"""Per-file analyses over the project (ProjectIndex.each_file) are cached per file content, in
one record per project and kind."""

from __future__ import annotations

import sys
from pathlib import Path

from sglang_contracts.infra.cache import RecordCache
from sglang_contracts.infra.shapes import Row, rows_of
from sglang_contracts.project.index import build_index


def words(tmp_path: Path, cache: RecordCache, calls: list[str]) -> list:
    @rows_of(Row(str, str))
    def analyse(relpath: str, text: str) -> list:
        calls.append(relpath)
        return [[relpath, text.split()[1]]]

    index = build_index(tmp_path / "project", [tmp_path / "project"], RecordCache(None))
    index.cache = cache
    return index.each_file("first-names", analyse, lambda text: text.startswith("#"), sys.modules[__name__])


def test_each_file_recomputes_only_what_changed_and_survives_a_damaged_record(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.py").write_text("# alpha\n")
    (project / "b.py").write_text("# beta\n")
    (project / "c.py").write_text("x = 1\n")  # never held: not analysed
    cache, calls = RecordCache(tmp_path / "cache"), []
    assert words(tmp_path, cache, calls) == [["a.py", "alpha"], ["b.py", "beta"]]
    assert calls == ["a.py", "b.py"]
    records = list((tmp_path / "cache").rglob("*.record"))
    assert len(records) == 1  # one table, not one record per file

    calls.clear()
    assert words(tmp_path, cache, calls) == [["a.py", "alpha"], ["b.py", "beta"]] and calls == []

    (project / "b.py").write_text("# gamma\n")
    assert words(tmp_path, cache, calls) == [["a.py", "alpha"], ["b.py", "gamma"]] and calls == ["b.py"]

    records[0].write_text('{"schema": 1, "data": {"a.py": ["x"], "b.py": 7}}')
    calls.clear()
    assert words(tmp_path, cache, calls) == [["a.py", "alpha"], ["b.py", "gamma"]] and calls == ["a.py", "b.py"]


def test_per_file_analyses_of_a_large_project_run_on_the_workers_and_give_what_one_process_gives(
        tmp_path: Path, monkeypatch) -> None:
    """Enough text to send the analyses to the run's workers: the table they give is the one
    this process gives, file by file, and a later kind reuses the run's pool."""
    from sglang_contracts.infra import parallel
    from sglang_contracts.project import index as index_module

    project = tmp_path / "project"
    project.mkdir()
    for n in range(40):
        body = "".join(f"def f{k}(x):\n    return x + {k}\n" for k in range(300))
        (project / f"m{n}.py").write_text(f"import os, json\nfrom m{(n + 1) % 40} import f1 as g\n{body}")
    index = build_index(project, [project], RecordCache(None), workers=1)
    assert sum(len(text) for text in index.texts.values()) > parallel.PARALLEL_MIN_BYTES
    sent = []
    real_iter_jobs = index_module.iter_jobs
    monkeypatch.setattr(index_module, "iter_jobs", lambda *a, **k: sent.append(len(a[1])) or real_iter_jobs(*a, **k))
    with parallel.run_pool():
        on_workers = index.each_file("imports-probe", index_module._imports_row, lambda text: True)
        again = index.each_file("imports-probe-2", index_module._imports_row, lambda text: "json" in text)
        shared = parallel._RUN.pool
    assert sent == [40, 40] and shared is not None and parallel._RUN.pool is None  # stopped with the run
    monkeypatch.setattr(index_module, "_sendable", lambda analyse: False)
    assert on_workers == again == index.each_file("imports-probe-3", index_module._imports_row, lambda text: True)
    assert on_workers[0] == ["m0.py", [("m1", ["f1"])], ["json", "os"]]


def test_the_files_are_indexed_in_the_same_order_whatever_the_cache_held(tmp_path: Path) -> None:
    """A file scanned again (its facts not cached) takes its place in path order, not the end:
    the order of the project's classes decides which subclass a finding names (SGC314), and a
    run must not depend on the cache (an audit saw an added subclass's file named first cold
    and last warm)."""
    project = tmp_path / "project"
    (project / "app").mkdir(parents=True)
    for name in ("a", "b", "c"):
        (project / "app" / f"{name}.py").write_text(f"from sglang.srt.managers.scheduler import Scheduler\n\n\nclass {name.upper()}(Scheduler):\n    pass\n")
    cache = RecordCache(tmp_path / "cache")
    build_index(project, [project], cache, workers=1)
    (project / "app" / "a.py").write_text((project / "app" / "a.py").read_text() + "X = 1\n")  # a.py alone scanned again
    warm = build_index(project, [project], cache, workers=1)
    cold = build_index(project, [project], RecordCache(None), workers=1)
    assert warm.parsed == 1 and cold.parsed == 3
    assert list(warm.files) == list(cold.files) == ["app/a.py", "app/b.py", "app/c.py"]
