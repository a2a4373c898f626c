"""A damaged SGLang release never crashes or hangs a run (issue 11, D14, the upstream side).

Every source of a release (a directory, a git tag, a wheel) reads only regular files under a
size bound. A module that is there but cannot be read is one SGC000 where the project imports
it; the rest of the report is what it would be without it. A folder that cannot be listed is
recorded, not taken for absent: its modules are SGC000 too, never "gone from the release".
"""

from __future__ import annotations

import errno
import io
import os
import signal
import sys
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import git
import pytest

from sglang_contracts.cli import main
from sglang_contracts.infra.errors import SourceError
from sglang_contracts.infra.files import MAX_PYTHON_BYTES, Unreadable
from sglang_contracts.check.runner import CheckOptions, run_check
from sglang_contracts.sources.directory import DirectoryTree
from sglang_contracts.sources.git import git_release
from sglang_contracts.sources.index import WheelTree
from tests.helpers import write_tree as write
from tests.robustness.bump import BROKEN_IMPORT, NEW, OK_FINDING, OLD, codes

DAMAGED = "sglang/srt/damaged.py"
USES_DAMAGED = "from sglang.srt.damaged import thing\n"
UPSTREAM_OLD = {**OLD, DAMAGED: "thing = 1\n"}
UPSTREAM_NEW = {**NEW, DAMAGED: "thing = 1\n"}
PROJECT = {"pyproject.toml": "[project]\nname = 'app'\n", "app/__init__.py": "",
           "app/ok.py": BROKEN_IMPORT, "app/uses.py": USES_DAMAGED}
# What the bump reports with nothing damaged: the unrelated finding, which must stay.
EXPECTED = [OK_FINDING]


@contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """A hang fails the test instead of the suite."""
    def expired(*_):
        raise TimeoutError(f"no result in {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write(tmp_path / "project", PROJECT)


@pytest.fixture
def releases(tmp_path: Path) -> tuple[Path, Path]:
    return write(tmp_path / "old", UPSTREAM_OLD), write(tmp_path / "new", UPSTREAM_NEW)


def findings(project: Path, old: str | Path, new: str | Path, **options) -> list[str]:
    with deadline(120):
        result = run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1, **options))
    return [f"{d.path}:{d.line}:{d.col}: {d.code} {d.message}" for d in result.diagnostics]


def sgc000(label: str, reason: str) -> str:
    return (f"app/uses.py:1:32: SGC000 cannot read sglang.srt.damaged in {label} ({reason}); "
            "the contracts with it are not checked")


def test_nothing_damaged_reports_only_the_unrelated_finding(project, releases) -> None:
    assert codes(findings(project, *releases)) == EXPECTED


# -- a release in a directory -------------------------------------------------------------------


def deny(monkeypatch, target: Path, *functions: str) -> None:
    """`os.<function>` (and for "open" io.open too, which Path.read_bytes uses) raises
    PermissionError for `target`: chmod denies nothing to root, who may run the tests."""
    for module, function in [(module, function) for function in functions
                             for module in ((os, io) if function == "open" else (os,))]:
        real = getattr(module, function)

        def denied(path, *args, _real=real, **kwargs):
            if isinstance(path, (str, bytes, os.PathLike)) and Path(os.fsdecode(path)) == target:
                raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))
            return _real(path, *args, **kwargs)

        monkeypatch.setattr(module, function, denied)


def test_an_unreadable_module_file_is_one_sgc000_at_its_import(monkeypatch, project, releases) -> None:
    old, new = releases
    deny(monkeypatch, new / DAMAGED, "open")
    lines = findings(project, old, new)
    assert lines[1:] == [sgc000(f"sglang at {new}", "permission denied")]
    assert codes(lines[:1]) == EXPECTED


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_module_does_not_hang_the_run(project, releases) -> None:
    old, new = releases
    (new / DAMAGED).unlink()
    os.mkfifo(new / DAMAGED)
    lines = findings(project, old, new)
    assert lines[1:] == [sgc000(f"sglang at {new}", "a FIFO, not a regular file")]
    assert codes(lines[:1]) == EXPECTED


