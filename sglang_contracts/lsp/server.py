"""`sglang-contracts lsp`: the checker as a language server on standard input and output (pygls).

Every check is of the whole workspace, as `sglang-contracts check` run in its root would do
(its `[tool.sglang-contracts]`, read again each time), with the text of open Python buffers in
place of their files, on the resident engine (resident/engine.py: the releases, their models
and the project's unchanged files stay loaded between checks), and reuses the last check's
findings for every file the edit cannot change (incremental.py). Checks run one at a time in a worker thread: a file opened or saved
is checked at once, typing is checked once it pauses (DEBOUNCE_SECONDS). A check that cannot
run (no release given, a release that does not exist, no network) is one message to the user,
repeated only when the reason changes, never a restart loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, NoReturn

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import Workspace

from sglang_contracts import __version__
from sglang_contracts.check.options import Overrides, resolve_options
from sglang_contracts.infra.cache import remember_records
from sglang_contracts.infra.display import printable
from sglang_contracts.infra.errors import ContractsError, UsageError
from sglang_contracts.infra.interrupts import leave_at_interrupt
from sglang_contracts.infra.limits import cannot_start, limit_reached
from sglang_contracts.infra.process_exit import exit_without_teardown
from sglang_contracts.infra.files import Unreadable, read_limited, resolved, unsaved_buffers
from sglang_contracts.infra.lines import numbered_lines
from sglang_contracts.infra.output import standard_input
from sglang_contracts.infra.pysource import is_python_file
from sglang_contracts.infra.roots import project_root_for
from sglang_contracts.lsp.actions import code_actions
from sglang_contracts.lsp.convert import ClientColumns, contains, hover_text, lsp_diagnostic
from sglang_contracts.lsp.documents import EditingWorkspace
from sglang_contracts.lsp.frames import FrameReader

# Typing is checked once it pauses this long, each change putting the check back (schedule):
# short, since the pause is part of what the user waits for (a re-check of one edited file of
# sglang-omni takes about half a second of CPU; ruff's server lints on every change, and a debounce much past
# 0.2 s is felt as lag). A check that starts while typing goes on is not wasted either: checks
# run one at a time, and what changed meanwhile gets one more.
DEBOUNCE_SECONDS = 0.1
# Release options the client may set (initializationOptions, or didChangeConfiguration's
# settings under "sglang-contracts"): setting -> the config.Overrides field it sets, as
# `check`'s flag of the same name would.
RELEASE_OPTIONS = {"old": "old", "new": "new", "sglang-repo": "sglang_repo", "sglangRepo": "sglang_repo",
                   "config": "config", "cache-dir": "cache_dir", "cacheDir": "cache_dir"}
PATH_OPTIONS = {"sglang_repo", "config", "cache_dir"}
# Files whose change may change every finding: the configuration and the pins.
WORKSPACE_FILES = ("pyproject.toml", "setup.cfg", "requirements", "constraints")

log = logging.getLogger(__name__)


class ForgettingProtocol(LanguageServerProtocol):
    """pygls's protocol, forgetting each handler's future once it is done. pygls keeps the
    future of every handler that is a coroutine, a generator or runs on a thread, by message
    id, and forgets it only when it answers a request: a notification's (didOpen, didClose,
    didChange: each under an id of its own) and its built-in handlers' inner steps stayed for
    good, about 5 kB per didOpen/didClose."""

    def _execute_handler(self, msg_id: Any, handler: Any, callback: Any, args: Any = None, kwargs: Any = None) -> None:
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        future = self._request_futures.get(msg_id)
        if future is not None:
            future.add_done_callback(lambda done: self._forget(msg_id, done))

    def _forget(self, msg_id: Any, future: Any) -> None:
        if self._request_futures.get(msg_id) is future:  # not a later message's under the same id
            del self._request_futures[msg_id]

    def structure_message(self, data: dict[str, Any]) -> Any:
        """A request whose params do not decode (a negative line) is answered with the error, by
        its id: pygls logs it and answers nothing, and a client awaiting that id waits for good
        (JSON-RPC 2.0 asks for an error response, -32602 here)."""
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if "method" in data and isinstance(data.get("id"), (int, str)):
                self._send_response(data["id"], error=error.to_response_error())
            raise

    @property
    def shut_down(self) -> bool:
        """Whether the client asked for `shutdown`."""
        return bool(self._shutdown)

    def handle_message(self, message: Any) -> None:
        """A request after `shutdown` is answered with an error (-32600, as the LSP asks): pygls
        logs it and answers nothing, the same wait for good as a request it cannot decode."""
        if self._shutdown and getattr(message, "method", types.EXIT) != types.EXIT \
                and getattr(message, "id", None) is not None:
            self._send_response(message.id, error=types.ResponseError(code=-32600, message="the server is shut down"))
            return
        super().handle_message(message)


# What json.loads raises for a body that is not a JSON text this server can read.
UNREADABLE_JSON = (json.JSONDecodeError, UnicodeDecodeError, RecursionError)


class ContractsServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("sglang-contracts", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         protocol_cls=ForgettingProtocol)
        self.root: Path | None = None  # None: no usable workspace root yet, and nothing is checked
        self.settings: dict[str, Any] = {}
        self.published: dict[str, list[types.Diagnostic]] = {}  # uri -> what the editor shows
        self.last_failure: str | None = None
        self.last_result: Any = None  # the last check's CheckResult: the findings code actions fix
        self.last_run: Any = None  # (paths, options, unsaved buffers) of that check
        self.checks = 0  # finished checks, for tests and logs
        self._timer: asyncio.TimerHandle | None = None
        self._running = False
        self._again = False
        self._warmed = False  # a check was computed (not replayed) in this process
        self._engine: Any = None  # the resident engine every check runs on (made on first use)
        self.no_root = ""  # why the workspace root given is not usable, told once the client is ready
        self.other_folders: list[Path] = []  # the workspace's folders but the root: not checked
        self.told_unchecked: set[Path] = set()  # those whose open files were said unchecked
        # The checks' own threads, not the event loop's: asyncio waits for the loop's, when pygls
        # ends it, until a check at work is done (26-48 s after the editor's `exit`: campaign 14, R03).
        self.work = ThreadPoolExecutor(thread_name_prefix="check")

    async def off_the_loop(self, function: Callable[[], Any]) -> Any:
        """`function()`, run on the checks' threads while the loop serves the editor; on the loop
        itself when the system refuses a thread (`ulimit -v`): the editor then waits for it, where
        the refusal was "internal error" and a traceback on standard error (campaign 15, R06)."""
        once = _Once(function)
        try:
            running = asyncio.get_running_loop().run_in_executor(self.work, once)
        except RuntimeError as error:
            if not cannot_start(error):
                raise
            return once()
        return await running

    def engine(self) -> Any:
        if self._engine is None:
            from sglang_contracts.resident.engine import ResidentEngine

            self._engine = ResidentEngine(collect_between=True)
        return self._engine

    def collect(self) -> None:
        """The last check's garbage (ResidentEngine.collect), once no one waits for it."""
        if self._engine is not None:
            self._engine.collect()

    # -- scheduling ---------------------------------------------------------------------------

    def schedule(self, delay: float) -> None:
        """Check the workspace after `delay` seconds of quiet (a later call moves it back);
        never without a usable root (the server's own working directory is no workspace)."""
        if self.root is None:
            return
        loop = asyncio.get_running_loop()
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_later(delay, lambda: asyncio.ensure_future(self._check()))

    async def _check(self) -> None:
        if self._running:  # one check at a time; what changed meanwhile gets one more
            self._again = True
            return
        self._running = True
        try:
            while True:
                self._again = False
                buffers = self._unsaved()
                outcome = await self.off_the_loop(lambda: self._run(buffers))
                self._publish(outcome)
                await self.off_the_loop(self.collect)  # published: no one waits
                if isinstance(outcome, str):
                    pass  # the check could not run: nothing to warm up from
                elif not self._replayed():
                    self._warmed = True
                elif not self._again and not self._warmed:
                    # A replay reads no record and imports no rule: the first edit would pay for
                    # both. Computed once now, while the user reads the findings, the edit's check
                    # reuses them (and a quick fix has the facts it reads).
                    self._warmed = True
                    await self.off_the_loop(self.fixable_result)
                    await self.off_the_loop(self.collect)
                if not self._again:
                    break
        finally:
            self._running = False

    def report_server_error(self, error: Exception, source: Any) -> None:
        """A message the server could not handle (a body that is not JSON-RPC, a notification
        without its params): one log line, no popup in the editor (pygls shows "Error in
        server" for each), and the server answers on. A body that is not JSON at all (or
        nested deeper than it can be read) is answered with JSON-RPC's Parse error (-32700,
        id null): its id cannot be known, and a client waiting on it would wait for good
        (seventh campaign, P15)."""
        log.warning("a message could not be handled: %s: %s", type(error).__name__, printable(str(error))[:200])
        if isinstance(error, UNREADABLE_JSON):  # a plain dict: pygls's own messages leave a null id out
            parse_error = {"code": -32700, "message": "Parse error"}
            self.protocol._send_data({"jsonrpc": "2.0", "id": None, "error": parse_error})

    # -- one check ------------------------------------------------------------------------------

    def _unsaved(self) -> dict[str, bytes]:
        """Open Python buffers (of `.py` files and Python scripts of no suffix) whose text is not what
        their file holds."""
        found = {}
        for uri, document in list(self.workspace.text_documents.items()):
            path = to_fs_path(uri)
            if not path or not is_python_file(path):
                continue  # other files are read when saved: their findings are keyed by size and time
            text = document.source.encode("utf-8", "surrogateescape")
            try:
                on_disk = read_limited(path)
            except (Unreadable, ValueError):  # not on disk (not part of the project yet), or a name no file has (a NUL)
                continue
            if text != on_disk:
                found[os.path.realpath(path)] = text
        return found

    def _run(self, buffers: dict[str, bytes]) -> dict[str, list[types.Diagnostic]] | str:
        """uri -> diagnostics of every file with findings, or why the check could not run."""
        # a NUL names no file: every use of the path raised ValueError, an internal error (campaign 20)
        unnamed = next((key for key in RELEASE_OPTIONS if "\0" in str(self.settings.get(key) or "")), None)
        if unnamed is not None:
            value = printable(repr(str(self.settings[unnamed])))
            return f"the setting {unnamed} {value} names nothing (it holds a NUL)"
        given = {field: Path(str(value)) if field in PATH_OPTIONS else str(value)
                 for key, field in RELEASE_OPTIONS.items() if (value := self.settings.get(key))}
        try:
            paths, options = resolve_options([], Overrides(**given))
            with unsaved_buffers(buffers):
                result = self.engine().check(paths, options)
        except ContractsError as error:
            return str(error)
        except Exception as error:  # a bug, or a limit of the system: said once, never a crash of the server
            if os.environ.get("SGLANG_CONTRACTS_DEBUG"):
                raise
            if (limit := limit_reached(error)) is not None:
                return limit
            log.exception("check failed")
            return f"internal error: {type(error).__name__}: {error}"
        self.last_result = result  # what code actions fix
        self.last_run = (paths, options, buffers)
        return _by_uri(result, buffers, self.position_encoding())

    def position_encoding(self) -> Any:
        """The columns' encoding the session negotiated; LSP's default (UTF-16) before a client
        initialized one (a check run on the engine outside a session)."""
        try:
            return self.workspace.position_encoding
        except RuntimeError:  # pygls: "The workspace is not available"
            return types.PositionEncodingKind.Utf16

    def _replayed(self) -> bool:
        return self.last_result is not None and self.last_result.replayed_files_with_contracts is not None

    def fixable_result(self) -> Any:
        """The last check's result with the project's facts a fix reads: a replayed result holds
        the findings only, so the same check is run again without replaying (once, on demand)."""
        result = self.last_result
        if result is None or result.replayed_files_with_contracts is None:
            return result
        paths, options, buffers = self.last_run
        try:
            with unsaved_buffers(buffers):
                self.last_result = self.engine().computed(paths, options, result)
        except Exception:  # noqa: BLE001 - no quick fix is better than a server that stops answering
            log.exception("check for code actions failed")
            return None
        finally:
            self.collect()
        return self.last_result

    def _publish(self, outcome: dict[str, list[types.Diagnostic]] | str) -> None:
        self.checks += 1
        if isinstance(outcome, str):
            if outcome != self.last_failure:  # one message per reason: no storm while typing
                self.last_failure = outcome
                self.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"sglang-contracts: {outcome}"))
            return
        self.last_failure = None
        open_documents = set(self.workspace.text_documents)
        unchecked = {uri for uri in open_documents if not self.in_root(uri)}
        self.tell_unchecked(unchecked)
        for uri in self.published.keys() | outcome.keys() | open_documents - unchecked:
            diagnostics = outcome.get(uri, [])
            # An open buffer hears after every check (its text was checked); other files on change.
            if uri in open_documents or self.published.get(uri, []) != diagnostics:
                self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))
        self.published = outcome

    def in_root(self, uri: str) -> bool:
        """Whether a document is a file of the workspace root's (what a check judges)."""
        path = _folder(uri)
        return self.root is not None and path is not None and path.is_relative_to(self.root)

    def tell_unchecked(self, uris: set[str]) -> None:
        """Open files out of the root are not checked, and not shown as files with no problems (a
        second workspace folder's files were: campaign 15, R16); the workspace's other folders
        are said unchecked once each (a library file opened from elsewhere is not worth a word)."""
        paths = [path for uri in uris if (path := _folder(uri)) is not None]
        folders = [folder for folder in self.other_folders if folder not in self.told_unchecked
                   and any(path.is_relative_to(folder) for path in paths)]
        if folders and self.root is not None:
            self.told_unchecked.update(folders)
            self.window_show_message(types.ShowMessageParams(types.MessageType.Warning, printable(
                f"sglang-contracts checks one workspace folder, {self.root}: the open files of "
                f"{', '.join(map(str, folders))} are not checked (open that folder as a workspace of its own)")))

    def adopt_root(self, folder: Path | None) -> bool:
        """Make `folder` the workspace root, where it is a folder that exists: `check` reads the
        configuration of the folder it runs in, so the server runs in it. False otherwise."""
        try:
            if folder is None or not folder.is_dir():
                return False
            os.chdir(folder)
        except (OSError, ValueError):  # gone, not enterable, a name the system cannot hold
            return False
        self.root = folder
        return True

    def configure(self, settings: Any) -> None:
        if isinstance(settings, dict):
            settings = settings.get("sglang-contracts", settings)
            if isinstance(settings, dict):
                self.settings = {key: value for key, value in settings.items() if key in RELEASE_OPTIONS}
        self.last_failure = None  # a new configuration deserves its own verdict


