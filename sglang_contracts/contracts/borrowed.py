"""Borrowed-method contracts (SGC311-SGC313): upstream methods that run with a project object as `self`.

sglang-omni's `OmniScheduler` does not inherit from `Scheduler`; its `__getattr__` fetches
names from the upstream class and binds them to itself, and it calls
`Scheduler.method(self, ...)` explicitly. Every upstream method reached that way, and every
method those reach through `self.<name>`, reads the project object's attributes. The same
holds for a subclass whose `__init__` never runs the upstream `__init__`: the attributes that
`__init__` would set do not exist.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from typing import Callable, Iterator

from sglang_contracts.contracts.base import CheckContext, Process, Reads, contract, fixes
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
    # Roots of its project bases (their `__init__` calling `self.init_x()` runs for it too):
    # what they reach sets attributes, but they are reported at the base
    inherited_roots: list[Root] = field(default_factory=list)


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
    old, new = resolvers(ctx)
    borrowers = []
    for cls in view.classes.values():
        through_getattr = bool(view.borrow_sources(cls))
        implicit = through_getattr or _skips_base_init(view, old, cls)
        if not cls.facts.calls and not cls.facts.reads:
            # No root of its own can be found (a file a partial run reduced to its outline);
            # the project may still run its upstream methods elsewhere (_add_outside_roots).
            if implicit:
                borrowers.append(Borrower(cls, [], through_getattr))
            continue
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
            origin = (old.model.resolve_class(dotted) or new.model.resolve_class(dotted)) \
                if dotted and is_upstream(dotted) else None
            if origin and origin not in inherited:  # `Base.m(self)` in a subclass is a super() call
                roots.append(Root(cls.facts, call.position, call.scope, name, dotted))
        for read in cls.facts.reads if implicit else ():
            if read.receiver.types == (f"S:{cls.fact.name}",) and not read.receiver.attrs \
                    and read.scope.startswith(prefix) and read.attr not in provided and not read.store:
                # A method new in the target release that the project calls (written for it)
                # is a root too: what it sets is set (sglang-omni 0.1.5's init_load_publisher).
                found = old.upstream_member(cls, read.attr) or new.upstream_member(cls, read.attr)
                if found is not None and found.kind in CALLABLE_KINDS:
                    roots.append(Root(cls.facts, read.position, read.scope, read.attr, None))
        if roots or implicit:
            borrowers.append(Borrower(cls, roots, through_getattr))
    _add_outside_roots(ctx, view, old, new, borrowers)
    borrowers = [borrower for borrower in borrowers if borrower.roots]
    by_class = {id(borrower.cls): borrower for borrower in borrowers}
    for borrower in borrowers:
        for base in view.ancestry(borrower.cls)[0][1:]:
            if id(base) in by_class:
                borrower.inherited_roots += by_class[id(base)].roots
    return borrowers


def _add_outside_roots(ctx: CheckContext, view: ProjectView, old: Resolver, new: Resolver,
                       borrowers: list[Borrower]) -> None:
    """Roots outside the classes' own methods: an upstream method the project runs on one of
    their instances wherever it is (`obj = MyScheduler(...); obj.event_loop_normal()` in an
    entry point, `threading.Thread(target=obj.event_loop_normal)`), for the classes whose
    upstream state nothing but the project sets (a `__getattr__` that borrows, an `__init__`
    copied rather than called). Only names that some such class may borrow are resolved."""
    implicit = {id(b.cls): b for b in borrowers
                if b.through_getattr or _skips_base_init(view, old, b.cls)}
    if not implicit:
        return
    names: set[str] = set()
    for borrower in implicit.values():
        for resolver in (old, new):
            origins = list(resolver.upstream_bases(borrower.cls))
            origins += [o for source in view.borrow_sources(borrower.cls)
                        if (o := resolver.model.resolve_class(source)) is not None]
            names.update(name for origin in origins for name in resolver.model.member_names(origin))
    for facts in ctx.checked_files():
        for read in facts.reads:
            if read.store or read.attr not in names \
                    or not read.receiver.attrs and all(kind.startswith("S:") for kind in read.receiver.types):
                continue  # `self.m` in a method: the class's own roots
            for instance in old.receiver(facts, read.receiver) or ():
                borrower = implicit.get(id(instance.project)) if instance.project is not None else None
                if borrower is None or read.attr in view.provided(borrower.cls):
                    continue
                found = old.upstream_member(borrower.cls, read.attr) or new.upstream_member(borrower.cls, read.attr)
                if found is not None and found.kind in CALLABLE_KINDS:
                    borrower.roots.append(Root(facts, read.position, read.scope or "<module>", read.attr, None))


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
    cost: int = 0  # conditions on the path: the least-guarded path is printed
    readers: set[str] = field(default_factory=set)  # qualnames of the reached methods that read it
    # The next least-guarded path to the reader through another caller: the cheapest path may
    # run only in a mode the project never enters, where this one does
    other: list[str] | None = None


FALSY = frozenset({"c:None", "c:False", "c:0", "c:0.0", "c:''", "c:b''", "empty"})


def project_values(view: ProjectView, cls: ProjectClass) -> dict[str, frozenset[str]]:
    """attribute -> every value the project class and its project bases write to it (tokens of
    `upstream.bodies.value_token`), for the attributes all of whose writes say what they are:
    literals, enum members, empty containers nothing in the project fills, or `self.m()` where
    the class's `m` returns one of those (`initial_disaggregation_mode`)."""
    ancestry = view.ancestry(cls)[0]
    returns: dict[str, str | None] = {}
    for member in reversed(ancestry):  # bases first: the most derived definition wins
        own = dict(member.fact.returns)
        for method in member.fact.methods:
            returns[method.name] = own.get(method.name)
    found: dict[str, set[str]] = {}
    unknown: set[str] = set()
    filled: set[str] = set()
    for member in ancestry:
        values = dict(member.fact.values)
        for name in member.fact.provided:
            if name not in values and name not in {m.name for m in member.fact.methods}:
                unknown.add(name)  # set in a way the facts do not spell out
        for name, tokens in values.items():
            for token in tokens:
                if token == "filled":
                    filled.add(name)
                    continue
                if token.startswith("m:"):
                    token = returns.get(token[2:]) or ""
                if not token:
                    unknown.add(name)
                found.setdefault(name, set()).add(token)
    unknown |= {name for name in filled if "empty" in found.get(name, ())}
    return {name: frozenset(tokens) for name, tokens in found.items() if name not in unknown and tokens}


