"""What the project relies on, per file: the raw facts the scanner extracts.

Facts are plain data (JSON-ready) so a file whose content has not changed is never parsed again.
"""

from __future__ import annotations

import hashlib

import dataclasses
import json
import sys
import types
import typing
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable

from sglang_contracts.infra.boundary import Problem, note
from sglang_contracts.infra.shapes import ListOf, Table, TableOf


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class Position:
    line: int
    col: int  # 1-based, as flake8 prints it


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class ImportFact:
    """`import module [as bound]` (name is None) or `from module import name [as bound]`."""

    position: Position  # of the imported name (of the module for `import x`)
    module_position: Position  # of the module in the statement
    module: str  # absolute module path (relative imports already resolved)
    name: str | None
    bound: str  # the local name the statement binds
    guarded: bool = False  # inside `try:` whose handler catches ImportError
    # every handler that catches its failure raises or exits again: the failure stops the run
    guard_stops: bool = False
    type_checking: bool = False  # under `if TYPE_CHECKING:`
    module_level: bool = True  # visible to other modules as an attribute of this one
    # The project modules whose star imports give the name, outermost first: `from pk.base import
    # *`, where pk/base.py star-imports the SGLang module, reads as this import `through` pk.base
    # (releasefacts.with_star_names); () for an import the file writes
    through: tuple[str, ...] = ()

    @property
    def target(self) -> str:
        """The dotted path the statement reaches."""
        return self.module if self.name is None else f"{self.module}.{self.name}"

    @property
    def binds(self) -> str:
        """The dotted path of the object the bound name refers to (`import a.b` binds `a`)."""
        return import_binds(self.module, self.name, self.bound)


def import_binds(module: str, name: str | None, bound: str) -> str:
    """The dotted path of the object an import binds to its local name: `import a.b` binds `a`,
    `import a.b as m` binds `a.b`, `from a import b as c` binds `a.b`."""
    if name is None:
        return bound if bound == module.split(".")[0] else module
    return f"{module}.{name}"


