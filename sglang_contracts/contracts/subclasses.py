"""Subclass contracts (SGC301-SGC305): project classes that derive from upstream classes.

An override is matched with its upstream counterpart: the nearest upstream definition of
the same name, found through the project's own intermediate classes and upstream's bases.
A class whose `__getattr__` hands out an upstream class's methods (sglang-omni's
OmniScheduler) overrides them too: the upstream code it borrows calls `self.<name>()` and
reaches the project's method.
"""

from __future__ import annotations

import ast
from typing import Iterator

from sglang_contracts.analysis.body_changes import body_change, body_preview, definition
from sglang_contracts.analysis.borrowing import borrowers
from sglang_contracts.analysis.callers import passing_caller
from sglang_contracts.analysis.overrides import checked_classes, derived_classes, overrides, unaccepted_parameters
from sglang_contracts.analysis.resolve import ProjectClass, ProjectView, Resolver, project_view, resolvers
from sglang_contracts.contracts.base import CheckContext, Process, Reads, contract, fixes
from sglang_contracts.diagnostics import Diagnostic, finding
from sglang_contracts.infra.lines import source_segment
from sglang_contracts.infra.shapes import TableOf
from sglang_contracts.upstream.model import Member, Symbol, UpstreamModel


@contract("SGC301", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def override_of_removed_method(ctx: CheckContext) -> Iterator[Diagnostic]:
    for item in overrides(ctx):
        if item.new is None:
            yield finding("SGC301", item.cls.facts, item.method.position, f"{item.old.owner}.{item.method.name}",
                          cls=item.cls.fact.name, method=item.method.name, upstream=item.old.qualname,
                          old=ctx.old_version, new=ctx.new_version)


@contract("SGC302", reads=Reads.WHOLE_PROJECT, process=Process.MAIN)
def override_signature_out_of_date(ctx: CheckContext) -> Iterator[Diagnostic]:
    _, new = resolvers(ctx)
    for item in overrides(ctx):
        if item.new is None or item.new.kind != "method" or item.old.kind != "method" or item.method.name == "__init__":
            continue  # the project constructs its own subclass: upstream callers do not reach its __init__
        missing = unaccepted_parameters(item.method.params, item.old, item.new)
        if not missing:
            continue
        # Only an upstream caller that runs for the project and passes the parameter breaks the
        # override: one the project never reaches, or none at all (an interface method only the
        # project calls), leaves it working.
        caller = passing_caller(ctx, new, item.cls, item.method.name, item.new.record.get("params", []), missing)
        if caller is None:
            continue
        member, path, passed = caller
        defaults = parameter_defaults(ctx.new, item.new)
        kinds = {name: kind for name, kind, _ in item.new.record.get("params", [])}
        yield finding("SGC302", item.cls.facts, item.method.position, f"{item.new.owner}.{item.method.name}",
                      cls=item.cls.fact.name, method=item.method.name, upstream=item.new.qualname,
                      params=", ".join(passed), caller=member.qualname, call_path=" -> ".join(path),
                      old=ctx.old_version, new=ctx.new_version,
                      added=[(name, kinds.get(name, "ko"), defaults.get(name)) for name in passed])


def parameter_defaults(model: UpstreamModel, member: Member) -> dict[str, str]:
    """name -> the default as upstream writes it, for the parameters of an upstream method.
    Kept per release (a published release or a commit): reading it parses the whole module."""
    line = member.record.get("line")
    return model.whole_release_search(f"parameter-defaults\0{member.owner}\0{member.name}\0{line}",
                                      lambda: _parameter_defaults(model, member), TableOf(str))


def _parameter_defaults(model: UpstreamModel, member: Member) -> dict[str, str]:
    node, text = definition(model, member)
    if node is None:
        return {}
    arguments = node.args
    positional = arguments.posonlyargs + arguments.args
    pairs = list(zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults))
    pairs += [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None]
    return {a.arg: source_segment(text, d) or ast.unparse(d) for a, d in pairs}


