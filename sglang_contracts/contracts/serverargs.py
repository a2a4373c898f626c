"""ServerArgs contracts (SGC501-SGC503): fields the project reads, writes, sets through its seam
or passes through its command line.

The field sets come from upstream/serverargs.py (both shapes). An object is judged as a
`ServerArgs` only where the project's code says so: an annotation, a constructor call, a
typed attribute (the project's or upstream's) or an upstream function's return annotation.
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass
from typing import Iterator

from sglang_contracts.contracts.base import CheckContext, Process, Reads, contract, fixes, import_outline
from sglang_contracts.contracts.commandline import prefixing_models
from sglang_contracts.analysis.configured import CONFIGURATION, configuration_text, entry_positions
from sglang_contracts.analysis.hints import rename_hint
from sglang_contracts.analysis.resolve import Resolver, project_view, resolvers
from sglang_contracts.diagnostics import Diagnostic, finding, finding_at
from sglang_contracts.infra.boundary import Problem, note, read_project_text
from sglang_contracts.infra.pysource import parse_shared
from sglang_contracts.infra.wording import plural
from sglang_contracts.migrations.sites import calls_on
from sglang_contracts.project.facts import FileFacts, ImportFact, Position, Receiver
from sglang_contracts.project.positions import SourcePositions
from sglang_contracts.project.texts import mentions_text
from sglang_contracts.upstream.model import UpstreamModel, is_upstream
from sglang_contracts.upstream.serverargs import SERVER_ARGS, FieldSet, FieldsUnreadable, server_args_fields

SKIP_LIST = re.compile(r"skip|exclude|ignore|drop|block|deny", re.I)


@import_outline("names-server-args")
def _imports_server_args(facts: FileFacts) -> bool:
    """Whether the file imports ServerArgs: the project's server-args rules run only if one does."""
    return any(_is_server_args_import(fact) for fact in facts.imports)


def _is_server_args_import(fact: ImportFact) -> bool:
    return fact.name == "ServerArgs" or fact.target == SERVER_ARGS


def _mentions_server_args(ctx: CheckContext) -> bool:
    return any(_imports_server_args(facts) for facts in ctx.project.files.values())


def _fields_or_why(model: UpstreamModel) -> FieldSet | FieldsUnreadable | None:
    try:
        return server_args_fields(model)
    except FieldsUnreadable as unreadable:
        return unreadable


def field_sets(ctx: CheckContext) -> tuple[FieldSet | None, FieldSet | None]:
    """Both releases' ServerArgs fields; (None, None) for a project that never names ServerArgs.
    A release whose ServerArgs yields no field (a plain class) gives None, said once by an SGC000
    at the project's first import of ServerArgs, not by each rule that reads the fields."""
    def compute(context: CheckContext) -> tuple[FieldSet | None, FieldSet | None]:
        if not _mentions_server_args(context):
            return None, None
        # The releases' alone (a resident process reads them once: 5% of omni's re-check).
        both = context.of_releases("server-args-fields", lambda c: (_fields_or_why(c.old), _fields_or_why(c.new)))
        unreadable = [side for side in both if isinstance(side, FieldsUnreadable)]
        if unreadable:
            _note_unreadable_fields(context, unreadable)
        old, new = (None if isinstance(side, FieldsUnreadable) else side for side in both)
        return old, new

    return ctx.shared("server-args-fields", compute)


def _note_unreadable_fields(ctx: CheckContext, unreadable: list[FieldsUnreadable]) -> None:
    """Say once, at the project's first import of ServerArgs, which release's fields are unreadable."""
    path, position = min(((facts.path, fact.position) for facts in ctx.project.files.values()
                          for fact in facts.imports if _is_server_args_import(fact)),
                         key=lambda site: (site[0], site[1].line, site[1].col))
    note(Problem(path, position.line, position.col,
                 f"read the ServerArgs fields of {' and '.join(dict.fromkeys(side.release for side in unreadable))}",
                 unreadable[0].why, internal=False, module=SERVER_ARGS,
                 unchecked="the contracts with its fields are not checked"))