def test_a_module_linked_to_dev_zero_is_a_link_out_not_read(project, releases) -> None:
    old, new = releases
    (new / DAMAGED).unlink()
    (new / DAMAGED).symlink_to("/dev/zero")
    lines = findings(project, old, new)
    assert lines[1:] == [sgc000(f"sglang at {new}", "a link out of the release, not read")]
    assert codes(lines[:1]) == EXPECTED


def test_a_module_over_the_size_bound_is_not_read(project, releases) -> None:
    old, new = releases
    (new / DAMAGED).write_bytes(b"thing = 1\n" + b"#" * MAX_PYTHON_BYTES)
    lines = findings(project, old, new)
    assert lines[1:] == [sgc000(f"sglang at {new}", "4.0 MB, over the 4.0 MB this tool reads")]
    assert codes(lines[:1]) == EXPECTED


RUNNING = f"{sys.version_info[0]}.{sys.version_info[1]}"


@pytest.mark.parametrize("content, reason", [
    pytest.param(b"type Thing = int\nthing = 1\n",
                 f"does not parse: invalid syntax at line 1 on Python {RUNNING}; needs a newer Python?",
                 marks=pytest.mark.skipif(sys.version_info >= (3, 12), reason="PEP 695 parses from 3.12"),
                 id="pep-695-alias"),
    pytest.param(b"def first[T](x: T) -> T: ...\nthing = 1\n",
                 f"does not parse: expected '(' at line 1 on Python {RUNNING}; needs a newer Python?",
                 marks=pytest.mark.skipif(sys.version_info >= (3, 12), reason="PEP 695 parses from 3.12"),
                 id="pep-695-generic-function"),
    pytest.param("thing = 1\n".encode("utf-16"), "does not parse: it holds NUL bytes, UTF-16 or not text?",
                 id="utf-16"),
    pytest.param(b"thing = " + b"-" * 5000 + b"1\n", "does not parse: nested too deeply for Python's parser",
                 id="5000-deep"),
    # Campaign 4's D02: Python refuses to import it (SyntaxError: unknown encoding), so must the check
    pytest.param(b"# -*- coding: bogus-codec -*-\nthing = 1\n",
                 "does not parse: unknown encoding: bogus-codec (its coding comment names no codec Python can read it with)",
                 id="unknown-coding-comment"),
    pytest.param(b"# coding: rot13\nthing = 1\n",
                 "does not parse: encoding problem: rot13 (its coding comment names no codec Python can read it with)",
                 id="transform-coding-comment"),
    pytest.param(b"thing = " + b"(" * 5000 + b"1" + b")" * 5000 + b"\n",
                 "does not parse: nested too deeply for Python's parser", id="5000-parentheses"),
    pytest.param(b"thing = 1\n" + b"f(1)\n" * 130_000,  # the parser held ~0.7 KB a token (campaign 12, R04)
                 "not read: more than the 500,000 pieces of syntax this tool parses in one file",
                 id="520,000-pieces"),
])
def test_a_module_this_python_cannot_parse_is_one_sgc000_at_its_import(project, releases, content, reason) -> None:
    old, new = releases
    (new / DAMAGED).write_bytes(content)
    lines = findings(project, old, new)
    assert lines[1:] == [sgc000(f"sglang at {new}", reason)]
    assert codes(lines[:1]) == EXPECTED


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_patch_of_an_unreadable_file_is_left_unchecked_not_judged(project, releases) -> None:
    old, new = releases
    write(project, {"patches/fix.patch": f"diff --git a/python/{DAMAGED} b/python/{DAMAGED}\n--- a/python/{DAMAGED}\n"
                                         f"+++ b/python/{DAMAGED}\n@@ -1,1 +1,1 @@\n-thing = 1\n+thing = 2\n"})
    (new / DAMAGED).unlink()
    os.mkfifo(new / DAMAGED)
    lines = findings(project, old, new)  # no "its file is gone" (SGC901) for a file that is there
    assert lines[1:] == [sgc000(f"sglang at {new}", "a FIFO, not a regular file")]
    assert codes(lines[:1]) == EXPECTED


