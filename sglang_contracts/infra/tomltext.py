"""TOML text parsed with one more bound than tomllib's: nesting deep enough to exhaust Python's
recursion (tomllib reads arrays and inline tables recursively; `x = [[[...]]]` 500 deep does it)
is invalid TOML like any other, never a RecursionError."""

from __future__ import annotations

import tomllib
from typing import Any


def parse_toml(text: str) -> dict[str, Any]:
    """`tomllib.loads`, raising `tomllib.TOMLDecodeError` for every text it cannot read."""
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise tomllib.TOMLDecodeError("nested too deeply") from None


def table(data: Any, *keys: str) -> dict[str, Any]:
    """The table at `keys` in a parsed document, or {} where a level is missing or is not a table
    (`optional-dependencies = "x"` in a project's pyproject is its text, not ours to trust)."""
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}
