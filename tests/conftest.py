"""Shared fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from sglang_contracts.cache import cache_root


@pytest.fixture(scope="session")
def real_cache() -> Path:
    """The user's sglang-contracts cache: real downloads land here once and are reused offline."""
    return cache_root()