def _names_server_args(model: UpstreamModel, dotted: str | None, called: bool) -> bool:
    """Does the upstream path stand for ServerArgs (or, called, for a function returning one)?"""
    if not dotted or not is_upstream(dotted):
        return False
    symbol = model.resolve_path(dotted)
    if symbol.found and symbol.origin == SERVER_ARGS:
        return True
    if called and symbol.found and symbol.kind == "function":
        record = model.function_record(symbol.origin)
        return bool(record) and SERVER_ARGS in record.get("returns", [])
    return False


def typed_as_server_args(resolver: Resolver, facts: FileFacts, receiver: Receiver) -> bool:
    """Does the receiver stand for a ServerArgs in this release (every alternative)? Kept with
    the run's analyses, per release, file and receiver: a receiver recurs across a file's reads
    (`self.server_args.x` in every method), and the checks of doubles.py and defensive.py ask again."""
    known = resolver.view.ctx.memo.setdefault("typed as server args", {}).setdefault(id(resolver), {})
    key = (facts.path, receiver)
    verdict = known.get(key)
    if verdict is None:
        verdict = known[key] = _typed_as_server_args(resolver, facts, receiver)
    return verdict


def _typed_as_server_args(resolver: Resolver, facts: FileFacts, receiver: Receiver) -> bool:
    view, model = resolver.view, resolver.model
    if not receiver.types or any(kind.startswith(("C:", "U:")) for kind in receiver.types):
        return False
    if not receiver.attrs:
        return all(kind[:2] in ("T:", "R:")
                   and _names_server_args(model, view.dotted(facts, kind[2:]), kind[:2] == "R:")
                   for kind in receiver.types)
    holders = resolver.receiver(facts, Receiver(receiver.types, receiver.attrs[:-1]))
    if not holders:
        return False
    name = receiver.attrs[-1]
    return all(_holds_server_args(resolver, holder, name) for holder in holders)


def _holds_server_args(resolver: Resolver, holder, name: str) -> bool:
    """Is the holder's attribute `name` typed as a ServerArgs (a project class's or upstream's)?"""
    if holder.project is not None:
        kinds = resolver.project_attribute_kinds(holder.project, name) or ()
        owner = resolver.owner_facts(holder.project, name)
        return bool(kinds) and typed_as_server_args(resolver, owner, Receiver(kinds))
    member = resolver.model.member(holder.origin, name)
    types = (member.record.get("returns" if member.kind == "property" else "types", []) if member else [])
    return SERVER_ARGS in types


@dataclass
class FieldUse:
    facts: FileFacts
    position: Position
    field: str
    how: str  # "read", "write", "keyword", "seam"
    scope: str


def _seams(ctx: CheckContext) -> list[str]:
    """The declared seams as dotted paths (`pkg.module:function` or `pkg.module.function`)."""
    return [seam.replace(":", ".") for seam in ctx.settings.get("server-args-seam", [])]


def _in_seam(facts: FileFacts, scope: str, seams: list[str]) -> bool:
    here = f"{facts.module}.{scope}" if scope else facts.module
    return any(here == seam or here.startswith(seam + ".") for seam in seams)


def _uses(ctx: CheckContext) -> list[FieldUse]:
    old_fields, _ = field_sets(ctx)
    if old_fields is None:
        return []
    view = project_view(ctx)
    old, new = resolvers(ctx)
    seams = _seams(ctx)
    # While both releases make ServerArgs a class, the call and attribute contracts judge its
    # constructor keywords (SGC204) and typed reads (SGC321).
    constructor_judged = ctx.old.resolve_class(SERVER_ARGS) is not None \
        and ctx.new.resolve_class(SERVER_ARGS) is not None
    uses = []
    for facts in ctx.project.files.values():
        uses.extend(_read_uses(facts, old, new, constructor_judged))
        uses.extend(_probe_uses(facts, old, new))
        uses.extend(_call_uses(ctx, view, facts, seams, constructor_judged))
    return uses


def _typed_in_both(old: Resolver, new: Resolver, facts: FileFacts, receiver: Receiver) -> bool:
    return typed_as_server_args(old, facts, receiver) and typed_as_server_args(new, facts, receiver)


def _read_uses(facts: FileFacts, old: Resolver, new: Resolver, constructor_judged: bool) -> Iterator[FieldUse]:
    """The file's attribute reads and writes of a ServerArgs (writes alone while the constructor is judged)."""
    for read in facts.reads:
        if (read.store or not constructor_judged) and _typed_in_both(old, new, facts, read.receiver):
            yield FieldUse(facts, read.position, read.attr, "write" if read.store else "read", read.scope)


