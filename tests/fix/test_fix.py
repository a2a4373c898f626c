"""`sglang-contracts fix`: what the engine promises whatever the rule (the rules' own fixes are
tested by their catalog examples in test_catalog.py)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers import NEW, OLD, PROJECT, checkout_env
from sglang_contracts.cli import main
from sglang_contracts.diagnostics import finding_at
from sglang_contracts.check.fixes import apply_fixes, can_fix, run_fix
from sglang_contracts.check.runner import CheckOptions
from tests.helpers import write_tree as tree

# A name that moved unchanged (SGC102, safe), a mirrored pin SGLang moved (SGC701, safe).
UPSTREAM_OLD = {
    "sglang/__init__.py": "", "sglang/version.py": '__version__ = "0.1.0"\n',
    "sglang/srt/utils/common.py": "def get_device(n):\n    return n\n\n\ndef stays():\n    return 1\n",
    "sglang-0.1.0.dist-info/METADATA": "Metadata-Version: 2.4\nName: sglang\nVersion: 0.1.0\nRequires-Dist: torch==2.8.0\n",
}
UPSTREAM_NEW = {
    "sglang/__init__.py": "", "sglang/version.py": '__version__ = "0.2.0"\n',
    "sglang/srt/utils/common.py": "def stays():\n    return 1\n",
    "sglang/srt/utils/device.py": "def get_device(n):\n    return n\n",
    "sglang-0.2.0.dist-info/METADATA": "Metadata-Version: 2.4\nName: sglang\nVersion: 0.2.0\nRequires-Dist: torch==2.9.1\n",
}
PYPROJECT = '[project]\nname = "app"\ndependencies = [\n    "torch==2.8.0",  # sglang pin\n]\n'
IMPORTS = ("# The device helpers.\n"
           "from sglang.srt.utils.common import (  # upstream\n"
           "    get_device,  # moved in 0.2.0\n"
           "    stays,\n"
           ")\n\n"
           "DEVICE = get_device(0)  # keep\n")


@pytest.fixture()
def bump(tmp_path: Path):
    old, new = tree(tmp_path / "old", UPSTREAM_OLD), tree(tmp_path / "new", UPSTREAM_NEW)
    project = tree(tmp_path / "project", {"pyproject.toml": PYPROJECT, "app/devices.py": IMPORTS})
    args = ["--old", str(old), "--new", str(new), "--no-cache"]
    return project, args, CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1)


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_diff_prints_the_patch_writes_nothing_and_exits_1_then_0(bump, capsys):
    project, args, _ = bump
    before = snapshot(project)
    assert main(["fix", str(project), *args, "--diff"]) == 1
    out = capsys.readouterr().out
    assert "-    get_device,  # moved in 0.2.0\n" in out and "+from sglang.srt.utils.device import get_device\n" in out
    assert '+    "torch==2.9.1",  # sglang pin\n' in out
    assert snapshot(project) == before
    assert main(["fix", str(project), *args]) == 0  # everything fixed: nothing remains
    captured = capsys.readouterr()
    assert "2 findings: 2 fixed, 0 remaining" in captured.err and "remaining" not in captured.out
    assert main(["fix", str(project), *args, "--diff"]) == 0
    assert capsys.readouterr().out == ""


def test_comments_and_formatting_around_an_edited_import_are_kept(bump):
    project, _, options = bump
    report = run_fix([project], options)
    assert report.fixed == 2 and not report.remaining
    assert (project / "app/devices.py").read_text() == (
        "# The device helpers.\n"
        "from sglang.srt.utils.common import (  # upstream\n"
        "    stays,\n"
        ")\n"
        "from sglang.srt.utils.device import get_device\n\n"
        "DEVICE = get_device(0)  # keep\n")
    assert (project / "pyproject.toml").read_text() == PYPROJECT.replace("2.8.0", "2.9.1")


def test_a_second_run_changes_nothing_and_unfixable_files_stay_byte_identical(bump):
    project, _, options = bump
    (project / "app/other.py").write_bytes(b"from sglang.srt.utils.common import stays\r\n")
    run_fix([project], options)
    after, mtimes = snapshot(project), {p: p.stat().st_mtime_ns for p in project.rglob("*") if p.is_file()}
    again = run_fix([project], options)
    assert again.fixed == 0 and again.changed == [] and snapshot(project) == after
    assert {p: p.stat().st_mtime_ns for p in project.rglob("*") if p.is_file()} == mtimes  # not even rewritten
    assert (project / "app/other.py").read_bytes() == b"from sglang.srt.utils.common import stays\r\n"


def test_crlf_and_a_byte_order_mark_are_kept(bump):
    project, _, options = bump
    (project / "app/devices.py").write_bytes(b"\xef\xbb\xbf" + IMPORTS.replace("\n", "\r\n").encode())
    (project / "pyproject.toml").write_bytes(PYPROJECT.replace("\n", "\r\n").encode())
    (project / "Dockerfile").write_bytes(b"\xef\xbb\xbfFROM lmsysorg/sglang:v0.1.0-cu129\r\nRUN true\r\n")
    report = run_fix([project], options)
    assert report.fixed == 3, report
    code = (project / "app/devices.py").read_bytes()
    assert code.startswith(b"\xef\xbb\xbf") and b"\n" not in code.replace(b"\r\n", b"")
    assert b"from sglang.srt.utils.device import get_device\r\n" in code
    assert (project / "pyproject.toml").read_bytes() == PYPROJECT.replace("2.8.0", "2.9.1").replace("\n", "\r\n").encode()
    assert (project / "Dockerfile").read_bytes() == b"\xef\xbb\xbfFROM lmsysorg/sglang:v0.2.0-cu129\r\nRUN true\r\n"


@pytest.mark.parametrize("separator", ["\u2028", "\x0c", "\x85", "\r# "])
def test_the_diff_of_a_line_holding_a_separator_is_what_git_applies_and_fix_writes(bump, capsys, separator):
    """difflib was given str.splitlines' lines: a comment holding U+2028 made two, the first
    without its newline, and git apply refused the "\\ No newline" inside the hunk (ninth
    campaign, R09). A lone \\r ends a line to Python but not to git."""
    project, args, options = bump
    written = IMPORTS.replace("The device", f"The{separator}device").encode()
    (project / "app/devices.py").write_bytes(written)
    copy = shutil.copytree(project, project.parent / "copy")
    assert main(["fix", str(project), *args, "--diff"]) == 1
    diff = capsys.readouterr().out
    applied = subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], cwd=project, input=diff.encode(),
                             capture_output=True, timeout=120, check=False)
    assert (applied.returncode, applied.stderr) == (0, b"")
    run_fix([copy], options)
    assert snapshot(project) == snapshot(copy) and snapshot(copy)["app/devices.py"] != written


def test_a_read_only_file_is_one_error_line_and_the_rest_is_fixed(bump, capsys):
    project, args, _ = bump
    pins = project / "pyproject.toml"
    pins.chmod(0o444)
    try:
        assert main(["fix", str(project), *args]) == 1
        captured = capsys.readouterr()
        errors = [line for line in captured.err.splitlines() if "error" in line]
        assert errors == ["sglang-contracts: error: pyproject.toml: not rewritten: the file is read-only"]
        assert "Traceback" not in captured.err
        assert pins.read_text() == PYPROJECT and stat.S_IMODE(pins.stat().st_mode) == 0o444
        assert "from sglang.srt.utils.device import get_device" in (project / "app/devices.py").read_text()
        assert "1 fixed, 1 remaining" in captured.err and "SGC701" in captured.out
    finally:
        pins.chmod(0o644)


def test_a_moved_import_in_a_long_file_resolves_no_scopes_and_is_fixed_as_in_a_short_one(bump, monkeypatch):
    """Fixing one import cost libcst's scopes and positions of the whole file (a 1 MB file of
    short lines: 94 s, 1.9 GB): the edit spells no name outside the imports any more or less
    often, so no import can have lost its last read and no scope is resolved; the positions are
    those of the import statement alone."""
    from libcst.metadata import PositionProvider

    from sglang_contracts.fix import python as python_edits

    project, _, options = bump
    resolved, positioned = [], []
    in_use = python_edits.imports_in_use
    monkeypatch.setattr(python_edits, "imports_in_use", lambda wrapper: resolved.append(1) or in_use(wrapper))
    positions = PositionProvider._gen_impl
    monkeypatch.setattr(PositionProvider, "_gen_impl",
                        lambda self, module: positioned.append(len(module.body)) or positions(self, module))
    padding = "y = 1\n" * 5000
    (project / "app/devices.py").write_text(IMPORTS + padding)
    report = run_fix([project], options, write=False)
    assert resolved == [] and positioned == [1]
    assert report.texts["app/devices.py"][1] == (
        "# The device helpers.\nfrom sglang.srt.utils.common import (  # upstream\n    stays,\n)\n"
        "from sglang.srt.utils.device import get_device\n\nDEVICE = get_device(0)  # keep\n" + padding)


@pytest.mark.parametrize("padding", ["lines", "bytes"])
def test_a_file_larger_than_a_fix_rewrites_is_left_and_each_finding_says_why(bump, capsys, padding):
    """Past the size bound (docs/fixing.md) a file's fixes are not written, each finding saying
    why; the other files are fixed."""
    from sglang_contracts.fix.document import MAX_FIX_BYTES, MAX_FIX_LINES

    project, args, _ = bump
    tail = "y = 1\n" * MAX_FIX_LINES if padding == "lines" else f"Y = '{'y' * MAX_FIX_BYTES}'\n"
    devices = project / "app/devices.py"
    devices.write_text(IMPORTS + tail)
    assert main(["fix", str(project), *args]) == 1
    captured = capsys.readouterr()
    assert "app/devices.py:3:5: SGC102 not fixed: app/devices.py is larger than a fix rewrites" in captured.err
    assert devices.read_text() == IMPORTS + tail
    assert "torch==2.9.1" in (project / "pyproject.toml").read_text()
    assert "1 fixed, 1 remaining" in captured.err and "Traceback" not in captured.err


def test_an_executable_python_script_of_no_suffix_is_fixed_as_its_py_twin_is(bump):
    project, _, options = bump
    script = "#!/usr/bin/env python3\nfrom sglang.srt.utils.common import get_device\n"
    for name in ("bin/launch", "bin/launch.py"):
        tree(project, {name: script})
        (project / name).chmod(0o755)
    report = run_fix([project], options)
    assert "bin/launch" in report.changed and not report.remaining
    assert (project / "bin/launch").read_text() == (project / "bin/launch.py").read_text() != script


def test_a_written_file_keeps_its_mode_and_no_temporary_file_is_left(bump):
    project, _, options = bump
    (project / "app/devices.py").chmod(0o750)
    run_fix([project], options)
    assert stat.S_IMODE((project / "app/devices.py").stat().st_mode) == 0o750
    assert not [p for p in project.rglob("*.tmp")]


def test_a_file_changed_while_fix_ran_is_left_with_the_change_and_one_line_says_so(bump, capsys, monkeypatch):
    """`fix` wrote the fixed text of what it had read over a file an editor saved meanwhile: the
    lines appended while it ran were lost, exit 0, no word (campaign 12, R09). The file is left as
    it is, its finding stays, no later round touches it; the other files are fixed."""
    from sglang_contracts.check import fixes

    project, args, _ = bump
    devices = project / "app/devices.py"
    apply = fixes.apply_fixes

    def saved_meanwhile(*given, **named):  # between the fixes' read of the files and their write
        applied = apply(*given, **named)
        if "EDITED" not in devices.read_text():
            with devices.open("a") as file:
                file.write("EDITED = 1\n")
        return applied

    monkeypatch.setattr(fixes, "apply_fixes", saved_meanwhile)
    assert main(["fix", str(project), *args]) == 1
    captured = capsys.readouterr()
    assert [line for line in captured.err.splitlines() if "error" in line] == [
        "sglang-contracts: error: app/devices.py: not rewritten: the file changed while this run worked on it: "
        "left as it is"]
    assert devices.read_text() == IMPORTS + "EDITED = 1\n"
    assert "torch==2.9.1" in (project / "pyproject.toml").read_text()
    assert "1 fixed, 1 remaining" in captured.err and "SGC102" in captured.out
    assert not list(project.rglob("*.tmp"))


def test_a_file_whose_encoding_does_not_give_its_bytes_back_is_never_rewritten(bump, capsys):
    """unicode_escape decodes `\\n` and a line end alike: a file declaring it was rewritten onto one
    line by a fix that fixed nothing, and `fix --diff` counted it as changed with no diff (campaign
    12, R08). A file no edit changed is never written; one whose text does not encode back to its
    bytes is not rewritten, each finding saying why."""
    project, args, _ = bump
    escaped = project / "app/escaped.py"
    written = b"# -*- coding: unicode_escape -*-\nfrom sglang.srt.utils.common import get_device\n"
    escaped.write_bytes(written)
    assert main(["fix", str(project), *args, "--diff"]) == 1
    captured = capsys.readouterr()
    assert "escaped.py" not in captured.out and "(2 files would change)" in captured.err
    (said,) = [line for line in captured.err.splitlines() if line.startswith("app/escaped.py:2:")]
    assert said.endswith(" SGC102 not fixed: its unicode_escape text does not encode back to the bytes read: "
                         "fix it by hand")
    assert main(["fix", str(project), *args]) == 1
    captured = capsys.readouterr()
    assert escaped.read_bytes() == written and "2 fixed, 1 remaining" in captured.err


# A fix killed while it writes a file: after the temporary file's data is written, before it
# is renamed over the file.
KILLED_WHILE_WRITING = ("import os, signal, sys\n"
                        "os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)\n"
                        "from sglang_contracts.cli import main\n"
                        "main(sys.argv[1:])\n")


@pytest.mark.parametrize("command", ["check", "fix"])
def test_a_temporary_file_a_killed_fix_left_is_removed_by_a_later_run_and_never_reported(bump, capsys, command):
    project, args, _ = bump
    killed = subprocess.run([sys.executable, "-c", KILLED_WHILE_WRITING, "fix", str(project), *args],
                            env=checkout_env(), capture_output=True)
    assert killed.returncode == -signal.SIGKILL
    (left,) = project.rglob("*.tmp")
    assert main([command, str(project), *args]) in (0, 1)
    assert left.name not in capsys.readouterr().out  # the writer may not be gone yet: left alone, never shown
    aged = time.time() - 3600
    os.utime(left, (aged, aged))  # its writer is gone, and long ago
    assert main([command, str(project), *args]) in (0, 1)
    assert left.name not in capsys.readouterr().out
    assert not list(project.rglob("*.tmp"))


def test_a_tracked_file_named_like_a_temporary_one_is_never_removed(bump, capsys) -> None:
    """A pull request may commit a file named as fix names its temporary files, under a number
    no process runs: `check` removed it once a minute old (eighth campaign, Q04). Git tracks it:
    it is the project's, and stays."""
    project, args, _ = bump
    committed = project / ".devices.py.sglang-contracts-999999-abc123.tmp"
    committed.write_text("the pull request's\n")
    git = lambda *argv: subprocess.run(["git", *argv], cwd=project, check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "a pull request's tree")
    aged = time.time() - 3600
    os.utime(committed, (aged, aged))
    assert main(["check", str(project), *args]) in (0, 1)
    assert committed.read_text() == "the pull request's\n"
    capsys.readouterr()


