"""Per-file analyses over the project (ProjectIndex.each_file) are cached per file content, in
one record per project and kind."""

from __future__ import annotations

import sys
from pathlib import Path

from sglang_contracts.infra.cache import JsonCache
from sglang_contracts.project.index import build_index


def words(tmp_path: Path, cache: JsonCache, calls: list[str]) -> list:
    def analyse(relpath: str, text: str) -> list:
        calls.append(relpath)
        return [[relpath, text.split()[1]]]

    index = build_index(tmp_path / "project", [tmp_path / "project"], JsonCache(None))
    index.cache = cache
    return index.each_file("first-names", analyse, lambda text: text.startswith("#"), sys.modules[__name__])


def test_each_file_recomputes_only_what_changed_and_survives_a_damaged_record(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.py").write_text("# alpha\n")
    (project / "b.py").write_text("# beta\n")
    (project / "c.py").write_text("x = 1\n")  # never held: not analysed
    cache, calls = JsonCache(tmp_path / "cache"), []
    assert words(tmp_path, cache, calls) == [["a.py", "alpha"], ["b.py", "beta"]]
    assert calls == ["a.py", "b.py"]
    records = list((tmp_path / "cache").rglob("*.json"))
    assert len(records) == 1  # one table, not one record per file

    calls.clear()
    assert words(tmp_path, cache, calls) == [["a.py", "alpha"], ["b.py", "beta"]] and calls == []

    (project / "b.py").write_text("# gamma\n")
    assert words(tmp_path, cache, calls) == [["a.py", "alpha"], ["b.py", "gamma"]] and calls == ["b.py"]

    records[0].write_text('{"schema": 1, "data": {"a.py": ["x"], "b.py": 7}}')
    calls.clear()
    assert words(tmp_path, cache, calls) == [["a.py", "alpha"], ["b.py", "gamma"]] and calls == ["a.py", "b.py"]