def _probe_uses(facts: FileFacts, old: Resolver, new: Resolver) -> Iterator[FieldUse]:
    """The file's `getattr`/`hasattr`/`setattr` of a ServerArgs with a literal field name."""
    for probe in facts.probes:
        if probe.function in ("getattr", "hasattr", "setattr") and probe.subject is not None and probe.string_at(1) \
                and _typed_in_both(old, new, facts, probe.subject):
            text, position = probe.string_at(1)
            yield FieldUse(facts, position, text, "write" if probe.function == "setattr" else "read", probe.scope)


def _call_uses(ctx: CheckContext, view, facts: FileFacts, seams: list[str],
               constructor_judged: bool) -> Iterator[FieldUse]:
    """The keywords the file passes to a seam or (while not judged as a class's) to ServerArgs()."""
    for call in facts.calls:
        kind = call.callee.types[0]
        if not kind.startswith("C:") or call.callee.attrs:
            continue
        dotted = view.dotted(facts, kind[2:])
        if dotted in seams:
            how = "seam"
        elif not constructor_judged and _names_server_args(ctx.old, dotted, False):
            how = "keyword"
        else:
            continue
        yield from (FieldUse(facts, arg.position, arg.name, how, call.scope) for arg in call.args if arg.kind == "kw")


def field_uses(ctx: CheckContext) -> list[FieldUse]:
    return ctx.shared("server-args-uses", _uses)


def _rename(ctx: CheckContext, field: str, old: FieldSet, new: FieldSet) -> str:
    return rename_hint(ctx.old, ctx.new, field, old, new)  # verified: declared alike (analysis/hints.py)


def _owner(field_set: FieldSet, field: str) -> str:
    return field_set.fields[field].owner.rsplit(".", 1)[-1]


