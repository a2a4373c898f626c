"""Attribute contracts (SGC321, SGC322): attributes that the new release lost, read on
upstream-typed objects (SGC321) or on untyped objects named like an upstream class (SGC322).

The receiver's type comes from annotations, constructor calls, `self` in a subclass and the
project's typed attributes (see resolve.py); class attributes read through an imported
class (`Scheduler.some_constant`) count too. A class that defines `__getattr__` can answer
any name, so reads on it are never reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

import ast

from sglang_contracts.contracts.base import CheckContext, Process, Reads, contract, fixes
from sglang_contracts.contracts.imports import upstream_reads
from sglang_contracts.analysis.resolve import Instance, Resolver, project_view, resolvers
from sglang_contracts.analysis.migrated import (asks_upstream, import_needed_names, migration_fields, project_sites,
                                                upstream_migrations)
from sglang_contracts.diagnostics import Diagnostic, built_per_file, finding
from sglang_contracts.infra.memo import Codec
from sglang_contracts.migrations.learn import Question
from sglang_contracts.project.facts import FileFacts, Position, ReadFact
from sglang_contracts.project.index import mentions
from sglang_contracts.project.named_reads import named_reads, names_in_files, snake_name
from sglang_contracts.upstream.model import Member, UpstreamModel, is_upstream


@dataclass
class LostAttribute:
    facts: FileFacts
    position: Position
    owner: str  # the upstream class that had it (qualified)
    attr: str
    was: Member
    now_origins: list[str]  # the receiver's classes in the new release
    unverified: str | None = None  # why the new release may still set it at run time (a warning)
    scope: str | None = None  # the function the read is in, where the read's facts say


def lookup(resolver: Resolver, instances: list[Instance], attr: str) -> tuple[Member | None, bool, bool]:
    """(an upstream member, provided by the project, answered dynamically) over the alternatives."""
    found = None
    for instance in instances:
        member, provided = resolver.attribute(instance, attr)
        if provided:
            return None, True, False
        if instance.origin and resolver.model.member(instance.origin, "__getattr__") is not None:
            return None, False, True
        found = found or member
    return found, False, False


def _super_instances(resolver: Resolver, facts: FileFacts, read: ReadFact) -> list[Instance] | None:
    view = resolver.view
    cls = view.classes.get(f"{facts.module}.{read.receiver.types[0][2:]}")
    if cls is None or any(read.attr in parent.fact.provided for parent in view.ancestry(cls)[0][1:]):
        return None
    return [Instance(origin=origin) for origin in resolver.upstream_bases(cls)] or None


def read_instances(resolver: Resolver, facts: FileFacts, read: ReadFact) -> list[Instance] | None:
    """The instances a read's receiver stands for: its types, else (where the bump changed the
    attribute) what astroid infers it to be."""
    if read.receiver.types[0].startswith("U:"):
        return _super_instances(resolver, facts, read) if not read.receiver.attrs else None
    found = resolver.receiver(facts, read.receiver)
    if found is None and not read.store:
        found = resolver.inferred(facts, read.position, read.attr)
    return found


def _typed_losses(ctx: CheckContext) -> Iterator[LostAttribute]:
    view = project_view(ctx)
    old, new = resolvers(ctx)
    for facts in ctx.project.files.values():
        for read in facts.reads:
            if read.store or read.attr_guarded:
                continue  # a guarded read falls back quietly: SGC804's to report
            if read.receiver.types[0].startswith("S:") and not read.receiver.attrs:
                cls = view.classes.get(f"{facts.module}.{read.receiver.types[0][2:]}")
                if cls is None or view.borrow_sources(cls):
                    continue  # borrowed through __getattr__: SGC311 and SGC312 judge those
            before = read_instances(old, facts, read)
            if not before:
                continue
            was, provided, dynamic = lookup(old, before, read.attr)
            if was is None or provided or dynamic:
                continue
            after = read_instances(new, facts, read)
            if not after:
                continue
            now, provided, dynamic = lookup(new, after, read.attr)
            if now is None and not provided and not dynamic:
                origins = [i.origin for i in after if i.origin]
                yield LostAttribute(facts, read.position, was.owner, read.attr, was, origins,
                                    _set_by_name_in(ctx.new, origins), read.scope)


def _class_attribute_losses(ctx: CheckContext) -> Iterator[LostAttribute]:
    """`Upstream.attr` read through an imported class (or a module path to it)."""
    for facts, chain, current in upstream_reads(ctx):
        if chain.attr_guarded:
            continue
        for attr, position in zip(chain.attrs, chain.positions):
            origin = ctx.old.resolve_class(current)
            if origin is not None:
                was = ctx.old.member(origin, attr)
                now_origin = ctx.new.resolve_class(current)
                if was is not None and now_origin is not None and ctx.new.member(now_origin, attr) is None \
                        and ctx.new.member(now_origin, "__getattr__") is None:
                    yield LostAttribute(facts, position, was.owner, attr, was, [now_origin],
                                        _set_by_name_in(ctx.new, [now_origin]))
                break
            current = f"{current}.{attr}"


def _set_by_name_in(model: UpstreamModel, origins: list[str]) -> str | None:
    """Why one of the receiver's classes may set the attribute at run time, where it does
    (SpeculativeAlgorithm in 0.5.5 registers NONE, EAGLE... with `setattr(cls, name, ...)`)."""
    return next((why for why in map(model.set_by_name, origins) if why), None)


def relocation(model: UpstreamModel, origins: list[str], attr: str) -> str:
    """Where the new release makes the attribute findable: `.ps.tp_rank` through a typed attribute."""
    for origin in origins:
        for owner in model.mro(origin)[0]:
            for name, attribute in model.class_record(owner)["attributes"].items():
                for path in attribute.get("types", []):
                    holder = model.resolve_class(path) if is_upstream(path) else None
                    if holder is not None and model.member(holder, attr) is not None:
                        return f"; now reached as .{name}.{attr}?"
    return ""


def _report(code: str, ctx: CheckContext, lost: LostAttribute, **fields: str | None) -> Diagnostic:
    kind = {"method": "method", "property": "property"}.get(lost.was.kind, "attribute")
    if lost.unverified:  # not an error: the new release may set it, which cannot be read statically
        verdict, was = "is no longer declared", "was"
        hint = f"; could not verify: {lost.unverified}"
    else:
        verdict, was, hint = "no longer exists", "did", relocation(ctx.new, lost.now_origins, lost.attr)
    return finding(code, lost.facts, lost.position, f"{lost.owner}.{lost.attr}", owner=lost.owner.rsplit(".", 1)[-1],
                   severity="warning" if lost.unverified else None, attr=lost.attr, kind=kind,
                   verdict=verdict, was=was, old=ctx.old_version, new=ctx.new_version, hint=hint, **fields)


def _lost_attributes(ctx: CheckContext) -> list[LostAttribute]:
    return ctx.shared("lost attributes", lambda c: [*_typed_losses(c), *_class_attribute_losses(c)])


def _migrated(lost: LostAttribute) -> bool:
    """Whether upstream's migration is asked about: a loss verified, at a read in a known scope."""
    return not lost.unverified and lost.scope is not None


