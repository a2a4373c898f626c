"""Mirrored-copy contracts (SGC706, SGC707): upstream code the project copied by hand and cites.

The cited object is found in each release (a function, a method, or a class, whose methods'
bodies are then compared together); bodies are compared normalised, so formatting, comments
and line numbers never count as a change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from sglang_contracts.contracts.base import CheckContext, Process, Reads, contract
from sglang_contracts.analysis.body_changes import body_change
from sglang_contracts.upstream.targets import resolve_target
from sglang_contracts.diagnostics import Diagnostic, finding_at
from sglang_contracts.project.mirrors import Citation, mirror_citations
from sglang_contracts.upstream.model import Member, UpstreamModel, is_upstream


@dataclass
class Cited:
    qualname: str  # the upstream object's dotted path in this release
    member: Member  # its body (for a class: its methods' bodies, in order)


def _class_as_member(model: UpstreamModel, origin: str) -> Member:
    """The class as one body: its methods' bodies in name order (UpstreamModel.body_lines)."""
    return Member(origin, origin.rsplit(".", 1)[-1], "class", {"whole_class": True})


def locate(model: UpstreamModel, dotted: str) -> Cited | None:
    """The function, method or class at `dotted` in this release."""
    if not is_upstream(dotted):
        return None
    target = resolve_target(model, dotted)
    if target.found and target.kind == "class" and model.class_record(target.origin):
        return Cited(target.origin, _class_as_member(model, target.origin))
    if target.callable:
        return Cited(target.origin, target.as_member())
    return None


def _target_in(citation: Citation, found: dict[str, list[str]]) -> str | None:
    """The dotted path a citation names: as written, or the one module that defines a bare name."""
    if citation.kind == "path":
        return citation.target
    head = citation.target.split(".")[0]
    modules = found.get(head, [])
    return f"{modules[0]}.{citation.target}" if len(modules) == 1 else None  # ambiguous: not judged


@dataclass
class MirrorOutcome:
    citation: Citation
    old: Cited
    new: Cited | None


def _outcomes(ctx: CheckContext) -> list[MirrorOutcome]:
    citations = mirror_citations(ctx.project)
    names = {c.target.split(".")[0] for c in citations if c.kind == "name"}
    found = ctx.old.find_definitions(names) if names else {}
    # Many comments may cite one object: each is located once per release, and its outcome's
    # Cited objects are shared, not rebuilt (a class's joined method bodies) per citation.
    located: dict[tuple[str, str], Cited | None] = {}

    def once(side: str, model: UpstreamModel, dotted: str) -> Cited | None:
        if (side, dotted) not in located:
            located[side, dotted] = locate(model, dotted)
        return located[side, dotted]

    outcomes = []
    for citation in citations:
        target = _target_in(citation, found)
        old = once("old", ctx.old, target) if target else None
        if old is not None:
            outcomes.append(MirrorOutcome(citation, old, once("new", ctx.new, old.qualname)))
    return outcomes


def mirror_outcomes(ctx: CheckContext) -> list[MirrorOutcome]:
    return ctx.shared("mirrors", _outcomes)


@contract("SGC706", reads=Reads.FILE_AND_IMPORTS, process=Process.COPY)
def mirrored_code_changed(ctx: CheckContext) -> Iterator[Diagnostic]:
    changes: dict[tuple[str, str], tuple[int, int] | None] = {}  # the diff once per cited object
    for outcome in mirror_outcomes(ctx):
        if outcome.new is None:
            continue
        pair = (outcome.old.qualname, outcome.new.qualname)
        if pair not in changes:
            changes[pair] = body_change(ctx.old, outcome.old.member, ctx.new, outcome.new.member)
        change = changes[pair]
        if change:
            c = outcome.citation
            yield finding_at("SGC706", c.path, c.line, c.col, outcome.new.qualname, upstream=outcome.new.qualname,
                             changed=change[0], total=change[1], old=ctx.old_version, new=ctx.new_version)


@contract("SGC707", reads=Reads.FILE_AND_IMPORTS, process=Process.COPY)
def mirrored_code_gone(ctx: CheckContext) -> Iterator[Diagnostic]:
    moved_names = {o.old.qualname.rsplit(".", 1)[-1] for o in mirror_outcomes(ctx) if o.new is None}
    elsewhere = ctx.new.find_definitions(moved_names) if moved_names else {}
    for outcome in mirror_outcomes(ctx):
        if outcome.new is not None:
            continue
        name = outcome.old.qualname.rsplit(".", 1)[-1]
        homes = elsewhere.get(name, [])
        hint = f"; sglang {ctx.new_version} defines {name} in {homes[0]}" if len(homes) == 1 else ""
        c = outcome.citation
        yield finding_at("SGC707", c.path, c.line, c.col, outcome.old.qualname, upstream=outcome.old.qualname,
                         old=ctx.old_version, new=ctx.new_version, hint=hint)
