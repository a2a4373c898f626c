"""What one SGLang release defines, loaded on demand.

Only the modules that the project's contracts reach are parsed, together with the chains
of re-exports behind them (`from .x import *`, `from .x import y as y`, `__all__`).
Each module's extraction is cached by its content.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, Callable, Generator, Iterable, Iterator

from sglang_contracts.infra.cache import RecordCache, code_fingerprint
from sglang_contracts.infra.collector import collector_paused
from sglang_contracts.infra.shapes import ListOf, Row, Table, TableOf, fits
from sglang_contracts.infra.files import Unreadable
from sglang_contracts.sources.base import PACKAGE, Release
from sglang_contracts.infra import pysource
from sglang_contracts.upstream import bodies, extract, toplevel
from sglang_contracts.upstream.extract import extract_module

# The shape a module's record is cached and held in (stored_form) is part of every key.
RECORD_FORM = "lazy-1"
EXTRACTOR = f"{code_fingerprint(extract, bodies, pysource, toplevel)}-{RECORD_FORM}"
# Bases that add nothing a contract could rely on; any other base outside SGLang makes a
# class's members partly unknown (torch.nn.Module, msgspec.Struct, ...).
NEUTRAL_BASES = {"object", "abc.ABC", "ABC", "typing.Generic", "Generic", "typing.Protocol", "Protocol"}

ROOT = PACKAGE  # the upstream top-level package
# A definition at a line's start (after the newline the pattern starts with, which the engine
# skips to): `def`/`async def`/`class` NAME, or NAME [: annotation] = value.
_TOP_LEVEL_DEFINITION = re.compile(r"\n(?:(?:(?:async\s+)?def|class)\s+(\w+)|([^\W\d]\w*)\s*(?::[^=\n]*)?=(?!=))")
FEW_NAMES = 16  # names asked at once up to which _definitions_of beats building the whole table
UNLISTED = "unlisted"  # what _locate says of a module whose folder is there but cannot be listed
UNREADABLE = "unreadable"  # what _source says of a module whose file or folder cannot be read


def _definition_spans_of(relpath: str, code: str) -> dict[str, dict[str, list[list[int]]]] | None:
    """Where a module's top-level functions and classes' methods are in its text; None when it
    cannot be parsed (its extraction then failed too, and there are no records)."""
    try:
        with collector_paused(collect_after=True):
            return bodies.definition_spans(bodies.definition_lines(pysource.parse_quietly(code, relpath)), code)
    except (SyntaxError, ValueError, RecursionError):
        return None


@lru_cache(maxsize=None)
def _module_fingerprint(name: str) -> str:
    return code_fingerprint(sys.modules[name])


def _is_attribute(field: list[Any]) -> bool:
    """Whether a dataclass field record is an attribute of the instance (an `InitVar` is not)."""
    return len(field) < 4 or bool(field[3])


def is_upstream(dotted: str) -> bool:
    return dotted == ROOT or dotted.startswith(ROOT + ".")


def _text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def stored_form(extracted: dict[str, Any]) -> dict[str, Any]:
    """A module's extraction as it is cached and held: each class (without its methods), each
    method and each function as a JSON text of its own, decoded on first use (LazyRecords), and
    so the definitions table. Checking sglang's own tree loads 7,000 modules, whose records
    decoded whole held 340 MB of small dicts and lists; a run reads a fraction of them."""
    classes = extracted.get("classes", {})
    form = {key: value for key, value in extracted.items() if key not in ("classes", "functions", "definitions")}
    form["classes"] = {name: _text({key: value for key, value in record.items() if key != "methods"})
                       for name, record in classes.items()}
    form["methods"] = {name: {method: _text(found) for method, found in record.get("methods", {}).items()}
                       for name, record in classes.items()}
    form["functions"] = {name: _text(record) for name, record in extracted.get("functions", {}).items()}
    if extracted.get("definitions") is not None:
        form["definitions"] = _text(extracted["definitions"])
    return form


def _has_extension(entries: Iterable[str], leaf: str) -> bool:
    """Whether a folder's entries hold a compiled module `leaf` (`leaf.cpython-311-x86_64-linux-gnu.so`)."""
    return any(entry.startswith(leaf + ".") and entry.endswith((".so", ".pyd")) for entry in entries)


def extract_stored(module_name: str, relpath: str, code: str, known_bodies: dict | None = None) -> dict[str, Any]:
    """`extract_module`'s record in its stored form."""
    return stored_form(extract_module(module_name, relpath, code, known_bodies))


def _compact(value: Any) -> Any:
    """A decoded record with its strings interned: each decoding of a record makes its keys and
    values anew ("line", "params", "pk", "self"...), a third of a record's memory."""
    kind = type(value)
    if kind is str:
        return sys.intern(value)
    if kind is dict:
        return {sys.intern(key): _compact(item) for key, item in value.items()}
    if kind is list:
        return [_compact(item) for item in value]
    return value


# Deeper than any module path a release holds (SGLang's reach eight parts): a dotted name a
# project writes may have 100,000 parts, and each prefix tried is joined anew.
DEEPEST_MODULE = 24


class Binding:
    """One top-level name of a module: `binding["kind"]`, `binding["line"]`, `binding["target"]`
    (an alias's) and `binding.get(...)`, as the record's dict had them, in a third of the
    memory (sglang's own tree as the project loads 130,000 of them)."""

    __slots__ = ("kind", "line", "target")

    def __init__(self, fields: dict[str, Any]) -> None:
        self.kind = sys.intern(fields["kind"])
        self.line = fields.get("line")
        if "target" in fields:
            self.target = sys.intern(fields["target"])

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def __contains__(self, key: str) -> bool:
        return hasattr(self, key)

    def __repr__(self) -> str:
        return f"Binding({ {key: getattr(self, key) for key in self.__slots__ if hasattr(self, key)} })"


def _held_bindings(form: dict[str, Any]) -> dict[str, Binding]:
    """A stored form's bindings as Binding objects, made once per form (both releases' models
    share the form of a module they have in common; a resident process keeps it from run to run)."""
    bindings = form.get("bindings") or {}
    if bindings and type(next(iter(bindings.values()))) is dict:
        bindings = form["bindings"] = {sys.intern(name): Binding(fields) for name, fields in bindings.items()}
    return bindings


# stored_form's tables: each entry a JSON text, or what a process decoded of it in its place
# (LazyRecords: a language server is given the same record again); the methods a table per class.
_ENTRIES = TableOf((str, dict))
_TABLES = {"classes": _ENTRIES, "methods": TableOf(_ENTRIES), "functions": _ENTRIES}
# A cached module's stored form: an opaque module's (extract_module's refusals), or an analysed
# one's, its bindings as written or as Binding objects made in their place (_held_bindings).
MODULE_FORM = (Table(opaque=str, optional={"problem": Row(str, str, bool)}, **_TABLES),
               Table(bindings=TableOf((Table(kind=str, line=int, optional={"target": str}), Binding)),
                     wildcards=ListOf(str), exports=object, optional={"definitions": (str, None), "dynamic": object},
                     **_TABLES))