@fixes("SGC302")
def accept_and_pass_on(diagnostic: Diagnostic, workspace) -> bool:
    """Add the parameters upstream callers now pass to the override, with upstream's defaults
    (keyword-only stays keyword-only), and pass them on where it calls the upstream method."""
    from sglang_contracts.fix import python as python_edits  # libcst: only a fix run pays its import

    document = workspace.document(diagnostic.path)
    if not document.python:
        return False
    added, left = [], []
    for name, kind, default in diagnostic.data["added"]:
        spelled = python_edits.plain_value(default, document) if default else None
        (added if spelled is not None and kind in ("pk", "ko") else left).append((name, kind, spelled))
    if left:
        document.note(diagnostic.line, diagnostic.col, "SGC302", ", ".join(name for name, _, _ in left) +
                      ": upstream gives no literal default; add it by hand")
    if not added:
        return False
    return python_edits.add_parameters(document, diagnostic.line, diagnostic.col, diagnostic.data["method"], added)




@contract("SGC303", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def overridden_method_body_changed(ctx: CheckContext) -> Iterator[Diagnostic]:
    # An override that also runs the upstream method it replaces (`Scheduler.m(self)`) gets
    # SGC313 there; one warning per upstream change is enough.
    borrowed = {(b.cls.key, root.name) for b in borrowers(ctx) for root in b.roots
                if root.via is not None or b.through_getattr}
    for item in overrides(ctx):
        if item.new is None or _abstract_on_either_side(item):
            continue  # an abstract stub's body is not behaviour an override mirrors
        if (item.cls.key, item.method.name) in borrowed:
            continue
        change = body_change(ctx.old, item.old, ctx.new, item.new)
        if change:
            yield finding("SGC303", item.cls.facts, item.method.position, f"{item.new.owner}.{item.method.name}",
                          cls=item.cls.fact.name, method=item.method.name, upstream=item.new.qualname,
                          changed=change[0], total=change[1], old=ctx.old_version, new=ctx.new_version,
                          diff=body_preview(ctx, item.old, item.new))


def _abstract_on_either_side(item) -> bool:
    return any("abstractmethod" in m.record.get("decorators", []) for m in (item.old, item.new))


def _abstract_methods(resolver: Resolver, cls: ProjectClass) -> dict[str, Member]:
    """Names whose nearest upstream definition is abstract."""
    found: dict[str, Member] = {}
    seen: set[str] = set()
    for origin in resolver.upstream_bases(cls):
        for owner in resolver.model.mro(origin)[0]:
            for name, method in resolver.model.class_record(owner)["methods"].items():
                if name in seen:
                    continue
                seen.add(name)
                if "abstractmethod" in method.get("decorators", []):
                    found[name] = Member(owner, name, "method", method)
    return found


@contract("SGC304", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def new_abstract_method(ctx: CheckContext) -> Iterator[Diagnostic]:
    view = project_view(ctx)
    old, new = resolvers(ctx)
    for cls in derived_classes(ctx):
        before = _abstract_methods(old, cls)
        provided = view.provided(cls)
        for name, member in sorted(_abstract_methods(new, cls).items()):
            if name not in before and name not in provided:
                yield finding("SGC304", cls.facts, cls.fact.position, f"{member.owner}.{name}", cls=cls.fact.name,
                              method=name, upstream=member.qualname, old=ctx.old_version, new=ctx.new_version)


@contract("SGC305", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def base_class_gone(ctx: CheckContext) -> Iterator[Diagnostic]:
    view = project_view(ctx)
    for cls in checked_classes(ctx):
        for written in cls.fact.bases:
            gone = _gone_base(ctx, view, cls, written)
            if gone is not None:
                dotted, now = gone
                yield finding("SGC305", cls.facts, cls.fact.position, dotted, cls=cls.fact.name, base=dotted,
                              now=now, old=ctx.old_version, new=ctx.new_version)


def _gone_base(ctx: CheckContext, view: ProjectView, cls: ProjectClass, written: str) -> tuple[str, str] | None:
    """(dotted base, what it became) for an upstream base class of the old release that the new
    one no longer has as a class; None otherwise."""
    dotted = view.dotted(cls.facts, written)
    if not dotted or view.project_class(dotted) is not None or ctx.old.resolve_class(dotted) is None:
        return None
    if ctx.new.resolve_class(dotted) is not None:
        return None
    now = _what_base_became(ctx.new.resolve_path(dotted), written)
    return (dotted, now) if now is not None else None


def _what_base_became(symbol: Symbol, written: str) -> str | None:
    if symbol.missing and "." not in written:
        return None  # a bare imported name: the broken import is reported where it is (SGC102)
    if symbol.status == "unknown" or symbol.found and symbol.kind == "class":
        return None  # not knowable, or a class whose definition lies outside SGLang
    return f"is now a {symbol.kind}" if symbol.found else "no longer exists"
