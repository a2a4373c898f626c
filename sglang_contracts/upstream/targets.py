"""What a dotted upstream path names in one release, down to class members:
`sglang.x.y.Class.method`, `module.name`.

Used wherever the project names an upstream object by a path rather than by a typed read:
calls of imported callables, monkeypatch targets, `mock.patch` strings, `getattr` strings,
citations of copied code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sglang_contracts.upstream.model import DEEPEST_MODULE, Member, Signature, Symbol, UpstreamModel


FUNCTION_KINDS = ("function", "method")


@dataclass(frozen=True)
class Target(Symbol):
    """A Symbol that may also be a class member, with the record it was found from."""

    record: dict[str, Any] | None = None  # the function record (functions, methods) or the attribute's
    member: Member | None = None

    @property
    def callable(self) -> bool:
        return self.found and self.kind in FUNCTION_KINDS and self.record is not None

    @property
    def static(self) -> bool:
        """Defined by the release's text: not an instance attribute first assigned outside `__init__`."""
        if not self.found:
            return False
        return not (self.member is not None and self.member.kind == "instance" and not self.member.record.get("line"))

    def as_member(self) -> Member:
        """A function target as a Member, for code that compares methods (bodies, parameters)."""
        if self.member is not None:
            return self.member
        owner, _, name = (self.origin or "").rpartition(".")
        return Member(owner, name, self.kind or "function", self.record or {})


UNKNOWN_TARGET = Target("unknown")


def resolve_target(model: UpstreamModel, dotted: str) -> Target:
    """What `dotted` names in one release, looking into classes for their members."""
    symbol = model.resolve_path(dotted)
    if symbol.status != "unknown":
        if not symbol.found:
            return Target("missing")
        record = model.function_record(symbol.origin) if symbol.kind == "function" else None
        return Target("found", symbol.kind, symbol.origin, record=record)
    parts = dotted.split(".")
    for split in range(min(len(parts) - 1, DEEPEST_MODULE + 1), 0, -1):  # a class is in a module
        origin = model.resolve_class(".".join(parts[:split]))
        if origin is None:
            continue
        if split != len(parts) - 1:
            return UNKNOWN_TARGET  # an attribute of a member: its type decides, not this path
        return _member_target(model, origin, parts[-1])
    return UNKNOWN_TARGET


def _member_target(model: UpstreamModel, origin: str, name: str) -> Target:
    """What member `name` of the class at `origin` is."""
    member = model.member(origin, name)
    if member is None:
        # answered by __getattr__, or set by name at run time (a registry): not known to be gone
        dynamic = model.member(origin, "__getattr__") is not None or model.set_by_name(origin) is not None
        return UNKNOWN_TARGET if dynamic else Target("missing")
    kind = "method" if member.kind in ("method", "property") else member.kind
    origin_path = f"{member.owner}.{member.name}"
    record = member.record if member.kind == "method" else None
    return Target("found", kind if record is not None else member.kind, origin_path, record=record, member=member)


def callable_signature(model: UpstreamModel, dotted: str) -> tuple[Signature, Member | None] | None:
    """What calling the object at `dotted` binds to in one release: a class's constructor, a
    function, or a method reached through its class (`Scheduler.step(self, ...)`), with the
    method's member; None when it is no callable the release shows."""
    target = resolve_target(model, dotted)
    if target.found and target.kind == "class" and target.origin:
        signature = model.constructor(target.origin)
        return (signature, None) if signature else None
    if not target.callable:
        return None
    if target.member is None:
        return model.function_signature(target.origin), None
    return model.method_signature(target.member, bound=False), target.member
