"""The patch stack: the order the image applies patches in, and each patch judged on top of the
ones before, on both releases, against real `git apply` run in the same order."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.gitcheck import git_stack_verdicts, materialise
from sglang_contracts.patch.gitapply import CONTEXT, check_patch, check_stack
from sglang_contracts.patch.patchfile import parse_patch
from sglang_contracts.patch.stack import patch_stacks
from sglang_contracts.check.runner import CheckOptions, run_check

SCHEDULER = "python/sglang/srt/managers/scheduler.py"
OLD = {SCHEDULER: "".join(f"step {i}\n" for i in range(1, 31))}
# The bump changes a line in the context of the third patch's hunk only.
NEW = {SCHEDULER: OLD[SCHEDULER].replace("step 25\n", "step twenty-five\n")}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def stacked_diffs(base: dict[str, str], edits: list[list[tuple[str, str, str]]], tmp: Path) -> list[str]:
    """`git diff` of each edit made on top of the ones before: (path, old text, new text)."""
    repo = materialise(base, tmp)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "base")
    diffs = []
    for edit in edits:
        for path, old, new in edit:
            file = repo / path
            text = file.read_text()
            assert old in text
            file.write_text(text.replace(old, new, 1))
        _git(repo, "add", "-A")
        diffs.append(_git(repo, "diff", "--cached"))
        _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "edit")
    return diffs


@pytest.fixture
def three(tmp_path: Path) -> list[str]:
    """sglang.patch adds a hook; sglang-top_p.patch edits the hook; pull_weights.patch edits what
    top_p added and `step 27` in one hunk (`step 25` is its context): each applies only on top
    of the ones before."""
    return stacked_diffs(OLD, [
        [(SCHEDULER, "step 20\n", "step 20\nhook = make_hook()\n")],
        [(SCHEDULER, "hook = make_hook()\n", "hook = make_hook(top_p=True)\nhook.top_p = 0.9\n")],
        [(SCHEDULER, "hook.top_p = 0.9\n", "hook.top_p = 0.9\nhook.pull_weights = True\n"),
         (SCHEDULER, "step 27\n", "step 27  # weights pulled\n")],
    ], tmp_path / "diffs")


def _pairs(patch):
    return [(f, h) for f in patch.files for h in f.hunks or [None]]


def _read(files):
    return lambda path: files.get(path)


@pytest.mark.parametrize("release", ["old", "new"])
def test_each_patch_is_judged_on_top_of_the_ones_before_as_git_applies_them_in_order(three, release):
    files = OLD if release == "old" else NEW
    patches = [parse_patch(text) for text in three]
    result = check_stack(patches, _read(files))
    mine = [[v.applies for v in verdicts] for verdicts in result.verdicts]
    assert mine == git_stack_verdicts(files, three, [_pairs(p) for p in patches])
    alone = [[v.applies for v in check_patch(p, _read(files))] for p in patches]
    assert alone[1:] == [[False], [False]]  # judged alone, the later patches look broken everywhere
    if release == "old":
        assert mine == [[True], [True], [True]]
    else:  # only the third patch's context changed with the bump
        assert mine == [[True], [True], [False]]
        assert result.verdicts[2][0].status == CONTEXT


def test_the_stack_leaves_the_tree_the_image_has(three):
    result = check_stack([parse_patch(t) for t in three], _read(OLD))
    assert "hook.pull_weights = True\n" in result.patched[SCHEDULER]


def test_a_failed_hunk_is_left_out_and_what_needs_it_fails_too(three):
    """The bump breaks the first patch: the second, which needs its line, fails in the image too."""
    files = {SCHEDULER: OLD[SCHEDULER].replace("step 21\n", "step 21 (changed)\n")}
    patches = [parse_patch(t) for t in three]
    verdicts = check_stack(patches, _read(files)).verdicts
    assert [[v.status for v in p] for p in verdicts] == [[CONTEXT], [CONTEXT], [CONTEXT]]
    assert [[v.applies for v in p] for p in verdicts] == git_stack_verdicts(files, three, [_pairs(p) for p in patches])


SLIME_DOCKERFILE = """\
ARG SGLANG_IMAGE_TAG=v0.5.15.post1
FROM slimerl/sglang:${SGLANG_IMAGE_TAG} AS sglang
ARG PATCH_VERSION=latest
COPY docker/patch/${PATCH_VERSION}/megatron*.patch /root/Megatron-LM/
RUN cd Megatron-LM && git apply megatron.patch --3way
ARG ENABLE_SGLANG_PATCH=1
COPY docker/patch/${PATCH_VERSION}/sglang*.patch /sgl-workspace/sglang/
RUN if [ "$ENABLE_SGLANG_PATCH" = "1" ]; then \\
  cd /sgl-workspace/sglang && \\
  for patch in sglang.patch sglang-top_p.patch sglang-pull_weights.patch; do \\
    if [ ! -f "$patch" ]; then \\
      continue; \\
    fi; \\
    if ! git apply --check "$patch"; then \\
      exit 1; \\
    fi; \\
    git apply "$patch" || exit 1; \\
  done && \\
  rm sglang*.patch; \\
