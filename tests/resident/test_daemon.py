"""`sglang-contracts daemon`: `check` hands its run to the project's daemon and gets the same
output and exit status as a run in its own process; a dead, busy or stale daemon, or none, and
the check runs in its own process, with no difference."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import NEW, OLD, PROJECT, checkout_env
from sglang_contracts.cli import build_parser, run_command
from sglang_contracts.resident import client
from sglang_contracts.resident.daemon import CommandLine, Daemon

RELEASES = ["--old", str(OLD), "--new", str(NEW)]


def run(project: Path, *argv: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sglang_contracts", *argv], cwd=project, capture_output=True,
                          text=True, env=checkout_env(**env), timeout=300)


def in_own_process(project: Path, *argv: str) -> subprocess.CompletedProcess:
    return run(project, *argv, SGLANG_CONTRACTS_NO_DAEMON="1")


def same(one: subprocess.CompletedProcess, other: subprocess.CompletedProcess) -> bool:
    return (one.returncode, one.stdout, one.stderr) == (other.returncode, other.stdout, other.stderr)


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root)
    monkeypatch.setenv("SGLANG_CONTRACTS_CACHE", str(tmp_path / "cache"))
    return root


@pytest.fixture
def daemon(project):
    """A daemon for the project, started as a user starts it; stopped (or killed) after."""
    started = run(project, "daemon", "start", *RELEASES, "--idle-timeout", "120")
    assert started.returncode == 0, started.stderr
    status = run(project, "daemon", "status", *RELEASES)
    assert status.returncode == 0
    pid = int(status.stdout.split("daemon ")[1].split()[0])
    yield pid
    run(project, "daemon", "stop", *RELEASES)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    path = _socket_of(project)  # a killed daemon leaves it (in a shared temporary folder)
    for leftover in (path, path.with_suffix(".log")):
        leftover.unlink(missing_ok=True)


def _socket_of(project: Path) -> Path:
    args = build_parser().parse_args(["daemon", "status", *RELEASES])
    root, _, key = client.daemon_key(args, project)
    return client.socket_path(args, key, root)


def checks_answered(project: Path) -> int:
    status = run(project, "daemon", "status", *RELEASES)
    return int(status.stdout.split(": ")[2].split()[0])


def test_check_is_answered_by_the_daemon_as_by_its_own_process(project, daemon) -> None:
    for argv in (["check", *RELEASES], ["check", *RELEASES, "--format", "json"],
                 ["check", *RELEASES, "demo_omni/layers.py", "--statistics"]):
        by_daemon = run(project, *argv)
        assert same(by_daemon, in_own_process(project, *argv)), argv
    assert by_daemon.returncode == 1 and "SGC102" in by_daemon.stdout
    assert checks_answered(project) == 3
    # An edit: the daemon's next answer is the edited tree's, never the one it has in memory.
    layers = project / "demo_omni" / "layers.py"
    layers.write_text(layers.read_text().replace("from sglang.srt.layers.quantization import",
                                                 "# quantization helpers\nfrom sglang.srt.layers.quantization import", 1))
    edited = run(project, "check", *RELEASES)
    assert same(edited, in_own_process(project, "check", *RELEASES)) and edited.stdout != by_daemon.stdout
    assert checks_answered(project) == 4
    # Other options than the daemon's: not handed over (a daemon serves one set of options).
    other = run(project, "check", "--old", str(OLD), "--new", str(OLD))
    assert same(other, in_own_process(project, "check", "--old", str(OLD), "--new", str(OLD)))
    assert checks_answered(project) == 4


def test_a_dead_daemon_is_no_difference(project, daemon) -> None:
    os.kill(daemon, signal.SIGKILL)
    time.sleep(0.2)
    fallback = run(project, "check", *RELEASES)
    assert same(fallback, in_own_process(project, "check", *RELEASES)) and fallback.returncode == 1
    assert run(project, "daemon", "status", *RELEASES).returncode == 1


def test_a_usage_error_is_the_same_through_the_daemon(project, daemon) -> None:
    argv = ["check", *RELEASES, "no-such-file.py"]
    by_daemon = run(project, *argv)
    assert same(by_daemon, in_own_process(project, *argv)) and by_daemon.returncode == 2
    assert checks_answered(project) == 1


def test_a_daemon_started_on_unchanged_inputs_computes_its_first_check(project, monkeypatch) -> None:
    """Its warm-up check replays the last run's findings (nothing changed since); it is then
    computed, so that the first edit finds the records read and the rules imported."""
    assert in_own_process(project, "check", *RELEASES).returncode == 1  # the run a replay replays
    monkeypatch.chdir(project)
    argv = ["daemon", "serve", *RELEASES]
    args = build_parser().parse_args(argv)
    root, identity, key = client.daemon_key(args, project)
    daemon = Daemon(argv, root, identity, client.socket_path(args, key, root), 60.0, CommandLine(build_parser().parse_args, run_command))
    replayed = []
    check = daemon.engine.check

    def recording(paths, options):
        result = check(paths, options)
        replayed.append(result.replayed_files_with_contracts is not None)
        return result

    monkeypatch.setattr(daemon.engine, "check", recording)
    daemon._warm_up()
    assert replayed == [True, False]
    assert daemon.engine.runs == 1  # computed runs


def _daemon_in_process(project: Path) -> Daemon:
    argv = ["daemon", "serve", *RELEASES]
    args = build_parser().parse_args(argv)
    root, identity, key = client.daemon_key(args, project)
    daemon = object.__new__(Daemon)  # no engine: these requests never reach one
    daemon.argv, daemon.root, daemon.identity, daemon.runs = argv, root, identity, 0
    daemon.idle_timeout, daemon.last = 60.0, time.monotonic()
    import threading

    daemon.busy, daemon.stopping = threading.Lock(), threading.Event()
    from sglang_contracts.resident.daemon import _code_stamps

    daemon.code = _code_stamps()
    return daemon


def test_a_busy_stale_or_foreign_daemon_refuses_and_the_client_runs_the_check_itself(project) -> None:
    daemon = _daemon_in_process(project)
    request = {"check": ["check", *RELEASES], "identity": daemon.identity, "cwd": str(project)}
    with daemon.busy:  # another check is running
        assert daemon._handle(request) == {"refused": client.BUSY}
    assert daemon._handle({**request, "identity": "another"})["refused"]
    daemon.code = {}  # this tool's files changed since the daemon started
    assert daemon._handle(request) == {"refused": client.STALE}
    assert daemon.stopping.is_set()


def test_the_answer_is_out_before_the_daemon_collects_the_runs_garbage(project) -> None:
    """The client reads its answer to the end of the connection: the daemon closes it before
    collecting (a tenth of a re-check, which the client would otherwise wait for)."""
    import json
    import socket
    import threading

    daemon = _daemon_in_process(project)
    collecting, released = threading.Event(), threading.Event()

    class Engine:
        def collect(self) -> None:
            collecting.set()
            released.wait(30)

    daemon.engine = Engine()
    ours, theirs = socket.socketpair()
    answering = threading.Thread(target=daemon._answer, args=(theirs,))
    answering.start()
    try:
        ours.sendall(json.dumps({"status": True}).encode())
        ours.shutdown(socket.SHUT_WR)
        ours.settimeout(5.0)  # a connection held open through the collection times out here
        data = b""
        while chunk := ours.recv(1 << 16):
            data += chunk
        assert json.loads(data)["pid"] == os.getpid()
        assert collecting.wait(10) and not released.is_set()
    finally:
        released.set()
        answering.join(30)
        ours.close()


def test_the_client_imports_nothing_of_the_checker(project) -> None:
    """A `check` the daemon answers costs a Python start and a round trip: no runner, no rule."""
    code = ("import sys; from sglang_contracts.cli import build_parser; from sglang_contracts.resident import client; "
            "client.handed_over(['check'], build_parser().parse_args(['check'])); "
            "print(sorted(m for m in sys.modules if m.startswith('sglang_contracts')))")
    loaded = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True,
                            env=checkout_env(), check=True).stdout
    assert "sglang_contracts.check.runner" not in loaded and "sglang_contracts.contracts" not in loaded
    assert "sglang_contracts.resident.engine" not in loaded


def test_an_idle_daemon_exits_and_takes_its_socket(project) -> None:
    started = run(project, "daemon", "start", *RELEASES, "--idle-timeout", "1")
    assert started.returncode == 0, started.stderr
    path = _socket_of(project)
    assert path.exists()
    deadline = time.monotonic() + 30
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not path.exists()
    assert run(project, "daemon", "status", *RELEASES).returncode == 1
    path.with_suffix(".log").unlink(missing_ok=True)


def test_check_with_daemon_leaves_one_that_answers_the_next_check(project) -> None:
    """`check --daemon` (a pre-commit hook's args): the first run is in its own process and
    leaves a daemon with its run options, started detached; the next check is answered by it,
    with the same output; a check while one runs or starts leaves no second one."""
    path = _socket_of(project)
    first = run(project, "check", *RELEASES, "--daemon")
    assert same(first, in_own_process(project, "check", *RELEASES)) and first.returncode == 1
    try:
        deadline = time.monotonic() + 120
        while run(project, "daemon", "status", *RELEASES).returncode != 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not path.with_suffix(".starting").exists()
        pid = int(run(project, "daemon", "status", *RELEASES).stdout.split("daemon ")[1].split()[0])
        second = run(project, "check", *RELEASES, "--daemon", "demo_omni/layers.py")
        assert same(second, in_own_process(project, "check", *RELEASES, "demo_omni/layers.py"))
        assert checks_answered(project) == 1
        assert int(run(project, "daemon", "status", *RELEASES).stdout.split("daemon ")[1].split()[0]) == pid
    finally:
        run(project, "daemon", "stop", *RELEASES)
        path.with_suffix(".log").unlink(missing_ok=True)


def test_the_daemon_left_by_check_has_the_check_s_key(project, tmp_path) -> None:
    """Whatever run options the check was given (releases, rules, a configuration file, the
    cache), the daemon it leaves is the one a later check with those options is handed to."""
    from sglang_contracts.resident.daemon import daemon_argv

    (project / "alt.toml").write_text("[tool.sglang-contracts]\n")
    for options in ([*RELEASES], [*RELEASES, "--select", "SGC1,SGC3", "--ignore", "SGC102"],
                    [*RELEASES, "--config", "alt.toml", "--cache-dir", str(tmp_path / "c"), "--no-cache"]):
        checked = build_parser().parse_args(["check", *options, "demo_omni/layers.py", "--daemon"])
        root, _, _ = client.daemon_key(checked, project)
        served = build_parser().parse_args(daemon_argv(checked, root, project))
        assert served.action == "serve"
        assert client.daemon_key(served, Path("/")) == client.daemon_key(checked, project), options


def test_two_checks_that_end_together_start_one_daemon(project) -> None:
    from sglang_contracts.resident.daemon import _claim_start

    path = _socket_of(project)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        assert _claim_start(path) and not _claim_start(path)
        old = time.time() - 3600
        os.utime(path.with_suffix(".starting"), (old, old))  # a start that never came up
        assert _claim_start(path)
    finally:
        path.with_suffix(".starting").unlink(missing_ok=True)


def _daemons_serving(project: Path) -> list[int]:
    """The pids of the `daemon serve` processes started from the project (their working folder)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"serve" in (entry / "cmdline").read_bytes().split(b"\0") \
                    and os.readlink(entry / "cwd") == str(project) and (entry / "stat").read_text().split()[2] != "Z":
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def test_concurrent_starts_leave_one_daemon_and_each_names_it(project) -> None:
    """Four `daemon start`s at once: one daemon serves, each start prints its pid, and `stop`
    leaves none (a start used to spawn a daemon each, all but the last unreachable)."""
    starts = [subprocess.Popen([sys.executable, "-m", "sglang_contracts", "daemon", "start", *RELEASES,
                                "--idle-timeout", "120"], cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=checkout_env()) for _ in range(4)]
    try:
        said = [start.communicate(timeout=300) for start in starts]
        assert all(start.returncode == 0 for start in starts), said
        serving = _daemons_serving(project)
        assert len(serving) == 1, serving
        assert all(out.split("daemon ")[1].split()[0] == str(serving[0]) for out, _ in said), said
        assert run(project, "daemon", "stop", *RELEASES).returncode == 0
        deadline = time.monotonic() + 30
        while _daemons_serving(project) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _daemons_serving(project) == []
    finally:
        for pid in _daemons_serving(project):
            os.kill(pid, signal.SIGKILL)
        _socket_of(project).with_suffix(".log").unlink(missing_ok=True)


def test_serve_leaves_a_socket_a_live_daemon_answers_on(project, daemon) -> None:
    """A `daemon serve` for a socket a live daemon answers on exits quietly; the live one serves on."""
    served = run(project, "daemon", "serve", *RELEASES, "--idle-timeout", "1")
    assert served.returncode == 0 and served.stderr == ""
    status = run(project, "daemon", "status", *RELEASES)
    assert status.returncode == 0 and f"daemon {daemon} " in status.stdout


def test_stop_stops_the_daemon_another_installation_left(project, tmp_path) -> None:
    """pre-commit runs the hook from its own installation of the tool: the daemon it leaves is
    not this installation's (the socket's name holds the installation), yet `daemon stop` with
    the same options stops it, and one serving other options is left."""
    other_install = tmp_path / "pre-commit-env"
    shutil.copytree(Path(client.__file__).parents[1], other_install / "sglang_contracts",
                    ignore=shutil.ignore_patterns("__pycache__"))
    elsewhere = {"PYTHONPATH": str(other_install)}
    started = subprocess.run([sys.executable, "-m", "sglang_contracts", "daemon", "start", *RELEASES,
                              "--idle-timeout", "120"], cwd=project, capture_output=True, text=True, timeout=300,
                             env={**os.environ, **elsewhere})
    assert started.returncode == 0, started.stderr
    pid = int(started.stdout.split("daemon ")[1].split()[0])
    try:
        assert run(project, "daemon", "status", *RELEASES).returncode == 1  # not this installation's
        assert run(project, "daemon", "stop", "--old", str(OLD), "--new", str(OLD)).returncode == 1  # other options
        stopped = run(project, "daemon", "stop", *RELEASES)
        assert stopped.returncode == 0 and f"daemon {pid} (of the tool installed at" in stopped.stdout
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}") \
                and not open(f"/proc/{pid}/stat").read().split()[2] == "Z":
            time.sleep(0.1)
        assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_request_longer_than_any_command_line_is_refused_before_it_is_read(project, monkeypatch) -> None:
    """Appending each chunk of a 100 MB request cost the daemon 100 s of CPU (third campaign
    D06): past MAX_REQUEST_BYTES it answers a refusal and stops reading."""
    import socket
    import threading

    from sglang_contracts.resident import daemon as daemon_module

    monkeypatch.setattr(daemon_module, "MAX_REQUEST_BYTES", 100_000)
    daemon = _daemon_in_process(project)
    collected = []
    daemon.engine = type("Engine", (), {"collect": lambda self: collected.append(True)})()
    ours, theirs = socket.socketpair(socket.AF_UNIX)
    answering = threading.Thread(target=daemon._answer, args=(theirs,))
    answering.start()
    sent = 0
    try:
        while sent < 10_000_000:
            ours.sendall(b" " * 65536)
            sent += 65536
    except OSError:  # the daemon closed its end: it read no further
        pass
    answering.join(30)
    assert not answering.is_alive() and sent < 10_000_000
    answer = ours.recv(1 << 16)
    assert answer.startswith(client.ACKNOWLEDGED) and b"a request too long" in answer
    ours.close()


