"""The pre-commit hook, run for real: `pre-commit run` with this checkout as the hook's repository
on a throwaway git repo holding a copy of the fixture project. pre-commit builds its own
virtualenv and installs this checkout into it, as it would for a user: once for the module (what
`pre-commit try-repo` does, in a store of its own each time, installed it again for each test:
5-7 s each)."""

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


def _as_committed(checkout: Path, shadow: Path) -> tuple[Path, str]:
    """(repository, revision) of the checkout as it is, as `pre-commit try-repo` makes them: the
    checkout at HEAD, or, with changes to its tracked files, a clone of it whose one more commit
    holds them (staged or not)."""
    def git(*argv: str, cwd: Path = checkout, **env: str) -> str:
        return subprocess.run(["git", *argv], cwd=cwd, check=True, capture_output=True, text=True,
                              env=checkout_env(**GIT_IDENTITY, **env)).stdout.strip()

    head = git("rev-parse", "HEAD")
    if not git("status", "--porcelain", "--untracked-files=no"):
        return checkout, head
    git("clone", "-q", str(checkout), str(shadow))
    git("checkout", "-q", head, "-b", "_pc_tmp", cwd=shadow)
    into_shadow = {"GIT_INDEX_FILE": str(shadow / ".git" / "index"),
                   "GIT_OBJECT_DIRECTORY": str(shadow / ".git" / "objects")}
    git("add", "-u", **into_shadow)
    git("commit", "-q", "--no-verify", "-m", "the checkout as it is", cwd=shadow)
    return shadow, git("rev-parse", "HEAD", cwd=shadow)


@pytest.fixture(scope="module")
def run_hook(repo, tmp_path_factory):
    home = tmp_path_factory.mktemp("pre-commit-home")
    cache = tmp_path_factory.mktemp("contracts-cache")
    hooks_repo, rev = _as_committed(CHECKOUT, tmp_path_factory.mktemp("hooks") / "shadow")

    def run(*files: str, hook: str = "sglang-contracts", all_files: bool = False) -> subprocess.CompletedProcess:
        config = home / f"{hook}.yaml"
        config.write_text(f"repos:\n-   repo: {hooks_repo}\n    rev: {rev}\n    hooks:\n    -   id: {hook}\n")
        command = [sys.executable, "-m", "pre_commit", "run", "--config", str(config), hook,
                   "--color", "never", *(["--all-files"] if all_files else ["--files", *files])]
        # Not checkout_env: inside its own virtualenv the hook must find the package it installed.
        env = {**GIT_IDENTITY, "PATH": __import__("os").environ["PATH"], "HOME": str(home),
               "PRE_COMMIT_HOME": str(home), "SGLANG_CONTRACTS_CACHE": str(cache)}
        return subprocess.run(command, cwd=repo, capture_output=True, text=True, env=env, timeout=900)

    return run


def reported(output: str) -> list[str]:
    return [" ".join(line.split(" ", 2)[:2]) for line in output.splitlines() if ": SGC" in line]


def test_hook_reports_the_named_files_with_whole_project_knowledge(run_hook):
    result = run_hook("demo_omni/engine.py", "demo_omni/layers.py")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "sglang-contracts" in result.stdout and "Failed" in result.stdout
    # engine.py's break is only visible through demo_omni/vendor/sglang/core.py, not a named file.
    assert reported(result.stdout) == [p for p in EXPECTED if p.startswith(("demo_omni/engine.py", "demo_omni/layers.py"))]


def test_hook_passes_on_a_clean_file(run_hook):
    result = run_hook("demo_omni/__init__.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Passed" in result.stdout and reported(result.stdout) == []


def test_fix_hook_rewrites_the_named_files_and_fails_the_commit(run_hook, repo):
    """pre-commit fails a hook that changed files: the fix is then reviewed and staged."""
    before = (repo / "pyproject.toml").read_text()
    try:
        result = run_hook("pyproject.toml", hook="sglang-contracts-fix")
        assert result.returncode == 1, result.stdout + result.stderr
        assert "files were modified by this hook" in result.stdout
        after = (repo / "pyproject.toml").read_text()
        # the sglang pin waits for the patch stack the Dockerfile applies to be rebased (docs/fixing.md)
        assert '"sglang==0.9.0"' in after and '"transformers==4.51.0"' in after
        assert (repo / "docs/install.md").read_text().count("sglang==0.9.0") == 1  # not a named file
    finally:
        (repo / "pyproject.toml").write_text(before)


def test_a_committed_file_named_like_an_option_is_checked_not_obeyed(run_hook, repo):
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
        result = run_hook(all_files=True)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "Failed" in result.stdout
        engine = [p for p in EXPECTED if p.startswith("demo_omni/engine.py")]
        assert engine and set(engine) <= set(reported(result.stdout))
    finally:
        subprocess.run([*git, "rm", "-q", "--", named.name], cwd=repo, check=True)
        subprocess.run([*git, "commit", "-q", "-m", "gone"], cwd=repo, check=True)
