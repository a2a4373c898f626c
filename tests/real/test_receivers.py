"""Receivers no annotation types, on real releases (issue 33, section 1): each test checks the
upstream fact on the real wheels first, then that a project shaped like the issue's is reported."""

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


def run_json(capsys, monkeypatch, project: Path, *args: str) -> list[dict]:
    monkeypatch.chdir(project)
    main(["check", "--format", "json", *args])
    return json.loads(capsys.readouterr().out)


SCHEDULER = '''from sglang.srt.managers.schedule_batch import ScheduleBatch


class OmniScheduler:
    def get_new_batch_prefill(self, can_run_list):
        new_batch = ScheduleBatch.init_new(
            can_run_list, self.req_to_token_pool, self.token_to_kv_pool_allocator, self.tree_cache,
            self.model_config, self.enable_overlap, self.spec_algorithm,
        )
        new_batch.prepare_for_extend()
        return new_batch.get_model_worker_batch()
'''


def test_a_batch_from_schedule_batch_init_new_lost_get_model_worker_batch(tmp_path: Path, real_cache: Path,
                                                                         capsys, monkeypatch) -> None:
    """0.5.13 removed ScheduleBatch.get_model_worker_batch; init_new, a classmethod with no return
    annotation, builds `batch = cls(...)` and returns it, so only inference types the receiver."""
    old, new = model("0.5.12", real_cache), model("0.5.13", real_cache)
    path = "sglang.srt.managers.schedule_batch.ScheduleBatch"
    before, after = old.resolve_class(path), new.resolve_class(path)
    init_new = old.member(before, "init_new")
    assert init_new.kind == "method" and "classmethod" in init_new.record["decorators"]
    assert not init_new.record.get("returns")  # nothing annotates what it returns
    assert old.member(before, "get_model_worker_batch") is not None
    assert new.member(after, "get_model_worker_batch") is None
    assert new.member(after, "prepare_for_extend") is not None

    project = tmp_path / "project"
    (project / "app").mkdir(parents=True)
    (project / "app" / "scheduler.py").write_text(SCHEDULER)
    found = run_json(capsys, monkeypatch, project, "--old", "0.5.12", "--new", "0.5.13")
    assert [(d["path"], d["line"], d["col"], d["code"], d["severity"]) for d in found] == [
        ("app/scheduler.py", 11, 26, "SGC321", "error")]
    assert "ScheduleBatch.get_model_worker_batch (method) no longer exists" in found[0]["message"]


OFFLOAD = '''from sglang.srt.torch_memory_saver_adapter import TorchMemorySaverAdapter


def release_memory_occupation(server_args):
    adapter = TorchMemorySaverAdapter.create(enable=server_args.enable_memory_saver)
    adapter.check_validity(caller_name="release_memory_occupation")
    adapter.pause()


def resume_memory_occupation(server_args):
    TorchMemorySaverAdapter.create(enable=server_args.enable_memory_saver).resume()
'''


def test_torch_memory_saver_adapter_create_pause_gained_tag(tmp_path: Path, real_cache: Path, capsys,
                                                            monkeypatch) -> None:
    """0.4.8 gave TorchMemorySaverAdapter's pause and resume a required `tag`; `create` is a
    staticmethod with no return annotation that returns one of two private subclasses."""
    old, new = model("0.4.7", real_cache), model("0.4.8", real_cache)
    path = "sglang.srt.torch_memory_saver_adapter"
    for release, params in ((old, ()), (new, ("tag",))):
        create = release.member(release.resolve_class(f"{path}.TorchMemorySaverAdapter"), "create")
        assert "staticmethod" in create.record["decorators"] and not create.record.get("returns")
        for name in ("_TorchMemorySaverAdapterReal", "_TorchMemorySaverAdapterNoop"):
            for method in ("pause", "resume"):
                member = release.member(release.resolve_class(f"{path}.{name}"), method)
                assert tuple(p[0] for p in release.method_signature(member, bound=True).params) == params

    project = tmp_path / "project"
    (project / "app").mkdir(parents=True)
    (project / "app" / "offload.py").write_text(OFFLOAD)
    found = run_json(capsys, monkeypatch, project, "--old", "0.4.7", "--new", "0.4.8")
    assert [(d["path"], d["line"], d["col"], d["code"], d["severity"]) for d in found] == [
        ("app/offload.py", 7, 13, "SGC202", "error"), ("app/offload.py", 11, 76, "SGC202", "error")]
    assert all("requires argument tag" in d["message"] for d in found)