def test_an_unreadable_package_init_is_a_one_line_error(monkeypatch, project, releases) -> None:
    old, new = releases
    deny(monkeypatch, new / "sglang/__init__.py", "open")
    with pytest.raises(SourceError, match=r"sglang/__init__.py cannot be read \(permission denied\)$"):
        findings(project, old, new)


def test_damaged_files_read_as_unreadable_and_missing_ones_as_none(tmp_path, monkeypatch) -> None:
    root = write(tmp_path / "tree", {"sglang/__init__.py": "", "sglang/denied.py": "x = 1\n"})
    if hasattr(os, "mkfifo"):
        os.mkfifo(root / "sglang" / "pipe.py")
    (root / "sglang" / "zero.py").symlink_to("/dev/zero")
    (root / "sglang" / "dangling.py").symlink_to(root / "nowhere.py")
    (root / "sglang" / "self.py").symlink_to(root / "sglang" / "self.py")
    deny(monkeypatch, root / "sglang" / "denied.py", "open")
    tree = DirectoryTree(root)
    for name in ("denied", "zero", "dangling", "self", *(["pipe"] if hasattr(os, "mkfifo") else [])):
        with pytest.raises(Unreadable):
            tree.read_bytes(f"sglang/{name}.py")
        with pytest.raises(Unreadable):
            tree.content_key(f"sglang/{name}.py")
        assert tree.readable_source(f"sglang/{name}.py") is None
    assert tree.read_bytes("sglang/missing.py") is None and tree.read_bytes("sglang/__init__.py/x") is None
    assert tree.read_bytes("sglang") is None  # a folder is no file


def test_an_unlistable_folder_is_recorded_and_its_modules_are_sgc000_not_gone(monkeypatch, project, releases) -> None:
    old, new = releases
    layer = {"sglang/srt/layers/__init__.py": "", "sglang/srt/layers/norm.py": "class RMSNorm: ...\n"}
    write(old, layer)
    write(new, layer)
    write(project, {"app/norm.py": "from sglang.srt.layers.norm import RMSNorm\n"})
    deny(monkeypatch, new / "sglang/srt/layers", "listdir", "scandir")
    tree = DirectoryTree(new)
    assert tree.list_dir("sglang/srt/layers") is None and tree.unlisted("sglang/srt/layers") == "permission denied"
    assert "sglang/srt/utils.py" in list(tree.iter_files("sglang"))  # the walk goes on around it
    lines = findings(project, old, new)
    assert codes(lines) == ["app/norm.py:1:36: SGC000", *EXPECTED]
    assert lines[0] == (f"app/norm.py:1:36: SGC000 cannot read sglang.srt.layers.norm in sglang at {new} "
                        "(folder sglang/srt/layers cannot be listed: permission denied); the contracts with it are not checked")


def test_link_cycles_in_a_release_do_not_loop(project, releases) -> None:
    old, new = releases
    srt = new / "sglang" / "srt"
    (srt / "again").symlink_to(srt)  # a folder linked to itself, through its parent
    (srt / "nested").mkdir()
    (srt / "nested" / "up").symlink_to("..")
    (srt / "knot").symlink_to(srt / "knot")  # a link to itself: ELOOP
    (srt / "knot.py").symlink_to(srt / "knot.py")
    with deadline(60):
        files = list(DirectoryTree(new).iter_files("sglang"))
    assert "sglang/srt/knot.py" in files and not any("/again/" in f or "/up/" in f for f in files)
    # helper moved: the search for its new home reads every module, the knotted ones included
    write(new, {"sglang/srt/helpers.py": "def helper(): ...\n"})
    lines = findings(project, old, new)
    assert codes(lines) == EXPECTED
    assert "sglang.srt.helpers" in lines[0], lines


# -- a git tag ----------------------------------------------------------------------------------


AUTHOR = git.Actor("Fixture Bot", "fixture@example.invalid")


