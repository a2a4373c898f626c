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

from sglang_contracts.infra.graphs import reachable
from sglang_contracts.project.dispatches import module_for, named_modules
from sglang_contracts.project.facts import FileFacts
from sglang_contracts.project.gates import Release, runs_on
from sglang_contracts.project.index import ProjectIndex, imports_by_text, module_name_for
from sglang_contracts.project.releasefacts import gate_at
from sglang_contracts.requirements import SPECIFIER_STARTS, as_version, parse_specifier

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
        if item[:1] in SPECIFIER_STARTS:
            specifier = parse_specifier(item)
            if specifier is not None and release is not None and specifier.contains(release, prereleases=True):
                return True
        elif item == version or (release is not None and as_version(item) == release):
            return True
    return False


def _configured(relpath: str, keys: dict[PurePosixPath, str]) -> str | None:
    """The `serves` key (a folder or a file) a project file falls under, the most specific one
    (`keys`: each key by its path). The file's own path and its folders are looked up, never
    every key per file: 20,000 keys over 300 files took minutes (campaign 11)."""
    path = PurePosixPath(relpath)
    return next((keys[part] for part in (path, *path.parents) if part in keys), None)


def _key_paths(serves: dict[str, list[str]]) -> dict[PurePosixPath, str]:
    """Each `serves` key by the path it names (`pkg/v1/` and `pkg/v1` alike, which the configuration
    refuses in one table: config.py _table; given both otherwise, the first written)."""
    paths: dict[PurePosixPath, str] = {}
    for key in serves:
        paths.setdefault(PurePosixPath(key), key)
    return paths


def _chooses(project: ProjectIndex, releases: dict[str, Release], modules: dict[str, str]) -> bool:
    """Does some file load a project module by name from the version, or import one under a
    branch that some release of the two does not take? (Most projects' branches import SGLang.)"""
    for facts in project.files.values():
        if any(dispatch.kind == "import" for dispatch in facts.dispatches):
            return True
        if _imports_by_release(project, facts, releases):
            return True
    return False


def _imports_by_release(project: ProjectIndex, facts: FileFacts, releases: dict[str, Release]) -> bool:
    """Does the file import a project module under a branch some release of the two does not take?"""
    for fact in facts.imports if facts.gates else ():
        if fact.module.partition(".")[0] not in project.packages or fact.type_checking:
            continue
        gate = gate_at(facts.gates, fact.position)
        if gate is not None and not all(runs_on(gate, release) for release in releases.values()):
            return True
    return False


def serving_model(project: ProjectIndex, releases: dict[str, Release], serves: dict[str, list[str]]) -> Serving:
    """Which releases (`releases`: OLD and NEW, as gates are judged) each project module serves:
    the project's imports as a graph whose edges run on some releases, the modules a choice of
    release decides, and the releases each of those is reached on (a least fixed point)."""
    modules = {module_name_for(relpath): relpath for relpath in project.digests}
    if not serves and not _chooses(project, releases, modules):
        return Serving()  # nothing chooses by release: every module serves both
    graph = _ImportGraph(modules, releases)
    graph.add_scanned_files(project)
    if graph.chosen or serves:
        graph.add_unscanned_files(project)
    fixed = _configured_releases(project, graph.labels, releases, serves)
    decided = graph.reached_from([*graph.chosen, *fixed])
    served, leads = graph.served(decided, fixed)
    restricted = {relpath: on for relpath, on in served.items() if on != graph.labels}
    return Serving(restricted, {relpath: leads[relpath] for relpath in restricted}, _old_only(restricted, leads))


def _old_only(restricted: dict[str, frozenset[str]], leads: dict[str, frozenset[str]]) -> dict[str, list[str]]:
    """dispatcher -> the modules it leads to that only the old release loads."""
    old_only: dict[str, list[str]] = {}
    for relpath, on in restricted.items():
        if on == {OLD}:
            for dispatcher in leads.get(relpath, ()):
                old_only.setdefault(dispatcher, []).append(relpath)
    return {dispatcher: sorted(found) for dispatcher, found in old_only.items()}


