"""`patch rebase --new B` in a project: the live stack rebased as a stack, written where the project
keeps it, verified by real git in order. Small releases and patches written here."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gitcheck import applies_in_order
from tests.patch.stack_project import KERNEL, NEW_KERNEL, OLD_KERNEL, SCHED_A, SCHED_B, git_diff, project, release
from sglang_contracts.cli import main
from sglang_contracts.patch.rebase import CARRIED, CONFLICT, NOT_ON_OLD, SKELETON, UNCHECKED, rebase_patch
from sglang_contracts.patch.patchfile import parse_patch
from sglang_contracts.patch.stack_rebase import folder_renamed, rebase_live_stack, summary_lines, summary_table
from sglang_contracts.sources import open_release


@pytest.fixture
def releases(tmp_path: Path) -> tuple[Path, Path]:
    return (release(tmp_path / "A", "0.5.1", {"sglang/srt/sched.py": SCHED_A, OLD_KERNEL: KERNEL}),
            release(tmp_path / "B", "0.5.2", {"sglang/srt/sched.py": SCHED_B, NEW_KERNEL: KERNEL}))


def rebase_in(root: Path, releases, monkeypatch, *extra: str) -> int:
    monkeypatch.chdir(root)
    return main(["patch", "rebase", "--old", str(releases[0]), "--new", str(releases[1]), *extra])


def b_files(releases) -> dict[str, str]:
    return {f"python/{p}": (releases[1] / p).read_text() for p in ("sglang/srt/sched.py", NEW_KERNEL)}


def test_a_folder_per_release_gets_a_new_folder_and_the_dockerfile_names_it(releases, tmp_path: Path, monkeypatch,
                                                                            capsys) -> None:
    root = project(tmp_path, "v0.5.1")
    old_folder = {p.name: p.read_bytes() for p in (root / "docker/patch/v0.5.1").iterdir()}
    assert rebase_in(root, releases, monkeypatch) == 1  # a conflict is left
    err = capsys.readouterr().err
    new_folder = root / "docker/patch/v0.5.2"
    assert sorted(p.name for p in new_folder.iterdir()) == ["sglang-first.patch", "sglang-second.patch"]
    assert {p.name: p.read_bytes() for p in (root / "docker/patch/v0.5.1").iterdir()} == old_folder  # never edited
    dockerfile = (root / "docker/Dockerfile").read_text()
    assert "ARG PATCH_VERSION=v0.5.2\n" in dockerfile and "SGLANG_IMAGE_TAG=v0.5.1-cu129" in dockerfile
    first, second = ((new_folder / name).read_text() for name in ("sglang-first.patch", "sglang-second.patch"))
    # the kernel moved: its hunk is carried to the new path; the conflicting hunk is not in the patch
    assert f"+++ b/python/{NEW_KERNEL}" in first and OLD_KERNEL not in first and "b = a * 5" not in first
    assert "a = x + 100" in first and "b = a * 20" in second
    assert applies_in_order(b_files(releases), [first, second], tmp_path / "check" / "tree")
    # a conflict is left: git takes the written patches, but the stack is not verified (rebasecmp)
    assert "not verified: 1 hunk left out of the written patches" in err and "\nverified:" not in err
    assert "without it, the 2 new patches apply in order with git apply --check" in err
    assert "sglang-0.5.2-conflicts/sglang-first.patch" in err and "b = a * 5" not in err  # no conflict text there
    plan = (root / "docs/draft/sglang-0.5.2-upgrade-plan.md").read_text()
    assert "## Conflicts to resolve" in plan and "b = a * 5" in plan and "`docker/patch/v0.5.1/` is left as it is" in plan
    marked = (root / "docs/draft/sglang-0.5.2-conflicts/sglang-first.patch/python/sglang/srt/sched.py").read_text()
    assert "<<<<<<< patched\n    b = a * 5\n||||||| release-A\n    b = a * 2\n=======\n    b = a * 3\n>>>>>>> release-B\n" in marked


def test_a_dockerfile_saved_while_the_rebase_ran_is_left_as_it_is_and_the_run_says_so(releases, tmp_path: Path,
                                                                                      monkeypatch, capsys) -> None:
    """The rebase's edit of the Dockerfile (the new folder named there) replaced a Dockerfile an
    editor saved while the stack was rebased and verified, its new lines lost (campaign 12, R09):
    left as it is, said, and the run exits 1; the new patches are written."""
    from sglang_contracts.patch import stack_rebase

    root = project(tmp_path, "v0.5.1")
    dockerfile = root / "docker/Dockerfile"
    edits_of = stack_rebase.stack_edits

    def saved_meanwhile(*given, **named):  # the edits made from the Dockerfile read, before they are written
        edits = edits_of(*given, **named)
        with dockerfile.open("a") as file:
            file.write("RUN echo saved\n")
        return edits

    monkeypatch.setattr(stack_rebase, "stack_edits", saved_meanwhile)
    saved = dockerfile.read_text() + "RUN echo saved\n"
    assert rebase_in(root, releases, monkeypatch) == 1
    err = capsys.readouterr().err
    assert dockerfile.read_text() == saved
    assert "docker/Dockerfile: not written: the file changed while this run worked on it: left as it is" in err
    assert sorted(p.name for p in (root / "docker/patch/v0.5.2").iterdir()) == ["sglang-first.patch",
                                                                                "sglang-second.patch"]
    (written,) = [line for line in err.splitlines() if line.startswith("written: ")]
    assert "Dockerfile" not in written
    assert "docker/Dockerfile: not written" in (root / "docs/draft/sglang-0.5.2-upgrade-plan.md").read_text()


def test_a_latest_folder_is_rebased_in_place(releases, tmp_path: Path, monkeypatch, capsys) -> None:
    root = project(tmp_path, "latest")
    dockerfile = (root / "docker/Dockerfile").read_text()
    rebase_in(root, releases, monkeypatch, "--plan", str(tmp_path / "plan.md"))
    assert sorted(p.name for p in (root / "docker/patch").iterdir()) == ["latest"]
    assert (root / "docker/Dockerfile").read_text() == dockerfile
    first = (root / "docker/patch/latest/sglang-first.patch").read_text()
    assert f"+++ b/python/{NEW_KERNEL}" in first and "@@ -5,7 +5,7 @@ VERSION = 2" in first  # at B's lines now
    assert (tmp_path / "plan.md").is_file() and "docker/patch/latest/ -> docker/patch/latest/" in capsys.readouterr().err


def test_each_patch_is_rebased_on_the_earlier_ones(releases, tmp_path: Path) -> None:
    root = project(tmp_path, "v0.5.1")
    old, new = (open_release(str(p), sglang_repo=None, cache=tmp_path / "cache") for p in releases)
    result = rebase_live_stack(root, old, new)
    verdicts = [[o.verdict for o in each.rebase.outcomes] for each in result.patches]
    assert verdicts == [[CARRIED, CARRIED, CONFLICT], [CARRIED]] and result.verified, result.verification
    # git takes the written stack, which lacks the conflict: not "verified" (helper-30, rebasecmp)
    said = "\n".join(summary_lines(result, written=False))
    assert "not verified: 1 hunk left out of the written patches" in said and "\nverified:" not in said
    assert "no: 1 left out" in summary_table(result) and " yes" not in summary_table(result).splitlines()[1]
    # alone, on the plain releases, the second patch's context is nowhere: what the stack form is for
    text = (root / "docker/patch/v0.5.1/sglang-second.patch").read_text()
    alone = rebase_patch(parse_patch(text), text, old, new)
    assert [o.verdict for o in alone.outcomes] == [NOT_ON_OLD]


def test_a_stack_that_git_does_not_take_is_not_verified_and_names_the_patch(releases, tmp_path: Path) -> None:
    root = project(tmp_path, "v0.5.1")
    second = root / "docker/patch/v0.5.1/sglang-second.patch"
    second.write_text(second.read_text().replace("+    b = a * 20\n", "+    b = (a * 20\n"))  # no longer parses
    old, new = (open_release(str(p), sglang_repo=None, cache=tmp_path / "cache") for p in releases)
    result = rebase_live_stack(root, old, new)
    assert not result.verified and result.verification.startswith("sglang-second.patch:")
    assert "no longer parse" in result.verification


def test_git_apply_3way_is_checked_where_the_dockerfile_uses_it(releases, tmp_path: Path, monkeypatch, capsys) -> None:
    root = project(tmp_path, "v0.5.1", flags="--3way ")
    rebase_in(root, releases, monkeypatch)
    assert "without it, the 2 new patches apply in order with git apply --check --3way" in capsys.readouterr().err


def test_a_new_folder_that_is_a_link_out_of_the_project_is_refused(releases, tmp_path: Path, monkeypatch,
                                                                  capsys) -> None:
    root = project(tmp_path, "v0.5.1")
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "docker/patch/v0.5.2").symlink_to(outside)
    assert rebase_in(root, releases, monkeypatch) == 2
    assert "leads out of the project" in capsys.readouterr().err and not list(outside.iterdir())
    assert not (root / "docs").exists()  # refused before anything was written
    assert rebase_in(root, releases, monkeypatch, "-o", "../elsewhere", "--tree", str(tmp_path / "trees")) == 2
    assert "a `..` component" in capsys.readouterr().err and not (tmp_path / "trees").exists()
    (root / "docs").mkdir()
    (root / "docs/out").symlink_to(outside)  # the conflicts' folder, through a link out of the project
    assert rebase_in(root, releases, monkeypatch, "--tree", "docs/out/trees", "-o", "docker/patch/other") == 2
    assert "leads out of the project" in capsys.readouterr().err and not list(outside.iterdir())
    (root / "docker/patch/v0.5.2").unlink()
    assert rebase_in(root, releases, monkeypatch) == 1
    assert rebase_in(root, releases, monkeypatch) == 2  # the conflicts of the first run are kept
    assert "not an empty folder" in capsys.readouterr().err


def test_a_skeleton_stack_gives_each_patch_the_skeletons_patch_of_its_name(releases, tmp_path: Path) -> None:
    root = project(tmp_path, "v0.5.1")
    skeleton = tmp_path / "skeleton"
    skeleton.mkdir()
    b_alpha = SCHED_B.replace("def alpha(x):\n    a = x + 1\n", "def alpha(x):\n    a = x + 100\n")
    (skeleton / "sglang-first.patch").write_text(
        git_diff({"sglang/srt/sched.py": SCHED_B}, {"sglang/srt/sched.py": b_alpha}, tmp_path / "maker"))
    old, new = (open_release(str(p), sglang_repo=None, cache=tmp_path / "cache") for p in releases)
    result = rebase_live_stack(root, old, new, skeleton=skeleton)
    first = {(o.file.path.rsplit("/", 1)[-1], o.number): (o.verdict, o.label) for o in result.patches[0].rebase.outcomes}
    assert first[("sched.py", 1)] == (SKELETON, "A") and first[("quant.cuh", 1)] == (CARRIED, "C")
    assert {o.label for o in result.patches[1].rebase.outcomes} == {""}  # no skeleton patch of its name
    assert result.verified, result.verification


def test_a_patch_naming_a_path_out_of_the_tree_writes_nothing_there(releases, tmp_path: Path) -> None:
    root = project(tmp_path, "v0.5.1")
    first = root / "docker/patch/v0.5.1/sglang-first.patch"
    escape = ("diff --git a/../../escaped.txt b/../../escaped.txt\nnew file mode 100644\n--- /dev/null\n"
              "+++ b/../../escaped.txt\n@@ -0,0 +1 @@\n+written outside\n")
    first.write_text(first.read_text() + escape)
    old, new = (open_release(str(p), sglang_repo=None, cache=tmp_path / "cache") for p in releases)
    result = rebase_live_stack(root, old, new, trees=tmp_path / "trees")
    assert [o.verdict for o in result.patches[0].rebase.outcomes][-1] == UNCHECKED
    assert not list(tmp_path.rglob("escaped.txt")) and not list(Path("/tmp").glob("escaped.txt"))


@pytest.mark.parametrize("before, after", [
    ("ARG PATCH_VERSION=v0.5.14\n", "ARG PATCH_VERSION=v0.5.23\n"),
    ('export PATCH_VERSION="v0.5.14"\n', 'export PATCH_VERSION="v0.5.23"\n'),
    ('TARGET="${1:-v0.5.14}"\n', 'TARGET="${1:-v0.5.23}"\n'),
    ("COPY docker/patch/v0.5.14/sglang.patch /sgl/\n", "COPY docker/patch/v0.5.23/sglang.patch /sgl/\n"),
    ("ARG SGLANG_IMAGE_TAG=v0.5.14-cu129\n", "ARG SGLANG_IMAGE_TAG=v0.5.14-cu129\n"),  # an image tag: fix's
    ("# built for v0.5.14 and later\n", "# built for v0.5.14 and later\n"),  # prose
])
def test_the_value_that_names_the_folder_moves_to_the_new_one(before: str, after: str) -> None:
    assert folder_renamed(before, "v0.5.14", "v0.5.23") == after


def test_a_patch_whose_hunks_all_conflict_is_not_called_upstream(tmp_path: Path, monkeypatch, capsys) -> None:
    """A patch none of whose hunks could be carried has an empty rebased text, as one upstream
    took whole: it was told to be taken out of patch-files, in the plan bump commits (campaign 9,
    R14). Only hunks all dropped as upstream's say that."""
    from tests.helpers import upstream_tree, write_tree

    old = upstream_tree(tmp_path / "1.0.0", {"sglang/srt/a.py": "x = 1\ndef f(a, b=1):\n    return a\nclass C:\n"
                                             "    def m(self, q):\n        self.z = 1\n        return q\n"}, "1.0.0")
    new = upstream_tree(tmp_path / "1.0.1", {"sglang/srt/a.py": "def f(a):\n    return a\nclass C:\n    def m(self):\n"
                                             "        return 1\n"}, "1.0.1")
    conflicting = ("diff --git a/python/sglang/srt/a.py b/python/sglang/srt/a.py\n--- a/python/sglang/srt/a.py\n"
                   "+++ b/python/sglang/srt/a.py\n@@ -4,4 +4,4 @@ def f(a, b=1):\n class C:\n     def m(self, q):\n"
                   "-        self.z = 1\n+        self.z = 2\n         return q\n")
    upstreamed = ("diff --git a/python/sglang/srt/a.py b/python/sglang/srt/a.py\n--- a/python/sglang/srt/a.py\n"
                  "+++ b/python/sglang/srt/a.py\n@@ -1,3 +1,2 @@\n-x = 1\n-def f(a, b=1):\n+def f(a):\n     return a\n")
    root = write_tree(tmp_path / "p", {
        "pyproject.toml": '[project]\nname = "p"\n[tool.sglang-contracts]\npatch-files = ["patches/01.patch", '
                          '"patches/02.patch"]\n',
        "patches/01.patch": upstreamed, "patches/02.patch": conflicting})
    monkeypatch.chdir(root)
    main(["patch", "rebase", "--old", str(old), "--new", str(new), "-o", "newstack", "--tree", str(tmp_path / "tr"),
          "--plan", str(tmp_path / "plan.md")])
    said = capsys.readouterr().err + (tmp_path / "plan.md").read_text()
    assert "patches/01.patch: every hunk is upstream in 1.0.1" in said
    assert "patches/02.patch: every hunk is upstream" not in said
    assert "patches/02.patch: no hunk was carried to 1.0.1 (1 left to resolve, 0 unchecked)" in said
