"""Borrowed-method contracts (SGC311-SGC313): upstream methods that run with a project object as `self`.

sglang-omni's `OmniScheduler` does not inherit from `Scheduler`; its `__getattr__` fetches
names from the upstream class and binds them to itself, and it calls
`Scheduler.method(self, ...)` explicitly. Every upstream method reached that way, and every
method those reach through `self.<name>`, reads the project object's attributes. The same
holds for a subclass whose `__init__` never runs the upstream `__init__`: the attributes that
`__init__` would set do not exist.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Iterator

from sglang_contracts.contracts.base import CheckContext, contract
from sglang_contracts.contracts.resolve import ProjectClass, ProjectView, Resolver, project_view, resolvers
from sglang_contracts.contracts.subclasses import body_change, body_preview
from sglang_contracts.diagnostics import Diagnostic, finding
from sglang_contracts.project.facts import FileFacts, Position
from sglang_contracts.upstream.model import Member, is_upstream

CALLABLE_KINDS = ("method", "property")


@dataclass(frozen=True)
class Root:
    """A place in the project that hands an upstream method the project's object as `self`."""

    facts: FileFacts
    position: Position
    scope: str  # the project method where it happens, e.g. "OmniScheduler.run_batch"
    name: str  # the upstream method's name
    via: str | None  # the upstream class named explicitly (`Scheduler.m(self, ...)`); None: through self


@dataclass
class Borrower:
    cls: ProjectClass
    roots: list[Root]
    through_getattr: bool


def _skips_base_init(view: ProjectView, resolver: Resolver, cls: ProjectClass) -> bool:
    """A subclass of an upstream class whose nearest `__init__` never calls its base's."""
    if not resolver.upstream_bases(cls):
        return False
    for member in view.ancestry(cls)[0]:
        if member.fact.init_calls_base is not None:
            return not member.fact.init_calls_base
    return False


def _borrowers(ctx: CheckContext) -> list[Borrower]:
    view = project_view(ctx)
    old, _ = resolvers(ctx)
    borrowers = []
    for cls in view.classes.values():
        through_getattr = bool(view.borrow_sources(cls))
        implicit = through_getattr or _skips_base_init(view, old, cls)
        roots = []
        provided = view.provided(cls)
        # Roots are taken from the class's own methods: a subclass inherits its bases' roots,
        # and reporting them again for every subclass would repeat one finding.
        prefix = f"{cls.fact.name}."
        inherited = {owner for base in old.upstream_bases(cls) for owner in old.model.mro(base)[0]}
        for call in cls.facts.calls:
            kind = call.callee.types[0]
            if not call.scope.startswith(prefix) or not kind.startswith("C:") or not call.args \
                    or call.args[0].kind != "pos" or call.args[0].name != "self":
                continue
            owner, _, name = kind[2:].rpartition(".")
            dotted = view.dotted(cls.facts, owner) if owner else None
            origin = old.model.resolve_class(dotted) if dotted and is_upstream(dotted) else None
            if origin and origin not in inherited:  # `Base.m(self)` in a subclass is a super() call
                roots.append(Root(cls.facts, call.position, call.scope, name, dotted))
        for read in cls.facts.reads if implicit else ():
            if read.receiver.types == (f"S:{cls.fact.name}",) and not read.receiver.attrs \
                    and read.scope.startswith(prefix) and read.attr not in provided and not read.store:
                found = old.upstream_member(cls, read.attr)
                if found is not None and found.kind in CALLABLE_KINDS:
                    roots.append(Root(cls.facts, read.position, read.scope, read.attr, None))
        if roots:
            borrowers.append(Borrower(cls, roots, through_getattr))
    return borrowers


def borrowers(ctx: CheckContext) -> list[Borrower]:
    return ctx.shared("borrowers", _borrowers)


def root_member(resolver: Resolver, borrower: Borrower, root: Root) -> Member | None:
    if root.via is not None:
        origin = resolver.model.resolve_class(root.via)
        member = resolver.model.member(origin, root.name) if origin else None
    else:
        member = resolver.upstream_member(borrower.cls, root.name)
    return member if member is not None and member.kind in CALLABLE_KINDS else None


@dataclass
class Needed:
    """An attribute that reachable upstream code reads from the project's object."""

    path: list[str]
    root: Root


def _constant_only(view: ProjectView, cls: ProjectClass) -> set[tuple[str, str]]:
    """(attribute, "none") for what the project class and its project bases only ever set to
    None, (attribute, "falsy") for what they only ever set to None or another falsy constant."""
    ancestry = view.ancestry(cls)[0]
    found = set()
    for kind, field_name in (("none", "none_only"), ("falsy", "falsy_only")):
        candidates = {name for member in ancestry for name in getattr(member.fact, field_name)}
        found |= {(name, kind) for name in candidates
                  if all(name in getattr(member.fact, field_name) or name not in member.fact.provided
                         for member in ancestry)}
    return found


