"""Which upstream methods run with a project object, and which of them call a given method.

SGC302 reports an override that cannot take a parameter upstream gained only where an upstream
caller that passes it can run against the project's class. An upstream method runs for a
project class when the project reaches it:

- the upstream `__init__` the class runs (a subclass whose `__init__` calls its base's, or that
  defines none);
- the upstream methods the class's own code (or that of its project bases) calls on `self`,
  through `super()`, or names explicitly (`Scheduler.m(self)`), and the ones its `__getattr__`
  borrows (the roots of borrowed.py);
- the upstream methods the project's code calls on a typed instance of the class
  (`runner.alloc_memory_pool()`, `runner` a `SGLModelRunner`), or of an upstream class it
  derives from (`runner: ModelRunner` may hold a `SGLModelRunner`);

and then every upstream method those reach through `self.<name>` (borrowed.py's walk). A
caller `self.m(..., new=...)` among them reaches the override. A caller `x.m(..., new=...)` on
another receiver (whose type the upstream body does not say) counts when it is among the
methods the project reaches for any of its classes: the name is enough there. Upstream code
the project never enters through one of its classes (an upstream `Scheduler.__init__` that
builds the model runner, when the project builds its own) does not count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sglang_contracts.analysis.borrowing import (CALLABLE_KINDS, Borrower, Root, borrowers, reached_from_root,
                                                 skips_base_init)
from sglang_contracts.analysis.resolve import ProjectClass, ProjectView, Resolver, project_view
from sglang_contracts.infra.memo import Codec
from sglang_contracts.project.facts import CallFact, FileFacts, Receiver
from sglang_contracts.upstream.model import Member

if TYPE_CHECKING:
    from sglang_contracts.contracts.base import CheckContext


@dataclass
class Reach:
    """What one release's upstream code runs for the project's classes."""

    per_class: dict[str, list[tuple[Member, list[str]]]]  # class key -> (method entered, path)
    anywhere: dict[tuple[str, str], tuple[Member, list[str]]]  # (owner, name) -> (method, a path)


def _own_roots(ctx: CheckContext, resolver: Resolver, cls: ProjectClass) -> list[Root]:
    """Roots in the class's own methods: `self.m()` and `super().m()` calls and `self.m` reads
    of inherited upstream methods."""
    view = project_view(ctx)
    provided = view.provided(cls)
    prefix = f"{cls.fact.name}."
    roots = _own_call_roots(resolver, cls, prefix, provided, view.ancestry(cls)[0][1:])
    for read in cls.facts.in_class(cls.fact.name, "reads"):
        if read.receiver.types == (f"S:{cls.fact.name}",) and not read.receiver.attrs and not read.store \
                and read.scope.startswith(prefix) and read.attr not in provided:
            roots.append(Root(cls.facts, read.position, read.scope, read.attr, None))
    return roots


def _own_call_roots(resolver: Resolver, cls: ProjectClass, prefix: str, provided: frozenset[str],
                    parents: list[ProjectClass]) -> list[Root]:
    """`self.m()` and `super().m()` calls in the class's own methods (`prefix`) of inherited upstream methods."""
    roots = []
    for call in cls.facts.in_class(cls.fact.name, "calls"):
        kind = call.callee.types[0] if call.callee.types else ""
        if not call.scope.startswith(prefix) or len(call.callee.attrs) != 1:
            continue
        name = call.callee.attrs[0]
        if kind == f"S:{cls.fact.name}" and name not in provided:
            roots.append(Root(cls.facts, call.position, call.scope, name, None))
        elif kind == f"U:{cls.fact.name}":
            roots += _super_call_roots(resolver, cls, call, name, parents)
    return roots


def _super_call_roots(resolver: Resolver, cls: ProjectClass, call: CallFact, name: str,
                      parents: list[ProjectClass]) -> list[Root]:
    """A root for `super().name()`: `super().m()` reaches upstream only past the project's own
    bases, and never through `__getattr__`, which a `super()` proxy does not consult."""
    if any(name in parent.fact.provided for parent in parents):
        return []
    member = resolver.upstream_member(cls, name, borrowed=False)
    if member is not None and member.kind in CALLABLE_KINDS:
        return [Root(cls.facts, call.position, call.scope, name, member.owner)]
    return []


def _typed_roots(ctx: CheckContext, resolver: Resolver) -> dict[str, list[Root]]:
    """Per project class, calls of its inherited upstream methods on typed instances of it."""
    view = project_view(ctx)
    found: dict[str, list[Root]] = {}
    subclasses = _upstream_subclasses(view, resolver)
    for facts in ctx.project.files.values():
        for call in facts.calls:
            types = call.callee.types
            if not call.callee.attrs or not types or any(kind.startswith(("C:", "U:", "S:")) for kind in types):
                continue
            _add_typed_call_roots(view, resolver, subclasses, facts, call, found)
    return found


def _upstream_subclasses(view: ProjectView, resolver: Resolver) -> dict[str, list[ProjectClass]]:
    """upstream class -> the project's subclasses of it: an instance typed as an upstream class
    may be one of them."""
    subclasses: dict[str, list[ProjectClass]] = {}
    for cls in view.classes.values():
        for base in resolver.upstream_bases(cls):
            for origin in resolver.model.mro(base)[0]:
                subclasses.setdefault(origin, []).append(cls)
    return subclasses


