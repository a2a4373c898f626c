"""What two reviews of `patch rebase` on slime's stack (0.5.13 -> 0.5.15.post1) found wrong, on small
trees in slime's shape: a hunk whose context is blank lines put in another class, a hunk whose
added lines upstream already has merged a second time."""

from __future__ import annotations

from pathlib import Path

from tests.patch.stack_project import git_diff, release
from sglang_contracts.patch.patchfile import parse_patch
from sglang_contracts.patch.rebase import CONFLICT, DROPPED, MERGED, rebase_patch
from sglang_contracts.sources import open_release

POOL = "sglang/srt/mem_cache/memory_pool_host.py"
LOGICAL = "class LogicalHostPool:\n    def size(self):\n        return 2\n\n\n"
GROUP = "class HostPoolGroup:\n    def available_size(self):\n        return 3\n"
MLA = "class MLATokenToKVPoolHost:\n    def size(self):\n        return 5\n\n\n"
# slime's release_hicache hunk #8: one blank line of context on each side (its patches have one or two)
BLANK_CONTEXT_PATCH = f"""diff --git a/python/{POOL} b/python/{POOL}
--- a/python/{POOL}
+++ b/python/{POOL}
@@ -4,2 +4,8 @@ class LogicalHostPool:
 
+    def release_memory_occupation(self):
+        pass
+
+    def resume_memory_occupation(self):
+        pass
+
 
"""


def rebased(tmp_path: Path, a_files: dict[str, str], b_files: dict[str, str], text: str):
    old = release(tmp_path / "A", "0.5.13", a_files)
    new = release(tmp_path / "B", "0.5.15.post1", b_files)
    old_release, new_release = (open_release(str(p), sglang_repo=None, cache=tmp_path / "cache") for p in (old, new))
    return rebase_patch(parse_patch(text), text, old_release, new_release)


def test_a_hunk_whose_context_is_blank_lines_stays_in_its_class(tmp_path: Path) -> None:
    # B puts a class where LogicalHostPool was: its blank lines are the nearest match of the hunk's
    result = rebased(tmp_path, {POOL: LOGICAL + GROUP}, {POOL: MLA + LOGICAL + GROUP}, BLANK_CONTEXT_PATCH)
    [outcome] = result.outcomes
    assert outcome.verdict == MERGED and "matches several places" in outcome.detail, outcome
    after = result.files[0].after
    mla, logical = after.split("class LogicalHostPool:")
    assert "release_memory_occupation" not in mla
    assert "def size(self):\n        return 2\n\n    def release_memory_occupation(self):" in logical
    assert result.verified, result.verification


def test_a_hunk_placed_alike_by_git_and_the_merge_is_carried(tmp_path: Path) -> None:
    result = rebased(tmp_path, {POOL: LOGICAL + GROUP}, {POOL: LOGICAL + GROUP + "\n\n" + MLA}, BLANK_CONTEXT_PATCH)
    assert [o.verdict for o in result.outcomes] == ["carried"]


LOADER = """def load(method, weight_name, loaded_weight):
    return (
        loaded_weight.view(-1)
        if (
            method
            in [
                "CompressedTensorsWNA16MoE",
            ]
        )
        else loaded_weight
    )
"""


def test_a_hunk_whose_added_line_upstream_added_beside_it_is_dropped_not_merged(tmp_path: Path) -> None:
    # slime's fused_moe_triton/layer.py: the patch adds the test inside the parenthesis, 0.5.15.post1
    # one line lower, outside it; the three-way merge is clean and would test it twice
    patched = LOADER.replace('            ]\n', '            ]\n            and "zero" not in weight_name\n')
    upstream = LOADER.replace('        )\n        else',
                              '        )\n        and "zero" not in weight_name\n        else')
    text = git_diff({"sglang/srt/layer.py": LOADER}, {"sglang/srt/layer.py": patched}, tmp_path / "maker")
    result = rebased(tmp_path, {"sglang/srt/layer.py": LOADER}, {"sglang/srt/layer.py": upstream}, text)
    [outcome] = result.outcomes
    assert outcome.verdict == DROPPED and "already has the lines it adds" in outcome.detail, outcome
    assert outcome.at == 10
    assert result.files[0].after == upstream


def test_an_added_line_upstream_added_far_from_the_hunk_is_merged(tmp_path: Path) -> None:
    # slime's hiradix_cache.py hunk #2: its one line is one upstream added to another method
    evict = "def evict(node):\n    node.clear()\n    self._update_leaf_status(node.parent)\n    return 0\n"
    filler = "".join(f"def step_{i}(x):\n    return x + {i}\n\n\n" for i in range(20))
    a_text = evict + "\n\n" + filler + "def split(node):\n    node.cut()\n    return node\n"
    leaf = "    self._update_leaf_status(node.parent)\n"
    patched = a_text.replace(leaf, leaf + "    self._update_host_leaf_status(node.parent)\n")
    upstream = a_text.replace("    node.clear()\n", "    node.clear(True)\n").replace(
        "    node.cut()\n", "    node.cut()\n    self._update_host_leaf_status(node.parent)\n")
    text = git_diff({"sglang/srt/radix.py": a_text}, {"sglang/srt/radix.py": patched}, tmp_path / "maker")
    result = rebased(tmp_path, {"sglang/srt/radix.py": a_text}, {"sglang/srt/radix.py": upstream}, text)
    assert [o.verdict for o in result.outcomes] == [MERGED]
    assert result.files[0].after.count("self._update_host_leaf_status(node.parent)") == 2