def through_imports(name: str, bindings: dict[str, str]) -> str | None:
    """The dotted path a name written in a file stands for, by the import that binds its first
    part (`bindings`: local name -> import_binds): `P` -> `unittest.mock.patch` after
    `from unittest.mock import patch as P`; None when no import binds it."""
    head, dot, rest = name.partition(".")
    target = bindings.get(head)
    return None if target is None else f"{target}{dot}{rest}"


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class AttributeFact:
    """A dotted chain `root.a.b` read (or written) in the file, rooted at an import-bound name."""

    root: str
    attrs: tuple[str, ...]
    positions: tuple[Position, ...]  # of each attribute in `attrs`
    store: bool = False
    attr_guarded: bool = False  # inside `try:` whose handler catches AttributeError


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class Receiver:
    """What an expression refers to, as far as its file tells; resolved later against each release.

    `types` are alternatives, each a kind and a name: `T:name` an instance of the class the
    dotted name `name` stands for in this file, `R:name` the result of calling it, `C:name` the
    object it stands for, `S:Class` `self` inside the file's class `Class`, `U:Class` `super()`
    inside it. `attrs` are then walked from there, e.g. ("S:Omni", ("model_runner", "tp_group")).
    """

    types: tuple[str, ...]
    attrs: tuple[str, ...] = ()


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class ArgFact:
    kind: str  # pos, kw, star (*args), dstar (**kwargs)
    name: str | None  # the keyword; for a positional argument that is a plain name, that name
    position: Position


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class CallFact:
    callee: Receiver  # for a method call, attrs ends with the method's name
    position: Position  # of the callee's last name
    args: tuple[ArgFact, ...]
    scope: str  # "Class.method" or "function" that makes the call ("" at module level)
    # What is done with the result: "await" (`await f()`), "unpack:N" (`a, b = f()`), "index"
    # (`f()[0]`), "iter" (`for x in f()`), "attr:<name>" (`f().name`), "return" (`return f()`), "partial"
    # (`functools.partial(f, ...)`: f is not called there, and its args end in the `*`/`**` the call adds), else ""
    use: str = ""


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class ReadFact:
    """`receiver.attr` read (or written) where the receiver's type is known: self, super() or typed."""

    receiver: Receiver
    attr: str
    position: Position
    store: bool
    scope: str
    attr_guarded: bool = False  # inside `try:` whose handler catches AttributeError
    nullable: bool = False  # the receiver is a name its function says may be None (`x: T | None`)
    value: str = ""  # for `receiver.attr = v`: upstream.bodies.value_token of v ("" unknown)


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class PatchFact:
    """An assignment that replaces an attribute of an import-bound object (`Cls.name = f`,
    `module.name = f`, `setattr(Cls, "name", f)`: kind "replace"), or saves it first
    (`_orig = Cls.name`: kind "save")."""

    kind: str
    target: str  # the dotted name as written, e.g. "RMSNorm.forward_cuda"
    position: Position  # of the replaced attribute's name (of the string in setattr)
    value: str | None  # "replace": the replacement's dotted name, if a name; "save": the name it is saved under
    scope: str


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class FunctionFact:
    """A module-level function of the project that replaces an upstream one."""

    name: str
    position: Position
    params: tuple[tuple[str, str, bool], ...]


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class ProbeFact:
    """A call that names an attribute or a dotted target by string, or hands an object to
    introspection: `getattr(x, "name", d)`, `hasattr`, `mock.patch("a.b.c")`,
    `monkeypatch.setattr(Cls, "name", v)`, `mock.patch.object(Cls, "name")`,
    `inspect.signature(f)`, `dataclasses.fields(C)`."""

    function: str  # the callee's dotted name as written
    subject: Receiver | None  # the first argument, when it is a name or a dotted chain
    strings: tuple[tuple[str, Position], ...]  # string-literal positional arguments, in order
    nargs: int  # positional arguments
    keywords: tuple[str, ...]
    position: Position  # of the callee's last name
    scope: str
    attr_guarded: bool = False
    string_indices: tuple[int, ...] = ()  # the positional index of each of `strings`
    nullable: bool = False  # the subject is a name its function says may be None (`x: T | None`)

    def string_at(self, index: int) -> tuple[str, Position] | None:
        """The string literal given as positional argument `index`, if it is one."""
        return self.strings[self.string_indices.index(index)] if index in self.string_indices else None


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class SourceProbeFact:
    """A string searched for in upstream source text: `inspect.getsource(f).replace(old, new)`,
    `old in src`, `re.sub(pattern, repl, src)`."""

    target: str  # the dotted name handed to getsource, as written
    needle: str
    regex: bool
    position: Position  # of the string
    scope: str


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class SpecFact:
    """A mock declared with `spec=`/`spec_set=` an upstream class, and what it is configured with."""

    spec: str  # the dotted name as written
    position: Position  # of the spec's name
    attrs: tuple[tuple[str, Position], ...]  # keyword arguments and `mock.attr = ...` in the same scope
    scope: str


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class FlagFact:
    """A ServerArgs pass-through name: `args.sglang_<field>` or the string `"--sglang-<field>"`."""

    field: str  # the field it names, `-` replaced by `_`
    position: Position
    kind: str  # "attr" or "flag"


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class StringsFact:
    """`NAME = [...]`/`(...)`/`{...}` of string literals only (dict keys and values both)."""

    name: str
    items: tuple[tuple[str, Position], ...]


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class MethodFact:
    name: str
    position: Position
    params: tuple[tuple[str, str, bool], ...]  # (name, kind po/pk/va/ko/vk, has default), as upstream
    decorators: tuple[str, ...]
    is_async: bool = False  # `async def`
    annotation: str = ""  # the return annotation as written
    shape: int | None = None  # the tuple length every `return` gives (upstream.bodies.returned_shape)
    # Some `return` hands back the base's own method's result (`return super().m(x)`,
    # `return Base.m(self, x)`): on that path the override is whatever the base is, a
    # coroutine function's result included.
    delegates: bool = False
    returns_self: bool = False  # its body is `return self` (pysource.returns_its_receiver)


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class ClassFact:
    name: str
    position: Position
    bases: tuple[str, ...]  # dotted names as written
    methods: tuple[MethodFact, ...]
    provided: tuple[str, ...]  # what instances get from the class itself: members and self.x writes
    attr_types: tuple[tuple[str, tuple[str, ...]], ...]  # attribute -> type alternatives (as Receiver.types)
    getattr_sources: tuple[str, ...]  # dotted names its __getattr__ fetches from: getattr(X, name)
    getattr_names: tuple[str, ...]  # names its __getattr__ answers itself
    init_calls_base: bool | None  # does its __init__ call the base's? None: it defines no __init__
    none_only: tuple[str, ...] = ()  # attributes the class only ever sets to None (`self.x = None`)
    falsy_only: tuple[str, ...] = ()  # ... to None, False, 0 or an empty string (none_only included)
    # attribute -> tokens of every value the class writes to it (upstream.bodies.value_token;
    # "m:<name>" for `self.<name>()`, "" unknown), and method -> token of the constant it returns
    values: tuple[tuple[str, tuple[str, ...]], ...] = ()
    returns: tuple[tuple[str, str], ...] = ()
    # attribute -> members, for attributes only ever built as `SimpleNamespace(member=...)`
    namespaces: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # decorated, or given a metaclass or class keywords: what calling the class does is not for
    # its bases' `__init__` to say (a dataclass generates its own)
    decorated: bool = False

    def method(self, name: str) -> MethodFact | None:
        return next((m for m in self.methods if m.name == name), None)


