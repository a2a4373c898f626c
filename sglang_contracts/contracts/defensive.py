"""Defensive-access contracts (SGC801-SGC803): probes of upstream state that both releases
define statically, so the fallback they guard is dead code keeping another release alive.

These judge the two releases together and are useful on the pin alone (`--old X --new X`):
a name defined by both is defined by the pin.
"""

from __future__ import annotations

from typing import Iterator

from sglang_contracts.contracts.base import CheckContext, contract
from sglang_contracts.contracts.resolve import Resolver, project_view, resolvers
from sglang_contracts.contracts.serverargs import field_sets, typed_as_server_args
from sglang_contracts.contracts.targets import upstream_dotted, where_defined
from sglang_contracts.upstream.targets import Target, resolve_target
from sglang_contracts.diagnostics import Diagnostic, finding
from sglang_contracts.project.facts import FileFacts, Receiver
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
        member, provided = resolver.attribute(instance, name)
        if provided or member is None:
            return None
        if instance.origin and resolver.model.member(instance.origin, "__getattr__") is not None:
            return None
        target = Target("found", member.kind, f"{member.owner}.{name}", member=member)
        if not target.static:
            return None
        found = found or target
    return found


def _static(ctx: CheckContext, facts: FileFacts, subject: Receiver, name: str) -> tuple[Target, Target] | None:
    """(old, new) definitions of `subject.name` when both releases define it statically."""
    if subject.types[0].startswith("U:"):
        return None
    if subject.types[0].startswith("C:"):
        owner = upstream_dotted(project_view(ctx), facts, subject.types[0][2:])
        if owner is None:
            return None
        old, new = resolve_target(ctx.old, f"{owner}.{name}"), resolve_target(ctx.new, f"{owner}.{name}")
        if old.kind == "module":
            return None  # a submodule is an attribute only once something imported it
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


@contract("SGC801")
def probe_of_static_attribute(ctx: CheckContext) -> Iterator[Diagnostic]:
    for facts in ctx.project.files.values():
        for probe in facts.probes:
            if not (probe.function == "hasattr" and probe.nargs == 2 or probe.function == "getattr" and probe.nargs == 3):
                continue
            if probe.subject is None or probe.string_at(1) is None:
                continue
            name, position = probe.string_at(1)
            both = _static(ctx, facts, probe.subject, name)
            if both is not None:
                yield finding("SGC801", facts, position, both[1].origin or name, call=probe.function,
                              attr=_owner_name(both[1]), where=_where(ctx.new, both[1]),
                              old=ctx.old_version, new=ctx.new_version)


@contract("SGC802")
def attribute_error_guard_of_static_attribute(ctx: CheckContext) -> Iterator[Diagnostic]:
    for facts in ctx.project.files.values():
        accesses = [(read.receiver, read.attr, read.position) for read in facts.reads if read.attr_guarded and not read.store]
        for chain in facts.attributes:
            if chain.attr_guarded and not chain.store:
                for index, (attr, position) in enumerate(zip(chain.attrs, chain.positions)):
                    prefix = ".".join((chain.root, *chain.attrs[:index]))
                    accesses.append((Receiver((f"C:{prefix}",)), attr, position))
        for receiver, attr, position in accesses:
            both = _static(ctx, facts, receiver, attr)
            if both is not None and both[1].kind != "module":
                yield finding("SGC802", facts, position, both[1].origin or attr, attr=_owner_name(both[1]),
                              where=_where(ctx.new, both[1]), old=ctx.old_version, new=ctx.new_version)


def _introspected(ctx: CheckContext, model: UpstreamModel, dotted: str, function: str, fields) -> tuple | None:
    """What `inspect.signature(X)` or `dataclasses.fields(X)` sees of X in one release."""
    resolver = resolvers(ctx)[0 if model is ctx.old else 1]
    if function == "fields":
        if fields is not None and model.resolve_path(dotted).origin == SERVER_ARGS:
            return tuple(sorted(fields.fields))
        origin = model.resolve_class(dotted)
        signature = model.constructor(origin) if origin else None
        return tuple(sorted(signature.names())) if signature is not None and signature.dataclass else None
    callee = resolver.object_at(dotted)
    return callee.signature.params if callee is not None else None


@contract("SGC803")
def release_switch_by_introspection(ctx: CheckContext) -> Iterator[Diagnostic]:
    view = project_view(ctx)
    old_fields, new_fields = field_sets(ctx)
    for facts in ctx.project.files.values():
        bound = {fact.bound: fact.target for fact in facts.imports}
        for probe in facts.probes:
            head, _, last = probe.function.rpartition(".")
            origin = f"{bound.get(head, head)}.{last}" if head else bound.get(last, "")
            kind = {"inspect.signature": "signature", "dataclasses.fields": "fields"}.get(origin)
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
