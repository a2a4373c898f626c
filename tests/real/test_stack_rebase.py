"""`patch rebase` of a two-patch stack on the real sglang 0.5.22 and 0.5.23 wheels.

The stack is made here (edits at anchor lines of the 0.5.22 files, the second made on top of the
first, turned into patches by `git diff`), so no SGLang source and nobody's patch is committed.
The second patch's context holds a line of the first; one file moved in 0.5.23
(fused_gdn_gating.py, to attention/linear/); one is a `.cuh` the wheel ships, not Python.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.gitcheck import applies_in_order, edit_at_anchors, materialise
from sglang_contracts.patch.rebase import CARRIED, LEFT
from sglang_contracts.patch.stack_rebase import rebase_live_stack, write_edits
from sglang_contracts.sources import open_release

pytestmark = pytest.mark.network  # real releases and projects, downloaded once into the test cache

SCHEDULER = "sglang/srt/managers/scheduler.py"
GATING = "sglang/kernels/ops/attention/fla/fused_gdn_gating.py"
KERNEL = "sglang/kernels/jit/csrc/gemm/per_token_group_quant_8bit_v2.cuh"
COMMENT = lambda line: line.rstrip("\n") + "  # downstream edit\n"  # noqa: E731
FIRST = [(SCHEDULER, r"^class Scheduler\($", COMMENT), (GATING, r"^def fused_gdn_gating\($", COMMENT),
         (KERNEL, r"^// JIT port of the AOT", lambda line: line.rstrip("\n") + " (downstream edit)\n")]
# the line after the first's `class Scheduler(`: its context is the first patch's line
SECOND = [(SCHEDULER, r"^class Scheduler\(.*# downstream edit$", lambda line: line + "    # second patch\n")]
DOCKERFILE = ("ARG PATCH_VERSION=v0.5.22\nCOPY docker/patch/${PATCH_VERSION}/ /sgl-workspace/sglang/\n"
              "RUN cd /sgl-workspace/sglang && for p in first.patch second.patch; do git apply $p; done\n")


@pytest.fixture(scope="module")
def releases(real_cache: Path) -> dict:
    return {v: open_release(v, sglang_repo=None, cache=real_cache) for v in ("0.5.22", "0.5.23")}


def edited(repo: Path, edits) -> str:
    """`git diff` of `edits` over what the repository holds, committed after."""
    git = lambda *args: subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)  # noqa: E731
    edit_at_anchors(repo, edits)
    diff = git("diff").stdout
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qam", "patch")
    return diff


@pytest.fixture(scope="module")
def stack_project(releases, tmp_path_factory) -> Path:
    tree = releases["0.5.22"].tree
    repo = materialise({f"python/{p}": tree.read_member(p).decode() for p in (SCHEDULER, GATING, KERNEL)},
                       tmp_path_factory.mktemp("maker"))
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "0.5.22"],
                   cwd=repo, check=True)
    root = tmp_path_factory.mktemp("project")
    (root / "docker/patch/v0.5.22").mkdir(parents=True)
    (root / "docker/Dockerfile").write_text(DOCKERFILE)
    for name, edits in (("first.patch", FIRST), ("second.patch", SECOND)):
        (root / "docker/patch/v0.5.22" / name).write_text(edited(repo, edits))
    return root


def test_a_real_two_patch_stack_rebases_onto_0523_and_git_applies_it_in_order(releases, stack_project: Path,
                                                                              tmp_path: Path) -> None:
    result = rebase_live_stack(stack_project, releases["0.5.22"], releases["0.5.23"])
    assert result.verified, result.verification
    assert [[o.verdict for o in each.rebase.outcomes] for each in result.patches] == [[CARRIED] * 3, [CARRIED]]
    assert not any(o.verdict in LEFT for each in result.patches for o in each.rebase.outcomes)
    moved = {o.file.path: o.path for o in result.patches[0].rebase.outcomes}
    assert moved[f"python/{GATING}"] == "python/sglang/kernels/ops/attention/linear/fused_gdn_gating.py"
    assert moved[f"python/{KERNEL}"] == f"python/{KERNEL}"  # checked, not carried unchecked
    write_edits(stack_project, result)
    assert "ARG PATCH_VERSION=v0.5.23\n" in (stack_project / "docker/Dockerfile").read_text()
    new = [(stack_project / "docker/patch/v0.5.23" / name).read_text() for name in ("first.patch", "second.patch")]
    tree = releases["0.5.23"].tree
    paths = (SCHEDULER, "sglang/kernels/ops/attention/linear/fused_gdn_gating.py", KERNEL)
    on_0523 = {f"python/{p}": tree.read_member(p).decode() for p in paths}
    assert applies_in_order(on_0523, new, tmp_path / "tree")
    old = [(stack_project / "docker/patch/v0.5.22" / name).read_text() for name in ("first.patch", "second.patch")]
    assert not applies_in_order(on_0523, old, tmp_path / "as-it-was")  # the stack needed the rebase
