"""Python that is not in a `.py` file (campaign 14, R08): an executable script of no suffix whose
first line names Python (`bin/launch`, which pre-commit tags `python` and its hook names) is read
and judged as Python is, whether named or found; other files of no suffix are not read as Python;
and a named file of a Python kind this tool does not read (a stub, a notebook) is one SGC000."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sglang_contracts.cli import main
from sglang_contracts.project.index import python_shebang
from tests.helpers import write_tree
from tests.robustness.test_links_out import small_releases

IMPORTS_A_REMOVED_NAME = "from sglang.srt.a import x\n"


def project_with_scripts(tmp_path: Path) -> tuple[Path, list[str]]:
    """(the project's root, the check's arguments but the paths) of a project of scripts of no
    suffix each importing a name the new release removes: an executable Python one, and others
    that are not Python scripts (not executable; a shell script)."""
    old, new = small_releases(tmp_path)
    root = write_tree(tmp_path / "p", {
        "pyproject.toml": '[project]\nname = "p"\n', "ok.py": "import sglang.srt.a\n",
        "bin/launch": "#!/usr/bin/env -S python3 -u\n" + IMPORTS_A_REMOVED_NAME,
        "bin/plain": "#!/usr/bin/python3\n" + IMPORTS_A_REMOVED_NAME,  # not executable
        "bin/shell": "#!/bin/sh\npython -c '" + IMPORTS_A_REMOVED_NAME + "'\n",
    })
    for name in ("launch", "shell"):
        os.chmod(root / "bin" / name, 0o755)
    return root, ["check", "--old", str(old), "--new", str(new), "--cache-dir", str(tmp_path / "cache")]


def findings(capsys) -> list[str]:
    return [line.split(": ")[0] + " " + line.split(" ")[1] for line in capsys.readouterr().out.splitlines()
            if " SGC" in line]


def test_a_named_python_script_of_no_suffix_is_judged_as_a_py_file_is(tmp_path: Path, monkeypatch, capsys) -> None:
    root, check = project_with_scripts(tmp_path)
    monkeypatch.chdir(root)
    assert main([*check, "--files", "bin/launch"]) == 1
    assert findings(capsys) == ["bin/launch:2:26 SGC102"]


def test_the_whole_project_judges_its_python_scripts_again_after_an_edit(tmp_path: Path, monkeypatch, capsys) -> None:
    root, check = project_with_scripts(tmp_path)
    monkeypatch.chdir(root)
    for _ in range(2):  # computed, then replayed
        assert main(check) == 1
        assert findings(capsys) == ["bin/launch:2:26 SGC102"]  # neither the plain file nor the shell script
    launch = root / "bin" / "launch"
    launch.write_text(launch.read_text() + "from sglang.srt.a import y\n" + IMPORTS_A_REMOVED_NAME)
    assert main(check) == 1
    assert findings(capsys) == ["bin/launch:2:26 SGC102", "bin/launch:4:26 SGC102"]
    os.chmod(launch, 0o644)  # no longer a script that runs: the content alone unchanged
    assert main(check) == 0
    assert findings(capsys) == []


def test_a_python_script_whose_suffix_identify_does_not_know_is_judged(tmp_path: Path, monkeypatch, capsys) -> None:
    """pre-commit's identify tells a file by its name first, and by its shebang when the name
    tells nothing (`bin/tool.v2`, `manage.cli`): those it passes to the hook as Python were never
    judged; a suffix it knows (`.sh`) is what it says, whatever the shebang (campaign 15, R08)."""
    root, check = project_with_scripts(tmp_path)
    for name in ("tool.v2", "manage.cli", "wrapper.sh"):
        (root / "bin" / name).write_text("#!/usr/bin/env python3\n" + IMPORTS_A_REMOVED_NAME)
        os.chmod(root / "bin" / name, 0o755)
    monkeypatch.chdir(root)
    assert main(check) == 1
    assert findings(capsys) == ["bin/launch:2:26 SGC102", "bin/manage.cli:2:26 SGC102", "bin/tool.v2:2:26 SGC102"]


@pytest.mark.parametrize("first_line, python", [
    (b"#!/usr/bin/env python3\n", True), (b"#!/usr/bin/python\n", True), (b"#! /usr/local/bin/python3.12 -u\n", True),
    (b"#!/usr/bin/env -S PYTHONPATH=. python3 -u\n", True), (b"#!/bin/bash\n", False),
    (b"#!/usr/bin/env bash\n", False), (b"# python\n", False), (b"#!/usr/bin/pythonista\n", False), (b"", False),
    # identify drops `.xyz` parts until it knows the name (campaign 15, R08): a free-threaded or debug build is python3
    (b"#!/usr/bin/env python3.13t\n", True), (b"#!/usr/bin/python3.11d\n", True), (b"#!/usr/bin/python3.12-dbg\n", True),
    (b"#!/usr/bin/python2.7\n", True), (b"#!/usr/bin/python3-dbg\n", False), (b"#!/usr/bin/python3m\n", False),
    (b"#!/usr/bin/python4\n", False),
])
def test_a_python_shebang_names_python_as_its_interpreter(first_line: bytes, python: bool) -> None:
    """What pre-commit's identify tags `python` (so its hook passes the script), and only that."""
    assert python_shebang(first_line + b"import os\n") is python


def test_a_named_stub_notebook_or_script_that_is_not_executable_is_one_sgc000_saying_why(
        tmp_path: Path, monkeypatch, capsys) -> None:
    root, check = project_with_scripts(tmp_path)
    notebook = ('{"cells": [{"cell_type": "code", "metadata": {}, "source": ["from sglang.srt.a import x\\n"], '
                '"outputs": [], "execution_count": null}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n')
    others = ("gui.pyw", "app.wsgi", "wscript", "build.gyp")  # what pre-commit also tags as Python (campaign 14, R09)
    write_tree(root, {"stub.pyi": IMPORTS_A_REMOVED_NAME, "demo.ipynb": notebook,
                      **{name: IMPORTS_A_REMOVED_NAME for name in others}})
    monkeypatch.chdir(root)
    named = {"stub.pyi": "a type stub, never run", "demo.ipynb": "a notebook, whose code cells are not read",
             "bin/plain": "a Python script neither executable nor named .py, not read",
             **{name: "Python in a file not named .py, which this tool does not read" for name in others}}
    for _ in range(2):  # computed, then replayed
        assert main([*check, "--files", *named, "bin/shell", "ok.py"]) == 1
        lines = capsys.readouterr().out.splitlines()
        assert sorted(line.split(" SGC000 ")[0] for line in lines if " SGC" in line) == sorted(
            f"{path}:1:1:" for path in named)  # the shell script is no Python, and read as none
        for path, why in named.items():
            assert any(line.startswith(f"{path}:1:1: SGC000 cannot read this file ({why}") for line in lines)
    assert main(check) == 1  # the whole project: not named, not said
    assert findings(capsys) == ["bin/launch:2:26 SGC102"]
