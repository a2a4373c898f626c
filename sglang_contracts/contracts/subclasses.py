"""Subclass contracts (SGC301-SGC305): project classes that derive from upstream classes.

An override is matched with its upstream counterpart: the nearest upstream definition of
the same name, found through the project's own intermediate classes and upstream's bases.
A class whose `__getattr__` hands out an upstream class's methods (sglang-omni's
OmniScheduler) overrides them too: the upstream code it borrows calls `self.<name>()` and
reaches the project's method.
"""

from __future__ import annotations

import ast
import difflib
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator

from sglang_contracts.contracts.base import CheckContext, Process, Reads, contract, fixes
from sglang_contracts.contracts.resolve import ProjectClass, Resolver, project_view, resolvers
from sglang_contracts.infra.markdown import code_span
from sglang_contracts.diagnostics import Diagnostic, finding
from sglang_contracts.infra.lines import source_segment
from sglang_contracts.infra.pysource import parse_quietly
from sglang_contracts.project.facts import MethodFact
from sglang_contracts.upstream.model import Member, UpstreamModel


@dataclass
class Override:
    cls: ProjectClass
    method: MethodFact
    old: Member
    new: Member | None


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and name != "__init__"


def checked_classes(ctx: CheckContext) -> list[ProjectClass]:
    """The project classes of the files whose findings this run keeps (CheckContext.checked)."""
    classes = project_view(ctx).classes.values()
    return list(classes) if ctx.checked is None else [cls for cls in classes if cls.facts.path in ctx.checked]


def derived_classes(ctx: CheckContext) -> list[ProjectClass]:
    """Checked project classes with an upstream base in the old release (directly or through the project)."""
    old, _ = resolvers(ctx)
    return [cls for cls in checked_classes(ctx) if old.upstream_bases(cls)]


def _overriding_classes(ctx: CheckContext) -> list[ProjectClass]:
    """Checked derived classes, and those that borrow an upstream class's methods through `__getattr__`."""
    view = project_view(ctx)
    old, _ = resolvers(ctx)
    return [cls for cls in checked_classes(ctx) if old.upstream_bases(cls) or view.borrow_sources(cls)]


def _overrides(ctx: CheckContext) -> list[Override]:
    view = project_view(ctx)
    old, new = resolvers(ctx)
    found = []
    for cls in _overriding_classes(ctx):
        parents = view.ancestry(cls)[0][1:]
        # A class that only borrows builds itself: upstream code never runs its __init__ (what
        # the upstream one would have set is SGC312's to report).
        borrower_only = not old.upstream_bases(cls)
        for method in cls.fact.methods:
            if _is_dunder(method.name) or any(p.fact.method(method.name) for p in parents) \
                    or borrower_only and method.name == "__init__":
                continue  # overrides the project's own class, or a protocol method
            was = old.upstream_member(cls, method.name)
            if was is None or was.kind not in ("method", "property"):
                continue
            found.append(Override(cls, method, was, new.upstream_member(cls, method.name)))
    return found


def overrides(ctx: CheckContext) -> list[Override]:
    return ctx.shared("overrides", _overrides)


@contract("SGC301", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def override_of_removed_method(ctx: CheckContext) -> Iterator[Diagnostic]:
    for item in overrides(ctx):
        if item.new is None:
            yield finding("SGC301", item.cls.facts, item.method.position, f"{item.old.owner}.{item.method.name}",
                          cls=item.cls.fact.name, method=item.method.name, upstream=item.old.qualname,
                          old=ctx.old_version, new=ctx.new_version)


def unaccepted_parameters(override: tuple[tuple[str, str, bool], ...], old: Member, new: Member) -> list[str]:
    """Parameters the new upstream method has, the old one had not, and the override cannot take."""
    before = {p[0] for p in old.record.get("params", [])}
    names = {name for name, kind, _ in override if kind in ("pk", "ko")}
    takes_kwargs = any(kind == "vk" for _, kind, _ in override)
    takes_args = any(kind == "va" for _, kind, _ in override)
    positional_slots = sum(1 for _, kind, _ in override if kind in ("po", "pk"))
    missing = []
    new_params = new.record.get("params", [])
    for index, (name, kind, _) in enumerate(new_params):
        if name in before or kind in ("va", "vk"):
            continue
        by_keyword = name in names or takes_kwargs
        by_position = index < positional_slots or takes_args
        if kind == "ko" and not by_keyword or kind == "po" and not by_position or kind == "pk" and not (by_keyword or by_position):
            missing.append(name)
    return missing


@contract("SGC302", reads=Reads.WHOLE_PROJECT, process=Process.MAIN)
def override_signature_out_of_date(ctx: CheckContext) -> Iterator[Diagnostic]:
    from sglang_contracts.contracts.callers import passing_caller  # it builds on borrowed, which builds on this

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
                                      lambda: _parameter_defaults(model, member))


def _parameter_defaults(model: UpstreamModel, member: Member) -> dict[str, str]:
    node, text = _definition(model, member)
    if node is None:
        return {}
    arguments = node.args
    positional = arguments.posonlyargs + arguments.args
    pairs = list(zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults))
    pairs += [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None]
    return {a.arg: source_segment(text, d) or ast.unparse(d) for a, d in pairs}


