"""Upstream methods that run with a project object as `self` (the borrowed-method rules,
contracts/borrowed.py, and what callers reach, analysis/callers.py): which project classes
borrow them and where (Borrower, Root), and what the upstream code reached from there reads
of the object, under which conditions (reach, needed_by_root).

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
from typing import TYPE_CHECKING, Callable, Iterable

from sglang_contracts.analysis.resolve import ProjectClass, ProjectView, Resolver, project_view, resolvers
from sglang_contracts.project.facts import CallFact, ClassFact, FileFacts, Position, ReadFact
from sglang_contracts.upstream.model import Member, is_upstream

if TYPE_CHECKING:
    from sglang_contracts.contracts.base import CheckContext

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


def skips_base_init(view: ProjectView, resolver: Resolver, cls: ProjectClass) -> bool:
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
        borrower = _borrower(view, old, new, cls)
        if borrower is not None:
            borrowers.append(borrower)
    _add_outside_roots(ctx, view, old, new, borrowers)
    borrowers = [borrower for borrower in borrowers if borrower.roots]
    _add_inherited_roots(view, borrowers)
    return borrowers


def _borrower(view: ProjectView, old: Resolver, new: Resolver, cls: ProjectClass) -> Borrower | None:
    """The class as a borrower, with the roots in its own methods; None when it borrows nothing."""
    through_getattr = bool(view.borrow_sources(cls))
    implicit = through_getattr or skips_base_init(view, old, cls)
    if not cls.facts.calls and not cls.facts.reads:
        # No root of its own can be found (a file a partial run reduced to its outline);
        # the project may still run its upstream methods elsewhere (_add_outside_roots).
        return Borrower(cls, [], through_getattr) if implicit else None
    # Roots are taken from the class's own methods: a subclass inherits its bases' roots,
    # and reporting them again for every subclass would repeat one finding.
    prefix = f"{cls.fact.name}."
    roots = _explicit_roots(view, old, new, cls, prefix)
    if implicit:
        roots += _roots_through_self(old, new, cls, prefix, view.provided(cls))
    return Borrower(cls, roots, through_getattr) if roots or implicit else None


def _explicit_roots(view: ProjectView, old: Resolver, new: Resolver, cls: ProjectClass, prefix: str) -> list[Root]:
    """`Upstream.m(self, ...)` in the class's own methods (`prefix`), for an upstream class it
    does not inherit from: `Base.m(self)` in a subclass is a super() call."""
    inherited = {owner for base in old.upstream_bases(cls) for owner in old.model.mro(base)[0]}
    roots = []
    for call in cls.facts.in_class(cls.fact.name, "calls"):
        kind = call.callee.types[0]
        if not _hands_self(call, prefix, kind):
            continue
        owner, _, name = kind[2:].rpartition(".")
        dotted = view.dotted(cls.facts, owner) if owner else None
        origin = _upstream_class(old, new, dotted)
        if origin and origin not in inherited:
            roots.append(Root(cls.facts, call.position, call.scope, name, dotted))
    return roots


def _hands_self(call: CallFact, prefix: str, kind: str) -> bool:
    """A call in the class's own methods (`prefix`) of a class's function (`kind` "C:..."), with `self` first."""
    return call.scope.startswith(prefix) and kind.startswith("C:") and bool(call.args) \
        and call.args[0].kind == "pos" and call.args[0].name == "self"


def _upstream_class(old: Resolver, new: Resolver, dotted: str | None) -> str | None:
    """The upstream class `dotted` names, in the old release or else the new."""
    if not dotted or not is_upstream(dotted):
        return None
    return old.model.resolve_class(dotted) or new.model.resolve_class(dotted)


def _roots_through_self(old: Resolver, new: Resolver, cls: ProjectClass, prefix: str,
                        provided: frozenset[str]) -> list[Root]:
    """`self.m` in the class's own methods (`prefix`) for an upstream method or property the
    project does not provide."""
    roots = []
    for read in cls.facts.in_class(cls.fact.name, "reads"):
        if read.receiver.types == (f"S:{cls.fact.name}",) and not read.receiver.attrs \
                and read.scope.startswith(prefix) and read.attr not in provided and not read.store:
            # A method new in the target release that the project calls (written for it)
            # is a root too: what it sets is set (sglang-omni 0.1.5's init_load_publisher).
            found = old.upstream_member(cls, read.attr) or new.upstream_member(cls, read.attr)
            if found is not None and found.kind in CALLABLE_KINDS:
                roots.append(Root(cls.facts, read.position, read.scope, read.attr, None))
    return roots


def _add_inherited_roots(view: ProjectView, borrowers: list[Borrower]) -> None:
    """Each borrower's inherited_roots: the roots of its project bases that borrow too."""
    by_class = {id(borrower.cls): borrower for borrower in borrowers}
    for borrower in borrowers:
        for base in view.ancestry(borrower.cls)[0][1:]:
            if id(base) in by_class:
                borrower.inherited_roots += by_class[id(base)].roots