fi
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for relpath, text in files.items():
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_text(text)
    return root


@pytest.fixture
def slime_shaped(tmp_path: Path, three: list[str]) -> Path:
    """A project shaped like slime: the live folder the Dockerfile applies (in its loop's order,
    not the names'), and folders of past releases it no longer applies."""
    return write(tmp_path / "project", {
        "pyproject.toml": "[project]\nname = 'app'\n",
        "docker/Dockerfile": SLIME_DOCKERFILE,
        "docker/patch/latest/sglang.patch": three[0],
        "docker/patch/latest/sglang-top_p.patch": three[1],
        "docker/patch/latest/sglang-pull_weights.patch": three[2],
        "docker/patch/v0.5.9/sglang.patch": three[1],
        "docker/patch/v0.5.12.post1/sglang.patch": three[2],
        "docker/npu_patch/sglang.patch": three[2],
    })


def test_the_order_is_read_from_the_dockerfile_loop(slime_shaped):
    stacks = patch_stacks(slime_shaped)
    assert [(s.source, s.patches) for s in stacks.stacks] == [("docker/Dockerfile:8", [
        "docker/patch/latest/sglang.patch", "docker/patch/latest/sglang-top_p.patch",
        "docker/patch/latest/sglang-pull_weights.patch"])]
    assert stacks.unapplied == ["docker/npu_patch/sglang.patch", "docker/patch/v0.5.12.post1/sglang.patch",
                                "docker/patch/v0.5.9/sglang.patch"]


LATEST = ["docker/patch/latest/sglang.patch", "docker/patch/latest/sglang-top_p.patch",
          "docker/patch/latest/sglang-pull_weights.patch"]


@pytest.mark.parametrize(("files", "expected"), [
    ({"build.sh": "PATCH_VERSION=${PATCH_VERSION:-v0.5.9}\nSLIME_DIR=$(pwd)\ncd sglang\n"
                  "patch -p1 < $SLIME_DIR/docker/patch/$PATCH_VERSION/sglang.patch\n"},
     [LATEST, ["docker/patch/v0.5.9/sglang.patch"]]),  # the Dockerfile's stack, then the script's
    ({"docker/Dockerfile": "COPY patch/latest /app/patch\nRUN for p in /app/patch/*.patch; do git apply $p; done\n"},
     [["docker/patch/latest/sglang-pull_weights.patch", "docker/patch/latest/sglang-top_p.patch",
       "docker/patch/latest/sglang.patch"]]),  # a glob: name order, as the shell expands it
    ({"docker/Dockerfile": "RUN echo no patches here\n", "docker/Dockerfile.rocm": "COPY docker/npu_patch/ /p/\n"
                                                                                 "RUN git apply /p/sglang.patch\n"},
     [["docker/npu_patch/sglang.patch"]]),  # a variant counts when the plain Dockerfile applies nothing
    ({"docker/Dockerfile": "RUN echo no patches here\n"},  # nothing applies a patch: every folder, name order
     [["docker/npu_patch/sglang.patch"], ["docker/patch/latest/sglang-pull_weights.patch",
      "docker/patch/latest/sglang-top_p.patch", "docker/patch/latest/sglang.patch"],
      ["docker/patch/v0.5.12.post1/sglang.patch"], ["docker/patch/v0.5.9/sglang.patch"]]),
])
def test_order_from_scripts_globs_and_fallbacks(slime_shaped, files, expected):
    write(slime_shaped, files)
    assert [s.patches for s in patch_stacks(slime_shaped).stacks] == expected


def test_a_variant_dockerfile_does_not_count_beside_the_plain_one(slime_shaped):
    write(slime_shaped, {"docker/Dockerfile.rocm": "COPY docker/npu_patch/ /p/\nRUN git apply /p/sglang.patch\n"})
    assert "docker/npu_patch/sglang.patch" in patch_stacks(slime_shaped).unapplied


def test_patch_files_fix_the_order_one_stack_per_folder(slime_shaped):
    stacks = patch_stacks(slime_shaped, ["docker/patch/latest/sglang.patch", "docker/patch/latest/sglang-top_p.patch",
                                         "docker/patch/v0.5.9/*.patch"])
    assert [s.patches for s in stacks.stacks] == [
        ["docker/patch/latest/sglang.patch", "docker/patch/latest/sglang-top_p.patch"],
        ["docker/patch/v0.5.9/sglang.patch"]]


