"""`patch rebase` on small SGLang-shaped releases: every verdict, the new patch checked by real git."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.gitcheck import git_applies_whole
from sglang_contracts.cli import main
from sglang_contracts.patch.rebase import (
    CARRIED, CONFLICT, DROPPED, GONE, MERGED, NOT_ON_OLD, SKELETON, UNCHECKED, rebase_patch, verify,
)
from sglang_contracts.patch.patchfile import parse_patch
from sglang_contracts.sources import open_release


FUNCTION = "    a = x + 1\n    b = a * 2\n    c = b - 3\n    d = c * 4\n    e = d + 5\n    f = e - 6\n    return f\n\n\n"


def body(*names: str) -> str:
    """Python functions, one per name, ten lines each, so that one change per function is one hunk."""
    return "".join(f"def {name}(x):\n{FUNCTION}" for name in names)


SCHED_A = "import os\n\n\n" + body("alpha", "beta", "gamma", "delta", "epsilon", "zeta")
# B: three new lines at the top (an offset), beta's `d =` rewritten (context of the merged hunk),
# gamma's `b =` rewritten (the line the conflicting hunk changes), delta already as the patch makes it.
SCHED_B = ("import os\nimport sys\n\nVERSION = 2\n\n\n" + body("alpha", "beta", "gamma", "delta", "epsilon", "zeta")
           .replace("def beta(x):\n    a = x + 1\n    b = a * 2\n    c = b - 3\n    d = c * 4\n",
                    "def beta(x):\n    a = x + 1\n    b = a * 2\n    c = b - 3\n    d = c * 40\n")
           .replace("def gamma(x):\n    a = x + 1\n    b = a * 2\n", "def gamma(x):\n    a = x + 1\n    b = a * 3\n")
           .replace("def delta(x):\n    a = x + 1\n", "def delta(x):\n    a = x + 10\n"))
MOVED = "def load(path):\n    with open(path) as f:\n        data = f.read()\n    return data.strip()\n\n\ndef save(path):\n    pass\n"


def release(root: Path, files: dict[str, str]) -> Path:
    for relpath, text in {"sglang/__init__.py": "", "sglang/srt/__init__.py": "", **files}.items():
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_text(text)
    return root


@pytest.fixture
def releases(tmp_path: Path) -> tuple[Path, Path]:
    old = release(tmp_path / "A", {"sglang/srt/sched.py": SCHED_A, "sglang/srt/io_utils.py": MOVED,
                                   "sglang/srt/plain.py": "x = 1\ny = 2\nz = 3\n"})
    new = release(tmp_path / "B", {"sglang/srt/sched.py": SCHED_B, "sglang/srt/utils/io.py": MOVED.replace("pass", "return None"),
                                   "sglang/srt/plain.py": "x = 1\ny = 2\nz = 3\n"})
    return old, new


def git_diff(files_a: dict[str, str], edits: dict[str, str], tmp: Path) -> str:
    """The patch `git diff` makes of `edits` (path -> new text) over `files_a` (paths as in a release)."""
    repo = tmp / "maker"
    repo.mkdir(parents=True)
    run = lambda *args: subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)  # noqa: E731
    run("init", "-q")
    for relpath, text in files_a.items():
        (repo / "python" / relpath).parent.mkdir(parents=True, exist_ok=True)
        (repo / "python" / relpath).write_text(text)
    run("add", "-A")
    run("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "A")
    for relpath, text in edits.items():
        (repo / "python" / relpath).write_text(text)
    return run("diff").stdout


def edited_sched() -> str:
    return (SCHED_A.replace("def alpha(x):\n    a = x + 1\n", "def alpha(x):\n    a = x + 100\n")
            .replace("def beta(x):\n    a = x + 1\n", "def beta(x):\n    a = x - 1\n")
            .replace("def gamma(x):\n    a = x + 1\n    b = a * 2\n", "def gamma(x):\n    a = x + 1\n    b = a * 5\n")
            .replace("def delta(x):\n    a = x + 1\n", "def delta(x):\n    a = x + 10\n"))


@pytest.fixture
def project_patch(releases, tmp_path: Path) -> str:
    edits = {"sglang/srt/sched.py": edited_sched(),
             "sglang/srt/io_utils.py": MOVED.replace("data.strip()", "data.strip().lower()")}
    return git_diff({"sglang/srt/sched.py": SCHED_A, "sglang/srt/io_utils.py": MOVED}, edits, tmp_path)


def rebased(releases, text: str, skeleton: str | None = None, tree: Path | None = None):
    old, new = (open_release(str(p), sglang_repo=None, cache=Path("/nonexistent")) for p in releases)
    return rebase_patch(parse_patch(text), text, old, new, parse_patch(skeleton) if skeleton else None, tree)


def b_files(releases, paths) -> dict[str, str]:
    return {p: (releases[1] / p.removeprefix("python/")).read_text() for p in paths
            if (releases[1] / p.removeprefix("python/")).is_file()}


def test_each_hunk_gets_its_verdict(releases, project_patch: str) -> None:
    result = rebased(releases, project_patch)
    verdicts = [(o.file.path.rsplit("/", 1)[-1], o.verdict) for o in result.outcomes]
    assert verdicts == [("io_utils.py", CARRIED), ("sched.py", CARRIED), ("sched.py", MERGED), ("sched.py", CONFLICT),
                        ("sched.py", DROPPED)]
    moved, carried, merged, conflict, dropped = result.outcomes
    assert carried.detail == "offset +3" and carried.at == 5
    assert "at python/sglang/srt/sched.py:" in dropped.detail
    assert conflict.conflict == ("    b = a * 2\n", "    b = a * 5\n", "    b = a * 3\n")
    assert moved.path == "python/sglang/srt/utils/io.py" and moved.moved
    assert result.verified, result.verification
    # the new patch, by real git on B, gives B with the carried and merged changes, and not the conflicting one
    assert git_applies_whole(b_files(releases, ["python/sglang/srt/sched.py", "python/sglang/srt/utils/io.py"]),
                             result.patch_text)
    after = {f.target: f.after for f in result.files}
    assert "a = x + 100" in after["python/sglang/srt/sched.py"]
    assert "def beta(x):\n    a = x - 1\n    b = a * 2\n    c = b - 3\n    d = c * 40\n" in after["python/sglang/srt/sched.py"]
    assert "b = a * 3" in after["python/sglang/srt/sched.py"] and "b = a * 5" not in after["python/sglang/srt/sched.py"]
    assert "data.strip().lower()" in after["python/sglang/srt/utils/io.py"]
    assert "return None" in after["python/sglang/srt/utils/io.py"]
    assert not result.complete  # one hunk is left in conflict


def test_the_tree_holds_the_conflict_markers_and_git_diff_is_the_patch(releases, project_patch: str, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    result = rebased(releases, project_patch, tree=tree)
    sched = (tree / "python/sglang/srt/sched.py").read_text()
    assert "<<<<<<< patched\n    b = a * 5\n||||||| release-A\n    b = a * 2\n=======\n    b = a * 3\n>>>>>>> release-B\n" in sched
    assert "a = x + 100" in sched and "d = c * 40" in sched
    diff = subprocess.run(["git", "diff", "--stat"], cwd=tree, capture_output=True, text=True, check=True).stdout
    assert "python/sglang/srt/sched.py" in diff and "python/sglang/srt/utils/io.py" in diff
    assert result.outcomes[3].verdict == CONFLICT


def test_a_result_that_does_not_parse_is_not_verified(releases, tmp_path: Path) -> None:
    text = git_diff({"sglang/srt/plain.py": "x = 1\ny = 2\nz = 3\n"}, {"sglang/srt/plain.py": "x = 1\ny = (2\nz = 3\n"}, tmp_path)
    result = rebased(releases, text)
    assert [o.verdict for o in result.outcomes] == [CARRIED]
    assert not result.verified and "python/sglang/srt/plain.py:2" in result.verification


def test_verification_is_git_apply_on_a_fresh_tree(releases, project_patch: str, tmp_path: Path) -> None:
    result = rebased(releases, project_patch)
    result.patch_text = result.patch_text.replace("+    a = x + 100", "+    a = x + 100\n+    extra = 1", 1)
    ok, why = verify(result, tmp_path)
    assert not ok and "git apply --check of the new patch on a fresh tree of B fails" in why


def test_skeleton_hunks_are_taken_and_the_rest_ported_with_classes(releases, tmp_path: Path, project_patch: str) -> None:
    # the skeleton (a patch of B) makes the project's beta change, and one the project does not make (zeta)
    skeleton_target = (SCHED_B.replace("def beta(x):\n    a = x + 1\n", "def beta(x):\n    a = x - 1\n")
                       .replace("def zeta(x):\n    a = x + 1\n", "def zeta(x):\n    a = x + 7\n"))
    (tmp_path / "s").mkdir()
    skeleton = git_diff({"sglang/srt/sched.py": SCHED_B}, {"sglang/srt/sched.py": skeleton_target}, tmp_path / "s")
    result = rebased(releases, project_patch, skeleton)
    labelled = [(o.verdict, o.label) for o in result.outcomes]
    assert labelled == [(CARRIED, "C"), (CARRIED, "B"), (SKELETON, "A"), (CONFLICT, "B"), (DROPPED, "B")]
    ((path, left),) = result.skeleton_left
    assert path == "python/sglang/srt/sched.py" and left.added == ["    a = x + 7\n"]
    assert result.verified


def test_the_command_writes_the_patch_and_the_plan(releases, project_patch: str, tmp_path: Path, capsys) -> None:
    (tmp_path / "p.patch").write_text(project_patch)
    status = main(["patch", "rebase", str(tmp_path / "p.patch"), "--old", str(releases[0]), "--new", str(releases[1]),
                   "-o", str(tmp_path / "new.patch"), "--plan", str(tmp_path / "plan.md")])
    err = capsys.readouterr().err
    assert status == 1  # a conflict is left
    assert "conflict hunk #3 of python/sglang/srt/sched.py" in err
    assert "5 hunks: 2 carried, 1 merged, 1 dropped, 1 conflict" in err
    assert "  patched:\n" not in err  # the three texts are in the plan
    assert git_applies_whole(b_files(releases, ["python/sglang/srt/sched.py", "python/sglang/srt/utils/io.py"]),
                             (tmp_path / "new.patch").read_text())
    plan = (tmp_path / "plan.md").read_text()
    for heading in ("## Kept as they were (2)", "## Merged three ways (git merge-file) (1)",
                    "## Dropped: already upstream (1)", "## Ported to moved files (1)", "## Conflicts left (1)",
                    "## What only a GPU run can verify"):
        assert heading in plan
    assert "`python/sglang/srt/io_utils.py` -> `python/sglang/srt/utils/io.py`" in plan


def test_a_clean_rebase_exits_zero(releases, tmp_path: Path, capsys) -> None:
    edits = {"sglang/srt/sched.py": SCHED_A.replace("def alpha(x):\n    a = x + 1\n", "def alpha(x):\n    a = x + 100\n")}
    (tmp_path / "p.patch").write_text(git_diff({"sglang/srt/sched.py": SCHED_A}, edits, tmp_path))
    status = main(["patch", "rebase", str(tmp_path / "p.patch"), "--old", str(releases[0]), "--new", str(releases[1])])
    out, err = capsys.readouterr()
    assert status == 0, err
    (tmp_path / "c.patch").write_text(git_diff({"sglang/srt/sched.py": SCHED_A}, {"sglang/srt/sched.py": edited_sched()},
                                               tmp_path / "c"))
    status = main(["patch", "rebase", str(tmp_path / "c.patch"), "--old", str(releases[0]), "--new", str(releases[1])])
    conflict_err = capsys.readouterr().err
    old, new = releases
    assert status == 1 and "b = a * 5" not in conflict_err  # the conflict's texts are the plan's, not the terminal's
    assert "the three texts of 1 conflict are in the plan: give --plan PLAN.md" in conflict_err
    assert out.startswith("diff --git a/python/sglang/srt/sched.py b/python/sglang/srt/sched.py\n")
    assert "+    a = x + 100" in out


# -- bad input: one line, or a verdict per hunk ----------------------------------------------

def run_bad(releases, tmp_path: Path, text: str | bytes, capsys) -> tuple[int, str]:
    path = tmp_path / "bad.patch"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    status = main(["patch", "rebase", str(path), "--old", str(releases[0]), "--new", str(releases[1])])
    return status, capsys.readouterr().err


def test_a_corrupt_or_truncated_patch_is_one_line(releases, project_patch: str, tmp_path: Path, capsys) -> None:
    truncated = project_patch[: project_patch.index("@@", project_patch.index("@@") + 2) + 40]
    for text in (truncated, re.sub(r"@@ -(\d+),(\d+)", r"@@ -\1,99", project_patch, count=1), "not a patch at all\n"):
        status, err = run_bad(releases, tmp_path, text, capsys)
        assert status == 2 and err.count("\n") == 1 and "git apply would reject it" in err, err


def test_crlf_line_ends_are_one_line(releases, project_patch: str, tmp_path: Path, capsys) -> None:
    status, err = run_bad(releases, tmp_path, project_patch.replace("\n", "\r\n"), capsys)
    assert status == 2 and err.count("\n") == 1 and "CRLF" in err


def test_binary_and_missing_files_get_a_verdict_per_hunk(releases, tmp_path: Path, capsys) -> None:
    (tmp_path / "b").mkdir()
    binary = git_diff({"sglang/srt/blob.bin": "\0\1"}, {"sglang/srt/blob.bin": "\0\2"}, tmp_path / "b")
    missing = ("diff --git a/python/sglang/srt/nowhere.py b/python/sglang/srt/nowhere.py\n"
               "--- a/python/sglang/srt/nowhere.py\n+++ b/python/sglang/srt/nowhere.py\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n")
    status, err = run_bad(releases, tmp_path, binary + missing, capsys)
    assert status == 1
    assert f"{UNCHECKED} hunk #1 of python/sglang/srt/blob.bin (the file patch): binary patch" in err
    assert f"{NOT_ON_OLD} hunk #1 of python/sglang/srt/nowhere.py" in err and "neither" in err
    (releases[1] / "sglang/srt/only_b.py").write_text("x = 1\ny = 2\nz = 3\n")  # not in A, but the hunk applies on B
    result = rebased(releases, missing.replace("nowhere", "only_b").replace(" a\n-b\n+c\n d\n", " x = 1\n-y = 2\n+y = 5\n z = 3\n"))
    assert [o.verdict for o in result.outcomes] == [CARRIED] and result.verified


def test_a_file_gone_without_a_new_home(releases, tmp_path: Path) -> None:
    text = git_diff({"sglang/srt/io_utils.py": MOVED}, {"sglang/srt/io_utils.py": MOVED + "# end\n"}, tmp_path)
    (releases[1] / "sglang/srt/utils/io.py").unlink()
    assert [o.verdict for o in rebased(releases, text).outcomes] == [GONE]


def test_every_truncation_of_a_patch_is_one_line_or_verdicts(releases, project_patch: str, tmp_path: Path, capsys) -> None:
    for cut in range(0, len(project_patch), max(1, len(project_patch) // 25)):
        status, err = run_bad(releases, tmp_path, project_patch[:cut], capsys)
        assert status in (0, 1, 2) and "Traceback" not in err
        if status == 2:
            assert err.count("\n") == 1 and err.startswith("sglang-contracts: error: ")


def test_tree_must_be_an_empty_folder(releases, project_patch: str, tmp_path: Path, capsys) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("mine\n")
    (tmp_path / "p.patch").write_text(project_patch)
    status = main(["patch", "rebase", str(tmp_path / "p.patch"), "--old", str(releases[0]), "--new", str(releases[1]),
                   "--tree", str(tmp_path / "taken")])
    err = capsys.readouterr().err
    assert status == 2 and "not an empty folder" in err and err.count("\n") == 1
    assert (tmp_path / "taken" / "file").read_text() == "mine\n"


def test_mutated_patches_get_a_line_or_verdicts(releases, project_patch: str, tmp_path: Path, capsys) -> None:
    import random

    rng = random.Random(14)
    lines = project_patch.splitlines(keepends=True)
    for _ in range(12):
        mutated = list(lines)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(mutated))
            choice = rng.choice(("delete", "duplicate", "crlf", "bytes"))
            if choice == "delete":
                del mutated[at]
            elif choice == "duplicate":
                mutated.insert(at, mutated[at])
            elif choice == "crlf":
                mutated[at] = mutated[at].replace("\n", "\r\n")
            else:
                mutated[at] = mutated[at][:1] + "\udcff\x00" + mutated[at][1:]
        text = "".join(mutated).encode("utf-8", "surrogateescape")
        status, err = run_bad(releases, tmp_path, text, capsys)
        assert status in (0, 1, 2) and "Traceback" not in err
        if status == 2:
            assert err.count("\n") == 1, err


def test_a_new_file_the_skeleton_creates_alike_is_class_a(releases, tmp_path: Path) -> None:
    new_file = ("diff --git a/python/sglang/srt/added.py b/python/sglang/srt/added.py\nnew file mode 100644\n"
                "--- /dev/null\n+++ b/python/sglang/srt/added.py\n@@ -0,0 +1,2 @@\n+a = 1\n+b = 2\n")
    result = rebased(releases, new_file, skeleton=new_file)
    assert [(o.verdict, o.label) for o in result.outcomes] == [(SKELETON, "A")] and not result.skeleton_left
    assert result.verified and "+a = 1\n+b = 2\n" in result.patch_text
    (releases[1] / "sglang/srt/added.py").write_text("a = 1\nb = 2\n")
    assert [o.verdict for o in rebased(releases, new_file).outcomes] == [DROPPED]
    (releases[1] / "sglang/srt/added.py").write_text("a = 0\n")
    assert [o.verdict for o in rebased(releases, new_file).outcomes] == [CONFLICT]


def test_releases_from_tags_of_a_clone(releases, project_patch: str, tmp_path: Path, capsys) -> None:
    clone = tmp_path / "sglang"
    run = lambda *args: subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],  # noqa: E731
                                       cwd=clone, check=True, capture_output=True)
    clone.mkdir()
    run("init", "-q")
    for tag, folder in (("v1.0.0", releases[0]), ("v1.1.0", releases[1])):
        subprocess.run(["rm", "-rf", str(clone / "python")], check=True)
        subprocess.run(["cp", "-r", str(folder), str(clone / "python")], check=True)
        run("add", "-A")
        run("commit", "-qm", tag)
        run("tag", tag)
    (tmp_path / "p.patch").write_text(project_patch)
    status = main(["patch", "rebase", str(tmp_path / "p.patch"), "--old", "v1.0.0", "--new", "v1.1.0",
                   "--sglang-repo", str(clone), "-o", str(tmp_path / "new.patch")])
    err = capsys.readouterr().err
    assert status == 1 and "5 hunks: 2 carried, 1 merged, 1 dropped, 1 conflict" in err
    assert git_applies_whole(b_files(releases, ["python/sglang/srt/sched.py", "python/sglang/srt/utils/io.py"]),
                             (tmp_path / "new.patch").read_text())


def test_outputs_that_cannot_be_written_are_one_line_naming_them(releases, project_patch: str, tmp_path: Path,
                                                                  capsys) -> None:
    (tmp_path / "p.patch").write_text(project_patch)
    plain = tmp_path / "plain-file"
    plain.write_text("")
    rebase = ["patch", "rebase", str(tmp_path / "p.patch"), "--old", str(releases[0]), "--new", str(releases[1])]
    for extra, said in ((["--plan", str(plain / "plan.md")], f"cannot write {plain / 'plan.md'} ({plain} is not a folder)"),
                        (["--tree", str(plain / "tree")], f"cannot write {plain / 'tree'} ({plain} is not a folder)"),
                        (["-o", "/dev/full"], "cannot write /dev/full (No space left on device)")):
        status = main(rebase + extra)
        assert (status, capsys.readouterr().err.splitlines()[-1]) == (2, f"sglang-contracts: error: {said}")


def test_a_new_file_is_kept_at_its_path_with_no_line_in_the_plan(releases, tmp_path: Path, capsys) -> None:
    """Campaign 4's D03: a carried hunk that creates a file was logged `at path:None`."""
    (tmp_path / "n.patch").write_text("diff --git a/python/sglang/srt/new.py b/python/sglang/srt/new.py\nnew file mode 100644\n"
                                      "--- /dev/null\n+++ b/python/sglang/srt/new.py\n@@ -0,0 +1 @@\n+x = 2\n")
    status = main(["patch", "rebase", str(tmp_path / "n.patch"), "--old", str(releases[0]), "--new", str(releases[1]),
                   "-o", str(tmp_path / "new.patch"), "--plan", str(tmp_path / "plan.md")])
    capsys.readouterr()
    plan = (tmp_path / "plan.md").read_text()
    assert status == 0
    assert "at `python/sglang/srt/new.py` (a new file)" in plan and "None" not in plan


def test_git_apply_checks_the_rebased_sections_not_the_binary_ones_carried_unchecked(releases, project_patch: str,
                                                                                    monkeypatch) -> None:
    """A binary file patch is carried unchecked (excluded from the check by name), but git apply
    inflated its literal whole before excluding it: a 0.7 MB patch took 530 MB (seventh
    campaign, P14). The check is given the patch without it; the new patch keeps it as it was."""
    from sglang_contracts.patch import rebase as rebase_module

    binary = ("diff --git a/python/sglang/srt/kernel.so b/python/sglang/srt/kernel.so\nindex 1234567..89abcde 100644\n"
              "GIT binary patch\nliteral 4\nLcmZ?wbN~PV0RR91\n\nliteral 0\nHcmV?d00001\n\n")
    checked: list[str] = []
    real = rebase_module.git

    def recording(repo, *args, **kwargs):
        if args[:2] == ("apply", "--check"):
            checked.append(Path(args[-1]).read_text())
        return real(repo, *args, **kwargs)

    monkeypatch.setattr(rebase_module, "git", recording)
    result = rebased(releases, project_patch + binary)
    assert checked and all("GIT binary patch" not in text and "sched.py" in text for text in checked)
    assert binary.strip() in result.patch_text and result.verified, result.verification