def test_a_daemon_is_not_started_for_a_path_that_is_not_there(tmp_path: Path, monkeypatch, capsys) -> None:
    """Campaign 4's D05: `daemon start /nonexistent` started a daemon for `/` and exited 0."""
    from sglang_contracts.cli import main

    monkeypatch.setenv("SGLANG_CONTRACTS_CACHE", str(tmp_path / "cache"))
    status = main(["daemon", "start", str(tmp_path / "nonexistent"), *RELEASES])
    out, err = capsys.readouterr()
    assert status == 2 and "nonexistent: no such file or directory" in err and "started" not in out
    assert not (tmp_path / "cache" / "daemons").exists() or not any((tmp_path / "cache" / "daemons").glob("*.sock"))


@pytest.mark.parametrize("seconds", ["nan", "inf", "1e309", "-5", "0", "abc", "700000"])
def test_an_idle_timeout_that_is_no_finite_positive_number_is_a_usage_error(seconds: str, capsys) -> None:
    """`--idle-timeout nan` started a daemon no idle time ever exceeded, so it never left
    (campaign 9, R17); `inf` and an overflow the same."""
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["daemon", "start", "--idle-timeout", seconds])
    assert exited.value.code == 2
    assert "is not a number of seconds" in capsys.readouterr().err


def test_an_idle_timeout_in_seconds_is_taken() -> None:
    assert build_parser().parse_args(["daemon", "start", "--idle-timeout", "90.5"]).idle_timeout == 90.5
