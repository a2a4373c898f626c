"""A "did you mean" names the same definition (analysis/hints.py): a moved function whose
parameters or body differ is listed as an unverified candidate with its signature, never
suggested; a moved identical one is suggested by where it is defined, not by a re-export shim."""

from __future__ import annotations

from pathlib import Path

import sglang_contracts.contracts  # noqa: F401  (registers the checks)
from sglang_contracts.check.runner import CheckOptions, run_check
from tests.helpers import upstream_tree, write_tree

NORM = "def rmsnorm(input, weight, eps=1e-6, out=None):\n    return input * weight\n"
INPLACE = "def rmsnorm(input, weight, out=None, eps=1e-6):\n    out.copy_(input * weight)\n"
SAME_BODY = "def gelu(x, approximate=False):\n    return x * 0.5\n"


def messages(tmp_path: Path, old: dict, new: dict, project: dict) -> dict[str, str]:
    old_root = upstream_tree(tmp_path / "old", old, "0.1.0")
    new_root = upstream_tree(tmp_path / "new", new, "0.2.0")
    root = write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n", **project})
    result = run_check([root], CheckOptions(old=str(old_root), new=str(new_root), use_cache=False, workers=1))
    return {f"{d.path}:{d.line}:{d.col}: {d.code}": d.message for d in result.diagnostics}


def test_a_different_kernel_of_the_same_name_is_not_suggested(tmp_path: Path) -> None:
    found = messages(
        tmp_path,
        {"sglang/kernels/ops/layernorm/__init__.py": NORM, "sglang/kernels/ops/layernorm/norm.py": "",
         "sglang/kernels/ops/activation.py": SAME_BODY, "sglang/srt/utils.py": ""},
        {"sglang/srt/utils.py": "", "sglang/kernels/ops/layernorm/__init__.py": "", "sglang/kernels/ops/layernorm/norm.py": INPLACE,
         "sglang/kernels/ops/activation.py": "", "sglang/kernels/ops/act/impl.py": SAME_BODY,
         # a deprecated shim re-exporting it: the hint names the definition, not the shim
         "sglang/kernels/ops/act/__init__.py": "from sglang.kernels.ops.act.impl import gelu\n"},
        {"app/model.py": "from sglang.kernels.ops.layernorm import rmsnorm\nfrom sglang.kernels.ops.activation import gelu\n"},
    )
    rmsnorm = found["app/model.py:1:42: SGC102"]
    assert "did you mean" not in rmsnorm
    assert rmsnorm.endswith("; unverified candidates, not the same definition: "
                            "sglang.kernels.ops.layernorm.norm.rmsnorm(input, weight, out=..., eps=...); "
                            "it was rmsnorm(input, weight, eps=..., out=...)")
    assert found["app/model.py:2:43: SGC102"].endswith("; did you mean sglang.kernels.ops.act.impl.gelu?")


def test_a_lost_module_is_suggested_only_where_its_names_are_the_same(tmp_path: Path) -> None:
    found = messages(
        tmp_path,
        {"sglang/srt/layers/attention/wave_ops/extend_attention.py": "def extend_attention_fwd(q, k):\n    return q\n"},
        {"sglang/srt/layers/attention/triton_ops/wave_ops.py": "def other(x):\n    return x\n",
         "sglang/kernels/ops/attention/extend_attention.py": "def extend_attention_fwd(q, k):\n    return q\n"},
        {"app/attn.py": "from sglang.srt.layers.attention.wave_ops.extend_attention import extend_attention_fwd\n"},
    )
    (message,) = found.values()
    assert message.endswith("; did you mean sglang.kernels.ops.attention.extend_attention?")


def test_a_module_of_the_same_name_that_lacks_the_function_is_not_suggested(tmp_path: Path) -> None:
    found = messages(
        tmp_path,
        {"sglang/srt/layers/attention/wave_ops.py": "def extend_attention_fwd(q, k):\n    return q\n"},
        {"sglang/srt/layers/attention/triton/wave_ops.py": "def other(x):\n    return x\n",
         "sglang/kernels/ops/attention/extend_attention.py": "def extend_attention_fwd(q, k):\n    return q\n"},
        {"app/attn.py": "from sglang.srt.layers.attention.wave_ops import extend_attention_fwd\n"},
    )
    (message,) = found.values()
    assert message.endswith("; did you mean sglang.kernels.ops.attention.extend_attention.extend_attention_fwd?")


