"""The pre-commit hook, run for real: `pre-commit try-repo` this checkout on a throwaway git repo
holding a copy of the fixture project. pre-commit builds its own virtualenv and installs this
checkout into it, as it would for a user."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import CHECKOUT, NEW, OLD, PROJECT, add_settings, checkout_env
from tests.helpers import EXPECTED

GIT_IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
                "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hook") / "demo"
    shutil.copytree(PROJECT, root)
    add_settings(root / "pyproject.toml", f'old = "{OLD}"\nnew = "{NEW}"\n')
    for command in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "demo"]):
        subprocess.run(["git", *command], cwd=root, check=True, env=checkout_env(**GIT_IDENTITY))
    return root


@pytest.fixture(scope="module")
def try_repo(repo, tmp_path_factory):
    home = tmp_path_factory.mktemp("pre-commit-home")
    cache = tmp_path_factory.mktemp("contracts-cache")

    def run(*files: str, hook: str = "sglang-contracts", all_files: bool = False) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "pre_commit", "try-repo", str(CHECKOUT), hook,
                   "--color", "never", *(["--all-files"] if all_files else ["--files", *files])]
        # Not checkout_env: inside its own virtualenv the hook must find the package it installed.
        env = {**GIT_IDENTITY, "PATH": __import__("os").environ["PATH"], "HOME": str(home),
               "PRE_COMMIT_HOME": str(home), "SGLANG_CONTRACTS_CACHE": str(cache)}
        return subprocess.run(command, cwd=repo, capture_output=True, text=True, env=env, timeout=900)

    return run


def reported(output: str) -> list[str]:
    return [" ".join(line.split(" ", 2)[:2]) for line in output.splitlines() if ": SGC" in line]


def test_hook_reports_the_named_files_with_whole_project_knowledge(try_repo):
    result = try_repo("demo_omni/engine.py", "demo_omni/layers.py")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "sglang-contracts" in result.stdout and "Failed" in result.stdout
    # engine.py's break is only visible through demo_omni/vendor/sglang/core.py, not a named file.
    assert reported(result.stdout) == [p for p in EXPECTED if p.startswith(("demo_omni/engine.py", "demo_omni/layers.py"))]


def test_hook_passes_on_a_clean_file(try_repo):
    result = try_repo("demo_omni/__init__.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Passed" in result.stdout and reported(result.stdout) == []


def test_fix_hook_rewrites_the_named_files_and_fails_the_commit(try_repo, repo):
    """pre-commit fails a hook that changed files: the fix is then reviewed and staged."""
    before = (repo / "pyproject.toml").read_text()
    try:
        result = try_repo("pyproject.toml", hook="sglang-contracts-fix")
        assert result.returncode == 1, result.stdout + result.stderr
        assert "files were modified by this hook" in result.stdout
        after = (repo / "pyproject.toml").read_text()
        # the sglang pin waits for the patch stack the Dockerfile applies to be rebased (docs/fixing.md)
        assert '"sglang==0.9.0"' in after and '"transformers==4.51.0"' in after
        assert (repo / "docs/install.md").read_text().count("sglang==0.9.0") == 1  # not a named file
    finally:
        (repo / "pyproject.toml").write_text(before)


def test_a_committed_file_named_like_an_option_is_checked_not_obeyed(try_repo, repo):
    """pre-commit appends the file names after the hook's args with no `--`: a committed file
    named `--exit-zero` (a python shebang: pre-commit's type check takes it for python) was the
    flag, and `pre-commit run --all-files`, the CI job, passed with findings (campaign 10, R03)."""
    named = repo / "--exit-zero"
    named.write_text("#!/usr/bin/env python\n")
    named.chmod(0o755)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "add", "--", named.name], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "a file named like an option"], cwd=repo, check=True)
    try:
        result = try_repo(all_files=True)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "Failed" in result.stdout
        engine = [p for p in EXPECTED if p.startswith("demo_omni/engine.py")]
        assert engine and set(engine) <= set(reported(result.stdout))
    finally:
        subprocess.run([*git, "rm", "-q", "--", named.name], cwd=repo, check=True)
        subprocess.run([*git, "commit", "-q", "-m", "gone"], cwd=repo, check=True)
