"""Import contracts (SGC101-SGC105): the upstream modules and names the project imports or reads."""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from dataclasses import dataclass
from typing import Iterator

from sglang_contracts.contracts.base import CheckContext, Process, Reads, contract, fixes
from sglang_contracts.analysis.hints import home_hint, module_hint, moved_home, moved_module
from sglang_contracts.analysis.migrated import asks_upstream, unlearned_fields, upstream_migrations
from sglang_contracts.migrations.edits import module_verdict
from sglang_contracts.migrations.learn import Question
from sglang_contracts.diagnostics import Diagnostic, built_per_file, finding
from sglang_contracts.project.facts import AttributeFact, FileFacts, ImportFact, Position
from sglang_contracts.project.releasefacts import upstream_stars
from sglang_contracts.project.stack import python_floor
from sglang_contracts.upstream.model import MISSING, Symbol, UpstreamModel, is_upstream


@dataclass
class ImportOutcome:
    facts: FileFacts
    fact: ImportFact
    change: str  # "module-gone", "name-gone", "origin-moved", "name-unverified" (the module sets names at run time)
    old: Symbol
    new: Symbol
    broken_on_old: bool  # the contract did not hold on the old release either
    hint: str = ""
    home: str | None = None  # where the new release defines the same object (what the fix imports)
    # of a star import's statement: the `*` itself, or a name it gives (releasefacts.with_star_names)
    star: bool = False


def _closest(candidates: list[str], reference: str) -> str | None:
    if not candidates:
        return None
    return max(candidates, key=lambda c: (len(os.path.commonprefix([c.split("."), reference.split(".")])), -len(c), c))


def _analyse_imports(ctx: CheckContext) -> list[ImportOutcome]:
    outcomes: list[ImportOutcome] = []
    for facts in ctx.checked_files():
        stars = {fact.module_position for fact in facts.imports if fact.name == "*"}  # a statement imports `*` or names
        for fact in facts.imports:
            if not is_upstream(fact.module) or _imported_by_name_through(ctx, fact):
                continue
            outcome = _analyse_one(ctx, facts, fact)
            if outcome is not None:
                outcome.star = fact.module_position in stars
                outcomes.append(outcome)
    _add_hints(ctx, outcomes)
    return outcomes


def _imported_by_name_through(ctx: CheckContext, fact: ImportFact) -> bool:
    """Whether a star import gives the name through a project module that imports it from the
    same SGLang module by name: that import is judged where it is, once, not again at each star
    import of the module (which fails with it)."""
    innermost = fact.through[-1] if fact.through else None
    return innermost is not None and \
        ctx.project.exports.get(innermost, {}).get(fact.name or "") == f"{fact.module}.{fact.name}"


def _analyse_one(ctx: CheckContext, facts: FileFacts, fact: ImportFact) -> ImportOutcome | None:
    old_module, new_module = ctx.old.module_exists(fact.module), ctx.new.module_exists(fact.module)
    if not new_module:
        # `from m import n` where the old release's m lacks n failed there already: not the bump's.
        name_lost_on_old = old_module and fact.name not in (None, "*") \
            and ctx.old.resolve_name(fact.module, fact.name).status == "missing"
        return ImportOutcome(facts, fact, "module-gone", _module_symbol(fact.module, old_module), MISSING,
                             not old_module or name_lost_on_old)
    if fact.name in (None, "*"):
        return None
    return _name_outcome(ctx, facts, fact, old_module)


def _module_symbol(module: str, exists: bool) -> Symbol:
    return Symbol("found", "module", module) if exists else MISSING


def _name_outcome(ctx: CheckContext, facts: FileFacts, fact: ImportFact, old_module: bool) -> ImportOutcome | None:
    """What became of the name a `from m import n` imports, from a module both releases have."""
    new = ctx.new.resolve_name(fact.module, fact.name)
    old = ctx.old.resolve_name(fact.module, fact.name) if old_module else MISSING
    if new.missing and not old.status == "unknown":
        return ImportOutcome(facts, fact, "name-gone", old, new, not old.found)
    if new.kind == "dynamic" and old.found and new.origin:
        return ImportOutcome(facts, fact, "name-unverified", old, new, False,
                             hint=f"; could not verify: {ctx.new.module_unverifiable(new.origin)}")
    if _origin_moved(fact, old, new):
        return ImportOutcome(facts, fact, "origin-moved", old, new, False)
    return None


