"""`sglang-contracts lsp` end to end: a real LSP client (pygls's) talks to the server over stdio."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

from tests.helpers import CHECKOUT, NEW, OLD, checkout_env, lsp_frame, upstream_tree

PROJECT = CHECKOUT / "fixtures" / "project"
TIMEOUT = 120  # the first check of a fresh cache extracts both releases


class Client(LanguageClient):
    def __init__(self) -> None:
        super().__init__("sglang-contracts-test", "1")
        self.diagnostics: dict[str, list[types.Diagnostic]] = {}
        self.messages: list[str] = []
        self.changed = asyncio.Event()

        @self.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(client: Client, params: types.PublishDiagnosticsParams) -> None:
            client.diagnostics[params.uri] = params.diagnostics
            client.changed.set()

        @self.feature(types.WINDOW_SHOW_MESSAGE)
        def shown(client: Client, params: types.ShowMessageParams) -> None:
            client.messages.append(params.message)
            client.changed.set()

        @self.feature(types.WINDOW_LOG_MESSAGE)
        def logged(client: Client, params: types.LogMessageParams) -> None:
            pass

    async def until(self, condition, timeout: float = TIMEOUT) -> float:
        """Seconds until `condition()` holds for what the server sent."""
        start = time.perf_counter()
        while not condition():
            self.changed.clear()
            left = timeout - (time.perf_counter() - start)
            assert left > 0, f"timed out; diagnostics {self.diagnostics}, messages {self.messages}"
            try:
                await asyncio.wait_for(self.changed.wait(), left)
            except asyncio.TimeoutError:
                pass
        return time.perf_counter() - start


def _workspace(tmp_path: Path, configured: bool) -> Path:
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root)
    if configured:
        with open(root / "pyproject.toml", "a") as config:
            config.write(f'old = "{OLD}"\nnew = "{NEW}"\n')
    return root


async def _session(root: Path, cache: Path, initialization: dict, body, root_uri: str | None = None,
                   capabilities: types.ClientCapabilities | None = None) -> None:
    """A server started in `root`, given `root_uri` as the workspace (`root`'s own by default);
    the initialize answer's capabilities are the client's `server_capabilities`."""
    client = Client()
    env = {**os.environ, "SGLANG_CONTRACTS_CACHE": str(cache)}
    env.pop("SGLANG_CONTRACTS_DEBUG", None)  # the server must stay up whatever a check meets
    await client.start_io(sys.executable, "-m", "sglang_contracts", "lsp", cwd=str(root), env=env)
    try:
        answer = await client.initialize_async(types.InitializeParams(
            capabilities=capabilities or types.ClientCapabilities(), root_uri=root_uri or from_fs_path(str(root)),
            initialization_options=initialization))
        client.server_capabilities = answer.capabilities
        client.initialized(types.InitializedParams())
        await body(client)
        await client.shutdown_async(None)
        client.exit(None)
    finally:
        # A failed assertion skips the shutdown: the server is then stopped, not waited for.
        try:
            await asyncio.wait_for(client.stop(), 20)
        except asyncio.TimeoutError:
            for process in [getattr(client, "_server", None)]:
                if process is not None:
                    process.kill()


def _codes(diagnostics: list[types.Diagnostic]) -> list[tuple[int, str]]:
    return sorted((d.range.start.line + 1, str(d.code)) for d in diagnostics)


def test_open_edit_close_gives_new_diagnostics(tmp_path):
    root = _workspace(tmp_path, configured=True)
    layers = root / "demo_omni" / "layers.py"
    uri = from_fs_path(str(layers))
    text = layers.read_text()
    timings = {}

    async def body(client: Client) -> None:
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
        await client.until(lambda: uri in client.diagnostics)
        opened = client.diagnostics[uri]
        # fixtures/README.md's findings in layers.py
        assert _codes(opened) == [(4, "SGC103"), (5, "SGC102"), (8, "SGC104")]
        removed = next(d for d in opened if d.code == "SGC102")
        assert removed.severity == types.DiagnosticSeverity.Error and removed.source == "sglang-contracts"
        assert removed.range.start.character == 74 and removed.range.end.character > 74
        assert "get_quantization_config" in removed.message

        hover = await client.text_document_hover_async(types.HoverParams(
            types.TextDocumentIdentifier(uri), removed.range.start))
        assert hover is not None and "imported-name-removed" in hover.contents.value
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            types.TextDocumentIdentifier(uri), removed.range, types.CodeActionContext(diagnostics=[removed])))
        (noqa,) = [a for a in actions if "noqa" in a.title]
        (edit,) = noqa.edit.changes[uri]
        assert edit.new_text == "  # noqa: SGC102" and edit.range.start.line == 4
        # `fix`'s safe fix as a quick fix: the whole buffer with the import moved to its new home
        (quick,) = [a for a in actions if a.title.startswith("Fix SGC102")]
        assert quick.is_preferred and "unsafe" not in quick.title
        (whole,) = quick.edit.changes[uri]
        assert "from sglang.srt.layers.quantization.base_config import get_quantization_config\n" in whole.new_text
        assert whole.new_text.replace("from sglang.srt.layers.quantization import Fp8Config, QuantizationConfig\n"
                                      "from sglang.srt.layers.quantization.base_config import get_quantization_config",
                                      "from sglang.srt.layers.quantization import Fp8Config, QuantizationConfig, "
                                      "get_quantization_config") == text

        # The developer deletes the import line that breaks (unsaved): the server checks the buffer.
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(4, 0), types.Position(5, 0)), text="")]))
        timings["recheck"] = await client.until(lambda: _codes(client.diagnostics[uri]) != _codes(opened))
        assert _codes(client.diagnostics[uri]) == [(4, "SGC103"), (7, "SGC104")]
        assert layers.read_text() == text  # the file on disk is untouched

        client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
        # Closed without saving: the file on disk counts again.
        await client.until(lambda: _codes(client.diagnostics[uri]) == _codes(opened))
        assert client.messages == []

    asyncio.run(_session(root, tmp_path / "cache", {}, body))
    print(f"LSP re-check after an edit: {timings['recheck']:.2f} s (debounce included)")


def test_the_server_counts_columns_in_the_encoding_it_announces(tmp_path):
    """Diagnostics, hover, the `# noqa` edit and an incremental edit all count the units of the
    position encoding the server announces: UTF-16 by default, UTF-8 or UTF-32 when the client
    offers it. After characters outside the BMP, code points put the noqa comment inside the
    import (campaign 10, R04)."""
    root = _workspace(tmp_path, configured=True)
    module = root / "demo_omni" / "wide.py"
    line = f'y = "{WIDE}"; from sglang.srt.layers.quantization import get_quantization_config'
    module.write_text(line + "\n", encoding="utf-8")
    uri = from_fs_path(str(module))
    name = line.index("get_quantization_config")

    async def body(client: Client) -> None:
        encoding = client.server_capabilities.position_encoding
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=line + "\n")))
        await client.until(lambda: client.diagnostics.get(uri))
        (removed,) = client.diagnostics[uri]
        assert [_index(line, end, encoding) for end in (removed.range.start, removed.range.end)] == [name, len(line)]
        hover = await client.text_document_hover_async(types.HoverParams(
            types.TextDocumentIdentifier(uri), removed.range.end))
        assert hover is not None and hover.range == removed.range
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            types.TextDocumentIdentifier(uri), removed.range, types.CodeActionContext(diagnostics=[removed])))
        (noqa,) = [a for a in actions if "noqa" in a.title]
        assert _applied(line, noqa.edit.changes[uri][0], encoding) == line + "  # noqa: SGC102"
        # The editor replaces the name by one the new release keeps, in its own units: no finding.
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [types.TextDocumentContentChangePartial(range=removed.range, text="Fp8Config")]))
        await client.until(lambda: not client.diagnostics[uri])

    for offered in (None, ["utf-8"], ["utf-32"]):
        general = types.GeneralClientCapabilities(position_encodings=offered) if offered else None
        capabilities = types.ClientCapabilities(general=general)
        asyncio.run(_session(root, tmp_path / "cache", {}, body, capabilities=capabilities))


def test_a_check_that_cannot_run_is_one_message_and_the_server_stays(tmp_path):
    root = _workspace(tmp_path, configured=False)  # no `new` anywhere: the check cannot run
    uri = from_fs_path(str(root / "demo_omni" / "layers.py"))
    text = (root / "demo_omni" / "layers.py").read_text()

    async def body(client: Client) -> None:
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
        await client.until(lambda: client.messages)
        for version in (2, 3):  # typing goes on: no new message for the same reason
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                [types.TextDocumentContentChangeWholeDocument(text=text + "\n" * version)]))
            await asyncio.sleep(1.0)
        assert len(client.messages) == 1 and "--new is required" in client.messages[0]
        assert uri not in client.diagnostics
        # The release options arrive: the workspace is checked.
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"sglang-contracts": {"old": OLD, "new": NEW}}))
        await client.until(lambda: uri in client.diagnostics)
        assert (5, "SGC102") in _codes(client.diagnostics[uri])

    asyncio.run(_session(root, tmp_path / "cache", {}, body))


@pytest.mark.parametrize("root_uri, comes", [("file:///nowhere/project", "as a workspace folder"),
                                              ("http://example.com/project", "with a file opened in it")])
def test_a_root_that_is_no_folder_is_one_message_and_nothing_is_checked_until_one_comes(tmp_path, root_uri, comes):
    """The server runs in a configured project, but the client names another root: its own
    working directory is not checked in its place; the real folder, once given, is."""
    root = _workspace(tmp_path, configured=True)
    layers = root / "demo_omni" / "layers.py"
    uri = from_fs_path(str(layers))

    async def body(client: Client) -> None:
        await client.until(lambda: client.messages)
        await asyncio.sleep(1.5)  # a check of the working directory would have published by now
        assert client.diagnostics == {}
        (message,) = client.messages
        assert message == (f"sglang-contracts: the workspace root {root_uri} is not a folder on this machine: nothing "
                           "is checked until a workspace folder that exists is added, or a file in one is opened")
        if comes == "as a workspace folder":
            client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
                types.WorkspaceFoldersChangeEvent(added=[types.WorkspaceFolder(from_fs_path(str(root)), "project")],
                                                  removed=[])))
        else:
            client.text_document_did_open(types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id="python", version=1, text=layers.read_text())))
        await client.until(lambda: uri in client.diagnostics)
        assert (5, "SGC102") in _codes(client.diagnostics[uri]) and len(client.messages) == 1

    asyncio.run(_session(root, tmp_path / "cache", {}, body, root_uri=root_uri))


def test_after_a_replayed_check_the_server_computes_once_so_the_first_edit_reuses_it(monkeypatch):
    """A replay reads no record: the server then runs the same check computed, once, so that
    the records and the rules are loaded before the user's first edit is checked."""
    from types import SimpleNamespace

    from sglang_contracts.lsp.server import ContractsServer

    server = ContractsServer()
    computed = []

    def run(buffers):
        server.last_result = SimpleNamespace(replayed_files_with_contracts=3)  # what a replay gives
        return {}

    def fixable_result():
        computed.append(True)
        server.last_result = SimpleNamespace(replayed_files_with_contracts=None)
        return server.last_result

    monkeypatch.setattr(server, "_unsaved", lambda: {})
    monkeypatch.setattr(server, "_run", run)
    monkeypatch.setattr(server, "_publish", lambda outcome: None)
    monkeypatch.setattr(server, "fixable_result", fixable_result)
    asyncio.run(server._check())
    asyncio.run(server._check())  # replayed again: already warm
    assert computed == [True]


def test_a_thread_the_system_refuses_is_one_message_naming_the_limit(monkeypatch, tmp_path):
    """Under `ulimit -v 300000` a check's threads could not start: the editor was shown "internal
    error: RuntimeError: can't start new thread" (campaign 15, R06). It is the system's limit,
    which the user can raise."""
    import threading

    from sglang_contracts.lsp.server import ContractsServer

    def refused(self):
        raise RuntimeError("can't start new thread")

    root = _workspace(tmp_path, configured=True)
    monkeypatch.chdir(root)
    monkeypatch.setenv("SGLANG_CONTRACTS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SGLANG_CONTRACTS_DEBUG")
    monkeypatch.setattr(threading.Thread, "start", refused)
    server = ContractsServer()
    server.root = root
    said = server._run({})
    assert isinstance(said, str) and said.startswith("cannot start a thread or process: raise the limits") \
        and "`ulimit -v`" in said


@pytest.mark.parametrize("key", ["sglangRepo", "sglang-repo", "config", "cacheDir", "new"])
def test_a_setting_holding_a_nul_is_one_line_not_an_internal_error(tmp_path, monkeypatch, key):
    """initializationOptions or didChangeConfiguration holding a NUL in a path: every use of the
    path raised ValueError, "internal error: ValueError: embedded null byte" (campaign 20)."""
    from sglang_contracts.lsp.server import ContractsServer

    root = _workspace(tmp_path, configured=True)
    monkeypatch.chdir(root)
    monkeypatch.setenv("SGLANG_CONTRACTS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SGLANG_CONTRACTS_DEBUG")
    server = ContractsServer()
    server.root = root
    server.configure({"sglang-contracts": {key: "x\0y"}})
    assert server._run({}) == f"the setting {key} 'x\\x00y' names nothing (it holds a NUL)"


def test_work_the_system_refuses_a_thread_runs_on_the_loop_once(monkeypatch):
    """The checks' thread pool refused a thread (`ulimit -v`): the check raised "can't start new
    thread" out of the loop's task, its traceback on standard error (campaign 15, R06). It runs
    on the loop instead; the pool keeps the refused job and runs it, doing nothing, once it has
    a thread."""
    import threading

    from sglang_contracts.lsp.server import ContractsServer

    def refused(self):
        raise RuntimeError("can't start new thread")

    server = ContractsServer()
    calls = []
    with monkeypatch.context() as limited:
        limited.setattr(threading.Thread, "start", refused)
        assert asyncio.run(server.off_the_loop(lambda: calls.append("refused") or 1)) == 1
    assert asyncio.run(server.off_the_loop(lambda: calls.append("next") or 2)) == 2
    server.work.shutdown()
    assert calls == ["refused", "next"]


def _limited_address_space() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (250_000 * 1024, resource.getrlimit(resource.RLIMIT_AS)[1]))


