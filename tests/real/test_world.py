"""The real thing: sglang wheels and sglang-omni sdists from the package index (cached between runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.downloads import download_sdist
from sglang_contracts.cli import main
from sglang_contracts.sources import open_release
from sglang_contracts.upstream.model import UpstreamModel
from sglang_contracts.infra.cache import RecordCache

pytestmark = pytest.mark.network  # real releases and projects, downloaded once into the test cache


def run_json(capsys, project: Path, monkeypatch, *args: str) -> tuple[int, list[dict]]:
    monkeypatch.chdir(project)
    status = main(["check", "--format", "json", *args])
    return status, json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def omni_018(real_cache: Path) -> Path:
    return download_sdist("sglang-omni", "0.1.8", real_cache)


@pytest.fixture(scope="module")
def omni_019(real_cache: Path) -> Path:
    return download_sdist("sglang-omni", "0.1.9", real_cache)


def test_wheel_model_sees_the_srt_namespace_package(real_cache: Path) -> None:
    release = open_release("0.5.22", sglang_repo=None, cache=real_cache)
    assert release.version == "0.5.22"
    model = UpstreamModel(release, RecordCache(None))
    assert model.module("sglang.srt").kind == "namespace"
    scheduler = model.resolve_path("sglang.srt.managers.scheduler.Scheduler")
    assert (scheduler.status, scheduler.kind) == ("found", "class")
    assert model.stats.parsed >= 1


def test_omni_018_bump_to_0522_reports_its_real_import_breaks(capsys, monkeypatch, omni_018: Path) -> None:
    # --old is omitted: sglang-omni 0.1.8 pins sglang==0.5.21 in its pyproject.toml.
    status, diagnostics = run_json(capsys, omni_018, monkeypatch, "--new", "0.5.22")
    assert status == 1
    found = {(d["path"], d["code"], d["symbol"]) for d in diagnostics}
    assert ("sglang_omni/vendor/sglang/layers.py", "SGC102", "sglang.srt.layers.layer_boundary.make_stages") in found
    assert ("sglang_omni/scheduling/sglang_backend/cache.py", "SGC101", "sglang.srt.mem_cache.chunk_cache") in found
    assert (
        "sglang_omni/models/ming_omni/thinker.py", "SGC105", "sglang.srt.layers.layer_boundary.residual.batch.norm"
    ) in found
    make_stages = next(d for d in diagnostics if d["symbol"].endswith(".make_stages"))
    assert make_stages["severity"] == "error"
    assert "0.5.21" in make_stages["message"] and "0.5.22" in make_stages["message"]


def test_omni_019_released_against_0522_has_no_import_errors_for_that_bump(capsys, monkeypatch, omni_019: Path) -> None:
    status, diagnostics = run_json(capsys, omni_019, monkeypatch, "--old", "0.5.21", "--new", "0.5.22")
    assert [d for d in diagnostics if d["code"] in ("SGC101", "SGC102")] == []
    assert status == (1 if diagnostics else 0)


def test_omni_019_against_its_own_pin_reports_only_what_the_pin_alone_says(capsys, monkeypatch, omni_019: Path) -> None:
    # The pin alone, asked for: `--old` as the pin (without it, a pin naming --new is a bump
    # already made, and --old comes from the history: tests/project/test_pin_history.py).
    status, diagnostics = run_json(capsys, omni_019, monkeypatch, "--new", "0.5.22", "--old", "0.5.22")
    # Only the rules that judge one release: probes of upstream state 0.5.22 defines statically.
    assert {d["code"][:4] for d in diagnostics} == {"SGC8"}
    assert {d["severity"] for d in diagnostics} == {"warning"} and status == 1
    probes = {(d["path"], d["symbol"]) for d in diagnostics if d["code"] == "SGC801"}
    assert ("sglang_omni/quantization.py", "sglang.srt.configs.model_config.ModelConfig.hf_config") in probes
    clean = main(["check", "--new", "0.5.22", "--old", "0.5.22", "--ignore", "SGC8", "--format", "json"])
    assert (clean, json.loads(capsys.readouterr().out)) == (0, [])


def test_omni_018_bump_markdown_report_groups_the_real_findings_by_surface(capsys, monkeypatch, omni_018: Path) -> None:
    from sglang_contracts.diagnostics.catalog import report_of, surface_for, surface_order
    from tests.helpers import markdown_sections

    _, diagnostics = run_json(capsys, omni_018, monkeypatch, "--new", "0.5.22")
    status = main(["check", "--new", "0.5.22", "--format", "markdown"])
    report = capsys.readouterr().out
    assert status == 1
    assert report.startswith("## SGLang contracts: 0.5.21 → 0.5.22\n")
    assert "| `sglang` (`pyproject.toml`) | `0.5.21` | `0.5.22` |" in report
    by_heading = markdown_sections(report)
    titles = [heading.split(":")[0] for heading in by_heading]
    assert titles[-1] == "Before merging"
    order = [surface.title for surface in surface_order()]
    inherited = "Inherited upstream behaviour"  # SGC303/SGC313: what the project runs of upstream, apart

    def section_of(d: dict) -> str:
        return inherited if report_of(d["code"]).inherited else surface_for(d["code"]).title

    # "What moves together" (the closures' delta, from what the test cache holds) is no surface of findings
    surfaces = [title for title in titles[:-1] if title != "What moves together"]
    assert surfaces == sorted({section_of(d) for d in diagnostics}, key=[*order, inherited].index)
    assert inherited in titles  # omni's overrides of bodies that changed
    for d in diagnostics:  # every finding is listed, under its section's heading
        (body,) = [text for heading, text in by_heading.items() if heading.split(":")[0] == section_of(d)]
        assert f"`{d['path']}:{d['line']}`" in body
    imports = next(text for heading, text in by_heading.items() if heading.startswith("Imports"))
    make_stages = next(line for line in imports.splitlines() if "`make_stages`" in line)
    assert make_stages.startswith("- **error** SGC102: ")
    assert "`sglang.srt.layers.layer_boundary.factories.make_stages`" in make_stages
    # one bullet for the four reads of residual.batch.norm, each place listed after it
    norm = imports.splitlines().index(next(l for l in imports.splitlines() if "attribute norm" in l))
    assert imports.splitlines()[norm + 1].count("`sglang_omni/") == sum(
        d["symbol"] == "sglang.srt.layers.layer_boundary.residual.batch.norm" for d in diagnostics) == 4
    assert "- [ ] Pin `sglang==0.5.22` in `pyproject.toml`" in report


def test_omni_018_bump_reports_its_real_class_and_call_breaks(capsys, monkeypatch, omni_018: Path) -> None:
    _, diagnostics = run_json(capsys, omni_018, monkeypatch, "--new", "0.5.22")
    thinker = [d for d in diagnostics if d["path"] == "sglang_omni/models/ming_omni/thinker.py" and d["code"] == "SGC201"]
    layers = {(d["symbol"].split(".")[-3], d["symbol"].split(".")[-1]) for d in thinker}
    for layer in ("QKVParallelLinear", "RowParallelLinear", "MergedColumnParallelLinear"):
        assert {(layer, "tp_rank"), (layer, "tp_size")} <= layers, layer
    assert all(d["severity"] == "error" and "0.5.21" in d["message"] for d in thinker)
    # The borrowed Scheduler code now reads an attribute OmniScheduler never set (0.1.9 added it).
    (borrowed,) = [d for d in diagnostics if d["code"] == "SGC312" and d["path"].endswith("omni_scheduler.py")
                   and "reads self.enable_skip_finishing_decode" in d["message"]]
    assert "OmniScheduler.get_next_batch_to_run -> Scheduler.get_next_batch_to_run ->" in borrowed["message"]
    # process_pending_chunked_abort returns while _pending_chunked_abort_req is None, all OmniScheduler sets.
    assert not any("self.enable_continuous_input_polling" in d["message"] for d in diagnostics)
    # `request_data.req.extend_range`: a project dataclass field typed `Req | None`, read through a local.
    reads = {(d["path"], d["line"]) for d in diagnostics if d["code"] == "SGC321" and d["symbol"].endswith("Req.extend_range")}
    assert ("sglang_omni/scheduling/sglang_backend/request_data.py", 152) in reads
    assert len(reads) >= 10


def test_omni_018_bump_reports_untyped_request_reads_that_019_fixed(capsys, monkeypatch, omni_018: Path,
                                                                     omni_019: Path) -> None:
    """Reads of Req.extend_range/prefix_indices on unannotated `req` and `data.req`: an audit of
    0.1.8 -> 0.1.9 found nine files fixed for them that SGC321 cannot see (no type to go on)."""
    _, diagnostics = run_json(capsys, omni_018, monkeypatch, "--new", "0.5.22", "--select", "SGC32")
    named = {(d["path"], d["line"]) for d in diagnostics if d["code"] == "SGC322"}
    assert {("sglang_omni/scheduling/dllm_scheduler.py", 577), ("sglang_omni/models/zonos2/model_runner.py", 116),
            ("sglang_omni/scheduling/sglang_backend/output_processor.py", 142),
            ("sglang_omni/models/dots_tts/model_runner.py", 113)} <= named  # `req` in a loop, in a comprehension, `data.req`
    assert all(d["severity"] == "warning" and d["symbol"].startswith("sglang.srt.managers.schedule_batch.Req.")
               for d in diagnostics if d["code"] == "SGC322")
    assert not named & {(d["path"], d["line"]) for d in diagnostics if d["code"] == "SGC321"}  # never both
    _, fixed = run_json(capsys, omni_019, monkeypatch, "--old", "0.5.21", "--new", "0.5.22", "--select", "SGC322")
    assert fixed == []


def test_omni_018_bump_reports_the_python_that_sglang_0522_dropped(capsys, monkeypatch, omni_018: Path,
                                                                   omni_019: Path) -> None:
    """sglang 0.5.22's wheel requires Python 3.11; 0.1.8 still admitted 3.10, and 0.1.9 raised it."""
    _, diagnostics = run_json(capsys, omni_018, monkeypatch, "--new", "0.5.22", "--select", "SGC708")
    assert [(d["path"], d["line"], d["col"]) for d in diagnostics] == [("pyproject.toml", 12, 20)]
    assert "admits Python 3.10, which sglang 0.5.22 no longer supports" in diagnostics[0]["message"]
    _, fixed = run_json(capsys, omni_019, monkeypatch, "--old", "0.5.21", "--new", "0.5.22", "--select", "SGC708")
    assert fixed == []