def test_names_git_cannot_vouch_for_are_kept_and_git_is_asked_once(bump, capsys, monkeypatch) -> None:
    """A git that does not answer (the project's .git/index a FIFO) cost each stale temporary's
    name its 30 s timeout, and each was then removed untold (campaign 15, R13): git waits
    GIT_PATIENCE at most, is not asked again for a while, and what it cannot vouch for stays."""
    from sglang_contracts.infra import gitsafety

    project, args, _ = bump
    asked = []

    def unanswered(command, **options):
        if command[0] != "git":
            return run(command, **options)
        asked.append(options["timeout"])
        raise subprocess.TimeoutExpired(command, options["timeout"])

    run = gitsafety.subprocess.run
    monkeypatch.setattr(gitsafety, "_UNANSWERED", {}, raising=False)
    monkeypatch.setattr(gitsafety.subprocess, "run", unanswered)
    aged = time.time() - 3600
    left = [project / f".m{n}.py.sglang-contracts-99999{n}-abc.tmp" for n in range(3)]
    for path in left:
        path.write_text("x")
        os.utime(path, (aged, aged))
    assert main(["check", str(project), *args]) in (0, 1)
    capsys.readouterr()
    assert all(path.exists() for path in left)
    assert asked == [gitsafety.GIT_PATIENCE]


