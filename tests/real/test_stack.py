"""The stack rules on the real thing: sglang wheels' pins and a patch against the real 0.5.21 tree.

The patch is written by this test (small edits at anchor lines of the 0.5.21 wheel, turned
into a patch by `git diff`), so no SGLang source is committed; its hunks are then checked
against the real 0.5.22 and 0.5.23 wheels, each verdict compared with `git apply --check`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.downloads import download_sdist
from tests.gitcheck import assert_agrees_with_git, git_stack_verdicts, materialise
from sglang_contracts.patch.gitapply import ALREADY, APPLIES, CONTEXT, GONE, check_patch, check_stack
from sglang_contracts.patch.release import find_moved, tree_reader
from sglang_contracts.patch.patchfile import parse_patch
from sglang_contracts.check.runner import CheckOptions, run_check
from sglang_contracts.sources import open_release
from sglang_contracts.upstream.pins import release_pins

pytestmark = pytest.mark.network  # real releases and projects, downloaded once into the test cache

# (file, anchor line): each anchor line of the 0.5.21 wheel gets a trailing comment.
EDITS = [
    ("sglang/srt/layers/layernorm.py", r"^\s+torch\.add\(param\.data, 1\.0, out=self\.gemma_weight\)$"),
    ("sglang/srt/layers/layernorm.py", r"^class LayerNorm\(BaseFusedOp\):$"),
    ("sglang/srt/managers/scheduler.py", r"^class Scheduler\($"),
    ("sglang/srt/arg_groups/fields/spec.py", r"^    speculative_skip_dp_mlp_sync: A\[$"),
    ("sglang/kernels/ops/attention/fla/fused_gdn_gating.py", r"^def fused_gdn_gating\($"),
]


@pytest.fixture(scope="module")
def releases(real_cache: Path) -> dict:
    return {v: open_release(v, sglang_repo=None, cache=real_cache) for v in ("0.5.21", "0.5.22", "0.5.23")}


@pytest.fixture(scope="module")
def real_patch(releases, tmp_path_factory) -> str:
    """`git diff` of the edits, made in a repository holding the 0.5.21 files under python/."""
    tree = releases["0.5.21"].tree
    paths = sorted({path for path, _ in EDITS})
    repo = materialise({f"python/{p}": tree.read_text(p) for p in paths}, tmp_path_factory.mktemp("sglang"))
    git = lambda *args: subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)  # noqa: E731
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "0.5.21")
    for path, anchor in EDITS:
        file = repo / "python" / path
        lines = file.read_text().splitlines(keepends=True)
        (index,) = [i for i, line in enumerate(lines) if re.match(anchor, line.rstrip("\n"))]
        lines[index] = lines[index].rstrip("\n") + "  # downstream edit\n"
        file.write_text("".join(lines))
    return git("diff").stdout


def _files(release, patch) -> dict[str, str]:
    """The release's copies of the files the patch names, by patch path."""
    read, _ = tree_reader(release.tree)
    return {f.old_path: read(f.old_path) for f in patch.files if read(f.old_path) is not None}


@pytest.mark.parametrize("version", ["0.5.21", "0.5.22", "0.5.23"])
def test_every_hunk_verdict_on_the_real_wheels_is_gits(releases, real_patch: str, version: str) -> None:
    patch = parse_patch(real_patch)
    assert patch.error is None and sum(len(f.hunks) for f in patch.files) == len(EDITS)
    verdicts = check_patch(patch, *tree_reader(releases[version].tree))
    assert_agrees_with_git(_files(releases[version], patch), real_patch, verdicts)
    by_file = {(v.file.path.rsplit("/", 1)[-1], v.number): v.status for v in verdicts}
    if version in ("0.5.21", "0.5.22"):
        assert set(by_file.values()) == {APPLIES}
    else:
        assert by_file[("layernorm.py", 1)] == APPLIES  # class LayerNorm, further down
        assert by_file[("layernorm.py", 2)] == CONTEXT  # the gemma weight line was rewritten
        assert by_file[("spec.py", 1)] == CONTEXT  # speculative_skip_dp_mlp_sync was removed
        assert by_file[("fused_gdn_gating.py", 1)] == GONE
        assert ALREADY not in by_file.values()


def test_a_moved_file_is_found_by_content(releases, real_patch: str) -> None:
    patch = parse_patch(real_patch)
    (moved,) = [f for f in patch.files if f.old_path.endswith("fla/fused_gdn_gating.py")]
    found = find_moved(moved, releases["0.5.23"].tree, releases["0.5.21"].tree)
    assert found == "sglang/kernels/ops/attention/linear/fused_gdn_gating.py"


