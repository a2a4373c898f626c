"""Releases read from tags of a local SGLang-shaped clone (`--sglang-repo`), never checked out."""

from __future__ import annotations

import shutil
from pathlib import Path

import git
import pytest

from sglang_contracts.cli import main
from tests.helpers import AUTHOR, PIN_ALONE, PROJECT, UPSTREAM, commit_release, sort_key




@pytest.fixture
def sglang_repo(tmp_path) -> Path:
    """v0.9.0 and v0.9.1 tags; the working tree is left at a third, uncommitted state."""
    path = tmp_path / "sglang"
    repo = git.Repo.init(path)
    commit_release(repo, UPSTREAM / "old", "0.9.0")
    commit_release(repo, UPSTREAM / "new", "0.9.1")
    package = path / "python" / "sglang"
    # A state that would change the report if the working tree were read instead of the tags.
    (package / "srt" / "models" / "utils.py").write_text("def apply_qk_norm(q, k, q_norm, k_norm): ...\n")
    (package / "srt" / "managers" / "tp_worker_overlap_thread.py").write_text("class TpModelWorkerClient: ...\n")
    (path / "NOTES.txt").write_text("uncommitted\n")
    return path


def _snapshot(path: Path) -> tuple:
    repo = git.Repo(path)
    files = {p.relative_to(path).as_posix(): p.read_bytes()
             for p in sorted(path.rglob("*")) if p.is_file() and ".git" not in p.relative_to(path).parts}
    return repo.head.commit.hexsha, repo.active_branch.name, repo.git.status("--porcelain"), files


@pytest.fixture
def check(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(PROJECT)
    monkeypatch.setenv("SGLANG_CONTRACTS_CACHE", str(tmp_path / "cache"))

    def run(*argv: str) -> tuple[int, str, str]:
        status = main(["check", *argv])
        out, err = capsys.readouterr()
        return status, out, err

    return run


def _directory_report(check) -> str:
    status, out, _ = check("--old", str(UPSTREAM / "old"), "--new", str(UPSTREAM / "new"))
    assert status == 1 and out
    return out


@pytest.mark.parametrize("old, new", [("v0.9.0", "v0.9.1"), ("0.9.0", "0.9.1")])
def test_tags_give_the_same_report_as_directories_and_leave_the_clone_alone(check, sglang_repo, old, new):
    expected = _directory_report(check)
    before = _snapshot(sglang_repo)
    status, out, err = check("--sglang-repo", str(sglang_repo), "--old", old, "--new", new)
    assert (status, out, err) == (1, expected, "")
    assert _snapshot(sglang_repo) == before
    assert "?? NOTES.txt" in before[2] and " M python/sglang/srt/models/utils.py" in before[2]


def test_old_defaults_to_the_pin_as_a_tag(check, sglang_repo):
    expected = _directory_report(check)
    status, out, err = check("--sglang-repo", str(sglang_repo), "--new", "v0.9.1")  # sglang==0.9.0 -> v0.9.0
    assert (status, out, err) == (1, expected, "")


def test_same_tag_on_both_sides_reports_only_what_the_pin_alone_says(check, sglang_repo):
    status, out, _ = check("--sglang-repo", str(sglang_repo), "--old", "v0.9.1", "--new", "v0.9.1")
    assert [" ".join(line.split(" ")[:2]) for line in out.splitlines()] == sorted(PIN_ALONE, key=sort_key)


def _assert_one_line_error(result: tuple[int, str, str], *fragments: str) -> None:
    status, out, err = result
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("sglang-contracts: error: ")
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err


def test_unknown_ref_is_a_one_line_error_naming_it(check, sglang_repo):
    _assert_one_line_error(check("--sglang-repo", str(sglang_repo), "--old", "v0.9.0", "--new", "v9.9.9"), "v9.9.9")
    _assert_one_line_error(check("--sglang-repo", str(sglang_repo), "--old", "0.8.7", "--new", "v0.9.1"),
                           "0.8.7", "v0.8.7")


def test_a_folder_that_is_not_a_git_repository_is_an_error(check, tmp_path):
    plain = tmp_path / "not-a-repo"
    plain.mkdir()
    _assert_one_line_error(check("--sglang-repo", str(plain), "--old", "v0.9.0", "--new", "v0.9.1"),
                           "not a git repository")
    _assert_one_line_error(check("--sglang-repo", str(tmp_path / "missing"), "--old", "v0.9.0", "--new", "v0.9.1"),
                           "no such directory")


def test_tags_replay_until_a_tag_names_another_commit(sglang_repo, tmp_path):
    from sglang_contracts.check.runner import CheckOptions, run_check

    project = tmp_path / "project"
    shutil.copytree(UPSTREAM.parent / "project", project)
    options = CheckOptions(old="v0.9.0", new="v0.9.1", sglang_repo=sglang_repo, cache_dir=tmp_path / "cache", replay=True)
    first = run_check([project], options)
    assert run_check([project], options).replayed_files_with_contracts is not None
    # v0.9.1 moved to a commit that has apply_qk_norm back in models/utils.py (the working tree's state).
    repo = git.Repo(sglang_repo)
    repo.git.add("--all")
    repo.index.commit("apply_qk_norm is back", author=AUTHOR, committer=AUTHOR)
    repo.create_tag("v0.9.1", force=True)
    moved = run_check([project], options)
    assert moved.replayed_files_with_contracts is None
    assert len(moved.diagnostics) < len(first.diagnostics)


def test_the_checks_forked_copy_reads_the_clone_through_its_own_git_processes(check, sglang_repo, monkeypatch,
                                                                               tmp_path):
    """The checks' forked copy (contracts/base.py run_checks_in_two) and the first process both
    read blobs while they run: through `git cat-file` pipes they shared, each could read the
    other's answer (a run hung so). Each half reads every file of both releases first here."""
    import signal

    from sglang_contracts.contracts import base
    from sglang_contracts.infra import parallel

    expected = check("--sglang-repo", str(sglang_repo), "--old", "v0.9.0", "--new", "v0.9.1")
    import sglang_contracts.contracts  # noqa: F401  (registers every check)

    def reading_everything(real):
        def check_after_reading(ctx):
            for _ in range(20):
                for model in (ctx.old, ctx.new):
                    for relpath in model.tree.iter_files("sglang"):
                        model.tree.read_bytes(relpath)
            return real(ctx)
        check_after_reading.__module__ = real.__module__
        return check_after_reading

    for code in ("SGC101", "SGC201"):  # one of each half
        monkeypatch.setitem(base.CHECKS, code, reading_everything(base.CHECKS[code]))
    in_copy = []
    monkeypatch.setattr(parallel, "start_forked", lambda function, real=parallel.start_forked: (
        in_copy.append(True), real(function))[1])
    monkeypatch.setattr(base, "start_forked", parallel.start_forked)
    monkeypatch.setattr(base, "COPY_WORTH", 0)  # a copy for the small fixture too
    monkeypatch.setenv("SGLANG_CONTRACTS_CACHE", str(tmp_path / "second-cache"))  # computed, not replayed
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("the halves stalled")))
    signal.alarm(120)
    try:
        assert check("--sglang-repo", str(sglang_repo), "--old", "v0.9.0", "--new", "v0.9.1") == expected
    finally:
        signal.alarm(0)
    assert in_copy == [True]