def _add_typed_call_roots(view: ProjectView, resolver: Resolver, subclasses: dict[str, list[ProjectClass]],
                          facts: FileFacts, call: CallFact, found: dict[str, list[Root]]) -> None:
    """A root in `found`, per project class the call's receiver may be, for the method it calls
    when the class does not provide it."""
    types = call.callee.types
    instances = resolver.receiver(facts, Receiver(types, call.callee.attrs[:-1]))
    name = call.callee.attrs[-1]
    for instance in instances or ():
        for cls in [instance.project] if instance.project is not None else subclasses.get(instance.origin or "", []):
            if name not in view.provided(cls):
                found.setdefault(cls.key, []).append(Root(facts, call.position, call.scope or facts.module, name, None))


def _reach(ctx: CheckContext, resolver: Resolver) -> Reach:
    view = project_view(ctx)
    explicit: dict[str, list[Root]] = {}
    for borrower in borrowers(ctx):
        explicit.setdefault(borrower.cls.key, []).extend(borrower.roots)
    typed = _typed_roots(ctx, resolver)
    per_class: dict[str, list[tuple[Member, list[str]]]] = {}
    anywhere: dict[tuple[str, str], tuple[Member, list[str]]] = {}
    for cls in view.classes.values():
        if not resolver.upstream_bases(cls) and not view.borrow_sources(cls):
            continue
        roots = _class_roots(ctx, view, resolver, cls, explicit, typed)
        provided = set(view.provided(cls))
        for member in view.ancestry(cls)[0]:
            provided.update(member.fact.getattr_names)
        borrower = Borrower(cls, roots, bool(view.borrow_sources(cls)))
        entered: list[tuple[Member, list[str]]] = []
        for root in roots:
            reached_from_root(resolver, borrower, root, provided, {}, entered=entered)
        per_class[cls.key] = entered
        for member, path in entered:
            anywhere.setdefault((member.owner, member.name), (member, path))
    return Reach(per_class, anywhere)


def _class_roots(ctx: CheckContext, view: ProjectView, resolver: Resolver, cls: ProjectClass,
                 explicit: dict[str, list[Root]], typed: dict[str, list[Root]]) -> list[Root]:
    """Every root of the class's upstream code: its and its project bases' (whose code runs with
    the subclass's objects), and the upstream `__init__` it runs."""
    roots: list[Root] = []
    for member in view.ancestry(cls)[0]:
        roots += explicit.get(member.key, []) + typed.get(member.key, []) + _own_roots(ctx, resolver, member)
    if resolver.upstream_bases(cls) and not skips_base_init(view, resolver, cls):
        roots.append(Root(cls.facts, cls.fact.position, f"{cls.fact.name}()", "__init__", None))
    return roots


def reach(ctx: CheckContext, resolver: Resolver) -> Reach:
    """`_reach` for one release. No position enters it (a path is scopes and qualnames): kept
    from run to run while edits only move the project's code (REACH_KEPT: in the records too)."""
    release = "old" if resolver.model is ctx.old else "new"
    return ctx.of_placeless_project(f"upstream-reach-{release}", lambda context: _reach(context, resolver),
                                    REACH_KEPT)


def _member_json(member: Member) -> list:
    return [member.owner, member.name, member.kind, member.record]


def _member(data: list) -> Member:
    owner, name, kind, record = data
    if not (isinstance(owner, str) and isinstance(name, str) and isinstance(kind, str) and isinstance(record, dict)):
        raise TypeError("not a member")
    return Member(owner, name, kind, record)


def _reach_json(found: Reach) -> dict:
    return {"per_class": {key: [[_member_json(member), path] for member, path in entered]
                          for key, entered in found.per_class.items()},
            "anywhere": [[owner, name, _member_json(member), path] for (owner, name), (member, path) in
                         found.anywhere.items()]}


def _reach_from_json(data: dict) -> Reach:
    per_class = {str(key): [(_member(member), [str(step) for step in path]) for member, path in entered]
                 for key, entered in data["per_class"].items()}
    anywhere = {(str(owner), str(name)): (_member(member), [str(step) for step in path])
                for owner, name, member, path in data["anywhere"]}
    return Reach(per_class, anywhere)


REACH_KEPT = Codec(_reach_json, _reach_from_json)


def passes(call: list, params: list, name: str) -> bool:
    """Does a recorded call [name, on self, positional, keywords, splat] pass parameter `name`
    of a method whose parameters (`self` first) are `params`?"""
    _, _, positional, keywords, splat = call
    if splat or name in keywords:
        return True
    index = next((i for i, p in enumerate(params) if p[0] == name), None)
    return index is not None and params[index][1] in ("po", "pk") and 1 <= index <= positional


def passing_caller(ctx: CheckContext, resolver: Resolver, cls: ProjectClass, method: str, params: list,
                   missing: list[str]) -> tuple[Member, list[str], list[str]] | None:
    """(an upstream caller, the path that reaches it, the missing parameters it passes) for the
    first upstream method the project reaches that calls `method` passing one of `missing`:
    on `self` among the methods reached for `cls`, on another receiver among all reached."""
    found = reach(ctx, resolver)
    candidates = [(member, path, 1) for member, path in found.per_class.get(cls.key, [])]
    candidates += [(member, path, 0) for member, path in found.anywhere.values()]
    candidates.sort(key=lambda item: (1 - item[2], len(item[1])))  # calls on self, then the shortest path
    for member, path, on_self in candidates:
        for call in member.record.get("call_args", []):
            if call[0] != method or call[1] != on_self:
                continue
            passed = [name for name in missing if passes(call, params, name)]
            if passed:
                return member, path, passed
    return None
