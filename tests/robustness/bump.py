"""A small SGLang-shaped bump the robustness tests break things around: two releases, a
project with one finding, and the command line run on it in a fresh process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.helpers import checkout_env

OLD = {"sglang/__init__.py": "", "sglang/version.py": '__version__ = "0.1.0"\n',
       "sglang/srt/__init__.py": "", "sglang/srt/utils.py": "def helper(): ...\ndef kept(): ...\n"}
NEW = {**OLD, "sglang/version.py": '__version__ = "0.2.0"\n', "sglang/srt/utils.py": "def kept(): ...\n"}
BROKEN_IMPORT = "from sglang.srt.utils import helper\n"  # SGC101/SGC102 on the bump

OK_FINDING = "app/ok.py:1:30: SGC102"


def codes(lines: list[str]) -> list[str]:
    return [line.split(": ", 1)[0] + ": " + line.split(": ", 1)[1].split(" ", 1)[0] for line in lines]


def cli(project: Path, releases: tuple[Path, Path], *extra: str, timeout: float = 120) -> tuple[int, str, str]:
    """The command line in a fresh process (what a hang or a crash would hit). After `timeout`
    seconds it is stopped with the processes it started, whose pipes would keep a wait for its
    output waiting as long as they run, and subprocess.TimeoutExpired is raised."""
    old, new = releases
    env = checkout_env()
    env.pop("SGLANG_CONTRACTS_DEBUG", None)
    with subprocess.Popen([sys.executable, "-m", "sglang_contracts", "check", str(project), "--old", str(old),
                           "--new", str(new), "--no-cache", *extra],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=project,
                          start_new_session=True) as process:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
    return process.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
