"""Command-line behaviour that is not about one rule."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import NEW, OLD, PROJECT, checkout_env
from sglang_contracts.cli import main


def test_a_reader_that_leaves_early_is_not_an_error() -> None:
    """`sglang-contracts rules | head -1`, where head is gone before the rules are written."""
    process = subprocess.Popen([sys.executable, "-m", "sglang_contracts", "rules"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=checkout_env())
    process.stdout.close()  # the reader leaves before the first line arrives
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == 0, stderr
    assert stderr == ""


def test_a_reader_that_leaves_early_leaves_the_exit_status_of_the_check() -> None:
    """`sglang-contracts check | head -1` in a pre-commit hook: the findings still fail it."""
    from tests.helpers import NEW, OLD, PROJECT

    process = subprocess.Popen([sys.executable, "-m", "sglang_contracts", "check", "-q", "--no-cache",
                                "--old", str(OLD), "--new", str(NEW)],
                               cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=checkout_env())
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 1, stderr
    assert stderr == ""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_standard_output_that_cannot_be_written_is_one_error_line() -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "sglang_contracts", "rules"], stdout=full,
                              stderr=subprocess.PIPE, text=True, env=checkout_env(), timeout=60)
    assert (done.returncode, done.stderr) == (
        2, "sglang-contracts: error: cannot write standard output (No space left on device)\n")


@pytest.mark.parametrize("form", ["json", "sarif", "markdown", "text"])
def test_a_report_the_file_system_takes_only_part_of_is_an_error_not_a_whole_report(form: str, tmp_path) -> None:
    """Campaign 4's D09: under a file size limit a JSON, SARIF or markdown report written in one
    piece was cut at the limit with no error and exit 1, as if it were whole."""
    import resource

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))

    with open(tmp_path / "report", "w") as report:
        done = subprocess.run([sys.executable, "-m", "sglang_contracts", "check", "-q", "--no-cache",
                               "--old", str(OLD), "--new", str(NEW), "--format", form], cwd=PROJECT, stdout=report,
                              stderr=subprocess.PIPE, text=True, env=checkout_env(), timeout=120,
                              preexec_fn=limit_file_size)
    assert (done.returncode, done.stderr) == (2, "sglang-contracts: error: cannot write standard output (File too large)\n")


def test_compiler_warnings_in_read_code_are_not_shown_nor_fatal(tmp_path) -> None:
    """An invalid escape sequence warns when compiled (a SyntaxWarning from Python 3.12): not the
    tool's business. Under `-W error` it would even stop the file from parsing."""
    from tests.helpers import NEW, OLD

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "layers.py").write_text(
        'import re\nfrom sglang.srt.layers.layernorm import RMSNorm\nDIGITS = re.compile("\\d+")\n')
    process = subprocess.run(
        [sys.executable, "-m", "sglang_contracts", "check", "--old", str(OLD), "--new", str(NEW), "--no-cache"],
        cwd=tmp_path, capture_output=True, text=True, env=checkout_env(PYTHONWARNINGS="error"), timeout=120)
    assert "SGC000" not in process.stdout, process.stdout
    assert process.stderr == ""


def test_source_encodings_are_read_as_python_reads_them(tmp_path) -> None:
    """A UTF-8 byte-order mark and a PEP 263 coding comment are valid Python: the file is read,
    and columns count characters after the mark, as flake8 does."""
    from tests.helpers import NEW, OLD

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    (tmp_path / "demo").mkdir()
    statement = "from sglang.srt.server_args import prepare_server_args\n"
    (tmp_path / "demo" / "marked.py").write_bytes(b"\xef\xbb\xbf" + statement.encode())
    (tmp_path / "demo" / "latin.py").write_bytes(
        f"# -*- coding: latin-1 -*-\nNAME = 'caf\xe9'\n{statement}".encode("latin-1"))
    process = subprocess.run(
        [sys.executable, "-m", "sglang_contracts", "check", "--old", str(OLD), "--new", str(NEW), "--no-cache",
         "--select", "SGC0,SGC102"],
        cwd=tmp_path, capture_output=True, text=True, env=checkout_env(), timeout=120)
    assert process.stderr == ""
    assert [line.split(" ", 2)[:2] for line in process.stdout.splitlines()] == [
        ["demo/latin.py:3:36:", "SGC102"], ["demo/marked.py:1:36:", "SGC102"]]


