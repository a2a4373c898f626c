"""Package metadata by name and version: from the tool's cache, else from the package index.

A published version's metadata never changes, so what was read is kept per package version
(and so is a version the index has no wheel of), and a closure once computed needs no network.
The index is asked only on a miss; the first time it cannot be reached, it is not asked again
in this run (one note says so), and what is not cached is left unknown: the closure then stops
at the packages whose metadata is known.
"""

from __future__ import annotations

import hashlib
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable

from sglang_contracts.closure.index import IndexSettings, IndexUnreachable, PackageIndex, configured_index
from sglang_contracts.infra.cache import RecordCache
from sglang_contracts.infra.shapes import Table
from sglang_contracts.requirements import normalized
from sglang_contracts.upstream.pins import ReleasePins, metadata_pins

NO_INDEX = "none"  # the `package-index` setting that reads nothing but the cache
FETCHERS = 8  # metadata requests in flight at once: each is a few round trips to the index
METADATA_RECORD = Table(metadata=(str, None))  # None: the index has no such release


def _key(name: str, version: str) -> str:
    return hashlib.sha256(f"package-metadata\0{normalized(name)}\0{version}".encode()).hexdigest()


@dataclass
class MetadataSource:
    """`pins(name, version)`: what the distribution requires at that version, or None when it
    is not known (not on the index, or not cached and the index unreachable)."""

    cache: RecordCache
    index_setting: str | None = None  # the `package-index` setting: a URL, a folder, "none"; None: pip's
    make_index: Callable[[str | None], IndexSettings] = configured_index
    unreachable: str | None = None  # why the index could not be read, the first time it could not
    fetched: int = 0  # read from the index in this run
    missing: list[str] = field(default_factory=list)  # `name==version` the index has no wheel of
    uncached: list[str] = field(default_factory=list)  # `name==version` not cached, the index not read (offline)
    _index: PackageIndex | None = None
    _known: dict[tuple[str, str], ReleasePins | None] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def offline(self) -> bool:
        return self.index_setting == NO_INDEX or self.unreachable is not None

    def pins(self, name: str, version: str) -> ReleasePins | None:
        self.prefetch([(name, version)])
        return self._known.get((normalized(name), version))

    def prefetch(self, wanted: Iterable[tuple[str, str]]) -> None:
        """Read the metadata of every (name, version), the misses from the index at once."""
        misses = self._read_cached(wanted)
        if not misses or self.offline:
            if self.offline:
                self.uncached += [f"{name}=={version}" for name, version in misses if f"{name}=={version}" not in self.uncached]
            return
        index = self._open_index()
        if index is None:
            return
        self._fetch_all(index, misses)

    def _read_cached(self, wanted: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """Take in the cached metadata of each (name, version) not known yet; return the others."""
        misses = []
        for name, version in dict.fromkeys((normalized(n), v) for n, v in wanted):
            if (name, version) in self._known:
                continue
            record = self.cache.get(_key(name, version), METADATA_RECORD)
            if record is not None:
                self._known[name, version] = self._decoded(name, record["metadata"])
            else:
                misses.append((name, version))
        return misses

    def _fetch_all(self, index: PackageIndex, misses: list[tuple[str, str]]) -> None:
        """Read the metadata of each (name, version) from the index, a few at once, and cache it."""
        with ThreadPoolExecutor(max_workers=min(FETCHERS, len(misses))) as pool:
            for (name, version), text in zip(misses, pool.map(lambda pair: self._fetch(index, *pair), misses)):
                if text is False:
                    continue  # unknown: not cached, asked again next run
                self.cache.put(_key(name, version), {"metadata": text})
                self._known[name, version] = self._decoded(name, text)
                if text is None:
                    self.missing.append(f"{name}=={version}")

    def _open_index(self) -> PackageIndex | None:
        with self._lock:
            if self._index is None and self.unreachable is None:
                self._index = PackageIndex(self.make_index(self.index_setting))
        return self._index

    def _fetch(self, index: PackageIndex, name: str, version: str) -> str | None | bool:
        """The metadata text, None when the index has no wheel of it, False when the index
        could not be read (then no other request is made)."""
        if self.unreachable is not None:
            return False
        try:
            text = index.metadata_text(name, version)
        except IndexUnreachable as error:
            with self._lock:
                self.unreachable = self.unreachable or str(error)
            return False
        with self._lock:
            self.fetched += 1
        return text

    @staticmethod
    def _decoded(name: str, text: str | None) -> ReleasePins | None:
        return metadata_pins(text, name) if text is not None else None