def test_a_repository_git_refuses_vouches_for_no_name(bump, capsys, monkeypatch) -> None:
    """git refusing the repository (another user's: "dubious ownership", exit 128) was read as
    "not tracked", and a committed file named like a stale temporary was deleted (campaign 16, R05)."""
    from sglang_contracts.infra import temporaries

    project, args, _ = bump
    refused = subprocess.CompletedProcess([], 128, b"", b"fatal: detected dubious ownership in repository at '/p'\n")
    monkeypatch.setattr(temporaries, "ls_files", lambda *argv: refused)
    committed = project / ".devices.py.sglang-contracts-999999-abc123.tmp"
    committed.write_text("the pull request's\n")
    aged = time.time() - 3600
    os.utime(committed, (aged, aged))
    assert main(["check", str(project), *args]) in (0, 1)
    capsys.readouterr()
    assert committed.read_text() == "the pull request's\n"


def test_a_file_that_does_not_parse_is_never_rewritten(tmp_path):
    """A finding that points into a file libcst or ast cannot parse (the check says SGC000) is
    left: the file is not opened for writing at all."""
    broken = b"from sglang.srt.utils.common import (get_device,\n  stays\ndef broken(:\n"
    root = tree(tmp_path, {"pyproject.toml": "", "app/broken.py": broken})
    found = finding_at("SGC102", "app/broken.py", 1, 38, "sglang.srt.utils.common.get_device",
                       name="get_device", module="sglang.srt.utils.common", old="0.1.0", new="0.2.0", was="",
                       hint="", home="sglang.srt.utils.device.get_device")
    result = SimpleNamespace(diagnostics=[found], project=SimpleNamespace(root=root))
    workspace, fixed, errors = apply_fixes(result, unsafe=False)
    assert fixed == [] and len(errors) == 1 and errors[0].startswith("app/broken.py: not rewritten: cannot parse this file")
    assert (root / "app/broken.py").read_bytes() == broken


