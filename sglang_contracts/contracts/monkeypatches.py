"""Monkeypatch contracts (SGC401-SGC404): upstream attributes the project replaces at run time.

A patch is an assignment to an attribute of an import-bound upstream object
(`RMSNorm.forward_cuda = f`, `import sglang.srt.models.utils as m; m.apply_qk_norm = f`,
`setattr(RMSNorm, "forward_cuda", f)`, `m.__dict__["n"] = f`, `vars(m)["n"] = f`, each also
with `sys.modules["sglang...."]` for `m`), seen through the project's own re-exports; the
original it saves (`_orig = RMSNorm.forward_cuda`) and calls is checked with it.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass
from typing import Iterator

from sglang_contracts.contracts.base import CheckContext, Process, Reads, contract
from sglang_contracts.contracts.calls import bind
from sglang_contracts.analysis.hints import moved_home, same_callable
from sglang_contracts.analysis.resolve import project_view
from sglang_contracts.analysis.body_changes import body_change
from sglang_contracts.analysis.overrides import unaccepted_parameters
from sglang_contracts.analysis.targets import upstream_dotted
from sglang_contracts.infra.pysource import absolute_import, parse_quietly
from sglang_contracts.infra.shapes import ListOf
from sglang_contracts.upstream.targets import Target, resolve_target
from sglang_contracts.diagnostics import Diagnostic, finding
from sglang_contracts.infra.wording import with_article
from sglang_contracts.project.facts import CallFact, FileFacts, FunctionFact, PatchFact
from sglang_contracts.project.index import from_imports
from sglang_contracts.upstream.model import Signature, UpstreamModel



@dataclass
class Patch:
    facts: FileFacts
    fact: PatchFact
    dotted: str  # the upstream path it replaces
    old: Target
    new: Target
    replacement: FunctionFact | None  # the project function assigned, when defined in the same file
    original_calls: list[CallFact]  # calls of the saved original


def _patches(ctx: CheckContext) -> list[Patch]:
    view = project_view(ctx)
    found = []
    for facts in ctx.project.files.values():
        functions = {function.name: function for function in facts.functions}
        for fact in facts.patches:
            if fact.kind != "replace":
                continue
            dotted = upstream_dotted(view, facts, fact.target)
            if dotted is None:
                continue
            old = resolve_target(ctx.old, dotted)
            if not old.found:
                continue  # the patch adds a name upstream never had: its own business
            found.append(Patch(facts, fact, dotted, old, resolve_target(ctx.new, dotted),
                               functions.get(fact.value or ""), _saved_original_calls(view, facts, dotted)))
    return found


def _saved_original_calls(view, facts: FileFacts, dotted: str) -> list[CallFact]:
    """The file's calls of the original it saved of the patched upstream path (`_orig = X.f`)."""
    saved = {p.value for p in facts.patches if p.kind == "save" and upstream_dotted(view, facts, p.target) == dotted}
    return [call for call in facts.calls if call.callee.types[0][2:] in saved and call.callee.types[0][:2] == "C:"]


def patches(ctx: CheckContext) -> list[Patch]:
    return ctx.shared("monkeypatches", _patches)


def _leaf(dotted: str) -> str:
    return ".".join(dotted.split(".")[-2:]) if dotted.split(".")[-2][:1].isupper() else dotted.rsplit(".", 1)[-1]


def _rename_hint(model: UpstreamModel, old_model: UpstreamModel, patch: Patch) -> str:
    """A name the new release added next to the lost one that looks like it, when it is verified
    to be the same definition renamed (its parameters and normalised body): a name that only
    looks alike is another object (an unrelated class), and patching it would be wrong."""
    if not patch.old.callable:
        return ""
    owner, _, name = patch.dotted.rpartition(".")
    names, before = _names_beside(model, old_model, owner)
    for close in difflib.get_close_matches(name, sorted(names - before), n=3, cutoff=0.6):
        renamed = resolve_target(model, f"{owner}.{close}")
        if renamed.callable and same_callable(old_model, patch.old.as_member(), model, renamed.as_member()):
            return f"; renamed to {close} (the same definition): patch it there"
    return ""