def _literal(token: str):
    import ast

    return ast.literal_eval(token[2:])


def _distinct(token: str, other: str) -> bool:
    """Are two value tokens surely different values?"""
    if token.startswith("c:") and other.startswith("c:"):
        return _literal(token) != _literal(other)
    if token.startswith("e:") and other.startswith("e:"):
        return token.rpartition(".")[0] == other.rpartition(".")[0] and token != other
    return {token[:2], other[:2]} == {"em", "c:"}  # an empty container is no literal


def cannot_hold(condition: list[str], values: dict[str, frozenset[str]]) -> bool:
    """Is a branch condition ([attribute, test, value], upstream.bodies.branch_conditions)
    false for every value the project writes?"""
    name, test, argument = condition
    tokens = values.get(name)
    if not tokens:
        return False
    if test == "truthy":
        return tokens <= FALSY
    if test == "falsy":
        return all(t.startswith("c:") and t not in FALSY for t in tokens)
    if test == "none":
        return "c:None" not in tokens
    if test == "notnone":
        return tokens == {"c:None"}
    options = argument.split("|")
    if test in ("eq", "in"):
        return all(_distinct(t, option) for t in tokens for option in options)
    if test == "ne":
        return tokens == {argument}
    if test == "notin":
        return all(any(t == option for option in options) for t in tokens)
    return False


def _guard_holds(guard: list[str] | None, values: dict[str, frozenset[str]]) -> bool:
    """A method that opens with `if self.x is None: return` (`if not self.x`) returns at once."""
    if not guard:
        return False
    name, kind = guard
    tokens = values.get(name)
    return bool(tokens) and (tokens == {"c:None"} if kind == "none" else tokens <= FALSY)


def _place_cost(record: dict, name: str, values: dict[str, frozenset[str]]) -> int | None:
    """None when every place the body reads (or, for "=x", sets) `name` sits behind a condition
    the project's values make false; else the fewest conditions in front of a live place."""
    places = record.get("gated", {}).get(name)
    if places is None:
        return 0
    live = [len(place) for place in places if not any(cannot_hold(c, values) for c in place)]
    return min(live) if live else None


