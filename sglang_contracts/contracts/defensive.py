"""Defensive-access contracts (SGC801-SGC804): probes of upstream state that both releases
define statically, so the fallback they guard is dead code keeping another release alive;
and probes of state the new release removed, so the fallback now always runs.

SGC801-SGC803 judge the two releases together and are useful on the pin alone
(`--old X --new X`): a name defined by both is defined by the pin.
"""

from __future__ import annotations

from typing import Iterator

from sglang_contracts.contracts.attributes import lookup, relocation
from sglang_contracts.contracts.base import CheckContext, Process, Reads, contract
from sglang_contracts.analysis.resolve import Resolver, project_view, resolvers
from sglang_contracts.contracts.serverargs import field_sets, typed_as_server_args
from sglang_contracts.analysis.targets import upstream_dotted, where_defined
from sglang_contracts.upstream.targets import Target, resolve_target
from sglang_contracts.diagnostics import Diagnostic, finding
from sglang_contracts.project.facts import FileFacts, Position, Receiver
from sglang_contracts.upstream.model import Member, UpstreamModel
from sglang_contracts.upstream.serverargs import SERVER_ARGS


def _typed_member(resolver: Resolver, facts: FileFacts, receiver: Receiver, name: str, fields) -> Target | None:
    """What `name` is on a typed receiver in one release: a static upstream definition, or None."""
    if fields is not None and typed_as_server_args(resolver, facts, receiver):
        field = fields.fields.get(name)
        return Target("found", "field", f"{SERVER_ARGS}.{name}",
                      member=Member(field.owner, name, "field", {"line": field.line})) if field else None
    instances = resolver.receiver(facts, receiver)
    if not instances:
        return None
    found = None
    for instance in instances:
        target = _static_member_of(resolver, instance, name)
        if target is None:
            return None
        found = found or target
    return found


def _static_member_of(resolver: Resolver, instance, name: str) -> Target | None:
    """The instance's static upstream definition of `name`; None for a name the project provides,
    one answered dynamically (`__getattr__`) or one not defined statically."""
    member, provided = resolver.attribute(instance, name)
    if provided or member is None:
        return None
    if instance.origin and resolver.model.member(instance.origin, "__getattr__") is not None:
        return None
    target = Target("found", member.kind, f"{member.owner}.{name}", member=member)
    return target if target.static else None


def _path_targets(ctx: CheckContext, facts: FileFacts, subject: Receiver,
                  name: str) -> tuple[str, Target, Target] | None:
    """(the upstream path, old, new) of `name` on a subject that names an upstream class or
    module (`C:` kinds), or None when the subject stands for nothing upstream."""
    owner = upstream_dotted(project_view(ctx), facts, subject.types[0][2:])
    if owner is None:
        return None
    return owner, resolve_target(ctx.old, f"{owner}.{name}"), resolve_target(ctx.new, f"{owner}.{name}")


def _static(ctx: CheckContext, facts: FileFacts, subject: Receiver, name: str) -> tuple[Target, Target] | None:
    """(old, new) definitions of `subject.name` when both releases define it statically."""
    if subject.types[0].startswith("U:"):
        return None
    if subject.types[0].startswith("C:"):
        targets = _path_targets(ctx, facts, subject, name)
        if targets is None or targets[1].kind == "module":
            return None  # a submodule is an attribute only once something imported it
        _, old, new = targets
        return (old, new) if old.static and new.static else None
    old_fields, new_fields = field_sets(ctx)
    old_resolver, new_resolver = resolvers(ctx)
    old = _typed_member(old_resolver, facts, subject, name, old_fields)
    new = _typed_member(new_resolver, facts, subject, name, new_fields) if old else None
    return (old, new) if old and new else None


def _owner_name(target: Target) -> str:
    parts = (target.origin or "").split(".")
    return ".".join(parts[-2:]) if len(parts) > 1 and parts[-2][:1].isupper() else parts[-1]


def _where(model: UpstreamModel, target: Target) -> str:
    return where_defined(model, target) or target.origin or ""