def test_the_server_short_of_address_space_says_the_limit_and_no_traceback(tmp_path):
    """Under `ulimit -v 300000` a cold-cache check's threads could not start: the editor was
    shown "internal error: RuntimeError: can't start new thread" (and "cannot join thread before
    it is started"), standard error had the pool's thread's traceback (campaign 15, R06). It
    now checks, or says the limit to raise; standard error stays empty."""
    root = _workspace(tmp_path, configured=True)
    env = {**checkout_env(), "SGLANG_CONTRACTS_CACHE": str(tmp_path / "cache")}
    env.pop("SGLANG_CONTRACTS_DEBUG", None)
    server = subprocess.Popen([sys.executable, "-m", "sglang_contracts", "lsp"], cwd=root, env=env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              preexec_fn=_limited_address_space)
    try:
        server.stdin.write(lsp_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": from_fs_path(str(root)), "capabilities": {}}})
            + lsp_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        server.stdin.flush()
        said = _messages(server, lambda found: any(message.get("method") in {
            "window/showMessage", "textDocument/publishDiagnostics"} for message in found), TIMEOUT)
        server.stdin.write(lsp_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
                           + lsp_frame({"jsonrpc": "2.0", "method": "exit"}))
        server.stdin.flush()
        _, err = server.communicate(timeout=30)
    finally:
        server.kill()
    shown = [message["params"]["message"] for message in said if message.get("method") == "window/showMessage"]
    assert said and err == b"" and all("ulimit -v" in text and "internal error" not in text for text in shown), \
        (shown, err.decode(errors="replace")[:2000])


def _raw_server(tmp_path: Path, stderr: int) -> tuple[dict, subprocess.Popen]:
    """(an initialize request for `tmp_path`, a language server on raw pipes there)."""
    initialize = {"jsonrpc": "2.0", "id": 2, "method": "initialize",
                  "params": {"processId": None, "rootUri": from_fs_path(str(tmp_path)), "capabilities": {}}}
    server = subprocess.Popen([sys.executable, "-m", "sglang_contracts", "lsp"], cwd=tmp_path,
                              env={**checkout_env(), "SGLANG_CONTRACTS_CACHE": str(tmp_path / "cache")},
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
    return initialize, server


def _answers(server: subprocess.Popen, ids: set[int], timeout: float) -> dict[int, dict]:
    """id -> the server's answer, for each of `ids` it answers within `timeout` seconds."""
    messages = _messages(server, lambda found: ids <= {message.get("id") for message in found}, timeout)
    return {message["id"]: message for message in messages if message.get("id") in ids}


def _messages(server: subprocess.Popen, enough, timeout: float) -> list[dict]:
    """The server's messages until `enough(those so far)` holds, or for `timeout` seconds."""
    found: list[dict] = []
    buffer = b""
    deadline = time.monotonic() + timeout
    while not enough(found) and time.monotonic() < deadline:
        if not select.select([server.stdout], [], [], max(0.0, deadline - time.monotonic()))[0]:
            break
        chunk = os.read(server.stdout.fileno(), 65536)
        if not chunk:
            break
        buffer += chunk
        while b"\r\n\r\n" in buffer:
            head, rest = buffer.split(b"\r\n\r\n", 1)
            length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
            if len(rest) < length:
                break
            found.append(json.loads(rest[:length]))
            buffer = rest[length:]
    return found


@pytest.mark.parametrize("malformed", [
    lsp_frame({"jsonrpc": "2.0", "id": 1, "method": "sglang/unknown", "params": {}}, header=b"content-length"),
    lsp_frame({"jsonrpc": "2.0", "id": 1, "method": "sglang/unknown", "params": {}}, length_delta=-5),
    b"Content-Length: 999999999999\r\n\r\n{}",  # the server died of a MemoryError (second campaign)
], ids=["lowercase header", "length short of the body", "length no frame has"])
def test_after_a_malformed_frame_the_server_answers_the_next_request(tmp_path, malformed):
    initialize, server = _raw_server(tmp_path, stderr=subprocess.DEVNULL)
    try:
        server.stdin.write(malformed + lsp_frame(initialize))
        server.stdin.flush()
        answers = _answers(server, {2}, timeout=30)
        assert answers.get(2, {}).get("result", {}).get("serverInfo", {}).get("name") == "sglang-contracts"
    finally:
        server.kill()
        server.wait()


def _rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1))


