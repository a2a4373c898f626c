"""Code that serves several releases, on the real 0.5.21 -> 0.5.22 wheels: a project in the
shape of those that keep one folder of patches per release (ROLL's roll/third_party/sglang),
each folder importing `make_stages` from `sglang.srt.layers.layer_boundary`, which 0.5.22's
package no longer exports (README)."""

from __future__ import annotations

import json
from pathlib import Path

from sglang_contracts.cli import main

DISPATCH = '''import sglang
from packaging.version import Version

if Version(sglang.__version__) == Version("0.5.20"):
    from app import for_0_5_20 as impl
elif Version(sglang.__version__) == Version("0.5.21"):
    from app import for_0_5_21 as impl
else:
    raise NotImplementedError(sglang.__version__)
'''
USES_MAKE_STAGES = "from sglang.srt.layers.layer_boundary import make_stages\n"


def check_json(capsys, monkeypatch, project: Path, files: dict[str, str], cache: Path) -> list[dict]:
    for relpath, text in files.items():
        (project / relpath).parent.mkdir(parents=True, exist_ok=True)
        (project / relpath).write_text(text)
    monkeypatch.chdir(project)
    main(["check", "--format", "json", "--old", "0.5.21", "--new", "0.5.22", "--select", "SGC1",
          "--cache-dir", str(cache)])
    return json.loads(capsys.readouterr().out)


def test_no_branch_for_0_5_22_is_one_error_at_the_dispatch_with_0_5_21_s_folder_grouped_under_it(
        tmp_path: Path, capsys, monkeypatch, real_cache: Path) -> None:
    found = check_json(capsys, monkeypatch, tmp_path, {
        "app/__init__.py": DISPATCH, "app/for_0_5_20.py": USES_MAKE_STAGES, "app/for_0_5_21.py": USES_MAKE_STAGES,
    }, real_cache)
    assert [(d["path"], d["line"], d["code"]) for d in found] == [
        ("app/__init__.py", 9, "SGC106"), ("app/for_0_5_21.py", 1, "SGC102")]
    refusal, moved = found
    assert refusal["message"] == ("sglang 0.5.22 reaches `raise NotImplementedError`: the project has no code for "
                                  "it (sglang 0.5.21 loads app.for_0_5_21)")
    assert moved["grouped_under"] == "app/__init__.py:9:5" and moved["severity"] == "error"


def test_with_a_branch_for_0_5_22_the_older_folders_are_not_judged_on_it(
        tmp_path: Path, capsys, monkeypatch, real_cache: Path) -> None:
    dispatch = DISPATCH.replace("else:", 'elif Version(sglang.__version__) == Version("0.5.22"):\n'
                                         "    from app import for_0_5_22 as impl\nelse:")
    found = check_json(capsys, monkeypatch, tmp_path, {
        "app/__init__.py": dispatch, "app/for_0_5_20.py": USES_MAKE_STAGES, "app/for_0_5_21.py": USES_MAKE_STAGES,
        "app/for_0_5_22.py": "from sglang.srt.managers.scheduler import Scheduler\n",
    }, real_cache)
    assert found == []
