"""A patch comes from another repository: no path it names is read or written outside the tree
it is applied to, and no git setting a tree could carry runs a command (issue 38, D1 and D2)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sglang_contracts.cli import main
from sglang_contracts.infra.errors import ContractsError
from sglang_contracts.patch.gitapply import UNKNOWN, check_patch
from sglang_contracts.patch.patchfile import parse_patch, unsafe_path_reason
from sglang_contracts.patch.rebase import UNCHECKED, git, rebase_patch, write_under
from sglang_contracts.patch.release import release_relpath
from sglang_contracts.sources import open_release


def release(root: Path, version: str) -> Path:
    (root / "sglang" / "srt").mkdir(parents=True)
    (root / "sglang" / "__init__.py").write_text("from sglang.version import __version__\n")
    (root / "sglang" / "version.py").write_text(f'__version__ = "{version}"\n')
    (root / "sglang" / "srt" / "a.py").write_text("x = 1\n")
    return root


@pytest.fixture
def releases(tmp_path: Path) -> tuple[Path, Path]:
    return release(tmp_path / "A", "1.0.0"), release(tmp_path / "B", "1.0.1")


def hostile_patches(outside: Path) -> dict[str, str]:
    """Each way a file patch can name a path out of its tree, aimed at `outside`."""
    body = "@@ -1 +1,2 @@\n-x = 1\n+[core]\n+\tfsmonitor = \"touch {mark}; false\"\n"
    rename = ("diff --git a/python/sglang/srt/a.py b/python/sglang/srt/a.py\nrename from python/sglang/srt/a.py\n"
              "rename to {to}\n")
    mark = outside / "EXECUTED"
    return {
        "rename to an absolute path": rename.format(to=outside / "WRITTEN"),
        "rename up and out": rename.format(to="python/sglang/../../../WRITTEN"),
        "rename onto .git/config": (rename.format(to=".git/config") + "--- a/python/sglang/srt/a.py\n+++ b/.git/config\n"
                                    + body.format(mark=mark)),
        "rename onto the package's .git": rename.format(to="python/sglang/.GIT/config"),
        "copy to an absolute path": ("diff --git a/python/sglang/srt/a.py b/python/sglang/srt/a.py\ncopy from "
                                     f"python/sglang/srt/a.py\ncopy to {outside / 'WRITTEN'}\n"),
        "rename from outside": ("diff --git a/x b/python/sglang/srt/b.py\nrename from ../../etc/hostname\n"
                                "rename to python/sglang/srt/b.py\n"),
        "new file up and out": ("diff --git a/python/sglang/../../WRITTEN b/python/sglang/../../WRITTEN\nnew file mode 100644\n"
                                "--- /dev/null\n+++ b/python/sglang/../../WRITTEN\n@@ -0,0 +1 @@\n+owned\n"),
        "modified file up and out": ("--- a/python/sglang/srt/../../../../WRITTEN\n+++ b/python/sglang/srt/../../../../WRITTEN\n"
                                     "@@ -1 +1 @@\n-x = 1\n+x = 2\n"),
    }


@pytest.mark.parametrize("case", sorted(hostile_patches(Path("/x"))))
def test_no_patch_path_is_written_outside_the_tree(case: str, releases, tmp_path: Path, capsys) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    patch = work / "evil.patch"
    patch.write_text(hostile_patches(outside)[case])
    old, new = releases
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    main(["patch", "rebase", str(patch), "--old", str(old), "--new", str(new), "-o", str(work / "new.patch"),
          "--plan", str(work / "plan.md"), "--tree", str(work / "tree"), "--cache-dir", str(tmp_path / "cache")])
    err = capsys.readouterr().err
    assert "not-checked" in err and "carried as it is" in err
    assert not list(outside.iterdir())  # not written there, no command run
    made = {p.relative_to(tmp_path) for p in tmp_path.rglob("*")} - set(before)
    assert all(p.parts[0] in ("work", "cache") for p in made), made
    tree_files = {p.relative_to(work / "tree").as_posix() for p in (work / "tree").rglob("*")
                  if ".git" not in p.relative_to(work / "tree").parts}
    assert not {p for p in tree_files if not p.startswith("python")}, tree_files
    assert "fsmonitor" not in (work / "tree" / ".git" / "config").read_text()


def test_a_section_with_an_unsafe_path_is_carried_unchecked(releases, tmp_path: Path) -> None:
    text = hostile_patches(tmp_path)["rename onto .git/config"]
    old, new = (open_release(str(r), sglang_repo=None, cache=tmp_path / "cache") for r in releases)
    rebase = rebase_patch(parse_patch(text), text, old, new)
    (outcome,) = rebase.outcomes
    assert outcome.verdict == UNCHECKED and "a `.git` component" in outcome.detail
    assert rebase.patch_text == text  # the section as it was, for the project to judge
    assert rebase.verified and not rebase.complete


@pytest.mark.parametrize("path", ["/etc/passwd", "python/sglang/../../etc/passwd", "python/sglang/srt/../../../x",
                                  ".git/config", "python/sglang/.git/hooks/pre-commit", "python/sglang/.Git/config",
                                  "python/sglang//srt/a.py", "python/sglang/./a.py", "python/sglang/a\0.py"])
def test_unsafe_paths_are_outside_the_package(path: str) -> None:
    assert unsafe_path_reason(path)
    assert release_relpath(path) is None


def test_a_safe_path_is_in_the_package() -> None:
    assert not unsafe_path_reason("python/sglang/srt/managers/scheduler.py")
    assert release_relpath("python/sglang/srt/managers/scheduler.py") == "sglang/srt/managers/scheduler.py"
    assert release_relpath("python/sglang/srt/..hidden/a.py") == "sglang/srt/..hidden/a.py"  # a name, not a `..`


def test_the_check_never_reads_a_path_out_of_the_release(tmp_path: Path) -> None:
    """The patch rules judge a stack in memory: a `..` path is not read from the release's folder."""
    text = "--- a/python/sglang/../../secret.txt\n+++ b/python/sglang/../../secret.txt\n@@ -1 +1 @@\n-s3cret\n+x\n"
    asked = []
    (verdict,) = check_patch(parse_patch(text), lambda path: asked.append(path) or "s3cret\n")
    assert verdict.status == UNKNOWN and "`..`" in verdict.detail
    assert not asked


