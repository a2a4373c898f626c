"""Benchmark: sglang-contracts against the sglang 0.5.22 -> 0.5.23 bump, on two projects.

sglang-omni 0.1.9 (a downstream project), each run a fresh process:
  cold       empty cache: downloads both wheels, unpacks, extracts, parses the project
  cold-disk  wheels already downloaded, nothing else cached: unpack, extract, parse
  warm       everything cached
  edited     everything cached but one project file, changed since (a comment added)
Targets (2-core machine): cold under 15 s, warm under 1.5 s, under 600 MB.

sglang itself as the project (the 0.5.22 wheel's package unpacked, ~4,300 files):
  cold       only the two wheels cached
  warm       everything cached
Targets: no SGC001 (an internal error), cold under a minute, under 600 MB.

Peak memory is that of the largest process of the run (the checker or one of its workers).

Usage: python benchmarks/bench_check.py [--skip-download-run] [--case omni|sglang|both]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from downloads import download_sdist  # noqa: E402

from sglang_contracts.infra.cache import cache_root  # noqa: E402

OLD, NEW = "0.5.22", "0.5.23"
EDITED = "sglang_omni/scheduling/omni_scheduler.py"  # the largest file that borrows upstream code


def run_once(project: Path, cache: Path) -> tuple[float, float, list[str]]:
    """(seconds, peak MB of the largest process, the diagnostics' lines)."""
    env = {**os.environ, "SGLANG_CONTRACTS_CACHE": str(cache)}
    command = [sys.executable, "-m", "sglang_contracts", "check", "--old", OLD, "--new", NEW, "--exit-zero", "-q"]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=project, env=env, stdout=out, stderr=err)
        # wait4: this run's own peak (the largest of the process and the workers it waited for),
        # not the largest of every run so far as RUSAGE_CHILDREN would say.
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            sys.exit(f"check failed ({process.returncode}): {err.read().decode(errors='replace').strip()}")
        lines = out.read().decode(errors="replace").splitlines()
    return elapsed, usage.ru_maxrss / 1024, lines


def release_wheels(download: bool, scratch: str) -> tuple[list[tuple[str, float, float, list[str]]], Path]:
    """Both releases' wheels in a folder, and the download run when it is measured."""
    from sglang_contracts.sources import open_release

    rows = []
    if download:
        project = Path(scratch, "omni-project")
        if not project.exists():
            shutil.copytree(download_sdist("sglang-omni", "0.1.9", cache_root()), project)
        cold = Path(scratch, "cold")
        rows.append(("cold", *run_once(project, cold)))
        return rows, cold / "wheels"
    for version in (OLD, NEW):
        open_release(version, sglang_repo=None, cache=cache_root())
    return rows, cache_root() / "wheels"


def cache_with_wheels(wheels: Path, cache: Path) -> Path:
    """A cache folder that holds nothing but the two releases' wheels."""
    (cache / "wheels").mkdir(parents=True)
    for version in (OLD, NEW):
        (wheel,) = sorted(wheels.glob(f"sglang-{version}-*.whl"))[:1]
        shutil.copy2(wheel, cache / "wheels" / wheel.name)
    return cache


def omni_case(scratch: str, rows: list, wheels: Path) -> list:
    project = Path(scratch, "omni-project")
    if not project.exists():
        shutil.copytree(download_sdist("sglang-omni", "0.1.9", cache_root()), project)
    disk = cache_with_wheels(wheels, Path(scratch, "cold-disk"))
    rows.append(("cold-disk", *run_once(project, disk)))
    rows.append(("warm", *run_once(project, disk)))
    rows.append(("warm", *run_once(project, disk)))
    edited = project / EDITED
    edited.write_text(edited.read_text() + "\n# edited by the benchmark\n")
    rows.append(("edited", *run_once(project, disk)))
    return rows


def sglang_case(scratch: str, wheels: Path) -> list:
    project = Path(scratch, "sglang-project")
    (wheel,) = sorted(wheels.glob(f"sglang-{OLD}-*.whl"))[:1]
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(project, [name for name in archive.namelist() if name.startswith("sglang/")])
    (project / "pyproject.toml").write_text("[project]\nname = 'sgproj'\n")
    cache = cache_with_wheels(wheels, Path(scratch, "sglang-cache"))
    return [("cold", *run_once(project, cache)), ("warm", *run_once(project, cache))]


def show(title: str, rows: list) -> None:
    print(title)
    print(f"{'run':<10} {'wall s':>8} {'peak MB':>8} {'diagnostics':>12} {'SGC001':>7}")
    for name, seconds, peak, lines in rows:
        internal = sum(1 for line in lines if ": SGC001 " in line)
        print(f"{name:<10} {seconds:>8.2f} {peak:>8.0f} {len(lines):>12} {internal:>7}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-download-run", action="store_true", help="do not measure the run that downloads wheels")
    parser.add_argument("--case", choices=["omni", "sglang", "both"], default="both")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sglang-contracts-bench-") as scratch:
        download = not args.skip_download_run and args.case != "sglang"
        rows, wheels = release_wheels(download, scratch)
        cores = f"{os.cpu_count()} cores"
        if args.case in ("omni", "both"):
            show(f"sglang-omni 0.1.9, sglang {OLD} -> {NEW}, {cores}", omni_case(scratch, rows, wheels))
        if args.case in ("sglang", "both"):
            show(f"sglang {OLD} itself as the project, sglang {OLD} -> {NEW}, {cores}", sglang_case(scratch, wheels))


if __name__ == "__main__":
    main()