def commit_tag(repo: git.Repo, files: dict[str, str | bytes], tag: str) -> None:
    """Make the working tree hold exactly `files` (python/... paths), commit, and tag."""
    work = Path(repo.working_tree_dir)
    for tracked in repo.git.ls_files().splitlines():
        (work / tracked).unlink()
    write(work, files)
    repo.git.add("--all")
    repo.index.commit(tag, author=AUTHOR, committer=AUTHOR)
    repo.create_tag(tag)


def in_python(files: dict[str, str | bytes]) -> dict[str, str | bytes]:
    return {f"python/{path}": text for path, text in files.items()}


def test_a_tag_whose_python_entry_is_a_file_is_a_one_line_error(tmp_path, capsys, monkeypatch, project) -> None:
    repo = git.Repo.init(tmp_path / "clone")
    commit_tag(repo, {"python": "not a folder\n", "README.md": "x\n"}, "v0.1.0")
    with pytest.raises(SourceError, match=r"@v0\.1\.0: python is a file, not a folder, so this ref has no sglang"):
        git_release(tmp_path / "clone", "v0.1.0")
    monkeypatch.chdir(project)
    status = main(["check", str(project), "--sglang-repo", str(tmp_path / "clone"), "--old", "v0.1.0",
                   "--new", "v0.1.0", "--no-cache"])
    out, err = capsys.readouterr()
    assert (status, out) == (2, "")
    assert len(err.splitlines()) == 1 and "python is a file" in err and "Traceback" not in err


def test_a_blob_over_the_size_bound_is_sgc000_and_never_read(tmp_path, monkeypatch, project) -> None:
    repo = git.Repo.init(tmp_path / "clone")
    commit_tag(repo, in_python(UPSTREAM_OLD), "v0.1.0")
    commit_tag(repo, in_python({**UPSTREAM_NEW, DAMAGED: b"thing = 1\n" + b"#" * MAX_PYTHON_BYTES}), "v0.2.0")
    read = []
    real_stream = git.Blob.data_stream
    monkeypatch.setattr(git.Blob, "data_stream", property(lambda blob: read.append(blob.hexsha) or real_stream.fget(blob)))
    lines = findings(project, "v0.1.0", "v0.2.0", sglang_repo=tmp_path / "clone")
    label = f"sglang v0.2.0 ({tmp_path / 'clone'})"
    assert lines[1:] == [sgc000(label, "4.0 MB, over the 4.0 MB this tool reads")]
    assert codes(lines[:1]) == EXPECTED
    big = repo.commit("v0.2.0").tree / f"python/{DAMAGED}"
    small = repo.commit("v0.1.0").tree / f"python/{DAMAGED}"
    assert big.hexsha not in read and small.hexsha in read


# -- a wheel ------------------------------------------------------------------------------------