def _probes(facts: FileFacts) -> Iterator[tuple[str, Receiver, str, Position, bool]]:
    """(function, subject, name, position of the name, whether the file says the subject may be
    None) of each `getattr(x, "name", default)` and `hasattr(x, "name")`."""
    for probe in facts.probes:
        if not (probe.function == "hasattr" and probe.nargs == 2 or probe.function == "getattr" and probe.nargs == 3):
            continue
        if probe.subject is not None and probe.string_at(1) is not None:
            name, position = probe.string_at(1)
            yield probe.function, probe.subject, name, position, probe.nullable


def _guarded_reads(facts: FileFacts) -> Iterator[tuple[Receiver, str, Position, bool]]:
    """(receiver, attribute, position, whether the receiver may be None) of each read under
    `try:` whose handler catches AttributeError."""
    for read in facts.reads:
        if read.attr_guarded and not read.store:
            yield read.receiver, read.attr, read.position, read.nullable
    for chain in facts.attributes:
        if chain.attr_guarded and not chain.store:
            for index, (attr, position) in enumerate(zip(chain.attrs, chain.positions)):
                yield Receiver((f"C:{'.'.join((chain.root, *chain.attrs[:index]))}",)), attr, position, False


def _may_be_none(ctx: CheckContext, facts: FileFacts, subject: Receiver, nullable: bool) -> bool:
    """Whether the probed object may be None, so the probe's fallback handles None and is no
    dead code: a name annotated `T | None` (or defaulting to, or bound to, None), or an upstream
    attribute that either release annotates `Optional[T]` or sets to None (`batch.result` of
    `result: Optional[Result] = None`)."""
    if nullable:
        return True
    if not subject.attrs or subject.types[0].startswith(("C:", "U:")):
        return False
    holder = Receiver(subject.types, subject.attrs[:-1])
    for resolver in resolvers(ctx):
        for instance in resolver.receiver(facts, holder) or ():
            member, _ = resolver.attribute(instance, subject.attrs[-1])
            if member is not None and member.record.get("nullable"):
                return True
    return False