def _origin_moved(fact: ImportFact, old: Symbol, new: Symbol) -> bool:
    """Whether the imported name is defined elsewhere in the new release, neither here nor where it was."""
    here = f"{fact.module}.{fact.name}"
    return old.found and new.found and old.origin != new.origin and here not in (old.origin, new.origin)


def _add_hints(ctx: CheckContext, outcomes: list[ImportOutcome]) -> None:
    """Where the new release defines the lost name or module elsewhere, say where, once the
    definition there is verified to be the same (analysis/hints.py)."""
    live = [o for o in outcomes if not o.broken_on_old and o.change in ("name-gone", "module-gone")]
    names = {o.fact.name for o in live if o.fact.name not in (None, "*")}
    found = ctx.new.find_definitions(names) if names else {}
    statements = _names_from_gone_modules(live)
    # Once per name a module lost, however often it is imported: each hint reads the release's
    # sources, and one import naming it 150,000 times took minutes (ninth campaign, R02).
    homes: dict[tuple[str, str], tuple[str, str | None]] = {}
    module_homes: dict[tuple[str, Position, str], tuple[str, str | None]] = {}  # the same, per statement
    for outcome in live:
        if outcome.change == "name-gone":
            key = (outcome.fact.module, outcome.fact.name)
            if key not in homes:
                reference = outcome.old.origin or outcome.fact.module
                candidates = found.get(outcome.fact.name, [])
                homes[key] = (home_hint(ctx.old, outcome.old, ctx.new, outcome.fact.name, candidates, reference),
                              moved_home(ctx.old, outcome.old, ctx.new, outcome.fact.name, candidates, reference))
            outcome.hint, outcome.home = homes[key]
            if outcome.star:
                outcome.home = None  # no statement imports the name: none to move (STAR_NOT_REWRITTEN)
        else:
            _add_module_hint(ctx, outcome, statements, found, module_homes)


def _names_from_gone_modules(live: list[ImportOutcome]) -> dict[tuple[str, Position], list[str]]:
    """(path, module position) of each `from m import ...` of a gone module -> the names it imports."""
    statements: dict[tuple[str, Position], list[str]] = {}
    for outcome in live:
        if outcome.change == "module-gone" and outcome.fact.name not in (None, "*"):
            statements.setdefault((outcome.facts.path, outcome.fact.module_position), []).append(outcome.fact.name)
    return statements


def _add_module_hint(ctx: CheckContext, outcome: ImportOutcome, statements: dict[tuple[str, Position], list[str]],
                     found: dict, homes: dict[tuple[str, Position, str], tuple[str, str | None]]) -> None:
    """Where the new release has the gone module's names (or a module of the same leaf): once
    per statement (`homes`), whatever the number of names it imports."""
    statement = (outcome.facts.path, outcome.fact.module_position)
    key = (*statement, outcome.fact.module)
    if key not in homes:
        imported = statements.get(statement, [])
        same_leaf = ctx.new.find_modules_named(outcome.fact.module.rsplit(".", 1)[-1])
        homes[key] = (module_hint(ctx.old, ctx.new, outcome.fact.module, imported, same_leaf, found),
                      moved_module(ctx.old, ctx.new, outcome.fact.module, imported, same_leaf) if imported else None)
    outcome.hint, home = homes[key]
    if not outcome.star:
        outcome.home = home


def import_outcomes(ctx: CheckContext) -> list[ImportOutcome]:
    return ctx.shared("imports", _analyse_imports)


def _severity(outcome: ImportOutcome) -> str | None:
    if outcome.broken_on_old:
        return "info"
    return "warning" if outcome.fact.type_checking else None


def _guarded(outcome: ImportOutcome) -> bool:
    """Does the guard around the import catch the loss? A star import never fails for a name
    its module lacks (the name's use does): only for its module's."""
    return outcome.fact.guarded and (outcome.change == "module-gone" or not outcome.star)


def _lost(ctx: CheckContext, change: str) -> Iterator[ImportOutcome]:
    for outcome in import_outcomes(ctx):
        if outcome.change != change or _guarded(outcome):
            continue
        if outcome.broken_on_old and not ctx.report_unresolved:
            continue
        yield outcome


