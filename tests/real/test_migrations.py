"""Migration by upstream example on real releases: what SGLang did with its own uses of the APIs
it changed (issue 34), learned from the wheels, and what the findings on sglang-omni 0.1.8's
bump to 0.5.22 say and write with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.downloads import download_sdist
from sglang_contracts.cli import main
from sglang_contracts.infra.cache import RecordCache
from sglang_contracts.migrations.learn import FILE_BUDGET, Migrations, Question
from sglang_contracts.sources import open_release
from sglang_contracts.upstream.model import UpstreamModel

pytestmark = pytest.mark.network  # real releases and projects, downloaded once into the test cache

LINEAR = "sglang.srt.layers.linear"


QKV = f"{LINEAR}.QKVParallelLinear.__init__"
MODEL_RUNNER = "sglang.srt.model_executor.model_runner.ModelRunner"
REQ = "sglang.srt.managers.schedule_batch.Req"


@pytest.fixture(scope="module")
def models_0522(real_cache: Path) -> tuple[UpstreamModel, UpstreamModel]:
    """0.5.21 and 0.5.22 read with nothing cached on disk (RecordCache(None)), for the passes of
    the tests below: each pass counts its own files (Migrations.files_read), and the second reads
    the releases' texts the first already read."""
    old = open_release("0.5.21", sglang_repo=None, cache=real_cache)
    new = open_release("0.5.22", sglang_repo=None, cache=real_cache)
    return UpstreamModel.pair(old, new, RecordCache(None))


@pytest.fixture(scope="module")
def learned_0522(models_0522) -> Migrations:
    """Both questions of the tests below, learned in one pass."""
    migrations = Migrations(*models_0522)
    migrations.expect([Question("calls", (QKV, QKV)), Question("reads", (MODEL_RUNNER, "tp_size")),
                       Question("reads", (REQ, "prefix_indices"))])
    return migrations


def test_one_pass_learns_the_three_questions_within_the_budget(learned_0522) -> None:
    """The pass reads each of 0.5.21's files that names one of the APIs and changed in 0.5.22
    once: well inside the budget (the time this test takes is bounded by it)."""
    assert not learned_0522.calls(QKV, QKV).unlearned and not learned_0522.reads(MODEL_RUNNER, "tp_size").unlearned
    assert 50 < learned_0522.files_read <= 200 < FILE_BUDGET


def test_len_of_req_prefix_indices_became_req_prefix_len(learned_0522) -> None:
    """0.5.22 rewrote `len(req.prefix_indices)` as `req.prefix_len`: learned with the call
    around the read, one example (a local of its own function) set aside."""
    variants = learned_0522.reads(REQ, "prefix_indices").variants
    top = variants[0]
    assert top.after == (("expr", "__receiver.prefix_len"),) and top.count >= 20 and not top.foreign
    assert top.before == (("expr", "len(__receiver.prefix_indices)"),)


def test_the_parallel_linear_layers_keywords_became_parallel_group_attn_tp_in_upstreams_own_calls(learned_0522) -> None:
    """0.5.22 replaced `tp_rank=attn_tp_rank, tp_size=attn_tp_size` by `parallel_group="attn_tp"`
    in its own models, where `attn_tp_rank` held the attention rank; grok's `attn_tp_rank` held
    the tensor-parallel rank and its call dropped the keywords: another shape, not a disagreement."""
    variants = learned_0522.calls(QKV, QKV).variants
    top = variants[0]
    assert top.shown() == 'tp_rank=attn_tp_rank, tp_size=attn_tp_size -> parallel_group="attn_tp"'
    assert top.count >= 20 and not top.foreign and not top.imports
    assert ("=attn_tp_rank", "get_parallel().attn_tp_rank") in top.before
    grok = [v for v in variants if v.where.startswith("sglang/srt/models/grok.py")]
    assert grok and grok[0].after == () and ("=attn_tp_rank", "get_parallel().tp_rank") in grok[0].before


def test_model_runner_tp_size_reads_became_get_parallel_tp_size(learned_0522) -> None:
    (variant,) = learned_0522.reads(MODEL_RUNNER, "tp_size").variants
    assert variant.shown_after == "get_parallel().tp_size" and variant.count >= 5
    assert variant.before == (("expr", "__receiver.tp_size"),)
    ((name, path),) = variant.imports
    assert name == "get_parallel" and path.startswith("sglang.srt.")


