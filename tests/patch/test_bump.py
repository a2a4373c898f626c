"""`bump`: the safe fixes, the live stack rebased into its new folder, the plan and the PR body,
a last check; `--dry-run` is all of it as one diff, and writes nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.patch.stack_project import DELTA_UPSTREAM, KERNEL, NEW_KERNEL, OLD_KERNEL, SCHED_A, SCHED_B, project, release
from sglang_contracts.cli import main

HELPER = "def helper(x):\n    return x\n"


@pytest.fixture
def releases(tmp_path: Path) -> tuple[Path, Path]:
    """The stack's releases, and a helper B moved to another module (a safe fix of the import)."""
    return (release(tmp_path / "A", "0.5.1", {"sglang/srt/sched.py": SCHED_A, OLD_KERNEL: KERNEL,
                                              "sglang/srt/utils.py": HELPER}),
            release(tmp_path / "B", "0.5.2", {"sglang/srt/sched.py": SCHED_B.replace(*DELTA_UPSTREAM), NEW_KERNEL: KERNEL,
                                              "sglang/srt/utils.py": "OTHER = 1\n", "sglang/srt/helpers.py": HELPER}))


def bump_project(tmp_path: Path, settings: str = "", folder: str = "v0.5.1") -> Path:
    """The stack's project, its first patch making B's change of delta too, and a module
    importing the helper B moved."""
    root = project(tmp_path, folder, upstream=True)
    (root / "app.py").write_text("from sglang.srt.utils import helper\nfrom sglang.srt.sched import alpha\n\n"
                                 "print(helper(alpha(1)))\n")
    if settings:
        (root / "pyproject.toml").write_text(f'[project]\nname = "p"\n\n[tool.sglang-contracts]\n{settings}')
    git = lambda *args: subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "before the bump")
    return root