def test_a_file_outside_the_project_is_never_touched(tmp_path):
    outside = tree(tmp_path / "elsewhere", {"pyproject.toml": PYPROJECT})
    root = tree(tmp_path / "project", {"pyproject.toml": ""})
    (root / "linked.toml").symlink_to(outside / "pyproject.toml")
    for relpath in ("../elsewhere/pyproject.toml", "linked.toml"):
        found = finding_at("SGC701", relpath, 4, 6, "torch", pinned="torch==2.8.0", name="torch",
                           change="2.8.0 -> 2.9.1", old="0.1.0", new="0.2.0")
        result = SimpleNamespace(diagnostics=[found], project=SimpleNamespace(root=root))
        _, fixed, errors = apply_fixes(result, unsafe=False)
        assert fixed == [] and errors == [f"{relpath}: not rewritten: outside the project"]
    assert (outside / "pyproject.toml").read_text() == PYPROJECT


# What fixtures/README.md says `fix` changes in the bundled example, safe fixes only.
# The places naming 0.9.0 are left: the Dockerfile applies docker/patch/v0.9.0/ to that image,
# and the release moves under it only once the stack is rebased (helper-29's review: slime's image
# moved alone under a stack that fails on the new release).
BUNDLED_SAFE_EDITS = {
    "pyproject.toml": [('"transformers==4.50.0"', '"transformers==4.51.0"')],
    "demo_omni/layers.py": [("from sglang.srt.layers.quantization import Fp8Config, QuantizationConfig, get_quantization_config",
                             "from sglang.srt.layers.quantization import Fp8Config, QuantizationConfig\n"
                             "from sglang.srt.layers.quantization.base_config import get_quantization_config")],
    "demo_omni/compat.py": [("from sglang.srt.layers.quantization import get_quantization_config as get_quant  # noqa: some",
                             "from sglang.srt.layers.quantization.base_config import get_quantization_config as get_quant  # noqa: some")],
    "demo_omni/model_patch.py": [("= model_utils.apply_qk_norm", "= sglang.srt.layers.layernorm.apply_qk_norm")],
}