def test_omni_019_has_no_call_errors_for_that_bump(capsys, monkeypatch, omni_019: Path) -> None:
    _, diagnostics = run_json(capsys, omni_019, monkeypatch, "--old", "0.5.21", "--new", "0.5.22")
    assert [d for d in diagnostics if d["code"].startswith("SGC2")] == []
    # 0.1.9 sets the attribute 0.1.8 lacked (to False), so the upstream method that reads
    # result_queue returns before it: no borrowed-code finding is left for that bump.
    assert [d for d in diagnostics if d["code"] == "SGC312"] == []


def test_omni_018_copy_of_the_scheduler_init_is_reported_when_upstream_changes_it(capsys, monkeypatch, omni_018: Path) -> None:
    _, diagnostics = run_json(capsys, omni_018, monkeypatch, "--new", "0.5.22", "--select", "SGC706,SGC707")
    # omni_scheduler.py: "Mirrors upstream Scheduler.__init__ (sglang/srt/managers/scheduler.py)". The
    # higgs_tts docstring names Qwen3ForCausalLM after "Composition over", which is no citation.
    assert [(d["path"], d["line"], d["code"], d["symbol"]) for d in diagnostics] == [
        ("sglang_omni/scheduling/omni_scheduler.py", 718, "SGC706", "sglang.srt.managers.scheduler.Scheduler.__init__")]
    assert "normalised lines differ from 0.5.21" in diagnostics[0]["message"]


