"""Real cases of issue 12's signature causes: sglang-omni 0.1.9 on its live bump 0.5.22 -> 0.5.23."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from downloads import download_sdist
from sglang_contracts.cli import main


@pytest.fixture(scope="module")
def omni_019(real_cache: Path) -> Path:
    return download_sdist("sglang-omni", "0.1.9", real_cache)


def run_json(capsys, project: Path, monkeypatch, *args: str) -> list[dict]:
    monkeypatch.chdir(project)
    main(["check", "--format", "json", *args])
    return json.loads(capsys.readouterr().out)


def test_omni_019_bump_to_0523_reports_prefill_load_batch_overrides_that_return_the_old_shape(
        capsys, monkeypatch, omni_019: Path) -> None:
    """PrefillCudaGraphRunner.load_batch returns (batch, shared_read_ends) in 0.5.23 and execute
    unpacks it; omni's two overrides return the batch: every prefill graph replay raises. The
    Whisper runner overrides execute too, but hands on to super().execute, which unpacks."""
    diagnostics = run_json(capsys, omni_019, monkeypatch, "--new", "0.5.23", "--select", "SGC208,SGC204,SGC207")
    found = {(d["path"], d["line"], d["code"]) for d in diagnostics}
    assert ("sglang_omni/model_runner/request_id_prefill_cuda_graph_runner.py", 16, "SGC208") in found
    assert ("sglang_omni/model_runner/whisper_prefill_cuda_graph_runner.py", 74, "SGC208") in found
    # And each override sets attributes on what super().load_batch returns, now a tuple (issue 33, section 3).
    assert ("sglang_omni/model_runner/request_id_prefill_cuda_graph_runner.py", 21, "SGC207") in found
    assert ("sglang_omni/model_runner/whisper_prefill_cuda_graph_runner.py", 79, "SGC207") in found
    for item in diagnostics:
        if item["code"] == "SGC207":
            assert "load_batch() returns a tuple of 2 in sglang 0.5.23 (a ForwardBatch in 0.5.22)" in item["message"]
    for item in diagnostics:
        if item["code"] == "SGC208":
            assert item["severity"] == "error"
            assert "PrefillCudaGraphRunner.execute unpacks it into 2 names" in item["message"]
    # ForwardBatch.logical_forward_mode is a property in 0.5.23, not a new required field.
    assert not [d for d in diagnostics if d["code"] == "SGC204" and "logical_forward_mode" in d["message"]]
    assert not [d for d in diagnostics if d["path"].endswith("fishaudio_drama3/first_frame_graphs.py")]
