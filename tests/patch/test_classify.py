"""`sglang-contracts patch classify MINE SKELETON` on two patches made by real `git diff`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.gitcheck import materialise
from sglang_contracts.cli import main
from sglang_contracts.patch.classify import BOILERPLATE, classify
from sglang_contracts.patch.patchfile import PatchFile, parse_patch

BASE = {
    "python/sglang/srt/utils.py": "".join(f"line {i}\n" for i in range(1, 61)),
    "python/sglang/srt/server_args.py": "".join(f"arg {i}\n" for i in range(1, 31)),
    "python/sglang/srt/shared.py": "".join(f"shared {i}\n" for i in range(1, 31)),
}


def _diff(edits: dict[str, list[tuple[str, str]]], tmp: Path) -> str:
    """`git diff` after replacing lines of BASE (with extra blank lines at the top of utils.py in
    some trees, so the same change lands at other `@@` offsets)."""
    repo = materialise(BASE, tmp)
    run = lambda *a: subprocess.run(["git", *a], cwd=repo, check=True, capture_output=True, text=True)  # noqa: E731
    run("add", "-A")
    run("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "base")
    for path, replacements in edits.items():
        file = repo / path
        text = file.read_text() if file.exists() else ""
        for old, new in replacements:
            text = text.replace(old, new) if old else text + new
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(text)
    run("add", "-A")
    return run("diff", "--cached").stdout


@pytest.fixture
def patches(tmp_path: Path) -> tuple[Path, Path]:
    skeleton = _diff({
        "python/sglang/srt/utils.py": [("line 10\n", "LINE 10\n"), ("line 40\n", "LINE 40\n")],
        "python/sglang/srt/shared.py": [("shared 5\n", "SHARED 5\n")],
        "python/sglang/srt/only_theirs.py": [("", "theirs\n")],
    }, tmp_path / "skeleton")
    mine = _diff({
        "python/sglang/srt/utils.py": [("line 1\n", "line 0\nline 1\n"), ("line 10\n", "LINE 10\n"), ("line 40\n", "LINE 40\n")],
        "python/sglang/srt/shared.py": [("shared 5\n", "SHARED 5\n"), ("shared 6\n", "SHARED 6\n"), ("shared 25\n", "SHARED 25\n")],
        "python/sglang/srt/server_args.py": [("arg 3\n", "ARG 3\n")],
    }, tmp_path / "mine")
    (tmp_path / "mine.patch").write_text(mine)
    (tmp_path / "skeleton.patch").write_text(skeleton)
    return tmp_path / "mine.patch", tmp_path / "skeleton.patch"


def test_classifies_files_and_hunks_ignoring_offsets(patches, capsys) -> None:
    mine, skeleton = patches
    assert main(["patch", "classify", str(mine), str(skeleton), "--format", "json"]) == 0
    result = {entry["path"]: entry for entry in json.loads(capsys.readouterr().out)}
    utils = result["python/sglang/srt/utils.py"]
    # mine adds a line at the top: its own hunk; the two shared changes sit one line lower but match
    assert [h["verdict"] for h in utils["hunks"]] == ["extra", "same", "same"]
    assert utils["verdict"] == "shared-with-extra"
    shared = result["python/sglang/srt/shared.py"]
    assert [h["verdict"] for h in shared["hunks"]] == ["extends", "extra"]  # 5 and 6 in one hunk; 25 alone
    assert result["python/sglang/srt/server_args.py"]["verdict"] == "only-mine"
    assert result["python/sglang/srt/only_theirs.py"]["verdict"] == "only-skeleton"


def test_the_same_patch_is_the_same_change(patches, capsys) -> None:
    mine, _ = patches
    assert main(["patch", "classify", str(mine), str(mine)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out and all(": the same change (" in line for line in out)


def test_a_patch_with_crlf_line_ends_is_the_same_change_as_its_lf_form(patches, tmp_path, capsys) -> None:
    """As its blob is, before a core.autocrlf checkout wrote the CRs (audit 13, R08)."""
    mine, _ = patches
    crlf = tmp_path / "crlf.patch"
    crlf.write_bytes(mine.read_bytes().replace(b"\n", b"\r\n"))
    assert main(["patch", "classify", str(crlf), str(mine), "--format", "json"]) == 0
    hunks = [hunk for entry in json.loads(capsys.readouterr().out) for hunk in entry["hunks"]]
    # read with its CRs, each hunk was `same (formatting)`, its header ending in `\r`
    assert hunks and all(h["verdict"] == "same" and h["header"] == h["skeleton"]["header"] for h in hunks)


def test_text_output_lists_the_hunks_of_shared_files(patches, capsys) -> None:
    mine, skeleton = patches
    main(["patch", "classify", str(mine), str(skeleton)])
    out = capsys.readouterr().out
    assert f"python/sglang/srt/server_args.py: only in {mine} (1 hunks)" in out
    assert "python/sglang/srt/utils.py: extra changes on a shared file (3 hunks)" in out
    assert f"  {mine}:" in out and ": extra  @@ -1," in out


def test_unreadable_or_corrupt_patch_is_a_one_line_error(patches, tmp_path, capsys) -> None:
    mine, _ = patches
    corrupt = tmp_path / "corrupt.patch"
    corrupt.write_text("--- a/x\n+++ b/x\n@@ -1,5 +1,5 @@\n a\n-b\n+c\n")
    for args in ([str(mine), str(tmp_path / "missing.patch")], [str(corrupt), str(mine)]):
        assert main(["patch", "classify", *args]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and len(captured.err.splitlines()) == 1
    assert "corrupt patch at line" in captured.err


def _hunk(start: int, lines: list[str]) -> str:
    old = sum(1 for line in lines if line[0] in " -")
    new = sum(1 for line in lines if line[0] in " +")
    return f"@@ -{start},{old} +{start},{new} @@\n" + "".join(line + "\n" for line in lines)


def _file(path: str, *hunks: str) -> str:
    return f"--- a/{path}\n+++ b/{path}\n" + "".join(hunks)


S = "python/sglang/srt/managers/scheduler.py"
SKELETON = (
    _file(S, _hunk(10, [" a", "-self.x = 1", "+self.x = 2", " b"]),
          _hunk(40, [" c", "-    return f(x)  # fast path", "+    return g(x)", " d"]),
          _hunk(80, [" e", "-y = load()", "+y = load(cache=True)", " f"]),
          _hunk(120, [" g", "+gone_upstream()", " h"]),
          _hunk(200, [" i", "+# skeleton's note", " j"]))
    + _file("python/sglang/srt/utils/profiler_manager.py",
            _hunk(5, [" def start_profile(self):", "-    self.profiler.start()", "+    self.profiler.start(record_shapes=True)",
                      "     self.active = True"]))
)
MINE = (
    _file(S, _hunk(8, [" z", "-self.x = 1", "+self.x = 2", "+self.x_extra = 3", " b"]),  # extends the first, but...
          _hunk(10, [" a", "-self.x = 1", "+self.x = 2", " b"]),  # ...this one is exactly it
          _hunk(41, [" c", "-  return f(x)", "+  return   g(x)  # the same, reformatted", " d"]),
          _hunk(81, [" e", "-y = load()", "+y = load(cache=False, lazy=True)", " f"]),
          _hunk(300, [" k", "+# a note of our own, elsewhere", " l"]))
    + _file("python/sglang/srt/managers/profiler_manager.py",
            _hunk(7, [" def start_profile(self):", "-    self.profiler.start()", "+    self.profiler.start(record_shapes=True)",
                      "     self.active = True"]))
)


@pytest.fixture
def audit(tmp_path: Path) -> tuple[Path, Path]:
    """Two patches both named sglang.patch, in the shapes the audit of slime's met."""
    (tmp_path / "relax").mkdir()
    (tmp_path / "slime").mkdir()
    (tmp_path / "relax" / "sglang.patch").write_text(MINE)
    (tmp_path / "slime" / "sglang.patch").write_text(SKELETON)
    return tmp_path / "relax" / "sglang.patch", tmp_path / "slime" / "sglang.patch"


