"""The project's facts that can run on one release: what the checks of a bump judge.

Facts under a gate (project/gates.py) that does not hold on the target release (a branch for
other SGLang versions, an import fallback the target release never takes) are left out, so
no check reports them as breaks of the bump and no name resolves through them.

A star import of an SGLang module (`from sglang.srt.a import *`) binds, of the names the file
reads and binds nowhere itself (FileFacts.free_names), those the module exported on the old release:
each is given to the checks as the `from sglang.srt.a import name` it stands for (with_star_names).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from sglang_contracts.project.facts import FACT_LISTS, FileFacts, GateFact, ImportFact, Position
from sglang_contracts.project.gates import Gate, Release, runs_on
from sglang_contracts.project.index import ProjectIndex
from sglang_contracts.upstream.model import UpstreamModel, is_upstream


def release_of(model: UpstreamModel) -> Release:
    """A release as gates are judged against it: its version, and which SGLang imports succeed there."""

    def imports(module: str, name: str | None) -> bool | None:
        if not model.module_exists(module):
            return False
        if name is None:
            return True
        symbol = model.resolve_name(module, name)
        if symbol.found:
            return True
        return None if symbol.status == "unknown" else False

    return Release(model.release.version, imports)


def _where(fact: Any) -> Position | None:
    """The position a fact is judged at: the first one it records."""
    position = getattr(fact, "position", None)
    if position is None:
        positions = getattr(fact, "positions", None) or [item[1] for item in getattr(fact, "items", ())]
        position = positions[0] if positions else None
    return position


def gate_at(gates: list[GateFact], where: Position) -> Gate | None:
    """The gate of the innermost gated block holding a position (blocks are listed outer first)."""
    key = (where.line, where.col)
    for block in reversed(gates):
        if (block.start.line, block.start.col) <= key <= (block.end.line, block.end.col):
            return block.gate
    return None


def judged_release(project: ProjectIndex, model: UpstreamModel) -> Release:
    """A release as the project's gates are judged against it, the project's own version flags
    (`from .compat import SGLANG_GE_0_5_6`) included."""
    conditions = {f"{facts.module}.{c.name}": c.gate for facts in project.files.values() for c in facts.conditions}
    release = release_of(model)
    release.flag = conditions.get
    return release


def for_release(project: ProjectIndex, model: UpstreamModel) -> ProjectIndex:
    """The project as the target release runs it; the same index when nothing is gated."""
    if not any(facts.gates for facts in project.files.values()):
        return project
    release = judged_release(project, model)
    verdicts: dict[Gate, bool] = {}

    def runs(gate: Gate) -> bool:
        if gate not in verdicts:
            verdicts[gate] = runs_on(gate, release)
        return verdicts[gate]

    files = {relpath: _as_run(facts, runs) for relpath, facts in project.files.items()}
    return dataclasses.replace(project, files=files, exports=_exports(files))


def _as_run(facts: FileFacts, runs: Callable[[Gate], bool]) -> FileFacts:
    """A file's facts but those under a gate the release does not run (the same facts when it runs them all)."""
    if not facts.gates or all(runs(block.gate) for block in facts.gates):
        return facts
    kept = {name: [fact for fact in getattr(facts, name)
                   if (where := _where(fact)) is None or (gate := gate_at(facts.gates, where)) is None or runs(gate)]
            for name in FACT_LISTS if name not in ("gates", "conditions")}
    return dataclasses.replace(facts, **kept)


def _exports(files: dict[str, FileFacts]) -> dict[str, dict[str, str]]:
    """What each module binds at its top level, as index._link records it."""
    exports: dict[str, dict[str, str]] = {}
    for facts in files.values():
        table = exports.setdefault(facts.module, {})
        for fact in facts.imports:
            if fact.module_level and fact.name != "*":
                table[fact.bound] = fact.binds
    return exports


def with_star_names(project: ProjectIndex, old: UpstreamModel) -> ProjectIndex:
    """The project with each name a star import of an SGLang module gives a file imported by
    name: every rule that judges `from m import name` (a lost name, a call, an attribute, a
    subclass, a monkeypatch) judges it. Which names the import gives is the old release's
    answer, the one the project was written against: a name only the new release exports is
    no contract the project made. The same index when no file star-imports SGLang."""
    gives: dict[tuple[str, str], bool] = {}  # (module, name) -> does `from module import *` give it: files ask alike

    def given(module: str, names: frozenset[str]) -> list[str]:
        """Of `names`, those the module's star import gives (asked of the fewer: the names it may give, or those)."""
        found = []
        for name in sorted(old.star_names(module) & names):  # sorted: the same facts run after run
            if (module, name) not in gives:
                gives[module, name] = old.star_gives(module, name).found
            if gives[module, name]:
                found.append(name)
        return found

    files = {relpath: _with_star_names(facts, given) for relpath, facts in project.files.items()}
    if all(facts is project.files[relpath] for relpath, facts in files.items()):
        return project
    return dataclasses.replace(project, files=files)


def _with_star_names(facts: FileFacts, given: Callable[[str, frozenset[str]], list[str]]) -> FileFacts:
    """A file's facts with a `from m import name` after each star import for each name it gives."""
    stars = upstream_stars(facts) if facts.free_names else []
    if not stars:
        return facts
    free = frozenset(fact.name for fact in facts.free_names)
    # name -> the index in `stars` of the import that binds it: in the file's order, of two
    # that give a name the last binds it, as in Python
    giver: dict[str, int] = {}
    for index, star in enumerate(stars):
        giver.update(dict.fromkeys(given(star.module, free), index))
    names: dict[int, list[str]] = {}
    for name, index in giver.items():
        names.setdefault(id(stars[index]), []).append(name)
    # At the star import's own position, as an explicit import reports at its statement: what
    # rules an import decides is said where the name is imported (a `# noqa` there covers it);
    # what the file does with the name (a call, a read) is judged where it does it.
    imports = []
    for fact in facts.imports:
        imports.append(fact)
        imports += [dataclasses.replace(fact, name=name, bound=name) for name in names.get(id(fact), ())]
    return dataclasses.replace(facts, imports=imports)


def upstream_stars(facts: FileFacts) -> list[ImportFact]:
    """The file's star imports of SGLang modules (`from sglang.srt.a import *`), in its order."""
    return [fact for fact in facts.imports if fact.name == "*" and is_upstream(fact.module)]
