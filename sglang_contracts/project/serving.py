"""Which project modules serve which SGLang releases.

A project that supports several releases at once loads the code for the installed one at
import time: `if sglang.__version__ == "0.5.20": from .for_0_5_20 import engine`, a comparison
with packaging's `Version`, `importlib.import_module(f".v{ver}_patch", __package__)` or a table
of module names (project/dispatches.py). Such a module runs only where that choice leads to it:
it serves the releases whose gate admits the import that loads it, and so, transitively, do
the project modules only it loads. A module that no such choice leads to (imported plainly
anywhere, or imported by nothing the scan sees) serves every release, and is judged as it
always was. The `serves` setting (`[tool.sglang-contracts] serves = {"pkg/for_0_5_20" =
["0.5.20"]}`) states it where the choice cannot be read.

The model is the whole project's: it is computed anew every run from every file's imports,
gates and dispatches (check/runner.py applies it to the findings after they are merged and
kept), so an edit of the dispatching file changes what every module it loads is judged on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath

from sglang_contracts.project.dispatches import module_for, named_modules
from sglang_contracts.project.gates import Release, runs_on
from sglang_contracts.project.index import ProjectIndex, imports_by_text, module_name_for
from sglang_contracts.project.releasefacts import gate_at
from sglang_contracts.requirements import as_version, parse_specifier

OLD, NEW = "old", "new"
EVERY = frozenset((OLD, NEW))


@dataclass
class Serving:
    """What each project module serves, of the two releases of the bump."""

    # relpath -> the releases (OLD, NEW) its module serves; a module not here serves both
    served: dict[str, frozenset[str]] = field(default_factory=dict)
    # relpath -> the files whose choice of release leads to it (where a dispatch finding is)
    dispatchers: dict[str, frozenset[str]] = field(default_factory=dict)
    # dispatching relpath -> the modules it loads on the old release and not on the new one
    loaded_on_old_only: dict[str, list[str]] = field(default_factory=dict)

    def serves(self, relpath: str, release: str) -> bool:
        return release in self.served.get(relpath, EVERY)


def configured_serves(given: dict[str, list[str]], version: str) -> bool | None:
    """Does a `serves` entry's list admit this release's version? Each item is a version
    (`0.5.20`, compared as versions are) or a specifier (`>=0.5.22`)."""
    release = as_version(version)
    for item in given:
        if item[:1] in "<>=!~":
            specifier = parse_specifier(item)
            if specifier is not None and release is not None and specifier.contains(release, prereleases=True):
                return True
        elif item == version or (release is not None and as_version(item) == release):
            return True
    return False


def _configured(relpath: str, serves: dict[str, list[str]]) -> str | None:
    """The `serves` key (a folder or a file) a project file falls under, the most specific one."""
    path = PurePosixPath(relpath)
    matches = [key for key in serves if path == PurePosixPath(key) or PurePosixPath(key) in path.parents]
    return max(matches, key=lambda key: len(PurePosixPath(key).parts), default=None)


def _chooses(project: ProjectIndex, releases: dict[str, Release], modules: dict[str, str]) -> bool:
    """Does some file load a project module by name from the version, or import one under a
    branch that some release of the two does not take? (Most projects' branches import SGLang.)"""
    for facts in project.files.values():
        if any(dispatch.kind == "import" for dispatch in facts.dispatches):
            return True
        for fact in facts.imports if facts.gates else ():
            if fact.module.partition(".")[0] not in project.packages or fact.type_checking:
                continue
            gate = gate_at(facts.gates, fact.position)
            if gate is not None and not all(runs_on(gate, release) for release in releases.values()):
                return True
    return False


def serving_model(project: ProjectIndex, releases: dict[str, Release], serves: dict[str, list[str]]) -> Serving:
    """Which releases (`releases`: OLD and NEW, as gates are judged) each project module serves."""
    modules = {module_name_for(relpath): relpath for relpath in project.digests}
    labels = frozenset(releases)
    if not serves and not _chooses(project, releases, modules):
        return Serving()  # nothing chooses by release: every module serves both
    # target relpath -> [(importer relpath, the releases the import runs on)]
    edges: dict[str, list[tuple[str, frozenset[str]]]] = {}
    chosen: set[str] = set()  # the modules some choice of release loads

    known: dict[str, list[str]] = {}

    def loaded(module: str) -> list[str]:
        """The project files importing `module` runs: it and the packages above it."""
        if module not in known:
            parts = module.split(".")
            known[module] = [modules[name] for name in (".".join(parts[:n]) for n in range(1, len(parts) + 1))
                             if name in modules]
        return list(known[module])

    def add(importer: str, own: set[str], targets: list[str], on: frozenset[str]) -> None:
        for target in targets:
            if target not in own:
                edges.setdefault(target, []).append((importer, on))
                if on != labels:
                    chosen.add(target)

    for relpath, facts in project.files.items():
        # The importer's own packages ran before it did: importing a sibling loads none of them.
        own = set(loaded(module_name_for(relpath)))

        def runs_here(position) -> frozenset[str]:
            gate = gate_at(facts.gates, position)
            return labels if gate is None else frozenset(l for l in labels if runs_on(gate, releases[l]))

        for fact in facts.imports:
            if fact.type_checking:
                continue
            targets = loaded(fact.module)
            if fact.name not in (None, "*") and f"{fact.module}.{fact.name}" in modules:
                targets.append(modules[f"{fact.module}.{fact.name}"])
            add(relpath, own, targets, runs_here(fact.position))
        for dispatch in facts.dispatches:
            if dispatch.kind != "import":
                continue
            # Every module the choice may name is chosen: one no release of the two picks serves neither.
            chosen.update(modules[name] for name in named_modules(dispatch.template, dispatch.package, modules))
            on = runs_here(dispatch.position)
            for label in on:
                name = module_for(dispatch.template, dispatch.package, releases[label].version or "")
                if name is not None:
                    add(relpath, own, loaded(name), frozenset((label,)))

    if chosen or serves:
        # The files the scan left out (they name no SGLang: a package's `from . import engine`)
        # carry the choice on to what they import, on every release: their imports, read from their text.
        for relpath, (froms, plain) in imports_by_text(project).items():
            if relpath in project.files:
                continue
            own = set(loaded(module_name_for(relpath)))
            for source, names in froms:
                add(relpath, own, loaded(source) + [modules[f"{source}.{name}"] for name in names
                                                    if f"{source}.{name}" in modules], labels)
            for module in plain:
                add(relpath, own, loaded(module), labels)
    fixed = {}
    for relpath in project.digests if serves else ():
        key = _configured(relpath, serves)
        if key is not None:
            fixed[relpath] = frozenset(l for l in labels if configured_serves(serves[key], releases[l].version or ""))
    # The modules a choice decides: the chosen ones, the configured ones, and what only they load.
    imports_of: dict[str, set[str]] = {}
    for target, importers in edges.items():
        for importer, _ in importers:
            imports_of.setdefault(importer, set()).add(target)
    decided, pending = set(), [*chosen, *fixed]
    while pending:
        relpath = pending.pop()
        if relpath not in decided:
            decided.add(relpath)
            pending.extend(imports_of.get(relpath, ()))
    served = {relpath: fixed.get(relpath, frozenset()) for relpath in decided}
    leads: dict[str, frozenset[str]] = {relpath: frozenset() for relpath in decided}
    pending = sorted(decided)
    while pending:  # each module's releases and leads only grow: the least fixed point
        relpath = pending.pop()
        if relpath in fixed:
            continue
        now, via = set(), set()
        for importer, on in edges.get(relpath, ()):
            reach = served.get(importer, labels) & on
            now |= reach
            if reach and on != labels:
                via.add(importer)
            elif reach:
                via |= leads.get(importer, frozenset())
        grown, led = served[relpath] | now, leads[relpath] | via
        if grown != served[relpath] or led != leads[relpath]:
            served[relpath], leads[relpath] = grown, led
            pending.extend(target for target in imports_of.get(relpath, ()) if target in decided)
    restricted = {relpath: on for relpath, on in served.items() if on != labels}
    old_only: dict[str, list[str]] = {}
    for relpath, on in restricted.items():
        if on == {OLD}:
            for dispatcher in leads.get(relpath, ()):
                old_only.setdefault(dispatcher, []).append(relpath)
    return Serving(restricted, {relpath: leads[relpath] for relpath in restricted},
                   {dispatcher: sorted(found) for dispatcher, found in old_only.items()})