def _defined_at(symbol: Symbol) -> str:
    return f", defined at {symbol.origin}" if symbol.found and symbol.origin else ""


def _broken_before(ctx: CheckContext, outcome: ImportOutcome) -> str:
    """How the old release already broke a lost module's import (the unresolved message's)."""
    if outcome.old.found:
        return f", and sglang {ctx.old_version}'s {outcome.fact.module} lacked {outcome.fact.name}"
    return f", nor in {ctx.old_version}"


def _through(fact: ImportFact) -> dict[str, str]:
    """The message's word on the project modules a star import gives the name through (releasefacts.with_star_names)."""
    return {"through": f" (star-imported through {' then '.join(fact.through)})"} if fact.through else {}


# Why `fix` leaves a star import as it is: what `*` binds from another module, beyond the names
# the file reads, is nothing this tool verifies (a name it adds may shadow one the file uses).
STAR_NOT_REWRITTEN = "a star import is not rewritten: what `*` would bind from another module is not verified"


@contract("SGC101", reads=Reads.FILE_AND_IMPORTS, process=Process.COPY)
def imported_module_removed(ctx: CheckContext) -> Iterator[Diagnostic]:
    seen: set[tuple[str, Position]] = set()
    # A statement one of whose names the old release lacked never ran there: none of it is the bump's.
    broken = {(o.facts.path, o.fact.module_position) for o in import_outcomes(ctx)
              if o.change == "module-gone" and o.broken_on_old}
    for outcome in _lost(ctx, "module-gone"):
        key = (outcome.facts.path, outcome.fact.module_position)
        if key in seen or (key in broken and not outcome.broken_on_old):
            continue  # one report per statement, not per imported name
        seen.add(key)
        migration = _module_migration(ctx, outcome) if _migrated(outcome) else {}
        if outcome.star:
            migration = {"unmigrated": STAR_NOT_REWRITTEN}
        yield finding("SGC101", outcome.facts, outcome.fact.module_position, outcome.fact.module,
                      severity=_severity(outcome), module=outcome.fact.module, old=ctx.old_version,
                      new=ctx.new_version, hint=outcome.hint, before=_broken_before(ctx, outcome), **migration,
                      **_through(outcome.fact))


def _migrated(outcome: ImportOutcome) -> bool:
    """Whether upstream's migration is asked about: a lost module with a verified home."""
    return bool(outcome.home) and not outcome.broken_on_old


@asks_upstream("SGC101")
def _migration_questions(ctx: CheckContext) -> Iterator[Question]:
    for outcome in _lost(ctx, "module-gone"):
        if _migrated(outcome):
            yield Question("imports", (outcome.fact.module,))


def _module_migration(ctx: CheckContext, outcome: ImportOutcome) -> dict:
    """What upstream did with its own imports from the module: where they moved to, and the
    plan of the fix where they all moved to the verified home (`home`)."""
    answer = upstream_migrations(ctx).imports(outcome.fact.module)
    if answer.unlearned:
        return unlearned_fields(answer)
    found = module_verdict(answer.variants, outcome.home)
    if found is None:
        return {}
    fields = {"migration": f"; {found.message}"}
    if found.safety:
        fields.update(moved_to=outcome.home, fix_safety=found.safety)
    else:
        fields["unmigrated"] = found.why
    return fields


@fixes("SGC101")
def import_from_moved_module(diagnostic: Diagnostic, workspace) -> bool:
    """`from old.module import ...` -> `from new.module import ...`, where the new module defines
    the same names as the old one did and upstream moved its own imports there."""
    from sglang_contracts.fix import python as python_edits  # libcst: only a fix run pays its import

    home = diagnostic.data.get("moved_to")
    document = workspace.document(diagnostic.path)
    if not document.python:
        return False
    if not home:
        why = diagnostic.data.get("unmigrated") or \
            "no module of the new release defines the same names where upstream's own imports of it moved"
        document.note(diagnostic.line, diagnostic.col, diagnostic.code, why)
        return False
    return python_edits.replace_import_module(document, diagnostic.line, diagnostic.col, home)