def _add_outside_roots(ctx: CheckContext, view: ProjectView, old: Resolver, new: Resolver,
                       borrowers: list[Borrower]) -> None:
    """Roots outside the classes' own methods: an upstream method the project runs on one of
    their instances wherever it is (`obj = MyScheduler(...); obj.event_loop_normal()` in an
    entry point, `threading.Thread(target=obj.event_loop_normal)`), for the classes whose
    upstream state nothing but the project sets (a `__getattr__` that borrows, an `__init__`
    copied rather than called). Only names that some such class may borrow are resolved."""
    implicit = _implicit_borrowers(view, old, borrowers)
    if not implicit:
        return
    names = _borrowable_names(view, old, new, implicit.values())
    for facts in ctx.checked_files():
        for read in facts.reads:
            if read.store or read.attr not in names \
                    or not read.receiver.attrs and all(kind.startswith("S:") for kind in read.receiver.types):
                continue  # `self.m` in a method: the class's own roots
            _add_roots_of_read(view, old, new, implicit, facts, read)


def _implicit_borrowers(view: ProjectView, old: Resolver, borrowers: list[Borrower]) -> dict[int, Borrower]:
    """id(class) -> borrower, for the borrowers whose upstream state nothing but the project sets."""
    return {id(b.cls): b for b in borrowers
            if b.through_getattr or skips_base_init(view, old, b.cls)}


def _borrowable_names(view: ProjectView, old: Resolver, new: Resolver, borrowers: Iterable[Borrower]) -> set[str]:
    """The names of the upstream members the borrowers may borrow, in either release."""
    names: set[str] = set()
    for borrower in borrowers:
        for resolver in (old, new):
            origins = list(resolver.upstream_bases(borrower.cls))
            origins += [o for source in view.borrow_sources(borrower.cls)
                        if (o := resolver.model.resolve_class(source)) is not None]
            names.update(name for origin in origins for name in resolver.model.member_names(origin))
    return names


def _add_roots_of_read(view: ProjectView, old: Resolver, new: Resolver, implicit: dict[int, Borrower],
                       facts: FileFacts, read: ReadFact) -> None:
    """A root for each implicit borrower whose instance the read's receiver may be, where the
    attribute read is an upstream method or property the project does not provide."""
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
    returns = _method_returns(ancestry)
    found: dict[str, set[str]] = {}
    unknown: set[str] = set()
    filled: set[str] = set()
    for member in ancestry:
        values = dict(member.fact.values)
        _add_unspelled(member.fact, values, unknown)
        for name, tokens in values.items():
            _add_written_tokens(name, tokens, returns, found, unknown, filled)
    unknown |= {name for name in filled if "empty" in found.get(name, ())}
    return {name: frozenset(tokens) for name, tokens in found.items() if name not in unknown and tokens}


def _method_returns(ancestry: list[ProjectClass]) -> dict[str, str | None]:
    """method -> the value token it returns, if one, of the most derived definition in `ancestry`."""
    returns: dict[str, str | None] = {}
    for member in reversed(ancestry):  # bases first: the most derived definition wins
        own = dict(member.fact.returns)
        for method in member.fact.methods:
            returns[method.name] = own.get(method.name)
    return returns


def _add_unspelled(fact: ClassFact, values: dict[str, list[str]], unknown: set[str]) -> None:
    """The attributes the class sets in a way the facts do not spell out, added to `unknown`."""
    for name in fact.provided:
        if name not in values and name not in {m.name for m in fact.methods}:
            unknown.add(name)