class _ImportGraph:
    """The project's imports: target relpath -> [(importer relpath, the releases the import
    runs on)], and the modules some choice of release loads."""

    def __init__(self, modules: dict[str, str], releases: dict[str, Release]) -> None:
        self.modules, self.releases = modules, releases
        self.labels = frozenset(releases)
        self.edges: dict[str, list[tuple[str, frozenset[str]]]] = {}
        self.chosen: set[str] = set()
        self._known: dict[str, list[str]] = {}

    def loaded(self, module: str) -> list[str]:
        """The project files importing `module` runs: it and the packages above it."""
        if module not in self._known:
            parts = module.split(".")
            names = (".".join(parts[:n]) for n in range(1, len(parts) + 1))
            self._known[module] = [self.modules[name] for name in names if name in self.modules]
        return list(self._known[module])

    def add(self, importer: str, own: set[str], targets: list[str], on: frozenset[str]) -> None:
        for target in targets:
            if target not in own:
                self.edges.setdefault(target, []).append((importer, on))
                if on != self.labels:
                    self.chosen.add(target)

    def add_scanned_files(self, project: ProjectIndex) -> None:
        for relpath, facts in project.files.items():
            # The importer's own packages ran before it did: importing a sibling loads none of them.
            own = set(self.loaded(module_name_for(relpath)))
            for fact in facts.imports:
                if fact.type_checking:
                    continue
                targets = self.loaded(fact.module)
                if fact.name not in (None, "*") and f"{fact.module}.{fact.name}" in self.modules:
                    targets.append(self.modules[f"{fact.module}.{fact.name}"])
                self.add(relpath, own, targets, self._runs_at(facts, fact.position))
            for dispatch in facts.dispatches:
                if dispatch.kind == "import":
                    self._add_dispatch(relpath, own, facts, dispatch)

    def _runs_at(self, facts, position) -> frozenset[str]:
        gate = gate_at(facts.gates, position)
        return self.labels if gate is None else frozenset(l for l in self.labels if runs_on(gate, self.releases[l]))

    def _add_dispatch(self, relpath: str, own: set[str], facts, dispatch) -> None:
        # Every module the choice may name is chosen: one no release of the two picks serves neither.
        named = named_modules(dispatch.template, dispatch.package, self.modules)
        self.chosen.update(self.modules[name] for name in named)
        for label in self._runs_at(facts, dispatch.position):
            name = module_for(dispatch.template, dispatch.package, self.releases[label].version or "")
            if name is not None:
                self.add(relpath, own, self.loaded(name), frozenset((label,)))

    def add_unscanned_files(self, project: ProjectIndex) -> None:
        """The files the scan left out (they name no SGLang: a package's `from . import engine`)
        carry the choice on to what they import, on every release: their imports, read from their text."""
        for relpath, (froms, plain) in imports_by_text(project).items():
            if relpath in project.files:
                continue
            own = set(self.loaded(module_name_for(relpath)))
            for source, names in froms:
                self.add(relpath, own, self.loaded(source) + [self.modules[f"{source}.{name}"] for name in names
                                                              if f"{source}.{name}" in self.modules], self.labels)
            for module in plain:
                self.add(relpath, own, self.loaded(module), self.labels)

    def imports_of(self) -> dict[str, set[str]]:
        imports: dict[str, set[str]] = {}
        for target, importers in self.edges.items():
            for importer, _ in importers:
                imports.setdefault(importer, set()).add(target)
        return imports

    def reached_from(self, starts: list[str]) -> set[str]:
        """The modules a choice decides: the chosen ones, the configured ones, and what only they load."""
        return reachable(starts, self.imports_of())

    def served(self, decided: set[str], fixed: dict[str, frozenset[str]],
               ) -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
        """(the releases each decided module is reached on, the dispatchers that lead to it)."""
        imports_of = self.imports_of()
        served = {relpath: fixed.get(relpath, frozenset()) for relpath in decided}
        leads: dict[str, frozenset[str]] = {relpath: frozenset() for relpath in decided}
        pending = sorted(decided)
        while pending:  # each module's releases and leads only grow: the least fixed point
            relpath = pending.pop()
            if relpath in fixed:
                continue
            now, via = self._reach(relpath, served, leads)
            grown, led = served[relpath] | now, leads[relpath] | via
            if grown != served[relpath] or led != leads[relpath]:
                served[relpath], leads[relpath] = grown, led
                pending.extend(target for target in imports_of.get(relpath, ()) if target in decided)
        return served, leads


    def _reach(self, relpath: str, served: dict[str, frozenset[str]], leads: dict[str, frozenset[str]]
               ) -> tuple[set[str], set[str]]:
        """(the releases a module is reached on through its importers as known so far, the dispatchers leading there)."""
        now, via = set(), set()
        for importer, on in self.edges.get(relpath, ()):
            reach = served.get(importer, self.labels) & on
            now |= reach
            if reach and on != self.labels:
                via.add(importer)
            elif reach:
                via |= leads.get(importer, frozenset())
        return now, via


def _configured_releases(project: ProjectIndex, labels: frozenset[str], releases: dict[str, Release],
                         serves: dict[str, list[str]]) -> dict[str, frozenset[str]]:
    """The releases `[tool.sglang-contracts] serves` gives each project file it covers."""
    fixed = {}
    keys = _key_paths(serves)
    for relpath in project.digests if serves else ():
        key = _configured(relpath, keys)
        if key is not None:
            fixed[relpath] = frozenset(l for l in labels if configured_serves(serves[key], releases[l].version or ""))
    return fixed