@contract("SGC102", reads=Reads.FILE_AND_IMPORTS, process=Process.COPY)
def imported_name_removed(ctx: CheckContext) -> Iterator[Diagnostic]:
    # Each file's built only as far as the file lists them (campaign 12, R04).
    yield from built_per_file([*_lost(ctx, "name-gone"), *_lost(ctx, "name-unverified")],
                              lambda outcome: outcome.facts,
                              lambda outcome: outcome.fact.position, lambda outcome: _name_finding(ctx, outcome),
                              "SGC102", _name_severity)


def _name_severity(outcome: ImportOutcome) -> str | None:
    return "warning" if outcome.change == "name-unverified" else _severity(outcome)  # the name may be set at run time


def _name_finding(ctx: CheckContext, outcome: ImportOutcome) -> Diagnostic:
    unverified = outcome.change == "name-unverified"
    return finding("SGC102", outcome.facts, outcome.fact.position, outcome.fact.target,
                   severity=_name_severity(outcome), name=outcome.fact.name,
                   verdict="is no longer statically importable" if unverified else "is no longer importable",
                   module=outcome.fact.module, old=ctx.old_version, new=ctx.new_version,
                   was=_defined_at(outcome.old), hint=outcome.hint, home=outcome.home, **_through(outcome.fact))


@fixes("SGC102")
def import_from_new_home(diagnostic: Diagnostic, workspace) -> bool:
    """Import the name from where the new release defines the same object (the hint's verified
    "did you mean"); a statement importing other names too is split in two."""
    from sglang_contracts.fix import python as python_edits  # libcst: only a fix run pays its import

    home = diagnostic.data.get("home")
    document = workspace.document(diagnostic.path)
    if not home or not document.python:
        return False
    return python_edits.move_imported_name(document, diagnostic.line, diagnostic.col, diagnostic.data["name"], home)


@contract("SGC103", reads=Reads.FILE_AND_IMPORTS, process=Process.COPY)
def reexport_origin_changed(ctx: CheckContext) -> Iterator[Diagnostic]:
    for outcome in import_outcomes(ctx):
        if outcome.change == "origin-moved":
            yield finding("SGC103", outcome.facts, outcome.fact.position, outcome.fact.target,
                          name=outcome.fact.name, module=outcome.fact.module, old=ctx.old_version,
                          new=ctx.new_version, old_origin=outcome.old.origin, new_origin=outcome.new.origin,
                          **_through(outcome.fact))


@contract("SGC104", reads=Reads.FILE_AND_IMPORTS, process=Process.COPY)
def guarded_import_falls_back(ctx: CheckContext) -> Iterator[Diagnostic]:
    for outcome in import_outcomes(ctx):
        if not _guarded(outcome) or outcome.broken_on_old or outcome.change in ("origin-moved", "name-unverified"):
            continue
        position = outcome.fact.module_position if outcome.change == "module-gone" else outcome.fact.position
        what = f"module {outcome.fact.module}" if outcome.change == "module-gone" else outcome.fact.target
        stops = outcome.fact.guard_stops  # the handler raises again: no fallback, an error
        yield finding("SGC104", outcome.facts, position, outcome.fact.target, what=what,
                      severity="error" if stops else None,
                      effect=("fails with no fallback (its handler raises again: every run stops)" if stops
                              else "silently takes its fallback"),
                      old=ctx.old_version, new=ctx.new_version, hint=outcome.hint)


def upstream_reads(ctx: CheckContext) -> Iterator[tuple[FileFacts, AttributeFact, str]]:
    """(facts, chain, the upstream path its root stands for) for each dotted read rooted at an
    imported name that stands for something upstream (through the project's re-exports too)."""
    for facts, chain, root in _upstream_chains(ctx):
        if not chain.store:
            yield facts, chain, root
    yield from _reads_through_star_reexporters(ctx)


