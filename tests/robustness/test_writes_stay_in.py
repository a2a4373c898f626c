"""What a command writes for the project stays in it (sixth campaign, M01, M03, M06): a path
built from a release's text, a cache folder reached through a link the pull request committed,
and an output name the pull request committed as a link never lead a write out of the project."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sglang_contracts.cli import main
from tests.robustness.test_links_out import commit_all, project_using, release

PRECIOUS = "precious data\n"


@pytest.mark.parametrize("text", ["/tmp/x/victim", "..", "../../x", "a/../../b", ".hidden", "", "x\0y", "C:\\x"])
def test_a_release_s_text_is_one_safe_part_of_a_file_name(text: str) -> None:
    from sglang_contracts.sources.base import file_name_part

    part = file_name_part(text)
    assert part and "/" not in part and "\\" not in part and "\0" not in part and not part.startswith(".")
    assert file_name_part("0.5.22.post1+cu129") == "0.5.22.post1+cu129"  # a version is kept as it is


@pytest.mark.parametrize("setting", ['pr-body = "{new}.txt"', 'pr-body = "docs/{new}.txt"'])
def test_a_version_that_is_a_path_names_no_file_out_of_the_project(setting: str, tmp_path: Path, monkeypatch,
                                                                   capsys) -> None:
    """M01: the project's configuration names the new release, a folder of the pull request's
    whose `__version__` is an absolute path, and the PR body `{new}.txt`: the path was checked
    before `{new}` was put in it, and `bump` replaced a file out of the project with the body."""
    root, old, _ = project_using(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text(PRECIOUS)
    vendor = release(root / "vendor", str(outside / "victim"), {"sglang/srt/a.py": "y = 1\n"})
    with (root / "pyproject.toml").open("a") as pyproject:
        pyproject.write(f'[tool.sglang-contracts]\nold = "dir:{old}"\nnew = "dir:{vendor.name}"\n{setting}\n')
    monkeypatch.chdir(root)
    main(["bump", "--cache-dir", str(tmp_path / "cache")])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert victim.read_text() == PRECIOUS
    assert sorted(path.name for path in outside.iterdir()) == ["victim.txt"]
    written = next(root.rglob("*victim.txt"))
    assert written.parent == root / setting.split('"')[1].rpartition("/")[0]


@pytest.mark.parametrize("cache", [".cache/sglang-contracts", ".cache/../sgc"])
def test_a_cache_below_a_folder_the_pull_request_made_a_link_out_is_not_used(cache: str, tmp_path: Path, monkeypatch,
                                                                              capsys) -> None:
    """M03: the pull request commits `.cache -> /outside`; a CI job's `--cache-dir
    .cache/sglang-contracts` (the link is above the cache folder, not in it) wrote the cache's
    records outside the project. It is refused as a cache holding a link is: one warning line,
    nothing written, the findings as ever."""
    root, old, new = project_using(tmp_path)
    (root / "use.py").write_text("from sglang.srt.a import x\nx()\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / ".cache").symlink_to(outside, target_is_directory=True)
    commit_all(root, "a pull request that commits a link out where the CI keeps its cache")
    monkeypatch.chdir(root)
    status = main(["check", "--old", str(old), "--new", str(new), "--cache-dir", cache])
    out, err = capsys.readouterr()
    assert status == 1 and "use.py:1:" in out
    assert err.count("is inside the project and is reached through a symbolic link") == 1
    assert list(outside.iterdir()) == [] and not (tmp_path / "sgc").exists()  # `..` after the link: beside it


PATCH = ("diff --git a/python/sglang/srt/a.py b/python/sglang/srt/a.py\n--- a/python/sglang/srt/a.py\n"
         "+++ b/python/sglang/srt/a.py\n@@ -1 +1,2 @@\n x = 1\n+z = 2\n")


def test_patch_rebase_does_not_use_a_cache_the_pull_request_leads_out_either(tmp_path: Path, monkeypatch,
                                                                              capsys) -> None:
    """M03's class: `patch rebase` and `bump` open the releases with the cache too (a version's
    wheel is downloaded into it): the same cache is refused there, with the same warning."""
    root, old, _ = project_using(tmp_path)
    new = release(tmp_path / "r1", "1.0.1", {"sglang/srt/a.py": "x = 1\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / ".cache").symlink_to(outside, target_is_directory=True)
    (root / "n.patch").write_text(PATCH)
    monkeypatch.chdir(root)
    status = main(["patch", "rebase", "n.patch", "--old", str(old), "--new", str(new), "--cache-dir",
                   ".cache/sglang-contracts", "-o", "new.patch"])
    err = capsys.readouterr().err
    assert status == 0 and err.count("is inside the project and is reached through a symbolic link") == 1
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize(("dangling", "named_from"), [(True, "."), (False, "."), (True, "sub")])
def test_a_rebased_patch_or_plan_named_by_a_link_out_is_not_written_through(dangling: bool, named_from: str,
                                                                           tmp_path: Path, monkeypatch, capsys) -> None:
    """M06: single-patch `patch rebase X.patch -o NEW.patch --plan PLAN.md`, with both names
    links the pull request committed to files out of the project (there or not yet): the run
    wrote through them. They are refused in one line, as any file the project's commands write
    there (write_under), and nothing out of the project is made or changed."""
    root, _, _ = project_using(tmp_path)
    old = release(tmp_path / "r0", "1.0.0", {"sglang/srt/a.py": "x = 1\n"})
    new = release(tmp_path / "r1", "1.0.1", {"sglang/srt/a.py": "x = 1\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "n.patch").write_text(PATCH)
    for name in ("new.patch", "plan.md"):
        if not dangling:
            (outside / name).write_text(PRECIOUS)
        (root / name).symlink_to(outside / name)
    before = {path.name: path.read_text() for path in outside.iterdir()}
    (root / named_from).mkdir(exist_ok=True)
    monkeypatch.chdir(root / named_from)
    up = "../" * (named_from != ".")
    status = main(["patch", "rebase", f"{up}n.patch", "--old", str(old), "--new", str(new), "-o", f"{up}new.patch",
                   "--plan", f"{up}plan.md", "--cache-dir", str(tmp_path / "cache")])
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err
    assert "refused to write plan.md" in err and "not a regular file" in err
    assert {path.name: path.read_text() for path in outside.iterdir()} == before


def test_a_conflicts_tree_named_by_a_link_out_is_refused_before_anything_is_written(tmp_path: Path, monkeypatch,
                                                                                     capsys) -> None:
    """M06's class: single-patch `--tree conflicts`, the pull request's link out of the project,
    was made a git repository with the release's files; refused as the stack's `--tree` is."""
    root, old, new = project_using(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "n.patch").write_text(PATCH)
    (root / "conflicts").symlink_to(outside, target_is_directory=True)
    monkeypatch.chdir(root)
    status = main(["patch", "rebase", "n.patch", "--old", str(old), "--new", str(new), "--tree", "conflicts/t",
                   "--cache-dir", str(tmp_path / "cache")])
    err = capsys.readouterr().err
    assert status == 2 and "--tree conflicts/t: a link on its way leads out of the project" in err
    assert list(outside.iterdir()) == []


def test_a_rebased_patch_named_in_the_project_or_out_of_it_is_written(tmp_path: Path, monkeypatch, capsys) -> None:
    """The outputs the user names are written as ever: a new file in the project, a regular
    file there replaced, a file out of the project (the user's to name) written where named."""
    root, _, _ = project_using(tmp_path)
    old = release(tmp_path / "r0", "1.0.0", {"sglang/srt/a.py": "x = 1\n"})
    new = release(tmp_path / "r1", "1.0.1", {"sglang/srt/a.py": "x = 1\n"})
    (root / "n.patch").write_text(PATCH)
    (root / "plan.md").write_text("# Rebase of `n.patch`: an old plan\n")  # an earlier draft (campaign 17, R04)
    elsewhere = tmp_path / "elsewhere" / "new.patch"
    monkeypatch.chdir(root)
    for output in ("out/new.patch", str(elsewhere), "../up.patch"):
        monkeypatch.chdir(root / "out" if output.startswith("..") else root)
        status = main(["patch", "rebase", str(root / "n.patch"), "--old", str(old), "--new", str(new), "-o", output,
                       "--plan", str(root / "plan.md"), "--cache-dir", str(tmp_path / "cache")])
        assert status == 0, capsys.readouterr().err
        assert "+z = 2" in Path(output).read_text() and "an old plan" not in (root / "plan.md").read_text()
    assert (root / "up.patch").is_file()
    shutil.rmtree(tmp_path / "elsewhere")


@pytest.mark.parametrize("variable", ["GIT_DIR", "GIT_INDEX_FILE"])
def test_the_scratch_repositories_ignore_the_repository_the_environment_names(variable: str, tmp_path: Path,
                                                                              monkeypatch, capsys) -> None:
    """git exports GIT_INDEX_FILE to every hook it runs (and GIT_DIR in a worktree, or after
    `vcsh enter`): `patch rebase --tree` and `bump` ran `git add -A` and `git commit` of their
    scratch tree with it, into the user's repository and index (campaign 15, R14)."""
    import subprocess

    root, old, new = project_using(tmp_path)
    (root / "n.patch").write_text(PATCH)
    commit_all(root, "the user's")

    def state() -> tuple[str, str]:
        def git(*args: str) -> str:
            return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout
        return git("log", "--format=%s"), git("ls-files")

    before = state()
    monkeypatch.setenv(variable, str(root / ".git" / ("index" if variable == "GIT_INDEX_FILE" else "")))
    monkeypatch.chdir(root)
    status = main(["patch", "rebase", "n.patch", "--old", str(old), "--new", str(new), "--tree", "conflicts",
                   "--cache-dir", str(tmp_path / "cache")])
    assert status in (0, 1), capsys.readouterr().err
    monkeypatch.delenv(variable)
    assert state() == before and (root / "conflicts" / "python").is_dir()