def test_opening_and_closing_files_keeps_the_server_memory_flat(tmp_path):
    """Each handler's future was kept for good (ForgettingProtocol): 5.5 kB per didOpen and
    didClose, 11 MB over the 2000 pairs here."""
    server = subprocess.Popen([sys.executable, "-m", "sglang_contracts", "lsp"], cwd=tmp_path,
                              env={**checkout_env(), "SGLANG_CONTRACTS_CACHE": str(tmp_path / "cache")},
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    text = "import sglang\n" * 50
    asked = iter(range(1, 1000))

    def open_and_close(pairs: int) -> None:
        """`pairs` didOpen/didClose, then a request whose answer says they were all handled."""
        frames = []
        for version in range(pairs):
            uri = from_fs_path(str(tmp_path / f"m{version % 10}.py"))
            frames.append(lsp_frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
                "uri": uri, "languageId": "python", "version": version, "text": text}}}))
            frames.append(lsp_frame({"jsonrpc": "2.0", "method": "textDocument/didClose",
                                  "params": {"textDocument": {"uri": uri}}}))
        ask = next(asked)
        frames.append(lsp_frame({"jsonrpc": "2.0", "id": ask, "method": "textDocument/hover", "params": {
            "textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}}))
        server.stdin.write(b"".join(frames))
        server.stdin.flush()
        assert ask in _answers(server, {ask}, timeout=60)
        time.sleep(0.5)  # the check the last close scheduled (it cannot run: no release given)

    try:
        server.stdin.write(lsp_frame({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "processId": None, "rootUri": from_fs_path(str(tmp_path)), "capabilities": {}}}))
        server.stdin.write(lsp_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        open_and_close(500)  # every code path taken once: what it imports and caches is there
        before = _rss_kib(server.pid)
        open_and_close(2000)
        grown = _rss_kib(server.pid) - before
        assert grown < 3 * 1024, f"{grown} kB more after 2000 files opened and closed"
    finally:
        server.kill()
        server.wait()


def test_a_document_whose_uri_names_no_possible_file_stops_no_later_check(tmp_path):
    """One didOpen of `file:///tmp/a%00b.py` (a NUL no file name holds) stopped every later check
    of the server, with no word (second campaign): it is passed over, and an edit of a real file
    is checked as ever."""
    root = _workspace(tmp_path, configured=True)
    layers = root / "demo_omni" / "layers.py"
    uri, text = from_fs_path(str(layers)), layers.read_text()

    async def body(client: Client) -> None:
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri="file:///tmp/a%00b.py", language_id="python", version=1, text="x = 1\n")))
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
        await client.until(lambda: uri in client.diagnostics)
        opened = _codes(client.diagnostics[uri])
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(4, 0), types.Position(5, 0)), text="")]))
        await client.until(lambda: _codes(client.diagnostics[uri]) != opened)
        assert _codes(client.diagnostics[uri]) == [(4, "SGC103"), (7, "SGC104")]

    asyncio.run(_session(root, tmp_path / "cache", {}, body))


