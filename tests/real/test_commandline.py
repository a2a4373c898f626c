"""The command-line pass-through on real sglang wheels (0.5.13, 0.5.14, 0.5.15.post1, 0.5.20),
with small trees written here in the shape of miles' and slime's `--sglang-` wrappers (not
their code). The breaks are the real ones of 0.5.14: upstream began generating its options
from the field declarations, so `--data-parallel-size` stores to `dp_size`, and a skip-list
entry "tp_size" began to match `--tp-size/--tensor-parallel-size`."""

from __future__ import annotations

from pathlib import Path

import pytest

from sglang_contracts.infra.cache import RecordCache
from sglang_contracts.check.runner import CheckOptions, run_check
from sglang_contracts.sources import open_release
from sglang_contracts.upstream.commandline import command_line
from sglang_contracts.upstream.model import UpstreamModel
from tests.helpers import write_tree

pytestmark = pytest.mark.network  # real releases and projects, downloaded once into the test cache

WRAPPER = '''from sglang.srt.server_args import ServerArgs

SKIP = [
    "model_path",
    "config",
    "tp_size",
    "port",
]


def add_sglang_arguments(parser):
    register = parser.add_argument

    def with_prefix(*flags, **kwargs):
        if "dest" in kwargs:
            key = kwargs["dest"]
        else:
            key = next((f[2:].replace("-", "_") for f in flags if f.startswith("--")), None)
        if key in SKIP:
            return
        if isinstance(kwargs.get("dest"), str):
            kwargs["dest"] = f"sglang_{kwargs['dest']}"
        register(*[f"--sglang-{f.lstrip('-')}" if f.startswith("-") else f for f in flags], **kwargs)

    parser.add_argument = with_prefix
    ServerArgs.add_cli_args(parser)
    parser.add_argument = register
    return parser
'''

VALIDATE = '''def validate_args(args):
    args.sglang_tp_size = args.rollout_num_gpus_per_engine
    args.sglang_dp_size = args.sglang_data_parallel_size
    args.sglang_pp_size = args.sglang_pipeline_parallel_size
    args.sglang_ep_size = args.sglang_expert_parallel_size
    if hasattr(args, "sglang_attention_context_parallel_size"):
        args.sglang_attn_cp_size = args.sglang_attention_context_parallel_size
    if args.colocate and not args.sglang_disable_piecewise_cuda_graph:
        args.sglang_disable_piecewise_cuda_graph = True


def set_tp_default(parser, gpus):
    parser.set_defaults(sglang_tensor_parallel_size=gpus)
'''

SCRIPT = '''#!/bin/bash
python train.py \\
  --sglang-tp-size 8 \\
  --sglang-dp-size 2 \\
  --sglang-load-format safetensors \\
  --sglang-disable-piecewise-cuda-graph
'''

# The same tree as the bump PRs left it: what the tool must then find nothing in.
FIXED_WRAPPER = WRAPPER.replace('    "tp_size",\n', "")
FIXED_VALIDATE = '''def validate_args(args):
    args.sglang_tp_size = args.rollout_num_gpus_per_engine
    if args.colocate and args.sglang_cuda_graph_backend_prefill is None:
        args.sglang_cuda_graph_backend_prefill = "disabled"
'''
FIXED_SCRIPT = SCRIPT.replace("  --sglang-disable-piecewise-cuda-graph\n", "  --sglang-cuda-graph-backend-prefill=disabled\n")


def model(version: str, cache: Path) -> UpstreamModel:
    return UpstreamModel(open_release(version, sglang_repo=None, cache=cache), RecordCache(cache / "upstream"))


def findings(tmp_path: Path, package: str, files: dict[str, str], old: str, new: str,
             select: tuple[str, ...] = ("SGC5",), ignore: tuple[str, ...] = ("SGC509",)) -> list[str]:
    """The command-line findings (SGC509's defaults aside, which its own test below takes)."""
    tree = {"pyproject.toml": f"[project]\nname = '{package}'\n",
            f"{package}/backends/sglang_utils/arguments.py": files["arguments"],
            f"{package}/utils/validate.py": files["validate"], "scripts/run.sh": files["script"]}
    root = write_tree(tmp_path / package, tree)
    result = run_check([root], CheckOptions(old=old, new=new, workers=1, select=select, ignore=ignore))
    return sorted(f"{d.path}:{d.line}:{d.col}: {d.code} {d.severity}" for d in result.diagnostics)


