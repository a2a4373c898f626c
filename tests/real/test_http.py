"""The HTTP contracts, and source probes kept as data, on real sglang wheels (cached downloads):
the routes and request shapes read from each release, and small trees in miles' and slime's
shapes (written here, not copied) that meet real changes: `data_parallel_rank` (gone in 0.5.15),
a renamed required LoRA key (0.5.18), `/get_weight_version` (gone in 0.5.21), and a
source-patcher `match` that 0.5.16's Qwen3MoeDecoderLayer.forward no longer contains."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.helpers import write_tree
from sglang_contracts.infra.cache import RecordCache
from sglang_contracts.check.runner import CheckOptions, run_check
from sglang_contracts.sources import open_release
from sglang_contracts.upstream.http import http_api
from sglang_contracts.upstream.model import UpstreamModel

pytestmark = pytest.mark.network  # real releases and projects, downloaded once into the test cache

ROLLOUT = '''"""Rollout against the sglang router (the shape of miles' sglang_rollout.generate)."""
import aiohttp


async def generate(args, sample, sampling_params, dp_rank):
    url = f"http://{args.sglang_router_ip}:{args.sglang_router_port}/generate"
    payload = {
        "input_ids": sample.tokens,
        "sampling_params": sampling_params,
        "return_logprob": True,
    }
    payload["data_parallel_rank"] = dp_rank
    sampling_params["no_stop_trim"] = True
    async with aiohttp.ClientSession() as session:
        async with session.post(url, json=payload) as response:
            return await response.json()
'''
ENGINE = '''"""Weight updates over sglang's HTTP API (the shape of miles' SGLangEngine)."""
import requests


class Engine:
    def _make_request(self, endpoint, payload=None):
        url = f"http://{self.server_host}:{self.server_port}/{endpoint}"
        return requests.post(url, json=payload or {}).json()

    def update_weights_from_tensor(self, tensors, load_format=None, flush_cache=False, weight_version=None):
        payload = {"serialized_named_tensors": tensors, "load_format": load_format, "flush_cache": flush_cache}
        if weight_version is not None:
            payload["weight_version"] = weight_version
        return self._make_request("update_weights_from_tensor", payload)

    def pause(self):
        return self._make_request("pause_generation", {"mode": "abort"})
'''


def _model(version: str, cache: Path) -> UpstreamModel:
    return UpstreamModel(open_release(version, sglang_repo=None, cache=cache), RecordCache(None))


def test_routes_and_request_shapes_are_read_from_real_releases(real_cache: Path) -> None:
    old, new = http_api(_model("0.5.14", real_cache)), http_api(_model("0.5.15", real_cache))
    for api in (old, new):
        assert 60 <= len(api.routes) <= 120
        (generate,) = api.route_for("/generate")
        assert generate.methods == ("POST", "PUT") and generate.body == "model"
        paths = {route.path for route in api.routes}
        assert {"/update_weights_from_tensor", "/flush_cache", "/health_generate", "/v1/loads"} <= paths
        (corpus,) = api.route_for("/add_external_corpus")
        assert corpus.body == "construct"  # AddExternalCorpusReqInput(**(await request.json()))
        sampling = api.sampling_shape()
        assert {"max_new_tokens", "temperature", "no_stop_trim", "sampling_seed"} <= set(sampling.fields)
        assert not sampling.open  # neither an __init__ with **kwargs (0.5.14) nor a msgspec struct (0.5.15) takes more
    old_generate = old.request_shape(old.route_for("/generate")[0])
    new_generate = new.request_shape(new.route_for("/generate")[0])
    assert "data_parallel_rank" in old_generate.fields and "data_parallel_rank" not in new_generate.fields
    assert old_generate.aliases["data_parallel_rank"] == "routed_dp_rank"  # 0.5.14 copied it over
    assert {"routed_dp_rank", "sampling_params", "return_logprob", "input_ids"} <= set(new_generate.fields)
    # 0.5.15 made the weight-update requests msgspec structs deriving from BaseReq: their own
    # fields are still read, and the payload miles posts is still accepted whole.
    for api in (old, new):
        tensor = api.request_shape(api.route_for("/update_weights_from_tensor")[0])
        assert {"serialized_named_tensors", "load_format", "flush_cache", "weight_version"} <= set(tensor.fields)
    assert new.request_shape(new.route_for("/update_weights_from_tensor")[0]).fields["serialized_named_tensors"]


def test_a_rollout_still_routing_with_data_parallel_rank(tmp_path: Path, real_cache: Path) -> None:
    project = write_tree(tmp_path / "rollout", {"pyproject.toml": "[project]\nname = 'miles'\n",
                                                "miles/rollout/sglang_rollout.py": ROLLOUT,
                                                "miles/backends/sglang_engine.py": ENGINE})
    options = CheckOptions(old="0.5.14", new="0.5.15", cache_dir=real_cache, workers=1)
    found = [(d.path, d.line, d.code, d.severity) for d in run_check([project], options).diagnostics]
    assert found == [("miles/rollout/sglang_rollout.py", 12, "SGC1103", "warning")]
    (message,) = [d.message for d in run_check([project], options).diagnostics]
    assert "data_parallel_rank" in message and "routed_dp_rank" in message

    # The silent control: the same tree routing with routed_dp_rank reports nothing.
    (project / "miles" / "rollout" / "sglang_rollout.py").write_text(ROLLOUT.replace("data_parallel_rank", "routed_dp_rank"))
    assert run_check([project], options).diagnostics == []


LORA = '''"""LoRA pushes over sglang's HTTP API."""
import requests


def push_adapter(host, port, name, config, tensors):
    payload = {"lora_name": name, "config_dict": config, "serialized_tensors": tensors}
    return requests.post(f"http://{host}:{port}/load_lora_adapter_from_tensors", json=payload).json()
'''


def test_a_renamed_required_key_of_a_real_request(tmp_path: Path, real_cache: Path) -> None:
    """0.5.18 renamed LoadLoRAAdapterFromTensorsReqInput.serialized_tensors (required) to
    serialized_named_tensors (required): FastAPI drops the old key and refuses the body (422):
    one break, one error at the key, not "silently ignored" beside a missing-key SGC1104."""
    project = write_tree(tmp_path / "lora", {"pyproject.toml": "[project]\nname = 'app'\n", "app/lora.py": LORA})
    options = CheckOptions(old="0.5.16", new="0.5.18", cache_dir=real_cache, workers=1)
    found = run_check([project], options).diagnostics
    assert [(d.line, d.col, d.code, d.severity) for d in found] == [(6, 58, "SGC1103", "error")]
    assert "the request is rejected, since it now requires serialized_named_tensors" in found[0].message
    (project / "app" / "lora.py").write_text(LORA.replace("serialized_tensors", "serialized_named_tensors"))
    assert run_check([project], dataclasses.replace(options, old="0.5.18")).diagnostics == []
    # ... and, sent to 0.5.16, the new name was not accepted there: no contract held, nothing to report.
    assert run_check([project], options).diagnostics == []


VERSIONS = '''"""The engine's weight version, read from the sglang server (the shape of slime's SGLangEngine)."""
import requests


class Engine:
    def get_weight_version(self):
        url = f"http://{self.server_host}:{self.server_port}/get_weight_version"
        response = requests.get(url)
        return response.json()["weight_version"]
'''


def test_a_route_the_real_server_dropped(tmp_path: Path, real_cache: Path) -> None:
    """0.5.21 dropped GET /get_weight_version (and /weight_version); /model_info still serves it."""
    project = write_tree(tmp_path / "engine", {"pyproject.toml": "[project]\nname = 'slime'\n",
                                               "slime/sglang_engine.py": VERSIONS})
    options = CheckOptions(old="0.5.20", new="0.5.21", cache_dir=real_cache, workers=1)
    found = [(d.line, d.col, d.code, d.severity) for d in run_check([project], options).diagnostics]
    assert found == [(7, 15, "SGC1101", "error")]
    (project / "slime" / "sglang_engine.py").write_text(VERSIONS.replace("/get_weight_version", "/model_info"))
    assert run_check([project], options).diagnostics == []


DUMPER = '''"""Source-patcher configs for the dumper tests (the shape of miles' conftest_dumper)."""

SGLANG_PATCHER_YAML = """\\
patches:
  - target: sglang.srt.models.qwen3_moe.Qwen3MoeDecoderLayer.forward
    edits:
      - match: |
          hidden_states = self.mlp(
              hidden_states, forward_batch, should_allreduce_fusion, use_reduce_scatter
          )
        append: "dumper.dump('mlp_output', hidden_states)"
"""
'''


def test_a_source_patcher_match_that_upstream_rewrote(tmp_path: Path, real_cache: Path) -> None:
    project = write_tree(tmp_path / "dumper", {"pyproject.toml": "[project]\nname = 'miles'\n",
                                               "tests/conftest_dumper.py": DUMPER})
    options = CheckOptions(old="0.5.15", new="0.5.16", cache_dir=real_cache, workers=1, select=["SGC6"])
    found = [(d.line, d.col, d.code) for d in run_check([project], options).diagnostics]
    assert found == [(7, 9, "SGC603")]
    fixed = DUMPER.replace("""|
          hidden_states = self.mlp(
              hidden_states, forward_batch, should_allreduce_fusion, use_reduce_scatter
          )""", '"hidden_states = self.mlp(hidden_states, forward_batch)"')
    (project / "tests" / "conftest_dumper.py").write_text(fixed)
    assert run_check([project], options).diagnostics == []
