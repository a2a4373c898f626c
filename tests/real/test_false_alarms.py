"""Issue 33's false-alarm shapes on the real releases that showed them (cached wheels)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sglang_contracts.cli import main

pytestmark = pytest.mark.network  # real releases and projects, downloaded once into the test cache


def check_json(capsys, monkeypatch, project: Path, files: dict[str, str], *args: str) -> list[dict]:
    for relpath, text in files.items():
        (project / relpath).parent.mkdir(parents=True, exist_ok=True)
        (project / relpath).write_text(text)
    monkeypatch.chdir(project)
    main(["check", "--format", "json", *args])
    return json.loads(capsys.readouterr().out)


def test_the_computed_all_of_0_5_23_parallel_state_keeps_every_public_global_but_the_deprecated_getters(
        tmp_path: Path, capsys, monkeypatch, real_cache: Path) -> None:
    """0.5.21 builds `__all__` of sglang/srt/distributed/parallel_state.py from `globals()`,
    leaving out the getters named in `_CONTEXT_NAME_OF`; the package re-exports it with `*`.
    The getters are gone from `sglang.srt.distributed` (communication_op re-exports
    get_tp_group, so it stays); everything else public stays importable."""
    imports = ("from sglang.srt.distributed import (initialize_model_parallel, destroy_model_parallel, "
               "get_tp_group, get_pp_group, get_tensor_model_parallel_rank)\n")
    found = check_json(capsys, monkeypatch, tmp_path, {"app/dist.py": imports},
                       "--old", "0.5.20", "--new", "0.5.23", "--select", "SGC102", "--cache-dir", str(real_cache))
    assert sorted(d["message"].split()[0] for d in found) == ["get_pp_group", "get_tensor_model_parallel_rank"]
    assert all(d["severity"] == "error" for d in found)


def test_a_lost_getter_is_not_pointed_at_multimodal_gen_s_own_copy(tmp_path: Path, capsys, monkeypatch,
                                                                   real_cache: Path) -> None:
    """0.5.23's srt get_world_group changed, and sglang.multimodal_gen's parallel_state (there
    in 0.5.20 already) still has the old text: another object, with its own process groups."""
    found = check_json(capsys, monkeypatch, tmp_path, {"app/dist.py": "from sglang.srt.distributed import get_world_group\n"},
                       "--old", "0.5.20", "--new", "0.5.23", "--select", "SGC102", "--cache-dir", str(real_cache))
    (message,) = [d["message"] for d in found]
    assert "did you mean" not in message
    assert "unverified candidates" in message and "sglang.srt.distributed.parallel_state.get_world_group" in message


def test_speculative_algorithm_s_registered_members_in_0_5_5_could_not_be_verified(
        tmp_path: Path, capsys, monkeypatch, real_cache: Path) -> None:
    """0.5.4's SpeculativeAlgorithm is an IntEnum; 0.5.5 makes it a registry whose `register`
    does `setattr(cls, normalized_name, algorithm)`, called at import time for NONE, EAGLE...:
    the members are there, so "no longer exists" would be false; its methods are declared and
    judged as before (is_eagle stayed)."""
    code = ("from sglang.srt.speculative.spec_info import SpeculativeAlgorithm\n\n\n"
            "def pick(algo: SpeculativeAlgorithm):\n"
            "    return SpeculativeAlgorithm.NONE, SpeculativeAlgorithm.EAGLE3, algo.is_eagle()\n")
    found = check_json(capsys, monkeypatch, tmp_path, {"app/spec.py": code},
                       "--old", "0.5.4", "--new", "0.5.5", "--select", "SGC3", "--cache-dir", str(real_cache))
    assert {(d["code"], d["symbol"].rsplit(".", 1)[1], d["severity"]) for d in found} == {
        ("SGC321", "NONE", "warning"), ("SGC321", "EAGLE3", "warning")}
    assert all("could not verify: SpeculativeAlgorithm sets attributes by name at run time" in d["message"] for d in found)
