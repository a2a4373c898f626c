"""The daemon's folder, log and socket in a cache or temporary folder other users can write
(issue 38, D18-D20): nothing is created or written through another user's folder or link, and
nothing another process answers on a socket is believed or printed raw."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import NEW, OLD, PROJECT
from sglang_contracts.cli import build_parser, run_command, main
from sglang_contracts.resident import client
from sglang_contracts.resident.daemon import CommandLine, Daemon

RELEASES = ["--old", str(OLD), "--new", str(NEW)]


@pytest.fixture
def socket_file(tmp_path, monkeypatch) -> Path:
    """The daemon socket `daemon start` would make for the fixture project, its folder not yet made
    (a short cache path: the socket is in the cache's `daemons/`)."""
    cache = Path(tempfile.mkdtemp(prefix="c", dir="/tmp"))
    monkeypatch.setenv("SGLANG_CONTRACTS_CACHE", str(cache))
    monkeypatch.chdir(PROJECT)
    args = build_parser().parse_args(["daemon", "status", *RELEASES])
    root, _, key = client.daemon_key(args, PROJECT)
    path = client.socket_path(args, key, root)
    assert path.parent == cache / "daemons"
    yield path
    for leftover in sorted(cache.rglob("*"), reverse=True):
        leftover.unlink() if not leftover.is_dir() or leftover.is_symlink() else leftover.rmdir()
    cache.rmdir()


def victim_folder(tmp_path: Path) -> Path:
    """A private folder of the user's own, with a file in it, that a link may point to."""
    folder = tmp_path / "victim"
    folder.mkdir(mode=0o700)
    (folder / "notes.txt").write_text("mine\n")
    return folder


def test_a_link_named_as_the_daemons_folder_is_not_followed(socket_file: Path, tmp_path: Path, capsys) -> None:
    victim = victim_folder(tmp_path)
    socket_file.parent.parent.mkdir(parents=True, exist_ok=True)
    socket_file.parent.symlink_to(victim)
    assert main(["daemon", "start", *RELEASES]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a symbolic link" in err
    assert sorted(p.name for p in victim.iterdir()) == ["notes.txt"]  # no socket, log or tag there


def test_another_users_daemons_folder_is_refused(socket_file: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    """Another user made `daemons/` (world-writable) and linked the log name to our file."""
    victim = victim_folder(tmp_path)
    socket_file.parent.mkdir(parents=True)
    socket_file.parent.chmod(0o777)
    socket_file.with_suffix(".log").symlink_to(victim / "notes.txt")
    for action in ("start", "status", "stop"):
        assert main(["daemon", action, *RELEASES]) == 2
        assert "may be entered by other users" in capsys.readouterr().err
    socket_file.parent.chmod(0o700)
    monkeypatch.setattr(client.os, "getuid", lambda: os.geteuid() + 1)  # as seen by someone else
    assert main(["daemon", "start", *RELEASES]) == 2
    assert "belongs to another user" in capsys.readouterr().err
    assert (victim / "notes.txt").read_text() == "mine\n"


def test_the_log_is_never_opened_through_a_link(socket_file: Path, tmp_path: Path, capsys) -> None:
    victim = victim_folder(tmp_path)
    assert client.make_private_folder(socket_file.parent) is None
    socket_file.with_suffix(".log").symlink_to(victim / "notes.txt")
    assert main(["daemon", "start", *RELEASES]) == 2
    assert "cannot open the daemon's log" in capsys.readouterr().err
    assert (victim / "notes.txt").read_text() == "mine\n"


def test_the_temporary_fallback_folder_is_checked_alike(tmp_path: Path, monkeypatch, capsys) -> None:
    """A cache path too long for a socket puts it in $TMPDIR/sglang-contracts-<uid>, which another
    user may have made first."""
    monkeypatch.setenv("SGLANG_CONTRACTS_CACHE", str(tmp_path / ("c" * 120)))
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    monkeypatch.chdir(PROJECT)
    victim = victim_folder(tmp_path)
    (shared / f"sglang-contracts-{os.getuid()}").symlink_to(victim)
    assert main(["daemon", "start", *RELEASES]) == 2
    assert "is a symbolic link" in capsys.readouterr().err
    assert sorted(p.name for p in victim.iterdir()) == ["notes.txt"]


def test_a_cache_folder_reached_through_a_link_the_project_holds_gets_no_socket(tmp_path: Path, monkeypatch) -> None:
    """A pull request that commits `.cache` as a link out of the project, checked with a cache
    named `.cache/sglang-contracts`: the daemon's socket and log go to the private temporary
    folder, not where the link points (as the check's records do: sixth campaign, M03)."""
    import shutil

    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    victim = victim_folder(tmp_path)
    (project / ".cache").symlink_to(victim)
    private = tmp_path / "tmp"
    private.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    monkeypatch.setenv("SGLANG_CONTRACTS_CACHE", ".cache/sglang-contracts")
    monkeypatch.chdir(project)
    args = build_parser().parse_args(["daemon", "start", *RELEASES])
    root, _, key = client.daemon_key(args, project)
    path = client.socket_path(args, key, root)
    assert path.parent == private / f"sglang-contracts-{os.getuid()}"
    # A cache outside any project keeps its socket in the cache (a short path: a socket's is bounded).
    outside = Path(tempfile.mkdtemp(prefix="c", dir="/tmp"))
    try:
        monkeypatch.setenv("SGLANG_CONTRACTS_CACHE", str(outside))
        assert client.socket_path(args, key, root).parent == outside / "daemons"
    finally:
        outside.rmdir()
    assert sorted(p.name for p in victim.iterdir()) == ["notes.txt"]


def serve_once(path: Path, answer: bytes) -> threading.Thread:
    """A process that is not this tool's daemon, answering every request on the socket with `answer`."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(4)
    listener.settimeout(5.0)

    def serve() -> None:
        with listener:
            for _ in range(4):
                try:
                    connection, _ = listener.accept()
                except OSError:
                    return
                with connection, contextlib.suppress(OSError):  # a client that stops reading
                    connection.recv(1 << 16)
                    connection.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("answer", [b"{}", b"[1, 2]", b'{"pid": "\\u001b[2J\\u001b]0;owned\\u0007", "runs": 1, "idle": 0, '
                                    b'"idle_timeout": 1}', b'{"pid": 1, "runs": "x", "idle": 0, "idle_timeout": 1}',
                                    b"[" * 100000])
def test_an_answer_no_daemon_of_ours_gives_is_not_believed(answer: bytes, socket_file: Path, capsys) -> None:
    assert client.make_private_folder(socket_file.parent) is None
    serve_once(socket_file, answer)
    assert main(["daemon", "status", *RELEASES]) == 1
    out, err = capsys.readouterr()
    assert "no daemon for" in out and "\x1b" not in out + err and "internal error" not in out + err


def test_a_socket_of_another_user_is_not_asked(socket_file: Path, monkeypatch) -> None:
    assert client.make_private_folder(socket_file.parent) is None
    serve_once(socket_file, json.dumps({"pid": 1, "runs": 0, "idle": 0, "idle_timeout": 1}).encode())
    assert client.ask(socket_file, {"status": True}, timeout=5.0) is not None
    monkeypatch.setattr(client.os, "getuid", lambda: os.geteuid() + 1)
    assert client.ask(socket_file, {"status": True}, timeout=5.0) is None


@pytest.mark.parametrize("request_bytes", [b"[]", b'"check"', b'{"check": 5}', b'{"check": ["check"], "cwd": 5}',
                                           b'{"check": [1], "cwd": "/", "identity": "x"}', b"{" * 50000, b"\xff\xfe"])
def test_a_malformed_request_is_refused_without_a_traceback(request_bytes: bytes, socket_file: Path, capfd) -> None:
    argv = ["daemon", "serve", *RELEASES]
    args = build_parser().parse_args(argv)
    root, identity, key = client.daemon_key(args, PROJECT)
    daemon = Daemon(argv, root, identity, socket_file, 60.0, CommandLine(build_parser().parse_args, run_command))
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    theirs.sendall(request_bytes)
    theirs.shutdown(socket.SHUT_WR)
    daemon._answer(ours)
    answer = theirs.recv(1 << 16)
    theirs.close()
    assert answer == b"" or "refused" in json.loads(answer)
    assert "Traceback" not in capfd.readouterr().err


def test_a_daemon_refused_a_thread_for_an_answer_answers_itself(socket_file: Path, monkeypatch) -> None:
    """Each request is answered on a thread of its own: refused one (`ulimit -v`), "can't start
    new thread" ended the daemon (campaign 15, R06). It answers the request itself and serves on."""
    argv = ["daemon", "serve", *RELEASES]
    args = build_parser().parse_args(argv)
    root, identity, _ = client.daemon_key(args, PROJECT)
    daemon = Daemon(argv, root, identity, socket_file, 60.0, CommandLine(build_parser().parse_args, run_command))
    monkeypatch.setattr(daemon, "_warm_up", lambda: None)
    start = threading.Thread.start

    def refused_for_answers(thread):
        if getattr(thread, "_target", None) == daemon._answer:
            raise RuntimeError("can't start new thread")
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", refused_for_answers)
    serving = threading.Thread(target=daemon.serve, daemon=True)
    serving.start()
    try:
        assert _until_answered(socket_file, {"status": True})["pid"] == os.getpid()
        assert client.ask(socket_file, {"status": True}, timeout=5.0)["pid"] == os.getpid()
    finally:
        client.ask(socket_file, {"stop": True}, timeout=5.0)
        serving.join(10)
    assert not serving.is_alive()


def _until_answered(socket_file: Path, request: dict) -> dict:
    """The daemon's answer to `request`, once its socket is there (within 20 s)."""
    deadline = time.monotonic() + 20
    while (answer := client.ask(socket_file, request, timeout=5.0)) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert answer is not None, "no daemon answered"
    return answer


def test_a_shared_caches_folders_another_user_linked_are_neither_read_nor_written(tmp_path: Path, monkeypatch, capsys) -> None:
    """Another user links `runs/`, `project/`... of a shared cache to a folder of their choosing:
    our records would land there (and theirs be read as ours). Our own link (a cache folder kept
    on another disk) is used."""
    from sglang_contracts.infra import cache as cache_module

    shared, elsewhere = tmp_path / "shared", tmp_path / "elsewhere"
    shared.mkdir()
    elsewhere.mkdir()
    for kind in ("runs", "project", "upstream", "incremental"):
        (shared / kind).symlink_to(elsewhere, target_is_directory=True)
    project = tmp_path / "p"
    project.mkdir()
    (project / "m.py").write_text("from sglang.srt.layers.quantization import Fp8Config\n")
    argv = ["check", str(project), *RELEASES, "--cache-dir", str(shared)]
    real_getuid = os.getuid
    monkeypatch.setattr(cache_module.os, "getuid", lambda: real_getuid() + 1)  # the links are someone else's
    main(argv)
    assert "a link another user made" in capsys.readouterr().err
    assert not [p for p in elsewhere.rglob("*") if p.name != "CACHEDIR.TAG"]
    monkeypatch.setattr(cache_module.os, "getuid", real_getuid)  # now they are ours
    monkeypatch.setattr(cache_module, "_WARNED", set())  # told again, as a new process would be
    main(argv)
    assert "link" not in capsys.readouterr().err
    assert any(p.suffix == ".record" for p in elsewhere.rglob("*"))


def test_a_daemons_folder_that_cannot_be_looked_into_leaves_the_check_to_its_own_process(
        socket_file: Path, monkeypatch, capsys) -> None:
    """In a cache two users share, one user's `daemons/` (mode 700, as `daemon start` makes it)
    made every `check` of the other an internal error (PermissionError looking for the socket);
    so did a temporary fallback folder named for this user that another made first (second
    campaign). Such a folder means no daemon: the check runs in its own process."""
    socket_file.parent.mkdir(parents=True)
    if os.geteuid() == 0:  # root looks into any folder: the system's refusal, as another user meets it
        real_stat = os.stat

        def refusing(path, *args, **kwargs):
            if os.fspath(path).startswith(os.path.join(socket_file.parent, "")):
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return real_stat(path, *args, **kwargs)

        monkeypatch.setattr(os, "stat", refusing)
    else:  # a folder of one's own that cannot be entered, as another user's
        socket_file.parent.chmod(0o000)
    try:
        status = main(["check", *RELEASES, "-q"])
    finally:
        socket_file.parent.chmod(0o700)
    captured = capsys.readouterr()
    assert (status, "error" in captured.err) == (1, False) and captured.out


def test_a_daemon_that_never_answers_leaves_the_check_to_its_own_process_within_seconds(
        socket_file: Path, capsys) -> None:
    """A daemon stopped or wedged (SIGSTOP) accepts connections and never answers: every check
    handed to it waited forever (second campaign). One that does not acknowledge the request
    within seconds is given up, and the check runs in its own process."""
    assert client.make_private_folder(socket_file.parent) is None
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(socket_file))
    listener.listen(4)  # accepted by the system, never by a process: as a stopped daemon's
    started = time.monotonic()
    try:
        status = main(["check", *RELEASES, "-q"])
    finally:
        listener.close()
    assert time.monotonic() - started < client.HEARD_WITHIN + 30
    out = capsys.readouterr().out
    assert status == 1 and out


@pytest.mark.parametrize("line", [["check", "--help"], ["--version"], ["check", "--format", "evil"],
                                  ["lsp"], ["daemon", "start"], ["rules"]])
def test_a_command_line_argparse_answers_or_refuses_leaves_nothing_in_the_log(line: list[str], socket_file: Path,
                                                                             capfd) -> None:
    """Campaign 4's D04: the usage or version text of a refused line was written where the
    daemon's standard error goes (its log), 300 requests making 446 KB. Campaign 5's N04: a
    line of another command (`lsp`, `daemon start`) answered "internal error"; a daemon runs
    checks only."""
    argv = ["daemon", "serve", *RELEASES]
    args = build_parser().parse_args(argv)
    root, identity, _ = client.daemon_key(args, PROJECT)
    daemon = Daemon(argv, root, identity, socket_file, 60.0, CommandLine(build_parser().parse_args, run_command))
    assert daemon._check({"check": line, "cwd": "/"}) == {"refused": "cannot run this command line here"}
    out, err = capfd.readouterr()
    assert out == "" and err == ""


@pytest.mark.parametrize("action", ["status", "stop"])
def test_status_and_stop_of_a_missing_path_say_so_as_start_does(action: str, socket_file: Path, tmp_path,
                                                                   capsys) -> None:
    """Campaign 5's N05: `daemon status /nonexistent` answered about the folder above ("no
    daemon for /"); it is refused as `daemon start` and `check` refuse it."""
    missing = tmp_path / "nonexistent"
    assert main(["daemon", action, str(missing), *RELEASES]) == 2
    out, err = capsys.readouterr()
    assert "no such file or directory" in err and str(missing) in err and "no daemon for" not in out