def build_wheel(folder: Path, version: str, files: dict[str, str | bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"sglang-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            archive.writestr(name, text)
        archive.writestr(f"sglang-{version}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n")
        archive.writestr(f"sglang-{version}.dist-info/RECORD", "")
    return wheel


def test_a_zip_bomb_member_is_sgc000_and_never_inflated(tmp_path, monkeypatch, project, releases) -> None:
    old, _ = releases
    bomb = b"\0" * (MAX_PYTHON_BYTES + 1)
    wheel = build_wheel(tmp_path / "cache" / "wheels", "0.2.0", {**UPSTREAM_NEW, DAMAGED: bomb})
    assert wheel.stat().st_size < 64 * 1024  # a few kB that inflate past the bound
    inflated = []
    real_member_bytes = WheelTree._member_bytes
    monkeypatch.setattr(WheelTree, "_member_bytes", lambda self, info, most: inflated.append(
        info.filename) or real_member_bytes(self, info, most))
    lines = findings(project, old, "0.2.0", cache_dir=tmp_path / "cache")
    assert lines[1:] == [sgc000("sglang 0.2.0 (package index)", "4.0 MB uncompressed, over the 4.0 MB this tool reads")]
    assert codes(lines[:1]) == EXPECTED
    assert DAMAGED not in inflated and "sglang/srt/utils.py" in inflated


def lie_about_size(wheel: Path, member: str, claimed: int) -> None:
    """Rewrite the size the archive's central directory (and the local header) give `member`."""
    with zipfile.ZipFile(wheel) as archive:
        info = archive.getinfo(member)
    data = bytearray(wheel.read_bytes())
    real = info.file_size.to_bytes(4, "little")
    local = info.header_offset
    assert data[local + 22:local + 26] == real
    data[local + 22:local + 26] = claimed.to_bytes(4, "little")
    central = archive.start_dir
    while bytes(data[central + 46:central + 46 + len(member)]) != member.encode():
        lengths = [int.from_bytes(data[central + at:central + at + 2], "little") for at in (28, 30, 32)]
        central += 46 + sum(lengths)
    assert data[central + 24:central + 28] == real
    data[central + 24:central + 28] = claimed.to_bytes(4, "little")
    wheel.write_bytes(bytes(data))


def test_a_member_whose_header_understates_its_size_is_never_read_past_the_claim(tmp_path) -> None:
    wheel = build_wheel(tmp_path / "w", "0.2.0", {**UPSTREAM_NEW, DAMAGED: b"\0" * (MAX_PYTHON_BYTES * 2)})
    lie_about_size(wheel, DAMAGED, 100)
    tree = WheelTree(wheel)
    assert tree.members[DAMAGED].file_size == 100
    with deadline(30), pytest.raises(SourceError, match="damaged: delete it") as error:
        tree.read_bytes(DAMAGED)  # 100 bytes inflated, then the checksum fails
    assert "Bad CRC-32" in str(error.value) and "\n" not in str(error.value)


# Found by fuzzing (tests/robustness/test_fuzz.py): names from the project that no file can have, asked
# of a folder release. Each used to end the run (ENAMETOOLONG out of prefetch) or be an SGC001.
@pytest.mark.parametrize("files", [
    {"app/long.py": "from sglang." + "x" * 300 + " import y\n"},
    {"fix.patch": "--- a/python/sglang/" + "x" * 300 + ".py\n+++ b/python/sglang/" + "x" * 300
                  + ".py\n@@ -1 +1 @@\n-a\n+b\n"},
    {"fix.patch": "--- a/python/sglang/a\0.py\n+++ b/python/sglang/a\0.py\n@@ -1 +1 @@\n-a\n+b\n"},
], ids=["import-of-a-too-long-name", "patch-of-a-too-long-name", "patch-of-a-name-with-nul"])
def test_names_no_file_can_have_are_absent_modules_not_crashes(tmp_path: Path, files: dict[str, str]) -> None:
    tree = DirectoryTree(tmp_path)
    for relpath in [f"sglang/{'x' * 300}.py", "sglang/a\0.py", f"sglang/{'x' * 300}"]:
        assert tree.read_bytes(relpath) is None and tree.list_dir(relpath) is None
    old, new = write(tmp_path / "old", OLD), write(tmp_path / "new", NEW)
    project = write(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n", "app/__init__.py": "",
                                           "app/ok.py": BROKEN_IMPORT, **files})
    result = run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1))
    found = codes([f"{d.path}:{d.line}:{d.col}: {d.code} {d.message}" for d in result.diagnostics])
    assert OK_FINDING in found and not [line for line in found if line.endswith("SGC001")], found


def test_an_import_at_the_head_of_hundreds_of_re_exports_is_judged_not_sgc000(tmp_path, project) -> None:
    # 400 modules each re-exporting X from the next met the recursion limit inside griffe: one
    # SGC000 at pyproject.toml:1:1 and the removed X not reported (seventh campaign, P10).
    def chain(end: str) -> dict[str, str]:
        return {**{f"sglang/srt/r{i}.py": f"from sglang.srt.r{i + 1} import X as X\n" for i in range(399)},
                "sglang/srt/r399.py": end}

    old = write(tmp_path / "old", {**UPSTREAM_OLD, **chain("X = 1\n")})
    new = write(tmp_path / "new", {**UPSTREAM_NEW, **chain("Y = 1\n")})
    write(project, {"app/chained.py": "from sglang.srt.r0 import X\n"})
    assert codes(findings(project, old, new)) == ["app/chained.py:1:27: SGC102", *EXPECTED]