def _reached(resolver: Resolver, borrower: Borrower, root: Root, provided: set[str],
             holding: set[tuple[str, str]],
             entered: list[tuple[Member, list[str]]] | None = None) -> tuple[dict[str, Needed], set[str]]:
    """(attributes read from `self`, attributes set) by the upstream methods one root reaches,
    following `self.<method>` transitively. A method whose guard `holding` says is met (an
    attribute that is always None, or always falsy) returns at once: it is not entered.
    `entered`, if given, collects each method entered with the path that reaches it."""
    cls = borrower.cls
    first = root_member(resolver, borrower, root)
    queue: deque[tuple[Member, list[str]]] = deque([(first, [root.scope, first.qualname])] if first else [])
    visited: set[tuple[str, str]] = set()
    reads: dict[str, Needed] = {}
    writes: set[str] = set()
    while queue:
        member, path = queue.popleft()
        if (member.owner, member.name) in visited or tuple(member.record.get("guard") or ()) in holding:
            continue
        visited.add((member.owner, member.name))
        if entered is not None:
            entered.append((member, path))
        # A method that reads an attribute before it first sets it never gets to set it when
        # nothing else did: `prev = self._prev_end; self._prev_end = now` fails on its first run.
        writes.update(set(member.record.get("writes", [])) - set(member.record.get("read_first", [])))
        sources = [(member.record.get("reads", []), path)]
        sources += [(record.get("wrapper_reads", []), path + [f"@{name}"])
                    for name, record in _decorators(resolver, member)]
        for attrs, where in sources:
            for attr in attrs:
                if attr in provided:
                    continue  # the project's own attribute or override
                target = resolver.upstream_member(cls, attr)
                if target is not None and target.kind in CALLABLE_KINDS:
                    queue.append((target, where + [target.qualname]))
                elif target is None or target.kind in ("instance", "field"):
                    reads.setdefault(attr, Needed(where, root))
    return reads, writes


def _decorators(resolver: Resolver, member: Member) -> list[tuple[str, dict]]:
    """(name, function record) of the method's decorators that are upstream functions of its
    module's namespace: their wrappers run with the same `self`."""
    module = member.owner.rpartition(".")[0]
    found = []
    for name in member.record.get("decorators", []):
        symbol = resolver.model.resolve_name(module, name)
        record = resolver.model.function_record(symbol.origin) if symbol.found and symbol.kind == "function" else None
        if record is not None:
            found.append((name, record))
    return found


def needed_by_root(view: ProjectView, resolver: Resolver, borrower: Borrower) -> list[dict[str, Needed]]:
    """For each of the borrower's roots, the attributes read from `self` by the upstream
    methods it reaches that neither the project nor the class-level upstream members provide,
    nor a method reached from any root sets. A method guarded by `if self.x is None: return`
    is not entered while the project only ever sets `x` to None and no method reached without
    it sets `x` either (`if not self.x`: to None or another falsy constant)."""
    cls = borrower.cls
    provided = set(view.provided(cls))
    for member in view.ancestry(cls)[0]:
        provided.update(member.fact.getattr_names)
    holding = _constant_only(view, cls)
    while True:
        reached = [_reached(resolver, borrower, root, provided, holding) for root in borrower.roots]
        writes = set().union(*(root_writes for _, root_writes in reached))
        broken = {guard for guard in holding if guard[0] in writes}
        if not broken:
            return [{attr: need for attr, need in reads.items() if attr not in writes} for reads, _ in reached]
        holding -= broken  # reached code sets it after all: the guarded methods may run


@contract("SGC311")
def borrowed_method_removed(ctx: CheckContext) -> Iterator[Diagnostic]:
    old, new = resolvers(ctx)
    for borrower in borrowers(ctx):
        for root in borrower.roots:
            if root.via is None and not borrower.through_getattr:
                continue  # an inherited method read on self: an attribute read (SGC321)
            was = root_member(old, borrower, root)
            if was is not None and root_member(new, borrower, root) is None \
                    and new.upstream_member(borrower.cls, root.name) is None:
                yield finding("SGC311", root.facts, root.position, f"{was.owner}.{root.name}",
                              cls=borrower.cls.fact.name, upstream=was.qualname, scope=root.scope,
                              old=ctx.old_version, new=ctx.new_version)


@contract("SGC312")
def borrowed_code_reads_new_attribute(ctx: CheckContext) -> Iterator[Diagnostic]:
    view = project_view(ctx)
    old, new = resolvers(ctx)
    for borrower in borrowers(ctx):
        # Per root: an attribute that old code read on some path (one that never ran, say a
        # disaggregation mode) is still news on a path that did not read it.
        before = needed_by_root(view, old, borrower)
        reported: set[str] = set()
        for was, now in zip(before, needed_by_root(view, new, borrower)):
            for attr, need in sorted(now.items()):
                if attr in was or attr in reported:
                    continue
                reported.add(attr)
                path = " -> ".join(need.path + [f"reads self.{attr}"])
                yield finding("SGC312", need.root.facts, need.root.position, f"{borrower.cls.key}.{attr}",
                              cls=borrower.cls.fact.name, attr=attr, call_path=path,
                              old=ctx.old_version, new=ctx.new_version)


@contract("SGC313")
def borrowed_method_body_changed(ctx: CheckContext) -> Iterator[Diagnostic]:
    old, new = resolvers(ctx)
    for borrower in borrowers(ctx):
        reported: set[str] = set()
        for root in borrower.roots:
            if root.via is None and not borrower.through_getattr:
                continue  # an ordinary subclass's inherited method: SGC303 covers its overrides
            was, now = root_member(old, borrower, root), root_member(new, borrower, root)
            if was is None or now is None or now.qualname in reported:
                continue
            change = body_change(was, now)
            if change:
                reported.add(now.qualname)
                yield finding("SGC313", root.facts, root.position, f"{now.owner}.{root.name}",
                              cls=borrower.cls.fact.name, upstream=now.qualname, changed=change[0],
                              total=change[1], old=ctx.old_version, new=ctx.new_version,
                              diff=body_preview(ctx, was, now))