def test_omni_019_bump_to_0523_reports_an_override_upstream_now_calls_with_a_new_keyword(capsys, monkeypatch,
                                                                                       omni_019: Path) -> None:
    """OmniScheduler borrows Scheduler through __getattr__ and overrides get_num_allocatable_reqs;
    0.5.23's borrowed prefill code calls it with num_held_rows=, which the override lacks."""
    _, diagnostics = run_json(capsys, omni_019, monkeypatch, "--new", "0.5.23", "--select", "SGC302")
    (borrowed,) = [d for d in diagnostics if d["path"] == "sglang_omni/scheduling/omni_scheduler.py"]
    assert borrowed["symbol"] == "sglang.srt.managers.scheduler.Scheduler.get_num_allocatable_reqs"
    assert "OmniScheduler.get_num_allocatable_reqs cannot accept num_held_rows" in borrowed["message"]
    # The message names the upstream caller that passes it, and how the project gets there.
    assert "Scheduler._get_new_batch_prefill_raw passes it" in borrowed["message"]
    assert borrowed["message"].endswith("OmniScheduler.get_new_batch_prefill -> Scheduler.get_new_batch_prefill"
                                        " -> Scheduler._get_new_batch_prefill_raw")
    # SGLModelRunner's init_kv_cache_configurator(self) takes no slot for the layout that
    # ModelRunner.alloc_memory_pool now passes positionally; omni calls alloc_memory_pool itself.
    (runner,) = [d for d in diagnostics if d["path"] == "sglang_omni/model_runner/sglang_model_runner.py"]
    assert "SGLModelRunner.init_kv_cache_configurator cannot accept draft_parallel_layout" in runner["message"]
    assert "ModelRunner.alloc_memory_pool passes it" in runner["message"]
    assert runner["severity"] == "error" and len(diagnostics) == 2