def test_nothing_found_is_said(tmp_path: Path) -> None:
    found = messages(tmp_path, {"sglang/srt/utils.py": SAME_BODY}, {"sglang/srt/utils.py": ""},
                     {"app/u.py": "from sglang.srt.utils import gelu\n"})
    (message,) = found.values()
    assert message.endswith("; no definition of gelu was found elsewhere in the new release")


def test_a_directory_release_is_named_by_its_version_else_once_by_its_path(tmp_path: Path) -> None:
    from sglang_contracts.sources.directory import directory_release

    unversioned = write_tree(tmp_path / "new", {"sglang/__init__.py": "", "sglang/srt/utils.py": ""})
    assert directory_release(unversioned).short == str(unversioned)  # "sglang <path>", not "sglang sglang at <path>"
    assert directory_release(upstream_tree(tmp_path / "old", {"sglang/srt/utils.py": ""}, "0.1.0")).short == "0.1.0"


def test_where_the_release_itself_imports_the_name_from_outside_is_said(tmp_path: Path) -> None:
    # sglang 0.5.23 dropped its rmsnorm wrapper; its own layers import rmsnorm from sgl_kernel,
    # a package outside the release: named as a lead, never as a verified home.
    found = messages(
        tmp_path,
        {"sglang/kernels/ops/layernorm/__init__.py": NORM, "sglang/srt/layers/layernorm.py": ""},
        {"sglang/kernels/ops/layernorm/__init__.py": "",
         "sglang/srt/layers/layernorm.py": "from sgl_kernel import (\n    fused_add_rmsnorm,\n    rmsnorm,\n)\n",
         "sglang/srt/layers/other.py": "from sgl_kernel import rmsnorm as _rmsnorm\nfrom sglang.kernels import rmsnorm_x\n",
         "sglang/srt/layers/unrelated.py": "from flashinfer import rmsnorm_quant  # not rmsnorm\n"},
        {"app/model.py": "from sglang.kernels.ops.layernorm import rmsnorm\n"},
    )
    (message,) = found.values()
    assert message.endswith("; the release's own code imports rmsnorm from sgl_kernel (in "
                            "sglang.srt.layers.other and 1 more), a package outside it, "
                            "so that definition is not verified")  # two importers; flashinfer's is another name
    assert "did you mean" not in message


def test_another_subsystem_s_copy_is_suggested_only_where_the_definition_moved(tmp_path: Path) -> None:
    """sglang.multimodal_gen keeps its own copy of parallel_state: the same text, other module
    globals. A lost name is not pointed there when the copy was already there; it is when the
    definition moved there."""
    group = "def get_world_group():\n    return _WORLD\n"
    # 0.5.21's shape: the getter is changed and left out of the package's star export
    changed = ("def get_world_group():\n    return get_parallel().world_group\n_DEPRECATED = {'get_world_group': 1}\n"
               "__all__ = [n for n in list(globals()) if not n.startswith('_') and n not in _DEPRECATED]\n")
    helper = "def barrier():\n    return None\n"
    found = messages(
        tmp_path,
        {"sglang/srt/distributed/__init__.py": "from sglang.srt.distributed.parallel_state import *\n",
         "sglang/srt/distributed/parallel_state.py": group + helper,
         "sglang/multimodal_gen/runtime/distributed/parallel_state.py": group},
        {"sglang/srt/distributed/__init__.py": "from sglang.srt.distributed.parallel_state import *\n",
         "sglang/srt/distributed/parallel_state.py": changed,
         "sglang/multimodal_gen/runtime/distributed/parallel_state.py": group,
         "sglang/common/sync.py": helper},
        {"app/dist.py": "from sglang.srt.distributed import get_world_group\nfrom sglang.srt.distributed import barrier\n"},
    )
    assert sorted(found) == ["app/dist.py:1:36: SGC102", "app/dist.py:2:36: SGC102"]
    copied = found["app/dist.py:1:36: SGC102"]
    assert "did you mean" not in copied and "multimodal_gen" in copied
    assert copied.index("sglang.srt.distributed.parallel_state.get_world_group") < copied.index("multimodal_gen")
    assert found["app/dist.py:2:36: SGC102"].endswith("; did you mean sglang.common.sync.barrier?")


LAUNCH = "def _launch_subprocesses(server_args, port_args=None):\n    return server_args, port_args\n"