def _names_beside(model: UpstreamModel, old_model: UpstreamModel, owner: str) -> tuple[set[str], set[str]]:
    """(new, old) names of the owner: a class's methods (with its bases'), or a module's bindings."""
    origin = model.resolve_class(owner)
    if origin is not None:
        names = {n for o in model.mro(origin)[0] for n in model.class_record(o)["methods"]}
        old_origin = old_model.resolve_class(owner)
        before = {n for o in old_model.mro(old_origin)[0] for n in old_model.class_record(o)["methods"]} \
            if old_origin else set()
        return names, before
    record, old_record = model.module(owner), old_model.module(owner)
    return set(record.bindings) if record else set(), set(old_record.bindings) if old_record else set()


@contract("SGC401", reads=Reads.FILE_AND_IMPORTS, process=Process.COPY)
def patched_attribute_removed(ctx: CheckContext) -> Iterator[Diagnostic]:
    # A binding the module now takes inside a function is a bypass, SGC404's: one break, one finding
    lost = [patch for patch in patches(ctx) if patch.new.missing and not _local_imports_of(ctx, patch)]
    homes = _moved_homes(ctx, lost)
    for patch in lost:
        home = homes.get(patch.dotted)
        # Moved (the same definition elsewhere, verified): the code that runs is no longer the
        # patched one, for certain: an error. Gone: perhaps fixed upstream, a warning.
        hint = (f"; the same definition moved to {home}: patch it there" if home
                else _rename_hint(ctx.new, ctx.old, patch))
        yield finding("SGC401", patch.facts, patch.fact.position, patch.dotted, target=_leaf(patch.dotted),
                      severity="error" if home else None, kind=with_article(patch.old.kind or "name"),
                      old=ctx.old_version, new=ctx.new_version, hint=hint)


def _moved_homes(ctx: CheckContext, lost: list[Patch]) -> dict[str, str]:
    """dotted -> where the new release moved the very definition a patched module attribute had."""
    module_level = {patch.dotted for patch in lost if ctx.old.module_exists(patch.dotted.rpartition(".")[0])}
    if not module_level:
        return {}
    names = {dotted.rpartition(".")[2] for dotted in module_level}
    found = ctx.new.find_definitions(names)
    homes = {}
    for dotted in module_level:
        module, _, name = dotted.rpartition(".")
        home = moved_home(ctx.old, ctx.old.resolve_name(module, name), ctx.new, name, found.get(name, []), module)
        if home is not None:
            homes[dotted] = home
    return homes


def _signature(target: Target) -> Signature:
    """The parameters as the patched attribute is called through its owner (with `self` for methods)."""
    return Signature(tuple(map(tuple, target.record.get("params", []))), target.origin or "")


def _text(signature: Signature) -> str:
    marks = {"va": "*", "vk": "**"}
    parts = []
    for name, kind, default in signature.params:
        if kind == "ko" and not any(k == "va" for _, k, _ in signature.params) and "*" not in parts:
            parts.append("*")
        parts.append(f"{marks.get(kind, '')}{name}{'=' if default else ''}")
    return f"({', '.join(parts)})"


def _replacement_problems(patch: Patch) -> list[str]:
    """Why the replacement cannot stand in for the new upstream callable."""
    replacement = patch.replacement
    problems = [f"cannot take {name}"
                for name in unaccepted_parameters(replacement.params, patch.old.as_member(), patch.new.as_member())]
    new_names = {name for name, *_ in patch.new.record.get("params", [])}
    old_names = {name for name, *_ in patch.old.record.get("params", [])}
    for name, kind, has_default in replacement.params:
        if not has_default and kind in ("po", "pk", "ko") and name in old_names and name not in new_names:
            problems.append(f"still requires {name}")
    return problems


