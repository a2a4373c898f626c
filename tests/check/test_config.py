"""`[tool.sglang-contracts]` and `--config FILE` on copies of the fixture project."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sglang_contracts.cli import main

from tests.helpers import NEW, OLD, PROJECT, add_settings
from sglang_contracts.cli import build_parser, _options
from sglang_contracts.config import with_source
from tests.helpers import EXPECTED, EXPECTED_SEVERITY, UNRESOLVED


@pytest.fixture
def project(tmp_path) -> Path:
    """A copy of the fixture project next to a copy of the upstream pair (so relative paths work)."""
    shutil.copytree(OLD, tmp_path / "upstream" / "old")
    shutil.copytree(NEW, tmp_path / "upstream" / "new")
    copy = tmp_path / "project"
    shutil.copytree(PROJECT, copy)
    return copy


def configure(project: Path, table: str) -> None:
    add_settings(project / "pyproject.toml", table)


def test_old_and_new_from_the_configuration(check, project):
    configure(project, 'old = "../upstream/old"\nnew = "../upstream/new"\n')
    result = check(old=None, new=None, cwd=project)
    assert (result.status, result.prefixes, result.err) == (1, EXPECTED, "")


def test_command_line_flags_win_over_the_file(check, project):
    configure(project, 'old = "../upstream/old"\nnew = "../upstream/old"\nselect = ["SGC101"]\n')
    assert check(old=None, new=None, cwd=project).status == 0  # same release on both sides: nothing
    result = check("--select", "SGC1", old=None, new=NEW, cwd=project)
    assert result.prefixes == [p for p in EXPECTED if p.endswith(("SGC101", "SGC102", "SGC103", "SGC104", "SGC105"))]
    only_101 = check(old=None, new=NEW, cwd=project)  # select from the file applies when no flag is given
    assert only_101.prefixes == [p for p in EXPECTED if p.endswith("SGC101")]


@pytest.mark.parametrize(
    "table, error",
    [
        ('selct = ["SGC1"]\n', "unknown key 'selct' (did you mean 'select'?)"),
        ('colour = true\n', "unknown key 'colour'"),
        ('select = "SGC1, E501"\n', "select 'E501' is not a rule code or code prefix (SGC, SGC1, SGC102, ...)"),
        ('report-unresolved = "yes"\n', "report-unresolved must be true or false"),
        ('source = "svn"\n', "source must be one of index, git, directory"),
        ('[tool.sglang-contracts.severity]\nSGC103 = "fatal"\n', "severity [SGC103] must be one of error, warning, info"),
        # one code twice: the later silently won (campaign 12, R06)
        ('[tool.sglang-contracts.severity]\nSGC102 = "info"\nsgc102 = "error"\n',
         "severity has both [SGC102] and [sgc102], which name the same 'SGC102': keep one"),
        # matched nothing, silently (campaign 18, R04)
        ('exclude = ["sub\\\\m.py"]\n', "exclude 'sub\\\\m.py' holds a backslash: write paths with /"),
        ('[tool.sglang-contracts.per-file-ignores]\n"sub\\\\m.py" = ["SGC1"]\n',
         "per-file-ignores 'sub\\\\m.py' holds a backslash: write paths with /"),
        # a key of no code ended the run in an internal error; one of two set the first (campaign 17, R01, R02)
        *((f'[tool.sglang-contracts.severity]\n"{key}" = "info"\n',
           f"severity [{key}] is not one rule code or code prefix (SGC, SGC1, SGC102, ...): give each code a key "
           "of its own") for key in ("", " ", ",", "SGC1,SGC2")),
        ('[tool.sglang-contracts.per-file-ignores]\n"tests/*" = 3\n', "per-file-ignores [tests/*] must be a list of strings"),
        ('patch-files = ["/abs/x.patch"]\n',
         "patch-files '/abs/x.patch' is absolute: give a path or glob relative to the project's root"),
        ('patch-files = [""]\n', "patch-files '' names no file: give a path or glob relative to the project's root"),
        # A pull request's setting: opening /etc/shadow told whether it exists (seventh campaign).
        ('baseline = "/etc/shadow"\n',
         "baseline '/etc/shadow' is absolute: give a path or glob relative to the project's root"),
        # where actions/checkout keeps its token: its parse error quoted it (campaign 18, R03)
        ('baseline = ".git/config"\n',
         "baseline '.git/config' is in the project's version control folder: give a file of the project"),
        ('baseline = "../../outside.json"\n',
         "baseline '../../outside.json' leaves the project: give a path or glob within the project's root"),
        ('patch-files = ["."]\n', "patch-files '.' names no file: give a path or glob relative to the project's root"),
        # a NUL, a name the file system refuses: internal errors of check and of bump's last check (campaign 20, R13)
        ('sglang-repo = "\\u0000x"\n', "sglang-repo '\\x00x' names no file or folder"),
        ('sglang-repo = ""\n', "sglang-repo '' names no file or folder"),
        (f'patch-files = ["p/{"x" * 300}.patch"]\n',
         f"patch-files {('p/' + 'x' * 58)!r}... holds a name longer than the file system takes"),
        ('patch-files = ["ops/*/a**.patch"]\n', "patch-files 'ops/*/a**.patch': `**` can only be a whole path component"),
        # Each `**` walks every folder again: ten kept a run busy for minutes (second campaign).
        ('patch-files = ["**/**/**/x.patch"]\n',
         "patch-files '**/**/**/x.patch': a glob may have one `**` (it already matches any depth)"),
        # Every path is tried against them: 40,000 whose text every path holds took 32 s (campaign 15, R11).
        ("exclude = [" + ", ".join(f'"m{n}*.py"' for n in range(1001)) + "]\n",
         "exclude holds 1,001 patterns, more than the 1,000 a configuration may hold"),
        ("[tool.sglang-contracts.per-file-ignores]\n" + "".join(f'"m{n}*.py" = ["SGC1"]\n' for n in range(1001)),
         "per-file-ignores holds 1,001 patterns, more than the 1,000 a configuration may hold"),
        # Each is matched by a walk of the project: 4,000 took 40 s over 2,000 files (campaign 16, R09).
        ("patch-files = [" + ", ".join(f'"p{n}/*.patch"' for n in range(101)) + "]\n",
         "patch-files holds 101 patterns, more than the 100 a configuration may hold"),
    ],
)
def test_bad_configuration_is_a_one_line_error_naming_the_key(check, project, table, error):
    configure(project, table)
    result = check(cwd=project)
    assert result.status == 2 and result.out == ""
    (line,) = result.err.splitlines()
    assert line.startswith("sglang-contracts: error: ") and "[tool.sglang-contracts]" in line
    assert line.endswith(error)


def test_per_file_ignores_and_excludes(check, project):
    configure(project, '[tool.sglang-contracts.per-file-ignores]\n"demo_omni/layers.py" = ["SGC10"]\n'
                       '"demo_omni/scheduling.py" = ["SGC101"]\n')
    result = check(cwd=project)
    ignored = [p for p in EXPECTED if p.startswith("demo_omni/layers.py") and " SGC10" in p
               or p.startswith("demo_omni/scheduling.py") and p.endswith("SGC101")]
    assert ignored and result.prefixes == [p for p in EXPECTED if p not in ignored]

    copy = project.parent / "excluded"
    shutil.copytree(PROJECT, copy)
    configure(copy, 'exclude = ["demo_omni/compat.py", "demo_omni/broken*"]\n')
    result = check("--format", "json", cwd=copy)
    paths = {record["path"] for record in json.loads(result.out)}
    assert paths == {p.split(":")[0] for p in EXPECTED} - {"demo_omni/compat.py", "demo_omni/broken.py"}


def test_severity_overrides_apply_after_the_checks(check, project):
    configure(project, '[tool.sglang-contracts.severity]\nSGC103 = "error"\nSGC1 = "warning"\n')
    records = json.loads(check("--format", "json", "--report-unresolved", cwd=project).out)
    severities = {f"{r['path']}:{r['line']}:{r['col']}: {r['code']}": r["severity"] for r in records}
    expected = {p: ("error" if p.endswith("SGC103") else "warning") for p in EXPECTED if ": SGC1" in p}
    assert {p: s for p, s in severities.items() if ": SGC1" in p and p != UNRESOLVED} == expected
    assert severities[UNRESOLVED] == "info"  # already broken before the bump: stays info
    assert severities["demo_omni/broken.py:5:15: SGC000"] == EXPECTED_SEVERITY["demo_omni/broken.py:5:15: SGC000"]


def test_config_file_option_and_paths(check, project, tmp_path):
    settings = tmp_path / "contracts.toml"
    settings.write_text(f'old = "{OLD}"\nnew = "{NEW}"\npaths = ["project/demo_omni/layers.py"]\n')
    result = check("--config", str(settings), old=None, new=None, cwd=project)
    assert result.prefixes == [p for p in EXPECTED if p.startswith("demo_omni/layers.py")]

    bare = tmp_path / "bare" / "pyproject.toml"
    bare.parent.mkdir()
    bare.write_text("[project]\nname = 'bare'\n")
    missing_table = check("--config", str(bare), cwd=project)
    assert missing_table.status == 2
    assert missing_table.err.strip().endswith("pyproject.toml: no [tool.sglang-contracts] table")
    assert check("--config", str(tmp_path / "nope.toml"), cwd=project).status == 2


def test_rule_settings_and_source_reach_the_options(project):
    configure(project, 'new = "0.5.22"\nsource = "git"\nsglang-repo = "../sglang"\n'
                       'server-args-seam = ["demo_omni.vendor.sglang.server_args.override_server_args"]\n'
                       'patch-files = ["docker/patch/*.patch"]\n'
                       '[tool.sglang-contracts.fakes]\n"tests.fakes.FakeScheduler" = "sglang.srt.managers.scheduler.Scheduler"\n')
    args = build_parser().parse_args(["check", str(project)])
    _, options = _options(args)
    assert options.new == "git:0.5.22"
    assert options.sglang_repo == (project.parent / "sglang").resolve()
    assert options.settings == {
        "server-args-seam": ["demo_omni.vendor.sglang.server_args.override_server_args"],
        "patch-files": ["docker/patch/*.patch"],
        "fakes": {"tests.fakes.FakeScheduler": "sglang.srt.managers.scheduler.Scheduler"},
    }
    assert with_source("pypi:0.5.22", "git") == "pypi:0.5.22"  # said explicitly: kept
    assert with_source("0.5.22", "index") == "pypi:0.5.22"
    assert with_source("0.5.22", None) == "0.5.22"


def test_a_fakes_entry_that_names_nothing_is_reported_at_its_key(check, project, tmp_path):
    """A `fakes` entry whose project class is not defined, or whose upstream class the pinned
    release lacks, checks no fake: SGC604 at the entry's key, a warning (campaign 9, R05); at
    the pyproject's first line when the settings come from another file."""
    entries = ('"demo_omni.model_runner.Stag" = "sglang.srt.managers.scheduler.Scheduler"\n'
               '"demo_omni.model_runner.Stage" = "sglang.srt.managers.scheduler.Schedulr"\n'
               '"demo_omni.model_runner.OmniSampler" = "sglang.srt.managers.scheduler.Scheduler"\n')
    configure(project, "[tool.sglang-contracts.fakes]\n" + entries)
    lines = (project / "pyproject.toml").read_text().split("\n")
    at = [f"pyproject.toml:{lines.index(line) + 1}:1: SGC604 warning" for line in entries.split("\n")[:2]]
    result = check(cwd=project)
    reported = [line for line in result.out.splitlines() if "SGC604" in line]
    assert [line.partition(": the fakes")[0] for line in reported] == at
    assert "demo_omni.model_runner.Stag = sglang.srt.managers.scheduler.Scheduler names no class of the project" \
        in reported[0]
    assert "names no class of sglang 0.9.0" in reported[1]
    elsewhere = tmp_path / "contracts.toml"
    elsewhere.write_text("[tool.sglang-contracts.fakes]\n" + entries.replace("Stag", "Stg").replace("Schedulr", "Schedulerr"))
    result = check("--config", str(elsewhere), cwd=project)
    assert [line.partition(": the fakes")[0] for line in result.out.splitlines() if "SGC604" in line] == [
        "pyproject.toml:1:1: SGC604 warning"] * 2