def _add_written_tokens(name: str, tokens: list[str], returns: dict[str, str | None], found: dict[str, set[str]],
                        unknown: set[str], filled: set[str]) -> None:
    """The values written to `name` added to `found` (a `self.m()` as what `m` returns); an
    unknown value makes the attribute unknown, and "filled" says something fills it."""
    for token in tokens:
        if token == "filled":
            filled.add(name)
            continue
        if token.startswith("m:"):
            token = returns.get(token[2:]) or ""
        if not token:
            unknown.add(name)
        found.setdefault(name, set()).add(token)


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
    false_for = _FALSE_FOR.get(test)
    return false_for(tokens, argument) if false_for is not None else False


def _all_truthy_literals(tokens: frozenset[str], argument: str) -> bool:
    return all(t.startswith("c:") and t not in FALSY for t in tokens)


def _none_equal(tokens: frozenset[str], argument: str) -> bool:
    options = argument.split("|")
    return all(_distinct(t, option) for t in tokens for option in options)


def _all_among(tokens: frozenset[str], argument: str) -> bool:
    options = argument.split("|")
    return all(any(t == option for option in options) for t in tokens)


# test of a branch condition -> whether it is false for every one of the values (tokens) written
_FALSE_FOR: dict[str, Callable[[frozenset[str], str], bool]] = {
    "truthy": lambda tokens, argument: tokens <= FALSY,
    "falsy": _all_truthy_literals,
    "none": lambda tokens, argument: "c:None" not in tokens,
    "notnone": lambda tokens, argument: tokens == {"c:None"},
    "eq": _none_equal,
    "in": _none_equal,
    "ne": lambda tokens, argument: tokens == {argument},
    "notin": _all_among,
}


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