@contract("SGC501", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def server_args_field_removed(ctx: CheckContext) -> Iterator[Diagnostic]:
    old_fields, new_fields = field_sets(ctx)
    if old_fields is None or new_fields is None:
        return
    how = {"read": "read", "write": "written", "keyword": "passed to ServerArgs()", "seam": "set through the seam"}
    for use in field_uses(ctx):
        if use.field in old_fields and use.field not in new_fields:
            yield finding("SGC501", use.facts, use.position, f"{SERVER_ARGS}.{use.field}", field=use.field,
                          how=how[use.how], owner=_owner(old_fields, use.field), old=ctx.old_version,
                          new=ctx.new_version, hint=_rename(ctx, use.field, old_fields, new_fields))


@contract("SGC502", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def server_args_written_outside_seam(ctx: CheckContext) -> Iterator[Diagnostic]:
    seams = _seams(ctx)
    _, new_fields = field_sets(ctx)
    if not seams or new_fields is None:
        return
    for use in field_uses(ctx):
        if use.how == "write" and use.field in new_fields and not _in_seam(use.facts, use.scope, seams):
            yield finding("SGC502", use.facts, use.position, f"{SERVER_ARGS}.{use.field}", field=use.field,
                          seam=", ".join(seams), owner=_owner(new_fields, use.field), old=ctx.old_version,
                          new=ctx.new_version)


def _pass_through_files(ctx: CheckContext) -> list[FileFacts]:
    """Files that build the `--sglang-<field>` flags from `ServerArgs.add_cli_args`."""
    view = project_view(ctx)
    found = []
    for facts in ctx.project.files.values():
        if not mentions_text(ctx.project.texts, facts.path, "add_cli_args"):
            continue  # a call of it names it: the file's calls are not decoded (most files')
        for call in facts.calls:
            kind = call.callee.types[0]
            written = kind[2:]
            if kind.startswith("C:") and written.endswith(".add_cli_args") \
                    and _names_server_args(ctx.old, view.dotted(facts, written.rpartition(".")[0]), False):
                found.append(facts)
                break
    return found


def _is_fields_call(facts: FileFacts, function: str) -> bool:
    bound = {fact.bound: fact.target for fact in facts.imports}
    return function == "dataclasses.fields" and bound.get("dataclasses") == "dataclasses" \
        or function == "fields" and bound.get("fields") == "dataclasses.fields"


FIELDS_READER = "msgspec.structs.fields"  # what reads a msgspec Struct's fields, ServerArgs's from 0.5.20
# What a msgspec FieldInfo and a dataclasses.Field both hold, meaning the same (a default that
# is not set is msgspec.NODEFAULT on one and dataclasses.MISSING on the other; only one has metadata).
READ_ALIKE = frozenset({"name", "type"})


def _fields_migration(ctx: CheckContext, facts: FileFacts, at: Position) -> dict:
    """How the new release reads ServerArgs's fields itself (msgspec.structs.fields), and the
    fix's plan where it is certain: the project reads the fields only for what both kinds hold alike."""
    examples = ctx.of_releases("server-args fields readers", lambda c: calls_on(c.new, FIELDS_READER, SERVER_ARGS))
    if not examples:
        return {"unmigrated": f"sglang {ctx.new_version} never reads ServerArgs's fields with {FIELDS_READER}"}
    said = {"migration": f"; upstream reads them with {FIELDS_READER}(ServerArgs) ({plural(len(examples), 'call')}, "
                         f"e.g. {examples[0]})"}
    text = ctx.project.texts.get(facts.path)
    if text is None or not fields_read_alike(text, facts.path, at):
        return {**said, "unmigrated": "the fields are read for more than their .name and .type, which a msgspec "
                                      "field spells otherwise (.default, .metadata): port the call by hand"}
    return {**said, "fields_reader": FIELDS_READER}


def fields_read_alike(text: str, relpath: str, at: Position) -> bool:
    """Whether the fields the call whose callee's last name is at `at` returns are read only
    for what both kinds of field hold alike: the call is what a comprehension or a `for` loop
    iterates, and its target name is read only as `.name` or `.type` there."""
    try:
        tree = parse_shared(text, relpath)
    except (SyntaxError, ValueError):
        return False
    where = SourcePositions(text)
    for node in ast.walk(tree):
        for scope, loop in _iterations(node):
            if _iterates_call_at(where, loop, at):
                return _target_read_alike(scope, loop)
    return False


def _iterations(node: ast.AST) -> list[tuple[ast.AST, ast.comprehension | ast.For]]:
    """The (scope, loop) pairs of a comprehension's generators or of a `for` loop (its body and else)."""
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        return [(node, generator) for generator in node.generators]
    if isinstance(node, ast.For):
        return [(ast.Module(body=node.body + node.orelse, type_ignores=[]), node)]
    return []


def _iterates_call_at(where: SourcePositions, loop: ast.comprehension | ast.For, at: Position) -> bool:
    """Does the loop bind a plain name to what the call whose callee's last name is at `at` returns?"""
    call = loop.iter
    if not isinstance(call, ast.Call) or not isinstance(loop.target, ast.Name):
        return False
    named = where.attribute_name(call.func) if isinstance(call.func, ast.Attribute) else where.start(call.func)
    return (named.line, named.col) == (at.line, at.col)


def _target_read_alike(scope: ast.AST, loop: ast.comprehension | ast.For) -> bool:
    """Is the loop's target read in the scope only as `.name` or `.type`?"""
    target = loop.target.id
    parents = {id(child): parent for parent in ast.walk(scope) for child in ast.iter_child_nodes(parent)}
    uses = [name for name in ast.walk(scope) if isinstance(name, ast.Name) and name.id == target
            and name is not loop.target]
    return all(isinstance(parents.get(id(name)), ast.Attribute) and parents[id(name)].attr in READ_ALIKE
               for name in uses)


@fixes("SGC503")
def read_fields_as_upstream(diagnostic: Diagnostic, workspace) -> bool:
    """`dataclasses.fields(ServerArgs)` -> `msgspec.structs.fields(ServerArgs)`, as the new
    release reads them, `import msgspec` added; the other findings are left."""
    from sglang_contracts.fix import python as python_edits  # libcst: only a fix run pays its import

    document = workspace.document(diagnostic.path)
    reader = diagnostic.data.get("fields_reader")
    if not document.python:
        return False
    if not reader:
        document.note(diagnostic.line, diagnostic.col, diagnostic.code, diagnostic.data.get("unmigrated")
                      or "only dataclasses.fields(ServerArgs) is rewritten; port the pass-through by hand")
        return False
    rewritten = python_edits.replace_callee(document, diagnostic.line, diagnostic.col, reader)
    if rewritten:
        document.imports_needed.add(reader.partition(".")[0])
    return rewritten


@contract("SGC503", reads=Reads.WHOLE_PROJECT, process=Process.MAIN)
def server_args_pass_through_out_of_date(ctx: CheckContext) -> Iterator[Diagnostic]:
    old_fields, new_fields = field_sets(ctx)
    if old_fields is None or new_fields is None:
        return
    common = dict(old=ctx.old_version, new=ctx.new_version)
    yield from _fields_call_findings(ctx, old_fields, new_fields, common)
    files = _pass_through_files(ctx)
    if not files:
        return
    # A wrapper this tool understands is judged on upstream's argparse interface itself
    # (SGC504-SGC507: destinations, option strings, skip lists); field names only stand in
    # for it where the wrapper's shape is not understood.
    wrappers = [model.wrapper for model in prefixing_models(ctx)]
    judged_by_command_line = bool(wrappers)
    skip_lists = {wrapper.skip_list for wrapper in wrappers}
    for facts in ctx.project.files.values() if not judged_by_command_line else ():
        yield from _gone_pass_through_findings(ctx, facts, old_fields, new_fields, common)
    for facts in files:
        yield from _string_lists_findings(ctx, facts, skip_lists, old_fields, new_fields, common)


def _fields_call_findings(ctx: CheckContext, old_fields: FieldSet, new_fields: FieldSet,
                          common: dict) -> Iterator[Diagnostic]:
    """Each `dataclasses.fields(ServerArgs)`, which raises once ServerArgs is no longer a dataclass:
    it copies the flags back by name, so it stops working with the shape."""
    if old_fields.shape != "dataclass" or new_fields.shape == "dataclass":
        return
    view = project_view(ctx)
    for facts in ctx.project.files.values():
        for probe in facts.probes:
            subject = probe.subject.types[0] if probe.subject else ""
            if _is_fields_call(facts, probe.function) and subject.startswith("C:") \
                    and _names_server_args(ctx.old, view.dotted(facts, subject[2:]), False):
                yield finding("SGC503", facts, probe.position, SERVER_ARGS, **common,
                              what="dataclasses.fields(ServerArgs) raises TypeError: ServerArgs is no longer "
                                   "a dataclass (its fields live on namespace structs)",
                              **_fields_migration(ctx, facts, probe.position))


def _pass_through_names(facts: FileFacts) -> list[tuple[str, Position, str]]:
    """The fields the file's `--sglang-<field>` flags and `sglang_<field>` attribute probes name."""
    names = [(flag.field, flag.position, flag.kind) for flag in facts.flags]
    names += [(probe.string_at(1)[0][len("sglang_"):], probe.string_at(1)[1], "attr") for probe in facts.probes
              if probe.function in ("getattr", "hasattr", "setattr") and probe.string_at(1)
              and probe.string_at(1)[0].startswith("sglang_")]
    return names


def _gone_pass_through_findings(ctx: CheckContext, facts: FileFacts, old_fields: FieldSet, new_fields: FieldSet,
                                common: dict) -> Iterator[Diagnostic]:
    """One removed field, one finding per file: at its first use, naming the lines of the others."""
    uses: dict[str, list[tuple[Position, str]]] = {}
    for field, position, kind in _pass_through_names(facts):
        if field in old_fields and field not in new_fields:
            uses.setdefault(field, []).append((position, kind))
    for field, found in uses.items():
        (position, kind), *more = sorted(found, key=lambda use: (use[0].line, use[0].col))
        spelled = f"--sglang-{field.replace('_', '-')}" if kind == "flag" else f"sglang_{field}"
        lines = sorted({p.line for p, _ in more} - {position.line})
        also = f" (used here on line{'s' * (len(lines) > 1)} {', '.join(map(str, lines))} too)" if lines else ""
        yield finding("SGC503", facts, position, f"{SERVER_ARGS}.{field}", **common,
                      what=f"the pass-through {spelled} names ServerArgs.{field}, which is gone"
                           f"{_rename(ctx, field, old_fields, new_fields)}{also}")


def _string_lists_findings(ctx: CheckContext, facts: FileFacts, skip_lists: set, old_fields: FieldSet,
                           new_fields: FieldSet, common: dict) -> Iterator[Diagnostic]:
    """The findings of the file's string lists of fields, but for a wrapper's skip lists."""
    for strings in facts.strings:
        if strings.name not in skip_lists:
            yield from _listed_fields_findings(ctx, facts, strings, old_fields, new_fields, common)


def _listed_fields_findings(ctx: CheckContext, facts: FileFacts, strings, old_fields: FieldSet,
                            new_fields: FieldSet, common: dict) -> Iterator[Diagnostic]:
    """A string list's removed fields, and the new fields an explicit list of them would drop."""
    listed = [text for text, _ in strings.items]
    for text, position in strings.items:
        if text in old_fields and text not in new_fields:
            yield finding("SGC503", facts, position, f"{SERVER_ARGS}.{text}", severity="warning", **common,
                          what=f"{strings.name} lists {text}, no longer a ServerArgs field"
                               f"{_rename(ctx, text, old_fields, new_fields)}")
    known = [text for text in listed if text in old_fields]
    if len(known) >= 3 and len(known) >= 0.8 * len(listed) and not SKIP_LIST.search(strings.name):
        yield from _dropped_new_fields(facts, strings, listed, old_fields, new_fields, common)


def _dropped_new_fields(facts: FileFacts, strings, listed: list[str], old_fields: FieldSet, new_fields: FieldSet,
                        common: dict) -> Iterator[Diagnostic]:
    """The new fields an explicit list of the old ones would drop."""
    added = sorted(set(new_fields.fields) - set(old_fields.fields) - set(listed))
    if added:
        shown = ", ".join(added[:5]) + (f" and {len(added) - 5} more" if len(added) > 5 else "")
        yield finding("SGC503", facts, strings.items[0][1], f"{SERVER_ARGS}", severity="warning",
                      **common, what=f"{strings.name} lists ServerArgs fields explicitly and would drop "
                                     f"{len(added)} new ones: {shown}")


@contract("SGC510", reads=Reads.WHOLE_PROJECT, process=Process.MAIN)
def server_args_seam_unresolved(ctx: CheckContext) -> Iterator[Diagnostic]:
    """A `server-args-seam` entry that names no function of the project: the fields set through
    the real seam go unchecked (SGC501), and nothing said so (campaign 18, R09)."""
    seams = ctx.settings.get("server-args-seam", [])
    if not seams:
        return
    modules = {facts.module: facts for facts in ctx.project.files.values() if facts.module}
    unresolved = [(seam, what) for seam in seams if (what := _seam_missing(ctx, modules, seam)) is not None]
    written = configuration_text(ctx.project.root) if unresolved else ""
    positions = entry_positions(written, {seam for seam, _ in unresolved})
    for seam, what in unresolved:
        line, col = positions.get(seam, (1, 1))  # its first line: the settings were read from another file
        yield finding_at("SGC510", CONFIGURATION, line, col, seam, seam=repr(seam), what=what,
                         old=ctx.old_version, new=ctx.new_version)


def _seam_missing(ctx: CheckContext, modules: dict[str, FileFacts], seam: str) -> str | None:
    """What a seam (`pkg.module:function`, `pkg.module.Class.method`) names that the project does
    not have, None when it has it or its module could not be read (SGC000 says so)."""
    module, _, inside = seam.partition(":")
    if not inside:
        module, inside = next(((seam[:cut], seam[cut + 1:]) for cut in _dots_from_the_right(seam)
                               if seam[:cut] in modules), (seam, ""))
    facts = modules.get(module)
    if facts is None:
        return "no module of the project"
    if facts.parse_error or facts.problem or not inside:
        return None if facts.parse_error or facts.problem else "a module, not a function of it"
    text = read_project_text(ctx.project.root / facts.path, ctx.project.root)
    try:
        scope: list[ast.stmt] = parse_shared(text).body if text is not None else []
    except (SyntaxError, ValueError):
        return None
    for part in inside.split("."):
        found = next((node for node in scope if isinstance(node, DEFINITIONS) and node.name == part), None)
        if found is None:
            return f"no function {inside} of {module}"
        scope = found.body
    return None


DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _dots_from_the_right(dotted: str) -> list[int]:
    return [index for index in range(len(dotted) - 1, 0, -1) if dotted[index] == "."]