def test_no_new_anywhere_is_a_usage_error(check, project):
    result = check(new=None, cwd=project)
    assert result.status == 2 and result.out == ""
    assert result.err.startswith("sglang-contracts: error: --new is required") and len(result.err.splitlines()) == 1


def test_patch_files_named_in_the_configuration_are_checked_whatever_their_name(check, project):
    patch = (project / "docker/patch/v0.9.0/sglang.patch").read_text()
    (project / "docker/patch/v0.9.0/sglang.patch").unlink()
    (project / "ops").mkdir()
    (project / "ops" / "sglang-fixes.txt").write_text(patch)  # not found by its name alone
    assert not [p for p in check(cwd=project).prefixes if " SGC9" in p]
    configure(project, 'patch-files = ["ops/*.txt"]\n')
    assert [p for p in check(cwd=project).prefixes if " SGC9" in p] == [
        "ops/sglang-fixes.txt:4:1: SGC902", "ops/sglang-fixes.txt:12:1: SGC901"]
    configure(project, 'patch-files = ["ops/missing.patch"]\n')
    result = check(cwd=project)
    assert result.status == 2 and result.out == ""
    assert result.err.strip() == f"sglang-contracts: error: patch-files: ops/missing.patch matches no file under {project.resolve()}"


DEEP_ARRAY = "[" * 500 + "]" * 500  # deeper than Python's recursion limit lets tomllib read