def test_the_bundled_example_gets_what_the_readme_says_and_the_rest_stays_reported(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    before = snapshot(project)
    report = run_fix([project], CheckOptions(old=str(OLD), new=str(NEW), use_cache=False, workers=1))
    after = snapshot(project)
    changed = {path for path in after if after[path] != before.get(path)}
    # The stack kept for 0.9.0 is left (its builds still apply it): the new release's is rebased apart.
    assert changed == set(BUNDLED_SAFE_EDITS), changed
    for path, edits in BUNDLED_SAFE_EDITS.items():
        expected = before[path].decode()
        for old, new in edits:
            assert old in expected, (path, old)
            expected = expected.replace(old, new, 1)
        if path == "demo_omni/model_patch.py":
            expected = expected.replace("import sglang.srt.models.utils as model_utils\n",
                                        "import sglang.srt.layers.layernorm\nimport sglang.srt.models.utils as model_utils\n")
        assert after[path].decode() == expected, path
    assert any("docker/patch/v0.9.0/sglang.patch:4:1: SGC902 not fixed: the patch is in `v0.9.0/`" in note
               for note in report.notes), report.notes
    codes = {d.code for d in report.remaining}
    assert {"SGC000", "SGC101", "SGC201", "SGC302", "SGC312", "SGC401", "SGC902"} <= codes  # reported, not fixed
    assert "SGC701" not in codes
    assert any("docker/Dockerfile:1:32: SGC702 not fixed: the build applies the patch stack of docker/Dockerfile" in note
               for note in report.notes), report.notes
    assert after["demo_omni/broken.py"] == before["demo_omni/broken.py"]


def test_stack_fixes_work_wherever_a_finding_points(tmp_path):
    """SGC701/SGC702 fixes read only the finding's position and message fields, so a finding in
    any file the check reads as text (a Dockerfile's pip line, a build script) is fixed alike."""
    root = tree(tmp_path, {"pyproject.toml": "", "docker/Dockerfile":
                           "RUN pip install flashinfer_python==0.6.18 'torch==2.8.0'\n",
                           "scripts/build.sh": 'SGLANG_VERSION="0.1.0.post2"\ndocker build -t app:sglang-v0.1.0-cu129 .\n'})
    findings = [
        finding_at("SGC701", "docker/Dockerfile", 1, 44, "torch", pinned="torch==2.8.0", name="torch",
                   change="2.8.0 -> 2.9.1", old="0.1.0", new="0.2.0"),
        finding_at("SGC701", "docker/Dockerfile", 1, 17, "flashinfer_python", pinned="flashinfer_python==0.6.18",
                   name="flashinfer-python", change="0.6.18 -> 0.7.1", old="0.1.0", new="0.2.0"),
        finding_at("SGC702", "scripts/build.sh", 1, 17, "sglang", written="0.1.0.post2", what="this variable",
                   named="0.1.0.post2", which="the release being replaced", old="0.1.0", new="0.2.0"),
        finding_at("SGC702", "scripts/build.sh", 2, 28, "sglang", written="v0.1.0-cu129", what="this tag",
                   named="0.1.0", which="the release being replaced", old="0.1.0", new="0.2.0"),
    ]
    result = SimpleNamespace(diagnostics=findings, project=SimpleNamespace(root=root))
    workspace, fixed, errors = apply_fixes(result, unsafe=False)
    assert len(fixed) == 4 and not errors
    assert workspace.document("docker/Dockerfile").text == "RUN pip install flashinfer_python==0.7.1 'torch==2.9.1'\n"
    assert workspace.document("scripts/build.sh").text == 'SGLANG_VERSION="0.2.0"\ndocker build -t app:sglang-v0.2.0-cu129 .\n'


def test_rules_and_explain_say_which_rules_fix(capsys):
    assert main(["rules"]) == 0
    rows = {line.split()[0]: line.split()[3] for line in capsys.readouterr().out.splitlines()}
    assert rows["SGC102"] == "safe" and rows["SGC302"] == "unsafe" and rows["SGC103"] not in ("safe", "unsafe")
    assert main(["explain", "SGC312"]) == 0
    assert "Fix (unsafe, with --unsafe-fixes): Sets each attribute" in capsys.readouterr().out
    # A rule whose fix is unsafe but safe for the findings upstream's examples make certain says when.
    assert main(["explain", "SGC201"]) == 0
    assert "Safe, without --unsafe-fixes, when: The call passes the same argument expressions" in capsys.readouterr().out


@pytest.mark.parametrize("home", ["sglang.srt.evil; import os.get_device", "sglang.srt.q import x as _, os as y #.get_device",
                                  "sglang.srt.class.get_device"])
@pytest.mark.parametrize("code, line, col, data", [
    ("SGC102", 3, 5, {"name": "get_device", "module": "sglang.srt.utils.common"}),
    ("SGC105", 7, 18, {"module": "sglang.srt.utils.common", "attr": "get_device", "verdict": "no longer has attribute"}),
])
def test_a_home_that_is_no_python_name_is_never_written_and_the_finding_says_why(tmp_path, home, code, line, col, data):
    """Issue 38 D13: a release module named `evil; import os` was offered as a moved name's
    home, and `fix` stopped with "internal error: ParserSyntaxError". A fix that cannot be built
    is skipped with a note; the file is left as it was."""
    text = IMPORTS + "\nfrom sglang.srt.utils import common\nX = common.get_device\n"
    if code == "SGC105":
        line, col = text.splitlines().index("X = common.get_device") + 1, 12
    root = tree(tmp_path, {"pyproject.toml": "", "app/devices.py": text})
    found = finding_at(code, "app/devices.py", line, col, f"sglang.srt.utils.common.get_device", old="0.1.0",
                       new="0.2.0", was="", hint="", home=home, **data)
    result = SimpleNamespace(diagnostics=[found], project=SimpleNamespace(root=root))
    notes: dict = {}
    workspace, fixed, errors = apply_fixes(result, unsafe=True, notes=notes)
    assert fixed == [] and errors == [] and not any(document.changed for document in workspace.documents.values())
    (said,) = notes.values()
    assert said == [f"app/devices.py:{line}:{col}: {code} not fixed: the fix cannot be built "
                    f"({home} is not a Python name)"], said


def test_a_release_module_whose_name_is_no_python_name_is_never_offered_as_a_home(tmp_path):
    """What a hint names is a module an import can spell: a wheel member `sglang/srt/evil; import
    os.py` defining the lost name is no candidate, nor a folder `3rdparty` holding a module of the
    gone module's name."""
    from sglang_contracts.check.runner import run_check

    new = {**UPSTREAM_NEW, "sglang/srt/utils/device.py": "",
           "sglang/srt/evil; import os.py": "def get_device(n):\n    return n\n",
           "sglang/srt/class/device.py": "def get_device(n):\n    return n\n"}
    old, new = tree(tmp_path / "old", UPSTREAM_OLD), tree(tmp_path / "new", new)
    project = tree(tmp_path / "project", {"pyproject.toml": PYPROJECT, "app/devices.py": IMPORTS})
    result = run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1))
    (message,) = [d.message for d in result.diagnostics if d.code == "SGC102"]
    assert message.endswith("no definition of get_device was found elsewhere in the new release"), message