HOST_KV = """class HostKVCache:
    def __init__(self, size):
        self.size = size
        host_mem = psutil.virtual_memory()
        requested_bytes = self.size * self.size_per_token
        available_bytes = host_mem.available - RESERVE
        self.kv_buffer = self.init_kv_buffer()


"""
OTHER_POOL = "class MHATokenToKVPoolHost(HostKVCache):\n    def init_kv_buffer(self):\n        return []\n"


def test_a_hunk_whose_class_moved_to_a_file_b_added_is_carried_there(tmp_path: Path) -> None:
    # 0.5.15 moved HostKVCache out of memory_pool_host.py (still there, for the pools) into the
    # new pool_host/base.py: release_hicache's hunks on it were conflicts against the old file
    base = "sglang/srt/mem_cache/pool_host/base.py"
    patched = HOST_KV.replace("        requested_bytes = self.size * self.size_per_token\n",
                              "        requested_bytes = self._requested_host_memory_bytes()\n")
    text = git_diff({POOL: HOST_KV + OTHER_POOL}, {POOL: patched + OTHER_POOL}, tmp_path / "maker")
    b_files = {POOL: "from sglang.srt.mem_cache.pool_host.base import HostKVCache\n\n\n" + OTHER_POOL,
               base: "import psutil\n\n\n" + HOST_KV}
    result = rebased(tmp_path, {POOL: HOST_KV + OTHER_POOL}, b_files, text)
    [outcome] = result.outcomes
    assert outcome.verdict == "carried" and outcome.path == f"python/{base}" and outcome.moved, outcome
    assert f"+++ b/python/{base}" in result.patch_text and "_requested_host_memory_bytes()" in result.patch_text
    assert result.verified, result.verification


def test_the_hunks_of_a_file_split_in_two_go_each_to_its_part(tmp_path: Path) -> None:
    # slime's deterministic patch on 0.5.15's jit_kernel/utils.py, whose code 0.5.23 spread over
    # kernels/jit/utils/compile/: no one file of B holds most of the hunks' lines
    first = "def resolve_kernel_path():\n    here = locate()\n    return here.parent\n\n\n"
    second = "def load_jit(name, files):\n    paths = [KERNEL / f for f in files]\n    return compile_all(paths)\n"
    gone = "def twice(x):\n    y = x * 2\n    return y + 1\n\n\n"
    filler = lambda name: "".join(f"{name}_{n} = {n}\n" for n in range(30)) + "\n\n"  # noqa: E731  (a hunk each)
    util = "sglang/jit_kernel/utils.py"
    original = "import os\n\n\n" + first + filler("X") + gone + filler("Y") + second
    patched = (original.replace("    here = locate()\n", "    here = locate(extra=True)\n")
               .replace("    y = x * 2\n", "    y = x * 3\n")
               .replace("    return compile_all(paths)\n", "    return compile_all(paths, verbose=True)\n"))
    text = git_diff({util: original}, {util: patched}, tmp_path / "maker")
    b_files = {"sglang/kernels/jit/paths.py": "import os\n\n\n" + first,
               "sglang/kernels/jit/loader.py": "import os\n\n\n" + second}
    result = rebased(tmp_path, {util: original}, b_files, text)
    assert [(o.verdict, o.path) for o in result.outcomes] == [
        ("carried", "python/sglang/kernels/jit/paths.py"), ("file-gone", None),
        ("carried", "python/sglang/kernels/jit/loader.py")]
    assert result.verified and "locate(extra=True)" in result.patch_text and "verbose=True" in result.patch_text