def test_a_configuration_nested_too_deeply_is_invalid_toml(check, project):
    configure(project, f"x = {DEEP_ARRAY}\n")
    result = check(cwd=project)
    assert result.status == 2 and result.out == ""
    assert result.err == f"sglang-contracts: error: {project / 'pyproject.toml'}: not valid TOML (nested too deeply)\n"


def test_a_pyproject_nested_too_deeply_outside_the_table_does_not_stop_the_run(check, tmp_path):
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "p"\ndependencies = {DEEP_ARRAY}\n')
    (tmp_path / "p.py").write_text("x = 1\n")
    result = check(cwd=tmp_path)
    # Not a usage error: the run goes on, and says the file's requirements are not checked.
    assert (result.status, result.err) == (1, "")
    assert result.out.startswith("pyproject.toml:1:1: SGC000 cannot analyse this file (not valid TOML: nested too deeply")


@pytest.mark.parametrize("table", ['[tool.sglang_contracts]\nselect = ["SGC101"]\n',
                                   '[tool.SGLang-Contracts]\nselect = ["SGC101"]\n'])
def test_the_table_spelled_as_the_import_is_an_error_not_ignored(check, tmp_path, table):
    """`[tool.sglang_contracts]` (the import's name) was ignored without a word: nothing of it
    applied, the run went on as unconfigured (campaign 18, R04)."""
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "p"\n\n{table}')
    (tmp_path / "p.py").write_text("x = 1\n")
    result = check(cwd=tmp_path)
    written = table.split("]")[0].removeprefix("[")
    assert (result.status, result.out) == (2, "")
    assert result.err == (f"sglang-contracts: error: {tmp_path / 'pyproject.toml'}: [{written}] is not read: this "
                          "tool's table is [tool.sglang-contracts]\n")