def test_omni_018_findings_say_what_upstream_did_and_its_safe_fix_writes_what_019_wrote(
        capsys, monkeypatch, real_cache: Path, tmp_path: Path) -> None:
    import shutil

    from sglang_contracts.check.runner import CheckOptions
    from sglang_contracts.check.fixes import run_fix

    project = tmp_path / "omni"
    shutil.copytree(download_sdist("sglang-omni", "0.1.8", real_cache), project)
    released = download_sdist("sglang-omni", "0.1.9", real_cache)
    monkeypatch.chdir(project)
    main(["check", "--format", "json", "--old", "0.5.21", "--new", "0.5.22", "--select", "SGC201"])
    found = {(d["path"], d["line"]): d["message"] for d in json.loads(capsys.readouterr().out)}
    thinker = "sglang_omni/models/ming_omni/thinker.py"
    assert 'upstream migrated 21 calls: tp_rank=attn_tp_rank, tp_size=attn_tp_size -> parallel_group="attn_tp"' \
        in found[thinker, 114]
    assert "-> parallel_group=parallel_group" in found[thinker, 236]  # upstream's own parameter: no rewrite
    report = run_fix([project], CheckOptions(old="0.5.21", new="0.5.22", cache_dir=real_cache, select=["SGC201"]))
    ours = (project / thinker).read_text().splitlines()
    theirs = (released / thinker).read_text().splitlines()
    assert ours[113] == theirs[115] == '            parallel_group="attn_tp",'  # written where tp_rank was
    assert thinker in report.changed and not report.errors


def test_a_module_moved_with_the_same_definitions_is_imported_from_where_upstream_moved_its_imports(
        real_cache: Path, tmp_path: Path) -> None:
    """0.5.18 moved sglang.jit_kernel.rope to sglang.kernels.ops.attention.rope (0.5.16 has the
    first, not the second), and moved its own four imports of it there."""
    from sglang_contracts.check.runner import CheckOptions
    from sglang_contracts.check.fixes import run_fix

    old = open_release("0.5.16", sglang_repo=None, cache=real_cache)
    new = open_release("0.5.18", sglang_repo=None, cache=real_cache)
    (variant,) = Migrations(*UpstreamModel.pair(old, new, RecordCache(None))).imports("sglang.jit_kernel.rope").variants
    assert variant.shown() == "from sglang.jit_kernel.rope -> from sglang.kernels.ops.attention.rope"
    assert variant.count >= 3
    project = tmp_path / "project"
    (project / "app").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'app'\n")
    (project / "app" / "kernels.py").write_text(
        "from sglang.jit_kernel.rope import apply_rope_with_cos_sin_cache_inplace\n"
        "from sglang.srt.layers.rotary_embedding.base import RotaryEmbedding\n")
    report = run_fix([project], CheckOptions(old="0.5.16", new="0.5.18", cache_dir=real_cache))  # safe fixes only
    assert report.fixed == 1 and not report.remaining and not report.errors
    assert (project / "app" / "kernels.py").read_text().splitlines()[0] == \
        "from sglang.kernels.ops.attention.rope import apply_rope_with_cos_sin_cache_inplace"


def test_0522s_own_calls_show_the_argument_release_kv_cache_now_requires_and_the_fields_a_dataclass_lost(
        models_0522) -> None:
    """0.5.22 made `checkpoint` required: its calls that passed no `is_insert` now pass
    `checkpoint=True` (SGC202's rewrite); it dropped `get_last_batch`/`get_running_batch` from
    its own SchedulerPoolStatsObserver(...) (SGC204's, asked of the class, a dataclass); and it
    read `req.extend_range.length` as `req.extend_len` (SGC321's and SGC322's)."""
    release_kv_cache = "sglang.srt.mem_cache.common.release_kv_cache"
    observer = "sglang.srt.managers.scheduler_components.pool_stats_observer.SchedulerPoolStatsObserver"
    migrations = Migrations(*models_0522)
    migrations.expect([Question("calls", (release_kv_cache, release_kv_cache)), Question("calls", (observer, observer)),
                       Question("reads", (REQ, "extend_range"))])
    added = [v for v in migrations.calls(release_kv_cache, release_kv_cache).variants if not v.before]
    assert len(added) == 1 and added[0].after == (("checkpoint", "True"),) and added[0].count >= 2
    (dropped,) = migrations.calls(observer, observer).variants
    assert {slot for slot, _ in dropped.before} == {"get_last_batch", "get_running_batch"} and dropped.after == ()
    shapes = {v.before: v.after for v in migrations.reads(REQ, "extend_range").variants}
    assert shapes[(("expr", "__receiver.extend_range.length"),)] == (("expr", "__receiver.extend_len"),)
