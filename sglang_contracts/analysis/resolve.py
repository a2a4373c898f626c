"""What the project's names, classes and typed receivers stand for in one upstream release.

Shared by the class and call contracts. A receiver's type is followed through the project's
own classes (their typed attributes and bases) and then through upstream's annotations
(attribute types, property and return annotations), one release at a time, so "old holds,
new breaks" compares like with like. Anything that cannot be followed resolves to nothing:
a contract is never judged on a guess.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from sglang_contracts.analysis.inference import ChangedNames, ReleaseInference
from sglang_contracts.project.facts import CallFact, ClassFact, FileFacts, Position, Receiver, through_imports
from sglang_contracts.upstream.model import Member, Signature, UpstreamModel, is_upstream
from sglang_contracts.upstream.targets import callable_signature, resolve_target

if TYPE_CHECKING:
    from sglang_contracts.contracts.base import CheckContext


@dataclass(frozen=True, eq=False)  # one object per class: identity is equality
class ProjectClass:
    key: str  # "module.Class"
    facts: FileFacts = field(repr=False)
    fact: ClassFact


@dataclass(frozen=True)
class Instance:
    """An instance of an upstream class (`origin`) or of a project class (`project`)."""

    origin: str | None = None
    project: ProjectClass | None = None


@dataclass(frozen=True)
class Callee:
    signature: Signature
    member: Member | None = None  # for methods


class ProjectView:
    """The project's classes and each file's name bindings, indexed once per run."""

    def __init__(self, ctx: CheckContext) -> None:
        self.ctx = ctx
        self.classes: dict[str, ProjectClass] = {}
        self.bindings: dict[str, dict[str, str]] = {}
        for facts in ctx.project.files.values():
            table = dict(facts.bindings())  # a copy: the file's classes are added to it
            for fact in facts.classes:
                key = f"{facts.module}.{fact.name}"
                self.classes[key] = ProjectClass(key, facts, fact)
                table.setdefault(fact.name, key)
            self.bindings[facts.path] = table
        self.ancestry = lru_cache(maxsize=None)(self._ancestry)
        self.bases_of = lru_cache(maxsize=None)(self._bases_of)
        self.provided = lru_cache(maxsize=None)(self._provided)

    def dotted(self, facts: FileFacts, name: str) -> str | None:
        """The absolute dotted path a name written in `facts` stands for (upstream or project)."""
        full = through_imports(name, self.bindings.get(facts.path, {}))
        if full is None:
            return None
        upstream = self.ctx.project.upstream_path(full)
        return upstream or full

    def project_class(self, dotted: str | None) -> ProjectClass | None:
        """The project class a dotted path names, following the project's own re-exports."""
        for _ in range(20):
            if not dotted or dotted in self.classes:
                break
            module, _, name = dotted.rpartition(".")
            dotted = self.ctx.project.exports.get(module, {}).get(name)
        return self.classes.get(dotted) if dotted else None

    def _ancestry(self, cls: ProjectClass) -> tuple[list[ProjectClass], list[str]]:
        """The project classes from `cls` up, and the dotted upstream bases they name."""
        chain: list[ProjectClass] = []
        upstream: list[str] = []
        pending = [cls]
        while pending:
            current = pending.pop(0)
            if current in chain or len(chain) > 50:
                continue
            chain.append(current)
            parents, named = self.bases_of(current)
            pending += parents
            upstream += [dotted for dotted in named if dotted not in upstream]
        return chain, upstream

    def _bases_of(self, cls: ProjectClass) -> tuple[list[ProjectClass], list[str]]:
        """The project classes a class names as its bases, and the upstream ones (dotted), in
        order: resolved once per class, however many of its subclasses' ancestries pass it
        (a chain of 6,000 classes resolved each base 51 times: seventh campaign, P16)."""
        parents: list[ProjectClass] = []
        upstream: list[str] = []
        for base in cls.fact.bases:
            dotted = self.dotted(cls.facts, base)
            parent = self.project_class(dotted)
            if parent is not None:
                parents.append(parent)
            elif dotted and is_upstream(dotted):
                upstream.append(dotted)
        return parents, upstream

    def ancestor_files(self, paths: set[str]) -> set[str]:
        """The files that define the project classes the classes in `paths` derive from (a
        subclass's borrowed code runs its project bases' own calls: incremental.py)."""
        return {member.facts.path for cls in self.classes.values() if cls.facts.path in paths
                for member in self.ancestry(cls)[0]}

    def descendant_files(self, paths: set[str]) -> set[str]:
        """The files that define the project classes that derive from a class in `paths` (what
        a base's findings about the objects its subclasses hand to borrowed code read)."""
        return {cls.facts.path for cls in self.classes.values()
                if any(member.facts.path in paths for member in self.ancestry(cls)[0][1:])}

    def _provided(self, cls: ProjectClass) -> frozenset[str]:
        return frozenset(name for member in self.ancestry(cls)[0] for name in member.fact.provided)

    def borrow_sources(self, cls: ProjectClass) -> list[str]:
        """Upstream classes whose attributes the class's `__getattr__` hands out as its own."""
        sources = []
        for member in self.ancestry(cls)[0]:
            for source in member.fact.getattr_sources:
                dotted = self.dotted(member.facts, source)
                if dotted and is_upstream(dotted):
                    sources.append(dotted)
        return sources