def _check(project: Path, old: dict[str, str], new: dict[str, str], tmp: Path, **options) -> list[str]:
    def release(name, files, version):
        root = tmp / name
        write(root, {"sglang/__init__.py": "", "sglang/version.py": f'__version__ = "{version}"\n'})
        write(root, {path.removeprefix("python/"): text for path, text in files.items()})
        return str(root)

    result = run_check([project], CheckOptions(old=release("old", old, "0.1.0"), new=release("new", new, "0.2.0"),
                                               use_cache=False, workers=1, **options))
    return [f"{d.path}:{d.line}: {d.code} {d.severity}" for d in result.diagnostics]


def test_the_break_judged_alone_would_hide_is_reported(slime_shaped, tmp_path):
    """Judged alone, the third patch failed on the pin too and was never reported; on the stack it
    applied on the pin and fails on the target: an error. The dead folders are not judged."""
    assert _check(slime_shaped, OLD, NEW, tmp_path) == ["docker/patch/latest/sglang-pull_weights.patch:5: SGC901 error"]


def test_what_was_not_judged_is_one_info_line(slime_shaped, tmp_path):
    found = _check(slime_shaped, OLD, NEW, tmp_path, report_unresolved=True)
    assert found == ["docker/npu_patch/sglang.patch:1: SGC903 info",
                     "docker/patch/latest/sglang-pull_weights.patch:5: SGC901 error"]


def test_the_stack_of_the_other_release_is_judged_too(slime_shaped, tmp_path):
    """On the pin the first patch's context is gone: nothing of the stack applied before, so the bump
    breaks nothing (reported as info with --report-unresolved, every patch of the stack)."""
    broken_pin = {SCHEDULER: OLD[SCHEDULER].replace("step 21\n", "step 21 (changed)\n")}
    assert _check(slime_shaped, broken_pin, broken_pin, tmp_path) == []
    found = _check(slime_shaped, broken_pin, broken_pin, tmp_path / "again", report_unresolved=True)
    assert [f for f in found if "SGC901" in f] == [
        "docker/patch/latest/sglang-pull_weights.patch:5: SGC901 info",
        "docker/patch/latest/sglang-top_p.patch:5: SGC901 info",
        "docker/patch/latest/sglang.patch:5: SGC901 info"]


IO_STRUCT = "python/sglang/srt/managers/io_struct.py"
IO_OLD = "".join(f"class Req{i}:\n    pass\n\n\n" for i in range(1, 6))
DELTA_PATCH = f"""\
--- a/{IO_STRUCT}
+++ b/{IO_STRUCT}
@@ -17,4 +17,8 @@ class Req4:
 class Req5:
     pass
+
+
+class DeltaEncoding:
+    pass
 
 
"""


@pytest.mark.parametrize(("new_io", "expected"), [
    (IO_OLD, []),  # the stack still adds it on the target: the import holds on both
    (IO_OLD.replace("class Req5:", "class Req5(Base):"), [  # the hunk fails on the target: so does the import
        "app/weights.py:1: SGC102 error", "docker/patch/latest/sglang.patch:3: SGC901 error"]),
])
def test_the_project_is_checked_against_the_patched_releases(tmp_path, new_io, expected):
    """slime imports `DeltaEncoding` from `io_struct`, which its own patch adds upstream: it resolves
    on the pin, and breaks on the target exactly when the hunk that adds it no longer applies."""
    project = write(tmp_path / "project", {
        "pyproject.toml": "[project]\nname = 'app'\n",
        "app/__init__.py": "",
        "app/weights.py": "from sglang.srt.managers.io_struct import DeltaEncoding\n",
        "docker/Dockerfile": "COPY docker/patch/latest/sglang.patch /sgl-workspace/sglang/\n"
                             "RUN cd /sgl-workspace/sglang && git apply sglang.patch\n",
        "docker/patch/latest/sglang.patch": DELTA_PATCH,
    })
    stock = {IO_STRUCT: IO_OLD, "python/sglang/srt/__init__.py": "", "python/sglang/srt/managers/__init__.py": ""}
    target = {**stock, IO_STRUCT: new_io}
    assert _check(project, stock, target, tmp_path) == expected