def test_write_under_refuses_every_way_out(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (root / "python").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "victim").write_text("mine\n")
    (root / "link.py").symlink_to(tmp_path / "victim")
    for relpath in ("../x", "/tmp/x", ".git/config", "python/sglang/a.py", "link.py"):
        with pytest.raises(ContractsError):
            write_under(root, relpath, "owned\n")
    assert not list((tmp_path / "elsewhere").iterdir())
    assert (tmp_path / "victim").read_text() == "mine\n"
    write_under(root, "sglang/srt/a.py", "x = 1\n")
    assert (root / "sglang" / "srt" / "a.py").read_text() == "x = 1\n"


def test_write_under_never_writes_through_a_hard_link_nor_opens_a_fifo(tmp_path: Path) -> None:
    """helper-41's campaign (N02, N03): the stack rebase rewrites the project's Dockerfile and
    patches in place; a hard link to a file out of the project had that file rewritten, and a
    FIFO at the plan's path blocked the run for good."""
    import os
    import stat

    root = tmp_path / "project"
    (root / "docker").mkdir(parents=True)
    outside = tmp_path / "outside-Dockerfile"
    outside.write_text("ARG PATCH_VERSION=latest\n")
    os.link(outside, root / "docker" / "Dockerfile")
    os.chmod(root / "docker" / "Dockerfile", 0o755)
    write_under(root, "docker/Dockerfile", "ARG PATCH_VERSION=v0.5.2\n")
    assert outside.read_text() == "ARG PATCH_VERSION=latest\n"  # the other name keeps its content
    assert (root / "docker" / "Dockerfile").read_text() == "ARG PATCH_VERSION=v0.5.2\n"
    assert stat.S_IMODE((root / "docker" / "Dockerfile").stat().st_mode) == 0o755  # its mode kept
    os.mkfifo(root / "docker" / "plan.md")
    with pytest.raises(ContractsError, match="not a regular file"):
        write_under(root, "docker/plan.md", "plan\n")