def test_a_broken_pyproject_holding_the_table_quoted_is_an_error(check, tmp_path):
    """`[tool."sglang-contracts"]` is the same table to TOML: with a TOML error elsewhere in the
    file, it was taken for a file without the table, and the configuration was dropped (campaign
    18, R05); unquoted, the same file was an error."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\ndependencies = [\n\n[tool."sglang-contracts"]\n'
                                             'select = ["SGC101"]\n')
    (tmp_path / "p.py").write_text("x = 1\n")
    result = check(cwd=tmp_path)
    assert (result.status, result.out) == (2, "")
    assert result.err.startswith(f"sglang-contracts: error: {tmp_path / 'pyproject.toml'}: not valid TOML (")


@pytest.mark.parametrize("table", ['[project]\nname = "q"\noptional-dependencies = "x"\n', 'project = "x"\n', "tool = 1\n",
                                   '[tool]\nuv = "x"\n', 'dependency-groups = "x"\n[project]\nname = "q"\n'])
def test_a_pyproject_value_that_is_no_table_is_no_internal_error(table: str, tmp_path: Path, capsys) -> None:
    """helper-7's audit: `.values()` on a string gave three SGC001 (exit 3)."""
    from tests.helpers import NEW, OLD

    project = tmp_path / "q"
    project.mkdir()
    (project / "pyproject.toml").write_text(table)
    (project / "m.py").write_text("x = 1\n")
    status = main(["check", str(project), "--old", str(OLD), "--new", str(NEW), "--cache-dir", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert status in (0, 1) and "SGC001" not in out


def test_a_pyproject_that_does_not_parse_is_an_sgc000(tmp_path: Path, capsys) -> None:
    from tests.helpers import NEW, OLD

    project = tmp_path / "q"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project\nname="q"\ndependencies=["sglang==1.0.0"]\n')
    assert main(["check", str(project), "--old", str(OLD), "--new", str(NEW), "--cache-dir", str(tmp_path / "c")]) == 1
    assert "pyproject.toml:1:1: SGC000 cannot analyse this file (not valid TOML" in capsys.readouterr().out


def test_a_glob_written_from_the_project_root_matches_as_one_without_its_dot() -> None:
    """`"./tests/*"` in per-file-ignores or exclude matched no file, silently: the paths it is
    matched with are written `tests/x.py`."""
    from sglang_contracts.diagnostics.suppressions import FileIgnores, PathGlobs

    ignores = FileIgnores({"./tests/*": ["SGC1"], ".//pkg/a.py": ["SGC2"], "other.py": ["SGC3"]})
    assert ignores.ignored("SGC101", "tests/test_x.py") and ignores.ignored("SGC201", "pkg/a.py")
    assert not ignores.ignored("SGC201", "tests/test_x.py") and not ignores.ignored("SGC101", "pkg/tests/x.py")
    assert PathGlobs(["./demo_omni/broken*"]).matches("demo_omni/broken.py")
    assert not PathGlobs(["./demo_omni/broken*"]).matches("demo_omni/ok.py")


def test_globs_filed_by_their_literal_text_match_as_each_glob_tried_on_every_path_does() -> None:
    """PathGlobs tries a path only against the globs whose literal text it holds where a match
    would (campaign 14, R06); it answers as fnmatch does on the path or any folder it is in, on
    generated globs of wildcards, classes (`[]a]`, `[!a]`, an unclosed `[`) and literal runs."""
    import fnmatch
    import random

    from sglang_contracts.diagnostics.suppressions import PathGlobs

    generate = random.Random(14)
    glob_parts = ["a", "b", "ab", "/", ".", "-", "!", "]", "[", "*", "**", "?", "[ab]", "[!a]", "[]a]", "[a-", "[!]b]"]
    path_parts = ["a", "b", "ab", "/", ".", "-", "!", "]", "[", "*"]
    globs = {"".join(generate.choices(glob_parts, k=generate.randint(0, 6))) for _ in range(600)}
    globs = sorted(glob for glob in globs if glob == glob.strip("/") and not glob.startswith("./"))  # as written
    paths = sorted({"".join(generate.choices(path_parts, k=generate.randint(1, 7))) for _ in range(600)})
    matcher = PathGlobs(globs)
    for path in paths:
        subjects = [path] + [path[:end] for end, char in enumerate(path) if char == "/"]
        expected = tuple(n for n, glob in enumerate(globs) if any(fnmatch.fnmatchcase(s, glob) for s in subjects))
        assert matcher.matched(path) == expected, path
    assert sum(map(matcher.matches, paths)) > len(paths) // 2  # the generated globs match, not only miss