BAD = {
    "truncated": "--- a/python/sglang/srt/utils.py\n+++ b/python/sglang/srt/utils.py\n@@ -1,2 +1,2 @@\n def f():\n"
                 "-    return 1\n+    return",
    "corrupt counts": "--- a/python/sglang/srt/utils.py\n+++ b/python/sglang/srt/utils.py\n@@ -1,9 +1,2 @@\n def f():\n"
                      "-    return 1\n+    return 3\n",
    "binary": "diff --git a/python/sglang/srt/kernel.so b/python/sglang/srt/kernel.so\nindex 1234567..89abcde 100644\n"
              "GIT binary patch\nliteral 4\nLcmZ?wbN~PV0RR91\n\nliteral 0\nHcmV?d00001\n\n",
    "file not in the old release": "--- a/python/sglang/srt/nowhere.py\n+++ b/python/sglang/srt/nowhere.py\n"
                                   "@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 3\n",
    # a patch of both line ends: its CRs are content, as git reads them (one of CRLF lines alone is read as LF)
    "CRLF hunk lines": "--- a/python/sglang/srt/utils.py\n+++ b/python/sglang/srt/utils.py\n@@ -1,2 +1,2 @@\n"
                       " def f():\r\n-    return 1\r\n+    return 3\r\n",
    "random bytes": "\x00\x01garbage python/sglang/ \udcff\udcfe",
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_patches_get_a_verdict_or_one_line_never_a_traceback(tmp_path, name, capsys):
    from sglang_contracts.cli import main

    utils = {"python/sglang/srt/utils.py": "def f():\n    return 1\n"}
    project = write(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n"})
    path = project / "docker/patch/latest/sglang.patch"
    path.parent.mkdir(parents=True)
    path.write_bytes(BAD[name].encode("utf-8", "surrogateescape"))
    found = _check(project, utils, utils, tmp_path, report_unresolved=True)
    assert len(found) == 1 and found[0].startswith("docker/patch/latest/sglang.patch:")
    assert found[0].endswith(" info")  # the same on both releases: nothing the bump broke
    if name in ("file not in the old release", "CRLF hunk lines"):  # a per-hunk verdict, which is git's
        verdicts = check_stack([parse_patch(BAD[name])], _read(utils)).verdicts[0]
        patch = parse_patch(BAD[name])
        assert [v.applies for v in verdicts] == git_stack_verdicts(utils, [BAD[name]], [_pairs(patch)])[0] == [False]
    capsys.readouterr()
    status = main(["patch", "classify", str(path), str(path)])
    captured = capsys.readouterr()
    assert status in (0, 2) and "Traceback" not in captured.err
    assert status == 0 or len(captured.err.splitlines()) == 1


def test_a_hunk_of_crlf_lines_says_why_it_does_not_apply():
    patch = parse_patch(BAD["CRLF hunk lines"])
    (verdict,) = check_stack([patch], _read({"python/sglang/srt/utils.py": "def f():\n    return 1\n"})).verdicts[0]
    assert verdict.detail == "its lines end in CRLF and the file's in LF"


def _crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def test_a_patch_whose_lines_all_end_in_crlf_is_judged_as_its_lf_form(slime_shaped, tmp_path):
    """A core.autocrlf checkout writes the committed patches with CRLF ends; GNU `patch -p1`
    strips them, and the blob is the LF patch: the break is reported as it is for the LF files
    (audit 13, R08: every hunk applied to neither release, an info, and the check passed)."""
    for relpath in LATEST:
        path = slime_shaped / relpath
        path.write_bytes(_crlf(path.read_text()).encode())
    assert _check(slime_shaped, OLD, NEW, tmp_path) == ["docker/patch/latest/sglang-pull_weights.patch:5: SGC901 error"]


@pytest.mark.parametrize("ends", ["CRLF headers, LF hunks", "LF headers, CRLF hunks", "one CRLF line"])
def test_a_patch_of_both_line_ends_is_judged_as_git_applies_it(three, ends):
    lines = three[0].splitlines(keepends=True)
    headers = next(index for index, line in enumerate(lines) if line.startswith("@@"))
    if ends == "CRLF headers, LF hunks":
        lines[:headers] = map(_crlf, lines[:headers])
    elif ends == "LF headers, CRLF hunks":
        lines[headers:] = map(_crlf, lines[headers:])
    else:
        lines[headers + 1] = _crlf(lines[headers + 1])
    text = "".join(lines)
    patch = parse_patch(text)
    mine = [v.applies for v in check_patch(patch, _read(OLD))]
    assert mine == git_stack_verdicts(OLD, [text], [_pairs(patch)])[0]


def test_a_script_that_doubles_a_word_or_nests_loops_deeply_is_read_in_bounded_time(slime_shaped):
    import time

    doubling = "a=x\n" + "a=$a$a\n" * 40 + "git apply docker/patch/$a/sglang.patch\n"
    loops = "".join(f"for v{i} in {' '.join(map(str, range(50)))}; do\n" for i in range(6))
    write(slime_shaped, {"doubling.sh": doubling, "loops.sh": loops + "git apply docker/patch/latest/$v0.patch\n",
                         "quotes.sh": "git apply 'docker/patch/latest/sglang.patch\n$(( \"${x\n"})
    started = time.monotonic()
    stacks = patch_stacks(slime_shaped)
    assert time.monotonic() - started < 5
    # an unknown (or too long) variable matches any folder; the loops name no file
    assert [s.source.split(":")[0] for s in stacks.stacks] == ["docker/Dockerfile", "doubling.sh", "quotes.sh"]


def _readings(root: Path) -> list[tuple[str, list[str]]]:
    """(where each stack is read from, its patches in order)."""
    return [(stack.source, stack.patches) for stack in patch_stacks(root).stacks]


# What reads as miles' stack when no Dockerfile applies its one SGLang patch (applied by hand).
NPU_PATCH_ALONE = [("name order", ["docker/npu_patch/sglang.patch"])]


def _npu_patch_project(tmp_path: Path, three: list[str], files: dict[str, str]) -> Path:
    """A project in miles' shape: one SGLang patch, docker/npu_patch/sglang.patch, and `files`."""
    return write(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n",
                                        "docker/npu_patch/sglang.patch": three[0], **files})


def test_a_loop_over_another_library_s_patches_is_no_stack_of_the_sglang_patch(tmp_path, three):
    """miles 6bbc317's Dockerfile applies the TransformerEngine patches it COPY'd from
    docker/patch/cu13/ (helper-45's audit): their glob's tail (`*.patch`) is no reference to
    the one SGLang patch elsewhere (docker/npu_patch/, applied by hand), which stays unapplied
    by any Dockerfile and is judged in name order."""
    root = _npu_patch_project(tmp_path, three, {
        "docker/Dockerfile": "COPY docker/patch/ /tmp/patches/\n"
                             'RUN for p in /tmp/patches/cu13/*.patch; do patch -d "$TE_DIR" -p1 < "$p"; done\n',
        "docker/patch/cu13/te_fa2_whitelist.patch": "--- a/transformer_engine/attention.py\n"
                                                    "+++ b/transformer_engine/attention.py\n"
                                                    "@@ -1,1 +1,1 @@\n-old\n+new\n",
    })
    assert _readings(root) == NPU_PATCH_ALONE
    # The same loop over a folder of SGLang patches still reads as their stack.
    write(root, {"docker/patch/cu13/sglang.patch": three[0]})
    assert _readings(root) == [("docker/Dockerfile:2", ["docker/patch/cu13/sglang.patch"])]


def test_a_copied_patch_the_tree_lacks_is_no_patch_of_the_same_name_elsewhere(tmp_path, three):
    """miles' Dockerfile.rocm_MI300 COPYs amd_patch/sglv0.5.7/sglang.patch, which the tree no
    longer holds (helper-46's audit): the `git apply` of it is no stack of the sglang.patch in
    another folder, which is judged in name order."""
    root = _npu_patch_project(tmp_path, three, {
        "docker/Dockerfile.rocm": "COPY amd_patch/sglv0.5.7/sglang.patch /app/patch/sglang.patch\n"
                                  "RUN cd /app/sglang && git apply --3way /app/patch/sglang.patch\n",
    })
    assert _readings(root) == NPU_PATCH_ALONE
    # The COPY's source present: its stack.
    write(root, {"docker/amd_patch/sglv0.5.7/sglang.patch": three[1]})
    assert _readings(root) == [("docker/Dockerfile.rocm:2", ["docker/amd_patch/sglv0.5.7/sglang.patch"])]


BREAKING_PATCH = f"""\
--- a/{IO_STRUCT}
+++ b/{IO_STRUCT}
@@ -5,2 +5,3 @@
+\0import os
 class Req2:
     pass
"""
APPLY_LATEST = ("COPY docker/patch/latest/ /sgl-workspace/sglang/\n"
                "RUN cd /sgl-workspace/sglang && for p in a.patch b.patch; do git apply $p; done\n")


def _stack_project(tmp_path: Path, files: dict[str, str]) -> tuple[Path, dict[str, str], dict[str, str]]:
    """(a project that imports Req1, whose class the target release drops, with these stack files;
    the stock release; the target)."""
    project = write(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n", "app/__init__.py": "",
                                           "app/weights.py": "from sglang.srt.managers.io_struct import Req1\n",
                                           **files})
    stock = {IO_STRUCT: IO_OLD, "python/sglang/srt/__init__.py": "", "python/sglang/srt/managers/__init__.py": ""}
    return project, stock, {**stock, IO_STRUCT: IO_OLD.replace("class Req1:\n    pass\n", "")}


