"""Release values and project paths no path can hold (empty, too long for the system): one
error line naming the value, never a traceback, and never '' read as the current directory."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

LONG = "a" * 4000


@pytest.mark.parametrize(("old", "said"), [
    ("", "--old is empty"),
    ("  ", "--old is empty"),
    (LONG, "is not a version, a directory, or (with --sglang-repo) a git ref"),
    (f"dir:{LONG}", "cannot be read (File name too long)"),
    (f"{LONG}/sglang", "is not a version"),
])
def test_an_old_release_no_path_can_hold_is_one_error_line(check, old: str, said: str) -> None:
    result = check(old=old)  # type: ignore[arg-type]
    assert (result.status, result.out) == (2, "")
    (line,) = result.err.splitlines()
    assert line.startswith("sglang-contracts: error: ") and said in line and len(line) < 300


def test_an_empty_new_release_is_a_usage_error(check) -> None:
    result = check(new="")  # type: ignore[arg-type]
    assert (result.status, result.err) == (2, "sglang-contracts: error: --new is empty: give an SGLang version, "
                                              "a git ref with --sglang-repo, or a directory\n")


def test_an_empty_old_release_in_the_configuration_is_a_usage_error(check, tmp_path: Path) -> None:
    import shutil

    from tests.helpers import PROJECT, add_settings

    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    add_settings(project / "pyproject.toml", 'old = ""\n')
    result = check(old=None, cwd=project)
    assert (result.status, result.out) == (2, "")
    (line,) = result.err.splitlines()
    assert line.startswith("sglang-contracts: error: ") and "old is empty" in line


def test_a_project_path_too_long_for_the_system_is_one_error_line(check) -> None:
    result = check(LONG)
    assert (result.status, result.out) == (2, "")
    (line,) = result.err.splitlines()
    assert line.startswith("sglang-contracts: error: aaaa") and line.endswith(": File name too long")
    assert len(line) < 300


@pytest.mark.parametrize("argv", [
    ["check", "--cache-dir", ""], ["fix", "--cache-dir="], ["check", "--config", ""], ["check", "--baseline", ""],
    ["check", "--write-baseline", ""], ["check", "--sglang-repo", ""], ["check", "--package-index", ""],
    ["bump", "--plan", ""], ["bump", "--pr-body", ""], ["bump", "--tree", ""], ["patch", "rebase", "--output", ""],
    ["patch", "rebase", "--skeleton", ""], ["daemon", "status", "--cache-dir", ""],
])
def test_an_empty_path_option_is_one_usage_error_line_and_nothing_is_made(argv: list[str], tmp_path: Path, capsys,
                                                                         monkeypatch) -> None:
    """Path('') is the working folder: `--cache-dir ''` put the cache's folders in the project
    (campaign 12, T90). As `--old ''` is, an empty path is refused before anything runs."""
    from sglang_contracts.cli import main

    monkeypatch.chdir(tmp_path)
    option = next(part for part in argv if part.startswith("--")).split("=")[0]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", f"sglang-contracts: error: {option} is empty: give a path\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [
    ["check", "--old", "dir:LOOP", "--new", "0.5.23"], ["check", "LOOP", "--old", "0.5.22", "--new", "0.5.23"],
    ["daemon", "status", "--cache-dir", "LOOP"], ["daemon", "stop", "--cache-dir", "LOOP"],
])
def test_a_path_that_is_a_link_to_itself_is_one_error_line(argv: list[str], tmp_path: Path, capsys, monkeypatch) -> None:
    """Python 3.11's Path.resolve() raises RuntimeError for a link that leads back to itself: `--old
    dir:loop` (or a pull request's `old = "dir:loop"` beside a committed loop), `check loop` and
    `daemon status --cache-dir loop` ended in "internal error: RuntimeError: Symlink loop" (campaign
    17, R08). Each is one line, exit 2."""
    from sglang_contracts.cli import main

    monkeypatch.delenv("SGLANG_CONTRACTS_DEBUG")
    monkeypatch.setenv("SGLANG_CONTRACTS_PACKAGE_INDEX", "none")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (tmp_path / "loop").symlink_to("loop")
    assert main([part.replace("LOOP", str(tmp_path / "loop")) for part in argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("sglang-contracts: error: ")
    assert "internal error" not in err and "loop" in err


@pytest.mark.parametrize("index", ["loop", "b" * 300])
def test_a_package_index_folder_that_cannot_be_followed_is_an_index_that_cannot_be_read(index: str, tmp_path: Path,
                                                                                       monkeypatch) -> None:
    """`package-index = "loop"` (a committed link to itself) or a 300-byte folder name: the closure
    was dropped with "warning: ... could not be computed: RuntimeError" (or OSError: File name too
    long), as for a bug (campaign 17, R07): it is an index that cannot be read, said so."""
    from sglang_contracts.closure.index import IndexUnreachable, PackageIndex, configured_index

    monkeypatch.chdir(tmp_path)
    (tmp_path / "loop").symlink_to("loop")
    index_reader = PackageIndex(configured_index(index))
    with pytest.raises(IndexUnreachable):
        index_reader.metadata_text("credpkg", "1.0")


@pytest.mark.parametrize(("error", "said"), [
    (OSError(errno.ENAMETOOLONG, "File name too long", "/p/" + "b" * 30), "a name longer than the file system takes: /p/" + "b" * 30),
    (OSError(errno.ELOOP, "Too many levels of symbolic links", "/p/loop"), "a link that leads back to itself: /p/loop"),
    (PermissionError(errno.EACCES, "Permission denied", "/p/x.json"), "/p/x.json: Permission denied"),
    (IsADirectoryError(errno.EISDIR, "Is a directory", b"/p/\xff"), "/p/\\xff: Is a directory"),  # escaped, as a finding's path
    (OSError(errno.EIO, "Input/output error"), None),  # no path: nothing the user named to point at
    (ValueError("x"), None),
])
def test_an_error_of_the_system_on_a_path_is_said_with_the_path(error: Exception, said: str | None) -> None:
    """Whatever path given to the tool meets the system's refusal where no code expected it (a
    300-byte name, a link loop, a permission: campaign 17, R06, R08), the run ends in one line
    naming the path and the system's reason, never "internal error"."""
    from sglang_contracts.infra.limits import limit_reached

    assert limit_reached(error) == said
