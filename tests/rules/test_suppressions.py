"""Unused `# noqa` (SGC010), noqa in files the scanner does not read, and baselines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import PROJECT, add_settings
from sglang_contracts.diagnostics import Diagnostic
from sglang_contracts.diagnostics.suppressions import NoqaIndex, ProjectText
from tests.helpers import EXPECTED, sort_key


@pytest.fixture
def project(tmp_path) -> Path:
    copy = tmp_path / "project"
    shutil.copytree(PROJECT, copy)
    return copy


def test_unused_noqa_is_reported_only_when_asked(check):
    assert check().prefixes == EXPECTED
    result = check("--report-unused-noqa")
    line = (PROJECT / "demo_omni" / "compat.py").read_text().splitlines()[5]
    col = line.index("# noqa") + 1
    unused = f"demo_omni/compat.py:6:{col}: SGC010"
    assert result.prefixes == sorted(EXPECTED + [unused], key=sort_key)
    # `# noqa: E402, SGC101` on an SGC102 line: SGC101 silences nothing there (E402 is not ours).
    assert result.message(unused) == "unused noqa: nothing on this line is reported as SGC101"
    assert result.lines[result.prefixes.index(unused)].split(" ", 2)[2].startswith("warning: ")


def test_unused_noqa_judges_only_codes_that_were_checked(check):
    result = check("--report-unused-noqa", "--ignore", "SGC101")
    assert not [p for p in result.prefixes if p.endswith("SGC010")]
    # and an SGC010 can itself be silenced or ignored like any other code
    assert not [p for p in check("--report-unused-noqa", "--ignore", "SGC010").prefixes if p.endswith("SGC010")]


def test_noqa_in_a_file_the_scanner_does_not_read(tmp_path):
    (tmp_path / "Dockerfile").write_text("FROM lmsysorg/sglang:v0.5.21\nARG TAG=v0.5.21  # noqa: SGC701\n")
    noqa = NoqaIndex({}, ProjectText(tmp_path))
    on_line_2 = Diagnostic("Dockerfile", 2, 9, "SGC701", "error", "pin moved", "")
    assert noqa.suppresses(on_line_2)
    assert not noqa.suppresses(Diagnostic("Dockerfile", 1, 1, "SGC701", "error", "pin moved", ""))
    assert not noqa.suppresses(Diagnostic("Dockerfile", 2, 9, "SGC702", "error", "other", ""))
    assert not noqa.suppresses(Diagnostic("no/such/file.patch", 3, 1, "SGC901", "error", "gone", ""))


def read(path: Path) -> dict:
    return json.loads(path.read_text())


def test_baseline_round_trip_survives_line_moves_and_keeps_justifications(check, project):
    baseline = project / "contracts-baseline.json"
    written = check("--write-baseline", str(baseline), cwd=project)
    assert (written.status, written.out) == (0, "")
    assert written.err.strip() == f"sglang-contracts: wrote {len(EXPECTED)} accepted findings to {baseline}"
    document = read(baseline)
    assert [f"{e['path']}:{e['line']}: {e['code']}" for e in document["findings"]] == [
        ":".join(p.split(":")[:2]) + ": " + p.split(": ")[1] for p in EXPECTED]
    assert all(e["justification"] == "" and e["symbol"] is not None for e in document["findings"])

    accepted = check("--baseline", str(baseline), cwd=project)
    assert (accepted.status, accepted.out) == (0, "")

    # Write a justification, move lines around, and add one new break.
    (broken,) = [entry for entry in document["findings"] if entry["path"] == "demo_omni/broken.py"]
    broken["justification"] = "broken.py is a fixture for syntax errors"
    baseline.write_text(json.dumps(document))
    layers = project / "demo_omni" / "layers.py"
    layers.write_text('"""Moved down by a docstring."""\n\n' + layers.read_text())
    (project / "demo_omni" / "new_break.py").write_text(
        "from sglang.srt.managers.tp_worker_overlap_thread import TpModelWorkerClient\n")
    after = check("--baseline", str(baseline), cwd=project)
    assert after.status == 1
    assert after.prefixes == ["demo_omni/new_break.py:1:6: SGC101"]

    check("--write-baseline", str(baseline), "--baseline", str(baseline), cwd=project)
    rewritten = read(baseline)["findings"]
    assert len(rewritten) == len(EXPECTED) + 1
    assert [e["justification"] for e in rewritten if e["path"] == "demo_omni/broken.py"] == [
        "broken.py is a fixture for syntax errors"]
    assert [e["line"] for e in rewritten if e["path"] == "demo_omni/layers.py"] == [6, 7, 10]


def test_baseline_accepts_each_finding_once(check, project):
    baseline = project / "b.json"
    check("--write-baseline", str(baseline), cwd=project)
    # The same break a second time in the same file, on a new line: one is accepted, one is new.
    compat = project / "demo_omni" / "compat.py"
    compat.write_text(compat.read_text() + "from sglang.srt.server_args import prepare_server_args\n")
    assert check("--baseline", str(baseline), cwd=project).prefixes == ["demo_omni/compat.py:7:36: SGC102"]


def test_baseline_from_the_configuration(check, project):
    check("--write-baseline", str(project / "accepted.json"), cwd=project)
    add_settings(project / "pyproject.toml", 'baseline = "accepted.json"\n')
    result = check(cwd=project / "demo_omni")
    assert (result.status, result.out) == (0, "")


@pytest.mark.parametrize("content, says", [
    ("{not json", "the baseline is not valid JSON"),
    ('{"findings": 3}', 'not a sglang-contracts baseline (no "findings" list)'),
    ('{"findings": [{"code": 1}]}', "finding 1 needs string fields"),
    # JSON keeps the last of two: a second list far down accepted what the first did not (campaign 17, R03)
    ('{"findings": [], "findings": [{"code": "SGC102", "path": "demo_omni/compat.py"}]}',
     "the baseline gives 'findings' twice in one object: keep one"),
    ('{"findings": [{"code": "SGC102", "path": "a.py", "path": "demo_omni/compat.py"}]}',
     "the baseline gives 'path' twice in one object: keep one"),
])
def test_bad_baseline_is_a_one_line_error(check, project, content, says):
    baseline = project / "bad.json"
    baseline.write_text(content)
    result = check("--baseline", str(baseline), cwd=project)
    assert result.status == 2 and result.out == ""
    (line,) = result.err.splitlines()
    assert says in line and str(baseline) in line


def test_a_baseline_that_is_a_link_into_the_version_control_folder_is_not_read(check, project):
    """`baseline = "cfg.json"`, a committed link to `.git/config` (where actions/checkout keeps
    its token): opened and parsed, its parse error quoting a position of it (campaign 18, R03)."""
    (project / ".git").mkdir(exist_ok=True)
    (project / ".git" / "config").write_text("[http]\n\textraheader = AUTHORIZATION: basic TOPSECRET\n")
    (project / "cfg.json").symlink_to(".git/config")
    result = check("--baseline", str(project / "cfg.json"), cwd=project)
    assert (result.status, result.out) == (2, "")
    assert result.err == (f"sglang-contracts: error: {project / 'cfg.json'}: in the project's version control folder, "
                          "not read as the baseline\n")


def test_a_hook_held_by_findings_says_how_to_commit_meanwhile(check, project, monkeypatch):
    """pre-commit sets PRE_COMMIT: a first commit held by the bump's findings is told about the
    baseline; a CI run (no PRE_COMMIT), a run with a baseline, and a run that passes are not."""
    ci = check(cwd=project)
    assert ci.status == 1 and "--write-baseline" not in ci.err
    monkeypatch.setenv("PRE_COMMIT", "1")
    held = check(cwd=project)
    assert held.status == 1 and held.err.count("--write-baseline contracts-baseline.json") == 1
    baseline = project / "contracts-baseline.json"
    assert check("--write-baseline", str(baseline), cwd=project).status == 0
    with_baseline = check("--baseline", str(baseline), cwd=project)
    assert with_baseline.status == 0 and "--write-baseline" not in with_baseline.err


def test_a_baseline_named_by_a_link_out_is_replaced_never_written_through_or_read(check, project, tmp_path):
    """audit5 N07: a pull request commits `contracts-baseline.json -> ../outside.json`; `check
    --write-baseline` wrote through it (and read its justifications into the new baseline)."""
    outside = tmp_path / "outside.json"
    secret = json.dumps({"findings": [{"code": "SGC102", "path": "x.py", "symbol": "s", "fingerprint": "f",
                                       "justification": "SECRET from outside"}]})
    outside.write_text(secret)
    link = project / "contracts-baseline.json"
    link.symlink_to(outside)
    written = check("--write-baseline", str(link), cwd=project)
    assert written.status == 0, written.err
    assert outside.read_text() == secret  # the target is untouched
    assert not link.is_symlink() and link.is_file()  # the link itself was replaced, inside the project
    assert "SECRET" not in link.read_text() and read(link)["findings"]