def test_a_live_stack_left_as_it_is_is_said_with_its_folder_and_how(tmp_path: Path) -> None:
    from tests.patch.stack_project import KERNEL, NEW_KERNEL, OLD_KERNEL, SCHED_A, SCHED_B, project
    from sglang_contracts.patch.stack_rebase import rebase_live_stack, render_stack_plan, summary_lines

    root = project(tmp_path, "v0.5.1")
    (root / "docker/patch/conda").mkdir()
    (root / "docker/patch/conda/sglang.patch").write_text(
        (root / "docker/patch/v0.5.1/sglang-first.patch").read_text().replace("x + 100", "x + 200"))
    (root / "build_conda.sh").write_text("cd sglang\ngit apply ../docker/patch/conda/sglang.patch\n")
    old = release(tmp_path / "A", "0.5.1", {"sglang/srt/sched.py": SCHED_A, OLD_KERNEL: KERNEL})
    new = release(tmp_path / "B", "0.5.2", {"sglang/srt/sched.py": SCHED_B, NEW_KERNEL: KERNEL})
    result = rebase_live_stack(root, *(open_release(str(p), sglang_repo=None, cache=tmp_path / "cache")
                                       for p in (old, new)), write_trees=False)
    said = [line for line in summary_lines(result, written=False) if line.startswith("not rebased")]
    assert said == ["not rebased: the stack of build_conda.sh:2 (1 patch in docker/patch/conda/), which another "
                    "build applies: only the image's stack is rebased; rebase it with `patch-files` naming it, or "
                    "each patch with `sglang-contracts patch rebase PATCH --new 0.5.2`"]
    assert "docker/patch/conda/" in render_stack_plan(result)


def test_the_names_a_patch_defines_are_program_names_not_locals_or_words() -> None:
    from sglang_contracts.patch.release import defined_names

    added = ("def router_gemm_batch_invariant(x):\n    enable_fp32_moe_router: bool = False\n"
             "    parser.add_argument(\"--custom-pull-weights-pre-read-hook\")\n@app.get(\"/get_weight_version\")\n"
             "        self.release_hicache = x\n        release = getattr(x, 'y')\n        local_thing = 3\n"
             "MAX_PD_TOP_P_TOKEN_IDS = 4\n    device: str = 'cuda'\n")
    assert defined_names(added) == {"router_gemm_batch_invariant", "enable_fp32_moe_router", "get_weight_version",
                                    "custom_pull_weights_pre_read_hook", "release_hicache", "MAX_PD_TOP_P_TOKEN_IDS"}


def test_a_build_that_applies_the_first_patches_of_the_stack_is_rebased_with_it(tmp_path: Path) -> None:
    # slime's build_conda.sh applies latest/sglang.patch, the first of the image's stack, rewritten in place
    from tests.patch.stack_project import KERNEL, NEW_KERNEL, OLD_KERNEL, SCHED_A, SCHED_B, project
    from sglang_contracts.patch.stack_rebase import rebase_live_stack, summary_lines

    root = project(tmp_path, "latest")
    (root / "build_conda.sh").write_text("cd sglang\ngit apply ../docker/patch/latest/sglang-first.patch\n")
    old = release(tmp_path / "A", "0.5.1", {"sglang/srt/sched.py": SCHED_A, OLD_KERNEL: KERNEL})
    new = release(tmp_path / "B", "0.5.2", {"sglang/srt/sched.py": SCHED_B, NEW_KERNEL: KERNEL})
    result = rebase_live_stack(root, *(open_release(str(p), sglang_repo=None, cache=tmp_path / "cache")
                                       for p in (old, new)), write_trees=False)
    said = summary_lines(result, written=False)
    assert "rebased with it: the stack of build_conda.sh:2 applies the first patch of this one " \
           "(sglang-first.patch in docker/patch/latest/)" in said
    assert not any(line.startswith("not rebased") for line in said)


DECODE = "sglang/srt/disaggregation/decode.py"
QUEUE_A = "class DecodePreallocQueue:\n    def pop(self):\n        return 1\n"
# B adds the method the patch adds, in another place of the class (decode.py #3 of slime's stack)
QUEUE_B = ("class DecodePreallocQueue:\n    def release_memory_occupation(self):\n        self.kv.release()\n\n"
           "    def pop(self):\n        return 1\n")
QUEUE_PATCH = f"""diff --git a/python/{DECODE} b/python/{DECODE}
--- a/python/{DECODE}
+++ b/python/{DECODE}
@@ -1,3 +1,6 @@
 class DecodePreallocQueue:
     def pop(self):
         return 1
+
+    def release_memory_occupation(self):
+        self.queue.clear()
"""


def test_a_hunk_defining_a_method_its_class_in_b_already_has_is_a_conflict_not_a_second_definition(
        tmp_path: Path) -> None:
    result = rebased(tmp_path, {DECODE: QUEUE_A}, {DECODE: QUEUE_B}, QUEUE_PATCH)
    [outcome] = result.outcomes
    assert outcome.verdict == CONFLICT, outcome
    assert "already defines DecodePreallocQueue.release_memory_occupation" in outcome.detail
    assert result.files[0].after.count("def release_memory_occupation") == 1
    assert not result.complete  # left out: the written patch verifies, the rebase is not whole
    # a method B does not have is merged in as before
    other = rebased(tmp_path / "other", {DECODE: QUEUE_A}, {DECODE: QUEUE_B},
                    QUEUE_PATCH.replace("release_memory_occupation", "drain"))
    assert [o.verdict for o in other.outcomes] == [MERGED] and "def drain" in other.files[0].after
