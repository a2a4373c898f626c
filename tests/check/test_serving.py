"""Code that serves several releases (project/serving.py, check/served.py, SGC106): each module
is judged on the releases it serves, and a re-check after an edit of the choice alone agrees
with a full run."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest

from sglang_contracts.check.runner import CheckOptions, run_check
from sglang_contracts.config import read_config
from sglang_contracts.infra.errors import UsageError
from sglang_contracts.reporters.json import write_json

OLD_ENGINE = "def launch(tp_rank=0): ...\n"
NEW_ENGINE = "def launch(): ...\n"
CALLS_OLD = "from sglang.srt.engine import launch\nlaunch(tp_rank=0)\n"
CALLS_NEW = "from sglang.srt.engine import launch\nlaunch()\n"


def write(root: Path, files: dict[str, str]) -> Path:
    for relpath, text in files.items():
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_text(text)
    return root


def releases(tmp_path: Path) -> tuple[Path, Path]:
    old = write(tmp_path / "old", {"sglang/__init__.py": "", "sglang/version.py": '__version__ = "0.1.0"\n',
                                   "sglang/srt/engine.py": OLD_ENGINE})
    new = write(tmp_path / "new", {"sglang/__init__.py": "", "sglang/version.py": '__version__ = "0.2.0"\n',
                                   "sglang/srt/engine.py": NEW_ENGINE})
    return old, new


def check(tmp_path: Path, files: dict[str, str], **options) -> list[str]:
    old, new = releases(tmp_path)
    project = write(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n", **files})
    result = run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1, **options))
    return [f"{d.path}:{d.line}:{d.col}: {d.code}" for d in result.diagnostics]


DISPATCH = """import sglang
from packaging.version import Version

from app import common

if Version(sglang.__version__) >= Version("0.2.0"):
    from app.for_new import engine
else:
    from app.for_old import engine
"""


def test_a_module_only_the_old_release_s_branch_loads_is_not_judged_but_one_every_release_loads_is(tmp_path) -> None:
    found = check(tmp_path, {
        "app/__init__.py": DISPATCH,
        "app/common.py": CALLS_OLD,  # loaded on every release: its break is the bump's
        "app/for_old/__init__.py": "", "app/for_old/engine.py": "from app.for_old import helpers\n" + CALLS_OLD,
        "app/for_old/helpers.py": "from app import common\n" + CALLS_OLD,  # only through the old branch
        "app/for_new/__init__.py": "", "app/for_new/engine.py": CALLS_NEW,
    })
    assert found == ["app/common.py:2:8: SGC201"]


def test_without_a_choice_of_release_every_module_is_judged_as_before(tmp_path) -> None:
    found = check(tmp_path, {"app/__init__.py": "from app.for_old import engine\n",
                             "app/for_old/__init__.py": "", "app/for_old/engine.py": CALLS_OLD})
    assert found == ["app/for_old/engine.py:2:8: SGC201"]


def test_a_finding_grouped_under_the_dispatch_names_it_in_json(tmp_path) -> None:
    old, new = releases(tmp_path)
    project = write(tmp_path / "project", {
        "pyproject.toml": "[project]\nname = 'app'\n",
        "app/__init__.py": 'import sglang\nif sglang.__version__ == "0.1.0":\n    from app import for_old\n'
                           'else:\n    raise NotImplementedError(sglang.__version__)\n',
        "app/for_old.py": CALLS_OLD,
    })
    result = run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1))
    out = io.StringIO()
    write_json(result, out)
    records = {record["code"]: record for record in json.loads(out.getvalue())}
    assert records["SGC106"]["message"].startswith("sglang 0.2.0 reaches `raise NotImplementedError`")
    assert records["SGC106"]["severity"] == "error" and "grouped_under" not in records["SGC106"]
    assert records["SGC201"]["grouped_under"] == f"{records['SGC106']['path']}:5:5"


@pytest.mark.parametrize(("table", "error"), [
    ('serves = {"../elsewhere" = ["0.5.20"]}', "leaves the project"),
    ('serves = {"pkg/for_0_5_20" = 0.5}', "must be a list of strings"),
    ('serves = ["pkg"]', "must be a table"),
    # items that admit no release would drop every finding of their files (campaign 9, R01)
    ('serves = {"m.py" = ["=>1.0.1"]}', "'=>1.0.1', which is neither a version"),
    ('serves = {"m.py" = ["x"]}', "'x', which is neither a version"),
    ('serves = {"m.py" = ["0.5.20", "~=1"]}', "'~=1', which is neither a version"),
    ('serves = {"m.py" = ["==1.0.0.*.*"]}', "neither a version"),
    # nor may a list with no item (campaign 10, R02)
    ('serves = {"m.py" = []}', "empty list, which admits no release"),
    ('serves = {"a.py" = "1.0.0", "m.py" = []}', r"\[m.py\] is an empty list"),
    # "" parses as the specifier admitting every release; a set of clauses may admit none
    ('serves = {"m.py" = ""}', "'', which is neither a version"),
    ('serves = {"m.py" = ["0.5.20", " "]}', "' ', which is neither a version"),
    ('serves = {"m.py" = ">=2,<1"}', "'>=2,<1', which admits no release"),
    ('serves = {"m.py" = "==0.5.20,!=0.5.20"}', "admits no release"),
    ('serves = {"m.py" = "~=0.5,!=0.*"}', "admits no release"),
    # two keys naming one file: the later replaced the earlier, the lines' order chose the
    # file's findings (campaign 12, R06)
    ('serves = {"m.py" = [">=1.0.1"], "./m.py" = ["1.0.0"]}', r"serves has both \[m.py\] and \[./m.py\], which name"),
    ('serves = {"pkg/" = ["1.0.0"], "pkg" = ["1.0.0"]}', r"serves has both \[pkg/\] and \[pkg\], which name the same"),
])
def test_a_serves_setting_that_cannot_be_read_is_a_one_line_error(tmp_path, table, error) -> None:
    path = write(tmp_path, {"pyproject.toml": f"[tool.sglang-contracts]\n{table}\n"}) / "pyproject.toml"
    with pytest.raises(UsageError, match=error) as raised:
        read_config(path, required=True)
    assert "\n" not in str(raised.value)


def test_serves_items_may_be_versions_or_specifiers(tmp_path) -> None:
    table = ('[tool.sglang-contracts]\nserves = {"a" = ["0.5.20", ">=0.5.22,<0.6", "==0.5.*", "!=0.5.21", '
             '">0.5.22,<0.5.23", "==0.5.*,>0.5", "<0.0.1", "===weird"]}\n')
    path = write(tmp_path, {"pyproject.toml": table})
    assert read_config(path / "pyproject.toml", required=True).settings()["serves"]["a"][2] == "==0.5.*"


def test_a_serves_setting_is_read_from_the_project_s_table(tmp_path) -> None:
    path = write(tmp_path, {"pyproject.toml": '[tool.sglang-contracts]\nserves = {"pkg/for_0_5_20/" = "0.5.20"}\n'})
    assert read_config(path / "pyproject.toml", required=True).settings() == {"serves": {"pkg/for_0_5_20": ["0.5.20"]}}


TABLE = """import importlib
import sglang