def _reached(resolver: Resolver, borrower: Borrower, root: Root, provided: set[str],
             values: dict[str, frozenset[str]], stand_ins: dict[str, frozenset[str]] | None = None,
             lacks: dict | None = None, entered: list[tuple[Member, list[str]]] | None = None,
             ) -> tuple[dict[str, Needed], set[str], set[str], set[str]]:
    """What one root of a borrower reaches (see `reach`)."""
    return reach(resolver, lambda name: resolver.upstream_member(borrower.cls, name),
                 root_member(resolver, borrower, root), root, provided, values, stand_ins, lacks, entered)


def reach(resolver: Resolver, lookup: Callable[[str], Member | None], first: Member | None, root: Root,
          provided: set[str], values: dict[str, frozenset[str]], stand_ins: dict[str, frozenset[str]] | None = None,
          lacks: dict | None = None, entered: list[tuple[Member, list[str]]] | None = None,
          ) -> tuple[dict[str, Needed], set[str], set[str], set[str]]:
    """(attributes read from `self`, attributes set, attributes set at all, attributes filled
    or handed on) by the upstream methods reached from `first` (called at `root`), following
    `self.<method>` transitively (`lookup` finds what `self.<name>` is upstream), least-guarded
    paths first. A branch whose condition the project's values make false is not entered; a
    method whose opening guard holds returns at once. `entered`, if given, collects each method
    entered with the path that reaches it."""
    counter = itertools.count()
    queue: list = [(0, 0, next(counter), first, [root.scope, first.qualname])] if first else []
    visited: set[tuple[str, str]] = set()
    callers: dict[str, str] = {}  # method -> the caller the cheapest path reached it from
    others: dict[str, list[str]] = {}  # method -> the cheapest path to it from another caller
    reads: dict[str, Needed] = {}
    writes: set[str] = set()
    assigned: set[str] = set()
    filled: set[str] = set()
    while queue:
        cost, _, _, member, path = heapq.heappop(queue)
        if (member.owner, member.name) in visited:
            if path[-2] != callers.get(member.qualname):
                others.setdefault(member.qualname, path)
            continue
        if _guard_holds(member.record.get("guard"), values):
            continue
        visited.add((member.owner, member.name))
        callers[member.qualname] = path[-2]
        if entered is not None:
            entered.append((member, path))
        record = member.record
        live_writes = {name for name in record.get("writes", []) if _place_cost(record, f"={name}", values) is not None}
        # A method that reads an attribute before it first sets it never gets to set it when
        # nothing else did: `prev = self._prev_end; self._prev_end = now` fails on its first run.
        writes.update(live_writes - set(record.get("read_first", [])))
        assigned.update(live_writes)
        filled.update(record.get("mutates", []))
        for name, members in record.get("members", {}).items() if stand_ins else ():
            if name in stand_ins \
                    and _place_cost(record, name, values) is not None:
                for missing in sorted(set(members) - stand_ins[name]):
                    lacks.setdefault((name, missing), (path, root))
        sources = [(record.get("reads", []), path, record)]
        sources += [(wrapper.get("wrapper_reads", []), path + [f"@{name}"], {})
                    for name, wrapper in _decorators(resolver, member)]
        for attrs, where, owner_record in sources:
            for attr in attrs:
                if attr in provided:
                    continue  # the project's own attribute or override
                step = _place_cost(owner_record, attr, values)
                if step is None:
                    continue  # only behind conditions that cannot hold for the project
                target = lookup(attr)
                if target is not None and target.kind in CALLABLE_KINDS:
                    heapq.heappush(queue, (cost + step, len(where), next(counter), target, where + [target.qualname]))
                elif target is None or target.kind in ("instance", "field"):
                    need = reads.get(attr)
                    if need is None or (cost + step, len(where)) < (need.cost, len(need.path)):
                        readers = need.readers if need else set()
                        need = reads[attr] = Needed(where, root, cost + step, readers)
                    need.readers.add(member.qualname if where is path else where[-1])
    for need in reads.values():
        need.other = others.get(need.path[-1])
    return reads, writes, assigned, filled


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
    """`_needed_by_root`, once per release and borrower (SGC312 and SGC313 both ask)."""
    key = (id(resolver), id(borrower))
    memo = resolver.view.ctx.memo.setdefault("needed-by-root", {})
    if key not in memo:
        memo[key] = (borrower, _needed_by_root(view, resolver, borrower))  # the borrower kept: ids stay unique
    return memo[key][1]