def reached_from_root(resolver: Resolver, borrower: Borrower, root: Root, provided: set[str],
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
    walk = _Reach(resolver, lookup, root, provided, values, stand_ins, lacks, entered)
    if first:
        walk.push(0, 0, first, [root.scope, first.qualname])
    return walk.run()


class _Reach:
    """One walk of `reach`: the methods to enter, cheapest first, and what those entered read and set."""

    def __init__(self, resolver: Resolver, lookup: Callable[[str], Member | None], root: Root, provided: set[str],
                 values: dict[str, frozenset[str]], stand_ins: dict[str, frozenset[str]] | None, lacks: dict | None,
                 entered: list[tuple[Member, list[str]]] | None) -> None:
        self.resolver, self.lookup, self.root, self.provided, self.values = resolver, lookup, root, provided, values
        self.stand_ins, self.lacks, self.entered = stand_ins, lacks, entered
        self.counter = itertools.count()
        self.queue: list = []
        self.visited: set[tuple[str, str]] = set()
        self.callers: dict[str, str] = {}  # method -> the caller the cheapest path reached it from
        self.others: dict[str, list[str]] = {}  # method -> the cheapest path to it from another caller
        self.reads: dict[str, Needed] = {}
        self.writes: set[str] = set()
        self.assigned: set[str] = set()
        self.filled: set[str] = set()

    def push(self, cost: int, depth: int, member: Member, path: list[str]) -> None:
        heapq.heappush(self.queue, (cost, depth, next(self.counter), member, path))

    def run(self) -> tuple[dict[str, Needed], set[str], set[str], set[str]]:
        queue = self.queue
        while queue:
            cost, _, _, member, path = heapq.heappop(queue)
            if self._entered_before(member, path) or _guard_holds(member.record.get("guard"), self.values):
                continue
            self._enter(member, path)
            self._follow(cost, member, path)
        for need in self.reads.values():
            need.other = self.others.get(need.path[-1])
        return self.reads, self.writes, self.assigned, self.filled

    def _entered_before(self, member: Member, path: list[str]) -> bool:
        """Whether the member was entered already; a path to it from another caller is kept."""
        if (member.owner, member.name) not in self.visited:
            return False
        if path[-2] != self.callers.get(member.qualname):
            self.others.setdefault(member.qualname, path)
        return True

    def _enter(self, member: Member, path: list[str]) -> None:
        """Notes what the member sets and fills, and the stand-ins' members it lacks."""
        self.visited.add((member.owner, member.name))
        self.callers[member.qualname] = path[-2]
        if self.entered is not None:
            self.entered.append((member, path))
        record = member.record
        values = self.values
        live_writes = {name for name in record.get("writes", []) if _place_cost(record, f"={name}", values) is not None}
        # A method that reads an attribute before it first sets it never gets to set it when
        # nothing else did: `prev = self._prev_end; self._prev_end = now` fails on its first run.
        self.writes.update(live_writes - set(record.get("read_first", [])))
        self.assigned.update(live_writes)
        self.filled.update(record.get("mutates", []))
        if self.stand_ins:
            self._note_lacks(record, path)

    def _note_lacks(self, record: dict, path: list[str]) -> None:
        stand_ins = self.stand_ins
        for name, members in record.get("members", {}).items():
            if name in stand_ins \
                    and _place_cost(record, name, self.values) is not None:
                for missing in sorted(set(members) - stand_ins[name]):
                    self.lacks.setdefault((name, missing), (path, self.root))

    def _follow(self, cost: int, member: Member, path: list[str]) -> None:
        """The member's reads of `self` (its own, its upstream decorators' wrappers'): a method
        or property is entered next, another attribute is one the project's object must have."""
        provided, values, lookup = self.provided, self.values, self.lookup
        for attrs, where, owner_record in _read_sources(self.resolver, member, path):
            for attr in attrs:
                if attr in provided:
                    continue  # the project's own attribute or override
                step = _place_cost(owner_record, attr, values)
                if step is None:
                    continue  # only behind conditions that cannot hold for the project
                target = lookup(attr)
                if target is not None and target.kind in CALLABLE_KINDS:
                    self.push(cost + step, len(where), target, where + [target.qualname])
                elif target is None or target.kind in ("instance", "field"):
                    self._note_read(attr, where, cost + step, member.qualname if where is path else where[-1])

    def _note_read(self, attr: str, where: list[str], cost: int, reader: str) -> None:
        """`attr` read at the end of `where`, kept when it is the least-guarded path to it so far."""
        need = self.reads.get(attr)
        if need is None or (cost, len(where)) < (need.cost, len(need.path)):
            readers = need.readers if need else set()
            need = self.reads[attr] = Needed(where, self.root, cost, readers)
        need.readers.add(reader)


def _read_sources(resolver: Resolver, member: Member, path: list[str]) -> list[tuple[list[str], list[str], dict]]:
    """(attributes read, the path to the reader, the record placing the reads) of the member's
    body and of its upstream decorators' wrappers, which run with the same `self`."""
    record = member.record
    sources = [(record.get("reads", []), path, record)]
    sources += [(wrapper.get("wrapper_reads", []), path + [f"@{name}"], {})
                for name, wrapper in _decorators(resolver, member)]
    return sources


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
    _, _, settled = settled_reach(view, resolver, borrower)
    own = settled[:len(borrower.roots)]
    return [reads for reads, _, _, _ in own]


def settled_reach(view: ProjectView, resolver: Resolver, borrower: Borrower) -> tuple[set[str], dict[str, frozenset[str]], list]:
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
        reached = [reached_from_root(resolver, borrower, root, provided, values)
                   for root in borrower.roots + borrower.inherited_roots]
        writes = set().union(*(root_writes for _, root_writes, _, _ in reached))
        assigned = set().union(*(root_assigned for _, _, root_assigned, _ in reached))
        filled = set().union(*(root_filled for _, _, _, root_filled in reached))
        broken = _set_by_reached_code(values, assigned, filled)
        if not broken:
            return [(_unwritten(reads, writes), w, a, f) for reads, w, a, f in reached]
        for name in broken:  # reached code sets it after all: the branches on it may run
            del values[name]


def _set_by_reached_code(values: dict[str, frozenset[str]], assigned: set[str], filled: set[str]) -> set[str]:
    """The attributes of `values` that reached code sets, or fills while the project leaves them empty."""
    return {name for name, tokens in values.items()
            if name in assigned or name in filled and "empty" in tokens}


def _unwritten(reads: dict[str, Needed], writes: set[str]) -> dict[str, Needed]:
    """The attributes read that no reached method sets."""
    return {attr: need for attr, need in reads.items() if attr not in writes}
