"""Real `git apply --check` runs, to compare the patch checker's verdicts with git's own."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from sglang_contracts.patch.gitapply import HunkVerdict
from sglang_contracts.patch.patchfile import FilePatch, Hunk


def _git(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, text=True,
                          encoding="utf-8", errors="surrogateescape")


def materialise(files: dict[str, str], folder: Path) -> Path:
    """A git repository whose working tree holds `files` (paths as patches name them)."""
    folder.mkdir(parents=True, exist_ok=True)
    _git(folder, "init", "-q")
    for relpath, text in files.items():
        path = folder / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
    return folder


def git_hunk_verdicts(files: dict[str, str], patch_text: str, hunks: list[tuple[FilePatch, Hunk | None]]) -> list[bool]:
    """For each (file patch, hunk) in patch order: does `git apply --check --reject` apply it?

    With --reject git checks every hunk of a file in order, skipping the ones that fail, and
    names each failure `patch failed: PATH:OLDSTART`; a file it cannot patch at all (missing,
    already existing) fails every one of its hunks; a patch it cannot parse applies nothing.
    """
    with tempfile.TemporaryDirectory() as tmp:
        repo = materialise(files, Path(tmp) / "tree")
        return _reject_run(repo, Path(tmp) / "p.patch", patch_text, hunks, apply=False)


def _reject_run(repo: Path, patch_path: Path, patch_text: str, hunks: list[tuple[FilePatch, Hunk | None]], *,
                apply: bool) -> list[bool]:
    patch_path.write_bytes(patch_text.encode("utf-8", "surrogateescape"))
    run = _git(repo, "apply", "--check", "--reject", "-v", str(patch_path))
    if apply:  # what applies is applied, the rest left in .rej files (removed)
        _git(repo, "apply", "--reject", str(patch_path))
        for rejected in repo.rglob("*.rej"):
            rejected.unlink()
    if run.returncode == 128:
        return [False] * len(hunks)
    failed_hunks = set(re.findall(r"^error: patch failed: (.+):(\d+)$", run.stderr, re.M))
    failed_files = set(re.findall(r"^error: (.+?): (?:No such file or directory|already exists in working directory|"
                                  r"does not exist in index|removal patch leaves file contents)$", run.stderr, re.M))
    verdicts = []
    for file, hunk in hunks:
        path = file.new_path if file.is_new else file.old_path
        if path in failed_files or (file.new_path in failed_files):
            verdicts.append(False)
        else:
            verdicts.append(hunk is None or (path, str(hunk.old_start)) not in failed_hunks)
    return verdicts


def git_stack_verdicts(files: dict[str, str], patch_texts: list[str],
                       hunks: list[list[tuple[FilePatch, Hunk | None]]]) -> list[list[bool]]:
    """For each patch of a stack, in order, on the tree the earlier ones left (what applied of
    them): does `git apply --check --reject` apply each hunk?"""
    with tempfile.TemporaryDirectory() as tmp:
        repo = materialise(files, Path(tmp) / "tree")
        return [_reject_run(repo, Path(tmp) / f"{n}.patch", text, pairs, apply=True)
                for n, (text, pairs) in enumerate(zip(patch_texts, hunks))]


def git_applies_whole(files: dict[str, str], patch_text: str, *, reverse: bool = False) -> bool:
    """`git apply --check [-R] PATCH`: all or nothing."""
    with tempfile.TemporaryDirectory() as tmp:
        repo = materialise(files, Path(tmp) / "tree")
        (Path(tmp) / "p.patch").write_bytes(patch_text.encode("utf-8", "surrogateescape"))
        run = _git(repo, "apply", "--check", *(["-R"] if reverse else []), str(Path(tmp) / "p.patch"))
    return run.returncode == 0


def single_hunk_patch(file: FilePatch, hunk: Hunk) -> str:
    """One hunk of a file patch as a patch of its own (header counts as parsed)."""
    old = f"a/{file.old_path}" if file.old_path else "/dev/null"
    new = f"b/{file.new_path}" if file.new_path else "/dev/null"
    lines = [f"--- {old}\n", f"+++ {new}\n", hunk.header + "\n"]
    for kind, text in hunk.body:
        lines.append(kind + text if text.endswith("\n") else f"{kind}{text}\n\\ No newline at end of file\n")
    return "".join(lines)


def assert_agrees_with_git(files: dict[str, str], patch_text: str, verdicts: list[HunkVerdict]) -> None:
    """Every verdict agrees with git: applies or not (--reject run), already applied (-R run on the
    hunk alone), and the whole patch applies exactly when every hunk does."""
    pairs = [(v.file, v.hunk) for v in verdicts]
    git = git_hunk_verdicts(files, patch_text, pairs)
    mine = [v.applies for v in verdicts]
    assert mine == git, [(v.file.path, v.number, v.status, g) for v, g in zip(verdicts, git)]
    assert git_applies_whole(files, patch_text) == all(mine)
    for verdict in verdicts:
        if verdict.hunk is None or verdict.file.is_new or verdict.status not in ("already-applied", "context-changed"):
            continue
        in_reverse = git_applies_whole(files, single_hunk_patch(verdict.file, verdict.hunk), reverse=True)
        assert in_reverse == (verdict.status == "already-applied"), (verdict.file.path, verdict.number, verdict.status)


def applies_in_order(files: dict[str, str], patches: list[str], folder: Path, *flags: str) -> bool:
    """Real git, as a Dockerfile's loop applies a stack: each patch `git apply --check`ed, then
    applied, in order, on a fresh tree of `files` (committed)."""
    repo = materialise(files, folder)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "release")
    for index, text in enumerate(patches):
        path = folder.parent / f"{folder.name}-{index}.patch"
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        if _git(repo, "apply", "--check", *flags, str(path)).returncode:
            return False
        _git(repo, "apply", *flags, str(path))
        _git(repo, "add", "-A")
    return True


def edit_at_anchors(repo: Path, edits) -> None:
    """Each (release path, anchor pattern, edit) made to the one line of `repo/python/PATH` the
    anchor matches: edits at known places of a real release's files, for a test's own patch."""
    for path, anchor, edit in edits:
        file = repo / "python" / path
        lines = file.read_text().splitlines(keepends=True)
        (index,) = [i for i, line in enumerate(lines) if re.match(anchor, line.rstrip("\n"))]
        lines[index] = edit(lines[index])
        file.write_text("".join(lines))