def _reads_through_star_reexporters(ctx: CheckContext) -> Iterator[tuple[FileFacts, AttributeFact, str]]:
    """`pk.base.x` (or `base.x` after `from pk import base`), where pk/base.py's star imports give
    `x` from sglang.srt.a: the read of sglang.srt.a's `x` on, as `sglang.srt.a.x` would be. Reads
    only: `pk.base.x = ...` sets pk.base's own attribute, not upstream's."""
    given, reexporters = ctx.project.given_by_stars, ctx.project.star_reexporters
    if given is None:
        return
    # the modules a root's import may lead to a star re-exporter through (`pk` of `import pk.base`)
    ways = {".".join(parts[:end]) for parts in (module.split(".") for module in reexporters)
            for end in range(1, len(parts) + 1)}
    for facts in ctx.project.files.values():
        bindings = facts.bindings()
        starts = {name: target for name, target in bindings.items()
                  if target in ways and ctx.project.upstream_path(target) is None}  # else _upstream_chains'
        for chain in facts.attributes if starts else ():
            if chain.store or chain.root not in starts:
                continue
            dotted = starts[chain.root]
            for index, attr in enumerate(chain.attrs):
                if dotted in reexporters:
                    found = given(dotted, attr)
                    if found is not None:
                        yield facts, dataclasses.replace(chain, attrs=chain.attrs[index:],
                                                         positions=chain.positions[index:]), found.rpartition(".")[0]
                    break
                dotted = f"{dotted}.{attr}"


def _upstream_chains(ctx: CheckContext) -> Iterator[tuple[FileFacts, AttributeFact, str]]:
    """(facts, chain, the upstream path its root stands for) of every dotted chain, read or
    written, rooted at an imported name that stands for something upstream. A file whose
    imports bind nothing upstream has none: its chains are not decoded (most files')."""
    upstream_path = functools.lru_cache(maxsize=None)(ctx.project.upstream_path)  # files import alike
    for facts in ctx.project.files.values():
        roots = {name: root for name, target in facts.bindings().items() if (root := upstream_path(target)) is not None}
        if not roots:
            continue
        for chain in facts.attributes:
            if chain.root in roots:
                yield facts, chain, roots[chain.root]


def _module_attribute_losses(ctx: CheckContext) -> Iterator[tuple[FileFacts, Position, str, str, str | None]]:
    """(facts, position, module, attribute, why it cannot be verified or None) for reads of
    module attributes the new release lost, or no longer declares but may set at run time.
    A read after the project's own assignment of the attribute (`m._TP_RANK = rank`, then
    `m._TP_RANK`: in another file, or on an earlier line of this one) reads the project's
    value, no contract with upstream; the save of an original before its patch is one."""
    assigned = _assigned_by_project(ctx)
    for facts, chain, current in upstream_reads(ctx):
        loss = _first_loss(ctx, assigned, facts, chain, current)
        if loss is not None:
            yield (facts, *loss)


def _first_loss(ctx: CheckContext, assigned: dict[str, dict[str, int]], facts: FileFacts, chain: AttributeFact,
                current: str) -> tuple[Position, str, str, str | None] | None:
    """(position, module, attribute, why unverifiable or None) of the first attribute along the
    chain of module attributes the new release lost; None where the chain reads none."""
    for attr, position in zip(chain.attrs, chain.positions):
        if _assigned_before(assigned.get(f"{current}.{attr}", {}), facts.path, position.line):
            return None
        if not _is_module(ctx.old, current) or not ctx.new.module_exists(current):
            return None
        old = ctx.old.resolve_name(current, attr)
        if not old.found:
            return None
        new = ctx.new.resolve_name(current, attr)
        if new.missing or (new.kind == "dynamic" and new.origin):
            return position, current, attr, None if new.missing else ctx.new.module_unverifiable(new.origin)
        current = f"{current}.{attr}"
    return None


def _assigned_before(writers: dict[str, int], path: str, line: int) -> bool:
    """Whether the project assigns the attribute in another file, or on an earlier line of this one."""
    return any(written != path or first < line for written, first in writers.items())


def _assigned_by_project(ctx: CheckContext) -> dict[str, dict[str, int]]:
    """upstream dotted path -> file -> the first line where the project assigns it (`m.x = ...`,
    `(m.x, m.y) = ...`)."""
    assigned: dict[str, dict[str, int]] = {}
    for facts, chain, root in _upstream_chains(ctx):
        if chain.store and chain.positions:
            lines = assigned.setdefault(".".join((root, *chain.attrs)), {})
            lines[facts.path] = min(lines.get(facts.path, chain.positions[-1].line), chain.positions[-1].line)
    return assigned


def _is_module(model: UpstreamModel, dotted: str) -> bool:
    return model.resolve_path(dotted).kind == "module"