def test_a_partial_clone_never_fetches_what_it_lacks_from_its_remote(check, sglang_repo, tmp_path):
    """A partial clone fetches a missing object from its remote when read, by the remote's
    transport: a clone the project controls (named by its own `sglang-repo`) ran an `ext::`
    command, its own `protocol.ext.allow = always` outranking `-c protocol.allow=never`
    (campaign 15, R02). Nothing is fetched: the release is one line saying what cannot be read."""
    marks = tmp_path / "marks"
    marks.mkdir()
    git.Repo(sglang_repo).git.config("uploadpack.allowfilter", "true")
    partial = tmp_path / "partial"
    git.Repo.clone_from(f"file://{sglang_repo}", partial, multi_options=["--filter=blob:none", "--no-checkout"])
    clone = git.Repo(partial)
    clone.git.config("remote.origin.url", f"ext::sh -c touch% {marks}/ran% >&2")
    clone.git.config("protocol.ext.allow", "always")
    status, out, err = check("--sglang-repo", str(partial), "--old", "v0.9.0", "--new", "v0.9.1")
    assert (status, out) == (2, "") and len(err.splitlines()) == 1 and "cannot be read" in err, err
    assert list(marks.iterdir()) == []


@pytest.mark.parametrize("where", ["a loose object", "a tag", "the config"])
def test_a_clone_holding_a_fifo_is_refused_in_one_line_not_waited_on(check, sglang_repo, where):
    """git, and GitPython's long-lived `cat-file`, open what they read: a FIFO in the clone's
    git folder (a loose object the check reads, a ref, its config) made the check wait for ever
    (campaign 15, R12)."""
    import os

    git_folder = sglang_repo / ".git"
    target = {"a loose object": next(path for path in sorted((git_folder / "objects").glob("??/*"))),
              "a tag": git_folder / "refs" / "tags" / "v0.9.9", "the config": git_folder / "config"}[where]
    target.unlink(missing_ok=True)
    os.mkfifo(target)
    status, out, err = check("--sglang-repo", str(sglang_repo), "--old", "v0.9.0", "--new", "v0.9.1")
    assert (status, out) == (2, "") and len(err.splitlines()) == 1 and "is not a regular file" in err, err