# The entries a stored form keeps as JSON texts (stored_form), as their readers read them: a
# function's or method's, and a class's (its methods a table of their own). An entry of another
# shape (a cache record made by hand, or re-signed by whoever can write the cache) is extracted
# again from the release's source (LazyRecords), never read: its readers would fail on it.
FUNCTION_ENTRY = Table(line=int, params=ListOf(Row(str, str, bool)), decorators=ListOf(str), returns=ListOf(str))
# A class's dataclass fields: [name, has_default, kw_only, attribute] each (extract._dataclass_fields).
CLASS_ENTRY = Table(line=int, bases=ListOf(str), fields=ListOf(Row(str, bool, bool, bool)),
                    attributes=TableOf(Table(line=int, kind=str)))


# A module record's definitions table (bodies.definition_lines: table -> name -> places, each
# [first line, last line, column, `def` line]), kept as a JSON text decoded when first read.
DEFINITIONS = TableOf(TableOf(ListOf(Row(int, int, int, int))))


def _kept_places(text: str) -> dict[str, dict[str, list[list[int]]]] | None:
    """The definitions table a record keeps, or None when its text is not one (damaged or made
    by hand): the places are then read from the module's source."""
    try:
        places = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return places if fits(places, DEFINITIONS) else None


class LazyRecords(Mapping):
    """name -> record, over a table of JSON texts: each record is decoded the first time it is
    asked for and put in the table in place of its text, so that both releases' models, which
    share the table of a module the releases have in common, decode it once. Records are read,
    never changed (as the cache's). `anew`: the table as the module's source gives it, extracted
    again, for an entry whose text is not of the entries' `shape`."""

    __slots__ = ("_entries", "_anew")
    shape: Any = FUNCTION_ENTRY

    def __init__(self, entries: dict[str, Any], anew: Callable[[], dict[str, Any]] | None = None) -> None:
        self._entries = entries
        self._anew = anew

    def _decoded(self, name: str, text: str) -> Any:
        try:
            record = json.loads(text)
        except (ValueError, RecursionError):
            return None
        return _compact(record) if fits(record, self.shape) else None

    def __getitem__(self, name: str) -> Any:
        found = self._entries[name]
        if type(found) is str:
            decoded = self._decoded(name, found)
            found = self._entries[name] = decoded if decoded is not None else self._extracted_anew(name)
        return found

    def _extracted_anew(self, name: str) -> Any:
        """The entry as the source gives it: KeyError when the source has none (the table named
        one it does not hold)."""
        fresh = self._anew() if self._anew is not None else {}
        text = fresh.get(name)
        decoded = self._decoded(name, text) if type(text) is str else None
        if decoded is None:
            raise KeyError(name)
        return decoded

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name] if name in self._entries else default
        except KeyError:  # an entry the source does not hold
            return default

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"LazyRecords({sorted(self._entries)})"


class LazyClasses(LazyRecords):
    """A module's classes: a class's record holds its methods as LazyRecords of their own.
    `anew`: the module's whole stored form extracted again (its classes and their methods)."""

    __slots__ = ("_methods", "_form_anew")
    shape = CLASS_ENTRY

    def __init__(self, entries: dict[str, Any], methods: dict[str, dict[str, Any]],
                 anew: Callable[[], dict[str, Any]] | None = None) -> None:
        super().__init__(entries, (lambda: anew().get("classes", {})) if anew is not None else None)
        self._methods = methods
        self._form_anew = anew

    def _decoded(self, name: str, text: str) -> Any:
        record = super()._decoded(name, text)
        if record is not None:
            anew = self._form_anew
            record["methods"] = LazyRecords(self._methods.get(name, {}), (
                lambda: anew().get("methods", {}).get(name, {})) if anew is not None else None)
        return record


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


def set_at_run_time(module: str) -> Symbol:
    """A name a module does not define statically, where it sets names by run-time strings
    (`globals()[name] = ...`), or may export by an `__all__` not evaluated: unknown, its origin
    the module (the checks say they could not verify, `module_unverifiable` why)."""
    return Symbol("unknown", "dynamic", module)


@dataclass
class ModuleRecord:
    name: str
    kind: str  # module, package, namespace, extension
    relpath: str | None
    bindings: dict[str, Binding] = field(default_factory=dict)
    wildcards: list[str] = field(default_factory=list)
    # `__all__`: the names listed; None without one (every public name); or, where the module
    # computes it, toplevel.evaluated_exports's rule
    exports: list[str] | dict[str, Any] | None = None
    opaque: str | None = None  # why its contents cannot be known (extension module, unparsable file)
    classes: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    functions: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    # Why it could not be read or analysed: (stage, error, internal), reported as SGC000/SGC001.
    problem: tuple[str, str, bool] | None = None
    definitions: str | None = None  # bodies.definition_lines of its tree, as JSON text (decoded by _module_spans)
    dynamic: str | None = None  # how it sets its own attributes by name at run time (toplevel.dynamic_setters)


@dataclass(frozen=True)
class Member:
    """One name on an upstream class, found through its bases."""

    owner: str  # qualified name of the class that defines it
    name: str
    kind: str  # method, property, class (a class-level value), instance (set on self), field
    record: dict[str, Any]  # the function record for methods and properties, else the attribute's

    @property
    def qualname(self) -> str:
        return f"{self.owner.rsplit('.', 1)[-1]}.{self.name}"


@dataclass(frozen=True)
class Signature:
    """The parameters a call binds to: (name, kind, has_default), kinds po/pk/va/ko/vk."""

    params: tuple[tuple[str, str, bool], ...]
    owner: str  # the function, method or class it belongs to
    dataclass: bool = False  # a generated dataclass __init__
    # Where its `**kwargs` go, when the body hands them on to the next class's method untouched
    # (`super().__init__(*args, **kwargs)`), and the parameters of it that the body fills itself.
    forwarded: "Signature | None" = None
    filled: frozenset[str] = frozenset()

    def names(self) -> set[str]:
        return {name for name, kind, _ in self.params if kind in ("pk", "ko", "po")}

    def accepts_forwarded(self, keyword: str) -> bool | None:
        """Whether a keyword that only `**kwargs` takes reaches a parameter, through the
        forwarding chain; None when the chain ends in `**kwargs` nobody follows."""
        current: Signature = self
        while True:  # the chain is finite: each signature holds the next, built before it
            target = current.forwarded
            if target is None:
                return None
            if keyword in current.filled:
                return False  # the body passes it itself: a second value is a TypeError
            if keyword in {name for name, kind, _ in target.params if kind in ("pk", "ko")}:
                return True
            if not any(kind == "vk" for _, kind, _ in target.params):
                return False
            current = target