def test_a_module_the_stack_leaves_unparsable_is_read_as_released_and_the_patch_reported(tmp_path):
    """A patch whose added line holds a NUL byte (or a syntax error): Python could not import the
    patched module. It is read as released, so the project's contracts with it are still checked
    (Req1 is gone in the target: SGC102), and the stack is one SGC000 at the patch, not silence."""
    broken = DELTA_PATCH.replace("+class DeltaEncoding:", "+\0class DeltaEncoding:")
    project, stock, target = _stack_project(tmp_path, {
        "docker/Dockerfile": "COPY docker/patch/latest/sglang.patch /sgl-workspace/sglang/\n"
                             "RUN cd /sgl-workspace/sglang && git apply sglang.patch\n",
        "docker/patch/latest/sglang.patch": broken,
    })
    found = _check(project, stock, target, tmp_path)
    assert found == ["app/weights.py:1: SGC102 error", "docker/patch/latest/sglang.patch:1: SGC000 error"]
    result = run_check([project], CheckOptions(old=str(tmp_path / "old"), new=str(tmp_path / "new"), use_cache=False,
                                               workers=1))
    (message,) = [d.message for d in result.diagnostics if d.code == "SGC000"]
    assert "sglang.srt.managers.io_struct" in message and "read as released" in message, message


