"""Shared fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sglang_contracts.cache import cache_root

CHECKOUT = Path(__file__).resolve().parent.parent


def checkout_env(**extra: str) -> dict[str, str]:
    """The environment for a subprocess that must run this checkout's package, whatever copy
    of it is installed and whatever its working directory."""
    path = os.pathsep.join(filter(None, [str(CHECKOUT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, **extra}


@pytest.fixture(scope="session")
def real_cache() -> Path:
    """The user's sglang-contracts cache: real downloads land here once and are reused offline."""
    return cache_root()