@pytest.mark.parametrize("version", ["0.1.6", "0.1.7"])
def test_omni_bump_to_0520_does_not_report_an_override_only_unrun_upstream_code_calls_with_the_new_keyword(
        capsys, monkeypatch, real_cache: Path, version: str) -> None:
    """0.5.20's ModelRunner.post_capture_resize_kv_pool gained draft_runners=(); the one upstream
    caller that passes it is Scheduler.init_model_worker, which sglang-omni never runs (it
    builds its model runner and calls the method itself, with no argument)."""
    omni = download_sdist("sglang-omni", version, real_cache)
    _, diagnostics = run_json(capsys, omni, monkeypatch, "--old", "0.5.19", "--new", "0.5.20", "--select", "SGC302")
    assert [d for d in diagnostics if "post_capture_resize_kv_pool" in d["message"]] == []


def test_omni_016_bump_to_0520_reports_calls_of_the_retired_server_args_accessor(capsys, monkeypatch,
                                                                                real_cache: Path) -> None:
    """sglang 0.5.20 keeps get_global_server_args() importable but makes it raise; sglang-omni
    0.1.6 called it from a vendor wrapper and several models (0.1.7 replaced every call)."""
    omni_016 = download_sdist("sglang-omni", "0.1.6", real_cache)
    _, diagnostics = run_json(capsys, omni_016, monkeypatch, "--new", "0.5.20", "--select", "SGC205")
    sites = {(d["path"], d["line"]) for d in diagnostics}
    assert {("sglang_omni/vendor/sglang/server_args.py", 12), ("sglang_omni/models/zonos2/sglang_model.py", 244),
            ("sglang_omni/models/nemotron_voicechat/talker.py", 240)} <= sites
    assert all(d["symbol"] == "sglang.srt.server_args.get_global_server_args" and d["severity"] == "error"
               and "now always raises RuntimeError in sglang 0.5.20 (it did not in 0.5.19)" in d["message"]
               for d in diagnostics)
    # 0.5.20 also decorated the borrowed scheduling steps with a wrapper that reads
    # self.scheduler_stage_metrics, which OmniScheduler never set (0.1.7 sets it).
    _, borrowed = run_json(capsys, omni_016, monkeypatch, "--new", "0.5.20", "--select", "SGC312")
    staged = [d for d in borrowed if "@scheduler_stage_method -> reads self.scheduler_stage_metrics" in d["message"]]
    assert {d["path"] for d in staged} == {"sglang_omni/scheduling/omni_scheduler.py", "sglang_omni/scheduling/pd_scheduler.py"}