# A condition on the release (project/gates.py): a disjunction of conjunctions of (op, value) atoms.
Gate = tuple[tuple[tuple[str, str], ...], ...]


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class GateFact:
    """A block of code (from `start` to `end`, inclusive) that runs only where `gate` holds: a
    branch on the installed SGLang version, an import fallback (`except ImportError:`)."""

    start: Position
    end: Position
    gate: Gate


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class ConditionFact:
    """A module-level name bound to a condition on the release: `SGLANG_GE_0_5_6 = ... >= ...`."""

    name: str
    gate: Gate


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class DispatchFact:
    """A step that depends on which SGLang release is installed (project/dispatches.py): a
    `raise` under a branch on the release's version (kind "raise", `detail` the exception as
    written), or `importlib.import_module(...)` of a module named from the version (kind
    "import", `detail` the argument as written, `template` its parts, `package` what a
    relative name is resolved against)."""

    kind: str
    position: Position
    detail: str
    template: tuple[tuple[str, str], ...] = ()
    package: str = ""


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class FreeNameFact:
    """A name the file reads and binds nowhere itself, nor is a builtin (scopes.module_names),
    kept where the file star-imports an SGLang module, or a project module (which may give
    SGLang's names in turn): what that import may bind (which it does is the release's to say:
    releasefacts.with_star_names). One list per file, not per star import: a file of many star
    imports and many names would hold their product."""

    name: str


@dataclass(unsafe_hash=True, slots=True)  # hashable values; not frozen, which costs 3x to build
class ModuleNameFact:
    """What a star import of this module gives, kept where free names are (FreeNameFact): a
    name it binds at its top level (kind "bound": its own, but where a star import of its own
    after its last binding gives it: `stars_before` of its star imports come before that
    binding), or one its `__all__` lists ("listed"); "listed" `*` where its `__all__` is made in
    a way not read (toplevel.listed_exports), so that what it gives is not known; kind "star",
    the module each of its star imports outside its functions and classes names, in order (what
    `stars_before` counts: the target release's facts may leave some out, under gates)."""

    name: str
    kind: str
    stars_before: int = 0


