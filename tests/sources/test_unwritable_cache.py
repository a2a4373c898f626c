"""A cache that cannot take a download (a file where a folder should be, /dev/null, a name too
long): the wheel goes to a temporary folder and one warning line names the cache folder; only
when no temporary folder can be made either is it an error, in one line naming the cache."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import pytest

from sglang_contracts.cli import main

LONG = "a" * 4000


def run(capsys, project: Path, cache: Path | str, *extra: str) -> tuple[int, str, str]:
    status = main(["check", str(project), "--old", "0.9.0", "--new", "0.9.1", "--cache-dir", str(cache), "-q", *extra])
    out, err = capsys.readouterr()
    return status, out, err


def unusable_caches(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """name -> (the --cache-dir, what the warning must say stops it)."""
    plain = tmp_path / "plain-file"
    plain.write_text("")
    wheels_a_file = tmp_path / "wheels-a-file"
    wheels_a_file.mkdir()
    (wheels_a_file / "wheels").write_text("")
    return {
        "a file": (plain, f"{plain} is not a folder"),
        "below a file": (plain / "cache", f"{plain} is not a folder"),
        "wheels a file": (wheels_a_file, f"{wheels_a_file / 'wheels'} is not a folder"),
        "/dev/null": (Path("/dev/null"), "/dev/null is not a folder"),
        "too long": (tmp_path / LONG, "File name too long"),
    }


@pytest.mark.parametrize("case", ["a file", "below a file", "wheels a file", "/dev/null", "too long"])
def test_a_cache_that_cannot_take_a_download_falls_back_to_a_temporary_folder(
        published, capsys, tmp_path: Path, case: str) -> None:
    project, options = published
    clean = run(capsys, project, options.cache_dir)
    assert clean[0] == 1 and clean[1] and clean[2] == ""
    cache, reason = unusable_caches(tmp_path)[case]
    status, out, err = run(capsys, project, cache)
    assert (status, out) == clean[:2]  # the same findings
    (line,) = err.splitlines()  # one line, for both releases
    assert line.startswith("sglang-contracts: warning: cannot write the cache folder ")
    assert reason in line and "temporary folder for this run only" in line and len(line) < 400


def test_no_cache_and_no_temporary_folder_is_one_error_line_naming_the_cache(
        published, capsys, tmp_path: Path, monkeypatch) -> None:
    project, _ = published
    plain = tmp_path / "plain-file"
    plain.write_text("")
    monkeypatch.setattr(tempfile, "tempdir", str(plain / "tmp"))  # no temporary folder can be made
    status, out, err = run(capsys, project, plain)
    assert (status, out) == (2, "")
    (line,) = err.splitlines()
    assert line.startswith(f"sglang-contracts: error: cannot write the cache folder {plain / 'wheels'} ")
    assert "nor make a temporary folder" in line and "--cache-dir" in line


def test_the_fallback_folder_is_removed_when_the_process_ends(published, tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.helpers import checkout_env

    project, _ = published
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    completed = subprocess.run(
        [sys.executable, "-m", "sglang_contracts", "check", str(project), "--old", "0.9.0", "--new", "0.9.1",
         "--cache-dir", "/dev/null", "-q"],
        capture_output=True, text=True, env=checkout_env(TMPDIR=str(scratch)))
    assert completed.returncode == 1 and completed.stdout
    assert completed.stderr.count("\n") == 1 and "/dev/null is not a folder" in completed.stderr
    assert list(scratch.iterdir()) == []


def test_a_baseline_that_cannot_be_written_is_one_error_line_naming_it(check, tmp_path: Path) -> None:
    plain = tmp_path / "plain-file"
    plain.write_text("")
    result = check("--write-baseline", str(plain / "baseline.json"))
    assert (result.status, result.out) == (2, "")
    assert result.err == f"sglang-contracts: error: cannot write {plain / 'baseline.json'} ({plain} is not a folder)\n"


@pytest.mark.parametrize("kind", ["upstream", "project", "runs", "incremental", "closure"])
def test_a_cache_that_cannot_keep_records_is_one_warning_line_and_the_same_findings(
        published, capsys, monkeypatch, tmp_path: Path, kind: str) -> None:
    """The wheels are cached, but a folder of records is a file (helper-1's audit): the run is as
    ever, and one line says why the next will compute everything again; none once it can."""
    import shutil

    from sglang_contracts.infra import cache as caches

    project, options = published
    clean = run(capsys, project, options.cache_dir)

    def computed() -> tuple[int, str, str]:
        """A run in a process of its own (one warning a process), with no run to replay."""
        monkeypatch.setattr(caches, "_WARNED", set())
        shutil.rmtree(options.cache_dir / "runs", ignore_errors=True)
        return run(capsys, project, options.cache_dir)

    shutil.rmtree(options.cache_dir / kind, ignore_errors=True)
    (options.cache_dir / kind).write_text("")
    for _ in range(2):
        if kind == "runs":  # a file in its place: kept there, so no run is ever replayed
            monkeypatch.setattr(caches, "_WARNED", set())
            status, out, err = run(capsys, project, options.cache_dir)
        else:
            status, out, err = computed()
        assert (status, out) == clean[:2]
        (line,) = err.splitlines()
        assert line == (f"sglang-contracts: warning: cannot write the cache folder {options.cache_dir / kind} "
                        f"({options.cache_dir / kind} is not a folder); what this run computed is not kept for the "
                        "next (give a writable --cache-dir)")
    (options.cache_dir / kind).unlink()
    assert computed() == clean


@pytest.mark.parametrize("number", [errno.ENOSPC, errno.EFBIG])
def test_a_full_disk_under_the_records_is_one_warning_line_and_the_same_findings(
        published, capsys, monkeypatch, number: int) -> None:
    """Every record write fails as on a full disk (or past the file size limit): the findings are
    the same, and one line says why the next run will compute everything again."""
    import shutil

    from sglang_contracts.infra import cache as caches

    project, options = published
    clean = run(capsys, project, options.cache_dir)
    shutil.rmtree(options.cache_dir / "runs")  # nothing to replay: the run computes and writes

    def full(path: Path, data: bytes, private: bool = False) -> None:
        raise OSError(number, os.strerror(number), str(path))

    monkeypatch.setattr(caches, "atomic_write_bytes", full)
    monkeypatch.setattr(caches, "_WARNED", set())
    status, out, err = run(capsys, project, options.cache_dir)
    assert (status, out) == clean[:2]
    assert err == (f"sglang-contracts: warning: cannot write the cache folder {options.cache_dir / 'runs'} "
                   f"({os.strerror(number)}); what this run computed is not kept for the next "
                   "(give a writable --cache-dir)\n")


def test_a_download_on_a_full_disk_falls_back_to_a_temporary_folder(published, capsys, monkeypatch) -> None:
    """pip fails writing the wheel into the cache for want of space: the release is downloaded to
    a temporary folder, with one warning line, as for a cache that cannot be written."""
    import subprocess

    from sglang_contracts.sources import index

    project, options = published
    clean = run(capsys, project, options.cache_dir)
    cache = options.cache_dir.parent / "full-cache"
    real_run = subprocess.run

    def pip_on_a_full_disk(command, *args, **kwargs):
        # only pip's download into the cache fails: git, asked what it ignores, runs as it would
        if "--dest" in command and Path(command[command.index("--dest") + 1]).is_relative_to(cache):
            return subprocess.CompletedProcess(command, 1, "", "ERROR: Could not install packages due to an "
                                               "OSError: [Errno 28] No space left on device\n")
        return real_run(command, *args, **kwargs)

    monkeypatch.setattr(index.subprocess, "run", pip_on_a_full_disk)
    status, out, err = run(capsys, project, cache)
    assert (status, out) == clean[:2]
    (line,) = err.splitlines()  # one line, for both releases
    assert line == (f"sglang-contracts: warning: cannot write the cache folder {cache / 'wheels'} (No space left "
                    "on device); releases are downloaded to a temporary folder for this run only "
                    "(give a writable --cache-dir)")


def test_the_pool_s_head_start_says_nothing_whatever_stops_it(monkeypatch, capsys) -> None:
    """Under load the run ended (and took its temporary folder) while the pool was starting: the
    warm-up thread's traceback was a second line on standard error (seen by three helpers)."""
    import threading

    from sglang_contracts.infra import parallel

    class Failing:
        def submit(self, *_):
            raise FileNotFoundError(2, "No such file or directory", "/tmp/pymp-gone/listener-x")

    errors: list[object] = []
    monkeypatch.setattr(threading, "excepthook", lambda arguments: errors.append(arguments.exc_value))
    thread = threading.Thread(target=parallel._warm, args=(Failing(), 2))
    thread.start()
    thread.join()
    assert errors == [] and capsys.readouterr().err == ""