@contract("SGC321", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def attribute_removed(ctx: CheckContext) -> Iterator[Diagnostic]:
    # Each file's built only as far as the file lists them (campaign 12, R04: calls, alike).
    yield from built_per_file(_lost_attributes(ctx), lambda lost: lost.facts, lambda lost: lost.position,
                              lambda lost: _removed_finding(ctx, lost), "SGC321",
                              lambda lost: "warning" if lost.unverified else None)


def _removed_finding(ctx: CheckContext, lost: LostAttribute) -> Diagnostic:
    migration = _migration(ctx, lost) if _migrated(lost) else {}
    return _report("SGC321", ctx, lost, renamed_to=None if lost.unverified else renamed_attribute(ctx, lost),
                   **migration)


def _migration(ctx: CheckContext, lost: LostAttribute) -> dict:
    """What upstream did with its own reads of the attribute (`model_runner.tp_size` ->
    `get_parallel().tp_size`)."""
    answer = upstream_migrations(ctx).reads(lost.owner, lost.attr)
    fields = migration_fields(ctx, lost.facts, lost.position, lost.scope, answer, "expr", "reads", lambda plan: "")
    if "migrated" in fields:
        _without_redundant_conversion(ctx, lost, fields)
    return fields


# Builtin conversions a rewrite drops where the new release declares the new value of that type.
CONVERSIONS = ("int", "float", "str", "bool")


def _without_redundant_conversion(ctx: CheckContext, lost: LostAttribute, fields: dict) -> None:
    """`int(req.extend_range.length)` rewritten whole, as `req.extend_len`, where the new release
    declares `Req.extend_len` an int: the conversion is a no-op on the value upstream declares
    (and upstream reads it bare). Unsafe then: the declaration is upstream's word, not proven."""
    plan = fields["migrated"]
    use = project_sites(ctx).use(lost.facts, lost.position.line, lost.position.col, lost.scope)
    level = plan["level"]
    if use is None or level + 1 >= len(use.chain) or len(plan["write"]) != 1:
        return
    outer, where = use.chain[level + 1]
    read = use.chain[0][0]
    written = _parsed(plan["write"][0][1])
    if not (isinstance(outer, ast.Call) and isinstance(outer.func, ast.Name) and outer.func.id in CONVERSIONS
            and outer.func.id not in lost.facts.bindings() and isinstance(read, ast.Attribute)
            and isinstance(written, ast.Attribute) and ast.unparse(written.value) == ast.unparse(read.value)):
        return
    declared = {tuple(_declared_types(ctx.new, origin, written.attr)) for origin in lost.now_origins}
    if declared != {(outer.func.id,)}:
        return
    fields.update(migrated={**plan, "level": level + 1}, use_at=[where.line, where.col], fix_safety="unsafe",
                  migration=f"{fields['migration']}; the {outer.func.id}() around it is dropped: sglang "
                            f"{ctx.new_version} declares {written.attr} {outer.func.id}")


def _declared_types(model: UpstreamModel, origin: str, attr: str) -> list[str]:
    """The types the release declares a class's attribute or property to hold (`["int"]`)."""
    member = model.member(origin, attr)
    if member is None:
        return []
    return member.record.get("returns" if member.kind == "property" else "types", []) \
        if member.kind in ("property", "instance") else []


@asks_upstream("SGC321")
def _migration_questions(ctx: CheckContext) -> Iterator[Question]:
    for lost in _lost_attributes(ctx):
        if _migrated(lost):
            yield Question("reads", (lost.owner, lost.attr))


def _assignments(model: UpstreamModel, classes: list[str]) -> dict[tuple[str, str], str]:
    """(method, attribute) -> the value it assigns to `self.attribute`, over the classes' MROs."""
    found: dict[tuple[str, str], str] = {}
    for origin in classes:
        for owner in model.mro(origin)[0]:
            for method, record in (model.class_record(owner) or {}).get("methods", {}).items():
                for attr, value in record.get("assigns", {}).items():
                    found.setdefault((method, attr), value)
    return found


def renamed_attribute(ctx: CheckContext, lost: LostAttribute) -> str | None:
    """The attribute's new name, where the new release shows a rename in place: the method that
    set it now sets, to the same expression (not a bare constant), exactly one attribute the old
    release did not have."""
    if lost.was.kind != "instance":
        return None
    before = _assignments(ctx.old, [lost.owner])
    after = _assignments(ctx.new, lost.now_origins)
    renames = set()
    for (method, attr), value in before.items():
        if attr != lost.attr or isinstance(_parsed(value), ast.Constant):
            continue
        renames |= {name for (where, name), now in after.items()
                    if where == method and now == value and ctx.old.member(lost.owner, name) is None}
    return renames.pop() if len(renames) == 1 else None


def _rewrite_as_upstream(diagnostic: Diagnostic, workspace) -> bool:
    """The read rewritten as the finding's plan says (upstream's own reads: migrations/)."""
    from sglang_contracts.fix import python as python_edits  # libcst: only a fix run pays its import

    plan = diagnostic.data["migrated"]
    document = workspace.document(diagnostic.path)
    if not document.python:
        return False
    (_, text), = plan["write"]
    rewritten = python_edits.rewrite_read(document, *diagnostic.data["use_at"], text)
    if rewritten:
        import_needed_names(document, plan)
    return rewritten


def _parsed(value: str):
    try:
        return ast.parse(value, mode="eval").body
    except SyntaxError:
        return None


@fixes("SGC321")
def rewrite_read(diagnostic: Diagnostic, workspace) -> bool:
    """Read it as upstream now reads it (the finding's plan: migrations/), else under its new
    name where the new release renamed it in place."""
    import libcst
    from sglang_contracts.fix import python as python_edits  # libcst: only a fix run pays its import

    if diagnostic.data.get("migrated"):
        return _rewrite_as_upstream(diagnostic, workspace)
    attr = diagnostic.data["attr"]
    why = diagnostic.data.get("unmigrated")
    return python_edits.rename_at(diagnostic, workspace, (libcst.Name,),
                                  lambda name, new: name.with_changes(value=new) if name.value == attr else name,
                                  why or "the new release shows no rename in place")


# -- SGC322 ---------------------------------------------------------------------------------

def _named_classes(ctx: CheckContext, read_from: set[str]) -> dict[str, tuple[str, str]]:
    """snake name -> (the path the project imports it by, its origin in the old release), for
    upstream classes the project imports by name whose instance name (`Req` -> `req`) it reads
    attributes from. A name two different classes could claim is left out."""
    found: dict[str, set[tuple[str, str]]] = {}
    for facts in ctx.project.files.values():
        for fact in facts.imports:
            if fact.name is None or not fact.name[:1].isupper() or not is_upstream(fact.module):
                continue
            snake = snake_name(fact.name)
            if snake in read_from:
                origin = ctx.old.resolve_class(fact.target)
                if origin is not None:
                    found.setdefault(snake, set()).add((fact.target, origin))
    return {snake: min(pairs) for snake, pairs in found.items() if len({origin for _, origin in pairs}) == 1}


def _lost_names(ctx: CheckContext, path: str, origin: str) -> tuple[str | None, set[str]]:
    """(the class's origin in the new release, the names the old class had and it lacks), when
    both releases define the class fully upstream and neither answers names dynamically."""
    now = ctx.new.resolve_class(path)
    if now is None or ctx.old.mro(origin)[1] or ctx.new.mro(now)[1]:
        return now, set()
    if ctx.old.member(origin, "__getattr__") is not None or ctx.new.member(now, "__getattr__") is not None \
            or ctx.new.set_by_name(now):
        return now, set()  # the name may be answered or set at run time: a guess by name is not made
    return now, {name for name in ctx.old.member_names(origin) - ctx.new.member_names(now) if not name.startswith("__")}


def _named_losses(ctx: CheckContext) -> list[tuple[LostAttribute, str]]:
    """Reads of `req.attr` on an untyped `req` where `Req` lost `attr`, with the name read from
    (once a run: the questions to upstream's migrations ask of them too)."""
    return ctx.shared("named losses", lambda c: list(_each_named_loss(c)))


def _each_named_loss(ctx: CheckContext) -> Iterator[tuple[LostAttribute, str]]:
    names_by_file, suspects = ctx.of_placeless_project("named-losses", _suspects, SUSPECTS_KEPT)
    for snake, origin, now, lost in suspects:
        for attr in lost:
            found = list(_untyped_named_reads(ctx, names_by_file, snake, attr, origin, now))
            # Asked only of an attribute the project reads so: the search reads the whole release.
            if found and not _set_by_name(ctx.new, snake, attr):
                yield from found


def _suspects(ctx: CheckContext) -> tuple[dict[str, set[str]], list[tuple[str, str, str | None, list[str]]]]:
    """(the names each file reads from, and (snake name, origin in the old release, in the new,
    the attributes it lost that no project class provides) of each upstream class the project
    imports and reads by its instance's name): no position enters them."""
    names = names_in_files(ctx.project)
    names_by_file = names.read_from
    classes = _named_classes(ctx, set().union(*names_by_file.values()) if names_by_file else set())
    if not classes:
        return names_by_file, []
    view = project_view(ctx)
    provided = {name for cls in view.classes.values() for name in cls.fact.provided}
    claimed = {snake_name(name) for name in names.classes}  # the project's own `ModelRunner`
    suspects = []
    for snake, (path, origin) in sorted(classes.items()):
        if snake not in claimed:
            now, lost = _lost_names(ctx, path, origin)
            suspects.append((snake, origin, now, sorted(lost - provided)))
    return names_by_file, suspects


def _suspects_json(value: tuple[dict[str, set[str]], list[tuple[str, str, str | None, list[str]]]]) -> list:
    names_by_file, suspects = value
    return [{path: sorted(names) for path, names in names_by_file.items()}, [list(suspect) for suspect in suspects]]


def _suspects_from_json(data: list) -> tuple[dict[str, set[str]], list[tuple[str, str, str | None, list[str]]]]:
    names_by_file, suspects = data
    decoded = []
    for snake, origin, now, lost in suspects:
        if not (isinstance(snake, str) and isinstance(origin, str) and isinstance(now, (str, type(None)))):
            raise TypeError("not a suspect")
        decoded.append((snake, origin, now, [str(name) for name in lost]))
    return {str(path): {str(name) for name in names} for path, names in names_by_file.items()}, decoded


SUSPECTS_KEPT = Codec(_suspects_json, _suspects_from_json)


def _untyped_named_reads(ctx: CheckContext, names_by_file: dict[str, set[str]], snake: str, attr: str,
                         origin: str, now: str | None) -> Iterator[tuple[LostAttribute, str]]:
    project = ctx.project
    old, _ = resolvers(ctx)
    # Files that name SGLang (those the scanner read): elsewhere `scheduler` is more likely a
    # learning-rate scheduler than SGLang's.
    for relpath, facts in sorted(project.files.items()):
        if snake not in names_by_file.get(relpath, ()) or next(mentions(project.texts[relpath], attr), None) is None:
            continue
        # A read whose receiver the scanner typed is SGC321's to judge, whatever its type.
        typed = {read.position for read in facts.reads if read.attr == attr and read_instances(old, facts, read)}
        for position in named_reads(project, relpath, snake, attr):
            if position not in typed:
                was = ctx.old.member(origin, attr)
                yield LostAttribute(facts, position, was.owner, attr, was, [now] if now else []), snake


def _set_by_name(model: UpstreamModel, snake: str, attr: str) -> bool:
    """Whether code of the release sets `<snake>.<attr>` on an object of that name, as a hook
    given the instance does (0.5.19 sets `server_args._cuda_graph_config_locked` in
    arg_groups/cuda_graph_hook.py, not in ServerArgs): the class's own code no longer setting
    the attribute does not mean the instance lacks it."""
    assigned = re.compile(rf"(?<!\w){re.escape(snake)}\s*\.\s*{re.escape(attr)}\s*(?::[^=\n]*)?=(?!=)")
    return model.whole_release_search(
        f"set by name\0{snake}\0{attr}",
        lambda: any(assigned.search(text) is not None for _, text in model.texts_mentioning(attr)), bool)


@contract("SGC322", reads=Reads.WHOLE_PROJECT, process=Process.MAIN)
def attribute_removed_by_receiver_name(ctx: CheckContext) -> Iterator[Diagnostic]:
    yield from built_per_file(_named_losses(ctx), lambda pair: pair[0].facts, lambda pair: pair[0].position,
                              lambda pair: _report("SGC322", ctx, pair[0], receiver=pair[1],
                                                   **_named_migration(ctx, pair[0])),
                              "SGC322", lambda pair: "warning" if pair[0].unverified else None)


def _named_migration(ctx: CheckContext, lost: LostAttribute) -> dict:
    """What upstream did with its own reads of the attribute, for a read whose receiver only its
    name types: the learned rewrite is never more than unsafe here (the receiver may not be
    what its name says)."""
    if lost.unverified:
        return {}
    fields = _migration(ctx, lost)
    if "migrated" in fields:
        fields["fix_safety"] = "unsafe"
    return fields


@asks_upstream("SGC322")
def _named_migration_questions(ctx: CheckContext) -> Iterator[Question]:
    for lost, _ in _named_losses(ctx):
        if not lost.unverified:
            yield Question("reads", (lost.owner, lost.attr))


@fixes("SGC322")
def rewrite_named_read(diagnostic: Diagnostic, workspace) -> bool:
    """Read it as upstream now reads it, where upstream's own reads say how (the finding's plan)."""
    from sglang_contracts.fix import python as python_edits  # libcst: only a fix run pays its import

    ready = bool(diagnostic.data.get("migrated"))
    document = python_edits.document_to_rewrite(diagnostic, workspace, ready, diagnostic.data.get("unmigrated")
                                                or "upstream's own reads of the attribute show no rewrite")
    return document is not None and _rewrite_as_upstream(diagnostic, workspace)