def test_real_command_lines_in_both_shapes(real_cache: Path) -> None:
    lines = {version: command_line(model(version, real_cache)) for version in ("0.5.13", "0.5.14", "0.5.20")}
    assert lines["0.5.13"].shape == "hand-written" and lines["0.5.14"].shape == "mixed"
    assert lines["0.5.20"].shape == "mixed"  # generated from the namespace classes under arg_groups/fields/
    for line in lines.values():
        assert 400 <= len(line) <= 600
    old, new = lines["0.5.13"].by_string, lines["0.5.14"].by_string
    assert (old["--data-parallel-size"].dest, new["--data-parallel-size"].dest) == ("data_parallel_size", "dp_size")
    assert new["--data-parallel-size"].strings == ("--dp-size", "--data-parallel-size")
    assert (old["--tp-size"].dest, new["--tp-size"].dest) == ("tensor_parallel_size", "tp_size")
    assert new["--disable-piecewise-cuda-graph"].deprecated and not old["--disable-piecewise-cuda-graph"].deprecated
    assert new["--disable-piecewise-cuda-graph"].replacement == "--cuda-graph-backend-prefill=disabled"
    assert "safetensors" in old["--load-format"].choices and "safetensors" in new["--load-format"].choices
    assert lines["0.5.20"].by_string["--mem-fraction-static"].declared_by.endswith(".mem_fraction_static")


def test_miles_shaped_bump_to_0_5_14(tmp_path: Path, real_cache: Path) -> None:
    broken = {"arguments": WRAPPER, "validate": VALIDATE, "script": SCRIPT}
    assert findings(tmp_path / "a", "miles", broken, "0.5.13", "0.5.14") == [
        "miles/backends/sglang_utils/arguments.py:6:5: SGC507 warning",  # "tp_size" now skips the tp option
        "miles/utils/validate.py:13:25: SGC504 warning",  # set_defaults(sglang_tensor_parallel_size=...)
        "miles/utils/validate.py:3:32: SGC504 error",  # args.sglang_data_parallel_size
        "miles/utils/validate.py:4:32: SGC504 error",
        "miles/utils/validate.py:5:32: SGC504 error",
        "miles/utils/validate.py:6:22: SGC504 warning",  # the hasattr() branch stops running
        "miles/utils/validate.py:8:35: SGC504 error",  # sglang_disable_piecewise_cuda_graph read first
        "miles/utils/validate.py:8:35: SGC508 info",  # ... folded into --cuda-graph-backend-prefill
        "scripts/run.sh:3:3: SGC505 error",  # --sglang-tp-size, dropped by the skip list
        "scripts/run.sh:6:3: SGC505 warning",  # a deprecated alias now
        "scripts/run.sh:6:3: SGC508 info",
    ]
    fixed = {"arguments": FIXED_WRAPPER, "validate": FIXED_VALIDATE, "script": FIXED_SCRIPT}
    assert findings(tmp_path / "b", "miles", fixed, "0.5.13", "0.5.14") == []


def test_slime_shaped_bump_to_0_5_15_post1(tmp_path: Path, real_cache: Path) -> None:
    broken = {"arguments": WRAPPER, "validate": VALIDATE, "script": SCRIPT}
    found = findings(tmp_path / "a", "slime", broken, "0.5.13", "0.5.15.post1")
    assert [f for f in found if f.endswith("error")] == [
        "scripts/run.sh:3:3: SGC505 error",
        "slime/utils/validate.py:3:32: SGC504 error", "slime/utils/validate.py:4:32: SGC504 error",
        "slime/utils/validate.py:5:32: SGC504 error", "slime/utils/validate.py:8:35: SGC504 error"]
    # Differential: on 0.5.14 the same tree is already broken, and 0.5.15.post1 changes nothing
    # of the command line it uses, so that bump reports nothing.
    assert findings(tmp_path / "b", "slime", broken, "0.5.14", "0.5.15.post1") == []
    fixed = {"arguments": FIXED_WRAPPER, "validate": FIXED_VALIDATE, "script": FIXED_SCRIPT}
    assert findings(tmp_path / "c", "slime", fixed, "0.5.13", "0.5.15.post1") == []


@pytest.mark.parametrize("value", ["npcache"])
def test_a_choice_the_release_keeps_is_silent(tmp_path: Path, real_cache: Path, value: str) -> None:
    # load-format kept every value from 0.5.13 to 0.5.14: a value-carrying flag is judged, and silent.
    script = FIXED_SCRIPT.replace("safetensors", value)
    fixed = {"arguments": FIXED_WRAPPER, "validate": FIXED_VALIDATE, "script": script}
    assert findings(tmp_path, "miles", fixed, "0.5.13", "0.5.14") == []