_FOR_RELEASE = {"0.1.0": "app.old_engine"}
engine = importlib.import_module(_FOR_RELEASE[sglang.__version__])
"""


def test_an_edit_of_the_choice_alone_judges_the_modules_it_loads_anew(tmp_path, monkeypatch) -> None:
    """The choice is not part of any file's outline: the re-check after editing the table
    recomputes that file alone, keeps the old release's module's finding in its record, and
    judges it by the choice as it is now."""
    from sglang_contracts.check import incremental

    plans: list[incremental.Plan] = []
    plan = incremental.plan
    monkeypatch.setattr(incremental, "plan", lambda *a, **k: plans.append(plan(*a, **k)) or plans[-1])
    old, new = releases(tmp_path)
    project = write(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n", "app/__init__.py": TABLE,
                                           "app/old_engine.py": CALLS_OLD, "app/new_engine.py": CALLS_NEW})
    options = CheckOptions(old=str(old), new=str(new), cache_dir=tmp_path / "cache", replay=True, workers=1)

    def as_a_full_run() -> list[str]:
        del plans[:]
        result = run_check([project], options)
        full = run_check([project], dataclasses.replace(options, replay=False))
        assert [d.to_json() for d in result.diagnostics] == [d.to_json() for d in full.diagnostics]
        return [f"{d.path}:{d.line}:{d.col}: {d.code}" for d in result.diagnostics]

    refused = ["app/__init__.py:5:10: SGC106", "app/old_engine.py:2:8: SGC201"]
    assert as_a_full_run() == refused
    init = project / "app" / "__init__.py"
    init.write_text(TABLE.replace('"app.old_engine"}', '"app.old_engine", "0.2.0": "app.new_engine"}'))
    assert as_a_full_run() == []
    assert plans[0].recomputed == {"app/__init__.py"}  # the re-check, not the full run after it
    init.write_text(TABLE)
    assert as_a_full_run() == refused
    assert plans[0].recomputed == {"app/__init__.py"}


def test_serves_keys_are_looked_up_by_each_file_s_folders_not_scanned_per_file() -> None:
    """Campaign 11: every `serves` key was compared with every project file's folders, and
    20,000 keys over 300 files took minutes. The most specific key still wins. Counted: the
    keys are read once, not once per file."""
    from types import SimpleNamespace

    from sglang_contracts.project import serving

    class Counted(dict):
        reads = 0

        def __iter__(self):
            Counted.reads += 1
            return super().__iter__()

    serves = Counted({**{f"pkg/sub{i}": [">=0.1"] for i in range(2000)},
                      "pkg/for_old/": ["0.1.0"], "pkg/for_old/deep": ["0.2.0"]})
    files = {**{f"pkg/m{i}.py": "" for i in range(300)}, "pkg/for_old/a.py": "", "pkg/for_old/deep/b.py": "",
             "pkg/sub7": ""}
    releases = {"old": SimpleNamespace(version="0.1.0"), "new": SimpleNamespace(version="0.2.0")}
    fixed = serving._configured_releases(SimpleNamespace(digests=files), frozenset(releases), releases, serves)
    assert fixed == {"pkg/for_old/a.py": {"old"}, "pkg/for_old/deep/b.py": {"new"}, "pkg/sub7": {"old", "new"}}
    assert Counted.reads <= 2