def test_omni_017_bump_to_0521_reports_what_0_1_8_had_to_fix(capsys, monkeypatch, real_cache: Path) -> None:
    """Fixes sglang-omni 0.1.8 made for sglang 0.5.21 that an audit found the report missing."""
    omni_017 = download_sdist("sglang-omni", "0.1.7", real_cache)
    _, diagnostics = run_json(capsys, omni_017, monkeypatch, "--new", "0.5.21", "--select", "SGC2,SGC3")
    found = {(d["code"], d["path"], d["line"]): d["message"] for d in diagnostics}
    # self.weight_updater is built in ModelRunner.init_weight_updater, not __init__.
    assert "WeightUpdater.update_weights_from_distributed" in found["SGC321", "sglang_omni/model_runner/sglang_model_runner.py", 616]
    # Borrowed methods newly read attributes OmniScheduler never sets, on their own paths.
    borrowed = [m for (code, path, _), m in found.items() if code == "SGC312" and path.endswith("omni_scheduler.py")]
    assert any("reads self.sliding_window_size" in m for m in borrowed)
    assert any("reads self._prev_prefill_end_ts" in m for m in borrowed)
    # A __getattr__ borrower's method overrides: upstream callers now pass ignore_waiting.
    assert "cannot accept ignore_waiting" in found["SGC302", "sglang_omni/scheduling/pd_scheduler.py", 58]
    assert found["SGC302", "sglang_omni/scheduling/pd_scheduler.py", 58].endswith(
        "Scheduler.flush_cache passes it, on a path the project runs: PDKVLifecycle.flush_cache -> Scheduler.flush_cache")
    # **kwargs handed on to ModelRunner.__init__, which lost ps; the worker class lives in a function.
    assert "no longer accepts keyword ps" in found["SGC201", "sglang_omni/model_runner/mlx_model_worker.py", 299]
    assert "TpModelWorker.ps" in found["SGC321", "sglang_omni/model_runner/mlx_model_worker.py", 251]


MILES_SHAPES = {
    # miles/backends/megatron_utils/sglang.py at the commit before its bump to 0.5.16: the
    # primary import works on 0.5.15 and 0.5.16; 0.5.16 dropped the fallback's re-export.
    "app/sglang_shim.py": (
        "try:\n"
        "    from sglang.srt.weight_sync.tensor_bucket import FlattenedTensorBucket\n"
        "except ImportError:\n"
        "    from sglang.srt.model_executor.model_runner import FlattenedTensorBucket\n"
    ),
    # miles/backends/megatron_utils/update_weight/update_weight_from_tensor.py:330
    "app/update.py": (
        "from app.sglang_shim import FlattenedTensorBucket\n\n"
        "def multi_dtype():\n"
        "    return getattr(FlattenedTensorBucket, 'supports_multi_dtypes', False)\n"
    ),
    # A primary that really broke in 0.5.16 (triton_ops.extend_attention moved to
    # sglang.kernels): its fallback is taken, and imports there.
    "app/attention.py": (
        "try:\n"
        "    from sglang.srt.layers.attention.triton_ops.extend_attention import extend_attention_fwd_unified\n"
        "except ImportError:\n"
        "    from sglang.kernels.ops.attention.extend_attention import extend_attention_fwd_unified\n"
    ),
    # Code gated on the installed release: the old location only for releases before 0.5.16.
    "app/gated.py": (
        "import sglang\n"
        "from packaging import version\n\n"
        "SGLANG_GE_0_5_16 = version.parse(sglang.__version__) >= version.parse('0.5.16')\n"
        "if SGLANG_GE_0_5_16:\n"
        "    from sglang.kernels.ops.attention.extend_attention import extend_attention_fwd\n"
        "else:\n"
        "    from sglang.srt.layers.attention.triton_ops.extend_attention import extend_attention_fwd\n"
    ),
    # ... and a branch written the wrong way round: it runs on 0.5.16, and breaks there.
    "app/gated_wrong.py": (
        "from importlib.metadata import version\n\n"
        "if tuple(int(p) for p in version('sglang').split('.')[:3]) >= (0, 5, 16):\n"
        "    from sglang.srt.layers.attention.triton_ops.extend_attention import extend_attention_fwd\n"
    ),
}