def test_the_patch_that_leaves_the_module_unparsable_is_blamed_not_every_patch_of_it(tmp_path):
    """a.patch adds a class and parses; b.patch, applied after it, adds a NUL byte: b alone is
    reported, once though it patches the module in two sections (helper-1's audit)."""
    twice = BREAKING_PATCH + BREAKING_PATCH.split("\n", 2)[2].replace("@@ -5,2 +5,3 @@", "@@ -17,2 +18,3 @@") \
        .replace("+\0import os\n class Req2:", "+\0import sys\n class Req5:")
    project, stock, target = _stack_project(tmp_path, {"docker/Dockerfile": APPLY_LATEST,
                                                       "docker/patch/latest/a.patch": DELTA_PATCH,
                                                       "docker/patch/latest/b.patch": twice})
    assert _check(project, stock, target, tmp_path) == ["app/weights.py:1: SGC102 error",
                                                        "docker/patch/latest/b.patch:1: SGC000 error"]


def test_a_break_a_later_patch_repaired_is_not_the_one_blamed(tmp_path):
    """a.patch leaves `Y = (` (unparsable), b.patch repairs it, c.patch adds `Z = (`: the image's
    module is broken by c, the last patch after which it went from parsing to not (helper-3's audit)."""
    def hunk(at: str, lines: str) -> str:
        return f"--- a/{IO_STRUCT}\n+++ b/{IO_STRUCT}\n@@ {at} @@\n{lines}"

    project, stock, target = _stack_project(tmp_path, {
        "docker/Dockerfile": APPLY_LATEST.replace("a.patch b.patch", "a.patch b.patch c.patch"),
        "docker/patch/latest/a.patch": hunk("-5,2 +5,3", "+Y = (\n class Req2:\n     pass\n"),
        "docker/patch/latest/b.patch": hunk("-5,3 +5,3", "-Y = (\n+Y = 1\n class Req2:\n     pass\n"),
        "docker/patch/latest/c.patch": hunk("-10,2 +10,3", "+Z = (\n class Req3:\n     pass\n"),
    })
    assert _check(project, stock, target, tmp_path) == ["app/weights.py:1: SGC102 error",
                                                        "docker/patch/latest/c.patch:1: SGC000 error"]


def test_a_resident_process_forgets_the_broken_module_once_nothing_imports_it(tmp_path):
    """The daemon's and the language server's models outlive a run: a module the stack broke,
    read as released in one run, is not reported in the next unless that run reaches it too, as a
    fresh run would (helper-1's audit)."""
    from sglang_contracts.resident.engine import ResidentEngine

    project, stock, target = _stack_project(tmp_path, {"docker/Dockerfile": APPLY_LATEST,
                                                       "docker/patch/latest/a.patch": DELTA_PATCH,
                                                       "docker/patch/latest/b.patch": BREAKING_PATCH})
    _check(project, stock, target, tmp_path)  # writes both releases
    options = CheckOptions(old=str(tmp_path / "old"), new=str(tmp_path / "new"), cache_dir=tmp_path / "cache",
                           workers=1)
    engine = ResidentEngine()

    def codes() -> list[tuple[str, str]]:
        resident = [(d.path, d.code) for d in engine.check([project], options).diagnostics]
        assert resident == [(d.path, d.code) for d in run_check([project], options).diagnostics]
        return resident

    assert codes() == [("app/weights.py", "SGC102"), ("docker/patch/latest/b.patch", "SGC000")]
    (project / "app" / "weights.py").write_text("WEIGHTS = 1\n")
    assert codes() == []


def test_a_copy_of_the_live_stack_that_another_build_applies_is_judged_once(slime_shaped, tmp_path):
    """slime's build_conda.sh applies `v0.5.15.post1/`, a copy of the Dockerfile's `latest/`:
    its breaks came twice (153 and 129 hunks). The copy is judged in the live stack's place,
    with one line naming it."""
    for name in ("sglang.patch", "sglang-top_p.patch", "sglang-pull_weights.patch"):
        write(slime_shaped, {f"docker/patch/v0.1.0/{name}": (slime_shaped / "docker/patch/latest" / name).read_text()})
    write(slime_shaped, {"build_conda.sh": "cd sglang\nfor p in sglang.patch sglang-top_p.patch "
                                           "sglang-pull_weights.patch; do\n  git apply ../docker/patch/v0.1.0/$p\ndone\n"})
    stacks = patch_stacks(slime_shaped)
    assert [s.patches for s in stacks.stacks] == [LATEST]
    assert [(copy.source, twin.source) for copy, twin in stacks.duplicates] == [("build_conda.sh:3", "docker/Dockerfile:8")]
    assert _check(slime_shaped, OLD, NEW, tmp_path) == ["docker/patch/latest/sglang-pull_weights.patch:5: SGC901 error",
                                                        "docker/patch/v0.1.0/sglang.patch:1: SGC903 info"]
    # A stack that differs by one patch is a stack of its own, judged as such.
    write(slime_shaped, {"build_conda.sh": "cd sglang\nfor p in sglang.patch sglang-top_p.patch; do\n"
                                           "  git apply ../docker/patch/v0.1.0/$p\ndone\n"})
    differing = patch_stacks(slime_shaped)
    assert len(differing.stacks) == 2 and not differing.duplicates