def test_git_runs_no_command_a_tree_configures(tmp_path: Path) -> None:
    """A repository's own settings (an fsmonitor, hooks) run nothing under this tool's git."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    mark = tmp_path / "EXECUTED"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "pre-commit").write_text(f"#!/bin/sh\ntouch {mark}\n")
    (hooks / "pre-commit").chmod(0o755)
    with open(repo / ".git" / "config", "a") as config:
        config.write(f'[core]\n\tfsmonitor = "touch {mark}; false"\n\thooksPath = {hooks}\n')
    (repo / "a.py").write_text("x = 1\n")
    for args in (("status",), ("add", "-A"), ("commit", "-qm", "x"), ("diff", "HEAD")):
        git(repo, *args)
    assert not mark.exists()
    assert git(repo, "log", "--oneline").stdout.strip()  # the commit happened, without its hook


def test_the_scratch_repository_lives_apart_from_its_files(tmp_path: Path) -> None:
    """With `git_dir`, a file the tree holds at `.git/config` is only a file."""
    tree, repository = tmp_path / "tree", tmp_path / "repository"
    tree.mkdir()
    git(tree, "init", "-q", git_dir=repository)
    (tree / ".git").mkdir()
    (tree / ".git" / "config").write_text(f'[core]\n\tfsmonitor = "touch {tmp_path / "EXECUTED"}; false"\n')
    git(tree, "add", "-A", git_dir=repository)
    git(tree, "status", git_dir=repository)
    assert not (tmp_path / "EXECUTED").exists()
    assert os.path.isfile(repository / "HEAD")


def test_a_nul_in_a_patch_path_is_one_line_not_an_internal_error(releases, tmp_path: Path, capsys) -> None:
    patch = tmp_path / "nul.patch"
    patch.write_text('--- a/python/sglang/srt/a.py\n+++ "b/python/sglang/srt/a\\000.py"\n@@ -1 +1 @@\n-x = 1\n+x = 2\n')
    old, new = releases
    status = main(["patch", "rebase", str(patch), "--old", str(old), "--new", str(new),
                   "--cache-dir", str(tmp_path / "cache")])
    err = capsys.readouterr().err
    assert status == 1 and "internal error" not in err and "not written" in err


def test_git_settings_files_a_patch_adds_are_carried_not_written_into_the_trees(releases, tmp_path: Path, capsys) -> None:
    """A `.gitattributes` with `working-tree-encoding=UTF-16` made `git add` fail in the scratch
    tree, and the new patch came out empty and "verified"."""
    patch = tmp_path / "ga.patch"
    patch.write_text("diff --git a/python/sglang/.gitattributes b/python/sglang/.gitattributes\nnew file mode 100644\n"
                     "--- /dev/null\n+++ b/python/sglang/.gitattributes\n@@ -0,0 +1 @@\n+* working-tree-encoding=UTF-16\n"
                     "--- a/python/sglang/srt/a.py\n+++ b/python/sglang/srt/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n")
    old, new = releases
    out = tmp_path / "new.patch"
    main(["patch", "rebase", str(patch), "--old", str(old), "--new", str(new), "-o", str(out),
          "--cache-dir", str(tmp_path / "cache")])
    assert "a file git reads as its own settings" in capsys.readouterr().err
    assert "+x = 2" in out.read_text() and "working-tree-encoding" in out.read_text()


def test_a_failing_git_step_is_one_line_not_a_patch_of_what_worked(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", git_dir=tmp_path / "repository")
    with pytest.raises(ContractsError, match="^git add failed on the rebased tree"):
        git(tmp_path, "add", "no-such-file", git_dir=tmp_path / "repository", must_succeed=True)


def test_a_bare_repository_in_the_project_is_not_read_and_no_repository_runs_a_command(tmp_path: Path, capsys) -> None:
    """`sglang-repo` naming a bare repository committed in the pull request: its own settings
    (log.showSignature with a gpg.program of its own) would run when git reads its history."""
    source = tmp_path / "src"
    (source / "python" / "sglang" / "srt").mkdir(parents=True)
    (source / "python" / "sglang" / "__init__.py").write_text("from sglang.version import __version__\n")
    (source / "python" / "sglang" / "srt" / "a.py").write_text("x = 1\n")
    run = lambda *args, cwd=source: subprocess.run(["git", "-c", "user.name=a", "-c", "user.email=a@b", *args],  # noqa: E731
                                                   cwd=cwd, check=True, capture_output=True)
    run("init", "-q")
    run("add", "-A")
    run("commit", "-qm", "one")
    run("tag", "v1.0.0")
    (source / "python" / "sglang" / "srt" / "a.py").write_text("x = 2\n")
    run("commit", "-qam", "two")
    run("tag", "v1.0.1")
    project = tmp_path / "p"
    project.mkdir()
    (project / "m.py").write_text("from sglang.srt.a import x\n")
    mark = tmp_path / "EXECUTED"
    for where, name in ((project, "vendor.git"), (tmp_path, "outside.git")):
        run("clone", "-q", "--bare", str(source), str(where / name), cwd=tmp_path)
        (where / name / "x.sh").write_text(f"#!/bin/sh\ntouch {mark}\n")
        (where / name / "x.sh").chmod(0o755)
        with open(where / name / "config", "a") as config:
            config.write("[log]\n\tshowSignature = true\n[gpg]\n\tprogram = ./x.sh\n[core]\n\tfsmonitor = ./x.sh\n")
    for repo, refused in (("vendor.git", True), ("../outside.git", False)):
        (project / "pyproject.toml").write_text(f'[project]\nname = "p"\n[tool.sglang-contracts]\nsglang-repo = "{repo}"\n'
                                                'old = "v1.0.0"\nnew = "v1.0.1"\n')
        status = main(["check", str(project), "--cache-dir", str(tmp_path / "cache")])
        err = capsys.readouterr().err
        assert (status == 2 and "is not read" in err) if refused else status in (0, 1), err
    assert not mark.exists()


@pytest.mark.parametrize("text", [
    "diff --git a/python/sglang/srt/a.py b/python/sglang/srt/b.py\nsimilarity index 90%\ncopy from python/sglang/srt/a.py\n"
    "copy to python/sglang/srt/b.py\n--- a/python/sglang/srt/a.py\n+++ b/python/sglang/srt/b.py\n@@ -1 +1 @@\n-x = 1\n+x = 5\n",
    "diff --git a/python/sglang/srt/a.py b/python/sglang/srt/a.py\nold mode 100644\nnew mode 100755\n",
    "diff --git a/python/sglang/srt/link b/python/sglang/srt/link\nnew file mode 120000\n--- /dev/null\n"
    "+++ b/python/sglang/srt/link\n@@ -0,0 +1 @@\n+a.py\n\\ No newline at end of file\n",
], ids=["copy", "mode", "symlink"])
def test_a_copy_or_a_mode_change_is_carried_as_it_is_not_rewritten(text: str, releases, tmp_path: Path, capsys) -> None:
    """helper-7's audit: a copy came out as an edit of its source, a link as a plain file, and a
    mode change was lost (or the patch refused), each 'verified' with exit 0."""
    patch = tmp_path / "p.patch"
    patch.write_text(text)
    old, new = releases
    out = tmp_path / "new.patch"
    status = main(["patch", "rebase", str(patch), "--old", str(old), "--new", str(new), "-o", str(out),
                   "--cache-dir", str(tmp_path / "cache")])
    assert status == 1 and "carried as it is, not checked" in capsys.readouterr().err
    assert out.read_text() == text


@pytest.mark.parametrize("name", ["t\tb.py", "n\nl.py", 'q"x.py', "b\\s.py", "caf\u00e9.py", "sp ace.py"])
def test_a_name_git_quotes_in_a_patch_is_read_as_the_file_it_names(tmp_path: Path, name: str) -> None:
    """git writes such names C-quoted (`"a/t\\tb.py"`, `"a/caf\\303\\251.py"`): they were read cut at
    the tab, or as latin-1 (`cafÃ©.py`) (campaign 10, R06's class). A space git leaves unquoted."""
    (tmp_path / name).write_text("x = 1\n")
    git(tmp_path, "init", "-q", must_succeed=True)
    git(tmp_path, "add", "-A", must_succeed=True)
    (tmp_path / name).write_text("x = 2\n")
    written = git(tmp_path, "diff", "--no-color", "--no-ext-diff", "--src-prefix=a/", "--dst-prefix=b/").stdout
    assert written.startswith("diff --git ")
    for text in (written, written.split("\n", 2)[2]):  # git's patch, and its traditional form (no diff --git line)
        assert [(f.old_path, f.new_path) for f in parse_patch(text).files] == [(name, name)]


def test_a_quoted_name_git_would_not_write_is_read_as_written() -> None:
    # Its escapes were decoded as Python's: a backslash before the closing quote raised UnicodeDecodeError.
    assert [(f.old_path, f.new_path) for f in parse_patch('--- "a/x\\"\n+++ "b/x\\"\n@@ -1 +1 @@\n-a\n+b\n').files] \
        == [('x\\"', 'x\\"')]  # not git's quoting: read as written, as git reads it