def test_hunks_are_paired_over_the_file_exact_first_then_formatting_then_place(audit, capsys) -> None:
    mine, skeleton = audit
    assert main(["patch", "classify", str(mine), str(skeleton), "--format", "json"]) == 0
    result = {entry["path"]: entry for entry in json.loads(capsys.readouterr().out)}
    scheduler = result[S]
    assert [(h["verdict"], h.get("skeleton", {}).get("line")) for h in scheduler["hunks"]] == [
        ("extra", None),  # its partner is the exact match of the next hunk, found first
        ("same", 3),
        ("same (formatting)", 8),  # indentation, spaces and a comment only
        ("modified", 13),  # an extra and a dropped hunk at the same place are one modified hunk
        ("extra", None),  # a comment of its own is not the skeleton's other comment
    ]
    assert [h["line"] for h in scheduler["dropped"]] == [18, 22]  # the skeleton's hunks mine lacks
    moved = result["python/sglang/srt/managers/profiler_manager.py"]
    assert moved["moved_from"] == "python/sglang/srt/utils/profiler_manager.py"
    assert [h["verdict"] for h in moved["hunks"]] == ["same"]
    assert "python/sglang/srt/utils/profiler_manager.py" not in result  # followed, not only-skeleton


def test_text_names_the_patches_by_path_and_shows_a_modified_hunk_with_what_it_was(audit, capsys) -> None:
    mine, skeleton = audit
    main(["patch", "classify", str(mine), str(skeleton)])
    out = capsys.readouterr().out
    assert f"  {mine}:19: modified  @@ -81,3 +81,3 @@\n    {skeleton}:13: was  @@ -80,3 +80,3 @@\n" in out
    assert (f"python/sglang/srt/managers/profiler_manager.py (moved from python/sglang/srt/utils/profiler_manager.py "
            f"in {skeleton}): the same change (1 hunks)") in out


def _added_files(files: dict[str, list[str]]) -> PatchFile:
    return parse_patch("".join(f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1,0 +1,{len(lines)} @@\n"
                               + "".join(f"+{line}\n" for line in lines) for path, lines in files.items()))


@pytest.mark.parametrize("carriers", [BOILERPLATE, BOILERPLATE + 1])
def test_a_line_more_than_boilerplate_skeleton_files_carry_is_no_sign_of_a_move(carriers: int) -> None:
    # Two shared lines of three are a move; lines that many of the skeleton's files carry (a
    # licence header) point at none of them, and are what bounds the pairing's work (R04).
    header = ["# Copyright the authors", "import torch.nn as nn"]
    mine = _added_files({"python/sglang/srt/new.py": [*header, "def mine(): ...", "MINE = 1 + 1"]})
    skeleton = _added_files({f"python/sglang/srt/s{index}.py": [*header, f"def theirs_{index}(): ..."]
                             for index in range(carriers)})
    [entry, *_] = classify(mine, skeleton)
    assert entry.moved_from == ("python/sglang/srt/s0.py" if carriers <= BOILERPLATE else None)
