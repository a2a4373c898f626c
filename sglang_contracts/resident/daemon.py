"""`sglang-contracts daemon start|stop|status`: a process that keeps a project's check resident
(engine.py) and answers the `check` runs handed to it (client.py) on a Unix socket.

One request at a time: a `check` that finds the daemon busy with another is told so at once
and runs in its own process (the findings and the exit status are the same either way, since
both run the command line's own `check`, which cli.py hands the daemon). Each request is a whole `check` run on the engine, which re-reads
the configuration and re-stats the project as any run does, so no stale tree is ever served;
and the daemon stops (answering `stale`) when this tool's own files change under it. It exits
after `--idle-timeout` seconds without a request.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from sglang_contracts.infra.display import printable, printable_path
from sglang_contracts.infra.files import resolved
from sglang_contracts.infra.pythonpath import python_command
from sglang_contracts.infra.roots import require_existing
from sglang_contracts.resident.client import (
    ACKNOWLEDGED, BUSY, PACKAGE_DIR, STALE, ask, daemon_key, make_private_folder, not_private_reason, same_user,
    socket_path,
)

if TYPE_CHECKING:
    from sglang_contracts.check.runner import CheckOptions, CheckResult

IDLE_TIMEOUT = 3600.0
START_TIMEOUT = 600.0  # the first check of a fresh cache downloads and extracts both releases


# A request is a command line (pre-commit's: a path per staged file), its folder and its
# options' identity: far below this. A client sending more is refused before it is all read
# (appending 100 MB cost the daemon 100 s of CPU).
MAX_REQUEST_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class CommandLine:
    """How the daemon runs a `check` command line as the tool's own command does (cli.py gives
    it: the daemon imports no command line): `parse` reads one (SystemExit when it is refused),
    `run` runs it with a check function and returns its exit status."""

    parse: Callable[[list[str]], argparse.Namespace]
    run: Callable[..., int]  # run(args, check=...)


def daemon_command(args: argparse.Namespace, argv: list[str], command_line: CommandLine) -> int:
    """start, stop, status (and serve: the daemon itself, which start runs detached)."""
    if args.action != "serve":  # as `check` refuses it: a daemon for a missing path served the folder above
        require_existing([path if path.is_absolute() else Path.cwd() / path for path in args.paths])
    root, identity, key = daemon_key(args, Path.cwd())
    path = socket_path(args, key, root)
    if args.action == "serve":
        return Daemon(argv, root, identity, path, args.idle_timeout, command_line).serve()
    shown_root = printable_path(str(root))
    why = _folder_refusal(args.action, path.parent)
    if why:
        print(f"sglang-contracts: error: {printable(why)}: no daemon is started or asked there", file=sys.stderr)
        return 2
    answer = status_answer(ask(path, {"status": True}, timeout=5.0))
    if args.action == "status":
        return _say_status(answer, shown_root)
    if args.action == "stop":
        return _stop(answer, path, identity, shown_root)
    if answer is not None:
        print(f"sglang-contracts: daemon {answer['pid']} already runs for {shown_root}")
        return 0
    return _start(argv, path, shown_root)


def _folder_refusal(action: str, folder: Path) -> str | None:
    """Why the daemons' folder may not be used: `start` makes it, private, where it is missing;
    the other actions only read one that exists."""
    if action == "start":
        return make_private_folder(folder)
    return not_private_reason(folder) if os.path.lexists(folder) else None


def _say_status(answer: dict[str, Any] | None, shown_root: str) -> int:
    """`daemon status`: 0 when a daemon serves the root with these options, 1 else."""
    if answer is None:
        print(f"sglang-contracts: no daemon for {shown_root} with these options")
        return 1
    print(f"sglang-contracts: daemon {answer['pid']} for {shown_root}: {answer['runs']} checks, "
          f"idle for {answer['idle']:.0f} s of {answer['idle_timeout']:.0f} s")
    return 0


def _stop(answer: dict[str, Any] | None, path: Path, identity: str, shown_root: str) -> int:
    """`daemon stop`: the daemon at `path` (its status `answer`), or else those of the tool's
    other installations for the same root and options; 1 when there was none."""
    if answer is not None:
        ask(path, {"stop": True}, timeout=5.0)
        print(f"sglang-contracts: daemon {answer['pid']} stopped")
        return 0
    # pre-commit's hook runs its own installation of the tool: its daemon is stopped too
    others = _other_installations(path.parent, identity)
    for other_socket, other in others:
        ask(other_socket, {"stop": True}, timeout=5.0)
        print(f"sglang-contracts: daemon {other['pid']} (of the tool installed at "
              f"{printable_path(other['tool'])}) stopped")
    if not others:
        print(f"sglang-contracts: no daemon for {shown_root} with these options")
    return 0 if others else 1


def status_answer(answer: dict[str, Any] | None) -> dict[str, Any] | None:
    """A daemon's answer to `status` as this tool's daemon gives it, or None: a pid, counts and
    times of the right types, never text to print."""
    if answer is None:
        return None
    numbers = all(type(answer.get(name)) in (int, float) for name in ("idle", "idle_timeout"))
    integers = all(type(answer.get(name)) is int for name in ("pid", "runs"))
    return answer if numbers and integers else None


def _other_installations(folder: Path, identity: str) -> list[tuple[Path, dict[str, Any]]]:
    """(socket, status with the tool's folder) of each daemon in `folder` that serves the same
    root with the same options as `identity` from another installation of this tool (a
    pre-commit environment's): its socket has another name, since the installation is in it."""
    wanted = _without_tool(identity)
    found = []
    try:
        sockets = sorted(folder.glob("*.sock"))
    except OSError:
        return []
    for path in sockets:
        answer = status_answer(ask(path, {"status": True}, timeout=5.0))
        theirs = answer.get("identity") if answer is not None else None
        if isinstance(theirs, str) and theirs != identity and _without_tool(theirs) == wanted:
            found.append((path, {**answer, "tool": str(json.loads(theirs).get("tool", "?"))}))
    return found


def _without_tool(identity: str) -> Any:
    """What a daemon serves (root, options, debug), whichever installation of the tool it runs."""
    try:
        served = json.loads(identity)
    except ValueError:
        return None
    if isinstance(served, dict):
        served.pop("tool", None)
    return served


def _start(argv: list[str], path: Path, root: str) -> int:
    """Run `daemon serve` detached and wait until it answers (after its first check). The start
    is claimed (_claim_start) as `check --daemon` claims it: a start while another is under way
    waits for that one's daemon and names it, so concurrent starts leave one daemon, not one each."""
    at = argv.index("start")
    process, log = None, path.with_suffix(".log")
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        exited = process is not None and process.poll() is not None  # before asking: it may have found one serving
        answer = status_answer(ask(path, {"status": True}, timeout=5.0))
        if answer is not None:
            print(f"sglang-contracts: daemon {answer['pid']} started for {root}")
            return 0
        if exited:
            print(f"sglang-contracts: error: the daemon exited ({process.returncode}); see {printable(str(log))}",
                  file=sys.stderr)
            return 2
        if process is None and _claim_start(path):
            try:
                process, log = _serve_detached([*argv[:at], "serve", *argv[at + 1:]], path)
            except OSError as error:  # a link named as its log (O_NOFOLLOW), a full disk
                path.with_suffix(".starting").unlink(missing_ok=True)
                print(f"sglang-contracts: error: cannot open the daemon's log {printable_path(str(log))} "
                      f"({error.strerror or error})", file=sys.stderr)
                return 2
        time.sleep(0.1)
    print(f"sglang-contracts: error: the daemon did not answer in {START_TIMEOUT:.0f} s; see {printable(str(log))}", file=sys.stderr)
    return 2


def _serve_detached(argv: list[str], path: Path) -> tuple[subprocess.Popen, Path]:
    """`sglang-contracts ARGV` (a `daemon serve`) in a session of its own, its output in the log
    beside its socket (in a folder the caller found private: make_private_folder). The log is
    never opened through a link."""
    log = path.with_suffix(".log")
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "ab") as output:
        process = subprocess.Popen(python_command("-m", "sglang_contracts", *argv), stdin=subprocess.DEVNULL,
                                   stdout=output, stderr=output, start_new_session=True)
    return process, log


# `check` options -> the flag that gives them (client.KEY_OPTIONS), as `daemon` takes them.
_KEY_FLAGS = {"old": "--old", "new": "--new", "sglang_repo": "--sglang-repo", "config": "--config",
              "select": "--select", "ignore": "--ignore", "no_cache": "--no-cache", "cache_dir": "--cache-dir",
              "package_index": "--package-index"}


def daemon_argv(args: argparse.Namespace, root: Path, cwd: Path) -> list[str]:
    """The `daemon serve` command line with a `check`'s run options (the ones its key holds),
    for the check's project root, its paths made absolute (`cwd`: the check's)."""
    argv = ["daemon", "serve", str(root)]  # the paths before the options, as argparse takes them
    for name, flag in _KEY_FLAGS.items():
        value = getattr(args, name, None)
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, Path):
            argv += [flag, str(value if value.is_absolute() else resolved(cwd / value))]
        else:
            argv += [flag, ",".join(value) if isinstance(value, list) else str(value)]
    return argv


