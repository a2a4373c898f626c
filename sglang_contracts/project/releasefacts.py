"""The project's facts that can run on one release: what the checks of a bump judge.

Facts under a gate (project/gates.py) that does not hold on the target release (a branch for
other SGLang versions, an import fallback the target release never takes) are left out, so
no check reports them as breaks of the bump and no name resolves through them.

A star import of an SGLang module (`from sglang.srt.a import *`) binds, of the names the file
reads and binds nowhere itself (FileFacts.free_names), those the module exported on the old release:
each is given to the checks as the `from sglang.srt.a import name` it stands for (with_star_names).
So does a star import of a project module that gives them in turn (`from pk.base import *`, where
pk/base.py star-imports sglang.srt.a), through any chain of the project's star imports, and so
does an import of such a name by name (`from pk.base import name`); its other reads through
the module (`pk.base.name`) resolve through ProjectIndex.given_by_stars.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from sglang_contracts.project.facts import FACT_LISTS, FileFacts, GateFact, ImportFact, Position
from sglang_contracts.project.gates import Gate, Release, runs_on
from sglang_contracts.project.index import ProjectIndex, top_level_stars
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


# What a star import gives a name from: (the SGLang module it comes from, the project modules
# it comes through, outermost first; () for a star import of the SGLang module itself).
Source = tuple[str, tuple[str, ...]]
# Where a project module's star import gives a name from, one link of the chain: (the SGLang
# module, the project module the name comes through next or None, the innermost project module
# of the chain). A chain is kept a link per module: each module's whole chain would cost the
# square of a long one.
Link = tuple[str, str | None, str]
PROJECT_S: Link = ("", None, "")  # a project module's star import gives the name, not as SGLang's
# How many project modules deep a chain of star imports is followed: none a project writes is
# this deep, and the search recurses once a link.
DEEPEST_CHAIN = 200
SHOWN_CHAIN = 4  # the project modules a message names of a longer chain: the first ones, `...`, the innermost
UNREAD = "*"  # listed by a module's ModuleNameFacts where its `__all__` is not read


def with_star_names(project: ProjectIndex, old: UpstreamModel) -> ProjectIndex:
    """The project with each name a star import of an SGLang module gives a file imported by
    name: every rule that judges `from m import name` (a lost name, a call, an attribute, a
    subclass, a monkeypatch) judges it. So for a star import of a project module that gives
    the name from an SGLang module (ProjectStars), the import `through` the project's modules.
    Which names the import gives is the old release's answer, the one the project was written
    against: a name only the new release exports is no contract the project made. The same
    index when no file star-imports SGLang."""
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

    project_stars = ProjectStars(project, old, given)
    files = {relpath: _with_star_names(facts, project_stars) for relpath, facts in project.files.items()}
    # `import pk.base; pk.base.f(...)`, `from pk import base; base.f`: what the re-export table
    # does not hold, the module's star imports may give (ProjectIndex.upstream_path asks)
    given_by_stars = project_stars.given_as if project_stars.reexporters else None
    if given_by_stars is None and all(facts is project.files[relpath] for relpath, facts in files.items()):
        return project
    return dataclasses.replace(project, files=files, given_by_stars=given_by_stars,
                               star_reexporters=project_stars.reexporters)


class ProjectStars:
    """What a star import of a module gives, of the names asked, and from where: an SGLang
    module's names as the old release exports them (`given`); a project module's, as Python
    binds them: those its `__all__` lists (none where it is made in a way not read), else its
    public names; of them, a name it binds itself is its own (no SGLang contract), any other is
    what its own star imports give, the last that gives it. Each (module, name) is searched once
    a run; a star import of a module whose search is under way (a cycle of star imports: valid
    Python, where it binds what that module bound so far) gives nothing, so a cycle costs its
    links. A project module whose names are not known (it star-imports nothing: no
    ModuleNameFacts) gives none here."""

    def __init__(self, project: ProjectIndex, old: UpstreamModel,
                 given: Callable[[str, frozenset[str]], list[str]]) -> None:
        self.files = {facts.module: facts for facts in project.files.values()}
        self.old = old
        self.given = given
        self.names: dict[str, tuple[frozenset[str], frozenset[str] | None]] = {}  # module -> (own, listed)
        self.possible: dict[str, frozenset[str]] = {}
        self.known: dict[tuple[str, str], Link | None] = {}
        self.under_way: set[tuple[str, str]] = set()
        # the project modules that star-import a module: those whose star imports may give SGLang's names
        self.reexporters = frozenset(module for module, facts in self.files.items() if top_level_stars(facts))
        self.attributes: dict[tuple[str, str], Source | None] = {}  # attribute's, per (module, name)
        self.exports = project.exports
        self.imported: dict[str, dict[str, str]] = {}  # _imported_from_sglang's, per module

    def given_as(self, module: str, name: str) -> str | None:
        """The SGLang dotted path `module.name` stands for where a project module's star imports
        give the name from SGLang (`pk.base.f`, pk/base.py star-importing sglang.srt.a:
        `sglang.srt.a.f`); None where they do not."""
        source = self.attribute(module, name)
        return None if source is None else f"{source[0]}.{name}"

    def attribute(self, module: str, name: str) -> Source | None:
        """Where a project module's attribute `name` comes from (`from pk.base import name`,
        `pk.base.name`) where its star imports give it from SGLang: as they bind it, whatever
        its `__all__` says (which limits what a star import of the module gives, not what it holds)."""
        key = (module, name)
        if key not in self.attributes:
            self.attributes[key] = None
            if module in self.reexporters and key not in self.under_way:
                self.under_way.add(key)
                link = self._last_binding(module, name, 0)
                self.under_way.discard(key)
                if link is not None and link is not PROJECT_S:
                    self.attributes[key] = (link[0], self._chain(module, name, link))
        return self.attributes[key]

    def sources(self, module: str, names: frozenset[str]) -> dict[str, Source | None]:
        """name -> where the star import of `module` gives it from, of `names` it gives: None for
        one it gives not as SGLang's (a project module's own)."""
        if is_upstream(module):
            return {name: (module, ()) for name in self.given(module, names)}
        found: dict[str, Source | None] = {}
        for name in sorted(self._may_give(module) & names):  # sorted: the same facts run after run
            link = self._link(module, name, 0)
            if link is not None:
                found[name] = None if link is PROJECT_S else (link[0], self._chain(module, name, link))
        return found

    def _chain(self, module: str, name: str, link: Link) -> tuple[str, ...]:
        """The project modules the star import of `module` gives `name` through, outermost first
        (SHOWN_CHAIN of a longer chain)."""
        chain = [module]
        while link[1] is not None and len(chain) < SHOWN_CHAIN:
            chain.append(link[1])
            link = self.known[link[1], name]
        return (*chain, "...", link[2]) if link[1] is not None else tuple(chain)

    def _may_give(self, module: str) -> frozenset[str]:
        """A bound on the names the star import of a project module gives: what the SGLang
        modules its chains of star imports reach may give (upstream star_names), and the names
        the project modules of those chains bind, of those its `__all__` lists where it has one.
        Each module of the chains is read once."""
        if module not in self.possible and module in self.files:
            names: set[str] = set()
            pending, seen = [module], {module}
            while pending:  # a stack: chains as deep as the project writes them
                facts = self.files.get(pending.pop())
                names.update(self._names(facts.module)[0] if facts is not None else ())
                names.update(self._imported_from_sglang(facts.module) if facts is not None else ())
                for star in top_level_stars(facts) if facts is not None else ():
                    if is_upstream(star):
                        names |= self.old.star_names(star)
                    elif star not in seen:
                        seen.add(star)
                        pending.append(star)
            listed = self._names(module)[1]
            self.possible[module] = frozenset(names if listed is None else names & listed)
        return self.possible.get(module, frozenset())

    def _names(self, module: str) -> tuple[dict[str, int], frozenset[str] | None]:
        """(the names the project module binds -> how many of its star imports come before their
        last binding, those its `__all__` lists: None without one)."""
        if module not in self.names:
            facts = self.files[module].module_names
            own = {fact.name: fact.stars_before for fact in facts if fact.kind == "bound"}
            listed = frozenset(fact.name for fact in facts if fact.kind == "listed")
            self.names[module] = (own, listed if listed or "__all__" in own else None)
        return self.names[module]

    def _stars_after(self, module: str, name: str) -> list[str]:
        """The project module's star imports that bind `name` after the module's own last binding
        of it, as Python runs them: all of them where it binds none (those the target release
        runs: ModuleNameFact)."""
        stars = top_level_stars(self.files[module])
        before = self._names(module)[0].get(name)
        if before is None:
            return stars
        run = set(stars)
        later = [fact.name for fact in self.files[module].module_names if fact.kind == "star"][before:]
        return [star for star in later if star in run]

    def _link(self, module: str, name: str, depth: int) -> Link | None:
        """Where the star import of a project module gives `name` from; None where it gives no SGLang name."""
        key = (module, name)
        if key in self.known:
            return self.known[key]
        if module not in self.files or key in self.under_way or depth > DEEPEST_CHAIN \
                or not self._exports(module, name):
            return None
        self.under_way.add(key)
        found = self._last_binding(module, name, depth)
        self.under_way.discard(key)
        self.known[key] = found
        return found

    def _last_binding(self, module: str, name: str, depth: int) -> Link | None:
        """What binds `name` in a project module last: the last of its star imports after its own
        binding that gives it, else the module itself (PROJECT_S) where it binds it; None where neither."""
        for star in reversed(self._stars_after(module, name)):
            if is_upstream(star):  # of two star imports that give the name, the last binds it
                if self.given(star, frozenset({name})):
                    return (star, None, module)
            elif (inner := self._link(star, name, depth + 1)) is not None:
                return inner if inner is PROJECT_S else (inner[0], star, inner[2])
        imported = self._imported_from_sglang(module).get(name)
        if imported is not None:
            return (imported, None, module)
        return PROJECT_S if name in self._names(module)[0] else None

    def _imported_from_sglang(self, module: str) -> dict[str, str]:
        """name -> SGLang module, of the names the project module binds at its top level by
        importing them by name from SGLang (`from sglang.srt.a import f`, `from sglang.srt import
        a`): a star import of the module binds them as SGLang's, as `from module import f` does
        (campaign 19, R06: the call through the star import was never judged). An alias
        (`import ... as g`) names another name and is left to the module's own."""
        if module not in self.imported:  # asked for each name the module may give
            found = {}
            for bound, target in self.exports.get(module, {}).items():
                owner, _, name = target.rpartition(".")
                if name == bound and is_upstream(owner):
                    found[bound] = owner
            self.imported[module] = found
        return self.imported[module]

    def _exports(self, module: str, name: str) -> bool:
        """Does the star import of a project module give `name` (from wherever it binds it)?"""
        listed = self._names(module)[1]
        if listed is None:
            return not name.startswith("_")
        return name in listed and UNREAD not in listed