@pytest.mark.parametrize(("text", "module", "expected"), [
    ('"""Doc."""\nimport dataclasses\n\nfrom sglang.srt.server_args import ServerArgs\n', "msgspec",
     '"""Doc."""\nimport dataclasses\n\nimport msgspec\nfrom sglang.srt.server_args import ServerArgs\n'),
    ("import types\n\nfrom sglang import x\n", "collections", "import collections\nimport types\n\nfrom sglang import x\n"),
    ("from sglang import x\n\nY = 1\n", "os", "import os\n\nfrom sglang import x\n\nY = 1\n"),
    ("import os\n\nimport torch\n# the project's own\nfrom . import y\n", "zmq",
     "import os\n\nimport torch\nimport zmq\n# the project's own\nfrom . import y\n"),
])
def test_an_added_import_goes_where_isorts_default_order_puts_it(text: str, module: str, expected: str) -> None:
    from sglang_contracts.fix.document import Document
    from sglang_contracts.fix.python import ensure_import

    document = Document("app/a.py", text.encode(), python=True)
    ensure_import(document, module)
    assert document.text == expected


def test_an_import_the_edits_left_unused_is_removed_and_one_never_read_is_kept() -> None:
    from sglang_contracts.fix.document import Document
    from sglang_contracts.fix.python import remove_imports_left_unused

    text = "import dataclasses\nimport os  # for its side effects\nfrom a import b\n\nN = dataclasses.fields(b)\n"
    document = Document("app/a.py", text.encode(), python=True)
    document.text = text.replace("dataclasses.fields", "msgspec.structs.fields")
    remove_imports_left_unused(document)
    assert document.text == "import os  # for its side effects\nfrom a import b\n\nN = msgspec.structs.fields(b)\n"