def leave_daemon(args: argparse.Namespace, cwd: Path) -> None:
    """After `check --daemon` ran in its own process: a daemon with its run options, started
    detached and not waited for (its warm-up replays the run just recorded), unless one runs
    or is starting. Nothing is said: a daemon that cannot start leaves the next check to run
    in its own process, as it would without one."""
    if os.environ.get("SGLANG_CONTRACTS_NO_DAEMON"):
        return
    try:
        root, _, key = daemon_key(args, cwd)
        path = socket_path(args, key, root)
        if make_private_folder(path.parent) is not None:
            return
        if ask(path, {"status": True}, timeout=5.0) is not None:
            return  # one runs (busy with another check when this one asked)
        if not _claim_start(path):
            return
        _serve_detached(daemon_argv(args, root, cwd), path)
    except (OSError, ValueError, RuntimeError):
        return


def _claim_start(path: Path) -> bool:
    """Whether this process may start the socket's daemon: the first to create its `.starting`
    mark (the daemon removes it once it listens), or the first after a mark older than a start
    may take; two checks that end together start one daemon, not two."""
    mark = path.with_suffix(".starting")
    for _ in range(2):
        try:
            os.close(os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            return True
        except FileExistsError:
            try:
                if time.time() - mark.stat().st_mtime < START_TIMEOUT:
                    return False
                mark.unlink()
            except FileNotFoundError:
                pass
    return False


def _well_formed(request: object) -> bool:
    """A request as this tool's client sends it: a status or stop, or a check with its command
    line (strings) and working folder (a string); anything else is refused in one answer."""
    if not isinstance(request, dict):
        return False
    if request.get("status") or request.get("stop"):
        return True
    command = request.get("check")
    return (isinstance(command, list) and all(isinstance(part, str) for part in command)
            and isinstance(request.get("cwd"), str) and isinstance(request.get("identity"), str))


def _code_stamps() -> dict[str, tuple[int, int]]:
    """Size and modification time of every file of this tool's code and catalog."""
    stamps = {}
    for folder in (PACKAGE_DIR, PACKAGE_DIR.parent / "rules"):
        for path in folder.rglob("*"):
            if path.suffix in (".py", ".toml") and "__pycache__" not in path.parts:
                status = path.stat()
                stamps[str(path)] = (status.st_size, status.st_mtime_ns)
    return stamps


class _Terminal(io.StringIO):
    """Standard output as the client has it: a terminal or not (colours, the summary line)."""

    def __init__(self, terminal: bool) -> None:
        super().__init__()
        self._terminal = terminal

    def isatty(self) -> bool:
        return self._terminal


class Daemon:
    def __init__(self, argv: list[str], root: Path, identity: str, path: Path, idle_timeout: float,
                 command_line: CommandLine) -> None:
        from sglang_contracts.resident.engine import ResidentEngine

        self.argv, self.root, self.identity, self.path = argv, root, identity, path
        self.command_line = command_line
        self.engine = ResidentEngine(collect_between=True)
        self.idle_timeout = idle_timeout
        self.busy = threading.Lock()
        self.last = time.monotonic()
        self.runs = 0
        self.stopping = threading.Event()
        self.code = _code_stamps()

    def serve(self) -> int:
        if why := make_private_folder(self.path.parent):
            print(f"sglang-contracts: error: {printable(why)}: no daemon serves there", file=sys.stderr)
            return 2
        listened = False
        try:
            if self._another_serves():
                return 0
            self._warm_up()
            if self._another_serves():  # one came up while this one warmed up
                return 0
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()
                listener.bind(str(self.path))  # in a folder only this user can enter
                listener.listen(8)
                self._started()
                listened = True
                listener.settimeout(1.0)
                try:
                    while not self.stopping.is_set():
                        try:
                            connection, _ = listener.accept()
                        except socket.timeout:
                            if not self.busy.locked() and time.monotonic() - self.last > self.idle_timeout:
                                break
                            continue
                        self._answer_beside(connection)
                finally:
                    with contextlib.suppress(FileNotFoundError):
                        self.path.unlink()
        finally:
            if not listened:  # a warm-up that failed: the next `check --daemon` may try again
                self._started()
        return 0

    def _answer_beside(self, connection: socket.socket) -> None:
        """Answer `connection` on a thread of its own, the next one accepted meanwhile; here when
        the system refuses the thread (`ulimit -v`): "can't start new thread" ended the daemon."""
        try:
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()
        except RuntimeError:
            self._answer(connection)

    def _another_serves(self) -> bool:
        """Whether a live daemon answers on this one's socket: it serves, and this one leaves
        quietly rather than take the socket over (the other would live on unreachable)."""
        return status_answer(ask(self.path, {"status": True}, timeout=5.0)) is not None

    def _started(self) -> None:
        """Remove the mark of a start under way (leave_daemon's): the socket listens, or never will."""
        with contextlib.suppress(FileNotFoundError):
            self.path.with_suffix(".starting").unlink()

    def _warm_up(self) -> None:
        """The first check, before the socket exists: a `check` meanwhile runs on its own. One
        that replayed (no input changed since the last run) is computed again (engine.computed):
        the first edit paid for reading the records and importing the rules (1.9 s against 0.45 s)."""
        ran: list[tuple[list[Path], CheckOptions, CheckResult]] = []

        def check(paths: list[Path], options: CheckOptions) -> CheckResult:
            ran.append((paths, options, self.engine.check(paths, options)))
            return ran[-1][2]

        with self._as_client(False, None):
            self.command_line.run(self._check_args(["check", "--exit-zero", "-q"]), check=check)
        if ran:
            self.engine.collect()
            self.engine.computed(*ran[-1])
        self.engine.collect()

    def _check_args(self, argv: list[str]) -> argparse.Namespace:
        """`check ARGV` with the run options this daemon was started with."""
        at = self.argv.index("serve")  # `daemon [options] serve [options]`
        own, skip = [], False
        for part in [*self.argv[1:at], *self.argv[at + 1:]]:
            if skip:
                skip = False
            elif part == "--idle-timeout":
                skip = True
            elif not part.startswith("--idle-timeout="):
                own.append(part)
        return self.command_line.parse([*argv, *own])

    @contextlib.contextmanager
    def _as_client(self, terminal: bool, no_color: bool | None):
        """Standard output and error captured, NO_COLOR as the client has it."""
        saved_color = os.environ.get("NO_COLOR")
        if no_color is not None:
            os.environ.pop("NO_COLOR", None)
            if no_color:
                os.environ["NO_COLOR"] = "1"
        out, err = _Terminal(terminal), _Terminal(False)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                yield out, err
        finally:
            os.environ.pop("NO_COLOR", None)
            if saved_color is not None:
                os.environ["NO_COLOR"] = saved_color

    def _answer(self, connection: socket.socket) -> None:
        try:
            with connection:  # closed once the answer is sent: the client reads to the end
                if not same_user(connection):
                    return
                connection.settimeout(10.0)
                chunks, size = [], 0
                while chunk := connection.recv(1 << 16):
                    size += len(chunk)
                    if size > MAX_REQUEST_BYTES:  # no command line is this long: refused unread
                        connection.sendall(ACKNOWLEDGED + json.dumps({"refused": "a request too long"}).encode())
                        return
                    chunks.append(chunk)
                request = json.loads(b"".join(chunks).decode("utf-8", "surrogateescape"))
                connection.settimeout(None)
                connection.sendall(ACKNOWLEDGED)  # heard: the client now waits for the answer however long
                answer = self._safely_handled(request)
                connection.sendall(json.dumps(answer).encode("utf-8", "surrogateescape"))
        except (OSError, ValueError, RecursionError):
            pass  # the client left, or sent nothing readable: it runs the check itself
        finally:
            if not self.busy.locked():  # the run's garbage, now that its answer is out
                self.engine.collect()

    def _safely_handled(self, request: object) -> dict[str, Any]:
        """The answer; a request this daemon cannot serve is refused, and the client runs the
        check itself (where any error is reported as a run reports it), with no traceback here."""
        if not _well_formed(request):
            return {"refused": "a malformed request"}
        try:
            return self._handle(request)
        except Exception as error:  # noqa: BLE001 - the boundary of a request: the daemon serves on
            return {"refused": f"cannot serve this request ({type(error).__name__})"}

    def _handle(self, request: dict[str, Any]) -> dict[str, Any]:
        if request.get("status"):
            return {"pid": os.getpid(), "root": str(self.root), "runs": self.runs, "identity": self.identity,
                    "idle": time.monotonic() - self.last, "idle_timeout": self.idle_timeout}
        if request.get("stop"):
            self.stopping.set()
            return {"stopped": True}
        if request.get("identity") != self.identity:
            return {"refused": "another project or other options"}
        if _code_stamps() != self.code:  # this tool was changed or reinstalled: its successor answers
            self.stopping.set()
            return {"refused": STALE}
        if not self.busy.acquire(blocking=False):
            return {"refused": BUSY}
        try:
            return self._check(request)
        finally:
            self.last = time.monotonic()
            self.busy.release()

    def _check(self, request: dict[str, Any]) -> dict[str, Any]:
        argv = [str(part) for part in request["check"]]
        cwd = os.getcwd()
        try:
            try:
                os.chdir(request["cwd"])
                # What argparse prints of a line it refuses or answers (usage, --help, --version)
                # is for no one here: it went to the daemon's log, which only grew
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    args = self.command_line.parse(argv)
            except (OSError, SystemExit):
                return {"refused": "cannot run this command line here"}
            if args.command != "check":  # a daemon runs checks, not `lsp` nor `daemon start`
                return {"refused": "cannot run this command line here"}
            with self._as_client(bool(request.get("tty")), bool(request.get("no_color"))) as (out, err):
                status = self.command_line.run(args, check=self.engine.check)
        finally:
            os.chdir(cwd)
        self.runs += 1
        return {"status": status, "stdout": out.getvalue(), "stderr": err.getvalue()}