def _needed_by_root(view: ProjectView, resolver: Resolver, borrower: Borrower) -> list[dict[str, Needed]]:
    """For each of the borrower's roots, the attributes read from `self` by the upstream
    methods it reaches that neither the project nor the class-level upstream members provide,
    nor a method reached from any root sets. A branch is not entered while its condition is
    false for every value the project writes and no method reached sets (or fills) the
    attribute tested."""
    _, _, settled = _settled(view, resolver, borrower)
    own = settled[:len(borrower.roots)]
    return [reads for reads, _, _, _ in own]


def _settled(view: ProjectView, resolver: Resolver, borrower: Borrower) -> tuple[set[str], dict[str, frozenset[str]], list]:
    """(what the class provides, its values once settled, what each root reaches: `_settle`),
    once per release and borrower (SGC312, SGC313 and SGC314 all ask)."""
    key = (id(resolver), id(borrower))
    memo = resolver.view.ctx.memo.setdefault("settled", {})
    if key not in memo:
        provided, values = _provided_and_values(view, borrower.cls)
        memo[key] = (borrower, provided, values, _settle(resolver, borrower, provided, values))  # the borrower kept: ids stay unique
    return memo[key][1:]


def _provided_and_values(view: ProjectView, cls: ProjectClass) -> tuple[set[str], dict[str, frozenset[str]]]:
    provided = set(view.provided(cls))
    for member in view.ancestry(cls)[0]:
        provided.update(member.fact.getattr_names)
    return provided, dict(project_values(view, cls))


def _settle(resolver: Resolver, borrower: Borrower, provided: set[str], values: dict[str, frozenset[str]]) -> list:
    """What every root reaches, once the values that reached code sets or fills are dropped
    from `values` (in place): the branches on them may run."""
    while True:
        reached = [_reached(resolver, borrower, root, provided, values)
                   for root in borrower.roots + borrower.inherited_roots]
        writes = set().union(*(root_writes for _, root_writes, _, _ in reached))
        assigned = set().union(*(root_assigned for _, _, root_assigned, _ in reached))
        filled = set().union(*(root_filled for _, _, _, root_filled in reached))
        broken = {name for name, tokens in values.items()
                  if name in assigned or name in filled and "empty" in tokens}
        if not broken:
            return [({attr: need for attr, need in reads.items() if attr not in writes}, w, a, f)
                    for reads, w, a, f in reached]
        for name in broken:  # reached code sets it after all: the branches on it may run
            del values[name]