def test_check_reports_the_hunks_that_break_on_the_bump(releases, real_patch: str, tmp_path: Path, real_cache) -> None:
    project = tmp_path / "project"
    (project / "docker" / "patch" / "v0.5.21").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "slime-like"\n')
    (project / "docker" / "patch" / "v0.5.21" / "sglang.patch").write_text(real_patch)
    options = CheckOptions(old="0.5.21", new="0.5.23", select=["SGC9"], cache_dir=real_cache, workers=1)
    diagnostics = run_check([project], options).diagnostics
    lines = real_patch.splitlines()
    failing = {f.path.rsplit("/", 1)[-1]: h.line for f in parse_patch(real_patch).files for h in f.hunks}
    assert [(d.code, d.line) for d in diagnostics] == sorted(
        ("SGC901", failing[name]) for name in ("layernorm.py", "spec.py", "fused_gdn_gating.py"))
    assert all(lines[d.line - 1].startswith("@@ ") for d in diagnostics)
    moved = next(d for d in diagnostics if "fused_gdn_gating" in d.symbol)
    assert "moved to python/sglang/kernels/ops/attention/linear/fused_gdn_gating.py" in moved.message
    assert "the hunk applies there" in moved.message
    assert all(d.severity == "error" for d in diagnostics)


MOE_CONFIG = "sglang/srt/layers/moe/moe_runner/triton_utils/configs/triton_3_1_0/E=8,N=7168,device_name=AMD_Instinct_MI300X.json"


@pytest.fixture(scope="module")
def stacked_patch(releases, real_patch: str, tmp_path_factory) -> str:
    """A second patch, made on top of `real_patch`'s edits: it edits the line the first one changed
    (so it applies only on top of it) and a JSON config the wheel ships as package data."""
    tree = releases["0.5.21"].tree
    files = {f"python/{p}": tree.read_text(p) for p in sorted({path for path, _ in EDITS})}
    files[f"python/{MOE_CONFIG}"] = tree.read_member(MOE_CONFIG).decode()
    repo = materialise(files, tmp_path_factory.mktemp("stacked"))
    git = lambda *args, **kw: subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, **kw)  # noqa: E731
    git("apply", "-", input=real_patch)
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "0.5.21 with the first patch")
    scheduler = repo / "python/sglang/srt/managers/scheduler.py"
    scheduler.write_text(scheduler.read_text().replace("  # downstream edit\n", "  # downstream edit, stacked\n"))
    config = repo / "python" / MOE_CONFIG
    config.write_text(config.read_text().replace('"BLOCK_SIZE_M": ', '"BLOCK_SIZE_M":  ', 1))
    return git("diff").stdout


@pytest.mark.parametrize("version", ["0.5.21", "0.5.22", "0.5.23"])
def test_a_stack_on_the_real_wheels_is_judged_as_git_applies_it_in_order(releases, real_patch, stacked_patch, version):
    patches = [parse_patch(real_patch), parse_patch(stacked_patch)]
    read, unchecked = tree_reader(releases[version].tree)
    paths = {f.old_path for p in patches for f in p.files}
    files = {path: read(path) for path in paths if read(path) is not None}
    verdicts = check_stack(patches, read, unchecked).verdicts
    pairs = [[(v.file, v.hunk) for v in judged] for judged in verdicts]
    assert [[v.applies for v in judged] for judged in verdicts] == git_stack_verdicts(files, [real_patch, stacked_patch], pairs)
    second = {v.file.path.rsplit("/", 1)[-1]: v.status for v in verdicts[1]}
    assert second[MOE_CONFIG.rsplit("/", 1)[-1]] == APPLIES  # the JSON member is read and judged
    alone = {v.file.path.rsplit("/", 1)[-1]: v.status for v in check_patch(patches[1], read, unchecked)}
    assert alone["scheduler.py"] == CONTEXT  # alone, the second patch never applies
    assert second["scheduler.py"] == APPLIES  # class Scheduler( is still there in all three


# -- pins -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def omni_019(real_cache: Path) -> Path:
    return download_sdist("sglang-omni", "0.1.9", real_cache)


def test_real_wheel_pins_are_read_with_markers_and_extras(releases) -> None:
    pins = release_pins(releases["0.5.23"].tree)
    assert str(pins.exact_pin("flashinfer-python")) == "0.7.2"
    assert str(pins.exact_pin("transformers")) == "5.19.0"
    assert pins.exact_pin("sgl-eval") is None  # only with the test extra
    assert str(pins.exact_pin("sgl-eval", frozenset({"test"}))) == "0.1.3"


