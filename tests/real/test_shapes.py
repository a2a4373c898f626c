"""Return shapes on real releases (issue 33, section 3): the upstream fact is checked on the
real wheels first, then that a project shaped like the issue's is reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sglang_contracts.cli import main
from sglang_contracts.infra.cache import RecordCache
from sglang_contracts.sources import open_release
from sglang_contracts.upstream.model import UpstreamModel

pytestmark = pytest.mark.network  # real releases and projects, downloaded once into the test cache


def model(version: str, cache: Path) -> UpstreamModel:
    return UpstreamModel(open_release(version, sglang_repo=None, cache=cache), RecordCache(None))


def check_one_file(tmp_path: Path, capsys, monkeypatch, name: str, text: str, *arguments: str) -> list[dict]:
    """The JSON findings of `check` on a project of one file, app/<name>."""
    project = tmp_path / "project"
    (project / "app").mkdir(parents=True)
    (project / "app" / name).write_text(text)
    monkeypatch.chdir(project)
    main(["check", "--format", "json", *arguments])
    return json.loads(capsys.readouterr().out)


WORKER = '''from sglang.srt.model_executor.model_runner import ModelRunner


class OverlapWorker:
    def __init__(self, model_runner: ModelRunner):
        self.model_runner = model_runner

    def forward_idle(self, forward_batch):
        logits_output, _ = self.model_runner.forward(forward_batch)
        return logits_output

    def can_run_graph(self, forward_batch):
        return self.model_runner.forward(forward_batch)[1]
'''


def test_model_runner_forward_became_a_model_runner_output_in_0_5_7(tmp_path: Path, real_cache: Path,
                                                                    capsys, monkeypatch) -> None:
    """0.5.6's ModelRunner.forward returns `Tuple[Union[LogitsProcessorOutput, PPProxyTensors], bool]`;
    0.5.7's returns the dataclass ModelRunnerOutput(logits_output, can_run_graph, ...), which
    cannot be unpacked or indexed: tp_worker's own `logits_output, _ = self.model_runner.forward(...)`
    became `.logits_output` reads in 0.5.7."""
    old, new = model("0.5.6", real_cache), model("0.5.7", real_cache)
    path = "sglang.srt.model_executor.model_runner.ModelRunner"
    before, after = old.resolve_class(path), new.resolve_class(path)
    assert old.member(before, "forward").record.get("shape") == 2
    now = new.member(after, "forward").record
    assert now.get("shape") is None and now["annotation"] == "ModelRunnerOutput"
    output = new.resolve_class("sglang.srt.model_executor.model_runner.ModelRunnerOutput")
    assert new.class_record(output)["fields"][0][0] == "logits_output"
    assert old.resolve_class("sglang.srt.model_executor.model_runner.ModelRunnerOutput") is None

    found = check_one_file(tmp_path, capsys, monkeypatch, "worker.py", WORKER,
                           "--old", "0.5.6", "--new", "0.5.7", "--select", "SGC2")
    assert [(d["path"], d["line"], d["col"], d["code"], d["severity"]) for d in found] == [
        ("app/worker.py", 9, 46, "SGC207", "error"), ("app/worker.py", 13, 34, "SGC207", "error")]
    assert "returns a ModelRunnerOutput in sglang 0.5.7 (a tuple of 2 in 0.5.6): unpacking it into 2 names" \
        in found[0]["message"]
    assert "indexing it raises TypeError" in found[1]["message"]


SERVER = '''from sglang.srt.entrypoints.http_server import _launch_subprocesses


class AsyncSglangServer:
    def launch_server(self, server_args):
        self.tokenizer_manager, self.template_manager, self.scheduler_info = _launch_subprocesses(
            server_args=server_args)
'''


def test_launch_subprocesses_returns_four_values_under_a_stale_annotation_in_0_5_5(
        tmp_path: Path, real_cache: Path, capsys, monkeypatch) -> None:
    """0.5.5's `_launch_subprocesses` is still annotated `Tuple[TokenizerManager, TemplateManager,
    Dict]`, but every `return` of it is a 4-tuple display (`..., port_args`): verl's three-name
    unpack (async_sglang_server.py at ab25997bc^) raises ValueError on 0.5.5."""
    old, new = model("0.5.2", real_cache), model("0.5.5", real_cache)
    path = "sglang.srt.entrypoints.engine._launch_subprocesses"
    assert old.callable_record(path)["shape"] == 3
    record = new.callable_record(path)
    assert record["annotation"] == "Tuple[TokenizerManager, TemplateManager, Dict]" and record["shape"] == 4

    found = check_one_file(tmp_path, capsys, monkeypatch, "server.py", SERVER,
                           "--old", "0.5.2", "--new", "0.5.5", "--select", "SGC207")
    assert [(d["path"], d["line"], d["code"], d["severity"]) for d in found] == [("app/server.py", 6, "SGC207", "error")]
    assert "returns a tuple of 4 in sglang 0.5.5 (a tuple of 3 in 0.5.2): unpacking it into 3 names raises ValueError" \
        in found[0]["message"]