@dataclass
class LoadStats:
    parsed: int = 0
    from_cache: int = 0
    without_source: int = 0  # namespace packages and extension modules

    @property
    def modules(self) -> int:
        return self.parsed + self.from_cache + self.without_source


# Bases followed up a class's hierarchy (SGLang's are a few deep): what lies above is open-ended.
DEEPEST_CLASS = 100

@dataclass
class Links:
    """What one resolution followed: the (module, name) links of the chain being followed, one
    inside the other (`path`: _name_steps adds and removes its own), and the star-import links it
    found missing (`missing`: _through_star)."""

    path: set[tuple[str, str]] = field(default_factory=set)
    missing: set[tuple[str, str]] = field(default_factory=set)


# A resolution in steps: it yields the resolution of each link it follows (a re-export, a star
# import, a module on a path) and is sent back that link's Symbol; it returns its own.
Resolution = Generator["Resolution", Symbol, Symbol]


def _followed(resolution: Resolution) -> Symbol:
    """Run a resolution with its links on an explicit stack, not Python's: a chain of hundreds of
    re-exports (each link a module loaded, griffe visiting it) met the recursion limit. The
    stack is bounded as the links are: each adds a (module, name) not on it (the visited set)."""
    stack = [resolution]
    answer: Symbol | None = None
    while True:
        try:
            link = stack[-1].send(answer)  # type: ignore[arg-type]  # None starts a resolution
        except StopIteration as done:
            stack.pop()
            if not stack:
                return done.value
            answer = done.value
            continue
        stack.append(link)
        answer = None