# slime's own sglang parser: `argparse.ArgumentParser(add_help=False)`, abbreviations allowed.
PARSE = '''

def sglang_parse_args():
    import argparse

    parser = argparse.ArgumentParser(add_help=False)
    add_sglang_arguments(parser)
    args, _ = parser.parse_known_args()
    return args
'''
ABBREVIATED_SCRIPT = '''#!/bin/bash
python train.py \\
  --sglang-mem-frac 0.7 \\
  --sglang-cuda-graph-bs 1 2 4 8 \\
  --sglang-cuda-graph-max 8
'''


def test_an_abbreviation_0_5_14_made_ambiguous(tmp_path: Path, real_cache: Path) -> None:
    """`--sglang-cuda-graph-max` took `--cuda-graph-max-bs` on 0.5.13; 0.5.14 added
    `--cuda-graph-max-bs-decode`/`-prefill`, so argparse exits. `--sglang-mem-frac` still names
    one option, and the exact `--sglang-cuda-graph-bs` wins over its new longer relatives (it is
    only a deprecated alias of `--cuda-graph-bs-decode` now: a warning)."""
    files = {"arguments": FIXED_WRAPPER + PARSE, "validate": FIXED_VALIDATE, "script": ABBREVIATED_SCRIPT}
    assert findings(tmp_path / "a", "slime", files, "0.5.13", "0.5.14") == [
        "scripts/run.sh:4:3: SGC505 warning", "scripts/run.sh:5:3: SGC505 error"]
    spelled = {**files, "script": ABBREVIATED_SCRIPT.replace("graph-max 8", "graph-max-bs 8")}
    # Written in full, it is a deprecated alias like --sglang-cuda-graph-bs: warnings, no error.
    assert findings(tmp_path / "b", "slime", spelled, "0.5.13", "0.5.14") == [
        "scripts/run.sh:4:3: SGC505 warning", "scripts/run.sh:5:3: SGC505 warning"]


# slime before its 0.5.15.post1 bump: memory saver on, no cuda-graph flag of its own.
SLIME_ENGINE = '''from sglang.srt.server_args import ServerArgs


def compute_server_args(args):
    kwargs = {"model_path": args.hf_checkpoint, "enable_memory_saver": args.offload_rollout}
    return ServerArgs(**kwargs)
'''
SLIME_FIX = '''    if kwargs.get("enable_memory_saver") and kwargs.get("cuda_graph_backend_prefill") is None:
        kwargs["cuda_graph_backend_prefill"] = "disabled"
'''


def test_defaults_the_slime_bump_left_to_upstream(tmp_path: Path, real_cache: Path) -> None:
    """0.5.14 folded --disable/--enforce-piecewise-cuda-graph into --cuda-graph-backend-prefill,
    whose default now decides (slime had to set it to `disabled` under memory saver), and moved
    --hicache-mem-layout's default: infos, once each, at the wrapper."""
    plain = {"arguments": FIXED_WRAPPER, "validate": SLIME_ENGINE, "script": "python train.py --sglang-mem-fraction-static 0.7\n"}
    found = findings(tmp_path / "a", "slime", plain, "0.5.13", "0.5.15.post1", select=("SGC509",), ignore=())
    assert found == ["slime/backends/sglang_utils/arguments.py:10:1: SGC509 info"] * 2
    result = run_check([tmp_path / "a" / "slime"], CheckOptions(old="0.5.13", new="0.5.15.post1", workers=1, select=("SGC509",)))
    messages = {d.symbol: d.message for d in result.diagnostics}
    assert set(messages) == {"cuda_graph_backend_prefill", "hicache_mem_layout"}
    assert "--sglang-disable-piecewise-cuda-graph (default False)" in messages["cuda_graph_backend_prefill"]
    assert "from 'layer_first' to 'page_first'" in messages["hicache_mem_layout"]
    fixed = {**plain, "validate": SLIME_ENGINE.replace("    return ServerArgs", SLIME_FIX + "    return ServerArgs")}
    root = tmp_path / "b"
    assert findings(root, "slime", fixed, "0.5.13", "0.5.15.post1", select=("SGC509",), ignore=()) == [
        "slime/backends/sglang_utils/arguments.py:10:1: SGC509 info"]  # the hicache default alone
    # Between 0.5.14 and 0.5.15.post1 neither moved: nothing.
    assert findings(tmp_path / "c", "slime", plain, "0.5.14", "0.5.15.post1", select=("SGC509",), ignore=()) == []