def test_the_unsaved_buffer_of_a_python_script_of_no_suffix_is_checked_as_a_py_buffer_is(tmp_path):
    """The command line judges an executable script whose first line names Python (bin/launch) as
    a `.py` file; the server checked it as saved, whatever the editor's buffer held (campaign 15, R07)."""
    root = _workspace(tmp_path, configured=True)
    launch, layers = root / "bin" / "launch", root / "demo_omni" / "layers.py"
    launch.parent.mkdir()
    launch.write_text("#!/usr/bin/env python3\nimport os\n")
    os.chmod(launch, 0o755)
    script, module = from_fs_path(str(launch)), from_fs_path(str(layers))

    async def body(client: Client) -> None:
        for uri, path in ((script, launch), (module, layers)):
            client.text_document_did_open(types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id="python", version=1, text=path.read_text())))
        await client.until(lambda: module in client.diagnostics)
        opened = _codes(client.diagnostics[module])
        # The script's buffer gains an import that breaks; then, so as to know when that check is
        # done, the module's buffer loses its own.
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=script, version=2),
            [types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(1, 0), types.Position(1, 0)),
                text="from sglang.srt.layers.quantization import get_quantization_config\n")]))
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=module, version=2),
            [types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(4, 0), types.Position(5, 0)), text="")]))
        await client.until(lambda: _codes(client.diagnostics[module]) != opened)
        # The two edits may be checked together or one after the other (a loaded machine): the
        # script's buffer is judged once the check that saw its edit is published.
        await client.until(lambda: _codes(client.diagnostics.get(script, [])) == [(2, "SGC102")])

    asyncio.run(_session(root, tmp_path / "cache", {}, body))