def files_of(root: Path) -> dict[str, bytes]:
    """Every file of the project but git's and the conflicts' trees (repositories of their own)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(root).parts and "-conflicts" not in p.as_posix()}


def bump(root: Path, releases, monkeypatch, *extra: str) -> int:
    monkeypatch.chdir(root)
    return main(["bump", "--old", str(releases[0]), "--new", str(releases[1]), "--cache-dir", str(root.parent / "cache"),
                 *extra])


def test_bump_fixes_rebases_and_writes_the_plan_and_the_pr_body(releases, tmp_path: Path, monkeypatch, capsys) -> None:
    root = bump_project(tmp_path)
    assert bump(root, releases, monkeypatch) == 1  # a conflict is left to resolve
    err = capsys.readouterr().err
    assert (root / "app.py").read_text().startswith("from sglang.srt.helpers import helper\n")  # the safe fix
    assert "ARG PATCH_VERSION=v0.5.2\n" in (root / "docker/Dockerfile").read_text()
    assert sorted(p.name for p in (root / "docker/patch/v0.5.2").iterdir()) == ["sglang-first.patch", "sglang-second.patch"]
    plan = (root / "docs/draft/sglang-0.5.2-upgrade-plan.md").read_text()
    body = (root / "docs/draft/sglang-0.5.2-pr-body.md").read_text()
    assert plan.startswith("# Rebase of the patch stack `docker/patch/v0.5.1/`: sglang 0.5.1 -> 0.5.2")
    assert body.startswith("## What the bump did\n") and "## SGLang contracts: 0.5.1 → 0.5.2" in body
    assert "1 of " in body and "`app.py`" in body
    assert "written to `docker/patch/v0.5.2/`; not verified: 1 hunk left out" in body
    assert "- [ ] Resolve 1 hunk of `sglang-first.patch` left in conflict" in body
    # the last check reads the new stack: the old folder's patches are no finding of it
    assert "docker/patch/v0.5.1/sglang-first.patch" not in body.split("## SGLang contracts")[1]
    assert "not verified: 1 hunk left out" in err and "without it, the 2 new patches apply in order" in err
    app = (root / "app.py").read_text()
    subprocess.run(["git", "checkout", "--", "app.py"], cwd=root, check=True)
    assert bump(root, releases, monkeypatch) == 2  # the first bump's conflicts are kept, and nothing is fixed
    assert "not an empty folder" in capsys.readouterr().err and (root / "app.py").read_text() != app


@pytest.mark.parametrize("folder", ["v0.5.1", "latest"])  # in latest/, `fix` drops the upstream hunk first
def test_dry_run_is_the_same_change_as_one_diff_and_writes_nothing(releases, tmp_path: Path, monkeypatch,
                                                                  capsys, folder: str) -> None:
    dry, real = (bump_project(tmp_path / side, folder=folder) for side in ("dry", "real"))
    before = files_of(dry)
    assert bump(dry, releases, monkeypatch, "--dry-run") == 1
    diff = capsys.readouterr().out
    assert files_of(dry) == before and not (dry / "docs").exists()
    assert "+from sglang.srt.helpers import helper" in diff
    assert ("-ARG PATCH_VERSION=v0.5.1\n+ARG PATCH_VERSION=v0.5.2\n" in diff) == (folder == "v0.5.1")
    bump(real, releases, monkeypatch)
    # the diff, applied by git, makes the files the bump writes (here the last check finds what
    # the fixes leave, so the PR body is the same too)
    (tmp_path / "dry.diff").write_text(diff)
    subprocess.run(["git", "apply", str(tmp_path / "dry.diff")], cwd=dry, check=True, capture_output=True)
    assert files_of(real) == files_of(dry)


def test_the_plan_and_body_go_where_the_settings_say(releases, tmp_path: Path, monkeypatch) -> None:
    root = bump_project(tmp_path, 'upgrade-plan = "notes/plan-{new}.md"\npr-body = "notes/body.md"\n')
    bump(root, releases, monkeypatch)
    assert (root / "notes/plan-0.5.2.md").is_file() and (root / "notes/body.md").is_file()
    bump(root, releases, monkeypatch, "--pr-body", str(tmp_path / "elsewhere.md"), "--tree", str(tmp_path / "trees"))
    assert (tmp_path / "elsewhere.md").read_text().startswith("## What the bump did")


def test_a_project_without_a_patch_stack_gets_the_fixes_and_the_body(releases, tmp_path: Path, monkeypatch) -> None:
    root = bump_project(tmp_path)
    subprocess.run(["git", "rm", "-rqf", "docker"], cwd=root, check=True)
    bump(root, releases, monkeypatch)
    body = (root / "docs/draft/sglang-0.5.2-pr-body.md").read_text()
    assert "- no patch stack against SGLang to rebase" in body and "`app.py`" in body
    assert not (root / "docs/draft/sglang-0.5.2-upgrade-plan.md").exists()


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry run", "writing run"])
@pytest.mark.parametrize("named", ["link", "git-config"])
def test_a_dry_run_reads_no_report_file_the_writing_run_would_refuse_to_write(named: str, dry_run: bool, releases,
                                                                              tmp_path: Path, monkeypatch, capsys) -> None:
    """The dry run diffs each report against the file it would replace, read as the writing run
    writes it: a pull request's PR body linked to a file out of the project (the CI's
    environment, /proc/self/environ), or `pr-body` naming .git/config (where actions/checkout
    keeps its token), is refused as the write is, never printed (seventh campaign, P04, P05). The
    writing run refuses it before the fixes write anything: it moved the pins, then stopped
    (eighth campaign, Q07)."""
    secret = tmp_path / "outside-secret.txt"
    secret.write_text("TOPSECRET=hunter2\n")
    if named == "link":
        root = bump_project(tmp_path)
        (root / "docs/draft").mkdir(parents=True, exist_ok=True)
        (root / "docs/draft/sglang-0.5.2-pr-body.md").symlink_to(secret)
        refused = "refused to write docs/draft/sglang-0.5.2-pr-body.md"
    else:
        root = bump_project(tmp_path, 'pr-body = ".git/config"\n')
        with (root / ".git/config").open("a") as config:
            config.write("[http]\n\textraheader = TOPSECRET=hunter2\n")
        refused = "pr-body '.git/config' is in the project's version control folder"  # the setting itself refused
    before = files_of(root)
    assert bump(root, releases, monkeypatch, *(["--dry-run"] if dry_run else [])) == 2
    out, err = capsys.readouterr()
    assert "TOPSECRET" not in out + err
    assert refused in err
    assert files_of(root) == before


def test_bump_of_a_path_from_another_folder_works_on_that_project(releases, tmp_path: Path, monkeypatch) -> None:
    """Campaign 11, R07: `bump PATH` run from another folder took the working folder for the
    project: its configuration, and its `docs/draft/` for the PR body."""
    root = bump_project(tmp_path / "p", 'pr-body = "notes/body.md"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "pyproject.toml").write_text('[project]\nname = "other"\n')
    monkeypatch.chdir(elsewhere)
    main(["bump", str(root), "--old", str(releases[0]), "--new", str(releases[1]),
          "--cache-dir", str(tmp_path / "cache")])
    assert (root / "notes/body.md").read_text().startswith("## What the bump did")
    assert sorted(p.name for p in elsewhere.iterdir()) == ["pyproject.toml"]


@pytest.mark.parametrize("command, key, named", [
    ("bump", "pr-body", "app.py"), ("bump", "pr-body", "pyproject.toml"), ("bump", "upgrade-plan", "pyproject.toml"),
    ("bump", "upgrade-plan", "docs/notes.md"), ("patch rebase", "upgrade-plan", "app.py"),
    ("patch rebase", "upgrade-plan", "docs/notes.md")])
def test_a_draft_the_configuration_names_is_never_written_over_another_file(command: str, key: str, named: str, releases,
                                                                             tmp_path: Path, monkeypatch, capsys) -> None:
    """Campaign 12, R03: `pr-body = "app.py"` (or the configuration itself; `upgrade-plan` the
    same) had the bump replace the file with the markdown draft, and say only `PR body: app.py`.
    A file that is not an earlier draft is refused in one line, before anything is written."""
    root = bump_project(tmp_path, f'{key} = "{named}"\n')
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs/notes.md").write_text("# Notes kept by hand\n")
    before = files_of(root)
    monkeypatch.chdir(root)
    argv = command.split() + ["--old", str(releases[0]), "--new", str(releases[1]), "--cache-dir", str(tmp_path / "c")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sglang-contracts: error: refused to write {named}, which `{key}` names: it is not a draft")
    assert err.count("\n") == 1 and files_of(root) == before


@pytest.mark.parametrize("command, flag, named", [
    ("bump", "--pr-body", "app.py"), ("bump", "--plan", "pyproject.toml"), ("patch rebase", "--plan", "app.py"),
    ("patch rebase PATCH", "--plan", "PATCH")])
def test_a_draft_the_command_line_names_is_never_written_over_another_file(command: str, flag: str, named: str,
                                                                           releases, tmp_path: Path, monkeypatch,
                                                                           capsys) -> None:
    """Campaign 17, R04: a path given to --plan or --pr-body was written whatever it held: `patch
    rebase x.patch --plan x.patch` (a slip for x.md) replaced the patch being rebased. It is held
    to what the settings are: an earlier draft or an empty file, else one line, nothing written."""
    root = bump_project(tmp_path)
    patch = next((root / "docker/patch/v0.5.1").iterdir()).relative_to(root).as_posix()
    before = files_of(root)
    monkeypatch.chdir(root)
    argv = [part.replace("PATCH", patch) for part in command.split() + [flag, named]]
    assert main([*argv, "--old", str(releases[0]), "--new", str(releases[1]), "--cache-dir", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    shown = named.replace("PATCH", patch)
    assert err.startswith(f"sglang-contracts: error: refused to write {shown}, which `{flag}` names: it is not a draft")
    assert err.count("\n") == 1 and files_of(root) == before


def test_a_draft_is_written_over_an_earlier_draft(releases, tmp_path: Path, monkeypatch) -> None:
    root = bump_project(tmp_path, 'pr-body = "notes/body.md"\n')
    (root / "notes").mkdir()
    (root / "notes/body.md").write_text("## What the bump did\n\nan earlier draft, edited by hand\n")
    assert bump(root, releases, monkeypatch) == 1
    body = (root / "notes/body.md").read_text()
    assert body.startswith("## What the bump did\n") and "an earlier draft" not in body
