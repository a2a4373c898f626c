"""Imported by the pool's fork server alone (parallel.PRELOAD), before it forks any worker: the
server and the workers it forks print no traceback of their own.

A worker forked just as the run ends (Ctrl-C or a `timeout` in the first second of a pool) reads
its start-up data after the run has let go of the pool's semaphores, and fails: the server printed
that failure's traceback on the run's standard error. A worker that cannot start is the run's to
tell of, in one line (a broken pool), and an ending run has nothing more to say;
SGLANG_CONTRACTS_DEBUG=1 keeps the tracebacks.
"""

from __future__ import annotations

import os
import sys


def _quiet(*exception: object) -> None:
    """sys.excepthook in the server and its workers: nothing said."""


if not os.environ.get("SGLANG_CONTRACTS_DEBUG"):
    sys.excepthook = _quiet