class _Once:
    """`function()`, run by whoever calls first. A thread pool refused a thread keeps the job it
    was given: the next thread it starts runs it, and then it does nothing."""

    def __init__(self, function: Callable[[], Any]) -> None:
        self.function = function
        self.claimed = threading.Lock()

    def __call__(self) -> Any:
        if not self.claimed.acquire(blocking=False):
            return None
        return self.function()


server = ContractsServer()


def _folder(uri: str) -> Path | None:
    """The local path a `file:` URI names (None for another scheme: `http:`)."""
    path = to_fs_path(uri)
    return Path(path) if path else None


@server.feature(types.INITIALIZE)
def initialize(ls: ContractsServer, params: types.InitializeParams) -> None:
    # pygls made the workspace just before: its documents take edits as EditedDocuments do
    if type(ls.workspace) is Workspace:
        ls.workspace.__class__ = EditingWorkspace
    folders = params.workspace_folders or []
    uri = folders[0].uri if folders else params.root_uri
    ls.other_folders = [path for folder in folders[1:] if (path := _folder(folder.uri)) is not None]
    given = uri or params.root_path
    root = (_folder(uri) if uri else Path(params.root_path)) if given else Path.cwd()  # no root given: where it runs
    if not ls.adopt_root(root):
        # Told once the client is ready (initialized); checked once a real folder comes.
        ls.no_root = (f"the workspace root {printable(given)} is not a folder on this machine: nothing is checked until "
                      "a workspace folder that exists is added, or a file in one is opened")
    ls.configure(params.initialization_options)