def _with_star_names(facts: FileFacts, stars_give: ProjectStars) -> FileFacts:
    """A file's facts with a `from m import name` after each star import for each name it gives
    (one through project modules names the SGLang module, `through` them), and after each
    `from pk.base import name` of a name pk.base's star imports give from SGLang."""
    names = _star_given_names(facts, stars_give)
    named = {id(fact): [(fact.name, source)] for fact in facts.imports if fact.name not in (None, "*")
             and (source := _named_source(fact, stars_give)) is not None}
    if not names and not named:
        return facts
    # At the star import's own position, as an explicit import reports at its statement: what
    # rules an import decides is said where the name is imported (a `# noqa` there covers it);
    # what the file does with the name (a call, a read) is judged where it does it.
    imports = []
    for fact in facts.imports:
        imports.append(fact)
        imports += [dataclasses.replace(fact, module=module, name=name, bound=name if fact.name == "*" else fact.bound,
                                        through=through)
                    for name, (module, through) in names.get(id(fact), named.get(id(fact), ()))]
    return dataclasses.replace(facts, imports=imports)


def _named_source(fact: ImportFact, stars_give: ProjectStars) -> Source | None:
    """Where `from pk.base import name` gets the name from, where pk.base's star imports give it from SGLang."""
    return stars_give.attribute(fact.module, fact.name) if fact.module in stars_give.reexporters else None