@dataclass
class FileFacts:
    path: str  # relative to the project root, POSIX
    module: str  # dotted module name inside the project
    imports: list[ImportFact] = field(default_factory=list)
    attributes: list[AttributeFact] = field(default_factory=list)
    classes: list[ClassFact] = field(default_factory=list)
    calls: list[CallFact] = field(default_factory=list)
    reads: list[ReadFact] = field(default_factory=list)
    patches: list[PatchFact] = field(default_factory=list)
    functions: list[FunctionFact] = field(default_factory=list)
    probes: list[ProbeFact] = field(default_factory=list)
    source_probes: list[SourceProbeFact] = field(default_factory=list)
    specs: list[SpecFact] = field(default_factory=list)
    flags: list[FlagFact] = field(default_factory=list)
    strings: list[StringsFact] = field(default_factory=list)
    gates: list[GateFact] = field(default_factory=list)  # innermost last where they nest
    conditions: list[ConditionFact] = field(default_factory=list)
    dispatches: list[DispatchFact] = field(default_factory=list)
    free_names: list[FreeNameFact] = field(default_factory=list)
    module_names: list[ModuleNameFact] = field(default_factory=list)
    noqa: dict[int, list[str] | None] = field(default_factory=dict)  # line -> codes, None = all
    parse_error: tuple[int, int, str] | None = None
    problem: Problem | None = None  # the scan stopped short: a bug (SGC001) or a tree too deep (SGC000)
    # The dotted names the file uses as types or bases (used_class_names), kept as the scan
    # found them: the project index finds the files defining them without decoding a record's
    # reads and calls (two thirds of it), which only the files a run checks need.
    class_names: list[str] = field(default_factory=list)

    def __getattr__(self, name: str) -> Any:
        """A list of facts read from a record (from_json), decoded when first read: a re-check
        after an edit reads the reads and calls of the files it checks, not of every file.
        Python calls this only for an attribute not set."""
        undecoded = self.__dict__.get("_undecoded")
        raw = undecoded.get(name, _UNSET) if undecoded is not None else _UNSET
        if raw is _UNSET:
            if name in self.__dict__:  # decoded by another thread meanwhile
                return self.__dict__[name]
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        try:
            decoded = _decoded_list(name, raw)
        except (TypeError, ValueError, KeyError, IndexError, RecursionError) as error:
            # A record whose digest holds and whose content does not: made by hand (the cache is
            # the user's). Its other lists were checked when it was read; this one costs the
            # file's contracts that read it, said as such, never the run.
            note(Problem(self.path, 1, 1, "reading its cached facts", f"the cache's record of this file is damaged "
                         f"({type(error).__name__} in its {name}); remove the cache folder's project records",
                         internal=False, unchecked=f"its contracts that read its {name}"))
            decoded = []
        decoded = self.__dict__.setdefault(name, decoded)
        undecoded.pop(name, None)
        return decoded

    def bindings(self) -> dict[str, str]:
        """Local name -> the dotted path its import binds (star imports excluded): made once per
        imports list (the whole project's rules ask it of every file, several times a run), so
        not to be changed by the caller."""
        kept = self.__dict__.get("_bindings")
        if kept is None or kept[0] is not self.imports:
            kept = self.__dict__["_bindings"] = (self.imports, {fact.bound: fact.binds for fact in self.imports
                                                                if fact.name != "*"})
        return kept[1]

    def in_class(self, name: str, kind: str) -> list:
        """The file's `kind` facts ("calls" or "reads") made in the class `name`'s own code (its
        scope `name.` and below), in file order: grouped once per list by the scope's first part,
        so that asking each of a file's classes costs the file once, not once per class (a
        chain of 6,000 classes walked every call 6,000 times: seventh campaign, P16)."""
        facts = getattr(self, kind)
        kept = self.__dict__.get(f"_in_class_{kind}")
        if kept is None or kept[0] is not facts:
            grouped: dict[str, list] = {}
            for fact in facts:
                grouped.setdefault(fact.scope.partition(".")[0], []).append(fact)
            kept = self.__dict__[f"_in_class_{kind}"] = (facts, grouped)
        prefix = f"{name}."
        return [fact for fact in kept[1].get(name.partition(".")[0], ()) if fact.scope.startswith(prefix)]

    def placeless_digest(self) -> str:
        """A digest of the facts but their positions (what moving code leaves as it was): made
        once per facts, kept in their record (to_record)."""
        known = self.__dict__.get("_placeless_digest")
        if known is None:
            placeless = [self.module, *([json_without(fact, kind, Position) for fact in getattr(self, name)]
                                        for name, kind in FACT_LISTS.items())]
            known = self.__dict__["_placeless_digest"] = hashlib.sha256(
                json.dumps(placeless, default=str).encode("utf-8", "surrogatepass")).hexdigest()
        return known

    def to_json(self) -> dict[str, Any]:
        """Plain JSON, each fact a positional list (half the size of field names, and faster to
        rebuild: a large project holds a hundred thousand facts)."""
        data: dict[str, Any] = {"path": self.path, "module": self.module, "parse_error": self.parse_error,
                                "problem": self.problem.to_json() if self.problem else None,
                                "noqa": {str(line): codes for line, codes in self.noqa.items()},
                                "class_names": self.class_names}
        for name, kind in FACT_LISTS.items():
            encode = _encoder(kind)
            data[name] = [encode(fact) for fact in getattr(self, name)]
        return data

    def to_record(self) -> dict[str, Any]:
        """to_json's form for the cache: the lists a run reads only for the files it checks
        (LOCAL_LISTS) kept as their JSON texts, which a record's reader skips over rather than
        rebuilds (from_json decodes each when first read)."""
        data = self.to_json()
        data["placeless"] = self.placeless_digest()
        for name in LOCAL_LISTS:
            data[name] = json.dumps(data[name], separators=(",", ":"))
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "FileFacts":
        """The facts of to_json's or to_record's form, each list decoded when first read."""
        error = data.get("parse_error")
        problem = data.get("problem")
        undecoded = {name: data[name] for name in FACT_LISTS}
        # Each row's length is checked now (a record of another shape is refused here, and the
        # index scans the file again); what a row holds, and a list kept as text, when the list
        # is first read.
        _check_shapes(undecoded)
        facts = cls(
            path=data["path"],
            module=data["module"],
            noqa={int(line): codes for line, codes in data["noqa"].items()},
            parse_error=tuple(error) if error else None,
            problem=Problem.from_json(problem) if problem else None,
            class_names=list(map(str, data["class_names"])),
        )
        for name in LOCAL_LISTS:  # each decoded by __getattr__ when first read
            del facts.__dict__[name]
        for name in FACT_LISTS:  # the others now: an error here refuses the record (the file is scanned again)
            if name not in LOCAL_LISTS:
                facts.__dict__[name] = _decoded_list(name, undecoded.pop(name))
        facts.__dict__["_undecoded"] = undecoded
        if isinstance(data.get("placeless"), str):  # to_record's
            facts.__dict__["_placeless_digest"] = data["placeless"]
        return facts