@contract("SGC105", reads=Reads.WHOLE_PROJECT, process=Process.COPY)  # another file's assignment counts
def module_attribute_removed(ctx: CheckContext) -> Iterator[Diagnostic]:
    losses = list(_module_attribute_losses(ctx))
    found = ctx.new.find_definitions({attr for _, _, _, attr, unverified in losses if not unverified})
    # Once per attribute a module lost, however often it is read: one line reading it 150,000
    # times took a minute (campaign 10, R13; the import form was campaign 9's R02).
    homes: dict[tuple[str, str], tuple[str, str | None]] = {}

    def built(loss: tuple) -> Diagnostic:
        facts, position, module, attr, unverified = loss
        if unverified:  # a warning: the module may set it at run time
            return finding("SGC105", facts, position, f"{module}.{attr}", severity="warning", module=module,
                           attr=attr, verdict="no longer declares attribute", old=ctx.old_version,
                           new=ctx.new_version, hint=f"; could not verify: {unverified}", home=None)
        if (module, attr) not in homes:
            was = ctx.old.resolve_name(module, attr)
            homes[module, attr] = (home_hint(ctx.old, was, ctx.new, attr, found.get(attr, []), module),
                                   moved_home(ctx.old, was, ctx.new, attr, found.get(attr, []), module))
        hint, home = homes[module, attr]
        return finding("SGC105", facts, position, f"{module}.{attr}", module=module, attr=attr,
                       verdict="no longer has attribute", old=ctx.old_version, new=ctx.new_version, hint=hint,
                       home=home)

    # Each file's built only as far as the file lists them (campaign 12, R04).
    yield from built_per_file(losses, lambda loss: loss[0], lambda loss: loss[1], built, "SGC105",
                              lambda loss: "warning" if loss[4] else None)


@fixes("SGC105")
def read_from_new_home(diagnostic: Diagnostic, workspace) -> bool:
    """`m.name` -> `pkg.new_module.name`, with `import pkg.new_module` added at the top, where
    the new release defines the same object there."""
    from sglang_contracts.fix import python as python_edits  # libcst: only a fix run pays its import

    home = diagnostic.data.get("home")
    document = workspace.document(diagnostic.path)
    if not home or not document.python:
        return False
    if not python_edits.replace_attribute(document, diagnostic.line, diagnostic.col, home):
        return False
    document.imports_needed.add(home.rpartition(".")[0])
    return True


NOT_CHECKED = "its SGLang contracts are not checked"


@contract("SGC000", reads=Reads.FILE_AND_IMPORTS, process=Process.COPY)
def unanalysable_file(ctx: CheckContext) -> Iterator[Diagnostic]:
    broken = [facts for facts in ctx.project.files.values() if facts.parse_error]
    floor = python_floor(ctx.project.root) if broken else None
    running = sys.version_info[:2]
    # Python's own parser reads the grammar of the Python running the tool, not the project's.
    hint = (f"; the project requires Python {floor[0]}.{floor[1]}+ and this tool runs on "
            f"{running[0]}.{running[1]}: run it with a newer Python") if floor and floor > running else ""
    for facts in broken:
        line, col, message = facts.parse_error
        yield finding("SGC000", facts, Position(line, col), "", what="cannot parse this file", error=message,
                      unchecked=NOT_CHECKED, hint=hint)
    yield from _unreadable_stars(ctx)


def _unreadable_stars(ctx: CheckContext) -> Iterator[Diagnostic]:
    """A star import of an SGLang module whose names the old release does not tell (computed
    in a way not evaluated, set at run time, an extension module's): the names the file reads
    and binds nowhere else are not judged, said once at the import (a warning: could not
    verify, as a name a module may set at run time is)."""
    for facts in ctx.checked_files():
        unbound = [free.name for free in facts.free_names if free.name not in facts.bindings()]
        for fact in upstream_stars(facts) if unbound else ():
            why = ctx.old.star_unreadable(fact.module)
            if why:
                shown = ", ".join(unbound[:5]) + (", ..." if len(unbound) > 5 else "")
                yield finding("SGC000", facts, fact.position, fact.module, severity="warning",
                              what=f"cannot tell the names `from {fact.module} import *` binds in sglang "
                                   f"{ctx.old_version}", error=why,
                              unchecked=f"the contracts of those this file reads ({shown}) are not checked", hint="")