class UpstreamModel:
    def __init__(self, release: Release, cache: RecordCache, forms: dict[str, dict[str, Any]] | None = None) -> None:
        """`forms`: the stored forms of module records read so far, by cache key, shared by
        the models of a pair (pair)."""
        self.release = release
        self.tree = release.tree
        self.cache = cache
        self._forms = forms if forms is not None else {}
        self.stats = LoadStats()
        # module -> (relpath, why it cannot be analysed) of the modules the project's patch stack
        # leaves unanalysable, read as released instead (_readable)
        self.read_as_released: dict[str, tuple[str, str]] = {}
        self._modules: dict[str, ModuleRecord | None] = {}
        self._listing = lru_cache(maxsize=None)(self.tree.list_dir)
        self._lines: dict[tuple[str, str, str], list[str]] = {}  # (module, class or "", name) -> body lines
        self._spans: dict[str, dict[str, dict[str, list[list[int]]]] | None] = {}  # module -> definition_spans
        self._paths: dict[str, Symbol] = {}  # resolve_path's answers
        self._names: dict[tuple[str, str], Symbol] = {}  # resolve_name's answers
        self._star_names: dict[str, frozenset[str]] = {}  # star_names' answers
        self.mro = lru_cache(maxsize=None)(self._mro)
        self.member = lru_cache(maxsize=None)(self._member)
        self.resolve_class = lru_cache(maxsize=None)(self._resolve_class)
        self._searched: dict[str, Any] = {}  # whole_release_search's answers in this run
        self._cut_hierarchies: dict[str, str] = {}  # module -> a class of it whose bases were not all followed

    @classmethod
    def pair(cls, old: Release, new: Release, cache: RecordCache) -> tuple["UpstreamModel", "UpstreamModel"]:
        """The models of two releases, which read a module the releases have alike (most of
        them: one cache key) once: its record is read and decoded for both."""
        forms: dict[str, dict[str, Any]] = {}
        return cls(old, cache, forms), cls(new, cache, forms)

    # -- modules -------------------------------------------------------------------------

    def _locate(self, name: str) -> tuple[str, str | None]:
        """(kind, relpath) of a module, or ("", None) when the release has no such module;
        (UNLISTED, folder) when a folder that would hold it is there but cannot be listed."""
        parts = name.split(".")
        folder = "/".join(parts[:-1])
        entries = self._listing(folder) if folder else self._listing("")
        if entries is None:
            return (UNLISTED, folder) if self.tree.unlisted(folder) else ("", None)
        leaf = parts[-1]
        path = f"{folder}/{leaf}" if folder else leaf
        if leaf in entries and (package := self._locate_package(path)) is not None:
            return package
        if f"{leaf}.py" in entries:
            return "module", f"{path}.py"
        if _has_extension(entries, leaf):
            return "extension", None
        return "", None

    def _locate_package(self, path: str) -> tuple[str, str | None] | None:
        """_locate's answer for the folder at `path` when it is a package (regular or namespace)
        or cannot be listed; None when it holds no module."""
        inner = self._listing(path)
        if inner is None:
            return (UNLISTED, path) if self.tree.unlisted(path) else None
        if "__init__.py" in inner:
            return "package", f"{path}/__init__.py"
        if any(entry.endswith((".py", ".pyi", ".so")) or self._listing(f"{path}/{entry}") is not None for entry in inner):
            return "namespace", None
        return None

    def module(self, name: str) -> ModuleRecord | None:
        if name in self._modules:
            return self._modules[name]
        record = self._load(name) if is_upstream(name) else None
        self._modules[name] = record
        return record

    def _source(self, name: str) -> tuple[str, str | None, str]:
        """(kind, relpath, cache key) of a module; kind "" when there is no such module. The
        key comes without reading the file where the tree knows its digest (a wheel, a clone).
        Kind UNREADABLE when its file or its folder cannot be read, the key then saying why."""
        kind, relpath = self._locate(name)
        if kind == UNLISTED:
            return UNREADABLE, None, f"folder {relpath} cannot be listed: {self.tree.unlisted(relpath or '')}"
        if not kind or relpath is None:
            return kind, None, ""
        try:
            content = self.tree.content_key(relpath)
        except Unreadable as unreadable:
            return UNREADABLE, relpath, unreadable.reason
        key = hashlib.sha256(f"{EXTRACTOR}\0{name}\0{content}".encode()).hexdigest()
        return kind, relpath, key

    def _load(self, name: str) -> ModuleRecord | None:
        kind, relpath, key = self._source(name)
        if not kind:
            return None
        if kind == UNREADABLE:
            return self._unreadable(name, relpath, key)
        if relpath is None:
            self.stats.without_source += 1
            opaque = "extension module" if kind == "extension" else None
            return ModuleRecord(name, kind, None, opaque=opaque)
        cached = self._cached(name, kind, relpath, key)
        if cached is not None:
            return cached
        try:
            code = self.tree.read_source(relpath) or ""
        except Unreadable as unreadable:
            return self._unreadable(name, relpath, unreadable.reason)
        extracted = self._forms[key] = extract_stored(name, relpath, code)
        self.stats.parsed += 1
        self.cache.put(key, extracted)
        return self._readable(name, self._record(name, kind, relpath, extracted))

    def _readable(self, name: str, record: ModuleRecord) -> ModuleRecord:
        """The record; or, where the project's patch stack leaves the module unanalysable (a
        syntax error, a NUL byte: Python could not import it either) and the release's own
        version is not, that one's. The module is then read as released, by every reader of
        the tree, and the stack is reported at its patches (runner._upstream_problems): a
        broken stack costs its own changes to the module, not the project's other contracts.
        A module whose text is there but cannot be known (it does not parse on this Python,
        griffe refuses it) is unreadable: its contracts would otherwise pass unchecked."""
        if record.opaque is None or record.problem is not None or record.relpath is None:
            return record
        if not self.tree.as_released(record.relpath):
            return self._unreadable(name, record.relpath, record.opaque)
        released = self._load(name)  # keyed by the released content now
        if released is None or released.opaque is not None:
            return released or self._unreadable(name, record.relpath, record.opaque)
        self.read_as_released[name] = (record.relpath, record.opaque)
        return released

    def _unreadable(self, name: str, relpath: str | None, reason: str) -> ModuleRecord:
        """A module whose file (or folder) cannot be read: opaque, with the reason for the report."""
        return ModuleRecord(name, "module", relpath, opaque=reason,
                            problem=(f"read {name} in {self.release.label}", reason, False))

    def problems(self) -> list[tuple[str, str, str, bool]]:
        """(module, stage, error, internal) of every loaded module that could not be read or analysed."""
        found = [(name, *record.problem) for name, record in sorted(self._modules.items())
                 if record is not None and record.problem]
        return found + [(module, f"follow the bases of {origin} in {self.release.label}",
                         f"more than {DEEPEST_CLASS} levels of bases: members above them are not read", False)
                        for module, origin in sorted(self._cut_hierarchies.items())]

    def _cached(self, name: str, kind: str, relpath: str, key: str) -> ModuleRecord | None:
        """The module's record from the cache, or None when it must be extracted."""
        extracted = self._forms.get(key)
        if extracted is None:
            extracted = self.cache.get(key, MODULE_FORM)
            if extracted is None:
                return None
            self._forms[key] = extracted
        self.stats.from_cache += 1
        return self._readable(name, self._record(name, kind, relpath, extracted))

    def _record(self, name: str, kind: str, relpath: str, extracted: dict[str, Any]) -> ModuleRecord:
        """The record of a module from its stored form (stored_form); an entry of it found of
        another shape when read is extracted again from the source (LazyRecords)."""
        anew = lru_cache(maxsize=None)(lambda: self._extracted_again(name, relpath))  # once, if ever
        return ModuleRecord(
            name,
            kind,
            relpath,
            bindings=_held_bindings(extracted),
            wildcards=extracted.get("wildcards", []),
            exports=extracted.get("exports"),
            opaque=extracted.get("opaque"),
            classes=LazyClasses(extracted.get("classes", {}), extracted.get("methods", {}), anew),
            functions=LazyRecords(extracted.get("functions", {}), lambda: anew().get("functions", {})),
            problem=tuple(extracted["problem"]) if extracted.get("problem") else None,
            definitions=extracted.get("definitions"),
            dynamic=extracted.get("dynamic"),
        )

    def _extracted_again(self, name: str, relpath: str) -> dict[str, Any]:
        """The module's stored form extracted anew from the release's source, in place of a
        cached record found damaged (an entry of another shape), which it replaces in the cache."""
        kind, found, key = self._source(name)
        try:
            code = self.tree.read_source(relpath) or ""
        except Unreadable:
            return {}
        extracted = extract_stored(name, relpath, code)
        if found == relpath and key:
            self.cache.put(key, extracted)
        return extracted

    def all_cached(self, names: Iterable[str]) -> bool:
        """Whether every module among `names` is loaded or has a record in the cache: none is
        to be extracted (none is read to tell)."""
        for name in set(names):
            if name in self._modules or not is_upstream(name):
                continue
            kind, relpath, key = self._source(name)
            if kind and kind != UNREADABLE and relpath is not None and key not in self._forms \
                    and not self.cache.holds(key):
                return False
        return True

    def pending_extractions(self, names: Iterable[str]) -> list[tuple[str, str, str, str, str]]:
        """(name, kind, relpath, code, key) of the modules among `names` not yet loaded or cached.
        The cached ones are loaded on the way: the file is read and its record decoded once."""
        jobs = []
        for name in sorted(set(names)):
            if name in self._modules or not is_upstream(name):
                continue
            kind, relpath, key = self._source(name)
            if kind == UNREADABLE:
                self._modules[name] = self._unreadable(name, relpath, key)
                continue
            if relpath is None:
                continue
            cached = self._cached(name, kind, relpath, key)
            if cached is not None:
                self._modules[name] = cached
                continue
            try:
                code = self.tree.read_source(relpath) or ""
            except Unreadable as unreadable:
                self._modules[name] = self._unreadable(name, relpath, unreadable.reason)
                continue
            jobs.append((name, kind, relpath, code, key))
        return jobs

    def accept_extraction(self, job: tuple[str, str, str, str, str], extracted: dict[str, Any], stored: bool = False) -> None:
        """A module extracted elsewhere (a worker: extract_stored); `stored`: its record is in the cache already."""
        name, kind, relpath, _, key = job
        self.stats.parsed += 1
        if not stored:
            self.cache.put(key, extracted)
        self._forms[key] = extracted
        self._modules[name] = self._readable(name, self._record(name, kind, relpath, extracted))

    def loaded(self, name: str) -> ModuleRecord | None:
        """The module's record if it was already loaded; never loads."""
        return self._modules.get(name)

    def module_text(self, name: str) -> tuple[str, str] | None:
        """(relpath, source text) of a module or package, read without extracting it; None when
        the release has no such file or it cannot be read."""
        kind, relpath = self._locate(name) if is_upstream(name) else ("", None)
        if kind not in ("module", "package") or relpath is None:
            return None
        text = self.tree.readable_source(relpath)
        return None if text is None else (relpath, text)

    def module_exists(self, name: str) -> bool:
        """Whether the release has the module; answered from folder listings, without parsing it."""
        if name in self._modules:
            return self._modules[name] is not None
        return is_upstream(name) and bool(self._locate(name)[0])

    # -- names ---------------------------------------------------------------------------

    def resolve_name(self, module_name: str, name: str) -> Symbol:
        """What `from module_name import name` binds, following re-exports to the definition.
        The answer depends on the name alone, so it is kept (as resolve_path's)."""
        found = self._names.get((module_name, name))
        if found is None:
            found = self._names[module_name, name] = _followed(self._name_steps(module_name, name, Links()))
        return found

    def _name_steps(self, module_name: str, name: str, seen: Links) -> Resolution:
        """`seen.path`: the (module, name) links of the chain being followed, this one's included
        while it is (_followed runs the links one inside the other: the set is the path). A copy of the
        path per link cost a chain of N star imports N^2 in time and memory (campaign 9, R21)."""
        key = (module_name, name)
        if key in seen.path:
            return UNKNOWN  # a re-export cycle: Python would fail too, but do not claim it
        seen.path.add(key)
        try:
            record = self.module(module_name)
            if record is None:
                return MISSING
            binding = record.bindings.get(name)
            if binding is not None:
                return (yield from self._bound(module_name, name, binding, seen))
            return (yield from self._not_bound(record, module_name, name, seen))
        finally:
            seen.path.discard(key)

    def _bound(self, module_name: str, name: str, binding: dict[str, Any], seen: Links) -> Resolution:
        """resolve_name of a name the module binds: defined there, or imported (followed when upstream)."""
        if binding["kind"] != "alias":
            return Symbol("found", binding["kind"], f"{module_name}.{name}", binding.get("line"))
        target = binding["target"]
        if not is_upstream(target):
            return Symbol("found", "external", target, binding.get("line"))
        return (yield self._path_steps(target, seen))

    def _not_bound(self, record: ModuleRecord, module_name: str, name: str, seen: Links) -> Resolution:
        """resolve_name of a name the module does not bind: a submodule, a star import's, or a
        name made at run time."""
        if self.module_exists(f"{module_name}.{name}"):
            return Symbol("found", "module", f"{module_name}.{name}")
        if record.opaque:
            return UNKNOWN
        for star in reversed(record.wildcards):
            symbol = yield from self._through_star(star, name, seen)
            if symbol.status != "missing":
                return symbol
        if "__getattr__" in record.bindings:
            return UNKNOWN  # PEP 562 module __getattr__ can produce any name
        return set_at_run_time(module_name) if record.dynamic else MISSING

    def star_gives(self, module_name: str, name: str) -> Symbol:
        """What `from module_name import *` binds `name` to: found where the module exports it
        (its `__all__`, else its public names, through its own star imports as resolve_name
        follows them), missing where it does not, unknown where that cannot be told."""
        return _followed(self._through_star(module_name, name, Links()))

    def star_names(self, module_name: str) -> frozenset[str]:
        """The names `from module_name import *` may bind (star_gives decides each): its
        `__all__`'s, every global of a module that computes it; without one, its public names
        and those of its own star imports'. A bound to ask star_gives by: a project file reads
        names by the thousand, and star-imports as many modules."""
        found = self._star_names.get(module_name)
        if found is None:
            names: set[str] = set()
            pending, seen = [module_name], set()
            while pending:  # a stack: star imports chain as deep as upstream writes them
                current = pending.pop()
                record = self.module(current) if current not in seen and is_upstream(current) else None
                seen.add(current)
                if record is None:
                    continue
                if isinstance(record.exports, list):
                    names.update(record.exports)
                elif isinstance(record.exports, dict):
                    names.update(record.exports.get("names", ()), record.bindings)
                else:
                    names.update(name for name in record.bindings if not name.startswith("_"))
                    pending.extend(record.wildcards)
            found = self._star_names[module_name] = frozenset(names)
        return found

    def star_unreadable(self, module_name: str) -> str | None:
        """Why the names `from module_name import *` binds cannot be told: its code cannot be
        known, it sets names at run time or computes its `__all__` in a way not evaluated, or
        it has no `__all__` and star-imports such a module, or one outside SGLang. None when
        they can, or when the module is missing or could not be read (reported as such at
        every import of it, runner._upstream_problems)."""
        pending, seen = [module_name], set()
        while pending:  # a stack: star imports chain as deep as upstream writes them
            current = pending.pop()
            record = self.module(current) if current not in seen else None
            seen.add(current)
            if record is None or record.problem is not None:
                continue
            why = (f"{current} cannot be read ({record.opaque})" if record.opaque
                   else self.module_unverifiable(current))
            if why:
                return why
            if record.exports is None:  # an `__all__` names every name; without it the stars' names are all given
                outside = next((star for star in record.wildcards if not is_upstream(star)), None)
                if outside is not None:
                    return f"{current} star-imports {outside}, whose names are not SGLang's to know"
                pending.extend(record.wildcards)
        return None

    def _through_star(self, star_module: str, name: str, seen: Links) -> Resolution:
        """`name` through `from star_module import *`. A star import of a module whose search for
        the name is under way (a cycle of star imports: valid Python, where it binds what the
        module bound so far) or was made in this resolution and found nothing gives nothing
        that search does not find: missing here, and the star imports before it are read
        (a cycle left every name it re-exports unknown: campaign 10, R14). Each star link is
        searched once a resolution, so a web of star imports costs its links, not its paths."""
        link = (star_module, name)
        if link in seen.path or link in seen.missing:
            return MISSING
        symbol = yield from self._star_link(star_module, name, seen)
        if symbol.missing:
            seen.missing.add(link)
        return symbol

    def _star_link(self, star_module: str, name: str, seen: Links) -> Resolution:
        if not is_upstream(star_module):
            return UNKNOWN  # `from torch import *`: its names are not ours to know
        record = self.module(star_module)
        if record is None:
            return MISSING
        if isinstance(record.exports, dict):
            return (yield from self._through_computed(star_module, record.exports, name, seen))
        if record.exports is not None and name not in record.exports:
            return MISSING
        if record.exports is None and name.startswith("_"):
            return MISSING
        return (yield self._name_steps(star_module, name, seen))

    def _through_computed(self, star_module: str, exports: dict[str, Any], name: str,
                          seen: Links) -> Resolution:
        """`name` through a star import of a module whose `__all__` is computed: listed, or a
        global its comprehension keeps; a global that a part not evaluated may have added is
        unknown, one the module does not have is missing."""
        kept = exports.get("globals")
        if name in exports.get("names", ()) or (kept is not None and toplevel.holds(kept, name)):
            return (yield self._name_steps(star_module, name, seen))
        if exports.get("unknown"):
            # a global that a part not evaluated may export: could not verify, never missing
            symbol = yield self._name_steps(star_module, name, seen)
            return MISSING if symbol.missing else set_at_run_time(star_module) if symbol.found else symbol
        return MISSING

    def resolve_path(self, dotted: str) -> Symbol:
        """Resolve `a.b.c.Name`: the longest module prefix, then names within it. The answer
        depends on the path alone, so it is kept: the checks ask for the same paths hundreds of
        thousands of times."""
        found = self._paths.get(dotted)
        if found is None:
            found = self._paths[dotted] = _followed(self._path_steps(dotted, Links()))
        return found

    def _path_steps(self, dotted: str, _seen: Links) -> Resolution:
        parts = dotted.split(".")
        for split in range(min(len(parts), DEEPEST_MODULE), 0, -1):  # a project's `sglang.a.a.a...` is no module
            prefix = ".".join(parts[:split])
            if not self.module_exists(prefix):
                continue
            symbol = Symbol("found", "module", prefix)
            for part in parts[split:]:
                if symbol.kind != "module":
                    return UNKNOWN  # attributes of classes and objects: not decided here
                symbol = yield self._name_steps(symbol.origin, part, _seen)
                if not symbol.found:
                    return symbol
            return symbol
        return MISSING

    # -- classes and functions ------------------------------------------------------------

    def _definition(self, origin: str, table: str) -> dict[str, Any] | None:
        module_name, _, name = origin.rpartition(".")
        record = self.module(module_name) if module_name else None
        return getattr(record, table).get(name) if record is not None else None

    def class_record(self, origin: str) -> dict[str, Any] | None:
        """The extracted class defined at `origin` ("module.Class")."""
        return self._definition(origin, "classes")

    def function_record(self, origin: str) -> dict[str, Any] | None:
        return self._definition(origin, "functions")

    def callable_record(self, owner: str) -> dict[str, Any] | None:
        """The record of a Signature's owner: a module function, or a class's method."""
        record = self.function_record(owner)
        if record is None:
            cls, _, name = owner.rpartition(".")
            found = self.class_record(cls) if cls else None
            record = found["methods"].get(name) if found is not None else None
        return record

    def _resolve_class(self, dotted: str) -> str | None:
        """The origin of the class `dotted` names in this release, or None when it is not one."""
        symbol = self.resolve_path(dotted) if is_upstream(dotted) else MISSING
        if symbol.found and symbol.kind == "class" and self.class_record(symbol.origin) is not None:
            return symbol.origin
        return None

    def _mro(self, origin: str) -> tuple[tuple[str, ...], bool]:
        """Upstream classes in member-lookup order, and whether a base outside SGLang (or one
        that cannot be resolved) may define more members."""
        order: list[str] = []
        open_ended = False
        # Depth first, bases left to right (a stack, not recursion); a class met again (bases
        # that derive from each other) is not entered twice.
        pending: list[tuple[str, int]] = [(origin, 0)]
        while pending:
            current, depth = pending.pop()
            record = self.class_record(current)
            if record is None or current in order:
                continue
            if depth > DEEPEST_CLASS:  # what lies above may define anything: cannot tell, and said (campaign 9, R22)
                open_ended = True
                self._cut_hierarchies.setdefault(origin.rpartition(".")[0], origin)
                continue
            order.append(current)
            bases = []
            for base in record["bases"]:
                if base in NEUTRAL_BASES or base.split("[")[0] in NEUTRAL_BASES:
                    continue
                resolved = self.resolve_class(base)
                if resolved is None:
                    open_ended = True
                else:
                    bases.append((resolved, depth + 1))
            pending.extend(reversed(bases))
        return tuple(order), open_ended

    def _member(self, origin: str, name: str) -> Member | None:
        """`name` looked up on the class at `origin` and its upstream bases."""
        for owner in self.mro(origin)[0]:
            record = self.class_record(owner)
            if name in record["methods"]:
                method = record["methods"][name]
                kind = "property" if "property" in method["decorators"] else "method"
                return Member(owner, name, kind, method)
            if name in record["attributes"]:
                attribute = record["attributes"][name]
                return Member(owner, name, attribute["kind"], attribute)
            if any(field[0] == name and _is_attribute(field) for field in record["fields"]):
                return Member(owner, name, "field", {"types": []})
        return None

    def set_by_name(self, origin: str) -> str | None:
        """How the class at `origin` (or an upstream base) sets its attributes by run-time names
        (`setattr(cls, name, ...)` in a registration method), or None: a name it does not declare
        may still be there, so its absence cannot be verified."""
        for owner in self.mro(origin)[0]:
            why = (self.class_record(owner) or {}).get("dynamic")
            if why:
                return f"{owner.rsplit('.', 1)[-1]} sets attributes by name at run time ({why})"
        return None

    def module_unverifiable(self, module: str) -> str | None:
        """Why a name of the module cannot be verified: it sets names at run time
        (`globals()[name] = ...`), or computes its `__all__` in a way not evaluated; None when
        neither."""
        record = self.module(module)
        if record is None:
            return None
        if record.dynamic:
            return f"{module} sets names at run time ({record.dynamic})"
        if isinstance(record.exports, dict) and record.exports.get("unknown"):
            return f"{module} computes its __all__ in a way not read statically"
        return None

    def member_names(self, origin: str) -> set[str]:
        """Every name `_member` finds on the class: methods, properties, class, instance and field attributes."""
        names: set[str] = set()
        for owner in self.mro(origin)[0]:
            record = self.class_record(owner)
            names.update(record["methods"])
            names.update(record["attributes"])
            names.update(field[0] for field in record["fields"] if _is_attribute(field))
        return names

    def class_level_names(self, origin: str) -> set[str]:
        """Names reachable on the class object itself: methods, properties, class attributes."""
        names: set[str] = set()
        for owner in self.mro(origin)[0]:
            record = self.class_record(owner)
            names.update(record["methods"])
            names.update(n for n, a in record["attributes"].items() if a["kind"] in ("class", "property"))
        return names

    def constructor(self, origin: str) -> Signature | None:
        """What `Class(...)` binds to: the nearest `__init__`, or the dataclass's generated one;
        None when a base outside SGLang may define it."""
        order, open_ended = self.mro(origin)
        for owner in order:
            record = self.class_record(owner)
            if "__init__" in record["methods"]:
                return self.method_signature(Member(owner, "__init__", "method", record["methods"]["__init__"]), bound=True)
            if record["dataclass"] is not None:
                return self._dataclass_init(order[order.index(owner):], owner)
        return None if open_ended else Signature((), f"{origin}.__init__")

    def _dataclass_init(self, order: tuple[str, ...], owner: str) -> Signature:
        fields: dict[str, tuple[str, str, bool]] = {}
        for base in reversed(order):  # base classes' fields come first, subclasses override
            record = self.class_record(base)
            options = record["dataclass"] or {}
            for name, has_default, kw_only, *_ in record["fields"]:
                kind = "ko" if kw_only or options.get("kw_only") else "pk"
                fields[name] = (name, kind, has_default)
        ordered = [f for f in fields.values() if f[1] == "pk"] + [f for f in fields.values() if f[1] == "ko"]
        return Signature(tuple(ordered), owner, dataclass=True)

    def method_signature(self, member: Member, bound: bool) -> Signature:
        """A method's parameters as a call sees them; `bound` drops `self`/`cls`. Where its
        body hands `**kwargs` on to the next class's method, that one's signature is followed,
        and so on up the chain. A chain that comes back to a method already on it (classes
        deriving from each other) ends there with `**kwargs` nobody follows: where a keyword
        lands is unknown."""
        chain = [member]
        while True:
            forward = chain[-1].record.get("forwards")
            target = self._next_definition(chain[-1].owner, chain[-1].name) if forward else None
            if target is None or any((target.owner, target.name) == (m.owner, m.name) for m in chain):
                break
            chain.append(target)
        # Built from the end of the chain back: each signature holds the next one's.
        signature: Signature | None = None
        for index in range(len(chain) - 1, -1, -1):
            signature = self._signature(chain[index], bound=bound if index == 0 else True, forwarded=signature)
        return signature

    @staticmethod
    def _signature(member: Member, bound: bool, forwarded: Signature | None) -> Signature:
        params = [tuple(p) for p in member.record.get("params", [])]
        decorators = member.record.get("decorators", [])
        drop_first = "staticmethod" not in decorators and (bound or "classmethod" in decorators)
        if drop_first and params and params[0][1] in ("po", "pk"):
            params = params[1:]
        forward = member.record.get("forwards")
        if forwarded is None:
            return Signature(tuple(params), f"{member.owner}.{member.name}")
        positional = [name for name, kind, _ in forwarded.params if kind in ("po", "pk")][: forward[0]]
        return Signature(tuple(params), f"{member.owner}.{member.name}", forwarded=forwarded,
                         filled=frozenset([*positional, *forward[1]]))

    def _next_definition(self, owner: str, name: str) -> Member | None:
        """The method `super().<name>` reaches from a method of `owner`: the next upstream class
        in its order that defines it (None past a base outside SGLang, or a generated __init__)."""
        for cls in self.mro(owner)[0][1:]:
            record = self.class_record(cls)
            if name in record["methods"]:
                return Member(cls, name, "method", record["methods"][name])
            if name == "__init__" and record["dataclass"] is not None:
                return None
        return None

    def function_signature(self, origin: str) -> Signature | None:
        record = self.function_record(origin)
        return Signature(tuple(map(tuple, record["params"])), origin) if record is not None else None

    # -- bodies --------------------------------------------------------------------------

    def body_lines(self, member: Member) -> list[str]:
        """The normalised lines of a function's or method's body (`member.owner` a module, or
        the class origin), as the extraction would have recorded them: the body is only read
        for the few definitions a comparison needs. A class as a whole (a mirrored class) is its
        methods' bodies, in name order (a Member whose record is {"whole_class": True})."""
        if "body" in member.record:
            return member.record["body"]
        if member.record.get("whole_class"):
            record = self.class_record(member.owner)
            if record is None:
                return []
            return [line for name in sorted(record["methods"])
                    for line in self.body_lines(Member(member.owner, name, "method", record["methods"][name]))]
        return self._definition_lines(*self._module_and_table(member.owner), member.name)

    def _module_and_table(self, owner: str) -> tuple[str, str]:
        """(module, class name) of a method's owner, (module, "") of a function's."""
        if self.class_record(owner) is not None:
            module_name, _, table = owner.rpartition(".")
            return module_name, table
        return owner, ""

    def _definition_lines(self, module_name: str, table: str, name: str) -> list[str]:
        """The normalised lines of a module's function (`table` "") or a class's method, cached
        by the module's content. Only the definitions a comparison asks for are read: a module's
        every body was most of a cold run's upstream work, for the few a project overrides."""
        if (module_name, table, name) in self._lines:
            return self._lines[module_name, table, name]
        found: list[str] = []
        record = self.module(module_name)
        if record is not None and record.relpath and not record.opaque:
            content = self.tree.content_key(record.relpath)
            key = hashlib.sha256(f"{EXTRACTOR}\0lines\0{module_name}\0{content}\0{table}\0{name}".encode()).hexdigest()
            cached = self.cache.get(key, ListOf(str))
            if cached is not None:
                found = cached
            else:
                computed = self._read_definition_lines(module_name, record.relpath, table, name)
                if computed is not None:
                    self.cache.put(key, computed)
                found = computed or []
        self._lines[module_name, table, name] = found
        return found

    def _read_definition_lines(self, module_name: str, relpath: str, table: str, name: str) -> list[str] | None:
        code = self.tree.read_source(relpath) or ""
        spans = self._module_spans(module_name, relpath, code)
        if spans is None:
            return None
        found: list[str] = []
        for span in spans.get(table, {}).get(name, []):
            node = bodies.definition_node(code, span, name)
            if node is None:  # a definition its own lines do not parse to: read the whole module
                with collector_paused(collect_after=True):
                    return bodies.module_definition_lines(pysource.parse_quietly(code, relpath), table, name)
            found += bodies.normalised_lines(node)
        return found

    def _module_spans(self, module_name: str, relpath: str, code: str) -> dict[str, dict[str, list[list[int]]]] | None:
        if module_name not in self._spans:
            record = self._modules.get(module_name)
            places = _kept_places(record.definitions) if record is not None and record.relpath == relpath \
                and record.definitions is not None else None
            self._spans[module_name] = (bodies.definition_spans(places, code) if places is not None
                                        else _definition_spans_of(relpath, code))
        return self._spans[module_name]

    def definition_node(self, member: Member) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, str] | None:
        """(the definition, its module's text) of a function or method whose record's line is its
        first line or its `def` line, parsed from its own lines; None when it is not found so
        (the caller then reads the module's whole tree)."""
        line = member.record.get("line")
        module_name, table = self._module_and_table(member.owner)
        record = self.module(module_name)
        if not line or record is None or not record.relpath or record.opaque:
            return None
        code = self.tree.read_source(record.relpath) or ""
        spans = self._module_spans(module_name, record.relpath, code) or {}
        for span in spans.get(table, {}).get(member.name, []):
            if line in (span[3], span[4]):
                node = bodies.definition_node(code, span, member.name)
                return (node, code) if node is not None else None
        return None

    # -- search (for "did you mean") ----------------------------------------------------

    @cached_property
    def _source_files(self) -> list[str]:
        """Every .py path of the release that is a module an import can name, listed once however
        many searches run: a file named `evil; import os.py` is no module, and no search may
        offer it as one (a hint's home, a fix's import)."""
        return [relpath for relpath in self.tree.iter_files(ROOT)
                if relpath.endswith(".py") and pysource.is_dotted_name(self.module_name_of(relpath))]

    @cached_property
    def _top_level_definitions(self) -> dict[str, list[str]]:
        """name -> modules whose text defines it at column 0 (`def`, `class`, an assignment), in
        file order, textually (find_definitions verifies them): one pass answers every name a
        run asks about (a pattern of the asked names tried at every position of every file that
        mentions one took 5 s for a project asking about hundreds)."""
        # An unreadable file defines nothing we know of.
        texts = ((relpath, self.tree.readable_source(relpath) or "") for relpath in self._source_files)
        return self._definitions_in(texts, None)

    def _definitions_of(self, names: set[str]) -> dict[str, list[str]]:
        """`_top_level_definitions` of a few names: only the texts that mention one are matched
        (a project asks about one or two names a run; the table costs 0.6 s a release)."""
        return self._definitions_in(self.texts_mentioning_any(names), names)

    def definitions_in(self, texts: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
        """name -> the modules among `texts` (relpath, source) that define it at column 0, textually."""
        return self._definitions_in(texts, None)

    def _definitions_in(self, texts: Iterable[tuple[str, str]], names: set[str] | None) -> dict[str, list[str]]:
        """name (of `names`, or any when None) -> the modules among `texts` that define it at
        column 0, in their order."""
        found: dict[str, list[str]] = {}
        for relpath, text in texts:
            module = self.module_name_of(relpath)
            for match in _TOP_LEVEL_DEFINITION.finditer("\n" + text):
                name = match.group(1) or match.group(2)
                if (names is None or name in names) and module not in found.setdefault(name, []):
                    found[name].append(module)
        return found

    def module_name_of(self, relpath: str) -> str:
        name = relpath[: -len(".py")] if relpath.endswith(".py") else relpath
        name = name.replace("/", ".")
        return name[: -len(".__init__")] if name.endswith(".__init__") else name

    def whole_release_search(self, what: str, compute: Callable[[], Any], shape: Any) -> Any:
        """`compute()`, a search that reads every file of the release, cached under `what` for
        releases whose content cannot change (a published version, a commit). The key holds
        the code of the module that defines `compute`, so changing a search invalidates it;
        `shape` is its result's (infra/shapes.py): a record of another is searched again.
        Any release's answer is kept for the model's life: a directory's files do not change
        during a run, and a resident engine keeps a model only while they are unchanged (one
        hint per read of a removed attribute searched a directory release 150,000 times:
        campaign 10, R13)."""
        if what in self._searched:
            return self._searched[what]
        if not self.release.identity:
            result = compute()
        else:
            key = self._search_key(what, compute.__module__)
            result = self.cache.get(key, shape)
            if result is None:
                result = compute()
                self.cache.put(key, result)
        self._searched[what] = result
        return result

    def _search_key(self, what: str, searcher_module: str) -> str:
        searcher = _module_fingerprint(searcher_module)
        return hashlib.sha256(f"{EXTRACTOR}\0{searcher}\0{self.release.identity}\0{what}".encode()).hexdigest()

    def whole_release_searches(self, whats: dict[str, Any], compute: Callable[[list[Any]], list[Any]],
                               shape: Any) -> dict[str, Any]:
        """Several searches at once, {what: result}: `whats` maps each search's cache name to
        its question; `compute(questions)` answers every one not cached, in one pass over the
        release, in order. Each answer, of `shape`, is cached and kept as `whole_release_search`
        caches and keeps it."""
        found = {what: self._searched[what] for what in whats if what in self._searched}
        keys = {what: self._search_key(what, compute.__module__) for what in whats
                if what not in found and self.release.identity}  # a directory's answers are not cached
        found.update(self._cached_searches(keys, shape))
        missing = [what for what in whats if what not in found]
        if missing:
            for what, result in zip(missing, compute([whats[what] for what in missing])):
                if what in keys:
                    self.cache.put(keys[what], result)
                found[what] = result
        self._searched.update(found)
        return {what: found[what] for what in whats}

    def _cached_searches(self, keys: dict[str, str], shape: Any) -> dict[str, Any]:
        """{what: result} of the searches (by their cache keys) whose results are cached, of `shape`."""
        found: dict[str, Any] = {}
        for what, key in keys.items():
            cached = self.cache.get(key, shape)
            if cached is not None:
                found[what] = cached
        return found

    def find_definitions(self, names: set[str]) -> dict[str, list[str]]:
        """Modules of this release that define each name at top level (a textual scan, then verified)."""
        if not names:
            return {}
        return self.whole_release_search(f"definitions {sorted(names)}", lambda: self._scan_definitions(names),
                                         TableOf(ListOf(str)))

    def _scan_definitions(self, names: set[str]) -> dict[str, list[str]]:
        table = (self._top_level_definitions if len(names) > FEW_NAMES or "_top_level_definitions" in self.__dict__
                 else self._definitions_of(names))
        found = {name: table[name] for name in sorted(names) if name in table}
        verified: dict[str, list[str]] = {}
        for name, modules in found.items():
            for module in modules:
                symbol = self.resolve_name(module, name)
                if symbol.found and symbol.origin == f"{module}.{name}":
                    verified.setdefault(name, []).append(module)
        return verified

    def texts_mentioning_any(self, needles: Iterable[str]) -> Iterable[tuple[str, str]]:
        """(relpath, source text) of every module of the release whose text contains one of
        `needles`: one pass over the release for many searches."""
        needles = list(needles)
        for relpath in self._source_files:
            text = self.tree.readable_source(relpath) or ""
            if any(needle in text for needle in needles):
                yield relpath, text

    def texts_mentioning(self, needle: str) -> Iterable[tuple[str, str]]:
        """(relpath, source text) of every module of the release whose text contains `needle`."""
        for relpath in self._source_files:
            text = self.tree.readable_source(relpath) or ""
            if needle in text:
                yield relpath, text

    def relpath_of(self, origin: str) -> str | None:
        """The file that defines `origin` (a module, or a name defined in one)."""
        for name in (origin, origin.rpartition(".")[0], origin.rsplit(".", 2)[0]):
            record = self.module(name) if name else None
            if record is not None and record.relpath:
                return record.relpath
        return None

    def find_modules_named(self, leaf: str) -> list[str]:
        """Modules of this release whose last name component is `leaf`."""
        hits = []
        for relpath in self._source_files:
            if relpath.endswith(f"/{leaf}.py") or relpath.endswith(f"/{leaf}/__init__.py"):
                hits.append(self.module_name_of(relpath))
        return sorted(hits)