def test_a_module_function_a_class_of_its_module_took_in_is_named(tmp_path: Path) -> None:
    """0.5.10 made engine._launch_subprocesses the classmethod Engine._launch_subprocesses."""
    same = ("class Engine:\n    @classmethod\n    def _launch_subprocesses(cls, server_args, port_args=None):\n"
            "        return server_args, port_args\n")
    changed = same.replace("return server_args, port_args", "return port_args, server_args, None")
    project = {"app/launch.py": "from sglang.srt.entrypoints.engine import _launch_subprocesses\n"}
    old = {"sglang/srt/entrypoints/engine.py": LAUNCH}
    found = messages(tmp_path / "same", old, {"sglang/srt/entrypoints/engine.py": same}, project)
    assert found["app/launch.py:1:43: SGC102"].endswith(
        "; did you mean sglang.srt.entrypoints.engine.Engine._launch_subprocesses (a classmethod now)?")
    found = messages(tmp_path / "changed", old, {"sglang/srt/entrypoints/engine.py": changed}, project)
    assert found["app/launch.py:1:43: SGC102"].endswith(
        "; moved into Engine._launch_subprocesses? a classmethod of sglang.srt.entrypoints.engine now, not the "
        "same definition: Engine._launch_subprocesses(cls, server_args, port_args=...); "
        "it was _launch_subprocesses(server_args, port_args=...)")
    # a plain method of that name is no home for a module function
    plain = changed.replace("    @classmethod\n", "")
    found = messages(tmp_path / "plain", old, {"sglang/srt/entrypoints/engine.py": plain}, project)
    assert found["app/launch.py:1:43: SGC102"].endswith("no definition of _launch_subprocesses was found elsewhere in the new release")


OUT = "from dataclasses import dataclass\n\n@dataclass\nclass BatchTokenIDOut:\n    rids: list\n    decoded_texts: list\n    output_ids: list\n"
COMMUNICATOR = ("class _Communicator:\n    def __init__(self, sender, fan_out):\n        self._sender = sender\n\n"
                "    async def __call__(self, obj):\n        return obj\n")


def test_a_definition_renamed_with_its_shape_is_named(tmp_path: Path) -> None:
    """0.5.4 renamed io_struct.BatchTokenIDOut to BatchTokenIDOutput (fields kept, a base
    added); 0.5.12 tokenizer_communicator_mixin._Communicator to communicator.FanOutCommunicator."""
    renamed = OUT.replace("BatchTokenIDOut:", "BatchTokenIDOutput(Base):").replace(
        "@dataclass", "class Base:\n    pass\n\n@dataclass") + "    token_steps: list = None\n"
    fan_out = COMMUNICATOR.replace("_Communicator", "FanOutCommunicator").replace("return obj", "return [obj]")
    project = {"app/out.py": "from sglang.srt.managers.io_struct import BatchTokenIDOut\n"
                             "from sglang.srt.managers.mixin import _Communicator\n"}
    found = messages(tmp_path / "renamed", {"sglang/srt/managers/io_struct.py": OUT, "sglang/srt/managers/mixin.py": COMMUNICATOR},
                     {"sglang/srt/managers/io_struct.py": renamed, "sglang/srt/managers/communicator.py": fan_out}, project)
    assert found["app/out.py:1:43: SGC102"].endswith(
        "; renamed to sglang.srt.managers.io_struct.BatchTokenIDOutput? it has all 3 fields of BatchTokenIDOut, "
        "not the same definition")
    assert found["app/out.py:2:6: SGC101"].endswith(
        "; renamed to sglang.srt.managers.communicator.FanOutCommunicator? it has the methods and constructor of "
        "_Communicator, not the same definition")
    # Names that hold the lost one but are other things (other fields, other methods) are not named.
    other = "class BatchTokenIDOutputProcessor:\n    def run(self):\n        return 1\n"
    found = messages(tmp_path / "other", {"sglang/srt/managers/io_struct.py": OUT, "sglang/srt/managers/mixin.py": COMMUNICATOR},
                     {"sglang/srt/managers/io_struct.py": other,
                      "sglang/srt/managers/communicator.py": "class CommunicatorPool:\n    def get(self):\n        return 1\n"}, project)
    assert found["app/out.py:1:43: SGC102"].endswith("no definition of BatchTokenIDOut was found elsewhere in the new release")
    assert found["app/out.py:2:6: SGC101"].endswith("no definition of _Communicator was found elsewhere in the new release")