@contract("SGC801", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def probe_of_static_attribute(ctx: CheckContext) -> Iterator[Diagnostic]:
    for facts in ctx.project.files.values():
        for function, subject, name, position, nullable in _probes(facts):
            both = _static(ctx, facts, subject, name)
            if both is not None and not _may_be_none(ctx, facts, subject, nullable):
                yield finding("SGC801", facts, position, both[1].origin or name, call=function,
                              attr=_owner_name(both[1]), where=_where(ctx.new, both[1]),
                              old=ctx.old_version, new=ctx.new_version)


@contract("SGC802", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def attribute_error_guard_of_static_attribute(ctx: CheckContext) -> Iterator[Diagnostic]:
    for facts in ctx.project.files.values():
        for receiver, attr, position, nullable in _guarded_reads(facts):
            both = _static(ctx, facts, receiver, attr)
            if both is not None and both[1].kind != "module" and not _may_be_none(ctx, facts, receiver, nullable):
                yield finding("SGC802", facts, position, both[1].origin or attr, attr=_owner_name(both[1]),
                              where=_where(ctx.new, both[1]), old=ctx.old_version, new=ctx.new_version)


def _removed(ctx: CheckContext, facts: FileFacts, subject: Receiver, name: str) -> tuple[Target, str] | None:
    """(the old release's static definition of `subject.name`, a hint at its new spelling) when
    the new release provably defines no such name: its classes answer no names dynamically and
    inherit nothing from outside SGLang, and the project provides none."""
    if subject.types[0].startswith("U:"):
        return None
    if subject.types[0].startswith("C:"):
        return _removed_on_path(ctx, facts, subject, name)
    old_fields, new_fields = field_sets(ctx)
    old_resolver, new_resolver = resolvers(ctx)
    old = _typed_member(old_resolver, facts, subject, name, old_fields)
    if old is None:
        return None
    if new_fields is not None and typed_as_server_args(new_resolver, facts, subject):
        return (old, "") if name not in new_fields.fields else None
    instances = new_resolver.receiver(facts, subject)
    if not _none_defines(ctx, new_resolver, instances, name):
        return None
    return old, relocation(ctx.new, [i.origin for i in instances if i.origin], name)


def _removed_on_path(ctx: CheckContext, facts: FileFacts, subject: Receiver, name: str) -> tuple[Target, str] | None:
    """_removed for a subject that names an upstream class or module (`C:` kinds)."""
    targets = _path_targets(ctx, facts, subject, name)
    if targets is None:
        return None
    owner, old, new = targets
    cls = ctx.new.resolve_class(owner)
    if not (old.static and old.kind != "module" and new.missing) or cls is not None and ctx.new.mro(cls)[1]:
        return None
    return old, relocation(ctx.new, [cls] if cls else [], name)


def _none_defines(ctx: CheckContext, resolver: Resolver, instances, name: str) -> bool:
    """Whether the new release's instances provably lack `name`: upstream classes inheriting nothing
    from outside SGLang, with no such member, none provided by the project, none answered dynamically."""
    if not instances or any(i.origin is None or ctx.new.mro(i.origin)[1] for i in instances):
        return False
    member, provided, dynamic = lookup(resolver, list(instances), name)
    return not (member is not None or provided or dynamic)


@contract("SGC804", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def probe_of_removed_attribute(ctx: CheckContext) -> Iterator[Diagnostic]:
    for facts in ctx.project.files.values():
        accesses = [(f"{function}() probes", subject, name, position)
                     for function, subject, name, position, _ in _probes(facts)]
        accesses += [("`except AttributeError` guards", receiver, attr, position)
                     for receiver, attr, position, _ in _guarded_reads(facts)]
        for how, subject, name, position in accesses:
            removed = _removed(ctx, facts, subject, name)
            if removed is not None:
                old, hint = removed
                yield finding("SGC804", facts, position, old.origin or name, how=how, attr=_owner_name(old),
                              where=_where(ctx.old, old), old=ctx.old_version, new=ctx.new_version, hint=hint)


def _introspected(ctx: CheckContext, model: UpstreamModel, dotted: str, function: str, fields) -> tuple | None:
    """What `inspect.signature(X)` or `dataclasses.fields(X)` sees of X in one release."""
    resolver = resolvers(ctx)[0 if model is ctx.old else 1]
    if function == "fields":
        if fields is not None and model.resolve_path(dotted).origin == SERVER_ARGS:
            # dataclasses.fields() raises on the namespaces' shape: the same names are not the same answer.
            return fields.shape, tuple(sorted(fields.fields))
        origin = model.resolve_class(dotted)
        signature = model.constructor(origin) if origin else None
        return tuple(sorted(signature.names())) if signature is not None and signature.dataclass else None
    callee = resolver.object_at(dotted)
    return callee.signature.params if callee is not None else None


INTROSPECTIONS = {"inspect.signature": "signature", "dataclasses.fields": "fields"}


def _introspection(bound: dict[str, str], function: str) -> str | None:
    """"signature" or "fields" for a call of `inspect.signature` or `dataclasses.fields` as imported."""
    head, _, last = function.rpartition(".")
    origin = f"{bound.get(head, head)}.{last}" if head else bound.get(last, "")
    return INTROSPECTIONS.get(origin)


@contract("SGC803", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def release_switch_by_introspection(ctx: CheckContext) -> Iterator[Diagnostic]:
    view = project_view(ctx)
    old_fields, new_fields = field_sets(ctx)
    for facts in ctx.project.files.values():
        bound = {fact.bound: fact.target for fact in facts.imports}
        for probe in facts.probes:
            kind = _introspection(bound, probe.function)
            if kind is None or probe.subject is None or not probe.subject.types[0].startswith("C:"):
                continue
            dotted = upstream_dotted(view, facts, probe.subject.types[0][2:])
            if dotted is None:
                continue
            before = _introspected(ctx, ctx.old, dotted, kind, old_fields)
            after = _introspected(ctx, ctx.new, dotted, kind, new_fields)
            if before is not None and before == after:
                yield finding("SGC803", facts, probe.position, dotted, call=probe.function,
                              target=".".join(dotted.split(".")[-2:]), what=kind, old=ctx.old_version,
                              new=ctx.new_version)
