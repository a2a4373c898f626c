"""Monkeypatch, ServerArgs, test-double and defensive-access contracts on real releases:
sglang wheels 0.5.19 (the dataclass ServerArgs) and 0.5.21 to 0.5.23 (namespace structs),
and the sglang-omni 0.1.8/0.1.9 sdists (cached downloads, see tests/downloads.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.downloads import download_sdist
from sglang_contracts.infra.cache import RecordCache
from sglang_contracts.cli import main
from sglang_contracts.contracts.base import CheckContext
from sglang_contracts.contracts.monkeypatches import _from_importers, patches
from sglang_contracts.check.runner import CheckOptions, run_check
from sglang_contracts.sources import open_release
from sglang_contracts.upstream.model import UpstreamModel
from sglang_contracts.upstream.serverargs import server_args_fields

pytestmark = pytest.mark.network  # real releases and projects, downloaded once into the test cache


def model(version: str, cache: Path) -> UpstreamModel:
    return UpstreamModel(open_release(version, sglang_repo=None, cache=cache), RecordCache(None))


def test_server_args_fields_are_read_in_both_shapes(real_cache: Path) -> None:
    sets = {version: server_args_fields(model(version, real_cache)) for version in ("0.5.19", "0.5.21", "0.5.22", "0.5.23")}
    assert sets["0.5.19"].shape == "dataclass"
    assert {sets[v].shape for v in ("0.5.21", "0.5.22", "0.5.23")} == {"namespaces"}
    for field_set in sets.values():  # "450 to 570 fields"
        assert 450 <= len(field_set) <= 600
        assert {"model_path", "mem_fraction_static", "tp_size"} <= set(field_set.fields)
    assert sets["0.5.21"].fields["mem_fraction_static"].owner == "sglang.srt.arg_groups.fields.schedule.Schedule"
    assert sets["0.5.19"].fields["mem_fraction_static"].owner == "sglang.srt.server_args.ServerArgs"
    # what each release removed (SGLANG-FACTS.md), and nothing it kept
    assert "cuda_graph_tc_compiler" in sets["0.5.21"] and "cuda_graph_tc_compiler" not in sets["0.5.22"]
    assert "speculative_skip_dp_mlp_sync" in sets["0.5.22"] and "speculative_skip_dp_mlp_sync" not in sets["0.5.23"]
    assert set(sets["0.5.22"].fields) - set(sets["0.5.23"].fields) == {"speculative_skip_dp_mlp_sync"}


@pytest.mark.parametrize("server_args", [
    "ServerArgs = build_server_args_somehow()\n",
    "class ServerArgs:\n    def __init__(self, tp_size: int = 1):\n        self.tp_size = tp_size\n",
])
def test_a_server_args_without_fields_is_one_finding_saying_so(tmp_path: Path, capsys, monkeypatch,
                                                               server_args: str) -> None:
    upstream = tmp_path / "upstream" / "sglang"
    (upstream / "srt").mkdir(parents=True)
    (upstream / "__init__.py").write_text("")
    (upstream / "version.py").write_text('__version__ = "9.9.9"\n')
    (upstream / "srt" / "server_args.py").write_text(server_args)
    project = tmp_path / "project"
    (project / "app").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'app'\n")
    (project / "app" / "run.py").write_text(
        "from sglang.srt.server_args import ServerArgs\n\ndef f(a: ServerArgs):\n    return a.tp_size\n\n"
        "def g():\n    from sglang.srt.server_args import ServerArgs\n    return ServerArgs().tp_size\n")
    monkeypatch.chdir(project)
    status = main(["check", "--old", str(upstream.parent), "--new", str(upstream.parent), "--no-cache"])
    out, err = capsys.readouterr()
    label = f"sglang at {upstream.parent}"  # once, though both sides are this release
    assert (status, out, err) == (1, f"app/run.py:1:36: SGC000 cannot read the ServerArgs fields of {label} "
                                     "(sglang.srt.server_args.ServerArgs is neither a dataclass nor namespaces "
                                     "assembled by collect_input_fields); the contracts with its fields are not "
                                     "checked\n", "")


@pytest.mark.parametrize(("version", "old", "new"), [("0.1.8", "0.5.21", "0.5.22"), ("0.1.9", "0.5.22", "0.5.23")])
def test_omni_vendor_patches_are_found_and_checked(real_cache: Path, version: str, old: str, new: str) -> None:
    omni = download_sdist("sglang-omni", version, real_cache)
    result = run_check([omni], CheckOptions(old=old, new=new, select=["SGC4"], cache_dir=real_cache))
    found = {(p.facts.path, p.dotted): p for p in patches(CheckContext(result.project, result.old, result.new))}
    norm = found["sglang_omni/vendor/sglang/layers.py", "sglang.srt.layers.layernorm.RMSNorm.forward_cuda"]
    qk = found["sglang_omni/vendor/sglang/models.py", "sglang.srt.models.utils.apply_qk_norm"]
    for patch, replacement in ((norm, "_patched_forward_cuda"), (qk, "apply_qk_norm")):
        assert patch.old.callable and patch.new.callable  # a method and a function in both releases
        assert patch.replacement is not None and patch.replacement.name == replacement
        assert len(patch.original_calls) == 1  # `_orig_...(...)` inside the replacement
    codes = {(d.path, d.code) for d in result.diagnostics}
    # Both replacements take **kwargs or the full signature: nothing about their parameters.
    assert not {c for c in codes if c[1] == "SGC402" and c[0].startswith("sglang_omni/vendor/")}
    if version == "0.1.8":  # 0.5.22 edited RMSNorm.forward_cuda: the patch must be re-read
        (message,) = [d.message for d in result.diagnostics
                      if d.code == "SGC403" and d.path == "sglang_omni/vendor/sglang/layers.py"]
        assert message.startswith("RMSNorm.forward_cuda, which the project patches, changed its body in sglang 0.5.22")
    else:
        # 0.5.23 added sglang/srt/models/beam.py, which binds apply_qk_norm by a module-level
        # from-import; a module new in the release that omni does not import is no bypass of its
        # patch, and the modules that from-imported it in 0.5.22 already are no news (issue 12).
        assert not [d for d in result.diagnostics if d.code == "SGC404"]
        path = "sglang.srt.models.utils.apply_qk_norm"
        assert "sglang.srt.models.beam" in _from_importers(result.new, [path])[path]


REAL_TESTS = {
    "app/__init__.py": "",
    "app/vendor.py": "from sglang.srt.layers import layer_boundary\nfrom sglang.srt.layers.layernorm import RMSNorm\n",
    "app/serving.py": (
        "from sglang.srt.server_args import ServerArgs\n\n"
        "def compiler(server_args: ServerArgs):\n"
        "    return server_args.cuda_graph_max_bs, getattr(server_args, 'cuda_graph_tc_compiler', None)\n"
    ),
    "tests/test_real_targets.py": (
        "from unittest import mock\n\n"
        "from sglang.srt.layers.layernorm import RMSNorm\n"
        "from sglang.srt.server_args import ServerArgs\n\n"
        "class FakeServerArgs:\n"
        "    def __init__(self):\n"
        "        self.cuda_graph_max_bs = 8\n"
        "        self.cuda_graph_tc_compiler = None\n\n"
        "@mock.patch('sglang.srt.mem_cache.chunk_cache.ChunkCache')\n"
        "@mock.patch('sglang.srt.layers.layer_boundary.make_stages')\n"
        "@mock.patch('app.vendor.layer_boundary.make_stages')\n"
        "@mock.patch('sglang.srt.layers.layernorm.RMSNorm.forward_cuda')\n"
        "def test_targets(*patched, monkeypatch):\n"
        "    monkeypatch.setattr('sglang.srt.managers.scheduler.Scheduler.run_batch', None)\n"
        "    with mock.patch.object(RMSNorm, 'forward_native'):\n"
        "        pass\n"
    ),
}


def test_patch_targets_and_fakes_against_two_real_releases(tmp_path: Path, real_cache: Path, capsys, monkeypatch) -> None:
    """A small test tree using real targets of the real 0.5.21 wheel, some gone from 0.5.22."""
    for relpath, text in {"pyproject.toml": "[project]\nname = 'app'\n", **REAL_TESTS}.items():
        (tmp_path / relpath).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relpath).write_text(text)
    monkeypatch.chdir(tmp_path)
    status = main(["check", "--old", "0.5.21", "--new", "0.5.22", "--format", "json", "--select", "SGC5,SGC6",
                   "--cache-dir", str(real_cache)])
    found = {(d["path"], d["line"], d["code"], d["symbol"]) for d in json.loads(capsys.readouterr().out)}
    assert status == 1
    assert found == {
        ("tests/test_real_targets.py", 11, "SGC601", "sglang.srt.mem_cache.chunk_cache.ChunkCache"),
        ("tests/test_real_targets.py", 12, "SGC601", "sglang.srt.layers.layer_boundary.make_stages"),
        ("tests/test_real_targets.py", 13, "SGC601", "sglang.srt.layers.layer_boundary.make_stages"),  # re-export
        ("tests/test_real_targets.py", 6, "SGC602", "sglang.srt.server_args.ServerArgs.cuda_graph_tc_compiler"),
        ("app/serving.py", 4, "SGC501", "sglang.srt.server_args.ServerArgs.cuda_graph_tc_compiler"),
    }