@pytest.mark.parametrize("body", [b"{}", b"[1]", b"{x", b'{"jsonrpc":"2.0","method":"\xff"}',
                                  b'{"jsonrpc": "2.0", "method": "textDocument/didOpen"}'],
                         ids=["empty object", "a list", "not JSON", "not UTF-8", "didOpen without params"])
def test_a_message_the_server_cannot_handle_is_one_log_line_and_no_popup(tmp_path, body):
    """Each put a traceback on the server's standard error and an "Error in server" popup in the
    editor (second campaign): one log line now, and the next request answered."""
    initialize, server = _raw_server(tmp_path, stderr=subprocess.PIPE)
    try:
        server.stdin.write(lsp_frame(initialize) + b"Content-Length: %d\r\n\r\n" % len(body) + body
                           + lsp_frame({**initialize, "id": 3}))
        server.stdin.flush()
        answers = _answers(server, {2, 3}, timeout=30)
        assert set(answers) == {2, 3}
    finally:
        server.kill()
        _, err = server.communicate()
    assert b"Traceback" not in err and b"Error in server" not in err


def test_a_diagnostic_links_to_its_rule_entry() -> None:
    """The code's link opens the rule (what it reports, what to do, its examples), not the
    general documentation the rule cites (Python's import system for SGC101)."""
    from sglang_contracts.diagnostics import finding_at
    from sglang_contracts.diagnostics.catalog import load_catalog
    from sglang_contracts.lsp.convert import ClientColumns, lsp_diagnostic

    found = finding_at("SGC101", "app/m.py", 1, 8, "sglang.srt.gone", module="sglang.srt.gone", hint="",
                       old="0.1.0", new="0.2.0")
    link = lsp_diagnostic(found, ClientColumns(["import sglang.srt.gone"], "utf-16")).code_description.href
    assert link == load_catalog()["SGC101"].source.resolve().as_uri() and link.endswith("/SGC101.toml")
    unknown = finding_at("SGC101", "app/m.py", 1, 8, "x", module="x", hint="", old="0.1.0", new="0.2.0")
    unknown_code = dataclasses.replace(unknown, code="SGC999")
    assert lsp_diagnostic(unknown_code, ClientColumns(["x"], "utf-16")).code_description is None


