"""Command-line behaviour that is not about one rule."""

from __future__ import annotations

import subprocess
import sys

from conftest import checkout_env


def test_a_reader_that_leaves_early_is_not_an_error() -> None:
    """`sglang-contracts rules | head -1`, where head is gone before the rules are written."""
    process = subprocess.Popen([sys.executable, "-m", "sglang_contracts", "rules"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=checkout_env())
    process.stdout.close()  # the reader leaves before the first line arrives
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) == 0, stderr
    assert stderr == ""