def test_an_import_read_only_in_a_function_the_edits_rewrote_is_removed_and_the_future_import_kept() -> None:
    """The file as read is resolved when an import unread now may have been read (its name is
    spelled outside the imports); `from __future__ import annotations`, never read, stays."""
    from sglang_contracts.fix.document import Document
    from sglang_contracts.fix.python import remove_imports_left_unused, replace_attribute

    text = ("from __future__ import annotations\n\nimport dataclasses\nimport msgspec\n\n\n"
            "def f(b):\n    return dataclasses.fields(b)\n")
    document = Document("app/a.py", text.encode(), python=True)
    assert replace_attribute(document, 8, 24, "msgspec.structs.fields")
    remove_imports_left_unused(document)
    assert document.text == ("from __future__ import annotations\nimport msgspec\n\n\n"
                             "def f(b):\n    return msgspec.structs.fields(b)\n")


def test_edits_on_one_file_reach_a_decorator_and_each_sees_the_file_the_last_one_left() -> None:
    """Each edit descends only into the statements on its line (a decorated method's from its
    decorator) and reads the positions of the tree as the edit before it left it."""
    from sglang_contracts.fix.document import Document
    from sglang_contracts.fix.python import add_arguments, replace_attribute

    text = "class A:\n    x = 1\n\n    @app.route(old=1)\n    def f(self):\n        return app.route\n"
    document = Document("app/a.py", text.encode(), python=True)
    assert replace_attribute(document, 6, 20, "web.path")
    assert replace_attribute(document, 4, 10, "web.route")
    assert add_arguments(document, 4, 10, [("new", "2")])
    assert document.text == ("class A:\n    x = 1\n\n    @web.route(old=1, new=2)\n    def f(self):\n"
                             "        return web.path\n")


@pytest.mark.parametrize(("text", "expected"), [
    ("f(a, b)\n", "f(a, b, checkpoint=True)\n"),
    ("f()\n", "f(checkpoint=True)\n"),
    ("f(\n    a,\n    b,\n)\n", "f(\n    a,\n    b,\n    checkpoint=True,\n)\n"),
    ("f(a, checkpoint=False)\n", "f(a, checkpoint=False)\n"),  # passed already: left
])
def test_an_added_keyword_argument_follows_the_calls_last_in_its_formatting(text: str, expected: str) -> None:
    from sglang_contracts.fix.document import Document
    from sglang_contracts.fix.python import add_arguments

    document = Document("app/a.py", text.encode(), python=True)
    add_arguments(document, 1, 1, [("checkpoint", "True")])
    assert document.text == expected


@pytest.mark.parametrize(("mark", "encoding"), [(b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"),
                                               (b"\xfe\xff", "utf-16-be"), (b"\xff\xfe\x00\x00", "utf-32-le")])
def test_a_requirements_file_with_a_byte_order_mark_is_read_and_fixed_in_its_encoding(tmp_path, mark, encoding) -> None:
    """pip reads a requirements file by its byte-order mark (a Windows editor's UTF-8 or UTF-16):
    read as plain UTF-8, its pins were lost without a word (campaign 9, R20). The pin is read,
    reported where an editor shows it, and the fix writes the file back in its own encoding."""
    from tests.helpers import upstream_tree
    from sglang_contracts.project.pins import find_sglang_pin

    old = upstream_tree(tmp_path / "1.0.0", {"sglang/srt/a.py": "x = 1\n"}, "1.0.0")
    new = upstream_tree(tmp_path / "1.0.1", {"sglang/srt/a.py": "x = 1\n"}, "1.0.1")
    project = tmp_path / "p"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (project / "m.py").write_text("from sglang.srt.a import x\n")
    (project / "requirements.txt").write_bytes(mark + "sglang==1.0.0\ntorch==2.9.1\n".encode(encoding))
    releases = ["--old", str(old), "--new", str(new)]
    pin = find_sglang_pin(project)
    assert (pin.version, pin.where, pin.line) == ("1.0.0", "requirements.txt", 1)  # what --old defaults to
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["check", str(project), *releases, "--select", "SGC702", "--format", "json"]) == 1
    (finding,) = json.loads(out.getvalue())
    assert (finding["path"], finding["line"], finding["col"]) == (str(project / "requirements.txt"), 1, 1)
    with contextlib.redirect_stdout(io.StringIO()):
        main(["fix", str(project), *releases, "--select", "SGC702"])
    assert (project / "requirements.txt").read_bytes() == mark + "sglang==1.0.1\ntorch==2.9.1\n".encode(encoding)


