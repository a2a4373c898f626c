"""The on-disk cache: downloaded releases, extracted upstream modules, project facts.

Every entry is written atomically and read defensively: an entry that does not decode,
or was written by another schema version, is treated as absent and rebuilt.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

# Bump when the shape of any cached record changes: old entries are then ignored.
SCHEMA_VERSION = 1


def code_fingerprint(*modules) -> str:
    """A digest of the extractor code itself, so changing an extractor invalidates its entries."""
    import hashlib

    digest = hashlib.sha256(str(SCHEMA_VERSION).encode())
    for module in modules:
        digest.update(Path(module.__file__).read_bytes())
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    configured = os.environ.get("SGLANG_CONTRACTS_CACHE")
    if configured:
        return Path(configured).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("sglang-contracts"))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class JsonCache:
    """A folder of JSON records addressed by key; corrupt or stale records read as missing."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder

    def _path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        if self.folder is None:
            return None
        try:
            record = json.loads(self._path(key).read_bytes())
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict) or record.get("schema") != SCHEMA_VERSION:
            return None
        return record.get("data")

    def put(self, key: str, data: Any) -> None:
        if self.folder is None:
            return
        payload = json.dumps({"schema": SCHEMA_VERSION, "data": data}, separators=(",", ":"))
        try:
            atomic_write_bytes(self._path(key), payload.encode())
        except OSError:
            pass  # a read-only or full cache slows the next run down; it must not fail this one