def _definition(model: UpstreamModel, member: Member) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef | None, str]:
    """(an upstream function or method as its module defines it at its record's line, the
    module's text): from its own lines where the model finds them, else from the module's tree."""
    found = model.definition_node(member)
    if found is not None:
        return found
    relpath = model.relpath_of(member.owner)
    text = model.tree.read_source(relpath) if relpath else None
    line = member.record.get("line")
    tree = _parsed_module(text) if text and line else None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == member.name \
                and line in (node.lineno, *(d.lineno for d in node.decorator_list)):
            return node, text
    return None, text or ""


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


def body_change(old_model: UpstreamModel, old: Member, new_model: UpstreamModel, new: Member) -> tuple[int, int] | None:
    """(lines changed, lines of the two bodies aligned) between two releases' bodies, or None if
    equal. A changed line is one of a replaced, removed or added run (the longer side of each);
    the total counts the unchanged lines and the changed ones, so it is never below the count
    of changes (a body that lost lines is not "2 of 1")."""
    before, after = old_model.body_lines(old), new_model.body_lines(new)
    if before == after:
        return None
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    opcodes = matcher.get_opcodes()
    changed = sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in opcodes if tag != "equal")
    unchanged = sum(i2 - i1 for tag, i1, i2, _, _ in opcodes if tag == "equal")
    return changed, changed + unchanged


@lru_cache(maxsize=4)  # old and new of a module or two: trees are large
def _parsed_module(source: str):
    """An upstream module's tree, parsed once for all the previews of its methods (scheduler.py
    has a dozen the project overrides or borrows)."""
    try:
        return parse_quietly(source)
    except (SyntaxError, ValueError, RecursionError):
        return None


def _body_text(model: UpstreamModel, member: Member) -> list[str] | None:
    """The normalised lines of a method's body as text (what the record keeps hashed), kept
    per release (a published release or a commit): reading it parses the whole module."""
    line = member.record.get("line")
    return model.whole_release_search(f"body-text\0{member.owner}\0{member.name}\0{line}",
                                      lambda: _read_body_text(model, member))


def _read_body_text(model: UpstreamModel, member: Member) -> list[str] | None:
    from sglang_contracts.upstream.bodies import _statements, unparsed

    node, _ = _definition(model, member)
    if node is None:
        return None
    text = "\n".join(unparsed(statement) for statement in _statements(node))
    return [row.strip() for row in text.splitlines() if row.strip()]


def body_preview(ctx: CheckContext, old: Member, new: Member, lines: int = 3, width: int = 100) -> str:
    """The first changed lines of the upstream body (a unified diff of the normalised bodies),
    as "; first change: -old line | +new line", or "" where the sources cannot be read."""
    before, after = _body_text(ctx.old, old), _body_text(ctx.new, new)
    if before is None or after is None:
        return ""
    changed = [row for row in difflib.unified_diff(before, after, lineterm="", n=0)
               if row[:1] in "+-" and not row.startswith(("+++", "---"))]
    if not changed:
        return ""
    def clipped(row: str) -> str:
        # A long line changed in its middle: start near the change, past what the other side shares.
        others = [o[1:] for o in changed if o[:1] != row[:1]]
        shared = max((len(os.path.commonprefix([row[1:], o])) for o in others), default=0)
        text = row[1:] if shared <= 30 else "..." + row[1 + shared - 20:]
        # One code span per line, cut or not: a report that marks names as code (markdown)
        # would otherwise mark the halves of names the cut left.
        return row[0] + code_span(text if len(text) <= width else text[: width - 3] + "...")

    shown = [clipped(row) for row in changed[:lines]]
    more = f" | ({len(changed) - lines} more)" if len(changed) > lines else ""
    return "; first change: " + " | ".join(shown) + more


@contract("SGC303", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def overridden_method_body_changed(ctx: CheckContext) -> Iterator[Diagnostic]:
    from sglang_contracts.contracts.borrowed import borrowers  # it builds on this module

    # An override that also runs the upstream method it replaces (`Scheduler.m(self)`) gets
    # SGC313 there; one warning per upstream change is enough.
    borrowed = {(b.cls.key, root.name) for b in borrowers(ctx) for root in b.roots
                if root.via is not None or b.through_getattr}
    for item in overrides(ctx):
        if item.new is None or any("abstractmethod" in m.record.get("decorators", []) for m in (item.old, item.new)):
            continue  # an abstract stub's body is not behaviour an override mirrors
        if (item.cls.key, item.method.name) in borrowed:
            continue
        change = body_change(ctx.old, item.old, ctx.new, item.new)
        if change:
            yield finding("SGC303", item.cls.facts, item.method.position, f"{item.new.owner}.{item.method.name}",
                          cls=item.cls.fact.name, method=item.method.name, upstream=item.new.qualname,
                          changed=change[0], total=change[1], old=ctx.old_version, new=ctx.new_version,
                          diff=body_preview(ctx, item.old, item.new))


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
            dotted = view.dotted(cls.facts, written)
            if not dotted or view.project_class(dotted) is not None or ctx.old.resolve_class(dotted) is None:
                continue
            if ctx.new.resolve_class(dotted) is not None:
                continue
            symbol = ctx.new.resolve_path(dotted)
            if symbol.missing and "." not in written:
                continue  # a bare imported name: the broken import is reported where it is (SGC102)
            if symbol.status == "unknown" or symbol.found and symbol.kind == "class":
                continue  # not knowable, or a class whose definition lies outside SGLang
            now = f"is now a {symbol.kind}" if symbol.found else "no longer exists"
            yield finding("SGC305", cls.facts, cls.fact.position, dotted, cls=cls.fact.name, base=dotted,
                          now=now, old=ctx.old_version, new=ctx.new_version)