def test_the_noqa_action_edits_the_line_the_editor_numbers() -> None:
    """A line holding U+2028 or a form feed is one line to the editor (the protocol ends lines at
    \\n, \\r\\n and \\r alone): `# noqa` goes at the end of the finding's own line, not of a
    piece of an earlier one (ninth campaign, R08)."""
    from sglang_contracts.lsp.actions import code_actions

    text = "import os  # see\u2028the\x0cnotes\nfrom sglang.srt.gone import x\n"
    finding = types.Diagnostic(types.Range(types.Position(1, 28), types.Position(1, 29)), "gone", code="SGC102")
    (action,) = code_actions("file:///app/m.py", None, "m.py", text, [finding], "utf-16")
    (edit,) = action.edit.changes["file:///app/m.py"]
    assert (edit.range.start.line, edit.range.start.character, edit.new_text) == (1, 29, "  # noqa: SGC102")


# Characters a UTF-16 client counts as two units (and UTF-8 as four): an emoji, CJK extension B.
WIDE = "\U0001f600\U00020000"
ENCODINGS = {"utf-16": "utf-16-le", "utf-8": "utf-8", "utf-32": "utf-32-le"}


def _index(line: str, position: types.Position, encoding: str) -> int:
    """The str index of a position on `line`, its character counted in `encoding`'s code units."""
    codec = ENCODINGS[encoding]
    unit = len("a".encode(codec))
    return len(line.encode(codec)[:position.character * unit].decode(codec))


def _applied(line: str, edit: types.TextEdit, encoding: str) -> str:
    """`line` once an editor counting in `encoding` applies `edit` to it."""
    start, end = (_index(line, position, encoding) for position in (edit.range.start, edit.range.end))
    return line[:start] + edit.new_text + line[end:]


@pytest.mark.parametrize("encoding", list(ENCODINGS))
def test_columns_after_characters_outside_the_bmp_are_counted_in_the_clients_encoding(encoding) -> None:
    """The server announces the encoding pygls negotiated (UTF-16 unless the client offers
    another): the diagnostic's range and the `# noqa` edits count its units, not code points
    (campaign 10, R04: the edit landed inside the import, `import  # noqa: SGC102 x`)."""
    from sglang_contracts.diagnostics import finding_at
    from sglang_contracts.lsp.actions import code_actions
    from sglang_contracts.lsp.convert import ClientColumns, lsp_diagnostic

    lines = [f's = "{WIDE}é"; import sglang.srt.gone\n', f'x = ("{WIDE}",  # noqa: SGC101\n', f'     "{WIDE}")\n']
    text = "".join(lines)
    name = lines[0].index("sglang.srt.gone")
    found = finding_at("SGC101", "m.py", 1, name + 1, "sglang.srt.gone", module="sglang.srt.gone", hint="",
                       old="0.1.0", new="0.2.0")
    columns = ClientColumns(text.splitlines(), encoding)
    shown = lsp_diagnostic(found, columns).range
    assert [_index(lines[0], end, encoding) for end in (shown.start, shown.end)] \
        == [name, name + len("sglang.srt.gone")]
    # A span the check ends on a later line is counted on that line's text.
    spanning = lsp_diagnostic(dataclasses.replace(found, line=2, col=6, end_line=3, end_col=9), columns).range
    assert (_index(lines[1], spanning.start, encoding), _index(lines[2], spanning.end, encoding)) == (5, 8)

    diagnostics = [types.Diagnostic(shown, "gone", code="SGC101"), types.Diagnostic(spanning, "gone", code="SGC102")]
    edits = [action.edit.changes["file:///m.py"][0]
             for action in code_actions("file:///m.py", None, "m.py", text, diagnostics, encoding)]
    assert [_applied(line.rstrip("\n"), edit, encoding) for line, edit in zip(lines, edits)] \
        == [lines[0].rstrip("\n") + "  # noqa: SGC101", f'x = ("{WIDE}",  # noqa: SGC101,SGC102']


def test_a_line_of_any_length_between_frames_is_read_in_bounded_pieces() -> None:
    """A 300 MB line with no newline took the server's memory to 663 MB (third campaign D07): it
    is read in pieces and dropped, and the frame after it is read as it comes."""
    import io

    from sglang_contracts.lsp import frames

    class Counting(io.BytesIO):
        longest = 0

        def readline(self, size: int = -1) -> bytes:
            line = super().readline(size)
            Counting.longest = max(Counting.longest, len(line))
            return line

    body = b'{"jsonrpc": "2.0", "id": 9, "method": "shutdown"}'
    junk = b"a" * (5 * frames.MAX_LINE_BYTES + 17)
    stream = Counting(junk + b"Content-Length: %d\r\n\r\n" % len(body) + body
                      + junk + b"\r\n" + b"Content-Length: 2\r\n\r\n{}")
    reader = frames.FrameReader(stream)
    first = reader.readline() + reader.readline() + reader.read(len(body))
    assert first.endswith(body) and first.startswith(b"Content-Length: %d" % len(body))
    assert reader.readline() + reader.readline() + reader.read(2) == b"Content-Length: 2\r\n\r\n{}"
    assert Counting.longest <= frames.MAX_LINE_BYTES