@pytest.mark.parametrize(("requires", "hinted"), [(">=3.99", True), (">=3.10,<4", False), (None, False)])
def test_an_unparsable_file_says_when_the_project_targets_a_newer_python(tmp_path, requires, hinted) -> None:
    """Python's parser knows the grammar of the Python running the tool: a project that asks for
    a newer one is told to run the tool with it, rather than only shown a syntax error."""
    from tests.helpers import NEW, OLD
    from sglang_contracts.check.runner import CheckOptions, run_check

    line = f'requires-python = "{requires}"\n' if requires else ""
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "demo"\n{line}')
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "new_syntax.py").write_text("from sglang.srt.server_args import ServerArgs\ndef f(:\n")
    result = run_check([tmp_path], CheckOptions(old=str(OLD), new=str(NEW), select=["SGC000"], use_cache=False))
    (diagnostic,) = result.diagnostics
    assert diagnostic.message.startswith("cannot parse this file (")
    running = "{}.{}".format(*sys.version_info[:2])
    assert (f"the project requires Python 3.99+ and this tool runs on {running}" in diagnostic.message) is hinted


def test_write_baseline_writes_into_a_device_or_fifo_never_replaces_it(tmp_path, capsys) -> None:
    """helper-7's audit: the baseline's atomic write replaced /dev/full (and a FIFO) by a file."""
    import stat as stat_module

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    device = tmp_path / "full"
    os.symlink("/dev/full", device)
    status = main(["check", str(PROJECT), "--old", str(OLD), "--new", str(NEW), "--write-baseline", str(device)])
    assert status == 2 and "cannot write" in capsys.readouterr().err
    assert os.path.islink(device) and stat_module.S_ISCHR(os.stat("/dev/full").st_mode)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        main(["check", str(PROJECT), "--old", str(OLD), "--new", str(NEW), "--write-baseline", str(fifo)])
        assert b'"findings"' in os.read(reader, 1 << 20)
    finally:
        os.close(reader)
    assert stat_module.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("where", ["write-baseline", "sglang-repo", "patch-files"])
def test_a_name_longer_than_the_file_system_takes_is_one_line(tmp_path, capsys, monkeypatch, where) -> None:
    """pathlib's exists() and is_symlink() let ENAMETOOLONG out: a 300-byte name given to
    --write-baseline or --sglang-repo, or in a pull request's patch-files, ended the run in
    "internal error: OSError" (campaign 17, R06)."""
    import shutil

    from tests.helpers import add_settings

    monkeypatch.delenv("SGLANG_CONTRACTS_DEBUG")
    long = "b" * 300
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    releases = ["--old", str(OLD), "--new", str(NEW)]
    given = {"write-baseline": [*releases, "--write-baseline", str(tmp_path / long / "b.json")],
             "sglang-repo": ["--old", "0.9.0", "--new", "0.9.1", "--sglang-repo", str(tmp_path / long)],
             "patch-files": releases}[where]
    if where == "patch-files":
        add_settings(project / "pyproject.toml", f'patch-files = ["{long}.patch"]\n')
    status = main(["check", str(project), *given])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    if where == "patch-files":  # the setting is refused as it is read (campaign 20, R13)
        assert err.startswith("sglang-contracts: error: ") and "patch-files 'bbbbbbbbbb" in err
        assert err.endswith("... holds a name longer than the file system takes\n")
        return
    assert err.startswith("sglang-contracts: error: a name longer than the file system takes: ") and "bbbbbbbbbb" in err


