"""Benchmark: what learning upstream's own migrations costs (issue 34, migrations/).

On sglang-omni 0.1.8's bump (0.5.21 -> 0.5.22), each run a fresh process, the wheels downloaded:
  check-cold   `check --select SGC101,SGC201,SGC321`, nothing cached but the wheels: the checks'
               own work plus learning every migration their findings ask about
  check-warm   the same, the records of the first run kept, the findings not replayed (a
               re-run of the learning from the cache: `--no-replay` is not an option, so the
               project's pyproject is touched between the runs)
and, in this process, learning alone for the three headline APIs (QKVParallelLinear's and
RowParallelLinear's calls, ModelRunner.tp_size reads): learned, then read back from the cache
by a second learner of the same release pair.

Usage: python benchmarks/bench_migrations.py [--cache DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(CHECKOUT / "tests"))
sys.path.insert(0, str(CHECKOUT))
from downloads import download_sdist  # noqa: E402

QUESTIONS = [("calls", "sglang.srt.layers.linear.QKVParallelLinear.__init__"),
             ("calls", "sglang.srt.layers.linear.RowParallelLinear.__init__"),
             ("reads", "sglang.srt.model_executor.model_runner.ModelRunner")]


def timed_check(project: Path, cache: Path) -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "sglang_contracts", "check", "--old", "0.5.21", "--new", "0.5.22",
                    "--select", "SGC101,SGC201,SGC321", "--exit-zero"], cwd=project, check=True,
                   stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(CHECKOUT),
                                                   "SGLANG_CONTRACTS_CACHE": str(cache)})
    return time.monotonic() - started


def learning(cache: Path) -> tuple[float, float]:
    from sglang_contracts.infra.cache import JsonCache
    from sglang_contracts.migrations.learn import Migrations
    from sglang_contracts.sources import open_release
    from sglang_contracts.upstream.model import UpstreamModel

    def ask() -> float:
        models = UpstreamModel.pair(open_release("0.5.21", sglang_repo=None, cache=cache),
                                    open_release("0.5.22", sglang_repo=None, cache=cache), JsonCache(cache / "bench-records"))
        migrations = Migrations(*models)
        started = time.monotonic()
        for kind, owner in QUESTIONS:
            migrations.calls(owner, owner) if kind == "calls" else migrations.reads(owner, "tp_size")
        return time.monotonic() - started

    return ask(), ask()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", type=Path, help="a cache folder holding the wheels (downloaded otherwise)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-migrations-") as scratch:
        cache = Path(scratch) / "cache"
        (cache / "wheels").mkdir(parents=True)
        for wheel in (args.cache / "wheels").glob("sglang-0.5.2[12]-*.whl") if args.cache else ():
            shutil.copy(wheel, cache / "wheels")
        project = Path(scratch) / "omni"
        shutil.copytree(download_sdist("sglang-omni", "0.1.8", cache), project)
        cold = timed_check(project, cache)
        (project / "pyproject.toml").touch()
        warm = timed_check(project, cache)
        learned, reread = learning(cache)
    print(f"check-cold  {cold:6.1f} s   (SGC101, SGC201, SGC321 with every migration learned)")
    print(f"check-warm  {warm:6.1f} s   (the learned migrations read from the cache)")
    print(f"learning    {learned:6.1f} s   (QKVParallelLinear, RowParallelLinear calls; ModelRunner.tp_size reads)")
    print(f"re-read     {reread:6.3f} s   (the same, from the cache of the release pair)")


if __name__ == "__main__":
    main()
