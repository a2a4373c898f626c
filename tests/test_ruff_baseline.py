"""The complexity and line-length gate (pyproject.toml's [tool.ruff]: C901 above 10, lines
over 120 characters): no file of the package has more findings than tests/ruff-baseline.json
allows, and none has fewer (lower the baseline with scripts/ruff_baseline.py), so that the
count only goes down. CI runs the test command, so this is how the gate runs in CI."""

from __future__ import annotations

import json

from tests.helpers import load_script


def _baseline_script():
    return load_script("ruff_baseline")


def test_no_file_is_more_complex_or_has_longer_lines_than_its_baseline() -> None:
    script = _baseline_script()
    now, baseline = script.counts(), json.loads(script.TARGET.read_text())
    assert script.over_baseline(now, baseline) == [], "split the function or the line, do not raise the baseline"
    assert now == baseline, f"the code is below its baseline: run `{script.COMMAND}` and commit the result"


def test_the_gate_counts_what_it_says() -> None:
    """over_baseline names a file above its count, and a file absent from the baseline counts 0."""
    script = _baseline_script()
    assert script.over_baseline({"a.py": {"C901": 2}, "b.py": {"E501": 1}}, {"a.py": {"C901": 2}}) == [
        "b.py: 1 E501 (baseline 0)"]
    assert script.over_baseline({"a.py": {"C901": 3}}, {"a.py": {"C901": 2}}) == ["a.py: 3 C901 (baseline 2)"]
