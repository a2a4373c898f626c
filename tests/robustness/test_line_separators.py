"""Characters str.splitlines ends a line at and Python, editors and git do not: every reader
of a project's files numbers its lines as they do (ninth campaign, R08), and `fix --diff` stays
a patch `git apply` takes (R09).

The fixture project is checked twice: once with comment lines holding each such character, once
with a space in their place. Any reader that counts lines with str.splitlines (a `# noqa` looked
up, a Dockerfile's or a requirement's position, a fix's line) reports another line in the first.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from sglang_contracts.cli import main
from tests.helpers import NEW, OLD, PROJECT, write_tree

# str.splitlines ends a line at each; Python's tokenizer, the language server protocol and git at none.
SEPARATORS = "\v\f\x1c\x1d\x1e\x85\u2028\u2029"
TOML_SEPARATORS = "\x85\u2028\u2029"  # TOML refuses a control character in a comment
PLAIN = str.maketrans(dict.fromkeys(SEPARATORS, " "))
# Readers the fixture project has no file for.
MORE_FILES = {
    "requirements.txt": "numpy\nsglang==0.9.0\n",
    "scripts/serve.sh": 'pip install "sglang==0.9.0"\npython -m sglang.launch_server --model-path m\n',
}


def _comment(separators: str) -> str:
    """A comment line that hides a `# noqa` behind each separator (one line to Python)."""
    return "# see the notes" + "".join(f"{char}# noqa" for char in separators) + "\n"


def _project(root: Path, hostile: bool) -> Path:
    """The fixture project with that comment atop every file and above every Python import (so
    that the fixes' hunks hold it); `hostile=False`: spaces in place of the separators."""
    shutil.copytree(PROJECT, root)
    write_tree(root, MORE_FILES)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        comment = _comment(TOML_SEPARATORS if path.suffix == ".toml" else SEPARATORS)
        comment = comment if hostile else comment.translate(PLAIN)
        lines = path.read_bytes().decode("utf-8").split("\n")
        if path.suffix == ".py":
            lines = [comment + line if line.startswith(("from ", "import ")) else line for line in lines]
        path.write_bytes((comment + "\n".join(lines)).encode("utf-8"))
    return root


def _run(capsys, monkeypatch, root: Path, *argv: str) -> tuple[int, str, str]:
    monkeypatch.chdir(root)
    status = main([*argv, "--old", str(OLD), "--new", str(NEW)])
    out, err = capsys.readouterr()
    return status, out, err


def test_every_reader_numbers_lines_as_python_does(tmp_path, capsys, monkeypatch, cache_dir) -> None:
    plain = _run(capsys, monkeypatch, _project(tmp_path / "plain", hostile=False), "check")
    hostile = _run(capsys, monkeypatch, _project(tmp_path / "hostile", hostile=True), "check")
    assert (hostile[0], hostile[1].translate(PLAIN), hostile[2]) == plain
    # Every kind of file the tool reads had findings to place: each reader was asked.
    kinds = {Path(line.split(":", 1)[0]).suffix or Path(line.split(":", 1)[0]).name for line in plain[1].splitlines()}
    assert kinds >= {".py", ".toml", ".yml", ".md", ".patch", ".txt", ".sh", "Dockerfile"}


def test_fix_diff_is_the_same_patch_and_git_applies_it(tmp_path, capsys, monkeypatch, cache_dir) -> None:
    plain = _run(capsys, monkeypatch, _project(tmp_path / "plain", hostile=False), "fix", "--diff")
    root = _project(tmp_path / "hostile", hostile=True)
    hostile = _run(capsys, monkeypatch, root, "fix", "--diff")
    assert "@@ " in plain[1]
    assert (hostile[0], hostile[1].translate(PLAIN), hostile[2]) == plain
    (tmp_path / "fix.diff").write_text(hostile[1], encoding="utf-8")
    applied = subprocess.run(["git", "apply", "--check", str(tmp_path / "fix.diff")], cwd=root,
                             capture_output=True, text=True, timeout=120, check=False)
    assert (applied.returncode, applied.stderr) == (0, "")