def _star_given_names(facts: FileFacts, stars_give: ProjectStars) -> dict[int, list[tuple[str, Source]]]:
    """id of each star import of the file -> (name, where from) of the SGLang names it binds."""
    stars = star_imports(facts) if facts.free_names else []
    if not stars:
        return {}
    free = frozenset(fact.name for fact in facts.free_names)
    # name -> (the index in `stars` of the import that binds it, where from): in the file's
    # order, of two that give a name the last binds it, as in Python
    giver: dict[str, tuple[int, Source | None]] = {}
    for index, star in enumerate(stars):
        giver.update((name, (index, source)) for name, source in stars_give.sources(star.module, free).items())
    names: dict[int, list[tuple[str, Source]]] = {}
    for name, (index, source) in giver.items():
        if source is not None:  # not a project module's own name
            names.setdefault(id(stars[index]), []).append((name, source))
    return names


def upstream_stars(facts: FileFacts) -> list[ImportFact]:
    """The file's star imports of SGLang modules (`from sglang.srt.a import *`), in its order."""
    return [fact for fact in facts.imports if fact.name == "*" and is_upstream(fact.module)]


def star_imports(facts: FileFacts) -> list[ImportFact]:
    """The file's star imports, in its order."""
    return [fact for fact in facts.imports if fact.name == "*"]