@contract("SGC402", reads=Reads.FILE_AND_IMPORTS, process=Process.COPY)
def patched_signature_changed(ctx: CheckContext) -> Iterator[Diagnostic]:
    for patch in patches(ctx):
        if not (patch.old.callable and patch.new.callable):
            continue
        old_signature, new_signature = _signature(patch.old), _signature(patch.new)
        if old_signature.params == new_signature.params:
            continue
        common = dict(target=_leaf(patch.dotted), old=ctx.old_version, new=ctx.new_version,
                      old_params=_text(old_signature), new_params=_text(new_signature))
        if patch.replacement is not None:
            problems = _replacement_problems(patch)
            if problems:
                yield finding("SGC402", patch.facts, patch.fact.position, patch.dotted,
                              what=f"the replacement {patch.replacement.name} {', '.join(problems)}", **common)
        yield from _original_call_findings(patch, old_signature, new_signature, common)


# How a call of the saved original fails on the new signature, by the call contracts' codes.
ORIGINAL_CALL_BREAKS = {"SGC201": "passes {} it no longer takes", "SGC202": "does not pass the new required {}"}


def _original_call_findings(patch: Patch, old_signature: Signature, new_signature: Signature,
                            common: dict) -> Iterator[Diagnostic]:
    """SGC402 for each call of the saved original that bound on the old signature, not the new."""
    for call in patch.original_calls:
        if bind(old_signature, call.args).problems:
            continue
        problems = bind(new_signature, call.args).problems
        if problems:
            detail = problems[0].detail if problems[0].code == "SGC203" else \
                ORIGINAL_CALL_BREAKS[problems[0].code].format(problems[0].detail)
            yield finding("SGC402", patch.facts, call.position, patch.dotted,
                          what=f"the call of the saved original {detail}", **common)


@contract("SGC403", reads=Reads.FILE_AND_IMPORTS, process=Process.COPY)
def patched_body_changed(ctx: CheckContext) -> Iterator[Diagnostic]:
    for patch in patches(ctx):
        if patch.old.callable and patch.new.callable:
            change = body_change(ctx.old, patch.old.as_member(), ctx.new, patch.new.as_member())
            if change:
                yield finding("SGC403", patch.facts, patch.fact.position, patch.dotted, target=_leaf(patch.dotted),
                              changed=change[0], total=change[1], old=ctx.old_version, new=ctx.new_version)


def _callers(model: UpstreamModel, dotted: str) -> dict[str, str]:
    """Methods of the patched method's class (and its bases) that reach it through `self`:
    {method name: Owner.method}."""
    owner, _, name = dotted.rpartition(".")
    origin = model.resolve_class(owner)
    if origin is None:
        return {}
    callers: dict[str, str] = {}
    for cls in model.mro(origin)[0]:
        for method, record in model.class_record(cls)["methods"].items():
            if method != name and method not in callers and name in record.get("reads", []):
                callers[method] = f"{cls.rsplit('.', 1)[-1]}.{method}"
    return callers


def _has_method(model: UpstreamModel, dotted: str, method: str) -> bool:
    origin = model.resolve_class(dotted.rpartition(".")[0])
    return origin is not None and model.member(origin, method) is not None


def _from_importers(model: UpstreamModel, dotteds: list[str]) -> dict[str, set[str]]:
    """Modules of the release that bind each function by a module-level `from module import
    name` (each keeps the object it found when it was imported): {dotted: modules}, found in
    one pass over the release for all of them, each cached as its own search."""
    whats = {f"from-importers {dotted}": dotted for dotted in dict.fromkeys(dotteds)}
    found = model.whole_release_searches(
        whats, lambda wanted: [sorted(modules) for modules in _scan_from_importers(model, wanted)], ListOf(str))
    return {dotted: set(found[what]) for what, dotted in whats.items()}


def _scan_from_importers(model: UpstreamModel, dotteds: list[str]) -> list[set[str]]:
    targets = [dotted.rpartition(".") for dotted in dotteds]
    importers: list[set[str]] = [set() for _ in dotteds]
    for relpath, text in model.texts_mentioning_any({name for _, _, name in targets}):
        _add_from_importer(relpath, model.module_name_of(relpath), text, targets, importers)
    return importers


