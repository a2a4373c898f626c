"""The VS Code problem matcher in docs/editors.md, applied to real output of the text format."""

from __future__ import annotations

import json
import re

from tests.helpers import CHECKOUT, NEW, OLD, PROJECT, checkout_env
from tests.helpers import EXPECTED_SEVERITY, EXPECTED, UNRESOLVED, sort_key
from tests.helpers import run_in_terminal

DOC = CHECKOUT / "docs" / "editors.md"


def tasks_json() -> dict:
    (block,) = re.findall(r"```json\n(.*?)\n```", DOC.read_text(), flags=re.S)
    return json.loads(block)


def vscode_severity(value: str | None, default: str) -> str:
    """VS Code's reading of a matched severity (problemMatcher.ts getSeverity): a known word,
    else the matcher's default."""
    known = {"error": "error", "warning": "warning", "warn": "warning", "info": "info", "E": "error",
             "W": "warning", "I": "info", "hint": "info", "note": "info"}
    return known.get(value or "", default)


def parse(output: str) -> list[dict]:
    (task,) = tasks_json()["tasks"]
    matcher = task["problemMatcher"]
    pattern = matcher["pattern"]
    regexp = re.compile(pattern["regexp"])  # the JSON string, unescaped by json.loads, as VS Code reads it
    problems = []
    for line in output.splitlines():
        match = regexp.search(line)
        if match:
            problems.append({
                "path": match.group(pattern["file"]), "line": int(match.group(pattern["line"])),
                "col": int(match.group(pattern["column"])), "code": match.group(pattern["code"]),
                "severity": vscode_severity(match.group(pattern["severity"]), matcher["severity"]),
                "message": match.group(pattern["message"]),
            })
    return problems


def test_task_runs_the_tool_without_colour():
    (task,) = tasks_json()["tasks"]
    assert task["command"].startswith("sglang-contracts check")
    assert task["options"]["env"]["NO_COLOR"]
    assert task["problemMatcher"]["fileLocation"] == ["relative", "${workspaceFolder}"]


def test_problem_matcher_reads_every_finding_with_its_severity(check):
    text = check("--report-unresolved")
    records = json.loads(check("--report-unresolved", "--format", "json").out)
    problems = parse(text.out)
    assert len(problems) == len(records) == len(EXPECTED) + 1
    for problem, record in zip(problems, records):
        assert problem == {key: record[key] for key in ("path", "line", "col", "code", "severity", "message")}
    severities = {problem["severity"] for problem in problems}
    assert severities == {"error", "warning", "info"}


def test_problem_matcher_on_terminal_output(cache_dir):
    """As in a VS Code task: a terminal, NO_COLOR from the task's env; the summary matches nothing."""
    env = checkout_env(SGLANG_CONTRACTS_CACHE=str(cache_dir), **tasks_json()["tasks"][0]["options"]["env"])
    status, out, _ = run_in_terminal(["check", "--old", str(OLD), "--new", str(NEW), "--report-unresolved"],
                                     PROJECT, env)
    assert status == 1
    lines = out.replace("\r\n", "\n").splitlines()
    severities = list(EXPECTED_SEVERITY.values())
    files = len({prefix.split(":")[0] for prefix in EXPECTED})
    assert lines[-1] == f"{severities.count('error')} errors, {severities.count('warning')} warnings, 1 info in {files} files"
    problems = parse("\n".join(lines))
    assert [f"{p['path']}:{p['line']}:{p['col']}: {p['code']}" for p in problems] == sorted(
        EXPECTED + [UNRESOLVED], key=sort_key)
