"""Borrowed-method contracts (SGC311-SGC314): upstream methods that run with a project object
as `self` (which ones, and what they read of it: analysis/borrowing.py).
"""

from __future__ import annotations

from typing import Iterator

from sglang_contracts.analysis.body_changes import body_change, body_preview
from sglang_contracts.analysis.borrowing import (Borrower, Needed, borrowers, needed_by_root, reached_from_root,
                                                 root_member, settled_reach)
from sglang_contracts.analysis.resolve import ProjectClass, ProjectView, Resolver, project_view, resolvers
from sglang_contracts.contracts.base import CheckContext, Process, Reads, contract, fixes
from sglang_contracts.diagnostics import Diagnostic, finding
from sglang_contracts.project.facts import FileFacts


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
    provided, values, _ = settled_reach(view, resolver, borrower)
    lacks: dict = {}
    # The bases' roots too: a subclass builds the stand-in that a base's method hands upstream
    # (sglang-omni's OmniDecodeScheduler, PDKVLifecycle.is_fully_idle)
    for root in borrower.roots + borrower.inherited_roots:
        reached_from_root(resolver, borrower, root, provided, values, {name: members for name, (members, _) in built.items()}, lacks)
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
