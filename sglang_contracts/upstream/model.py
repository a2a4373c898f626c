"""What one SGLang release defines, loaded on demand.

Only the modules that the project's contracts reach are parsed, together with the chains
of re-exports behind them (`from .x import *`, `from .x import y as y`, `__all__`).
Each module's extraction is cached by its content.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, Iterable

from sglang_contracts.cache import JsonCache, code_fingerprint
from sglang_contracts.sources.base import PACKAGE, Release
from sglang_contracts.upstream import extract
from sglang_contracts.upstream.extract import extract_module

EXTRACTOR = code_fingerprint(extract)

ROOT = PACKAGE  # the upstream top-level package


def is_upstream(dotted: str) -> bool:
    return dotted == ROOT or dotted.startswith(ROOT + ".")


@dataclass(frozen=True)
class Symbol:
    """Where a name resolves in one release."""

    status: str  # "found", "missing" (provably absent) or "unknown" (cannot be known statically)
    kind: str | None = None  # module, class, function, attribute, external
    origin: str | None = None  # qualified path of the definition, or the external target
    line: int | None = None

    @property
    def found(self) -> bool:
        return self.status == "found"

    @property
    def missing(self) -> bool:
        return self.status == "missing"


MISSING = Symbol("missing")
UNKNOWN = Symbol("unknown")


@dataclass
class ModuleRecord:
    name: str
    kind: str  # module, package, namespace, extension
    relpath: str | None
    bindings: dict[str, dict[str, Any]] = field(default_factory=dict)
    wildcards: list[str] = field(default_factory=list)
    exports: list[str] | None = None
    opaque: str | None = None  # why its contents cannot be known (extension module, unparsable file)


@dataclass
class LoadStats:
    parsed: int = 0
    from_cache: int = 0
    without_source: int = 0  # namespace packages and extension modules

    @property
    def modules(self) -> int:
        return self.parsed + self.from_cache + self.without_source


class UpstreamModel:
    def __init__(self, release: Release, cache: JsonCache) -> None:
        self.release = release
        self.tree = release.tree
        self.cache = cache
        self.stats = LoadStats()
        self._modules: dict[str, ModuleRecord | None] = {}
        self._listing = lru_cache(maxsize=None)(self.tree.list_dir)

    # -- modules -------------------------------------------------------------------------

    def _locate(self, name: str) -> tuple[str, str | None]:
        """(kind, relpath) of a module, or ("", None) when the release has no such module."""
        parts = name.split(".")
        folder = "/".join(parts[:-1])
        entries = self._listing(folder) if folder else self._listing("")
        if entries is None:
            return "", None
        leaf = parts[-1]
        path = f"{folder}/{leaf}" if folder else leaf
        if leaf in entries:
            inner = self._listing(path)
            if inner is not None:
                if "__init__.py" in inner:
                    return "package", f"{path}/__init__.py"
                if any(entry.endswith((".py", ".pyi", ".so")) or self._listing(f"{path}/{entry}") is not None for entry in inner):
                    return "namespace", None
        if f"{leaf}.py" in entries:
            return "module", f"{path}.py"
        if any(entry.startswith(leaf + ".") and entry.endswith((".so", ".pyd")) for entry in entries):
            return "extension", None
        return "", None

    def module(self, name: str) -> ModuleRecord | None:
        if name in self._modules:
            return self._modules[name]
        record = self._load(name) if is_upstream(name) else None
        self._modules[name] = record
        return record

    def _source(self, name: str) -> tuple[str, str | None, bytes, str]:
        """(kind, relpath, bytes, cache key) of a module; kind "" when there is no such module."""
        kind, relpath = self._locate(name)
        if not kind or relpath is None:
            return kind, None, b"", ""
        data = self.tree.read_bytes(relpath) or b""
        key = hashlib.sha256(f"{EXTRACTOR}\0{name}\0{self.tree.content_key(relpath, data)}".encode()).hexdigest()
        return kind, relpath, data, key

    def _load(self, name: str) -> ModuleRecord | None:
        kind, relpath, data, key = self._source(name)
        if not kind:
            return None
        if relpath is None:
            self.stats.without_source += 1
            opaque = "extension module" if kind == "extension" else None
            return ModuleRecord(name, kind, None, opaque=opaque)
        extracted = self.cache.get(key)
        if isinstance(extracted, dict):
            self.stats.from_cache += 1
        else:
            extracted = extract_module(name, relpath, data.decode("utf-8", "replace"))
            self.stats.parsed += 1
            self.cache.put(key, extracted)
        return self._record(name, kind, relpath, extracted)

    @staticmethod
    def _record(name: str, kind: str, relpath: str, extracted: dict[str, Any]) -> ModuleRecord:
        return ModuleRecord(
            name,
            kind,
            relpath,
            bindings=extracted.get("bindings", {}),
            wildcards=extracted.get("wildcards", []),
            exports=extracted.get("exports"),
            opaque=extracted.get("opaque"),
        )

    def pending_extractions(self, names: Iterable[str]) -> list[tuple[str, str, str, str, str]]:
        """(name, kind, relpath, code, key) of the modules among `names` not yet loaded or cached."""
        jobs = []
        for name in sorted(set(names)):
            if name in self._modules or not is_upstream(name):
                continue
            kind, relpath, data, key = self._source(name)
            if relpath is not None and self.cache.get(key) is None:
                jobs.append((name, kind, relpath, data.decode("utf-8", "replace"), key))
        return jobs

    def accept_extraction(self, job: tuple[str, str, str, str, str], extracted: dict[str, Any]) -> None:
        name, kind, relpath, _, key = job
        self.stats.parsed += 1
        self.cache.put(key, extracted)
        self._modules[name] = self._record(name, kind, relpath, extracted)

    def loaded(self, name: str) -> ModuleRecord | None:
        """The module's record if it was already loaded; never loads."""
        return self._modules.get(name)

    def module_exists(self, name: str) -> bool:
        """Whether the release has the module; answered from folder listings, without parsing it."""
        if name in self._modules:
            return self._modules[name] is not None
        return is_upstream(name) and bool(self._locate(name)[0])

    # -- names ---------------------------------------------------------------------------

    def resolve_name(self, module_name: str, name: str, _seen: frozenset = frozenset()) -> Symbol:
        """What `from module_name import name` binds, following re-exports to the definition."""
        key = (module_name, name)
        if key in _seen:
            return UNKNOWN  # a re-export cycle: Python would fail too, but do not claim it
        seen = _seen | {key}
        record = self.module(module_name)
        if record is None:
            return MISSING
        binding = record.bindings.get(name)
        if binding is not None and binding["kind"] != "alias":
            return Symbol("found", binding["kind"], f"{module_name}.{name}", binding.get("line"))
        if binding is not None:
            target = binding["target"]
            if not is_upstream(target):
                return Symbol("found", "external", target, binding.get("line"))
            return self.resolve_path(target, seen)
        if self.module_exists(f"{module_name}.{name}"):
            return Symbol("found", "module", f"{module_name}.{name}")
        if record.opaque:
            return UNKNOWN
        for star in reversed(record.wildcards):
            symbol = self._through_star(star, name, seen)
            if symbol.status != "missing":
                return symbol
        if "__getattr__" in record.bindings:
            return UNKNOWN  # PEP 562 module __getattr__ can produce any name
        return MISSING

    def _through_star(self, star_module: str, name: str, seen: frozenset) -> Symbol:
        if not is_upstream(star_module):
            return UNKNOWN  # `from torch import *`: its names are not ours to know
        record = self.module(star_module)
        if record is None:
            return MISSING
        if record.exports is not None:
            return self.resolve_name(star_module, name, seen) if name in record.exports else MISSING
        if name.startswith("_"):
            return MISSING
        return self.resolve_name(star_module, name, seen)

    def resolve_path(self, dotted: str, _seen: frozenset = frozenset()) -> Symbol:
        """Resolve `a.b.c.Name`: the longest module prefix, then names within it."""
        parts = dotted.split(".")
        for split in range(len(parts), 0, -1):
            prefix = ".".join(parts[:split])
            if not self.module_exists(prefix):
                continue
            symbol = Symbol("found", "module", prefix)
            for part in parts[split:]:
                if symbol.kind != "module":
                    return UNKNOWN  # attributes of classes and objects: not decided here
                symbol = self.resolve_name(symbol.origin, part, _seen)
                if not symbol.found:
                    return symbol
            return symbol
        return MISSING

    # -- search (for "did you mean") ----------------------------------------------------

    @cached_property
    def _source_files(self) -> list[str]:
        """Every .py path of the release, listed once however many searches run."""
        return [relpath for relpath in self.tree.iter_files(ROOT) if relpath.endswith(".py")]

    def module_name_of(self, relpath: str) -> str:
        name = relpath[: -len(".py")] if relpath.endswith(".py") else relpath
        name = name.replace("/", ".")
        return name[: -len(".__init__")] if name.endswith(".__init__") else name

    def find_definitions(self, names: set[str]) -> dict[str, list[str]]:
        """Modules of this release that define each name at top level (a textual scan, then verified)."""
        if not names:
            return {}
        alternatives = "|".join(sorted(re.escape(n) for n in names))
        pattern = re.compile(
            rf"^(?:(?:async\s+)?def|class)\s+({alternatives})\b|^({alternatives})\s*(?::[^=\n]*)?=(?!=)",
            re.M,
        )
        found: dict[str, list[str]] = {}
        for relpath in self._source_files:
            text = self.tree.read_text(relpath) or ""
            for match in pattern.finditer(text):
                name = match.group(1) or match.group(2)
                module = self.module_name_of(relpath)
                if module not in found.setdefault(name, []):
                    found[name].append(module)
        verified: dict[str, list[str]] = {}
        for name, modules in found.items():
            for module in modules:
                symbol = self.resolve_name(module, name)
                if symbol.found and symbol.origin == f"{module}.{name}":
                    verified.setdefault(name, []).append(module)
        return verified

    def find_modules_named(self, leaf: str) -> list[str]:
        """Modules of this release whose last name component is `leaf`."""
        hits = []
        for relpath in self._source_files:
            if relpath.endswith(f"/{leaf}.py") or relpath.endswith(f"/{leaf}/__init__.py"):
                hits.append(self.module_name_of(relpath))
        return sorted(hits)