def _check_shapes(undecoded: dict[str, Any]) -> None:
    """Refuse a record whose rows are not of their fact's length (a list kept as text is checked when decoded)."""
    for name, raw in undecoded.items():
        if type(raw) is str and name in LOCAL_LISTS:
            continue
        if not _rows_fit(raw, _ROW_WIDTH[name]):
            raise ValueError(f"a record's {name} of another shape")


def _rows_fit(raw: Any, width: int) -> bool:
    """Is `raw` a list of rows, each a list of `width` fields?"""
    return type(raw) is list and all(type(row) is list and len(row) == width for row in raw)


def used_class_names(facts: FileFacts) -> set[str]:
    """Dotted names a file uses as types or bases (`T:x.Y`, `R:Y`, `L:Y`, nested in `P:`/`E:`)."""
    names = {base for cls in facts.classes for base in cls.bases}
    for kind in _used_kinds(facts):
        name = _class_of_kind(kind)
        if name is not None:
            names.add(name)
    return names


def _used_kinds(facts: FileFacts) -> list[str]:
    """The kinds of the file's receivers, of what it calls (not a name's `C:`), of its classes' attributes."""
    kinds = [kind for read in facts.reads for kind in read.receiver.types]
    kinds += [kind for call in facts.calls for kind in call.callee.types if not kind.startswith("C:")]
    kinds += [kind for cls in facts.classes for _, types in cls.attr_types for kind in types]
    return kinds