def test_a_request_whose_params_do_not_decode_is_answered_with_an_error(tmp_path):
    """A hover or code action at line -1 was logged and never answered (sixth campaign M09): a
    client awaiting its id waited for good. JSON-RPC asks for an error response (-32602, invalid
    params) by the request's id; the next request is answered as ever."""
    initialize, server = _raw_server(tmp_path, stderr=subprocess.DEVNULL)
    uri = from_fs_path(str(tmp_path / "m.py"))
    hover = {"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover",
             "params": {"textDocument": {"uri": uri}, "position": {"line": -1, "character": 0}}}
    action = {"jsonrpc": "2.0", "id": 4, "method": "textDocument/codeAction", "params": {
        "textDocument": {"uri": uri}, "context": {"diagnostics": []},
        "range": {"start": {"line": -1, "character": 0}, "end": {"line": 0, "character": 0}}}}
    try:
        server.stdin.write(lsp_frame(initialize) + lsp_frame(hover) + lsp_frame(action) + lsp_frame({**initialize, "id": 5}))
        server.stdin.flush()
        answers = _answers(server, {2, 3, 4, 5}, timeout=30)
        assert set(answers) == {2, 3, 4, 5}
        assert answers[3]["error"]["code"] == answers[4]["error"]["code"] == -32602
        assert "result" in answers[5]
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize("body", [b"{oops", b'{"jsonrpc":"2.0","id":5,"method":"textDocument/hover","params":'
                                  + b'{"a":' * 50000 + b"1" + b"}" * 50001],
                         ids=["not JSON", "nested 50,000 deep"])
def test_a_body_that_is_not_json_is_answered_with_a_parse_error(tmp_path, body):
    """A body json cannot read (malformed, or nested deeper than it reads) was logged and never
    answered (seventh campaign, P15): JSON-RPC answers it with a Parse error (-32700) whose id
    is null, its own being unknowable; the next request is answered as ever."""
    initialize, server = _raw_server(tmp_path, stderr=subprocess.DEVNULL)
    try:
        server.stdin.write(lsp_frame(initialize) + b"Content-Length: %d\r\n\r\n" % len(body) + body
                           + lsp_frame({**initialize, "id": 3}))
        server.stdin.flush()
        answers = _answers(server, {None, 2, 3}, timeout=30)
        assert set(answers) == {None, 2, 3}
        assert answers[None]["error"]["code"] == -32700 and "result" in answers[3]
    finally:
        server.kill()
        server.wait()


def test_a_request_after_shutdown_is_answered_with_an_error(tmp_path):
    """pygls logged "No more requests!" and answered nothing (M09's class): the LSP asks for an
    error (-32600, invalid request) to each request after `shutdown`."""
    initialize, server = _raw_server(tmp_path, stderr=subprocess.DEVNULL)
    shutdown = {"jsonrpc": "2.0", "id": 3, "method": "shutdown"}
    hover = {"jsonrpc": "2.0", "id": 4, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": from_fs_path(str(tmp_path / "m.py"))}, "position": {"line": 0, "character": 0}}}
    try:
        server.stdin.write(lsp_frame(initialize) + lsp_frame(shutdown) + lsp_frame(hover))
        server.stdin.flush()
        answers = _answers(server, {2, 3, 4}, timeout=30)
        assert set(answers) == {2, 3, 4}
        assert answers[4]["error"]["code"] == -32600
    finally:
        server.kill()
        server.wait()


def test_the_open_files_of_a_second_workspace_folder_are_said_unchecked_never_clean(tmp_path):
    """In a multi-root workspace only the first folder is checked, and the open files of the
    second were published with no diagnostics, "no problems", though their contracts broke
    (campaign 15, R16): they are told unchecked, once, and nothing is published for them."""
    old = upstream_tree(tmp_path / "old", {"sglang/srt/a.py": "def f(a, b=1):\n    return a\n"}, "1.0.0")
    new = upstream_tree(tmp_path / "new", {"sglang/srt/a.py": "def f(a):\n    return a\n"}, "1.0.1")
    breaking = "from sglang.srt.a import f\nf(1, b=2)\n"
    uris = {}
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "pyproject.toml").write_text(
            f'[project]\nname = "{name}"\n[tool.sglang-contracts]\nold = "{old}"\nnew = "{new}"\n')
        (tmp_path / name / "m.py").write_text(breaking)
        uris[name] = from_fs_path(str(tmp_path / name / "m.py"))
    initialize, server = _raw_server(tmp_path, stderr=subprocess.DEVNULL)
    initialize["params"]["workspaceFolders"] = [{"uri": from_fs_path(str(tmp_path / name)), "name": name}
                                                for name in ("a", "b")]
    opened = [{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uris[name], "languageId": "python", "version": 1, "text": breaking}}} for name in ("a", "b")]
    try:
        server.stdin.write(b"".join(lsp_frame(message) for message in [
            initialize, {"jsonrpc": "2.0", "method": "initialized", "params": {}}, *opened]))
        server.stdin.flush()

        def published(found: list[dict], name: str) -> list[dict]:
            return [m for m in found if m.get("method") == "textDocument/publishDiagnostics"
                    and m["params"]["uri"] == uris[name]]

        messages = _messages(server, lambda found: published(found, "a") and any(
            m.get("method") == "window/showMessage" for m in found), timeout=120)
        time.sleep(1)
        messages += _messages(server, lambda found: False, timeout=1)
        assert [d["code"] for d in published(messages, "a")[-1]["params"]["diagnostics"]] == ["SGC201"]
        assert published(messages, "b") == []
        told = [m["params"]["message"] for m in messages if m.get("method") == "window/showMessage"]
        assert len(told) == 1 and str(tmp_path / "b") in told[0] and "not checked" in told[0], told
    finally:
        server.kill()
        server.wait()