def _add_from_importer(relpath: str, importer: str, text: str, targets: list[tuple[str, str, str]],
                       importers: list[set[str]]) -> None:
    """Add the module to the importers of each target it binds by a module-level from-import."""
    statements = None  # parsed once, for the first target the text names
    for index, (module, _, name) in enumerate(targets):
        if name not in text:
            continue
        if statements is None:
            statements = list(from_imports(relpath, importer, text, module_level=True))
        if any(source == module and name in names for source, names in statements):
            importers[index].add(importer)


def _searched_paths(patch: Patch, side: str) -> set[str]:
    """Every path the patched function had on one side: the patched path and where it was defined."""
    origin = getattr(patch, side).origin
    return {patch.dotted, *((origin,) if origin else ())}


def _importers_of_patched(ctx: CheckContext) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    functions = [patch for patch in patches(ctx)
                 if patch.old.callable and patch.new.callable and patch.old.kind == "function"]
    return (_from_importers(ctx.old, sorted(set().union(*(_searched_paths(p, "old") for p in functions)))),
            _from_importers(ctx.new, sorted(set().union(*(_searched_paths(p, "new") for p in functions)))))


def _new_from_importers(ctx: CheckContext, patch: Patch) -> list[str]:
    """Modules that bind the patched function by `from ... import` in the new release and did
    not in the old one. The old side is searched under every path the function had there (the
    patched path and where it was defined), so a module that imported it from its defining
    module all along is no news. A module new in the release is a bypass only where the project
    imports it, or a module the old release had imports it (the name is now reached through it)."""
    old_importers, new_importers = ctx.shared("monkeypatch-importers", _importers_of_patched)
    before = set().union(*(old_importers[path] for path in _searched_paths(patch, "old")))
    after = set().union(*(new_importers[path] for path in _searched_paths(patch, "new")))
    news = _new_modules_not_imported(ctx, after - before)
    # A new module that code the old release had imports (at its top or inside a function) is
    # how the name is now reached: its binding is what that code now calls.
    reached = _reached_from_old_code(ctx, news)
    return sorted(module for module in after - before if module not in news or module in reached)


def _new_modules_not_imported(ctx: CheckContext, modules: set[str]) -> list[str]:
    """The modules new in the release that the project does not import (nor a submodule of)."""
    imported = {fact.module for facts in ctx.project.files.values() for fact in facts.imports}
    return sorted(module for module in modules if not ctx.old.module_exists(module)
                  and not any(i == module or i.startswith(f"{module}.") for i in imported))


def _reached_from_old_code(ctx: CheckContext, modules: list[str]) -> set[str]:
    """The modules (new in the release) that some module the old release had imports."""
    if not modules:
        return set()
    whats = {f"importers {module}": module for module in modules}

    def search(wanted: list[str]) -> list[list[str]]:
        importers: list[set[str]] = [set() for _ in wanted]
        for relpath, text in ctx.new.texts_mentioning_any(set(wanted)):
            importer = ctx.new.module_name_of(relpath)
            for index, module in enumerate(wanted):
                if module in text and any(source == module for source, _ in from_imports(relpath, importer, text)):
                    importers[index].add(importer)
        return [sorted(found) for found in importers]

    found = ctx.new.whole_release_searches(whats, search, ListOf(str))
    return {module for what, module in whats.items()
            if any(ctx.old.module_exists(importer) for importer in found.get(what) or ())}


def _local_imports(model: UpstreamModel, module: str, name: str) -> list[tuple[str, str]]:
    """(function, source module) of each `from source import name` inside a function of
    `module` (`Scheduler.__init__`), in the release of `model`: it binds the name when the
    function runs, from the source, never from `module`'s own attribute. A relative import
    (`from .utils import name`) names its module from `module`'s package."""
    found = model.module_text(module)
    if found is None or name not in found[1]:
        return []
    try:
        tree = parse_quietly(found[1], found[0])
    except (SyntaxError, ValueError):
        return []
    return sorted(_imports_in_functions(tree, module, found[0].endswith("__init__.py"), name))


