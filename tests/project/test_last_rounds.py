"""A build after an edit scans the last build's rounds again when every changed file reads
alike (project/index.py LastRounds): the index it gives is the one a build without the last
rounds gives, file order and re-export table included, and an edit that may change the
rounds is built round by round again."""

from __future__ import annotations

from pathlib import Path

import pytest

from sglang_contracts.infra.cache import RecordCache
from sglang_contracts.project import index as index_module
from sglang_contracts.project.index import build_index
from tests.helpers import write_tree

# Round 1 scans the files naming SGLang (api, engine); round 2 the definer of a class engine
# uses as a type (config) and the importer of a name api re-exports from SGLang (runner); round
# 3 the definer of a class runner uses (models): not the path order.
PROJECT = {
    "pkg/__init__.py": "",
    "pkg/api.py": "from sglang.srt.managers.scheduler import Scheduler\n",
    "pkg/engine.py": "import sglang\nfrom pkg.config import Config\n\n\ndef run(config: Config):\n    return config.size\n",
    "pkg/runner.py": "from pkg.api import Scheduler\nfrom pkg.models import Model\n\n\nclass Runner(Scheduler):\n"
                     "    def step(self, model: Model):\n        total = 0\n        return self.run_batch(model.weights)\n",
    "pkg/models.py": "class Model:\n    pass\n",
    "pkg/config.py": "class Config:\n    size = 1\n",
    "pkg/unrelated.py": "import json\n",
}


def _shape(index) -> tuple:
    return (list(index.files), {rel: facts.to_json() for rel, facts in index.files.items()}, index.exports,
            index.digests)


def _rounds_run(monkeypatch) -> list[int]:
    """How many times the next rounds' files were looked for (0: the last rounds were scanned)."""
    looked: list[int] = []
    searched = index_module._importers_of_reexports

    def counting(*args, **kwargs):
        looked.append(1)
        return searched(*args, **kwargs)

    monkeypatch.setattr(index_module, "_importers_of_reexports", counting)
    return looked


@pytest.mark.parametrize("edit, planned", [
    # a statement typed in a method body: the same rounds
    (("pkg/runner.py", "        total = 0\n", "        total = 0\n        total += 1\n"), True),
    # a file no round scans, edited without naming SGLang: the same rounds
    (("pkg/unrelated.py", "import json\n", "import json\nx = json.dumps(1)\n"), True),
    # a file no round scans now imports a name a scanned module re-exports from SGLang
    (("pkg/unrelated.py", "import json\n", "import json\nfrom pkg.api import Scheduler\n"), False),
    # a re-export changed: what the next round scans may change
    (("pkg/api.py", "Scheduler\n", "Scheduler, SchedulerOutput\n"), False),
    # a file that now names SGLang: scanned in the first round
    (("pkg/unrelated.py", "import json\n", "import json\nimport sglang\n"), False),
    # a scanned file's base class changed
    (("pkg/runner.py", "class Runner(Scheduler):", "class Runner(object):"), False),
    # a scanned file uses a class of another project module
    (("pkg/runner.py", "model: Model", "model: 'pkg.config.Config'"), False),
])
def test_an_edit_is_built_as_a_build_without_the_last_rounds_builds_it(tmp_path: Path, monkeypatch, edit,
                                                                       planned) -> None:
    project = write_tree(tmp_path / "project", PROJECT)
    cache = RecordCache(tmp_path / "cache")
    first = build_index(project, [project], cache)
    assert list(first.files) == ["pkg/api.py", "pkg/engine.py", "pkg/config.py", "pkg/runner.py", "pkg/models.py"]
    relpath, before, after = edit
    path = project / relpath
    assert before in path.read_text()
    path.write_text(path.read_text().replace(before, after))
    looked = _rounds_run(monkeypatch)
    again = build_index(project, [project], cache)
    assert (not looked) == planned
    assert _shape(again) == _shape(build_index(project, [project], RecordCache(None)))


def test_a_file_added_or_a_damaged_record_builds_round_by_round(tmp_path: Path, monkeypatch) -> None:
    project = write_tree(tmp_path / "project", PROJECT)
    cache = RecordCache(tmp_path / "cache")
    build_index(project, [project], cache)
    (project / "pkg/extra.py").write_text("from pkg.api import Scheduler\n")
    looked = _rounds_run(monkeypatch)
    added = build_index(project, [project], cache)
    assert looked and "pkg/extra.py" in added.files
    key = index_module._rounds_key(project)
    cache.put(key, {"packages": ["pkg"], "files": {"pkg/api.py": "not an entry"}, "rounds": [], "scanned": {}})
    looked.clear()
    assert _shape(build_index(project, [project], cache)) == _shape(added) and looked


@pytest.mark.parametrize("damaged", [
    {"packages": ["pkg"], "files": {"pkg/api.py": ["d", True]}, "rounds": [], "scanned": {}},
    {"packages": ["pkg"], "files": {}, "rounds": [[7]], "scanned": {}},
    {"packages": ["pkg"], "files": {}, "rounds": [["pkg/nowhere.py"]], "scanned": {}},
    {"packages": [1], "files": {}, "rounds": [], "scanned": {"pkg/api.py": None}},
    [], {},
])
def test_a_record_of_another_shape_is_not_used(tmp_path: Path, damaged) -> None:
    """A record re-signed with this tool's header and another shape (the cache is the user's:
    made by hand) is built round by round, never a crash."""
    project = write_tree(tmp_path / "project", PROJECT)
    cache = RecordCache(tmp_path / "cache")
    built = build_index(project, [project], cache)
    cache.put(index_module._rounds_key(project), damaged)
    assert _shape(build_index(project, [project], cache)) == _shape(built)


def test_configured_objects_are_read_whatever_they_mention_and_a_new_set_is_no_stale_plan(tmp_path: Path) -> None:
    """A mapped fake's or a seam's module is scanned though it names nothing of SGLang, and so
    are its importers (a seam's callers); the last rounds of a build with other configured
    objects are not taken for this one's (campaign 9, R05)."""
    project = write_tree(tmp_path / "project", {**PROJECT, "tests/fakes.py": "import os\n\n\nclass Thing:\n    pass\n",
                                                "tests/uses.py": "from tests.fakes import Thing\n"})
    cache = RecordCache(tmp_path / "cache")
    plain = build_index(project, [project], cache)
    assert "tests/fakes.py" not in plain.files
    configured = build_index(project, [project], cache, configured=("tests.fakes.Thing",))
    assert {"tests/fakes.py", "tests/uses.py"} <= configured.files.keys()
    assert _shape(configured) == _shape(build_index(project, [project], RecordCache(None),
                                                    configured=("tests.fakes.Thing",)))
    assert _shape(build_index(project, [project], cache)) == _shape(plain)