def test_omni_019_pyproject_against_the_pins_of_0522_and_0523(omni_019: Path, tmp_path: Path, real_cache) -> None:
    # Only the pyproject matters here: check a copy of it alone, so the run reads no code.
    project = tmp_path / "omni"
    project.mkdir()
    shutil.copy(omni_019 / "pyproject.toml", project / "pyproject.toml")
    options = CheckOptions(old="0.5.22", new="0.5.23", select=["SGC70"], cache_dir=real_cache, workers=1)
    result = run_check([project], options)
    found = {(d.code, d.symbol): d.message for d in result.diagnostics}
    assert set(found) == {("SGC701", "flashinfer-python"), ("SGC701", "openai"), ("SGC702", "sglang")}
    assert found[("SGC701", "flashinfer-python")].endswith("flashinfer_python 0.7.1 -> 0.7.2")
    assert found[("SGC701", "openai")].endswith("openai 2.6.1 -> 2.8.0")
    assert "sglang==0.5.22" in found[("SGC702", "sglang")]
    # The release it was made for agrees with every mirrored pin.
    same = run_check([project], CheckOptions(old="0.5.21", new="0.5.22", select=["SGC701"], cache_dir=real_cache))
    assert same.diagnostics == []


# -- pins installed by scripts (slime's build_conda.sh) -----------------------------------------

BUILD_CONDA = """#!/bin/bash
export SGLANG_COMMIT="5a15cde858ea09b77116212a39356f2fc51b8584"
pip install -e "python[all]" --extra-index-url https://download.pytorch.org/whl/cu129
pip install --force-reinstall --no-deps \\
  torch==2.11.0{local} torchvision torchaudio==2.11.0{local} \\
  --index-url https://download.pytorch.org/whl/cu129
pip install --force-reinstall --no-deps \\
  sglang-kernel=={kernel} sgl-deep-gemm=={gemm} \\
  --index-url https://docs.sglang.ai/whl/cu129/
MAX_JOBS=64 pip -v install flash-attn==2.7.4.post1 --no-build-isolation
"""


def _slime_shaped(root: Path, tag: str, kernel: str, gemm: str, local: str = "") -> Path:
    (root / "docker").mkdir(parents=True)
    (root / "setup.py").write_text("from setuptools import setup\nsetup(name='slime-like')\n")
    (root / "docker" / "Dockerfile").write_text(f"ARG SGLANG_IMAGE_TAG={tag}\nFROM slimerl/sglang:${{SGLANG_IMAGE_TAG}} AS sglang\n")
    (root / "build_conda.sh").write_text(BUILD_CONDA.format(kernel=kernel, gemm=gemm, local=local))
    return root


def test_slime_build_conda_pins_that_the_0513_image_bump_left_behind(tmp_path: Path, real_cache: Path) -> None:
    """slime's 0.5.13 image bump (fec3da9b4) left build_conda.sh at 0.5.12.post1's kernel pins
    (fixed only in a6272da0d, two releases later): `--old` comes from the image tag."""
    project = _slime_shaped(tmp_path / "slime", "v0.5.12.post1-cu129", "0.4.2.post2", "0.1.0")
    options = CheckOptions(new="0.5.13", select=["SGC701"], cache_dir=real_cache, workers=1)
    found = {(d.path, d.line, d.symbol): d.message for d in run_check([project], options).diagnostics}
    assert set(found) == {("build_conda.sh", 8, "sglang-kernel"), ("build_conda.sh", 8, "sgl-deep-gemm")}
    assert found["build_conda.sh", 8, "sglang-kernel"].endswith("sglang-kernel 0.4.2.post2 -> 0.4.3")
    assert found["build_conda.sh", 8, "sgl-deep-gemm"].endswith("sgl-deep-gemm 0.1.0 -> 0.1.2")


def test_slime_build_conda_as_its_bump_left_it_is_silent(tmp_path: Path, real_cache: Path) -> None:
    """The pins a6272da0d wrote (`+cu129` builds of torch) agree with 0.5.15.post1's."""
    project = _slime_shaped(tmp_path / "slime", "v0.5.13-cu129", "0.4.4", "0.1.4", local="+cu129")
    options = CheckOptions(new="0.5.15.post1", select=["SGC701"], cache_dir=real_cache, workers=1)
    assert run_check([project], options).diagnostics == []


def test_a_pin_that_disagreed_with_both_releases_says_so_without_a_change(tmp_path: Path, real_cache: Path) -> None:
    """slime's build_conda.sh pins cuda-python==12.9; 0.5.13 and 0.5.15.post1 both ask >=13.0:
    an info with --report-unresolved, which names no change where there is none."""
    project = _slime_shaped(tmp_path / "slime", "v0.5.13-cu129", "0.4.4", "0.1.4", local="+cu129")
    with (project / "build_conda.sh").open("a") as script:
        script.write("pip install cuda-python==12.9\n")
    options = CheckOptions(new="0.5.15.post1", select=["SGC701"], cache_dir=real_cache, workers=1,
                           report_unresolved=True)
    (finding,) = [d for d in run_check([project], options).diagnostics if d.symbol == "cuda-python"]
    assert finding.severity == "info" and "(cuda-python >=13.0 in both)" in finding.message