def base_kind(kind: str) -> str:
    """The kind a derived one is reached from: under any `P:`/`E:` (`<kind>|a.b`) or `W:`
    (what `with <kind> as x` binds)."""
    while kind[:2] in ("P:", "E:", "W:"):
        kind = kind[2:].rpartition("|")[0] if kind[0] != "W" else kind[2:]
    return kind


def _class_of_kind(kind: str) -> str | None:
    """The dotted class a kind names (under any `P:`/`E:`/`W:`), None for another kind."""
    kind = base_kind(kind)
    # Classes are CapWords by convention; `x = helper()` names a function, whose file need not be read.
    if kind[:2] in ("T:", "R:", "L:", "B:") and kind[2:].rpartition(".")[2][:1].isupper():
        return kind[2:]
    return None


_UNSET = object()


def _decoded_list(name: str, raw: Any) -> list:
    """A record's list of facts `name`, from its JSON form or its JSON text (to_record)."""
    if type(raw) is str:
        raw = json.loads(raw)
        if not _rows_fit(raw, _ROW_WIDTH[name]):
            raise ValueError(f"a record's {name} of another shape")
    return list(map(_decoder(FACT_LISTS[name]), raw))


# FileFacts' lists of facts and the type each holds: the cache's form of a file, both ways.
FACT_LISTS: dict[str, type] = {
    "imports": ImportFact, "attributes": AttributeFact, "classes": ClassFact, "calls": CallFact, "reads": ReadFact,
    "patches": PatchFact, "functions": FunctionFact, "probes": ProbeFact, "source_probes": SourceProbeFact,
    "specs": SpecFact, "flags": FlagFact, "strings": StringsFact, "gates": GateFact, "conditions": ConditionFact,
    "dispatches": DispatchFact, "free_names": FreeNameFact,
    "module_names": ModuleNameFact,
}


# The lists a run reads only for the files it checks (and their bases'), two thirds of a
# record: the other files' are never decoded (incremental.py OUTLINE_FACTS are the rest).
LOCAL_LISTS = ("reads", "calls", "attributes")
# The length of each list's rows (a fact is a positional list of its fields).
_ROW_WIDTH = {name: len(dataclasses.fields(kind)) for name, kind in FACT_LISTS.items()}


def _identity(raw: Any) -> Any:
    return raw


def json_without(value: Any, hint: Any, left_out: type) -> Any:
    """A fact's JSON form with every value of type `left_out` (Position: where code sits) as None."""
    return _encoder(hint, left_out)(value)


def _nothing(raw: Any) -> None:
    return None


@lru_cache(maxsize=None)
def _encoder(hint: Any, left_out: type | None = None) -> Callable[[Any], Any]:
    """A function turning a value of type `hint` into its JSON form (dataclasses as positional
    lists), planned once per type as `_decoder` is; tuples of plain values are JSON arrays as they are."""
    if left_out is not None and hint is left_out:
        return _nothing
    if dataclasses.is_dataclass(hint):
        return _dataclass_encoder(hint, left_out)
    origin = typing.get_origin(hint)
    if origin is tuple:
        return _tuple_encoder(hint, left_out)
    if origin in (typing.Union, types.UnionType):
        return _optional_encoder(hint, left_out)
    return _identity


