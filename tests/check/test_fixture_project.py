"""End to end on the fixture project (fixtures/project) against the fixture upstream pair.

The expected diagnostics are written by hand from the fixture files; fixtures/README.md
says which line exercises what.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import (EXPECTED, EXPECTED_SEVERITY, NEW, OLD, PIN_ALONE, PIN_ALONE_ONLY, PROJECT, UNRESOLVED,
                           checkout_env, coded, sort_key)
from sglang_contracts.project.pins import find_sglang_pin
from sglang_contracts.check.runner import CheckOptions, run_check



def without(*codes: str) -> list[str]:
    return [p for p in EXPECTED if not p.endswith(codes)]




def test_reports_every_broken_contract_and_exits_1(check):
    result = check()
    assert result.prefixes == EXPECTED
    assert result.status == 1
    assert result.err == ""


def test_messages_name_the_change_and_suggest_new_homes(check):
    result = check()
    assert "did you mean sglang.srt.layers.quantization.base_config.get_quantization_config?" in result.message(
        "demo_omni/layers.py:5:75: SGC102")
    assert result.message("demo_omni/layers.py:4:35: SGC103") == (
        "sglang.srt.layers.moe.FusedMoE now resolves to sglang.srt.layers.moe.moe_runner.FusedMoE in sglang 0.9.1 "
        "(was sglang.srt.layers.moe.fused_moe_triton.FusedMoE in 0.9.0)")
    assert result.message("demo_omni/model_patch.py:5:39: SGC105").endswith(
        "did you mean sglang.srt.layers.layernorm.apply_qk_norm?")
    # fused_experts moved and gained top_k: not the same definition, so no "did you mean".
    assert result.message("demo_omni/layers.py:8:56: SGC104").endswith(
        "; unverified candidates, not the same definition: sglang.srt.layers.moe.moe_runner.fused_experts("
        "hidden_states, weights, top_k=...); it was fused_experts(hidden_states, weights)")
    assert "did you mean" not in result.message("demo_omni/compat.py:6:36: SGC102")  # removed outright


def test_class_and_call_messages_say_what_changed_upstream(check):
    result = check()
    assert (
        "OmniScheduler.step -> Scheduler.get_next_batch_to_run -> Scheduler.process_pending_chunked_abort"
        " -> reads self.mm_receiver") in result.message("demo_omni/omni_scheduler.py:16:21: SGC312")
    # grammar_queue is read by the same new code, but __getattr__ special-cases it: not reported.
    assert not any("grammar_queue" in result.message(p) for p in result.prefixes)
    assert result.message("demo_omni/model_runner.py:33:34: SGC321").endswith("now reached as .ps.tp_group?")
    assert result.message("demo_omni/model.py:8:48: SGC201") == (
        "RowParallelLinear() no longer accepts keyword tp_rank in sglang 0.9.1 (it was a parameter in 0.9.0)")
    assert result.message("demo_omni/model_runner.py:9:9: SGC303").endswith(
        "(1 of 2 normalised lines differ from 0.9.0; first change: +`self.model_loaded = True`); review the override")


def test_exit_zero_reports_the_same_and_exits_0(check):
    result = check("--exit-zero")
    assert result.prefixes == EXPECTED
    assert result.status == 0




def test_same_release_on_both_sides_reports_only_what_the_pin_alone_says(check):
    result = check(new=OLD)
    assert result.prefixes == sorted(PIN_ALONE, key=sort_key)
    assert all(result.message(p).endswith("the fallback is dead code") for p in PIN_ALONE_ONLY[:1])
    clean = check("--ignore", "SGC000,SGC5,SGC8", new=OLD)
    assert (clean.status, clean.out, clean.err) == (0, "", "")


def test_json_format(check):
    result = check("--format", "json")
    assert result.status == 1
    records = json.loads(result.out)
    assert all(set(r) == {"path", "line", "col", "end_line", "end_col", "code", "severity", "surface", "message",
                          "symbol", "old", "new", "fingerprint"} for r in records)
    by_prefix = {f"{r['path']}:{r['line']}:{r['col']}: {r['code']}": r for r in records}
    assert list(by_prefix) == EXPECTED and len(records) == len(EXPECTED)
    assert {p: r["severity"] for p, r in by_prefix.items()} == EXPECTED_SEVERITY
    assert all(isinstance(r["line"], int) and isinstance(r["col"], int) and r["message"] for r in records)
    assert by_prefix["demo_omni/model_patch.py:5:39: SGC105"]["symbol"] == "sglang.srt.models.utils.apply_qk_norm"
    assert by_prefix["demo_omni/scheduling.py:7:8: SGC101"]["symbol"] == "sglang.srt.managers.tp_worker_overlap_thread"
    text = check()
    severity = {"error": ""} | {s: f"{s}: " for s in ("warning", "info")}
    assert [f"{p} {severity[r['severity']]}{r['message']}" for p, r in by_prefix.items()] == text.lines


def test_json_end_positions_cover_the_reported_name(check):
    records = json.loads(check("--format", "json").out)
    spans = {f"{r['path']}:{r['line']}:{r['col']}: {r['code']}": (r["end_line"], r["end_col"]) for r in records}
    assert spans["demo_omni/layers.py:4:35: SGC103"] == (4, 35 + len("FusedMoE"))
    assert spans["demo_omni/model_patch.py:5:39: SGC105"] == (5, 39 + len("apply_qk_norm"))
    module = "sglang.srt.managers.tp_worker_overlap_thread"
    assert spans["demo_omni/scheduling.py:7:8: SGC101"] == (7, 8 + len(module))
    assert spans["demo_omni/broken.py:5:15: SGC000"] == (None, None)  # a syntax error has no name to span
    for record in records:  # the span is the symbol's name as written in the file
        if record["end_col"] is not None:
            line = (PROJECT / record["path"]).read_text().splitlines()[record["line"] - 1]
            assert record["symbol"].endswith(line[record["col"] - 1 : record["end_col"] - 1])


def test_json_says_what_each_release_has_for_the_symbol(check):
    records = {f"{r['path']}:{r['line']}:{r['col']}: {r['code']}": r for r in json.loads(check("--format", "json").out)}
    moved = records["demo_omni/layers.py:4:35: SGC103"]
    assert moved["old"] == {"release": "0.9.0", "status": "found", "kind": "class",
                            "defined_at": "sglang.srt.layers.moe.fused_moe_triton.FusedMoE"}
    assert moved["new"] == {"release": "0.9.1", "status": "found", "kind": "class",
                            "defined_at": "sglang.srt.layers.moe.moe_runner.FusedMoE"}
    gone = records["demo_omni/scheduling.py:7:8: SGC101"]
    assert gone["old"]["kind"] == "module" and gone["new"] == {"release": "0.9.1", "status": "missing"}
    assert records["demo_omni/broken.py:5:15: SGC000"]["old"] is None  # not about an upstream name
    assert {r["surface"] for r in records.values()} == {
        "imports", "project-files", "calls", "subclasses", "borrowed-methods", "attribute-reads", "stack", "patch-files",
        "monkeypatches", "server-args", "tests", "defensive-access"}


def test_text_marks_warnings_and_infos_but_not_errors(check):
    lines = {" ".join(line.split(" ", 2)[:2]): line for line in check("--report-unresolved").lines}
    for prefix, severity in {**EXPECTED_SEVERITY, UNRESOLVED: "info"}.items():
        rest = lines[prefix][len(prefix) + 1 :]
        assert rest.startswith(f"{severity}: ") == (severity != "error"), lines[prefix]


@pytest.mark.parametrize(
    "options, expected",
    [
        (["--select", "SGC10", "--ignore", "SGC105"], [p for p in coded("SGC10") if not p.endswith("SGC105")]),
        (["--select", "SGC101,SGC105"], [p for p in EXPECTED if p.endswith(("SGC101", "SGC105"))]),
        (["--ignore", "SGC1,SGC4,SGC5,SGC6,SGC7,SGC8,SGC9"],
         ["demo_omni/broken.py:5:15: SGC000", *coded("SGC2"), *coded("SGC3")]),
        (["--select", "SGC7", "--ignore", "SGC702"], [p for p in coded("SGC7") if not p.endswith("SGC702")]),
        (["--select", "SGC9"], coded("SGC9")),
        (["--select", "SGC105", "--ignore", "SGC1"], [p for p in EXPECTED if p.endswith("SGC105")]),  # longest wins
        (["--select", "sgc103"], ["demo_omni/layers.py:4:35: SGC103"]),
        (["--select", "SGC2"], coded("SGC2")),
        (["--select", "SGC31"], coded("SGC31")),
        (["--select", "SGC4"], coded("SGC4")),
        (["--select", "SGC6,SGC8"], coded("SGC6") + coded("SGC8")),
        (["--select", "SGC8"], coded("SGC8")),
    ],
)
def test_select_and_ignore_are_code_prefixes(check, options, expected):
    result = check(*options)
    assert sorted(result.prefixes) == sorted(expected)
    assert result.status == (1 if expected else 0)


def test_noqa_comments(check, tmp_path):
    compat = [p for p in check().prefixes if p.startswith("demo_omni/compat.py:")]
    # line 3 `# noqa: SGC102` and line 4 blanket `# noqa` are silenced; line 5 `# noqa: some-other-tool`
    # and line 6 `# noqa: E402, SGC101` (on an SGC102) are not.
    assert compat == ["demo_omni/compat.py:5:44: SGC102", "demo_omni/compat.py:6:36: SGC102"]

    # The silenced lines are real findings: strip the comments and they are reported.
    copy = tmp_path / "project"
    shutil.copytree(PROJECT, copy)
    source = copy / "demo_omni" / "compat.py"
    source.write_text("".join(line.split("  # noqa")[0] + "\n" for line in source.read_text().splitlines()))
    unsilenced = [p for p in check(cwd=copy).prefixes if p.startswith("demo_omni/compat.py:")]
    assert unsilenced == [
        "demo_omni/compat.py:3:44: SGC102",
        "demo_omni/compat.py:4:6: SGC101",
        "demo_omni/compat.py:5:44: SGC102",
        "demo_omni/compat.py:6:36: SGC102",
    ]


def test_report_unresolved_adds_contracts_broken_on_both_releases_as_info(check):
    assert UNRESOLVED not in check().prefixes
    result = check("--report-unresolved", "--format", "json")
    records = json.loads(result.out)
    prefixes = [f"{r['path']}:{r['line']}:{r['col']}: {r['code']}" for r in records]
    # the guarded import of a kernel neither release has (layers.py:13) stays silent even so
    assert sorted(prefixes) == sorted(EXPECTED + [UNRESOLVED])
    severities = {p: r["severity"] for p, r in zip(prefixes, records)}
    assert severities[UNRESOLVED] == "info"
    assert {p: s for p, s in severities.items() if p != UNRESOLVED} == EXPECTED_SEVERITY


def test_report_unresolved_message_does_not_claim_the_old_release_had_it(check):
    message = check("--report-unresolved").message(UNRESOLVED)
    assert "run_scheduler_proc" in message
    assert "it was in 0.9.0" not in message  # it was not: the name is missing from 0.9.0 too


def test_checking_one_file_still_sees_modules_it_imports_from_the_project(check):
    # engine.py reads server_args.prepare_server_args through demo_omni.vendor.sglang.core.
    result = check("demo_omni/engine.py")
    assert result.prefixes == ["demo_omni/engine.py:8:28: SGC105"]


def test_paths_restrict_the_report_and_output_is_relative_to_the_working_directory(check):
    result = check("demo_omni/layers.py")
    assert result.prefixes == [p for p in EXPECTED if p.startswith("demo_omni/layers.py:")]
    inside = check(cwd=PROJECT / "demo_omni")
    package = [p.removeprefix("demo_omni/") for p in EXPECTED if p.startswith("demo_omni/")]
    assert inside.prefixes == sorted(package, key=sort_key)


def test_old_defaults_to_the_projects_pin():
    pin = find_sglang_pin(PROJECT)
    assert (pin.version, pin.where) == ("0.9.0", "pyproject.toml")


def test_no_old_and_no_pin_is_a_usage_error(check, tmp_path):
    project = tmp_path / "unpinned"
    (project / "app").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[project]\nname = "unpinned"\ndependencies = ["sglang>=0.9"]\n')
    (project / "app" / "main.py").write_text("from sglang.srt.server_args import ServerArgs\n")
    result = check(old=None, cwd=project)
    assert result.status == 2
    assert result.out == ""
    assert len(result.err.splitlines()) == 1
    assert result.err.startswith("sglang-contracts: error: --old not given")


def test_nonexistent_path_is_a_one_line_error(check):
    result = check("demo_omni/missing.py")
    assert result.status == 2
    assert result.out == ""
    assert result.err.splitlines() == ["sglang-contracts: error: demo_omni/missing.py: no such file or directory"]


def _run_check(cache: Path):
    return run_check([PROJECT], CheckOptions(old=str(OLD), new=str(NEW), cache_dir=cache))


def test_warm_cache_gives_identical_output_without_parsing(check, cache_dir):
    cold = check()
    first = _run_check(cache_dir)
    assert first.diagnostics and list(cache_dir.rglob("*.record"))
    warm = _run_check(cache_dir)
    assert (warm.project.parsed, warm.old.stats.parsed, warm.new.stats.parsed) == (0, 0, 0)
    assert warm.old.stats.from_cache > 0 and warm.new.stats.from_cache > 0
    assert warm.diagnostics == first.diagnostics
    assert check() == cold


def test_corrupt_cache_entries_are_rebuilt(check, cache_dir):
    cold = check()
    entries = list(cache_dir.rglob("*.record"))
    assert entries
    for entry in entries:
        entry.write_bytes(b"\x00{not json")
    again = _run_check(cache_dir)
    assert again.project.parsed > 0 and again.old.stats.parsed > 0  # garbage was not trusted
    assert check() == cold


def test_python_dash_m_entry_point(check, cache_dir):
    in_process = check()
    completed = subprocess.run(
        [sys.executable, "-m", "sglang_contracts", "check", "--old", str(OLD), "--new", str(NEW)],
        cwd=PROJECT, capture_output=True, text=True, env=checkout_env(SGLANG_CONTRACTS_CACHE=str(cache_dir)),
    )
    assert completed.returncode == 1
    assert completed.stdout == in_process.out
    assert completed.stderr == ""
