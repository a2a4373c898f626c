"""Benchmark: the dependency closure of the sglang 0.5.22 -> 0.5.23 bump (closure/), from the
package index pip is configured for.

  cold       nothing cached: every package version's metadata read from the index
             (PEP 658 files, or ranges of the wheels)
  per-package  each package version's metadata cached, the release pair's record not:
             the walk again, offline
  pair       the release pair's record cached: what a warm run that is not a replay pays

Each on Linux x86_64 alone and with aarch64 (a project whose Dockerfile targets ARM), with the
closures' sizes and the number of moves. A replayed run (no input changed) reads none of it.

Usage: python benchmarks/bench_closure.py [--scratch DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from sglang_contracts.closure.delta import closure_delta  # noqa: E402
from sglang_contracts.closure.source import MetadataSource  # noqa: E402
from sglang_contracts.closure.walk import platform_name  # noqa: E402
from sglang_contracts.contracts.dependencies import walked_closures  # noqa: E402
from sglang_contracts.infra.cache import RecordCache  # noqa: E402
from sglang_contracts.requirements import environments  # noqa: E402
from sglang_contracts.sources import open_release  # noqa: E402
from sglang_contracts.upstream.pins import release_pins  # noqa: E402

OLD, NEW = "0.5.22", "0.5.23"


def measure(cache: RecordCache, pins, built: list[dict[str, str]], key: str) -> tuple[float, int, object]:
    source = MetadataSource(cache)
    started = time.perf_counter()
    old, new = walked_closures(cache, key, pins[OLD], pins[NEW], frozenset(), built, source)
    delta = closure_delta(old, new, OLD, NEW)
    return time.perf_counter() - started, source.fetched, delta


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scratch", type=Path, help="where the wheels and the closure's records go (default: a temporary folder)")
    args = parser.parse_args()
    scratch = args.scratch or Path(tempfile.mkdtemp(prefix="bench-closure-"))
    pins = {version: release_pins(open_release(version, sglang_repo=None, cache=scratch).tree) for version in (OLD, NEW)}
    print(f"{'platforms':<22} {'case':<12} {'seconds':>8} {'fetched':>8} {'packages':>10} {'moves':>6}")
    for built in (environments()[:1], environments()[:2]):
        platforms = ",".join(platform_name(e) for e in built)
        folder = scratch / "closure"
        shutil.rmtree(folder, ignore_errors=True)
        cache = RecordCache(folder)
        key = f"bench-{len(built)}"
        for case in ("cold", "per-package", "pair"):
            if case == "per-package":
                cache.put(key, None)  # the pair record read as missing
            seconds, fetched, delta = measure(cache, pins, built, key)
            print(f"{platforms:<22} {case:<12} {seconds:>8.2f} {fetched:>8} {'%d/%d' % delta.sizes:>10} {len(delta.moves):>6}")


if __name__ == "__main__":
    main()
