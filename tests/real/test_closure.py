"""The dependency closure on the real thing: sglang 0.5.16, 0.5.22 and 0.5.23's wheels and the
real metadata of what they pin, read from the package index pip is configured for into the
test session's cache (a second session is offline), and trees in miles' and sglang-omni's
shape (written here) checked against them, each with a silent control."""

from __future__ import annotations

from pathlib import Path

import pytest

from sglang_contracts.check.runner import CheckOptions, run_check
from sglang_contracts.closure.delta import closure_delta
from sglang_contracts.closure.source import MetadataSource
from sglang_contracts.closure.walk import walk
from sglang_contracts.contracts.dependencies import INDEX_VARIABLE
from sglang_contracts.infra.cache import RecordCache
from sglang_contracts.requirements import environments
from sglang_contracts.sources import open_release
from sglang_contracts.upstream.pins import release_pins
from tests.helpers import write_tree

pytestmark = pytest.mark.network  # real releases and projects, downloaded once into the test cache


@pytest.fixture(autouse=True)
def pips_index(monkeypatch) -> None:
    monkeypatch.delenv(INDEX_VARIABLE)  # the session's default reads no index: these read pip's


@pytest.fixture(scope="module")
def closures(real_cache: Path) -> dict:
    source = MetadataSource(RecordCache(real_cache / "closure"))
    walked = {}
    for version in ("0.5.22", "0.5.23"):
        pins = release_pins(open_release(version, sglang_repo=None, cache=real_cache).tree)
        walked[version] = walk(pins, frozenset(), environments()[0], source)
    assert source.unreachable is None
    return walked


def test_the_real_closures_hold_torchs_cuda_libraries_and_flashinfers_chain(closures: dict) -> None:
    for version in ("0.5.22", "0.5.23"):
        closure = closures[version]
        assert closure.first("torch").path() == "sglang -> torch==2.14.1"
        assert closure.first("nvidia-nccl-cu13").path().startswith("sglang -> torch==2.14.1 -> nvidia-nccl-cu13==2.")
        assert closure.first("nvidia-cudnn-cu13").chain == ("sglang", "torch==2.14.1")
        assert closure.first("nvidia-cutlass-dsl").path() == "sglang -> nvidia-cutlass-dsl[cu13]==4.8.0"
        assert closure.first("transformers").path() == "sglang -> transformers==5.19.0"
        assert 100 < len(closure.needs) < 300 and not closure.cut_short
    assert closures["0.5.23"].first("flashinfer-python").path() == "sglang -> flashinfer-python[cu13]==0.7.2"


def test_the_real_delta_names_flashinfers_move_and_what_it_brings(closures: dict) -> None:
    delta = closure_delta({"linux/x86_64": closures["0.5.22"]}, {"linux/x86_64": closures["0.5.23"]}, "0.5.22", "0.5.23")
    moves = {move.name: move for move in delta.moves}
    assert (moves["flashinfer-python"].old, moves["flashinfer-python"].new) == ("0.7.1", "0.7.2")
    assert moves["nvidia-cudnn-frontend"].chain == "sglang -> flashinfer-python[cu13]==0.7.2 -> nvidia-cudnn-frontend>=1.31.0"
    assert (moves["sglang-kernel"].old, moves["sglang-kernel"].new) == ("0.4.9", "0.4.10")
    assert "torch" not in moves and "nvidia-nccl-cu13" not in moves  # torch 2.14.1 on both
    assert delta.moves[0].key


MILES_SHAPED = {
    "docker/Dockerfile": """\
ARG SGLANG_IMAGE_TAG=v0.5.16
FROM lmsysorg/sglang:${SGLANG_IMAGE_TAG}
# Reconcile flashinfer and cutlass-dsl with what the kernels need
RUN pip install --force-reinstall --no-deps flashinfer-python==0.6.15.post1 flashinfer-cubin==0.6.15.post1
RUN pip install nvidia-cutlass-dsl==4.6.2
RUN pip install nvidia-cudnn-cu13==9.24.0.43
""",
    "requirements.txt": "torchvision==0.26.0\ntorchaudio==2.11.0\n",
}


def test_miles_shaped_force_installs_become_downgrades_after_the_bump(tmp_path: Path, real_cache: Path) -> None:
    project = write_tree(tmp_path / "miles", MILES_SHAPED)
    result = run_check([project], CheckOptions(new="0.5.23", cache_dir=real_cache, workers=1))
    found = {f"{d.path}:{d.line}:{d.col}: {d.code}": d for d in result.diagnostics if d.code.startswith("SGC71")}
    assert sorted(found) == ["docker/Dockerfile:4:45: SGC711", "docker/Dockerfile:5:17: SGC711",
                             "requirements.txt:1:1: SGC712"]
    assert "requires: 0.7.2 (sglang -> flashinfer-python[cu13]==0.7.2; sglang 0.5.16 brought 0.6.14)" in \
        found["docker/Dockerfile:4:45: SGC711"].message
    assert found["docker/Dockerfile:5:17: SGC711"].severity == "error"
    assert "sglang 0.5.23 brings torch 2.14.1 (sglang -> torch==2.14.1)" in found["requirements.txt:1:1: SGC712"].message
    # silent: cudnn at the new closure's version, torchaudio's own pin SGLang keeps (SGC701's), cubin not in the closure
    moves = {move.name for move in result.closure_delta.moves}
    assert {"torch", "nvidia-cutlass-dsl", "flashinfer-python", "nvidia-nccl-cu13"} <= moves


def test_omni_shaped_markdown_lists_what_moves_together(tmp_path: Path, real_cache: Path) -> None:
    from sglang_contracts.reporters.markdown import write_markdown
    import io

    project = write_tree(tmp_path / "omni", {"pyproject.toml": """\
[project]
name = "omni"
dependencies = [
    "sglang==0.5.22",
    "flashinfer_python[cu13]==0.7.1",  # sglang pin
    "transformers==5.19.0",  # Match the pinned sglang stack
]
"""})
    result = run_check([project], CheckOptions(new="0.5.23", cache_dir=real_cache, workers=1))
    out = io.StringIO()
    write_markdown(result, out)
    section = out.getvalue().split("### What moves together")[1].split("###")[0]
    assert "| `flashinfer-python` | `0.7.1` → `0.7.2` | `sglang -> flashinfer-python[cu13]==0.7.2` |" in section
    assert "`nvidia-cudnn-frontend`" in section and "`sglang-kernel`" in section
    assert not [d for d in result.diagnostics if d.code.startswith("SGC71")]  # the mirror's move is SGC701's
    assert [d.line for d in result.diagnostics if d.code == "SGC701"] == [5]