def test_findings_a_file_does_not_list_are_left_with_their_count_and_fixed_by_the_next_fix(bump, monkeypatch):
    # Past MOST_LISTED findings of one rule in a file, one finding counts the rest (R02): it
    # holds nothing a fix reads, so none is tried on it, and it stays, saying findings are left;
    # each fix takes the findings listed (its re-check takes the rest for the ones it fixed:
    # they say the same), so fixing again goes on where the last stopped.
    import sglang_contracts.diagnostics as diagnostics

    monkeypatch.setattr(diagnostics, "MOST_LISTED", 2)
    project, _, options = bump
    many = project / "app/many.py"
    many.write_text("from sglang.srt.utils.common import get_device\n" * 5)
    for fixed in (2, 4, 5):
        report = run_fix([project], options)
        assert many.read_text().count("utils.device") == fixed and report.errors == []
        counted = [d for d in report.remaining if diagnostics.NOT_LISTED in d.data]
        assert bool(counted) == (fixed < 5)


def test_a_file_lists_at_most_most_listed_findings_of_a_rule_and_counts_the_rest(monkeypatch):
    import sglang_contracts.diagnostics as diagnostics

    monkeypatch.setattr(diagnostics, "MOST_LISTED", 2)
    pins = [diagnostics.Diagnostic("requirements.txt", line, 1, "SGC702", severity, f"pin {line}", "sglang")
            for line, severity in ((1, "warning"), (2, "warning"), (3, "info"), (4, "error"), (5, "warning"))]
    others = [diagnostics.Diagnostic("requirements.txt", 9, 1, "SGC701", "warning", "torch", "torch"),
              diagnostics.Diagnostic("z.txt", 1, 1, "SGC702", "warning", "pin", "sglang")]
    listed = diagnostics.listed_per_file([*pins, *others])
    assert listed[:2] == pins[:2] and listed[3:] == others  # in report order
    count = listed[2]
    assert (count.path, count.line, count.code, count.severity) == ("requirements.txt", 3, "SGC702", "error")
    assert count.message == ("3 more SGC702 findings in this file are not listed (a file lists at most 2 of one "
                             "rule); the first: pin 3")
    assert not can_fix(count, unsafe=True)


@pytest.mark.parametrize("errors", ["replace", "surrogateescape"])
def test_a_file_marked_utf_16_with_an_odd_byte_count_is_read_not_raised(errors) -> None:
    """surrogateescape (patches are read with it) keeps bytes of ASCII-like encodings only: a
    patch file marked UTF-16 whose byte count is odd raised UnicodeDecodeError (the fuzzing of
    stack files found it)."""
    from sglang_contracts.infra.files import decoded_text

    assert decoded_text(b"\xfe\xff\x00a\x00\n\n", errors).startswith("a\n")


def test_two_findings_alike_one_fixed_leave_one_remaining() -> None:
    """The findings left after a fix are matched without their places (edits move them): a fix
    of one of two findings alike in a file counted both as fixed, and the summary said none was
    left (found beside campaign 9's fixes)."""
    from sglang_contracts.check.fixes import remaining_after
    from sglang_contracts.diagnostics import Diagnostic

    def finding(line: int) -> Diagnostic:
        return Diagnostic(path="app/m.py", line=line, col=1, code="SGC102", severity="error",
                          message="x is no longer importable from sglang.srt.a", symbol="sglang.srt.a.x")

    first = [finding(1), finding(2)]
    # a first-round fix (the finding itself), and a later round's (a re-check's finding alike)
    assert [d.line for d in remaining_after(first, [first[0]], [finding(1)])] == [1]
    assert [d.line for d in remaining_after(first, [finding(1)], [finding(1)])] == [1]
    assert remaining_after(first, [finding(1), finding(1)], []) == []


def test_a_rewritten_file_keeps_its_owner_where_the_process_may_give_it(tmp_path, monkeypatch) -> None:
    """`fix` as root in a CI container over another user's checkout made the files it rewrote
    root's: their owner could no longer read a 0640 one (campaign 16, R04)."""
    from sglang_contracts.fix import document

    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    owner = os.stat(path)
    given = []
    monkeypatch.setattr(document.os, "geteuid", lambda: owner.st_uid + 1)  # as another user (root) runs fix
    monkeypatch.setattr(document.os, "chown", lambda name, uid, gid: given.append((os.path.dirname(name), uid, gid)))
    document.write_atomically(path, b"x = 2\n")
    assert path.read_text() == "x = 2\n" and given == [(str(tmp_path), owner.st_uid, owner.st_gid)]
