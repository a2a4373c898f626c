"""Benchmark: sglang-omni 0.1.9 checked against the sglang 0.5.22 -> 0.5.23 bump.

Prints wall time and peak memory for three runs, each a fresh process:
  cold       empty cache: downloads both wheels, unpacks, extracts, parses the project
  cold-disk  wheels already downloaded, nothing else cached: unpack, extract, parse
  warm       everything cached
  edited     everything cached but one project file, changed since (a comment added)
Targets (2-core machine): cold under 15 s, warm under 1.5 s, under 600 MB.

Usage: python benchmarks/bench_check.py [--skip-download-run]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from downloads import download_sdist  # noqa: E402

from sglang_contracts.cache import cache_root  # noqa: E402

OLD, NEW = "0.5.22", "0.5.23"
EDITED = "sglang_omni/scheduling/omni_scheduler.py"  # the largest file that borrows upstream code


def run_once(project: Path, cache: Path) -> tuple[float, float, int]:
    """(seconds, peak MB of the largest process, number of diagnostics)."""
    env = {**os.environ, "SGLANG_CONTRACTS_CACHE": str(cache)}
    command = [sys.executable, "-m", "sglang_contracts", "check", "--old", OLD, "--new", NEW, "--exit-zero"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    result = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if result.returncode != 0:
        sys.exit(f"check failed ({result.returncode}): {result.stderr.strip()}")
    return elapsed, max(peak, before) / 1024, len(result.stdout.splitlines())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-download-run", action="store_true", help="do not measure the run that downloads wheels")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sglang-contracts-bench-") as scratch:
        project = Path(scratch, "project")
        shutil.copytree(download_sdist("sglang-omni", "0.1.9", cache_root()), project)
        rows = []
        if not args.skip_download_run:
            cold = Path(scratch, "cold")
            rows.append(("cold", *run_once(project, cold)))
            wheels = cold / "wheels"
        else:
            from sglang_contracts.sources import open_release

            for version in (OLD, NEW):
                open_release(version, sglang_repo=None, cache=cache_root())
            wheels = cache_root() / "wheels"
        disk = Path(scratch, "cold-disk")
        shutil.copytree(wheels, disk / "wheels")
        rows.append(("cold-disk", *run_once(project, disk)))
        rows.append(("warm", *run_once(project, disk)))
        rows.append(("warm", *run_once(project, disk)))
        edited = project / EDITED
        edited.write_text(edited.read_text() + "\n# edited by the benchmark\n")
        rows.append(("edited", *run_once(project, disk)))
    print(f"sglang-omni 0.1.9, sglang {OLD} -> {NEW}, {os.cpu_count()} cores")
    print(f"{'run':<10} {'wall s':>8} {'peak MB':>8} {'diagnostics':>12}")
    for name, seconds, peak, count in rows:
        print(f"{name:<10} {seconds:>8.2f} {peak:>8.0f} {count:>12}")


if __name__ == "__main__":
    main()
