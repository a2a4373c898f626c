"""The complexity and line-length gate's baseline: per file of the package, how many functions
ruff finds too complex (C901, McCabe above 10) and how many lines too long (E501, over 120
characters), as pyproject.toml's [tool.ruff] sets them.

    python scripts/ruff_baseline.py           # write tests/ruff-baseline.json from the code as it is
    python scripts/ruff_baseline.py --check   # exit 1 when a file has more than its baseline

tests/test_ruff_baseline.py fails when a file has more than the baseline allows (a new complex
function, a new long line), and when it has fewer: the baseline is then lowered with this
script, so that it only goes down.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
TARGET = CHECKOUT / "tests" / "ruff-baseline.json"
COMMAND = "python scripts/ruff_baseline.py"
RULES = ("C901", "E501")


def counts() -> dict[str, dict[str, int]]:
    """file (relative to the checkout) -> rule -> findings, for the files with any."""
    run = subprocess.run([sys.executable, "-m", "ruff", "check", "--select", ",".join(RULES), "--output-format", "json",
                          "--exit-zero", "--no-cache", "sglang_contracts"],
                         cwd=CHECKOUT, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"ruff failed: {run.stderr.strip() or run.stdout.strip()}")
    found = Counter((Path(item["filename"]).resolve().relative_to(CHECKOUT).as_posix(), item["code"])
                    for item in json.loads(run.stdout))
    table: dict[str, dict[str, int]] = {}
    for (path, code), number in sorted(found.items()):
        table.setdefault(path, {})[code] = number
    return table


def over_baseline(now: dict[str, dict[str, int]], baseline: dict[str, dict[str, int]]) -> list[str]:
    return [f"{path}: {number} {code} (baseline {baseline.get(path, {}).get(code, 0)})"
            for path, by_code in now.items() for code, number in by_code.items()
            if number > baseline.get(path, {}).get(code, 0)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a file has more than its baseline")
    args = parser.parse_args()
    now = counts()
    if args.check:
        over = over_baseline(now, json.loads(TARGET.read_text()))
        print("\n".join(over) or "within the baseline")
        return 1 if over else 0
    TARGET.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
    print(f"{TARGET.relative_to(CHECKOUT)}: {sum(sum(c.values()) for c in now.values())} findings in {len(now)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