def _dataclass_encoder(hint: Any, left_out: type | None) -> Callable[[Any], Any]:
    """_encoder of a dataclass: the positional list of its fields' JSON forms."""
    hints = typing.get_type_hints(hint)
    plan = [(f.name, _encoder(hints[f.name], left_out)) for f in dataclasses.fields(hint)]
    if all(encode is _identity for _, encode in plan):
        names = [name for name, _ in plan]
        return lambda value: [getattr(value, name) for name in names]
    return lambda value: [encode(getattr(value, name)) for name, encode in plan]


def _tuple_encoder(hint: Any, left_out: type | None) -> Callable[[Any], Any]:
    """_encoder of a tuple type, of any length (`tuple[T, ...]`) or of fixed items."""
    arguments = typing.get_args(hint)
    if len(arguments) == 2 and arguments[1] is Ellipsis:
        item = _encoder(arguments[0], left_out)
        return _identity if item is _identity else (lambda raw: [item(value) for value in raw])
    items = [_encoder(argument, left_out) for argument in arguments]
    if all(encode is _identity for encode in items):
        return _identity
    return lambda raw: [encode(value) for encode, value in zip(items, raw)]


def _optional_encoder(hint: Any, left_out: type | None) -> Callable[[Any], Any]:
    """_encoder of `T | None`: None as it is, else T's form."""
    option = _encoder(next(a for a in typing.get_args(hint) if a is not type(None)), left_out)
    return _identity if option is _identity else (lambda raw: None if raw is None else option(raw))


# Values that recur across a project's facts, each decoded to one shared object per value (facts
# are never changed once made): sglang's own tree as a project holds 790,000 positions of
# 145,000 distinct values and 290,000 receivers of 64,000 (sharing them saves a fifth of the
# decoded facts' memory).
SHARED = (Position, Receiver)
SHARED_LIMIT = 500_000  # values kept per type; past that the table starts again (a long-lived server)
_shared: dict[Any, dict[tuple, Any]] = {}  # per type (a dataclass, or a tuple type of plain values)


def forget_shared() -> None:
    """Empty the tables of shared values once a project's facts are decoded: the values stay
    shared where they are, and the tables (20 MB for sglang's own tree) are not kept all run
    long; facts decoded later start new ones."""
    for table in _shared.values():
        table.clear()


# Decoders are generated as Python source, one function per dataclass and per tuple type: a
# field is rebuilt inline (an int as it is, a string interned), not through a call per value,
# which was most of what decoding a project's facts cost.
_DECODER = """
def decode(raw):
    {unpack}return {value}
"""
_SHARED_DECODER = """
def decode(raw):
    {unpack}key = {value}
    found = table.get(key)
    if found is None:
        if len(table) >= limit:
            table.clear()
        found = table[key] = make(key)
    return found
"""


@lru_cache(maxsize=None)
def _decoder(hint: Any) -> Callable[[Any], Any]:
    """A function rebuilding a value of type `hint` from its JSON form (`_encoder`'s output),
    generated once per type: the facts of a large project hold hundreds of thousands of values.
    A list of another length than the type's raises ValueError (index._scan then scans again)."""
    if dataclasses.is_dataclass(hint):
        return _dataclass_decoder(hint)
    origin = typing.get_origin(hint)
    if origin is tuple:
        return _tuple_decoder(hint)
    if origin in (typing.Union, types.UnionType):
        option = _decoder(next(a for a in typing.get_args(hint) if a is not type(None)))
        return lambda raw: None if raw is None else option(raw)
    if hint is str:
        # The same names, scopes and types recur across a project's hundreds of thousands of
        # facts: one string object each, not one per fact (a third of the facts' memory).
        return sys.intern
    return _identity


