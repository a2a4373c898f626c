"""Never crash, never hang: the error boundary, and the inputs a run must survive (issue 11).

Each test builds a small SGLang-shaped pair of releases and a project, and runs the real
check. The suite runs with SGLANG_CONTRACTS_DEBUG=1 (conftest.py), so a test that expects
the boundary to catch a fault unsets it first.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sglang_contracts.cli import main
from sglang_contracts.contracts import base
from sglang_contracts.diagnostics import finding
from sglang_contracts.infra.files import MAX_PYTHON_BYTES
from sglang_contracts.project.facts import Position
from sglang_contracts.check.runner import CheckOptions, run_check
from tests.helpers import checkout_env, write_tree as write
from tests.robustness.bump import BROKEN_IMPORT, OK_FINDING, cli, codes


def findings(project: Path, releases: tuple[Path, Path]) -> list[str]:
    old, new = releases
    result = run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1))
    return [f"{d.path}:{d.line}:{d.col}: {d.code} {d.message}" for d in result.diagnostics]





# -- the error boundary --------------------------------------------------------------------


def test_a_rule_that_fails_on_one_file_loses_only_that_file(monkeypatch, project, releases) -> None:
    write(project, {"app/bad.py": BROKEN_IMPORT, "app/zzz.py": BROKEN_IMPORT})

    def flaky(ctx):
        for facts in sorted(ctx.project.files.values(), key=lambda f: f.path):
            if facts.path == "app/bad.py":
                raise KeyError("a bug")
            yield finding("SGC105", facts, Position(1, 1), "sglang.srt.utils.x", module="m", attr="x",
                          old="0.1.0", new="0.2.0", hint="")

    monkeypatch.setitem(base.CHECKS, "SGC105", flaky)
    with pytest.raises(KeyError):  # debugging: the traceback, not a finding
        findings(project, releases)
    monkeypatch.delenv("SGLANG_CONTRACTS_DEBUG")
    lines = findings(project, releases)
    assert [line for line in codes(lines) if line.endswith(("SGC105", "SGC001"))] == [
        "app/bad.py:1:1: SGC001", "app/ok.py:1:1: SGC105", "app/zzz.py:1:1: SGC105"]
    (internal,) = [line for line in lines if "SGC001" in line]
    assert "while rule SGC105 (KeyError: 'a bug')" in internal
    assert "app/bad.py:1:30: SGC102" in codes(lines)  # the other rules still judge the file


def test_an_internal_error_exits_3_even_with_exit_zero(monkeypatch, project, releases) -> None:
    def broken(ctx):
        raise RuntimeError("no file in sight")
        yield

    monkeypatch.setitem(base.CHECKS, "SGC105", broken)
    monkeypatch.delenv("SGLANG_CONTRACTS_DEBUG")
    monkeypatch.chdir(project)
    old, new = releases
    assert main(["check", "--old", str(old), "--new", str(new), "--no-cache", "--exit-zero"]) == 3


def test_running_out_of_open_files_is_said_as_the_limit_to_raise(monkeypatch, capsys, project, releases) -> None:
    # Out of descriptors, a run said "internal error: OSError: [Errno 24] Too many open files"
    # (campaign 14, R07): the system's limit, which the user can raise, not a bug of this tool.
    import errno

    from sglang_contracts.check import runner

    def out_of_files(*args, **kwargs):
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(runner, "run_check", out_of_files)
    monkeypatch.delenv("SGLANG_CONTRACTS_DEBUG")
    monkeypatch.chdir(project)
    old, new = releases
    assert main(["check", "--old", str(old), "--new", str(new), "--no-cache"]) == 2
    (said,) = capsys.readouterr().err.splitlines()
    assert said.startswith("sglang-contracts: error: too many open files: raise the limit (`ulimit -n`")


def test_a_thread_the_system_refuses_is_said_as_the_limit_to_raise(monkeypatch, capsys, project, releases) -> None:
    # Short of address space (`ulimit -v`) or processes (`ulimit -u`) the run's threads cannot
    # start: "internal error: RuntimeError: can't start new thread" (campaign 15, R06).
    import threading

    def refused(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refused)
    monkeypatch.delenv("SGLANG_CONTRACTS_DEBUG")
    monkeypatch.chdir(project)
    old, new = releases
    assert main(["check", "--old", str(old), "--new", str(new), "--no-cache"]) == 2
    (said,) = capsys.readouterr().err.splitlines()
    assert said.startswith("sglang-contracts: error: cannot start a thread or process: raise the limits") \
        and "`ulimit -v`" in said and "`ulimit -u`" in said


def test_a_scanner_bug_is_one_sgc001_and_the_other_files_are_checked(monkeypatch, project, releases) -> None:
    from sglang_contracts.project import scanner

    write(project, {"app/bad.py": BROKEN_IMPORT + "class Odd:\n    pass\n"})
    real = scanner._ClassSummary

    def broken(node, *args, **kwargs):
        if node.name == "Odd":
            raise ValueError("scanner bug")
        return real(node, *args, **kwargs)

    monkeypatch.setattr(scanner, "_ClassSummary", broken)
    monkeypatch.delenv("SGLANG_CONTRACTS_DEBUG")
    assert codes(findings(project, releases)) == ["app/bad.py:1:1: SGC001", OK_FINDING]


def test_an_upstream_extraction_bug_is_reported_where_the_project_imports_the_module(monkeypatch, project,
                                                                                    releases) -> None:
    from sglang_contracts.upstream import extract

    def broken(module_name, relpath, code, *known):
        if module_name == "sglang.srt.utils":
            raise AttributeError("extractor bug")
        return real(module_name, relpath, code, *known)

    real = extract._extract
    monkeypatch.setattr(extract, "_extract", broken)
    monkeypatch.delenv("SGLANG_CONTRACTS_DEBUG")
    lines = findings(project, releases)
    assert codes(lines) == ["app/ok.py:1:30: SGC001"]  # both releases: one finding per place
    assert "while analyse sglang.srt.utils (AttributeError: extractor bug)" in lines[0]


# -- inputs a run must survive ------------------------------------------------------------------


def test_d2_a_prose_mention_beside_a_3000_term_expression_is_one_sgc000(project, releases) -> None:
    deep = "# works with sglang 0.5.22; copied from sglang.srt.utils\nx = " + "+".join(["a"] * 3000) + "\n"
    write(project, {"app/deep.py": deep, "app/wide.py": "x = " + "+".join(["a"] * 10000) + "\n"})
    lines = findings(project, releases)
    assert codes(lines) == ["app/deep.py:1:1: SGC000", OK_FINDING]
    assert "nested too deeply for Python's parser" in lines[0]


def test_d4_odd_coding_cookies_are_read_as_utf8(project, releases, tmp_path) -> None:
    for codec in ("idna", "punycode", "undefined", "rot13"):
        write(project, {f"app/c_{codec}.py": f"# coding: {codec}\n" + BROKEN_IMPORT})
    old, new = releases
    write(new, {"sglang/srt/cookie.py": "# coding: idna\ndef f(): ...\n"})
    write(project, {"app/uses_cookie.py": "from sglang.srt.cookie import f\n"})
    lines = codes(findings(project, releases))
    assert OK_FINDING in lines and "app/c_idna.py:2:30: SGC102" in lines


def test_d5_d15_odd_file_names_are_reported_on_one_printable_line(project, releases) -> None:
    root = os.fsencode(project / "app")
    for name in (b"caf\xff.py", b"two\nlines.py"):
        with open(os.path.join(root, name), "wb") as handle:
            handle.write(BROKEN_IMPORT.encode())
    status, out, err = cli(project, releases)
    assert status == 1, err
    lines = out.splitlines()
    assert len(lines) == 3 and all(" SGC102 " in line for line in lines)
    assert any("caf\\xff.py:1:30:" in line for line in lines)
    assert any("two\\nlines.py:1:30:" in line for line in lines)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_d6_d7_fifos_and_links_to_devices_are_not_read(project, releases) -> None:
    for name in ("app/pipe.py", "README.md", "fix.patch", "requirements.txt"):
        os.mkfifo(project / name)
    (project / "app" / "zero.py").symlink_to("/dev/zero")
    (project / "app" / "gone.py").symlink_to(project / "nowhere.py")
    status, out, err = cli(project, releases)  # a hang is a timeout here, not a passing test
    assert status == 1, err
    assert "app/pipe.py:1:1: SGC000 cannot read this file (a FIFO, not a regular file)" in out
    assert "app/zero.py:1:1: SGC000 cannot read this file (a link out of the project, not read)" in out  # D24
    assert "app/gone.py:1:1: SGC000 cannot read this file (no such file (a dangling link?))" in out
    assert OK_FINDING in out


def test_d8_an_unreadable_python_file_is_a_finding_not_silence(monkeypatch, project, releases) -> None:
    write(project, {"app/secret.py": BROKEN_IMPORT})
    real_open = os.open

    def denied(path, flags, *args, **kwargs):
        if os.fspath(path).endswith("secret.py"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    lines = findings(project, releases)
    assert "app/secret.py:1:1: SGC000 cannot read this file (permission denied); its SGLang contracts are not checked" in lines


def test_d28_a_project_folder_that_cannot_be_listed_is_one_sgc000_naming_it(monkeypatch, project, releases) -> None:
    write(project, {"app/hidden/uses.py": BROKEN_IMPORT})
    hidden = os.fspath(project.resolve() / "app" / "hidden")
    real_scandir = os.scandir

    def denied(path=".", *args, **kwargs):  # chmod 000 denies nothing to root, who may run the tests
        if os.fspath(path) == hidden:
            raise PermissionError(13, "Permission denied", hidden)
        return real_scandir(path, *args, **kwargs)

    monkeypatch.setattr(os, "scandir", denied)
    assert findings(project, releases) == [
        "app/hidden:1:1: SGC000 cannot list this folder (permission denied); "
        "the SGLang contracts of its files are not checked",
        "app/ok.py:1:30: SGC102 helper is no longer importable from sglang.srt.utils in sglang 0.2.0 "
        "(it was in 0.1.0, defined at sglang.srt.utils.helper); no definition of helper was found elsewhere in the new release",
    ]


def test_d28_a_folder_deeper_than_the_system_can_name_is_one_sgc000(project, releases) -> None:
    """Nested by descriptor, past the 4,096 bytes a path may hold: os.walk cannot list the deepest."""
    level = "d" * 200
    folder = os.open(project, os.O_RDONLY)
    try:
        for _ in range(25):
            os.mkdir(level, dir_fd=folder)
            inner = os.open(level, os.O_RDONLY, dir_fd=folder)
            os.close(folder)
            folder = inner
    finally:
        os.close(folder)
    (line,) = [line for line in findings(project, releases) if " SGC000 " in line]
    assert line.startswith(f"{level}/") and line.endswith(
        ":1:1: SGC000 cannot list this folder (File name too long); the SGLang contracts of its files are not checked")


def test_d9_a_latin1_byte_in_a_pyproject_comment_is_tolerated(project, releases) -> None:
    (project / "pyproject.toml").write_bytes(b"# caf\xe9\n[project]\nname = 'app'\n")
    status, out, err = cli(project, releases)
    assert status == 1, err
    assert OK_FINDING in out


def test_d12_a_python_file_over_the_size_bound_is_one_sgc000(project, releases) -> None:
    line = b"value = [1, 2, 3, 4, 5, 6, 7, 8, 9]  # sglang.srt generated table\n"
    write(project, {"app/huge.py": line * (MAX_PYTHON_BYTES // len(line) + 1)})
    lines = findings(project, releases)
    assert codes(lines) == ["app/huge.py:1:1: SGC000", OK_FINDING]
    assert "over the 4.0 MB this tool reads" in lines[0]


def test_d5_the_replay_key_takes_any_bytes_a_file_name_holds(project) -> None:
    from sglang_contracts.check import replay

    options = CheckOptions(old="0.5.22", new="0.5.23")
    before = replay.run_key(project, [project], options, "0.5.22")
    with open(os.path.join(os.fsencode(project), b"notes\xff.txt"), "wb") as handle:
        handle.write(b"sglang 0.5.22\n")
    after = replay.run_key(project, [project], options, "0.5.22")
    assert before and after and before != after  # the odd name is an input like any other


def test_a_bug_in_reading_the_pin_costs_the_default_not_the_run(tmp_path, capsys, monkeypatch) -> None:
    import sglang_contracts.check.runner as runner
    from sglang_contracts.cli import main

    def broken(root):
        raise RuntimeError("pin reader bug")

    monkeypatch.setattr(runner, "find_sglang_pin", broken)
    monkeypatch.delenv("SGLANG_CONTRACTS_DEBUG", raising=False)
    project = tmp_path / "project"
    (project / "app").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'app'\n")
    (project / "app" / "x.py").write_text("x = 1\n")
    upstream = tmp_path / "up" / "sglang"
    (upstream / "srt").mkdir(parents=True)
    (upstream / "__init__.py").write_text("")
    (upstream / "version.py").write_text('__version__ = "9.9.9"\n')
    (upstream / "srt" / "utils.py").write_text("def helper():\n    return 1\n")
    monkeypatch.chdir(project)
    assert main(["check", "--new", str(upstream.parent), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "could not be read (RuntimeError: pin reader bug); give --old" in err and "Traceback" not in err
    status = main(["check", "--old", str(upstream.parent), "--new", str(upstream.parent), "--no-cache"])
    err = capsys.readouterr().err
    assert status == 0 and "warning: the SGLang pin could not be read" in err and "Traceback" not in err, err


# -- memory (issue 11: sglang's own tree as the project, under 600 MB) -------------------------

ARENA_PROBE = ("from sglang_contracts.infra.allocator import one_malloc_arena; "
               "print(one_malloc_arena())")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator setting")
def test_one_malloc_arena_is_set_unless_the_user_set_their_own() -> None:
    env = checkout_env()
    env.pop("MALLOC_ARENA_MAX", None)
    taken = subprocess.run([sys.executable, "-c", ARENA_PROBE], capture_output=True, text=True, env=env)
    assert taken.stdout.strip() == "True", taken.stderr
    left = subprocess.run([sys.executable, "-c", ARENA_PROBE], capture_output=True, text=True,
                          env={**env, "MALLOC_ARENA_MAX": "4"})
    assert left.stdout.strip() == "False", left.stderr


def test_a_run_of_the_command_line_asks_for_one_arena(monkeypatch, project, releases) -> None:
    from sglang_contracts.infra import allocator

    asked = []
    monkeypatch.setattr(allocator, "one_malloc_arena", lambda: asked.append(True) or True)
    old, new = releases
    main(["check", str(project), "--old", str(old), "--new", str(new), "--no-cache", "--quiet"])
    assert asked == [True]


TOO_LONG_FOR_AN_INT = "1" * 5000  # Python converts at most 4,300 digits


def test_d31_numbers_too_long_for_an_int_in_versions_are_no_versions(project, releases) -> None:
    digits = TOO_LONG_FOR_AN_INT
    write(project, {
        "pyproject.toml": f"[project]\nname = 'app'\nrequires-python = '>=3.{digits}'\n"
                          f"dependencies = ['sglang==0.{digits}', 'torch; python_version >= \"3.{digits}\"']\n",
        "requirements.txt": f"torch>=2.{digits}\n",
        "app/gated.py": "import sglang\nfrom packaging import version\nv = version.parse(sglang.__version__)\n"
                        f"if v.release[:2] < (0, 0x{'f' * 5000}) or v >= version.parse('1.{digits}'):\n"
                        "    from sglang.srt.utils import kept\n",
    })
    assert codes(findings(project, releases)) == [OK_FINDING]


def test_d31_a_new_release_number_too_long_for_an_int_is_one_error_line(check) -> None:
    result = check(new=f"1.{TOO_LONG_FOR_AN_INT}")  # type: ignore[arg-type]
    assert (result.status, result.out) == (2, "")
    (line,) = result.err.splitlines()
    assert line.startswith("sglang-contracts: error: '1.111") and line.endswith(
        "is not a version, a directory, or (with --sglang-repo) a git ref") and len(line) < 300