EXTRA = ("diff --git a/python/sglang/extra.py b/python/sglang/extra.py\nnew file mode 100644\n--- /dev/null\n"
         "+++ b/python/sglang/extra.py\n@@ -0,0 +1 @@\n+X = 1\n")


def test_copies_of_live_patches_in_a_stack_of_its_own_are_judged_once(slime_shaped, tmp_path):
    """slime's `v0.5.15.post1/` holds four of the five patches of `latest/`, byte for byte, in
    the same order: a stack of its own, whose copies were judged again (131 findings twice).
    A patch applied on the same patches before it is judged once; one line names the copies."""
    for name in ("sglang.patch", "sglang-top_p.patch", "sglang-pull_weights.patch"):
        write(slime_shaped, {f"docker/patch/v0.1.0/{name}": (slime_shaped / "docker/patch/latest" / name).read_text()})
    write(slime_shaped, {"docker/patch/v0.1.0/sglang-extra.patch": EXTRA,
                         "build_conda.sh": "cd sglang\nfor p in sglang.patch sglang-top_p.patch "
                                           "sglang-pull_weights.patch sglang-extra.patch; do\n"
                                           "  git apply ../docker/patch/v0.1.0/$p\ndone\n"})
    assert len(patch_stacks(slime_shaped).stacks) == 2
    found = _check(slime_shaped, OLD, NEW, tmp_path)
    assert found == ["docker/patch/latest/sglang-pull_weights.patch:5: SGC901 error",
                     "docker/patch/v0.1.0/sglang.patch:1: SGC903 info"]


def test_stacks_guessed_for_want_of_a_command_are_said_by_default(slime_shaped, tmp_path):
    write(slime_shaped, {"docker/Dockerfile": "RUN echo no patches here\n"})
    stacks = patch_stacks(slime_shaped)
    assert stacks.guessed and len(stacks.stacks) == 4
    found = _check(slime_shaped, OLD, NEW, tmp_path / "guessed")
    assert found.count("docker/npu_patch/sglang.patch:1: SGC903 info") == 1
    assert not patch_stacks(tmp_path / "guessed").guessed  # no patch at all: nothing guessed


def test_a_script_target_with_many_recursive_wildcards_walks_the_tree_once_at_most(tmp_path, three, monkeypatch):
    """`git apply **/**/**/**/**/**/**/**/**/**/none.patch` in a pull request's script: each `**`
    walked every folder again, minutes for thirty such lines (third campaign D05). A target with
    more than one `**` names no file by globbing; the live stack is still found."""
    from pathlib import Path as PathType

    project = write(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n",
                                           "docker/patch/ok.patch": three[0],
                                           "apply.sh": "".join(f"git apply {'**/' * 10}none{i}.patch\n" for i in range(30))
                                           + "git apply docker/patch/ok.patch\n"})
    for a in range(3):
        for b in range(3):
            (project / f"src/d{a}/d{b}").mkdir(parents=True)
    globbed = []
    real_glob = PathType.glob
    monkeypatch.setattr(PathType, "glob", lambda self, pattern: globbed.append(pattern) or real_glob(self, pattern))
    stacks = patch_stacks(project)
    assert [s.patches for s in stacks.stacks] == [["docker/patch/ok.patch"]]
    assert not [pattern for pattern in globbed if pattern.count("**") > 1]


def test_a_patch_that_adds_thousands_of_loops_is_read_in_one_pass_over_the_patched_module(tmp_path, monkeypatch):
    """Issue 38 D03: a pull request's patch adding `for n in T: globals()[n] = 1` loops to an
    upstream module made its extraction read the module's top level once per loop (6,000
    loops: over 120 s). The patched module is read in one pass, as a released one is."""
    from sglang_contracts.upstream import toplevel

    loops = 300
    added = ["T = ['a']"] + ["for n in T:", "    globals()[n] = 1"] * loops
    patch = (f"--- a/{IO_STRUCT}\n+++ b/{IO_STRUCT}\n@@ -17,4 +17,{4 + len(added)} @@ class Req4:\n"
             " class Req5:\n     pass\n" + "".join(f"+{line}\n" for line in added) + " \n \n")
    project, stock, target = _stack_project(tmp_path, {
        "docker/Dockerfile": "COPY docker/patch/latest/sglang.patch /sgl-workspace/sglang/\n"
                             "RUN cd /sgl-workspace/sglang && git apply sglang.patch\n",
        "docker/patch/latest/sglang.patch": patch,
    })
    read: list[int] = []
    patched_statements = 5 + 1 + 2 * loops  # the module's five classes, the table, the loops' statements
    original = toplevel._top_statements

    def counted(body, conditional=False):
        for item in original(body, conditional):
            read.append(1)
            yield item

    monkeypatch.setattr(toplevel, "_top_statements", counted)
    assert _check(project, stock, target, tmp_path) == ["app/weights.py:1: SGC102 error"]
    # Both releases, patched, each read by dynamic_setters and evaluated_exports: a few passes
    # over each module; before, a pass per loop (about loops * statements / 2).
    assert 0 < len(read) <= 12 * patched_statements, len(read)