def test_a_code_action_for_a_file_out_of_the_project_reads_and_edits_nothing(tmp_path):
    """A client's code action for another file, with the project's diagnostics copied onto it,
    read that file (`file:///etc/passwd`) and answered a `# noqa` edit of it; for a file that is
    not there, an internal error and a traceback (campaign 15, R15); for a file of the workspace
    that is a link to itself, the same (campaign 17, R09)."""
    root = tmp_path / "p"
    (root / "app").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (root / "app" / "loop.py").symlink_to("loop.py")
    secret = tmp_path / "secret.txt"
    secret.write_text("password\n" * 3)
    initialize, server = _raw_server(tmp_path, stderr=subprocess.PIPE)
    initialize["params"]["rootUri"] = from_fs_path(str(root))
    ours = {"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 4}},
            "message": "x", "source": "sglang-contracts", "code": "SGC201", "severity": 1}
    asks = [{"jsonrpc": "2.0", "id": 10 + n, "method": "textDocument/codeAction", "params": {
        "textDocument": {"uri": uri}, "range": ours["range"], "context": {"diagnostics": [ours]}}}
        for n, uri in enumerate([from_fs_path(str(secret)), from_fs_path(str(root / ".." / "gone.toml")),
                                 from_fs_path(str(root / "app" / "gone.py")), from_fs_path(str(root / "app" / "loop.py"))])]
    try:
        server.stdin.write(b"".join(lsp_frame(message) for message in [initialize, *asks]))
        server.stdin.flush()
        answers = _answers(server, {10, 11, 12, 13}, timeout=60)
        assert {n: (answer.get("result"), answer.get("error")) for n, answer in answers.items() if n >= 10} == \
            {10: ([], None), 11: ([], None), 12: ([], None), 13: ([], None)}
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize("shut_down", [True, False], ids=["shutdown-then-exit", "exit-alone"])
def test_the_server_exits_1_when_told_to_exit_without_a_shutdown(tmp_path, shut_down):
    """The LSP asks for status 1 after an `exit` no `shutdown` came before (an editor tells a
    server that died from one it stopped by it); the server said 0 whatever came (campaign 15,
    R03)."""
    initialize, server = _raw_server(tmp_path, stderr=subprocess.DEVNULL)
    shutdown = {"jsonrpc": "2.0", "id": 3, "method": "shutdown"}
    try:
        server.stdin.write(lsp_frame(initialize) + (lsp_frame(shutdown) if shut_down else b""))
        server.stdin.flush()
        assert set(_answers(server, {2, 3} if shut_down else {2}, timeout=30)) == ({2, 3} if shut_down else {2})
        server.stdin.write(lsp_frame({"jsonrpc": "2.0", "method": "exit"}))
        server.stdin.flush()
        assert server.wait(timeout=30) == (0 if shut_down else 1)
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize("redirection", ["<&-", "0>written"], ids=["closed", "write-only"])
def test_a_server_with_no_standard_input_to_read_is_one_error_line(tmp_path, redirection):
    """Started with standard input closed (`<&-`, a daemonised launcher) the server died of an
    AttributeError on None's `buffer` (campaign 13, R09); opened for writing only, of an OSError
    at its first read: both an internal error. Each is now one line saying so, exit 2."""
    done = subprocess.run(["sh", "-c", f'"$@" {redirection}', "sh", sys.executable, "-m", "sglang_contracts", "lsp"],
                          cwd=tmp_path, env={**checkout_env(), "SGLANG_CONTRACTS_CACHE": str(tmp_path / "cache")},
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=TIMEOUT)
    assert done.returncode == 2
    assert re.fullmatch(r"sglang-contracts: error: [^\n]*standard input[^\n]*\n", done.stderr), done.stderr