def _imports_in_functions(tree: ast.AST, module: str, is_package: bool, name: str) -> list[tuple[str, str]]:
    """(function, source module) of each `from source import name` inside a function of the tree."""
    imports: list[tuple[str, str]] = []
    pending: list[tuple[ast.AST, str, bool]] = [(tree, "", False)]  # (node, qualified scope, in a function)
    while pending:
        node, scope, in_function = pending.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ImportFrom) and in_function and _imports_as_itself(child, name):
                source = absolute_import(child, module, is_package)
                if source:
                    imports.append((scope, source))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                pending.append(_entered(child, scope, in_function))
            elif isinstance(child, ast.stmt):
                pending.append((child, scope, in_function))
    return imports


def _imports_as_itself(node: ast.ImportFrom, name: str) -> bool:
    return any(alias.name == name and alias.asname in (None, name) for alias in node.names)


def _entered(definition: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, scope: str,
             in_function: bool) -> tuple[ast.AST, str, bool]:
    """(node, qualified scope, in a function) inside a function or class definition."""
    inner = f"{scope}.{definition.name}" if scope else definition.name
    return definition, inner, in_function or not isinstance(definition, ast.ClassDef)


def _local_imports_of(ctx: CheckContext, patch: Patch) -> list[tuple[str, str]]:
    """For a patch of the name a module bound by a module-level from-import (the object is
    defined elsewhere), which the new release's module no longer binds: the functions that now
    import it inside their bodies (`_local_imports`). Empty for any other patch."""
    if not (patch.new.missing and patch.old.kind == "function" and patch.old.origin
            and patch.old.origin != patch.dotted):
        return []
    memo = ctx.memo.setdefault("monkeypatch-local-imports", {})
    if patch.dotted not in memo:
        module, _, name = patch.dotted.rpartition(".")
        memo[patch.dotted] = _local_imports(ctx.new, module, name) if ctx.new.module_exists(module) else []
    return memo[patch.dotted]


# imports_anywhere: a module new in the release is news only if some file imports it (_new_from_importers).
@contract("SGC404", reads=Reads.IMPORTS_ANYWHERE, process=Process.COPY)
def patch_bypassed(ctx: CheckContext) -> Iterator[Diagnostic]:
    for patch in patches(ctx):
        local = _local_imports_of(ctx, patch)
        if local:
            yield _bound_inside_function_finding(ctx, patch, local[0])
            continue
        if not (patch.old.callable and patch.new.callable):
            continue
        common = dict(target=_leaf(patch.dotted), old=ctx.old_version, new=ctx.new_version)
        if patch.old.kind == "method":
            yield from _lost_callers_findings(ctx, patch, common)
        elif patch.old.kind == "function":
            for module in _new_from_importers(ctx, patch):
                yield finding("SGC404", patch.facts, patch.fact.position, patch.dotted,
                              how=f"{module} now binds it with `from ... import {patch.dotted.rsplit('.', 1)[-1]}` "
                                  f"at import time and keeps the unpatched original (it did not in {ctx.old_version})",
                              **common)


def _bound_inside_function_finding(ctx: CheckContext, patch: Patch, local: tuple[str, str]) -> Diagnostic:
    """SGC404 for a name the module now binds only inside a function, from its source."""
    module, _, name = patch.dotted.rpartition(".")
    function, source = local
    return finding("SGC404", patch.facts, patch.fact.position, patch.dotted, severity="error",
                   target=_leaf(patch.dotted), old=ctx.old_version, new=ctx.new_version,
                   how=f"{module} no longer binds {name} at import time (it did in {ctx.old_version}); "
                       f"{function} imports it from {source} when it runs, so what it calls is "
                       f"{source}.{name}, never the patched {module}.{name}: patch {source}.{name}")


def _lost_callers_findings(ctx: CheckContext, patch: Patch, common: dict) -> Iterator[Diagnostic]:
    """SGC404 for a patched method that methods of its class no longer reach through `self`."""
    before, after = _callers(ctx.old, patch.dotted), _callers(ctx.new, patch.dotted)
    lost = [caller for method, caller in before.items() if method not in after
            and (not after or _has_method(ctx.new, patch.dotted, method))]
    if lost:
        yield finding("SGC404", patch.facts, patch.fact.position, patch.dotted,
                      how=f"{', '.join(sorted(lost))} no longer reaches it (it did in {ctx.old_version})",
                      **common)
