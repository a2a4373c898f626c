"""Package metadata by name and version: from the tool's cache, else from the package index.

A published version's metadata never changes, so what was read is kept per package version and
per index (index_namespace), and a closure once computed needs no network. What one index said
is never taken for another's: an index may be a pull request's (its configuration names a URL,
or a folder of the project), and what it said would otherwise be replayed to every later run on
the same cache (campaign 12, R02). A project's own folder is not cached at all: the same path
holds another pull request's text next time, and reading it costs what reading the cache does.
A version the index has no wheel of is believed for ABSENCE_LIFE only: a page fixed later, or a
read that failed on the way, is asked again. The index is asked only on a miss; the first time
it cannot be reached, it is not asked again in this run (one note says so), and what is not
cached is left unknown: the closure then stops at the packages whose metadata is known.
"""

from __future__ import annotations

import hashlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable

from sglang_contracts.closure.index import (
    IndexSettings, IndexUnreachable, PackageIndex, as_url, configured_index, shown_url,
)
from sglang_contracts.infra.cache import RecordCache
from sglang_contracts.infra.executors import stopped_at_end
from sglang_contracts.infra.shapes import Table
from sglang_contracts.requirements import normalized
from sglang_contracts.upstream.pins import ReleasePins, metadata_pins

NO_INDEX = "none"  # the `package-index` setting that reads nothing but the cache
FETCHERS = 8  # metadata requests in flight at once: each is a few round trips to the index
# metadata None: the index has no such release, believed until `until` (seconds since the epoch)
METADATA_RECORD = Table(metadata=(str, None), until=(float, None))
ABSENCE_LIFE = 24 * 3600.0
PIP_INDEXES = "pip"  # the namespace of pip's configured indexes: the user's own, resolved only on a miss
# How long an index found unreachable is believed so by this process: a first run's early walk of
# the closures (check/runner.py) meets it while the project is indexed, and the run's own
# computation, a moment later, does not wait for it a second time; a resident process's later
# run asks again.
UNREACHABLE_MEMORY = 120.0
_UNREACHABLE: dict[str | None, tuple[float, str]] = {}  # `package-index` setting -> (when, why)
_UNREACHABLE_LOCK = threading.Lock()


def index_namespace(setting: str | None) -> str:
    """Whose records a `package-index` setting reads and writes: pip's configured indexes for no
    setting (and for "none", the cache only); else the index's URL, without the user and
    password a URL may carry (the same index whatever the token)."""
    if setting is None or setting == NO_INDEX:
        return PIP_INDEXES
    return shown_url(as_url(setting)).rstrip("/")


def _key(namespace: str, name: str, version: str) -> str:
    return hashlib.sha256(f"package-metadata\0{namespace}\0{normalized(name)}\0{version}".encode()).hexdigest()


def absence_expired(until: float | None) -> bool:
    """Whether what a record holds, believed until `until` (None: for good), is past its life."""
    return until is not None and until < time.time()


@dataclass
class MetadataSource:
    """`pins(name, version)`: what the distribution requires at that version, or None when it
    is not known (not on the index, or not cached and the index unreachable)."""

    cache: RecordCache
    index_setting: str | None = None  # the `package-index` setting: a URL, a folder, "none"; None: pip's
    # With "none": the index whose records are read (index_namespace; None: pip's)
    cached_index: str | None = None
    # False for a folder of the project (a pull request's text): nothing it gives is kept or read
    # back, nor is anything another index gave taken for it
    shares: bool = True
    make_index: Callable[[str | None], IndexSettings] = configured_index
    unreachable: str | None = None  # why the index could not be read, the first time it could not
    fetched: int = 0  # read from the index in this run
    missing: list[str] = field(default_factory=list)  # `name==version` the index has no wheel of
    # The first time an absence met in this run stops being believed: what was computed from it
    # holds until then (None: no absence met)
    absent_until: float | None = None
    uncached: list[str] = field(default_factory=list)  # `name==version` not cached, the index not read (offline)
    _index: PackageIndex | None = None
    _known: dict[tuple[str, str], ReleasePins | None] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def namespace(self) -> str:
        """The index whose records the cache holds for this source (index_namespace)."""
        return index_namespace(self.cached_index if self.index_setting == NO_INDEX else self.index_setting)

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
        namespace = self.namespace
        for name, version in dict.fromkeys((normalized(n), v) for n, v in wanted):
            if (name, version) in self._known:
                continue
            record = self.cache.get(_key(namespace, name, version), METADATA_RECORD) if self.shares else None
            # an absence is believed for its life only (a record of one without it is a forged one)
            absence = record is not None and record["metadata"] is None
            if record is not None and not (absence and absence_expired(record["until"] or 0.0)):
                if absence:
                    self._absent_until(record["until"])
                self._known[name, version] = self._decoded(name, record["metadata"])
            else:
                misses.append((name, version))
        return misses

    def _fetch_all(self, index: PackageIndex, misses: list[tuple[str, str]]) -> None:
        """Read the metadata of each (name, version) from the index, a few at once, and cache it."""
        with stopped_at_end(ThreadPoolExecutor(max_workers=min(FETCHERS, len(misses)))) as pool:
            for (name, version), text in zip(misses, pool.map(lambda pair: self._fetch(index, *pair), misses)):
                if text is False:
                    continue  # unknown: not cached, asked again next run
                until = time.time() + ABSENCE_LIFE if text is None else None
                if self.shares:
                    self.cache.put(_key(self.namespace, name, version), {"metadata": text, "until": until})
                self._known[name, version] = self._decoded(name, text)
                if until is not None:
                    self.missing.append(f"{name}=={version}")
                    self._absent_until(until)

    def _absent_until(self, until: float) -> None:
        self.absent_until = until if self.absent_until is None else min(self.absent_until, until)

    def _open_index(self) -> PackageIndex | None:
        with self._lock:
            if self._index is None and self.unreachable is None:
                self.unreachable = _recently_unreachable(self.index_setting)
                if self.unreachable is None:
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
            with _UNREACHABLE_LOCK:
                _UNREACHABLE[self.index_setting] = (time.monotonic(), str(error))
            return False
        with self._lock:
            self.fetched += 1
        return text

    @staticmethod
    def _decoded(name: str, text: str | None) -> ReleasePins | None:
        return metadata_pins(text, name) if text is not None else None


def _recently_unreachable(setting: str | None) -> str | None:
    """Why the index of `setting` could not be read, when this process found so less than
    UNREACHABLE_MEMORY seconds ago."""
    with _UNREACHABLE_LOCK:
        found = _UNREACHABLE.get(setting)
    return found[1] if found is not None and time.monotonic() - found[0] < UNREACHABLE_MEMORY else None