@pytest.mark.parametrize("target", [".", "./", "/" + "a/" * 2000 + "x.patch"],
                         ids=["dot", "dot slash", "2000 segments"])
def test_a_git_apply_target_pathlib_cannot_glob_names_no_file(tmp_path, target):
    """`git apply .` (no path parts: IndexError) and a target of 2,000 segments (RecursionError)
    beside a patch failed each patch rule with an internal error (sixth campaign, found with M08)."""
    (tmp_path / "patches").mkdir()
    (tmp_path / "patches" / "x.patch").write_text("diff --git a/python/sglang/a.py b/python/sglang/a.py\n")
    (tmp_path / "Dockerfile").write_text(f"FROM lmsysorg/sglang:v0.1.0\nRUN git apply {target}\n")
    stacks = patch_stacks(tmp_path)
    assert [stack.patches for stack in stacks.stacks] == [["patches/x.patch"]]  # none applied: by name


def test_wildcard_targets_are_looked_for_among_the_files_the_walk_lists_not_on_disk(tmp_path, monkeypatch):
    """Each target with a wildcard was globbed on disk, walking what the project's walk skips: 300
    `git apply **/z{i}*.patch` lines beside a node_modules of 100,000 files took 66 s (campaign 20,
    R04). The files the walk lists are looked up, as pathlib reads the pattern: a `*` within one
    folder, a `**` across any; what the walk skips names nothing."""
    import pathlib

    (tmp_path / "patches").mkdir()
    (tmp_path / "patches" / "x.patch").write_text("diff --git a/python/sglang/a.py b/python/sglang/a.py\n")
    (tmp_path / "te" / "deep").mkdir(parents=True)
    (tmp_path / "te" / "deep" / "fix.patch").write_text("diff --git a/te/a.py b/te/a.py\n")
    (tmp_path / "node_modules" / "m").mkdir(parents=True)
    (tmp_path / "node_modules" / "m" / "nm.patch").write_text("x\n")
    monkeypatch.setattr(pathlib.Path, "glob", lambda *args: pytest.fail("globbed on disk"))
    files = stack_module_files(tmp_path)
    assert files.names_a_file(tmp_path, "**/fix.patch") and files.names_a_file(tmp_path, "te/*/f*.patch")
    assert files.names_a_file(tmp_path / "te", "deep/fix.patch")
    assert not files.names_a_file(tmp_path, "*/fix.patch") and not files.names_a_file(tmp_path, "**/nm.patch")
    assert not files.names_a_file(tmp_path / "te", "**/x.patch") and not files.names_a_file(tmp_path, "te/**")


def stack_module_files(root):
    from sglang_contracts.patch import stack as stack_module

    return stack_module._ProjectFiles(root.resolve())


def test_wildcard_targets_are_looked_for_a_bounded_number_of_times(tmp_path, monkeypatch):
    """Each `git apply` target with a wildcard was globbed on disk, listing every folder it crosses:
    4,000 lines of `/*/*/g{i}*.patch` beside a folder of 3,000 files took 18 s (M08's class). The
    same one is looked for once, and past MAX_DISK_GLOBS of them none is."""
    from sglang_contracts.patch import stack as stack_module

    globbed: list[str] = []
    names_a_file = stack_module._ProjectFiles.names_a_file
    monkeypatch.setattr(stack_module._ProjectFiles, "names_a_file", lambda self, folder, pattern:
                        globbed.append(pattern) or names_a_file(self, folder, pattern))
    (tmp_path / "patches").mkdir()
    (tmp_path / "patches" / "x.patch").write_text("diff --git a/python/sglang/a.py b/python/sglang/a.py\n")
    lines = "".join(f"RUN git apply /*/*/g{index}*.patch /q/same*.patch\n" for index in range(1000))
    (tmp_path / "Dockerfile").write_text("FROM lmsysorg/sglang:v0.1.0\n" + lines)
    patch_stacks(tmp_path)
    assert len(globbed) <= stack_module.MAX_DISK_GLOBS
    assert globbed.count("q/same*.patch") == 1
