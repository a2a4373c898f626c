"""`patch rebase` on the real sglang 0.5.21 and 0.5.23 wheels, with a patch this test writes.

The patch is made here (edits at anchor lines of the 0.5.21 files, turned into a patch by
`git diff`), so no SGLang source and nobody's patch is committed. Each edit is placed where
0.5.23 gives it a known fate: carried at an offset, merged around an upstream change, in
conflict with one, already made upstream, on a file that moved. The rebased patch is then
checked by the real `git apply --check` on the 0.5.23 files.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.gitcheck import edit_at_anchors, git_applies_whole, materialise
from sglang_contracts.patch.rebase import CARRIED, CONFLICT, DROPPED, MERGED, SKELETON, rebase_patch
from sglang_contracts.patch.patchfile import parse_patch
from sglang_contracts.sources import open_release

pytestmark = pytest.mark.network  # real releases and projects, downloaded once into the test cache

COMMENT = lambda line: line.rstrip("\n") + "  # downstream edit\n"  # noqa: E731
UPSTREAM_0523 = ("    # The projection that consumes this norm's output; see fuse_input_quant().\n"
                 "    _quant_linear: Optional[nn.Module] = None\n\n")
LAYERNORM = "sglang/srt/layers/layernorm.py"
# (file, anchor line, what the edit makes of it), in file order; each becomes one hunk.
EDITS = [
    (LAYERNORM, r"^class RMSNorm\(BaseFusedOp\):$", lambda line: line + UPSTREAM_0523),  # 0.5.23 made it
    (LAYERNORM, r"^class LayerNorm\(BaseFusedOp\):$", COMMENT),  # further down in 0.5.23
    # 0.5.23 inserts a call two lines below this one: the context changed, the merge is clean
    (LAYERNORM, r"^    def _weight_loader\(self, param: torch\.Tensor, loaded_weight: torch\.Tensor\) -> None:$", COMMENT),
    ("sglang/srt/managers/scheduler.py", r"^class Scheduler\($", COMMENT),
    ("sglang/srt/arg_groups/fields/spec.py", r"^    speculative_skip_dp_mlp_sync: A\[$", COMMENT),  # 0.5.23 removed it
    ("sglang/kernels/ops/attention/fla/fused_gdn_gating.py", r"^def fused_gdn_gating\($", COMMENT),  # moved to linear/
]


@pytest.fixture(scope="module")
def releases(real_cache: Path) -> dict:
    return {v: open_release(v, sglang_repo=None, cache=real_cache) for v in ("0.5.21", "0.5.23")}


def make_patch(tree, edits, folder: Path) -> str:
    """`git diff` of `edits` over the release's files, in a repository holding them under python/."""
    paths = sorted({path for path, _, _ in edits})
    repo = materialise({f"python/{p}": tree.read_text(p) for p in paths}, folder)
    git = lambda *args: subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)  # noqa: E731
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "release")
    edit_at_anchors(repo, edits)
    return git("diff").stdout


@pytest.fixture(scope="module")
def patch_0521(releases, tmp_path_factory) -> str:
    return make_patch(releases["0.5.21"].tree, EDITS, tmp_path_factory.mktemp("sglang-0521"))


def on_0523(releases, paths) -> dict[str, str]:
    tree = releases["0.5.23"].tree
    return {p: tree.read_text(p.removeprefix("python/")) for p in paths if tree.read_bytes(p.removeprefix("python/"))}


def test_the_real_bump_rebases_hunk_by_hunk_and_git_applies_the_result(releases, patch_0521: str, tmp_path: Path) -> None:
    # the patch is against 0.5.21 ...
    assert git_applies_whole({f"python/{p}": releases["0.5.21"].tree.read_text(p) for p, _, _ in EDITS}, patch_0521)
    result = rebase_patch(parse_patch(patch_0521), patch_0521, releases["0.5.21"], releases["0.5.23"], tree=tmp_path / "tree")
    fates = {(o.file.path.rsplit("/", 1)[-1], o.number): o.verdict for o in result.outcomes}
    assert fates == {("fused_gdn_gating.py", 1): CARRIED, ("spec.py", 1): CONFLICT, ("layernorm.py", 1): DROPPED,
                     ("layernorm.py", 2): CARRIED, ("layernorm.py", 3): MERGED, ("scheduler.py", 1): CARRIED}
    moved = next(o for o in result.outcomes if o.file.path.endswith("fused_gdn_gating.py"))
    assert moved.path == "python/sglang/kernels/ops/attention/linear/fused_gdn_gating.py"
    assert result.verified, result.verification
    # ... and the rebased one, by the real git, against 0.5.23, where the original does not apply
    touched = [f.target for f in result.files]
    assert git_applies_whole(on_0523(releases, touched), result.patch_text)
    assert not git_applies_whole(on_0523(releases, [o.file.path for o in result.outcomes]), patch_0521)
    after = {f.target: f.after for f in result.files}
    layernorm = after[f"python/{LAYERNORM}"]
    assert layernorm.count("  # downstream edit\n") == 2 and layernorm.count(UPSTREAM_0523) == 1
    assert "    def _weight_loader(self, param: torch.Tensor, loaded_weight: torch.Tensor) -> None:  # downstream edit\n" \
           "        assert param.size() == loaded_weight.size()\n        param.data.copy_(loaded_weight)\n" \
           "        self.refresh_gemma_weight()\n" in layernorm
    assert "  # downstream edit" in after[moved.path]
    # the conflict is left in the tree with git's markers, the 0.5.23 side without the removed field
    spec = (tmp_path / "tree/python/sglang/srt/arg_groups/fields/spec.py").read_text()
    ours, base, theirs = re.search(r"<<<<<<< patched\n(.*?)\|\|\|\|\|\|\| release-A\n(.*?)=======\n(.*?)>>>>>>> release-B\n",
                                   spec, re.S).groups()
    assert "speculative_skip_dp_mlp_sync: A[  # downstream edit" in ours and "speculative_skip_dp_mlp_sync" in base
    assert "speculative_skip_dp_mlp_sync" not in theirs


def test_a_skeleton_of_the_new_release_gives_the_classes(releases, patch_0521: str, tmp_path: Path) -> None:
    # the skeleton (a patch of 0.5.23) makes the scheduler edit and one on layernorm the project does not make
    extra = (LAYERNORM, r"^class RMSNormWithoutScale\(BaseFusedOp\):$", COMMENT)
    skeleton = make_patch(releases["0.5.23"].tree, [EDITS[3], extra], tmp_path / "skeleton")
    result = rebase_patch(parse_patch(patch_0521), patch_0521, releases["0.5.21"], releases["0.5.23"], parse_patch(skeleton))
    classes = {(o.file.path.rsplit("/", 1)[-1], o.number): (o.verdict, o.label) for o in result.outcomes}
    assert classes[("scheduler.py", 1)] == (SKELETON, "A")
    assert classes[("layernorm.py", 2)] == (CARRIED, "B") and classes[("layernorm.py", 3)] == (MERGED, "B")
    assert classes[("fused_gdn_gating.py", 1)] == (CARRIED, "C") and classes[("spec.py", 1)] == (CONFLICT, "C")
    assert [h.added for _, h in result.skeleton_left] == [[COMMENT("class RMSNormWithoutScale(BaseFusedOp):\n")]]
    assert result.verified
    assert git_applies_whole(on_0523(releases, [f.target for f in result.files]), result.patch_text)