def _dataclass_decoder(hint: Any) -> Callable[[Any], Any]:
    """_decoder of a dataclass: its fields rebuilt inline; one object per value for SHARED types."""
    namespace: dict[str, Any] = {"intern": sys.intern}
    hints = typing.get_type_hints(hint)
    names = [f"v{number}" for number in range(len(dataclasses.fields(hint)))]
    values = ", ".join(_inline(hints[f.name], name, namespace) for f, name in zip(dataclasses.fields(hint), names))
    if hint in SHARED:
        return _generated(_SHARED_DECODER, names, f"({values},)", namespace, lambda key: hint(*key), hint)
    return _generated(_DECODER, names, f"make({values})", namespace, hint)


def _tuple_decoder(hint: Any) -> Callable[[Any], Any]:
    """_decoder of a tuple type, of any length (`tuple[T, ...]`) or of fixed items."""
    namespace: dict[str, Any] = {"intern": sys.intern}
    arguments = typing.get_args(hint)
    if len(arguments) == 2 and arguments[1] is Ellipsis:
        item = _inline(arguments[0], "item", namespace)
        names = []  # any length: the list is read whole
        value = ("tuple(raw)" if item == "item" else "tuple(map(intern, raw))" if item == "intern(item)"
                 else f"tuple([{item} for item in raw])")
    else:
        names = [f"v{number}" for number in range(len(arguments))]
        value = f"({', '.join(_inline(a, name, namespace) for a, name in zip(arguments, names))},)"
    # Tuples of plain values recur too (142,000 attribute chains of 5,900 distinct names, 131,000
    # parameter lists of 23,000 in sglang's tree: 20 MB of its 125 MB of facts).
    if _plain(hint):
        return _generated(_SHARED_DECODER, names, value, namespace, _identity, hint)
    return _generated(_DECODER, names, value, namespace, _identity)


def _inline(hint: Any, name: str, namespace: dict[str, Any]) -> str:
    """An expression rebuilding the value the variable `name` holds, of type `hint`; the
    decoders it calls are put in `namespace`."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        option = _inline(next(a for a in typing.get_args(hint) if a is not type(None)), name, namespace)
        return name if option == name else f"(None if {name} is None else {option})"
    if hint is str:
        return f"intern({name})"
    if dataclasses.is_dataclass(hint) or origin is tuple:
        helper = f"decode_{len(namespace)}"
        namespace[helper] = _decoder(hint)
        return f"{helper}({name})"
    return name


def _generated(template: str, names: list[str], value: str, namespace: dict[str, Any],
               make: Callable[[Any], Any], shared: Any = None) -> Callable[[Any], Any]:
    """The decoder made from `template` (_DECODER, or _SHARED_DECODER with the type whose values
    are `shared`: one object per distinct value, built by `make`)."""
    unpack = f"{', '.join(names)}, = raw\n    " if names else ""
    namespace.update(make=make, table=_shared.setdefault(shared, {}) if shared is not None else None,
                     limit=SHARED_LIMIT)
    exec(template.format(unpack=unpack, value=value), namespace)  # noqa: S102 - source made from our own type hints
    return namespace["decode"]


def _plain(hint: Any) -> bool:
    """A type of strings, numbers and flags only, in tuples: cheap to hash, equal values interchangeable."""
    if typing.get_origin(hint) is tuple:
        return all(argument is Ellipsis or _plain(argument) for argument in typing.get_args(hint))
    return hint in (str, int, bool)


# to_record's form as its cache record is read back (from_json checks each list's rows, and decodes them); a
# blanket `# noqa` is a line's None.
FACTS_RECORD = Table(path=str, module=str, noqa=TableOf((ListOf(str), None)), class_names=ListOf(str),
                     optional={"parse_error": object, "problem": object, "placeless": str},
                     **{name: (str, ListOf(list)) if name in LOCAL_LISTS else ListOf(list) for name in FACT_LISTS})