def test_miles_fallback_and_version_gated_imports_against_0515_0516(tmp_path: Path, capsys, monkeypatch) -> None:
    """The miles shapes of issue 12 (causes 1 and 6) against the real 0.5.15 and 0.5.16 wheels:
    before the fix, two false SGC102 on the fallback and a false SGC804 (`supports_multi_dtypes`
    "removed") through it."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'app'\n")
    for relpath, text in {"app/__init__.py": "", **MILES_SHAPES}.items():
        (tmp_path / relpath).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relpath).write_text(text)
    _, diagnostics = run_json(capsys, tmp_path, monkeypatch, "--old", "0.5.15", "--new", "0.5.16")
    found = {(d["path"], d["line"], d["code"]) for d in diagnostics}
    # app/update.py's getattr default is dead on both releases (SGC801), but a bump run reports
    # SGC801 only in files with other findings of the bump, and that file has none.
    assert found == {
        ("app/attention.py", 2, "SGC104"),  # the primary that broke still falls back, and says so
        ("app/gated_wrong.py", 4, "SGC101"),  # the branch that runs on 0.5.16 and breaks there
    }, diagnostics


def test_omni_019_probes_of_optional_receivers_are_not_dead_code(capsys, monkeypatch, omni_019: Path) -> None:
    """`getattr(schedule_batch, "is_prefill_only", False)` with `schedule_batch: ScheduleBatch | None`
    does the None handling (11 SGC801 and 2 SGC802 on the pin alone were of this shape)."""
    _, diagnostics = run_json(capsys, omni_019, monkeypatch, "--old", "0.5.23", "--new", "0.5.23",
                              "--select", "SGC801,SGC802")
    found = {(d["path"], d["line"], d["code"]) for d in diagnostics}
    optional = {("sglang_omni/models/dots_tts/model_runner.py", 211, "SGC801"),  # ScheduleBatch | None
                ("sglang_omni/models/qwen3_omni/thinker_model_runner.py", 291, "SGC801"),  # ForwardBatch | None
                ("sglang_omni/models/moss_tts_local/model_runner.py", 140, "SGC802"),
                ("sglang_omni/models/moss_tts_local/model_runner.py", 314, "SGC802")}
    assert not {f for f in optional if f[2] == "SGC801" or f[1] == 140} & found
    # result.logits_output is Optional upstream: its .hidden_states read is None handling; the
    # read of logits_output itself on a plain GenerationBatchResult stays reported.
    at_314 = [d["symbol"] for d in diagnostics if d["line"] == 314 and d["path"].endswith("moss_tts_local/model_runner.py")]
    assert at_314 == ["sglang.srt.managers.utils.GenerationBatchResult.logits_output"]
    assert ("sglang_omni/quantization.py", 329, "SGC801") in found  # model_config: ModelConfig, not Optional
    assert ("sglang_omni/models/minimax_music3/model_runner.py", 194, "SGC801") in found  # ScheduleBatch, not Optional


def test_omni_019_bump_to_0523_hints_and_noise(capsys, monkeypatch, omni_019: Path) -> None:
    _, diagnostics = run_json(capsys, omni_019, monkeypatch, "--new", "0.5.23")
    (rmsnorm,) = [d["message"] for d in diagnostics if d["code"] == "SGC102" and d["symbol"].endswith("rmsnorm")]
    # 0.5.23's norm.rmsnorm is an in-place kernel (input, weight, out=None, eps): not the same thing.
    assert "did you mean" not in rmsnorm
    assert "unverified candidates, not the same definition: sglang.kernels.ops.layernorm.norm.rmsnorm(" in rmsnorm
    # ... while the release's own layers import the same-signature kernel from sgl_kernel
    assert "; the release's own code imports rmsnorm from sgl_kernel (in " in rmsnorm
    # SGC801/SGC803 repeat on every bump: only in files the bump touches (none here).
    assert not [d for d in diagnostics if d["code"] in ("SGC801", "SGC803")]
    (load_batch, *_) = [d["message"] for d in diagnostics if d["code"] == "SGC303" and "load_batch" in d["message"]]
    assert "; first change: " in load_batch


def test_borrowed_code_on_paths_the_project_never_runs_is_not_reported(capsys, monkeypatch, real_cache: Path,
                                                                       omni_019: Path) -> None:
    """SGC312 on the real bumps: what a borrowed setter the project calls sets is set, branches
    the project's own values decide are not entered, and one finding carries one fix."""
    omni_014 = download_sdist("sglang-omni", "0.1.4", real_cache)
    omni_015 = download_sdist("sglang-omni", "0.1.5", real_cache)
    bump = ("--old", "0.5.18", "--new", "0.5.19", "--select", "SGC312")
    # 0.1.4 never set what 0.5.19's borrowed code reads; 0.1.5 calls the new borrowed
    # init_beam_coordinator and init_load_publisher, which set them.
    _, broken = run_json(capsys, omni_014, monkeypatch, *bump)
    assert {"self.beam_coordinator", "self.load_publisher", "self.prefill_decode_interval"} <= {
        word.rstrip(",") for d in broken for word in d["message"].split() if word.startswith("self.")}
    _, fixed = run_json(capsys, omni_015, monkeypatch, *bump)
    assert fixed == []
    # process_batch_result_disagg_prefill runs only in prefill mode; OmniScheduler's
    # initial_disaggregation_mode() returns DisaggregationMode.NULL.
    omni_016 = download_sdist("sglang-omni", "0.1.6", real_cache)
    omni_017 = download_sdist("sglang-omni", "0.1.7", real_cache)
    _, borrowed = run_json(capsys, omni_016, monkeypatch, "--old", "0.5.19", "--new", "0.5.20", "--select", "SGC312")
    assert borrowed and not any("req_to_metadata_buffer_idx_allocator" in d["message"] for d in borrowed)
    _, fixed = run_json(capsys, omni_017, monkeypatch, "--old", "0.5.19", "--new", "0.5.20", "--select", "SGC312")
    assert fixed == []
    # The live bump: maybe_send_health_check_signal reads rust_server only while
    # return_health_check_ipcs, which OmniScheduler sets to [] and never fills, is not empty.
    _, live = run_json(capsys, omni_019, monkeypatch, "--new", "0.5.23", "--select", "SGC312")
    found = {(d["path"], d["line"]): d["message"] for d in live}
    assert not any("maybe_send_health_check_signal" in m for m in found.values())
    pause = found["sglang_omni/scheduling/omni_scheduler.py", 2068]
    assert "never sets self._pause_intervals and self._pause_started_at" in pause
    assert "upstream Scheduler.init_load_inquirer sets _pause_intervals = deque(" in pause
    assert "send_abort_output -> reads self.rust_server" in found["sglang_omni/scheduling/pd_scheduler.py", 375]
    # The cheapest path aborts beam groups, which omni never builds; the one it runs is its own
    # enqueue path, through _abort_on_queued_limit: printed beside it.
    assert ("(also through OmniScheduler.enqueue_built_request.enqueue_if_live -> Scheduler._abort_on_queued_limit"
            " -> Scheduler.send_abort_output)") in found["sglang_omni/scheduling/omni_scheduler.py", 1918]
    assert len(live) == 5
    # SGC313: a changed borrowed method whose call now reaches such a read is an error, one whose
    # new read sits behind a branch omni's values close (abort_on_priority_when_disabled = False)
    # stays a warning
    _, changed = run_json(capsys, omni_019, monkeypatch, "--new", "0.5.23", "--select", "SGC313")
    severity = {d["line"]: d["severity"] for d in changed if d["path"] == "sglang_omni/scheduling/omni_scheduler.py"}
    assert (severity[1721], severity[1717]) == ("error", "warning")
    (queued,) = [d["message"] for d in changed if d["line"] == 1721]
    assert "the call now reaches a read of self.rust_server, which OmniScheduler never sets" in queued
    # flush_cache on a PD decode stage: 0.5.23's is_fully_idle calls a method the stand-in lacks.
    _, stand_in = run_json(capsys, omni_019, monkeypatch, "--new", "0.5.23", "--select", "SGC314")
    assert [(d["path"], d["line"], d["severity"], d["symbol"].rsplit(".", 2)[-2:]) for d in stand_in] == [
        ("sglang_omni/scheduling/pd_scheduler.py", 74, "error", ["disagg_decode_transfer_queue", "has_pending_deferred_releases"])]


@pytest.mark.parametrize(("version", "old", "new"), [
    ("0.1.4", "0.5.16", "0.5.18"), ("0.1.5", "0.5.18", "0.5.19"), ("0.1.7", "0.5.19", "0.5.20"),
    ("0.1.8", "0.5.20", "0.5.21"), ("0.1.9", "0.5.21", "0.5.22"),
])
def test_a_release_that_made_a_bump_has_no_error_for_that_bump(capsys, monkeypatch, real_cache: Path,
                                                               version: str, old: str, new: str) -> None:
    """Each sglang-omni release that moved the pin fixed what its bump broke: an error the check
    still gives there is false or on a path omni never takes (issue 12's audit found 8 of them:
    disaggregation-only paths, None-valued delayers, properties taken for fields, overrides no
    upstream caller reaches)."""
    omni = download_sdist("sglang-omni", version, real_cache)
    _, diagnostics = run_json(capsys, omni, monkeypatch, "--old", old, "--new", new)
    assert diagnostics, "a bump this size always leaves warnings to review"
    assert [(d["path"], d["line"], d["code"]) for d in diagnostics if d["severity"] == "error"] == []
