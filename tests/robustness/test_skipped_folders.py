"""The folders no reader looks into are environments, builds' outputs and tools' folders where
they are such, not every folder that bears one of their names (campaign 13, R11): a package's own
`env` or `build` subpackage holds contracts, and a file named on the command line is never
dropped without a word."""

from __future__ import annotations

import os
from pathlib import Path

from sglang_contracts.cli import main
from sglang_contracts.project.index import project_folders
from tests.helpers import write_tree
from tests.robustness.test_links_out import small_releases

IMPORTS_A_REMOVED_NAME = "from sglang.srt.a import x\n"


def walked(top: Path) -> set[str]:
    return {os.path.relpath(os.path.join(folder, name), top) for folder, files in project_folders(os.fspath(top))
            for name in files if name.endswith(".py")}


def test_a_package_s_own_env_build_and_dist_are_read_and_environments_and_build_outputs_are_not(
        tmp_path: Path) -> None:
    root = write_tree(tmp_path / "p", {
        "pyproject.toml": '[project]\nname = "p"\n',
        **{f"mypkg/{name}/z.py": IMPORTS_A_REMOVED_NAME for name in ("env", "build", "dist", "venv", "lib")},
        "build/lib/mypkg/z.py": "", "dist/z.py": "",  # setuptools' and `python -m build`'s, beside pyproject.toml
        "env/pyvenv.cfg": "home = /usr/bin\n", "env/lib/site.py": "",  # a virtual environment, named as any
        "py311/pyvenv.cfg": "home = /usr/bin\n", "py311/lib/site.py": "",
        "conda/conda-meta/history": "", "conda/lib/site.py": "",
        "mypkg/.venv/lib/site.py": "", "mypkg/__pycache__/z.py": "",
    })
    assert walked(root) == {f"mypkg/{name}/z.py" for name in ("env", "build", "dist", "venv", "lib")}


def test_a_file_of_a_subpackage_named_env_is_checked_when_named_as_the_pre_commit_hook_names_it(
        tmp_path: Path, monkeypatch, capsys) -> None:
    old, new = small_releases(tmp_path)
    root = write_tree(tmp_path / "p", {"pyproject.toml": '[project]\nname = "p"\n', "mypkg/__init__.py": "",
                                       "mypkg/env/__init__.py": "", "mypkg/env/z.py": IMPORTS_A_REMOVED_NAME})
    monkeypatch.chdir(root)
    status = main(["check", "--old", str(old), "--new", str(new), "--cache-dir", str(tmp_path / "cache"),
                   "--files", "mypkg/env/z.py"])
    assert status == 1
    assert "mypkg/env/z.py:1:26: SGC102" in capsys.readouterr().out


def test_a_file_named_in_a_build_output_or_an_environment_is_one_sgc000(tmp_path: Path, monkeypatch, capsys) -> None:
    old, new = small_releases(tmp_path)
    root = write_tree(tmp_path / "p", {"pyproject.toml": '[project]\nname = "p"\n', "ok.py": "import sglang.srt.a\n",
                                       "build/lib/z.py": IMPORTS_A_REMOVED_NAME, "venv/z.py": IMPORTS_A_REMOVED_NAME,
                                       "venv/pyvenv.cfg": "home = /usr/bin\n"})
    monkeypatch.chdir(root)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    for named in ("build/lib/z.py", "venv/z.py"):
        for _ in range(2):  # computed, then replayed
            assert main(["check", "--old", str(old), "--new", str(new), *cache, "--files", named, "ok.py"]) == 1
            lines = capsys.readouterr().out.splitlines()
            assert [line.split(" SGC000 ")[0] for line in lines if " SGC000 " in line] == [f"{named}:1:1:"]
            assert any("in an environment, a build's output or a tool's folder, not read" in line for line in lines)
    assert main(["check", "--old", str(old), "--new", str(new), *cache]) == 0  # the whole project: not named, not said
    assert "SGC000" not in capsys.readouterr().out