def test_the_command_line_reads_a_clone(sglang_repo, tmp_path):
    """The entry point puts the environment every git of this tool gets in its own (GIT_ALLOW_PROTOCOL,
    GIT_NO_LAZY_FETCH), and the clone's git was then given them twice: every `--sglang-repo` run
    of the command line was an internal error (campaign 15, R17), which in-process runs never met."""
    import subprocess
    import sys

    from tests.helpers import checkout_env

    done = subprocess.run([sys.executable, "-m", "sglang_contracts", "check", "--sglang-repo", str(sglang_repo),
                           "--old", "v0.9.0", "--new", "v0.9.1", "--cache-dir", str(tmp_path / "cache")],
                          cwd=PROJECT, env=checkout_env(SGLANG_CONTRACTS_PACKAGE_INDEX="none"), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 1 and done.stdout, done.stderr


def test_a_folder_the_alternates_name_in_many_spellings_is_walked_once(sglang_repo, tmp_path, monkeypatch):
    """A 2 KB alternates file naming one large folder thirty ways (`DIR/a/../b/..`) walked it thirty
    times: 39 s (campaign 16, R07). Each folder is walked once, and a walk has a bound."""
    import os

    from sglang_contracts.sources import git as git_source

    store = tmp_path / "store"
    for sub in "abcdef":
        (store / sub / "deeper").mkdir(parents=True)
    spellings = [f"{store}/{a}/../{b}/.." for a in "abcdef" for b in "abcdef"]
    (sglang_repo / ".git" / "objects" / "info").mkdir(exist_ok=True)
    (sglang_repo / ".git" / "objects" / "info" / "alternates").write_text("\n".join(spellings) + "\n")
    listed = []
    scandir = os.scandir
    monkeypatch.setattr(git_source.os, "scandir", lambda path: listed.append(path) or scandir(path))
    git_source.unreadable_git_folder.cache_clear()
    assert git_source.unreadable_git_folder(sglang_repo) is None
    assert sum(path.startswith(str(store)) for path in listed) == 1 + 6 + 6  # the store, its folders, theirs
    monkeypatch.setattr(git_source, "MAX_GIT_FOLDER_ENTRIES", 10)
    git_source.unreadable_git_folder.cache_clear()
    assert "more than 10 files" in git_source.unreadable_git_folder(sglang_repo)


def test_a_clone_git_does_not_answer_about_leaves_the_projects_git_asked(sglang_repo, tmp_path, monkeypatch):
    """The clone's commit is asked of git within GIT_PATIENCE, not again for a while when git did
    not answer; the project's own git (which says which files it tracks) is still asked, and a
    bare mirror of the clone is read as the user named it."""
    from sglang_contracts.infra import gitsafety
    from sglang_contracts.sources.git import git_commit_identity

    run = gitsafety.subprocess.run
    asked = []

    def the_clone_waits(command, **options):
        asked.append(command[command.index("-C") + 1])
        if command[command.index("-C") + 1] == str(sglang_repo):
            raise gitsafety.subprocess.TimeoutExpired(command, options["timeout"])
        return run(command, **options)

    monkeypatch.setattr(gitsafety.subprocess, "run", the_clone_waits)
    assert git_commit_identity(sglang_repo, "0.9.0") is None
    assert git_commit_identity(sglang_repo, "0.9.1") is None
    assert asked == [str(sglang_repo)]  # once: then the memo answers
    assert gitsafety.ls_files(str(tmp_path)) is not None
    monkeypatch.setattr(gitsafety.subprocess, "run", run)
    mirror = tmp_path / "mirror.git"
    git.Repo.clone_from(sglang_repo, mirror, bare=True)
    commit = git.Repo(sglang_repo).commit("v0.9.0").hexsha
    assert git_commit_identity(mirror, "0.9.0") == f"git:{commit}"


def test_threads_reading_one_clone_at_once_each_get_their_own_files(sglang_repo):
    """A first run reads a clone from two threads at once (the early extraction and the closure
    walk): GitPython's `git cat-file` processes answer one question at a time over shared pipes,
    and two threads asking together read each other's answers, one of them then waiting for
    ever (seen: a CI run of `check --sglang-repo` that never ended)."""
    import threading

    from sglang_contracts.sources.git import git_release

    tree = git_release(sglang_repo, "v0.9.1").tree
    files = list(tree.iter_files("sglang"))
    expected = {relpath: tree.read_bytes(relpath) for relpath in files}
    assert len(files) > 5 and all(expected.values())
    wrong: list[str] = []

    def read_all(order: list[str]) -> None:
        try:
            for _ in range(40):  # each read asks git for the blob's size, then its bytes
                for relpath in order:
                    if tree.read_bytes(relpath) != expected[relpath]:
                        wrong.append(relpath)
        except Exception as error:  # noqa: BLE001 - a mixed-up answer may raise anywhere in GitPython
            wrong.append(f"{type(error).__name__}: {error}")

    readers = [threading.Thread(target=read_all, args=(order,), daemon=True) for order in (files, files[::-1])]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join(timeout=60)
    assert not any(reader.is_alive() for reader in readers), "a reader waits for ever"
    assert not wrong