def _walk(derived: str) -> tuple[str, tuple[str, ...]]:
    """`kind|a.b` (a "P:" or "E:" kind without its tag) -> (kind, ("a", "b")); `kind|` -> (kind, ())."""
    inner, _, attrs = derived.rpartition("|")
    return inner, tuple(attrs.split(".")) if attrs else ()


def _returns_self(member: Member | None) -> bool:
    """Whether an upstream member is a method whose body is `return self` (upstream/bodies.py)."""
    return member is not None and member.kind == "method" and bool(member.record.get("returns_self"))


def project_view(ctx: CheckContext) -> ProjectView:
    return ctx.shared("project-view", ProjectView)


# Receivers resolved one inside another (`self.b = self.a`, then `self.c = self.b`, ...): real
# code needs a few; each level takes four frames of Python's recursion (its limit, 1,000, was met
# at about 200 links).
RECEIVER_DEPTH = 64


class Resolver:
    """Types and callees in one release."""

    def __init__(self, view: ProjectView, model: UpstreamModel, inference: ReleaseInference | None = None,
                 changed: Callable[[FileFacts, str], bool] | None = None) -> None:
        self.view = view
        self.model = model
        # astroid over this release, asked where the types above stop and the name read is one
        # the bump changed (`changed`: on a class the file imports)
        self.inference = inference
        self.changed = changed
        self._inferred: dict[tuple[str, Position, str], tuple[Instance, ...] | None] = {}
        self.upstream_bases = lru_cache(maxsize=None)(self._upstream_bases)
        # Many facts share a receiver (`self.x` across a class's methods) and several checks
        # ask about the same ones: each is resolved once per file and release.
        self._receivers: dict[tuple[str, Receiver], tuple[tuple[Instance, ...] | None, int]] = {}  # with its height
        self._height = 0  # of the receivers resolved so far inside the one being resolved
        self._cut = False  # whether one of them was cut by RECEIVER_DEPTH
        # Receivers being resolved: one met again while it is resolved depends on itself
        # (`self.cur = self.cur.next`, two classes typing each other's attributes).
        self._resolving: set[tuple[str, Receiver]] = set()
        self._callees: dict[tuple[str, Receiver], Callee | None] = {}
        self._objects: dict[str, Callee | None] = {}

    def _upstream_bases(self, cls: ProjectClass) -> tuple[str, ...]:
        """Origins of the upstream classes a project class derives from, in this release."""
        found = []
        for dotted in self.view.ancestry(cls)[1]:
            origin = self.model.resolve_class(dotted)
            if origin is not None:
                found.append(origin)
        return tuple(found)

    def upstream_member(self, cls: ProjectClass, name: str, borrowed: bool = True) -> Member | None:
        """`name` on the upstream bases of a project class, or (`borrowed`) handed out by its
        `__getattr__`, which reaches only what the upstream class itself holds: methods, class
        attributes."""
        for origin in self.upstream_bases(cls):
            member = self.model.member(origin, name)
            if member is not None:
                return member
        for source in self.view.borrow_sources(cls) if borrowed else ():
            origin = self.model.resolve_class(source)
            if origin is None:
                continue
            member = self.model.member(origin, name)
            if member is not None and member.kind in ("method", "property", "class"):
                return member
        return None

    # -- types ---------------------------------------------------------------------------

    def _from_upstream_types(self, paths: Iterable[str]) -> list[Instance]:
        instances = []
        for path in paths:
            origin = self.model.resolve_class(path)
            if origin is not None:
                instances.append(Instance(origin=origin))
        return instances

    def _from_kinds(self, facts: FileFacts, kinds: Iterable[str]) -> list[Instance] | None:
        """Instances a receiver's type alternatives stand for; None if any is unknown."""
        instances: list[Instance] = []
        for kind in kinds:
            found = self._from_kind(facts, kind)
            if found is None:
                return None
            instances.extend(found)
        return instances

    def _from_kind(self, facts: FileFacts, kind: str) -> Sequence[Instance] | None:
        """Instances one type alternative stands for (never empty); None if unknown."""
        tag, _, name = kind.partition(":")
        if tag in ("P", "E"):
            return self._walked_instances(facts, tag, name)
        if tag == "S":
            cls = self.view.classes.get(f"{facts.module}.{name}")
            return [Instance(project=cls)] if cls is not None else None
        if tag in ("T", "R", "B"):
            return self._annotated_instances(facts, tag, name)
        if tag == "W":
            return self._entered_instances(facts, name)
        return None

    def _entered_instances(self, facts: FileFacts, kind: str) -> list[Instance] | None:
        """What `with <kind> as x` binds: the managers themselves, when each one's `__enter__`
        is `return self` (its project class's or its upstream class's); else unknown."""
        managers = self._from_kind(facts, kind)
        if not managers or not all(self._enters_as_itself(manager) for manager in managers):
            return None
        return list(managers)

    def _enters_as_itself(self, instance: Instance) -> bool:
        """Whether the `__enter__` an instance's class runs is `return self`: for a project
        class, every one its classes and its upstream bases define is (which of them runs is
        the MRO's to say, not followed here)."""
        if instance.project is None:
            return _returns_self(self.model.member(instance.origin, "__enter__"))
        found = [method.returns_self for cls in self.view.ancestry(instance.project)[0]
                 if (method := cls.fact.method("__enter__")) is not None]
        member = self.upstream_member(instance.project, "__enter__", borrowed=False)
        if member is not None:
            found.append(_returns_self(member))
        return bool(found) and all(found)

    def _walked_instances(self, facts: FileFacts, tag: str, name: str) -> Sequence[Instance] | None:
        """What a "P:" kind (`receiver|attr.attr`) stands for, or the items of an "E:" one (a `for` loop's)."""
        inner, path = _walk(name)
        found = self.receiver(facts, Receiver((inner,), path)) if tag == "P" else self._items(facts, inner, path)
        return found or None

    def _annotated_instances(self, facts: FileFacts, tag: str, name: str) -> list[Instance] | None:
        """What an annotation (a "T:", "R:" (return) or "B:" kind) naming `name` stands for."""
        dotted = self.view.dotted(facts, name)
        cls = self.view.project_class(dotted)
        if cls is not None:
            return [Instance(project=cls)]
        if not dotted or not is_upstream(dotted):
            return None
        origin = self.model.resolve_class(dotted)
        if origin is not None:
            return [Instance(origin=origin)]
        # a function's or a method's return annotation (`Adapter.create(...) -> Adapter`)
        return (self._returned_instances(dotted) or None) if tag == "R" else None

    def _returned_instances(self, dotted: str) -> list[Instance]:
        """The instances the upstream function or method at `dotted` is annotated to return."""
        record = self.model.function_record(self.model.resolve_path(dotted).origin or "")
        if record is None:
            target = resolve_target(self.model, dotted)
            record = target.record if target.member is not None and target.member.kind == "method" else None
        return self._from_upstream_types(record.get("returns", [])) if record else []

    def _items(self, facts: FileFacts, kind: str, attrs: tuple[str, ...]) -> list[Instance] | None:
        """What a `for` loop over `kind` walked through `attrs` yields."""
        if not attrs:
            return self._from_kinds(facts, [f"T:{kind[2:]}"]) if kind.startswith("L:") else None
        holders = self.receiver(facts, Receiver((kind,), attrs[:-1]))
        if not holders:
            return None
        items: list[Instance] = []
        for holder in holders:
            found = self._held_items(holder, attrs[-1])
            if not found:
                return None
            items.extend(found)
        return items

    def _held_items(self, holder: Instance, attr: str) -> list[Instance] | None:
        """What the container in `holder.attr` holds, by its annotation (`list[X]`)."""
        if holder.project is None:
            member = self.model.member(holder.origin, attr)
            return self._from_upstream_types(member.record.get("items", [])) if member else None
        kinds = self.project_attribute_kinds(holder.project, attr)
        containers = [f"T:{k[2:]}" for k in kinds or () if k.startswith("L:")]
        return self._from_kinds(self.owner_facts(holder.project, attr), containers) if containers else None

    def project_attribute_kinds(self, cls: ProjectClass, name: str) -> tuple[str, ...] | None:
        for member in self.view.ancestry(cls)[0]:
            kinds = dict(member.fact.attr_types).get(name)
            if kinds:
                return kinds
        return None

    def owner_facts(self, cls: ProjectClass, name: str) -> FileFacts:
        """The file whose names a project class's typed attribute is written in."""
        for member in self.view.ancestry(cls)[0]:
            if name in dict(member.fact.attr_types):
                return member.facts
        return cls.facts

    def attribute(self, instance: Instance, name: str) -> tuple[Member | None, bool]:
        """(upstream member, provided by the project) for `instance.name`."""
        if instance.project is not None:
            if name in self.view.provided(instance.project):
                return None, True
            return self.upstream_member(instance.project, name), False
        return self.model.member(instance.origin, name), False

    def attribute_types(self, instance: Instance, name: str) -> list[Instance] | None:
        if instance.project is not None:
            kinds = self.project_attribute_kinds(instance.project, name)
            if kinds:
                return self._from_kinds(self.owner_facts(instance.project, name), kinds)
        member, provided = self.attribute(instance, name)
        if provided or member is None or member.kind == "method":
            return None
        types = member.record.get("returns" if member.kind == "property" else "types", [])
        return self._from_upstream_types(types) or None

    def receiver(self, facts: FileFacts, receiver: Receiver) -> tuple[Instance, ...] | None:
        """The instances a receiver (its types, then its attribute walk) stands for. A receiver
        whose types depend on its own is unknown: the resolver solves no recursive equations.
        Since any unknown alternative makes a receiver unknown, every receiver on such a cycle
        resolves to None, whichever of them is asked first, so what is cached does not depend
        on the order of the questions.

        Depth is bounded too (`self.c1 = self.c0` over 300 links recursed past Python's limit):
        a receiver whose resolution needs more than RECEIVER_DEPTH receivers one inside the
        other is unknown. Each answer is kept with that height, so that a receiver met deep in
        another's resolution is unknown there even when it was known asked alone; an answer cut
        by the bound is not kept, so that none depends on the order of the questions either."""
        key = (facts.path, receiver)
        depth = len(self._resolving)
        if key in self._receivers:
            found, height = self._receivers[key]
            if found is not None and depth + height > RECEIVER_DEPTH:
                self._cut = True
                return None
            self._height = max(self._height, height)
            return found
        if key in self._resolving:
            return None
        if depth >= RECEIVER_DEPTH:
            self._cut = True
            return None
        self._resolving.add(key)
        outer_height, outer_cut = self._height, self._cut
        self._height, self._cut = 0, False
        try:
            found = self._receiver(facts, receiver)
        finally:
            self._resolving.discard(key)
            height, cut = self._height + 1, self._cut
            self._height, self._cut = max(outer_height, height), outer_cut or cut
        if not cut:
            self._receivers[key] = (found, height)
        return found

    def _receiver(self, facts: FileFacts, receiver: Receiver) -> tuple[Instance, ...] | None:
        if any(kind.startswith(("C:", "U:")) for kind in receiver.types):
            return None
        current = self._from_kinds(facts, receiver.types)
        for attr in receiver.attrs:
            if not current:
                return None
            following: list[Instance] = []
            for instance in current:
                types = self.attribute_types(instance, attr)
                if types is None:
                    return None
                following.extend(types)
            current = following
        return tuple(current) if current else None

    # -- callees -------------------------------------------------------------------------

    def object_at(self, dotted: str) -> Callee | None:
        """What calling the upstream object at `dotted` binds to: a class's constructor, a
        function, or a method reached through its class (`Scheduler.step(self, ...)`)."""
        if dotted not in self._objects:
            self._objects[dotted] = self._object_at(dotted)
        return self._objects[dotted]

    def _object_at(self, dotted: str) -> Callee | None:
        found = callable_signature(self.model, dotted)
        return Callee(*found) if found is not None else None

    def callee(self, facts: FileFacts, receiver: Receiver) -> Callee | None:
        """What a call of `receiver` in `facts` binds to; a file calls the same callee many
        times and several checks ask, so each is resolved once per file and release."""
        key = (facts.path, receiver)
        if key not in self._callees:
            self._callees[key] = self._callee(facts, receiver)
        return self._callees[key]

    def _callee(self, facts: FileFacts, receiver: Receiver) -> Callee | None:
        kind = receiver.types[0] if len(receiver.types) == 1 else ""
        if kind.startswith("C:"):
            return self._class_callee(facts, kind[2:], receiver.attrs)
        if not receiver.attrs:
            return self._kept_method(facts, kind) if kind.startswith("P:") else None
        method = receiver.attrs[-1]
        if kind.startswith("U:"):
            return self._upstream_method_of_own_class(facts, kind[2:], method)
        instances = self.receiver(facts, Receiver(receiver.types, receiver.attrs[:-1]))
        if not instances or len(instances) != 1:
            return None
        member, provided = self.attribute(instances[0], method)
        return None if provided else self._bound(member)

    def _kept_method(self, facts: FileFacts, kind: str) -> Callee | None:
        """`e = c.m` (or `e = C().m`), then `e(...)`: a call of the method the kind's walk ends at
        (campaign 12, R01); `h = f` (`P:C:f|`, an empty walk), then `h(...)`: a call of f (audit 13, R12)."""
        inner, path = _walk(kind[2:])
        return self.callee(facts, Receiver((inner,), path))

    def _class_callee(self, facts: FileFacts, name: str, attrs: tuple[str, ...]) -> Callee | None:
        """What calling the class `name` binds to: an upstream object, or a project class's
        inherited upstream constructor (`attrs`: a walk from the class, none for a construction)."""
        dotted = self.view.dotted(facts, name)
        if dotted and is_upstream(dotted):
            return self.object_at(dotted)
        cls = self.view.project_class(dotted) if dotted else None
        return self._inherited_constructor(cls) if cls is not None and not attrs else None

    def _upstream_method_of_own_class(self, facts: FileFacts, name: str, method: str) -> Callee | None:
        """The upstream `method` a project class of this file (`name`) inherits, unless a project base provides it."""
        cls = self.view.classes.get(f"{facts.module}.{name}")
        parents = self.view.ancestry(cls)[0][1:] if cls else []
        if cls is None or any(method in parent.fact.provided for parent in parents):
            return None
        member = self.upstream_member(cls, method)
        return self._bound(member)

    def _inherited_constructor(self, cls: ProjectClass) -> Callee | None:
        """What building a project class binds to when neither it nor its project bases define
        `__init__` or `__new__`: its first upstream base's constructor."""
        chain = self.view.ancestry(cls)[0]
        if any(member.fact.decorated or {"__init__", "__new__"} & set(member.fact.provided) for member in chain):
            return None
        if not self._bases_known(chain):
            return None
        bases = self.upstream_bases(cls)
        signature = self.model.constructor(bases[0]) if bases else None
        return Callee(signature) if signature is not None else None

    def _bases_known(self, chain: list[ProjectClass]) -> bool:
        """Whether every base of the classes in `chain` is upstream or the project's: a base from
        elsewhere (torch, abc) may define `__init__` itself."""
        for member in chain:
            for base in member.fact.bases:
                dotted = self.view.dotted(member.facts, base)
                if not dotted or not is_upstream(dotted) and self.view.project_class(dotted) is None:
                    return False
        return True

    def callee_at(self, facts: FileFacts, call: CallFact) -> Callee | None:
        """`callee`, or where its receiver's type is unknown, the method of the instances
        astroid infers it to be, when they all bind the call alike."""
        found = self.callee(facts, call.callee)
        if found is not None or not call.callee.attrs or call.callee.types[0].startswith(("C:", "U:")):
            return found
        if self.receiver(facts, Receiver(call.callee.types, call.callee.attrs[:-1])) is not None:
            return None  # the receiver's type is known: the method is the project's own, or none
        method = call.callee.attrs[-1]
        return self._bound_alike(self.inferred(facts, call.position, method) or (), method)

    def _bound_alike(self, instances: Iterable[Instance], method: str) -> Callee | None:
        """The method the instances all bind alike (the same parameters); None where one binds none."""
        callees = []
        for instance in instances:
            member, provided = self.attribute(instance, method)
            callee = None if provided else self._bound(member)
            if callee is None:
                return None
            callees.append(callee)
        if not callees or any(callee.signature.params != callees[0].signature.params for callee in callees):
            return None
        return callees[0]

    def inferred(self, facts: FileFacts, position: Position, attr: str) -> tuple[Instance, ...] | None:
        """What astroid infers the receiver of `.attr` at `position` to be in this release, at
        a site where the bump changed `attr` (on an SGLang class the file imports by name);
        None when it cannot decide or the site is no candidate."""
        if self.inference is None or self.changed is None or not self.changed(facts, attr):
            return None
        key = (facts.path, position, attr)
        if key not in self._inferred:
            text = self.view.ctx.project.texts.get(facts.path)
            self.view.ctx.texts_read.add(facts.path)  # what a kept placeless value also rests on
            names = self.inference.classes_at(facts.module, facts.path, text, position, attr) if text else None
            self._inferred[key] = self._named_instances(names or ())
        return self._inferred[key]

    def _named_instances(self, names: Iterable[str]) -> tuple[Instance, ...] | None:
        """The instances of the classes named (dotted), upstream or the project's; None when one is neither."""
        instances: list[Instance] = []
        for name in names:
            cls = None if is_upstream(name) else self.view.project_class(name)
            origin = self.model.resolve_class(name) if is_upstream(name) else None
            if cls is None and origin is None:
                return None
            instances.append(Instance(origin=origin, project=cls))
        return tuple(instances) or None

    def _bound(self, member: Member | None) -> Callee | None:
        if member is None or member.kind != "method":
            return None
        return Callee(self.model.method_signature(member, bound=True), member)


def resolvers(ctx: CheckContext) -> tuple[Resolver, Resolver]:
    def build(context: CheckContext) -> tuple[Resolver, Resolver]:
        view = project_view(context)
        names = context.of_releases("changed-names", lambda c: ChangedNames(c.old, c.new))
        by_file: dict[str, list[str]] = {}

        def changed(facts: FileFacts, attr: str) -> bool:
            if facts.path not in by_file:
                by_file[facts.path] = _upstream_classes(names, facts)
            return any(names.changed(origin, attr) for origin in by_file[facts.path])

        inference = context.of_releases("inference", lambda c: (ReleaseInference(c.old), ReleaseInference(c.new)))
        return Resolver(view, context.old, inference[0], changed), Resolver(view, context.new, inference[1], changed)

    return ctx.shared("resolvers", build)


def _upstream_classes(names: ChangedNames, facts: FileFacts) -> list[str]:
    """The SGLang classes a file imports by name (those whose names SGC322 follows), as origins."""
    found: dict[str, None] = {}
    for fact in facts.imports:
        if fact.name is not None and fact.name != "*" and is_upstream(fact.module):
            origin = names.origin(fact.target)
            if origin is not None:
                found[origin] = None
    return list(found)