@server.feature(types.INITIALIZED)
async def initialized(ls: ContractsServer, params: types.InitializedParams) -> None:
    watchers = [types.FileSystemWatcher(glob_pattern=f"**/{name}*") for name in WORKSPACE_FILES]
    watchers.append(types.FileSystemWatcher(glob_pattern="**/*.py"))
    capabilities = ls.client_capabilities.workspace
    if capabilities and capabilities.did_change_watched_files and capabilities.did_change_watched_files.dynamic_registration:
        await ls.client_register_capability_async(types.RegistrationParams(registrations=[types.Registration(
            id="sglang-contracts-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers))]))
    if ls.root is None:
        ls.window_show_message(types.ShowMessageParams(types.MessageType.Warning, f"sglang-contracts: {ls.no_root}"))
    ls.schedule(0)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
async def did_open(ls: ContractsServer, params: types.DidOpenTextDocumentParams) -> None:
    if ls.root is None:  # no usable workspace root: the project of the file opened, if it is on disk
        path = _folder(params.text_document.uri)
        try:
            ls.adopt_root(project_root_for([path]) if path is not None else None)
        except (ValueError, UsageError):  # a NUL in the name; a file of no project in /tmp (roots.py)
            pass
    ls.schedule(0.05)  # an editor restoring a session opens many at once


@server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
async def did_change_workspace_folders(ls: ContractsServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    added = [path for folder in params.event.added if (path := _folder(folder.uri)) is not None]
    if ls.root is None:
        for path in list(added):
            if ls.adopt_root(path):
                added.remove(path)
                break
        ls.schedule(0)
    removed = {_folder(folder.uri) for folder in params.event.removed}
    ls.other_folders = [folder for folder in ls.other_folders if folder not in removed] + added


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: ContractsServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.schedule(DEBOUNCE_SECONDS)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
async def did_save(ls: ContractsServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.schedule(0)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
async def did_close(ls: ContractsServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.schedule(0.05)  # its unsaved text, if any, is gone: the file on disk counts again


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
async def did_change_watched_files(ls: ContractsServer, params: types.DidChangeWatchedFilesParams) -> None:
    ls.last_failure = None
    ls.schedule(0.05)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: ContractsServer, params: types.DidChangeConfigurationParams) -> None:
    ls.configure(params.settings)
    ls.schedule(0)


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: ContractsServer, params: types.HoverParams) -> types.Hover | None:
    here = [d for d in ls.published.get(params.text_document.uri, []) if contains(d.range, params.position)]
    if not here:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=hover_text(here)),
                       range=here[0].range)


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
async def code_action(ls: ContractsServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    ours = [d for d in params.context.diagnostics if d.source == "sglang-contracts"]
    path = to_fs_path(uri)
    if not ours or not path or ls.root is None:
        return []
    try:
        relpath = resolved(Path(path)).relative_to(ls.root.resolve()).as_posix()
    except (ValueError, OSError):  # a file out of the project (or a link out of it): never read, nor edited
        return []  # (campaign 15, R15: a client's request for file:///etc/passwd read it and answered an edit)
    try:
        source = ls.workspace.get_text_document(uri).source  # the buffer, or the file as it is on disk
    except (OSError, UnicodeDecodeError):  # no such file: nothing to fix
        return []
    # A fix may read the releases (a verified home): off the event loop, as the checks run
    return await ls.off_the_loop(lambda: code_actions(uri, ls.fixable_result(), relpath, source, ours,
                                                      ls.position_encoding()))


class _OneLine(logging.Filter):
    """pygls logs a message it cannot parse or handle with its traceback (attached, or written
    into the message): one line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        lines = numbered_lines(record.getMessage())
        text = lines[0] if lines else ""
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            text = f"{text}: {type(error).__name__}: {error}"
        record.msg, record.args = printable(text)[:300], ()
        record.exc_info = record.exc_text = None
        return True


def main() -> NoReturn:
    remember_records()  # every check reads the same records: decode each once
    root = logging.getLogger()
    if not root.handlers:  # as logging's last resort would print them: standard error, warnings and worse
        handler = logging.StreamHandler()
        handler.setLevel(logging.WARNING)
        root.addHandler(handler)
    for handler in root.handlers:  # a handler's filter sees every logger's records, pygls's included
        handler.addFilter(_OneLine())
    leave_at_interrupt()
    server.start_io(stdin=FrameReader(standard_input()))  # not deaf after a malformed frame (frames.py)
    # pygls closes standard output with the connection; what runs after (the CLI's flush) writes nowhere.
    sys.stdout = open(os.devnull, "w")
    # The editor asked the server to exit, or left: nothing waits for a check still at work, whose
    # workers multiprocessing's exit handler waited for (26-48 s after `exit`: campaign 14, R03).
    # Status 1 unless a `shutdown` came first, as the LSP asks (campaign 15, R03).
    exit_without_teardown(0 if server.protocol.shut_down else 1, interrupted=True)


def _by_uri(result: Any, buffers: dict[str, bytes], encoding: str | None) -> dict[str, list[types.Diagnostic]]:
    """uri -> the editor's diagnostics of each file with findings, their columns counted on the
    file's lines (the unsaved buffer's where there is one) in the client's position encoding."""
    root = result.project.root
    columns: dict[str, ClientColumns] = {}
    by_uri: dict[str, list[types.Diagnostic]] = {}
    for finding in result.diagnostics:
        path = root / finding.path
        if finding.path not in columns:
            data = buffers.get(os.path.realpath(path))
            try:
                data = data or read_limited(path, within=root)
                lines = numbered_lines(data.decode("utf-8", "replace"))
            except Unreadable:
                lines = []
            columns[finding.path] = ClientColumns(lines, encoding)
        by_uri.setdefault(from_fs_path(str(path)), []).append(lsp_diagnostic(finding, columns[finding.path]))
    return by_uri
