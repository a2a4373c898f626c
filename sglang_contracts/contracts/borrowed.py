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
    for owner, name, value in _assignments(resolver, origins, attr):
        if found is None or name == "__init__":
            found = (f"{owner.rsplit('.', 1)[-1]}.{name}", value)
            if name == "__init__":
                return found
    return found


def _assignments(resolver: Resolver, origins: list[str], attr: str) -> Iterator[tuple[str, str, str]]:
    """(owner, method, value as written) of each upstream method assigning `attr`, in lookup order."""
    for origin in origins:
        for owner in resolver.model.mro(origin)[0]:
            record = resolver.model.class_record(owner) or {}
            for name, method in record.get("methods", {}).items():
                value = method.get("assigns", {}).get(attr)
                if value is not None:
                    yield owner, name, value


@contract("SGC312", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def borrowed_code_reads_new_attribute(ctx: CheckContext) -> Iterator[Diagnostic]:
    view = project_view(ctx)
    old, new = resolvers(ctx)
    for borrower in borrowers(ctx):
        # Per root: an attribute that old code read on some path (one that never ran, say a
        # disaggregation mode) is still news on a path that did not read it.
        before = needed_by_root(view, old, borrower)
        raised_before = _raised_before(before)
        groups, elsewhere = _new_reads_by_setter(new, borrower, before, needed_by_root(view, new, borrower))
        for members in groups.values():
            yield _new_attribute_finding(ctx, borrower, members, elsewhere, raised_before)


def _raised_before(before: list[dict[str, Needed]]) -> dict[str, str]:
    """Methods that on the old release already read an attribute the class never set: a path
    through one raised there before, so it could not have run (a warning, not news)."""
    raised_before: dict[str, str] = {}
    for was in before:
        for missing, need in was.items():
            for reader in need.readers:
                raised_before.setdefault(reader, missing)
    return raised_before


def _new_reads_by_setter(new: Resolver, borrower: Borrower, before: list[dict[str, Needed]],
                         after: list[dict[str, Needed]]) -> tuple[dict, dict[str, list[Needed]]]:
    """(groups, elsewhere). One finding per fix: the attributes one upstream method (an `init_*`
    helper, not `__init__`) sets together are grouped, at the first place that needs any. Every
    root's path to each new read is kept: a later root may reach it on a path that runs where the
    first root's does not (sglang-omni's own _add_request_to_queue override)."""
    reported: set[str] = set()
    groups: dict[str, list[tuple[str, Needed, tuple[str, str] | None]]] = {}
    elsewhere: dict[str, list[Needed]] = {}
    for was, now in zip(before, after):
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
    return groups, elsewhere


def _new_attribute_finding(ctx: CheckContext, borrower: Borrower, members: list,
                           elsewhere: dict[str, list[Needed]], raised_before: dict[str, str]) -> Diagnostic:
    """The SGC312 finding of one group of new reads, at its first."""
    attr, need, _ = members[0]
    names = [f"self.{name}" for name, _, _ in members]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"
    sets = [f"{name} = {setter[1]}" for name, _, setter in members if setter]
    where = f"; upstream {members[0][2][0]} sets {', '.join(sets)}" if sets else ""
    note = _could_not_run_before(ctx, borrower, need, raised_before)
    return finding("SGC312", need.root.facts, need.root.position, f"{borrower.cls.key}.{attr}",
                   severity="warning" if note else None,
                   cls=borrower.cls.fact.name, attr=attr, attrs=listed, call_path=_call_path(attr, need, elsewhere),
                   setter=where, note=note, old=ctx.old_version, new=ctx.new_version,
                   values={name: setter[1] if setter else None for name, _, setter in members},
                   class_path=borrower.cls.facts.path, class_line=borrower.cls.fact.position.line)


def _could_not_run_before(ctx: CheckContext, borrower: Borrower, need: Needed,
                          raised_before: dict[str, str]) -> str:
    """What to say of a path through a method that already raised on the old release, or ""."""
    stale = next((m for m in need.path[1:] if m in raised_before), None)
    if not stale:
        return ""
    return (f" (in sglang {ctx.old_version} {stale} already read self.{raised_before[stale]}, which "
            f"{borrower.cls.fact.name} never sets: this path could not run before either)")


def _call_path(attr: str, need: Needed, elsewhere: dict[str, list[Needed]]) -> str:
    """The calls that reach the read, and the cheapest other root's path to it if any."""
    path = " -> ".join(need.path + [f"reads self.{attr}"])
    other = min((n for n in elsewhere[attr][1:] if n.root.scope != need.root.scope),
                key=lambda n: (n.cost, len(n.path)), default=None)
    other_path = other.path if other is not None else need.other
    if other_path:
        path += f" (also through {' -> '.join(other_path)})"
    return path


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


def _small_class_members(view: ProjectView, facts: FileFacts,
                         types: tuple[str, ...]) -> tuple[frozenset[str], str] | None:
    """(members, name) when every type alternative is one project class whose whole ancestry is
    the project's own, spelled out: no upstream or third-party base, no `__getattr__`."""
    names = {kind[2:] for kind in types if kind[:2] in ("R:", "T:")}
    if len(names) != 1 or len(types) != 1:
        return None
    cls = view.project_class(view.dotted(facts, names.pop()))
    if cls is None:
        return None
    chain, upstream = view.ancestry(cls)
    if any(_opaque(view, member) for member in chain):
        return None
    if upstream:
        return None
    return view.provided(cls), cls.fact.name


def _opaque(view: ProjectView, member: ProjectClass) -> bool:
    """Whether the class may hold more than it spells out: a `__getattr__` (or its like), or a
    base outside the project (MagicMock, a third-party class), which may hold anything."""
    if member.fact.getattr_sources or member.fact.getattr_names \
            or {"__getattr__", "__getattribute__"} & {m.name for m in member.fact.methods}:
        return True
    return len(member.fact.bases) != sum(view.project_class(view.dotted(member.facts, b)) is not None
                                         for b in member.fact.bases if b != "object") + ("object" in member.fact.bases)


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
        reached_from_root(resolver, borrower, root, provided, values,
                          {name: members for name, (members, _) in built.items()}, lacks)
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
                raises = _now_raises(borrower, before[index], after[index])
                yield finding("SGC313", root.facts, root.position, f"{now.owner}.{root.name}",
                              severity="error" if raises else None,
                              cls=borrower.cls.fact.name, upstream=now.qualname, changed=change[0],
                              total=change[1], old=ctx.old_version, new=ctx.new_version,
                              diff=body_preview(ctx, was, now), raises=raises)


def _now_raises(borrower: Borrower, was: dict[str, Needed], now: dict[str, Needed]) -> str:
    """The change matters for sure when the call now reaches a read the class cannot answer: it
    raises (the attribute's own finding is SGC312's). What to say of it, or ""."""
    news = sorted(attr for attr in now if attr not in was)
    if not news:
        return ""
    need = now[news[0]]
    return (f"; the call now reaches a read of self.{news[0]}, which {borrower.cls.fact.name} "
            f"never sets, so it raises AttributeError: {' -> '.join(need.path)}")
