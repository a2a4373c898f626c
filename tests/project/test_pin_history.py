"""A pin that already names the target (a bump branch, or after `fix`): --old is the pin where
the branch left the default branch, never the target itself (issue 34 §3)."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest

from sglang_contracts.check.runner import CheckOptions, run_check
from sglang_contracts.cli import main
from sglang_contracts.infra.errors import UsageError
from sglang_contracts.project.pin_history import names_the_same_release, pin_before_the_bump
from sglang_contracts.project.pins import find_sglang_pin


def git(root: Path, *arguments: str) -> str:
    return subprocess.run(["git", "-C", str(root), *arguments], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(root), "PATH": "/usr/bin:/bin"}).stdout


def repository(root: Path, pinned: str, branch: str = "main") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", branch)
    (root / "pyproject.toml").write_text(f'[project]\nname = "p"\ndependencies = [\n    "sglang=={pinned}",\n]\n')
    git(root, "add", "-A")
    git(root, "commit", "-qm", "pin")
    return root


def set_pin(root: Path, pinned: str) -> None:
    path = root / "pyproject.toml"
    path.write_text(path.read_text().replace('"sglang==', f'"sglang=={pinned}",  # was "sglang==', 1))


@pytest.mark.parametrize(("pinned", "spec", "same"), [("0.5.23", "0.5.23", True), ("0.5.23", "v0.5.23", True),
                                                      ("0.5.23", " 0.5.23 ", True), ("0.5.22", "0.5.23", False),
                                                      ("0.5.23", "0.5.23.post1", False), ("0.5.23", "./0.5.23", False),
                                                      # with its source (campaign 17, R10); a folder is no version
                                                      ("0.5.23", "git:v0.5.23", True), ("0.5.23", "pypi:0.5.23", True),
                                                      ("0.5.23", "dir:0.5.23", False), ("0.5.23", "git:", False)])
def test_the_target_is_named_the_way_the_pin_is_or_with_a_v(pinned: str, spec: str, same: bool) -> None:
    assert names_the_same_release(pinned, spec) is same


def test_on_a_bump_branch_the_pin_is_read_where_the_branch_left_main(tmp_path: Path) -> None:
    root = repository(tmp_path / "p", "0.5.22")
    git(root, "checkout", "-qb", "bump")
    set_pin(root, "0.5.23")
    git(root, "commit", "-qam", "bump")
    pin = find_sglang_pin(root)
    assert pin is not None and pin.version == "0.5.23"
    before, why_not = pin_before_the_bump(root, pin)
    assert before is not None and why_not == ""
    assert (before.version, before.where, before.written) == ("0.5.22", "pyproject.toml", "sglang==0.5.22")
    assert "already names 0.5.23" in before.reason and "where HEAD left main" in before.reason


def test_an_uncommitted_fix_on_master_reads_the_pin_of_head(tmp_path: Path) -> None:
    root = repository(tmp_path / "p", "0.5.22", branch="master")
    set_pin(root, "0.5.23")  # what `fix` wrote, not committed yet
    before, _ = pin_before_the_bump(root, find_sglang_pin(root))
    assert before is not None and before.version == "0.5.22" and "where HEAD left master" in before.reason


def test_the_same_pin_at_the_base_or_no_repository_says_why_not(tmp_path: Path) -> None:
    root = repository(tmp_path / "p", "0.5.23")
    before, why_not = pin_before_the_bump(root, find_sglang_pin(root))
    assert before is None and "already pinned 0.5.23 at" in why_not
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "requirements.txt").write_text("sglang==0.5.23\n")
    before, why_not = pin_before_the_bump(bare, find_sglang_pin(bare))
    assert before is None and "not in a git repository" in why_not


def test_a_repository_without_a_default_branch_says_which_it_looked_for(tmp_path: Path) -> None:
    root = repository(tmp_path / "p", "0.5.22", branch="work")
    set_pin(root, "0.5.23")
    before, why_not = pin_before_the_bump(root, find_sglang_pin(root))
    assert before is None and "none of the branches origin/HEAD, main, master" in why_not


def test_the_repository_configuration_runs_nothing(tmp_path: Path) -> None:
    """A pull request's checkout is the repository read here: its fsmonitor or hooks never run."""
    root = repository(tmp_path / "p", "0.5.22")
    ran = tmp_path / "RAN"
    git(root, "config", "core.fsmonitor", f"touch {ran}; false")
    git(root, "checkout", "-qb", "bump")
    ran.unlink(missing_ok=True)  # the checkout above ran it: that git is the test's, not the tool's
    set_pin(root, "0.5.23")
    before, _ = pin_before_the_bump(root, find_sglang_pin(root))
    assert before is not None and before.version == "0.5.22"
    assert not ran.exists()


def test_a_bare_repository_the_project_commits_is_not_its_history(tmp_path: Path) -> None:
    """A project in a subfolder of a repository commits HEAD, objects/, refs/ and a config of a
    history it wrote (campaign 13, R07): git must not take that folder as the project's repository,
    or --old is the pin that forged history says the bump leaves."""
    mono = repository(tmp_path / "mono", "0.5.21")
    forged = repository(tmp_path / "forged", "0.5.22")
    for root in (mono, forged):
        git(root, "checkout", "-qb", "bump")
        set_pin(root, "0.5.23")
        git(root, "commit", "-qam", "bump")
    project = mono / "sub"
    shutil.copytree(forged / ".git", project)
    with (project / "config").open("a") as config:
        config.write("[core]\n\tbare = false\n\tworktree = .\n")
    shutil.copy(forged / "pyproject.toml", project / "pyproject.toml")
    git(mono, "add", "-A")
    git(mono, "commit", "-qm", "the pull request's files")
    before, why_not = pin_before_the_bump(project, find_sglang_pin(project))
    assert before is None and "shaped like a bare repository" in why_not


def test_check_after_fix_in_a_bump_branch_still_reports_the_bump(published, capsys) -> None:
    """The fixture project pins 0.9.0 on main; its bump branch pins 0.9.1, the target: the check
    is of 0.9.0 -> 0.9.1, as with --old given, and says where --old came from."""
    project, options = published
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "pinned 0.9.0")
    explicit = run_check([project], dataclasses.replace(options, replay=False))
    assert explicit.diagnostics, "the fixture's bump reports nothing: the test would prove nothing"
    git(project, "checkout", "-qb", "bump")
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('"sglang==0.9.0"', '"sglang==0.9.1"'))
    git(project, "commit", "-qam", "bump")
    found = run_check([project], dataclasses.replace(options, old=None, replay=False))
    assert found.old.release.short == "0.9.0" and found.new.release.short == "0.9.1"
    # the same findings, but the one about the pin left behind: the branch moved it
    moved = [d for d in explicit.diagnostics if d.code == "SGC702" and d.path == "pyproject.toml"]
    assert len(moved) == 1
    assert found.diagnostics == [d for d in explicit.diagnostics if d not in moved]
    assert found.pin is not None and found.pin.version == "0.9.0"
    assert any("already names 0.9.1" in note for note in found.notes)


def test_a_pin_naming_the_target_with_no_history_is_a_one_line_error(tmp_path: Path, capsys, monkeypatch) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "requirements.txt").write_text("sglang==0.5.23\n")
    monkeypatch.chdir(root)
    assert main(["check", "--new", "0.5.23", "--cache-dir", str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "already names --new 0.5.23" in err and "give --old" in err
    with pytest.raises(UsageError):
        run_check([root], CheckOptions(new="v0.5.23", cache_dir=tmp_path / "cache"))
