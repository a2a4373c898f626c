"""Benchmark: what learning upstream's own migrations costs (issue 34, migrations/).

On sglang-omni 0.1.8's bump (0.5.21 -> 0.5.22), `check --select SGC101,SGC201,SGC321` (the rules
that ask upstream's migrations) run in-process (run_check, findings never replayed), each run a
fresh process, the releases' records already cached (a first, untimed run makes them):
  cold       the migrations of the run learned: one pass over 0.5.21's changed files that name any
             of the APIs the findings ask about (the learner's record key made new for the run)
  warm       the same record read back (its key as the cold run's)
  none       no migration learned (every question answered empty): the run without the stage
Each row: wall time and CPU time (the process and its forked copy) of the whole run, and of the
learning pass alone where there is one; `--rounds` warm and none runs alternate (the machine is
shared: only figures measured interleaved compare), the minimum shown. Targets: the cold pass
under 30 s on a 2-core machine, warm under 0.3 s more than none.

Usage: python benchmarks/bench_migrations.py [--cache DIR] [--rounds N] [--project DIR --old X --new Y]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(CHECKOUT / "tests"))
sys.path.insert(0, str(CHECKOUT))
SELECT = ["SGC101", "SGC201", "SGC321"]


def drive(project: Path, old: str, new: str, cache: Path, mode: str, learner: str) -> None:
    """One run in this process (`--drive`): prints its figures as JSON."""
    from sglang_contracts.check.runner import CheckOptions, run_check
    from sglang_contracts.migrations import learn

    learn.LEARNER = learner
    if mode == "none":
        learn.Migrations.answer = lambda self, question: learn.Answer()
    passes: list[dict] = []
    learn_once = learn.Migrations._learn

    def timed(self, questions):
        wall, cpu = time.monotonic(), time.process_time()
        learn_once(self, questions)
        passes.append({"wall": time.monotonic() - wall, "cpu": time.process_time() - cpu,
                       "questions": len(questions), "files": self.files_read})

    learn.Migrations._learn = timed
    wall = time.monotonic()
    result = run_check([project], CheckOptions(old=old, new=new, select=SELECT, cache_dir=cache))
    wall = time.monotonic() - wall
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"wall": wall, "cpu": own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime,
                      "findings": len(result.diagnostics), "passes": passes,
                      "learned": sum("upstream migrated" in d.message or "upstream moved" in d.message
                                     or "upstream rewrote" in d.message for d in result.diagnostics),
                      "budget": sum("not learned: budget" in d.message for d in result.diagnostics)}))


def run(project: Path, old: str, new: str, cache: Path, mode: str, learner: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--drive", mode, "--learner", learner, "--project", str(project),
                          "--old", old, "--new", new, "--cache", str(cache)], check=True, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(CHECKOUT)}).stdout
    return json.loads(out.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", type=Path, help="a cache folder holding the wheels (downloaded otherwise)")
    parser.add_argument("--project", type=Path, help="a project (default: sglang-omni 0.1.8's sdist)")
    parser.add_argument("--old", default="0.5.21")
    parser.add_argument("--new", default="0.5.22")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--drive", choices=["cold", "warm", "none"])
    parser.add_argument("--learner", default="")
    args = parser.parse_args()
    if args.drive:
        return drive(args.project, args.old, args.new, args.cache, args.drive, args.learner)
    from downloads import download_sdist

    with tempfile.TemporaryDirectory(prefix="bench-migrations-") as scratch:
        cache = Path(scratch) / "cache"
        (cache / "wheels").mkdir(parents=True)
        for version in (args.old, args.new):
            for wheel in (args.cache / "wheels").glob(f"sglang-{version}-*.whl") if args.cache else ():
                shutil.copy(wheel, cache / "wheels")
        project = args.project or download_sdist("sglang-omni", "0.1.8", args.cache or cache)
        learner = f"bench-{time.time()}"
        run(project, args.old, args.new, cache, "none", learner)  # the releases' records, untimed
        cold = run(project, args.old, args.new, cache, "cold", learner)
        warm, none = [], []
        for _ in range(args.rounds):
            warm.append(run(project, args.old, args.new, cache, "warm", learner))
            none.append(run(project, args.old, args.new, cache, "none", learner))
    (learned,) = cold["passes"] or [{"wall": 0, "cpu": 0, "questions": 0, "files": 0}]
    print(f"{project.name}, {args.old} -> {args.new}: {cold['findings']} findings of {', '.join(SELECT)}; "
          f"{cold['learned']} say what upstream did, {cold['budget']} not learned: budget")
    print(f"cold   run {cold['wall']:6.2f} s  cpu {cold['cpu']:6.2f} s   learning pass {learned['wall']:6.2f} s "
          f"(cpu {learned['cpu']:.2f} s): {learned['questions']} APIs, {learned['files']} files read")
    for name, rows in (("warm", warm), ("none", none)):
        print(f"{name:6} run {min(r['wall'] for r in rows):6.2f} s  cpu {min(r['cpu'] for r in rows):6.2f} s   "
              f"(min of {len(rows)}; walls {', '.join(format(r['wall'], '.2f') for r in rows)})")
    print(f"warm - none: {min(r['wall'] for r in warm) - min(r['wall'] for r in none):+.2f} s wall, "
          f"{min(r['cpu'] for r in warm) - min(r['cpu'] for r in none):+.2f} s cpu")


if __name__ == "__main__":
    main()