def test_a_baseline_nested_too_deeply_is_one_line(tmp_path, capsys) -> None:
    baseline = tmp_path / "b.json"
    baseline.write_text("[" * 100_000 + "]" * 100_000)
    assert main(["check", str(PROJECT), "--old", str(OLD), "--new", str(NEW), "--baseline", str(baseline)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nested too deeply" in err


def test_rules_are_listed_in_number_order_and_fit_the_given_width(capsys, monkeypatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(["rules"]) == 0
    codes = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert codes.index("SGC105") < codes.index("SGC201") < codes.index("SGC903") < codes.index("SGC1101")
    assert codes == sorted(codes, key=lambda code: int(code[3:]))
    monkeypatch.setenv("COLUMNS", "90")
    assert main(["rules"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(codes) and max(map(len, lines)) == 90 and lines[0].endswith("…")


def test_explain_says_what_to_do_before_why_and_the_examples_last(capsys) -> None:
    assert main(["explain", "SGC312"]) == 0
    out = capsys.readouterr().out
    to_do, fix, why, first_example = (out.index(mark) for mark in ("What to do:", "Fix (unsafe", "Why:", "Example: "))
    assert to_do < fix < why < first_example < len(out)
    assert out.count("What to do:") == 1 and to_do < 600


@pytest.mark.parametrize("select", ["SGC999", "BOGUS", "SGC23", ""])
def test_a_select_that_matches_no_rule_is_a_usage_error_not_a_green_run(select: str, tmp_path: Path, capsys) -> None:
    """audit5 N06: `--select SGC999` selected nothing, printed nothing and exited 0."""
    status = main(["check", str(PROJECT), "--old", str(OLD), "--new", str(NEW), "--select", select,
                   "--cache-dir", str(tmp_path / "cache")])
    assert status == 2
    assert "matches no rule's code" in capsys.readouterr().err or select == ""


def _moved_function_releases(root: Path) -> tuple[Path, Path]:
    """Two releases: `g` moves from sglang.srt.a to sglang.srt.b."""
    from tests.helpers import upstream_tree

    old = upstream_tree(root / "2.0.0", {"sglang/srt/a.py": "def g(a, b):\n    return a + b\n\n\ndef h():\n    return 2\n"},
                        "2.0.0")
    new = upstream_tree(root / "2.0.1", {"sglang/srt/a.py": "def h():\n    return 2\n",
                                         "sglang/srt/b.py": "def g(a, b):\n    return a + b\n"}, "2.0.1")
    return old, new


def test_a_project_migrated_to_the_new_release_is_checked_not_refused(tmp_path, cache_dir, capsys) -> None:
    """`fix` moves the only SGLang import to where the new release has it: its own re-check, and
    every later check, must not take the old release's lack of it for a loader that read nothing
    (campaign 9, R06: exit 2 after a fix that was written)."""
    old, new = _moved_function_releases(tmp_path)
    project = tmp_path / "p"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (project / "m.py").write_text("from sglang.srt.a import g\nprint(g(1, 2))\n")
    releases = ["--old", str(old), "--new", str(new)]
    assert main(["fix", str(project), *releases]) == 0
    assert (project / "m.py").read_text().startswith("from sglang.srt.b import g\n")
    assert main(["check", str(project), *releases]) == 0
    assert "refusing" not in capsys.readouterr().err


def test_a_project_whose_imports_neither_release_has_is_refused(tmp_path, cache_dir, capsys) -> None:
    """The guard stays for what it is for: a source or loader that found none of the project's
    SGLang modules in either release does not give a clean result."""
    old, new = _moved_function_releases(tmp_path)
    project = tmp_path / "p"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (project / "m.py").write_text("from sglang.srt.c import g\n")
    assert main(["check", str(project), "--old", str(old), "--new", str(new)]) == 2
    assert "none of the 1 SGLang modules the project imports was found in either" in capsys.readouterr().err


@pytest.mark.parametrize("command, named", [("check", "--exit-zero"), ("fix", "--diff")])
def test_after_files_a_file_named_like_an_option_is_a_path(command, named, tmp_path, cache_dir, monkeypatch,
                                                            capsys) -> None:
    """The pre-commit hooks' entry ends with `--files`, then come the hook's `args` and the
    names of the files (no `--`): a committed file named `--exit-zero` made the check pass with
    findings, one named `--diff` made the fix write nothing (campaign 10, R03). The args stay
    options; the names are paths."""
    old, new = _moved_function_releases(tmp_path)
    project = tmp_path / "p"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (project / "m.py").write_text("from sglang.srt.a import g\nprint(g(1, 2))\n")
    (project / named).write_text("#!/bin/sh\n")  # no Python: a named python script of no suffix has an SGC000
    monkeypatch.chdir(project)
    status = main([command, "--files", "--old", str(old), "--new", str(new), named, "m.py"])
    if command == "check":
        assert status == 1 and "m.py:1:" in capsys.readouterr().out
    else:
        assert status == 0 and (project / "m.py").read_text().startswith("from sglang.srt.b import g\n")


@pytest.mark.parametrize("words", [["check", "--\x1b]0;PWNED\x07\x1b[2J.py"], ["check", "--format", "\x1b[2Jtext"],
                                   ["patch", "\x1b[2Jclassify"]])
def test_a_usage_error_shows_the_command_line_s_words_escaped(words, capsys) -> None:
    """Tenth campaign, T74: argparse's "unrecognized arguments" printed a file name a hook passed
    as it was, and its escapes set the terminal's title and cleared the screen."""
    with pytest.raises(SystemExit) as raised:
        main(words)
    err = capsys.readouterr().err
    assert raised.value.code == 2 and "error:" in err
    assert "\x1b" not in err and "\x07" not in err and "\\x1b" in err