@contract("SGC311", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
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


def upstream_setter(resolver: Resolver, borrower: Borrower, attr: str) -> tuple[str, str] | None:
    """(`Class.method`, value as written) of the upstream method that sets `attr` on the class
    the borrower stands in for: `__init__` first, else the first method in lookup order."""
    origins = list(resolver.upstream_bases(borrower.cls))
    origins += [o for source in resolver.view.borrow_sources(borrower.cls)
                if (o := resolver.model.resolve_class(source)) is not None]
    found = None
    for origin in origins:
        for owner in resolver.model.mro(origin)[0]:
            record = resolver.model.class_record(owner) or {}
            for name, method in record.get("methods", {}).items():
                value = method.get("assigns", {}).get(attr)
                if value is not None and (found is None or name == "__init__"):
                    found = (f"{owner.rsplit('.', 1)[-1]}.{name}", value)
                    if name == "__init__":
                        return found
    return found


@contract("SGC312", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def borrowed_code_reads_new_attribute(ctx: CheckContext) -> Iterator[Diagnostic]:
    view = project_view(ctx)
    old, new = resolvers(ctx)
    for borrower in borrowers(ctx):
        # Per root: an attribute that old code read on some path (one that never ran, say a
        # disaggregation mode) is still news on a path that did not read it.
        before = needed_by_root(view, old, borrower)
        # Methods that on the old release already read an attribute the class never set: a
        # path through one raised there before, so it could not have run (a warning, not news).
        raised_before: dict[str, str] = {}
        for was in before:
            for missing, need in was.items():
                for reader in need.readers:
                    raised_before.setdefault(reader, missing)
        reported: set[str] = set()
        # One finding per fix: the attributes one upstream method (an `init_*` helper, not
        # `__init__`) sets together are reported once, at the first place that needs any.
        groups: dict[str, list[tuple[str, Needed, tuple[str, str] | None]]] = {}
        # Every root's path to each new read: a later root may reach it on a path that runs where
        # the first root's does not (sglang-omni's own _add_request_to_queue override)
        elsewhere: dict[str, list[Needed]] = {}
        for was, now in zip(before, needed_by_root(view, new, borrower)):
            for attr, need in sorted(now.items()):
                if attr in was:
                    continue
                elsewhere.setdefault(attr, []).append(need)
                if attr in reported:
                    continue
                reported.add(attr)
                setter = upstream_setter(new, borrower, attr)
                # `__init__` sets everything: calling it is no fix, each attribute is its own
                together = setter is not None and not setter[0].endswith(".__init__")
                groups.setdefault(setter[0] if together else f"?{attr}", []).append((attr, need, setter))
        for members in groups.values():
            attr, need, _ = members[0]
            names = [f"self.{name}" for name, _, _ in members]
            listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"
            path = " -> ".join(need.path + [f"reads self.{attr}"])
            other = min((n for n in elsewhere[attr][1:] if n.root.scope != need.root.scope),
                        key=lambda n: (n.cost, len(n.path)), default=None)
            other_path = other.path if other is not None else need.other
            if other_path:
                path += f" (also through {' -> '.join(other_path)})"
            sets = [f"{name} = {setter[1]}" for name, _, setter in members if setter]
            where = f"; upstream {members[0][2][0]} sets {', '.join(sets)}" if sets else ""
            stale = next((m for m in need.path[1:] if m in raised_before), None)
            note = (f" (in sglang {ctx.old_version} {stale} already read self.{raised_before[stale]}, which "
                    f"{borrower.cls.fact.name} never sets: this path could not run before either)") if stale else ""
            yield finding("SGC312", need.root.facts, need.root.position, f"{borrower.cls.key}.{attr}",
                          severity="warning" if stale else None,
                          cls=borrower.cls.fact.name, attr=attr, attrs=listed, call_path=path, setter=where,
                          note=note, old=ctx.old_version, new=ctx.new_version,
                          values={name: setter[1] if setter else None for name, _, setter in members},
                          class_path=borrower.cls.facts.path, class_line=borrower.cls.fact.position.line)


@fixes("SGC312")
def set_in_init(diagnostic: Diagnostic, workspace) -> bool:
    """Set each attribute in the class's `__init__` (after its last `self.x = ...` line) to the
    value upstream gives it, when that is a literal or an empty container; others are left."""
    from sglang_contracts.fix import python as python_edits  # libcst: only a fix run pays its import

    document = workspace.document(diagnostic.data["class_path"])
    if not document.python:
        return False
    settable, left = {}, []
    for attr, value in diagnostic.data["values"].items():
        spelled = python_edits.plain_value(value, document) if value else None
        if spelled is None:
            left.append(f"self.{attr}" + (f" (upstream: {value})" if value else ""))
        else:
            settable[attr] = spelled
    if left:
        document.note(diagnostic.line, diagnostic.col, "SGC312", f"{', '.join(left)}: not a literal or an empty "
                      "container upstream; set it by hand")
    if not settable:
        return False
    return python_edits.set_in_init(document, diagnostic.data["cls"], diagnostic.data["class_line"], settable)


def _small_class_members(view: ProjectView, facts: FileFacts, types: tuple[str, ...]) -> tuple[frozenset[str], str] | None:
    """(members, name) when every type alternative is one project class whose whole ancestry is
    the project's own, spelled out: no upstream or third-party base, no `__getattr__`."""
    names = {kind[2:] for kind in types if kind[:2] in ("R:", "T:")}
    if len(names) != 1 or len(types) != 1:
        return None
    cls = view.project_class(view.dotted(facts, names.pop()))
    if cls is None:
        return None
    chain, upstream = view.ancestry(cls)
    for member in chain:
        if member.fact.getattr_sources or member.fact.getattr_names \
                or {"__getattr__", "__getattribute__"} & {m.name for m in member.fact.methods}:
            return None
        if len(member.fact.bases) != sum(view.project_class(view.dotted(member.facts, b)) is not None
                                         for b in member.fact.bases if b != "object") + ("object" in member.fact.bases):
            return None  # a base outside the project (MagicMock, a third-party class) may hold anything
    if upstream:
        return None
    return view.provided(cls), cls.fact.name


def stand_ins(view: ProjectView, cls: ProjectClass) -> dict[str, tuple[frozenset[str], str]]:
    """attribute -> (members, what builds it), for what the class and its project bases only
    ever build as `SimpleNamespace(member=...)`, or as an instance of one small project class
    (a fake queue with two methods): a stand-in has the members it was built with."""
    found: dict[str, set[str]] = {}
    label: dict[str, str] = {}
    other: set[str] = set()
    for member in view.ancestry(cls)[0]:
        built = dict(member.fact.namespaces)
        typed = dict(member.fact.attr_types)
        for name in member.fact.provided:
            if name in built:
                found.setdefault(name, set()).update(built[name])
                label.setdefault(name, "SimpleNamespace")
            elif name in typed and (small := _small_class_members(view, member.facts, typed[name])) is not None \
                    and label.get(name, small[1]) == small[1]:
                found.setdefault(name, set()).update(small[0])
                label[name] = small[1]
            else:
                other.add(name)
    return {name: (frozenset(members), label[name]) for name, members in found.items() if name not in other}


def _lacking(view: ProjectView, resolver: Resolver, borrower: Borrower,
             built: dict[str, tuple[frozenset[str], str]]) -> dict:
    provided, values, _ = _settled(view, resolver, borrower)
    lacks: dict = {}
    # The bases' roots too: a subclass builds the stand-in that a base's method hands upstream
    # (sglang-omni's OmniDecodeScheduler, PDKVLifecycle.is_fully_idle)
    for root in borrower.roots + borrower.inherited_roots:
        _reached(resolver, borrower, root, provided, values, {name: members for name, (members, _) in built.items()}, lacks)
    return lacks


@contract("SGC314", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def borrowed_code_needs_stand_in_member(ctx: CheckContext) -> Iterator[Diagnostic]:
    view = project_view(ctx)
    old, new = resolvers(ctx)
    seen: set = set()  # a base's root and its subclass's stand-in, met from both classes: once
    for borrower in borrowers(ctx):
        built = stand_ins(view, borrower.cls)
        if not built:
            continue
        was = _lacking(view, old, borrower, built)
        for (name, member), (path, root) in sorted(_lacking(view, new, borrower, built).items()):
            key = (root.facts.path, root.position, name, member)
            if (name, member) in was or key in seen:
                continue
            seen.add(key)
            yield finding("SGC314", root.facts, root.position, f"{borrower.cls.key}.{name}.{member}",
                          cls=borrower.cls.fact.name, attr=name, member=member,
                          members=", ".join(sorted(built[name][0])) or "none", stand_in=built[name][1],
                          call_path=" -> ".join(path + [f"reads self.{name}.{member}"]),
                          old=ctx.old_version, new=ctx.new_version)


@contract("SGC313", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def borrowed_method_body_changed(ctx: CheckContext) -> Iterator[Diagnostic]:
    view = project_view(ctx)
    old, new = resolvers(ctx)
    for borrower in borrowers(ctx):
        reported: set[str] = set()
        before, after = needed_by_root(view, old, borrower), needed_by_root(view, new, borrower)
        for index, root in enumerate(borrower.roots):
            if root.via is None and not borrower.through_getattr:
                continue  # an ordinary subclass's inherited method: SGC303 covers its overrides
            was, now = root_member(old, borrower, root), root_member(new, borrower, root)
            if was is None or now is None or now.qualname in reported:
                continue
            change = body_change(ctx.old, was, ctx.new, now)
            if change:
                reported.add(now.qualname)
                # The change matters for sure when the call now reaches a read the class
                # cannot answer: it raises (the attribute's own finding is SGC312's).
                news = sorted(attr for attr in after[index] if attr not in before[index])
                raises = ""
                if news:
                    need = after[index][news[0]]
                    raises = (f"; the call now reaches a read of self.{news[0]}, which {borrower.cls.fact.name} "
                              f"never sets, so it raises AttributeError: {' -> '.join(need.path)}")
                yield finding("SGC313", root.facts, root.position, f"{now.owner}.{root.name}",
                              severity="error" if news else None,
                              cls=borrower.cls.fact.name, upstream=now.qualname, changed=change[0],
                              total=change[1], old=ctx.old_version, new=ctx.new_version,
                              diff=body_preview(ctx, was, now), raises=raises)
