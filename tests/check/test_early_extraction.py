"""prefetch.EarlyExtraction: on a first run, the extraction of the modules the project imports
begins on the run's pool once the files that name SGLang are scanned, while the scan's later
rounds go on. The report, and what each release's model holds, are those of a run without it."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.helpers import NEW, OLD, PROJECT
from sglang_contracts.check.runner import CheckOptions, Fresh, run_check
from sglang_contracts.check import prefetch


class OneProcess(Fresh):
    checks_in_two = False  # the models are compared after the run: none may live in a forked copy


def checked(project: Path, cache: Path, workers: int):
    result = run_check([project], CheckOptions(old=str(OLD), new=str(NEW), cache_dir=cache, workers=workers), OneProcess())
    lines = [f"{d.path}:{d.line}:{d.col}: {d.code} {d.severity} {d.message}" for d in result.diagnostics]
    held = [{name: repr(record) for name, record in sorted(model._modules.items())} for model in (result.old, result.new)]
    return lines, held


def test_a_first_run_extracts_early_and_ends_as_a_run_without_it(monkeypatch, tmp_path: Path) -> None:
    project = Path(shutil.copytree(PROJECT, tmp_path / "project"))
    accepted: list[int] = []
    extract = prefetch.EarlyExtraction._extract

    def counted(self, names):
        models = self._models()
        before = sum(model.stats.parsed for model in models)
        extract(self, names)
        accepted.append(sum(model.stats.parsed for model in models) - before)

    monkeypatch.setattr(prefetch.EarlyExtraction, "_extract", counted)
    early = checked(project, tmp_path / "pooled", workers=2)
    assert accepted and accepted[0] > 0  # it ran, and extracted modules before prefetch did
    accepted.clear()
    alone = checked(project, tmp_path / "alone", workers=1)
    assert not accepted  # no pool, no early extraction
    assert early[0] == alone[0] and early[0]
    assert early[1] == alone[1]


def test_a_failed_early_job_leaves_its_modules_to_prefetch(monkeypatch, tmp_path: Path) -> None:
    project = Path(shutil.copytree(PROJECT, tmp_path / "project"))
    alone = checked(project, tmp_path / "alone", workers=1)

    def broken(self, job):
        raise RuntimeError("the pool is gone")

    monkeypatch.setattr(prefetch.EarlyExtraction, "_submitted", broken)
    assert checked(project, tmp_path / "pooled", workers=2) == alone
