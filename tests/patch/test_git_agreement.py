"""The patch checker against real `git apply --check`: every hunk's verdict must be git's."""

from __future__ import annotations

import pytest

from tests.gitcheck import assert_agrees_with_git, git_applies_whole
from sglang_contracts.patch.gitapply import ALREADY, APPLIES, CONTEXT, EXISTS, GONE, check_patch
from sglang_contracts.patch.patchfile import parse_patch

TREE = {
    "python/sglang/srt/utils.py": "".join(f"line {i}\n" for i in range(1, 41)),
    "python/sglang/srt/short.py": "alpha\nbeta\ngamma\n",
    "python/sglang/srt/no_eol.py": "one\ntwo\nthree",
    "python/sglang/srt/dup.py": "x = 1\ny = 2\nx = 1\ny = 2\n",
}


def hunk(start: int, lines: list[str], *, old: int | None = None, new: int | None = None, new_start: int | None = None) -> str:
    old = old if old is not None else sum(1 for l in lines if l[0] in " -")
    new = new if new is not None else sum(1 for l in lines if l[0] in " +")
    return f"@@ -{start},{old} +{new_start or start},{new} @@\n" + "".join(l + "\n" for l in lines)


def file_patch(path: str, *hunks: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n" + "".join(hunks)


U = "python/sglang/srt/utils.py"
CASES = {
    "clean, with an offset": file_patch(U, hunk(8, [" line 10", " line 11", "-line 12", "+LINE 12", " line 13"])),
    "context changed": file_patch(U, hunk(10, [" line 10", " line eleven", "-line 12", "+LINE 12", " line 13"])),
    "second hunk fails, first and third apply": file_patch(
        U, hunk(2, [" line 2", "-line 3", "+LINE 3", " line 4"]),
        hunk(20, [" line 20", " line 2l", "-line 22", "+LINE 22"  , " line 23"]),
        hunk(30, [" line 30", "-line 31", "+LINE 31", " line 32"])),
    "already applied upstream": file_patch(U, hunk(5, [" line 5", "-line six", "+line 6", " line 7"])),
    "hunk at line 1 must match at the top": file_patch(U, hunk(1, [" line 2", "-line 3", "+LINE 3", " line 4"])),
    "no trailing context must match at the end": file_patch(U, hunk(20, [" line 20", "-line 21", "+LINE 21"])),
    "no trailing context, at the end": file_patch(U, hunk(39, [" line 39", "-line 40", "+LINE 40"])),
    "file gone": file_patch("python/sglang/srt/gone.py", hunk(1, [" a", "-b", "+c"])),
    "new file": "diff --git a/python/sglang/srt/new.py b/python/sglang/srt/new.py\nnew file mode 100644\n"
                "--- /dev/null\n+++ b/python/sglang/srt/new.py\n@@ -0,0 +1,2 @@\n+a\n+b\n",
    "new file that exists with the same content": "--- /dev/null\n+++ b/python/sglang/srt/short.py\n"
                                                  "@@ -0,0 +1,3 @@\n+alpha\n+beta\n+gamma\n",
    "new file that exists with other content": "--- /dev/null\n+++ b/python/sglang/srt/short.py\n@@ -0,0 +1,1 @@\n+alpha\n",
    "deleted file": "diff --git a/python/sglang/srt/short.py b/python/sglang/srt/short.py\ndeleted file mode 100644\n"
                    "--- a/python/sglang/srt/short.py\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-alpha\n-beta\n-gamma\n",
    "deletion that leaves content": "--- a/python/sglang/srt/short.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-alpha\n-beta\n",
    "no newline at end of file": file_patch("python/sglang/srt/no_eol.py",
                                           "@@ -2,2 +2,2 @@\n two\n-three\n\\ No newline at end of file\n+THREE\n"),
    "no newline, but the file has one": file_patch("python/sglang/srt/short.py",
                                                   "@@ -2,2 +2,2 @@\n beta\n-gamma\n\\ No newline at end of file\n+GAMMA\n"),
    "count too small, rest ignored as garbage": file_patch(U, hunk(10, [" line 10", "-line 11", "+LINE 11", " line 12", " line 13"], old=3, new=3))
        + file_patch("python/sglang/srt/short.py", hunk(1, [" alpha", "-beta", "+BETA", " gamma"])),
    "count too small, then another hunk": file_patch(U, hunk(10, [" line 10", "-line 11", "+LINE 11", " line 12", " line 13"], old=2, new=2),
                                                     hunk(30, [" line 30", "-line 31", "+LINE 31", " line 32"])),
    "count too large": file_patch(U, hunk(10, [" line 10", "-line 11", "+LINE 11", " line 12"], old=5, new=5),
                                  hunk(30, [" line 30", "-line 31", "+LINE 31", " line 32"])),
    "count too small ending on a change: must match at the end": file_patch(
        U, hunk(10, [" line 10", "-line 11", "+LINE 11", " line 12"], old=2, new=2))
        + file_patch("python/sglang/srt/short.py", hunk(1, [" alpha", "-beta", "+BETA", " gamma"])),
    "overlapping hunks: patched lines are not matched again": file_patch(
        U, hunk(10, [" line 10", "-line 11", "+LINE 11", " line 12"]), hunk(11, [" line 11", "-line 12", "+LINE 12", " line 13"])),
    "repeated context: the nearest match wins": file_patch("python/sglang/srt/dup.py", hunk(3, [" x = 1", "-y = 2", "+y = 3"]),
                                                           ),
    "the same file twice in one patch": file_patch(U, hunk(5, [" line 5", "-line 6", "+LINE 6", " line 7"]))
        + file_patch(U, hunk(5, [" line 5", "-LINE 6", "+Line 6", " line 7"])),
    "traditional diff with timestamps": "--- a/python/sglang/srt/short.py\t2026-01-01 00:00:00\n"
                                        "+++ b/python/sglang/srt/short.py\t2026-01-02 00:00:00\n"
                                        "@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n",
    "email headers before the diff": "From 0000 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] fix\n\n---\n short.py | 2 +-\n\n"
                                     + file_patch("python/sglang/srt/short.py", hunk(1, [" alpha", "-beta", "+BETA", " gamma"])),
    "an empty line as context (newer GNU diff)": file_patch(U, "@@ -5,3 +5,3 @@\n line 5\n-line 6\n+LINE 6\n\n"),
}
TREE_FOR_ALREADY = {**TREE, U: TREE[U].replace("line 6\n", "line 6\n", 1)}


@pytest.mark.parametrize("name", list(CASES))
def test_every_hunk_verdict_is_gits(name: str) -> None:
    text = CASES[name]
    verdicts = check_patch(parse_patch(text), TREE.get)
    assert_agrees_with_git(TREE, text, verdicts)


def _statuses(text: str, tree=TREE) -> list[str]:
    return [v.status for v in check_patch(parse_patch(text), tree.get)]


def test_verdicts_name_the_reason() -> None:
    assert _statuses(CASES["clean, with an offset"]) == [APPLIES]
    assert _statuses(CASES["second hunk fails, first and third apply"]) == [APPLIES, CONTEXT, APPLIES]
    assert _statuses(CASES["already applied upstream"]) == [ALREADY]
    assert _statuses(CASES["file gone"]) == [GONE]
    assert _statuses(CASES["new file that exists with the same content"]) == [ALREADY]
    assert _statuses(CASES["new file that exists with other content"]) == [EXISTS]
    assert _statuses(CASES["hunk at line 1 must match at the top"]) == [CONTEXT]
    assert _statuses(CASES["overlapping hunks: patched lines are not matched again"]) == [APPLIES, CONTEXT]
    detail = check_patch(parse_patch(CASES["context changed"]), TREE.get)[0].detail
    assert detail == "context line `line eleven` is no longer in the file"


def test_hand_edited_counts_follow_git() -> None:
    small = parse_patch(CASES["count too small, rest ignored as garbage"])
    assert small.error is None
    counted = small.files[0].hunks[0].body
    assert counted == [(" ", "line 10\n"), ("-", "line 11\n"), ("+", "LINE 11\n"), (" ", "line 12\n")]  # not line 13
    assert parse_patch(CASES["count too small, then another hunk"]).error[1].startswith("patch fragment without header at line")
    assert parse_patch(CASES["count too large"]).error[1].startswith("corrupt patch at line")
    for name in ("count too small, then another hunk", "count too large"):
        assert not git_applies_whole(TREE, CASES[name])
        assert {v.status for v in check_patch(parse_patch(CASES[name]), TREE.get)} == {"corrupt-patch"}
