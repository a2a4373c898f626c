"""After an edit, recompute the findings of the files the edit can change, reuse the others'.

A run keeps, per project Python file, the digest of its content, the project modules it
imports and the digest of its outline, and every finding by path, under a key of everything
else the findings are computed from (the salt, replay.inputs_key, and the project's top-level
packages): this tool's code, the Python version, the options, both releases by content
(sources.content_identity: the upstream records any file consults are those of the release),
and the non-Python files below the root (requirements, Dockerfiles, patches: by path, size and
modification time). A file's outline is what the checks read of it for other files, positions
left out (OUTLINE_FACTS: its imports, which make the re-export table; its classes, with their
bases, members, provided and typed attributes, what a `__getattr__` borrows; its functions'
signatures; its version conditions and gates), and, for any Python file, scanned or not, the
classes its text defines (a project class claims its snake name from SGC322). Its imports are
kept apart (imports_digest) from the rest, which holds instead what the checks read of them
for the whole project and seldom changes (contracts/base.py IMPORT_OUTLINES: does the file
import ServerArgs). Its classes' members (methods, what instances are given, typed and borrowed
attributes: members_digest) are kept apart too, the outline keeping each class's name and bases
(CLASS_OUTLINE), which decide every class's ancestry. A change to the rest of an outline, or a
key with no record, recomputes every file; a change to the imports or the members alone, the
file and its dependants, as below.

Otherwise the files to recompute are those whose content changed, and their dependants: every
file that imports one of them, or reaches one as an attribute of a module it imports,
transitively (its subclasses, the importers of a re-export module); after an edit of members,
also the files of the project bases of every class among them (a base's method runs borrowed
code with the subclass's object, and reports there; the subclass may be a user of the edited
class: a mixin, a stand-in's class), with those bases' other subclasses read in full.
A resident process, which has both versions of a changed file, leaves its importers
out when the edit only moved code (moved_only: the same facts but their positions, and each
each_file analysis's rows of it the last ones with their lines moved; a statement typed in a
method body): what other files read of it is as it was, and no finding elsewhere cites where
its code sits. The checks run on a project made of those files and the files defining their
classes' project ancestors, in full (a subclass's borrowed code runs its project bases' own
calls), and every other indexed file reduced to its outline, so that what a check gathers over the
whole project (the classes a base's ancestry leads to, which attributes any class provides,
which upstream modules are imported anywhere) is as a full run sees it. Only the recomputed
files' findings are kept from that run; the rest are the last run's. The rules that read more
of other files than their outlines (contracts/base.py WHOLE_PROJECT: a flag a launch script
sets decides a finding at the wrapper; SGC602 reports at a test double what any file reads of
its class, by position) are checked on the whole project, every file in full, and replace all
their last findings; so, after an edit of imports, are the rules that read the imports of
files they do not import (IMPORTS_ANYWHERE: the first import anywhere that reaches a package,
a patch target named by its string), and after an edit of members, those that read the
members of classes in files they do not import (MEMBERS_ANYWHERE). The loops of a partial run
that report in the file they walk walk only the recomputed files (CheckContext.checked).
tests/check/test_incremental.py compares the result with a full run, on the fixture project and on real sglang-omni edits, reduces each
file of every multi-file rule example to its outline to find a rule that reads more of it and
is not in WHOLE_PROJECT, and takes each of their imports away to find one that reads them
beyond the file's importers and is not in IMPORTS_ANYWHERE; and empties each class's members
(and gives it every attribute the project reads) to find one that reads them beyond the file's
importers and is not in MEMBERS_ANYWHERE.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import json
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from sglang_contracts.diagnostics import Diagnostic
from sglang_contracts.project.facts import FACT_LISTS, FileFacts, Position, json_without
from sglang_contracts.infra.lines import line_digests
from sglang_contracts.infra.memo import KeptMemo
from sglang_contracts.infra.shapes import ListOf, Table, TableOf, row_shape
from sglang_contracts.project.index import ProjectIndex, module_name_for, recorded_facts
from sglang_contracts.project.commandline import ignores_unknown_flags
from sglang_contracts.project.named_reads import CLASS_DEFINITION

# The facts the checks read across files (a class's ancestry, members and typed attributes, a
# project function's signature, what a module binds); the others (calls, reads, probes, ...)
# are read only for the file they are in, so a file that is not recomputed keeps none of them.
OUTLINE_FACTS = ("imports", "classes", "functions", "conditions", "gates")


# What the plan records of each file, in this order.
FILE_ENTRY = ("content digest", "project modules it imports", "digest of its outline but its imports and members",
              "whether it is indexed", "digest of its imports", "digest of its classes' members")
# save's record as the plan reads it back (each file's entry checked as well: _entry_shaped; each
# asked row: _named_analysis).
RUN_RECORD = Table(files=TableOf(list), diagnostics=ListOf(dict), touched=TableOf(ListOf(str)),
                   optional={"asked": TableOf((list, None))})
# kept_placeless' record of one value: the files' digests it was computed with, the texts it read.
PLACELESS_RECORD = Table(digests=TableOf(str), texts_read=ListOf(str), value=object)


@dataclass
class Plan:
    """Which files a run recomputes (`recomputed`; None: all) and what it records for the next."""

    key: str
    files: dict[str, list[Any]]  # relpath -> FILE_ENTRY
    previous: list[Diagnostic] = field(default_factory=list)
    recomputed: set[str] | None = None
    # The last run's files with findings of the bump, by code (runner.bump_touched), before
    # any was suppressed: what decides a kept file's SGC801/SGC803
    previous_touched: dict[str, set[str]] = field(default_factory=dict)
    # Some file's imports changed (and nothing else of any outline): the rules that read the
    # imports of files they do not import (contracts/base.py IMPORTS_ANYWHERE) are checked whole
    imports_edited: bool = False
    # The files some class's members changed in (and nothing else of any outline but imports):
    # the rules that read the members of classes in files they do not import (MEMBERS_ANYWHERE)
    # are checked whole, and the project bases' files of every class recomputed are recomputed
    # too (a base's method hands the subclass's object to borrowed code: SGC314 at the base,
    # runner._computed)
    members_changed: set[str] = field(default_factory=set)
    # The each_file tables the last run asked (ProjectIndex.asked), kept with this run's
    asked: dict[str, Any] = field(default_factory=dict)
    # The changed files that only moved code (moved_only), and each file's digest in the last run
    moved: set[str] = field(default_factory=set)
    digests_before: dict[str, str] = field(default_factory=dict)

    @property
    def members_edited(self) -> bool:
        return bool(self.members_changed)

    def recompute(self, paths: set[str]) -> None:
        """Recompute these files too (not their importers: their findings rest on nothing these
        files' facts do not already give them)."""
        if self.recomputed is not None:
            self.recomputed |= paths

    @property
    def full(self) -> bool:
        return self.recomputed is None


def _entry_shaped(entry: Any) -> bool:
    """Whether a kept file entry is FILE_ENTRY's: digests as text, its imports a list of module
    names, whether it is indexed a boolean (a record of another shape is not used)."""
    return (isinstance(entry, list) and len(entry) == len(FILE_ENTRY)
            and type(entry[0]) is str and type(entry[2]) is str
            and all(type(entry[index]) in (str, type(None)) for index in (4, 5))  # None: a file not indexed
            and type(entry[1]) is list and all(type(module) is str for module in entry[1])
            and type(entry[3]) is bool)


def plan(store, salt: str, project: ProjectIndex, moved: Callable[[str, str], bool] | None = None,
         import_outlines: dict[str, Callable[[FileFacts], Any]] | None = None, every_file: bool = False) -> Plan:
    """The files of `project` to recompute, against the last run with this salt in `store`.
    `moved(relpath, digest it had)`: whether a changed file changed nothing other files read of
    it but where its code sits (moved_only; a resident engine knows, having both versions): its
    importers then keep their findings. `import_outlines`: what the rules read of each file's
    imports for the whole project (contracts/base.py IMPORT_OUTLINES), part of its outline."""
    import_outlines = import_outlines or {}
    # The project's top-level packages tell its imports from third-party ones, in every file's facts.
    key = hashlib.sha256(f"{salt}\0{project.packages}".encode("utf-8", "surrogateescape")).hexdigest()
    saved = store.get(key, RUN_RECORD)
    before, previous, previous_touched = _saved_run(saved)
    asked = saved.get("asked") if previous is not None else None
    asked = asked if isinstance(asked, dict) else {}
    if moved is None:  # a process of its own: the last run's records tell
        moved = moved_since_recorded(project, asked)
    files = _file_entries(project, before, import_outlines)
    if every_file or previous is None or _outlines_changed(before, files):
        return Plan(key, files, asked=asked)  # a project-wide fact changed: every file is recomputed
    imports_edited = any(entry[4] != files[rel][4] for rel, entry in before.items())
    members_changed = {rel for rel, entry in before.items() if rel in files and entry[5] != files[rel][5]}
    changed = _changed_files(before, files)
    read_elsewhere = _read_elsewhere(changed, before, moved)
    digests_before = {rel: entry[0] for rel, entry in before.items()}
    # A file the index could not read has no digest to compare (too large, permission denied):
    # why is this run's to say, the size of an editor's buffer included; and so is what is said
    # of one the last run could not read, gone since.
    unread = {problem.path for problem in project.problems} | _no_longer_files(previous, files)
    return Plan(key, files, previous, _closure(read_elsewhere, _importers(before, files)) | changed | unread,
                previous_touched, imports_edited, members_changed, asked, changed - read_elsewhere, digests_before)


def told_by_digest(name: str) -> bool:
    """Whether a project file's state is told by its digest in the plan (a Python file), not by
    the salt, which lists every other file by path, size and time (runner._files_salt)."""
    return name.endswith(".py")


def _no_longer_files(previous: list[Diagnostic], files: dict[str, list[Any]]) -> set[str]:
    """The paths of the last run's findings that the salt leaves to the digests and that are no
    Python file of this run: a file never read (a link out of the project, one that could not be
    read) has no digest, and when it goes or is now a folder nothing else tells it; what is said
    of such a path is this run's alone (its problem, if it still is one)."""
    return {d.path for d in previous if told_by_digest(d.path) and d.path not in files}


def _saved_run(saved: Any) -> tuple[dict[str, list[Any]], list[Diagnostic] | None, dict[str, set[str]]]:
    """(file entries, findings, codes of the bump by file) of the last run's record; nothing
    from a record that is missing or of another shape."""
    try:
        before: dict[str, list[Any]] = saved["files"]
        if not all(_entry_shaped(entry) for entry in before.values()):
            raise ValueError("a file entry of another shape")
        previous = [Diagnostic.from_record(item) for item in saved["diagnostics"]]
        previous_touched = {path: set(codes) for path, codes in saved["touched"].items()}
    except (KeyError, TypeError, ValueError, AttributeError):
        return {}, None, {}
    return before, previous, previous_touched


def _file_entries(project: ProjectIndex, before: dict[str, list[Any]],
                  import_outlines: dict[str, Callable[[FileFacts], Any]]) -> dict[str, list[Any]]:
    """Each Python file's FILE_ENTRY, the last run's where its facts are the same."""
    files: dict[str, list[Any]] = {}
    modules_once = functools.cache(lambda: project_modules(project))  # made when a file needs it

    def imported(relpath: str) -> list[str]:
        return imported_project_modules(project, relpath, modules_once())

    # A file added or removed may be a module another file reaches as an attribute (`pkg.new.X`):
    # every file's project modules are read again (that plan is a full run anyway).
    same_files = before.keys() == project.digests.keys()
    for relpath, digest in project.digests.items():  # SHA-256 of each Python file's content
        entry = before.get(relpath)
        indexed = relpath in project.files
        # Same content and still indexed (or still not: that depends on other files): same facts.
        if entry is not None and entry[0] == digest and entry[3] == indexed:
            files[relpath] = entry if same_files else [entry[0], imported(relpath), *entry[2:]]
        else:
            files[relpath] = [digest, imported(relpath),
                              outline_digest(project, relpath, import_outlines), indexed, imports_digest(project, relpath),
                              members_digest(project, relpath)]
    return files


def _outlines_changed(before: dict[str, list[Any]], files: dict[str, list[Any]]) -> bool:
    """Whether a file's outline or whether it is indexed changed, or a file came or went."""
    absent = [None] * len(FILE_ENTRY)
    return any((before.get(rel) or absent)[2:4] != (files.get(rel) or absent)[2:4]
               for rel in before.keys() | files.keys())


def _changed_files(before: dict[str, list[Any]], files: dict[str, list[Any]]) -> set[str]:
    """The files whose content changed, or that came or went."""
    return {rel for rel in files.keys() | before.keys() if (before.get(rel) or [None])[0] != files.get(rel, [None])[0]}


def _read_elsewhere(changed: set[str], before: dict[str, list[Any]],
                   moved: Callable[[str, str], bool] | None) -> set[str]:
    """The changed files whose importers' findings may change: all but those that only moved."""
    return {rel for rel in changed if moved is None or not moved(rel, (before.get(rel) or [None])[0])}


def _importers(before: dict[str, list[Any]], files: dict[str, list[Any]]) -> dict[str, set[str]]:
    """file -> the files that import it, now or in the last run."""
    modules = {module_name_for(rel): rel for rel in files.keys() | before.keys()}
    importers: dict[str, set[str]] = {}
    for table in (before, files):  # the old edges too: the dependants of a file now removed
        for rel, (_, imported, *_) in table.items():
            for module in imported:
                if module in modules:
                    importers.setdefault(modules[module], set()).add(rel)
    return importers


def moved_only(before: ProjectIndex, now: ProjectIndex, relpath: str, digest_before: str | None) -> bool:
    """Whether, of what other files' findings may read of a file (its facts, what each_file's
    analyses read in its text), only where its code sits changed between two indexes of a
    resident process: its facts are the same but their positions, and each analysis's rows of
    it are the last ones with every line number moved as the unchanged lines moved (a number
    that is not a line and moved, or a line that changed, makes them differ: the importers are
    checked again). No finding of another file cites a position of this one but those of the
    rules checked whole at every edit (SGC602's). Each row this computes for the file
    is kept in its table, for each_file to use as it would its own."""
    if not _comparable(before, now, relpath, digest_before):
        return False
    if not _same_placeless_facts(before.files.get(relpath), now.files.get(relpath)):
        return False
    texts = before.texts[relpath], now.texts[relpath]
    lines = _moved_lines(texts[0].split("\n"), texts[1].split("\n"))
    for table_key, table in now.tables.items():
        if table_key not in now.analyses:
            return False
        rows = _rows_then_and_now(now, table.get(relpath), now.analyses[table_key], relpath, digest_before, texts)
        if rows is None or _as_json(_lines_moved(rows[0], lines)) != _as_json(rows[1]):
            return False
        table[relpath] = [now.digests[relpath], rows[1]]
    return True


def moved_since_recorded(now: ProjectIndex, asked: Any) -> Callable[[str, str], bool] | None:
    """moved_only for a process that has not the index before the edit: the file's content then
    is known by its digest, its facts and line digests by the cache's records of it, and each
    analysis's rows of it by that analysis's table as the last run left it (`asked`: the last
    run's each_file tables (ProjectIndex.asked); None, and the importers are checked again,
    when an analysis could not be named)."""
    if not isinstance(asked, dict) or now.cache.folder is None:
        return None
    analyses = [(key, _named_analysis(row)) for key, row in sorted(asked.items())]
    if any(analysis is None for _, analysis in analyses):
        return None

    def moved(relpath: str, digest_before: str | None) -> bool:
        if digest_before is None or relpath not in now.digests:
            return False
        facts_before, lines_before = recorded_facts(now, relpath, digest_before)
        alike = lines_before is not None and not (facts_before is None and relpath in now.files) \
            and _same_placeless_facts(facts_before, now.files.get(relpath))
        text = now.texts[relpath]
        lines = _moved_lines(lines_before or [], line_digests(text))
        # Every table's rows are found and kept (as each_file keeps them), whatever the verdict:
        # a table this run's checks ask no more of is then up to date for the next comparison.
        for key, analysis in analyses:
            shape = row_shape(analysis[0])
            entry = now.stored_table(key, shape).get(relpath)
            try:
                rows = _table_rows(entry, analysis, relpath, now.digests[relpath], text,
                                   now.scanned_rows(analysis[0], relpath))
            except Exception:  # each_file reports it
                alike = False
                continue
            was = entry[1] if isinstance(entry, list) and len(entry) == 2 and entry[0] == digest_before else None
            now.keep_rows(key, shape, relpath, rows)
            alike = alike and was is not None and _as_json(_lines_moved(was, lines)) == _as_json(rows)
        return alike

    return moved


def kept_placeless(store, run: Plan, project: ProjectIndex) -> KeptMemo:
    """The placeless memo of a process of its own (CheckContext.of_placeless_project): a value
    is read from its record when every file changed since it was computed only moved code
    since the last run (as a resident process keeps its memo: moved_only), that run's record
    naming the file as it was then, and computing it read the text of none of them; each value
    computed is written with the files' digests."""
    digests = dict(project.digests)

    def record_key(key: str) -> str:
        return hashlib.sha256(f"placeless\0{run.key}\0{key}".encode("utf-8", "surrogateescape")).hexdigest()

    def read(key: str) -> Any:
        saved = store.get(record_key(key), PLACELESS_RECORD)
        if saved is None:
            return None
        then, texts_read, value = saved["digests"], set(saved["texts_read"]), saved["value"]
        changed = {rel for rel in then.keys() | digests.keys() if then.get(rel) != digests.get(rel)}
        if any(rel not in run.moved or run.digests_before.get(rel) != then.get(rel) or rel in texts_read
               for rel in changed):
            return None
        if changed:  # kept for this state of the files too: else the next edit finds it stale, every other run
            store.put(record_key(key), {**saved, "digests": digests})
        return value

    def write(key: str, encoded: Any, texts_read: list[str]) -> None:
        store.put(record_key(key), {"digests": digests, "texts_read": texts_read, "value": encoded})

    return KeptMemo(read, write)


def _named_analysis(row: Any) -> tuple[Callable[[str, str], list], Callable[[str], bool]] | None:
    """(analyse, may_hold) of a ProjectIndex.asked row: [kind, [module, name, keywords] of
    each]; None for another shape, a module of another package, or an analysis that declares
    no shape of its rows (no each_file's)."""
    try:
        _, analyse, may_hold = row
        analysis = _named_function(*analyse), _named_function(*may_hold)
        row_shape(analysis[0])
        return analysis
    except (ValueError, TypeError, ImportError, AttributeError):
        return None


def _named_function(module: str, name: str, keywords: dict[str, Any]) -> Callable:
    if not (isinstance(module, str) and module.startswith("sglang_contracts.") and isinstance(keywords, dict)):
        raise ValueError(f"not one of this tool's functions: {module}")
    function = getattr(importlib.import_module(module), name)
    return functools.partial(function, **keywords) if keywords else function


def _comparable(before: ProjectIndex, now: ProjectIndex, relpath: str, digest_before: str | None) -> bool:
    """Whether the index before the edit had the file as `digest_before` says, the file is still
    there, and the index now has the analyses' tables to compare."""
    return not (digest_before is None or before.digests.get(relpath) != digest_before
                or relpath not in now.digests or now.tables is None or now.analyses is None)


def _same_placeless_facts(old: FileFacts | None, new: FileFacts | None) -> bool:
    """Whether the file's facts are the same but their positions (both parsed, nothing that
    could not be read), or the file is indexed in neither."""
    if (old is None) != (new is None):
        return False
    return old is None or new is None or not (old.parse_error or new.parse_error or old.problem or new.problem
                                              or old.placeless_digest() != new.placeless_digest())


def _rows_then_and_now(now: ProjectIndex, entry: Any, analysis: tuple, relpath: str, digest_before: str,
                       texts: tuple[str, str]) -> list[list] | None:
    """An analysis table's rows of the file as it was and as it is; None when the analysis fails
    (each_file reports it, as it always does)."""
    try:
        return [_table_rows(entry, analysis, relpath, digest_before, texts[0]),
                _table_rows(entry, analysis, relpath, now.digests[relpath], texts[1],
                            now.scanned_rows(analysis[0], relpath))]
    except Exception:
        return None


def _table_rows(entry: Any, analysis: tuple, relpath: str, digest: str, text: str, scanned: list | None = None) -> list:
    """Kept in the table (`entry`), found by the scan job on the tree it had just made (a second
    parse of a 160 KB module costs 40 ms of a re-check), or read from the text."""
    if isinstance(entry, list) and entry[0] == digest:
        return entry[1]
    return scanned if scanned is not None else _rows(analysis, relpath, text)


def _rows(analysis: tuple[Callable[[str, str], list], Callable[[str], bool]], relpath: str, text: str) -> list:
    analyse, may_hold = analysis
    return analyse(relpath, text) if may_hold(text) else []


def _moved_lines(old_lines: Sequence, new_lines: Sequence) -> dict[int, int]:
    """1-based line numbers of the `old_lines` that are the same before and after the edited
    stretch -> where they are in `new_lines` (an edit in two places leaves the lines between
    unmapped: their rows then differ, and the importers are checked again). The lines, or
    their digests."""
    shortest = min(len(old_lines), len(new_lines))
    head = 0
    while head < shortest and old_lines[head] == new_lines[head]:
        head += 1
    tail = 0
    while tail < shortest - head and old_lines[-1 - tail] == new_lines[-1 - tail]:
        tail += 1
    moved = {line: line for line in range(1, head + 1)}
    shift = len(new_lines) - len(old_lines)
    moved.update((line, line + shift) for line in range(len(old_lines) - tail + 1, len(old_lines) + 1))
    return moved


def _lines_moved(value: Any, lines: dict[int, int]) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, list, tuple)):
        return value
    if isinstance(value, int):
        return lines.get(value, value)
    return [_lines_moved(item, lines) for item in value]


def _as_json(value: Any) -> str:
    return json.dumps(value, default=str)


def _closure(start: set[str], edges: dict[str, set[str]]) -> set[str]:
    found, pending = set(start), list(start)
    while pending:
        for other in edges.get(pending.pop(), ()):
            if other not in found:
                found.add(other)
                pending.append(other)
    return found


def project_modules(project: ProjectIndex) -> set[str]:
    """The project's module names, with the namespace packages (no `__init__.py`) above them."""
    return {".".join(parts[:end]) for parts in (module_name_for(rel).split(".") for rel in project.digests)
            for end in range(1, len(parts) + 1)}


def imported_project_modules(project: ProjectIndex, relpath: str, modules: set[str]) -> list[str]:
    """Project modules a file imports (each prefix of a dotted import too: a package's
    `__init__` runs, and may re-export), and, of `modules` (the project's), those it reaches
    as attributes of a module it imports (`import pkg` then `pkg.fakes.Queue()`: pkg.fakes)."""
    facts = project.files.get(relpath)
    if facts is None:
        return []
    found: set[str] = set()
    bound_modules: dict[str, str] = {}  # a name the file binds to a project module -> that module
    for fact in facts.imports:
        for dotted in (fact.module, fact.binds):
            parts = dotted.split(".")
            if parts[0] in project.packages:
                # interned: every file repeats its packages' names (sglang's tree: 7 MB of copies)
                found.update(sys.intern(".".join(parts[:end])) for end in range(1, len(parts) + 1))
        if fact.binds in modules:
            bound_modules[fact.bound] = fact.binds
    if bound_modules:
        found.update(_modules_reached_as_attributes(project.texts[relpath], bound_modules, modules))
    return sorted(found)


def _attribute_chains(names: Iterable[str]) -> re.Pattern:
    """`name.attr.attr` after one of `names`, in two groups: the name, then the attributes."""
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w.])({alternatives})((?:\s*\.\s*[A-Za-z_]\w*)+)")


def _modules_reached_as_attributes(text: str, bound_modules: dict[str, str], modules: set[str]) -> set[str]:
    """The `modules` a text names as `bound.sub...` of a name bound to a module: a superset
    (comments and strings count), which only adds dependants."""
    found = set()
    for match in _attribute_chains(bound_modules).finditer(text):
        dotted = bound_modules[match[1]]
        for attr in re.findall(r"[A-Za-z_]\w*", match[2]):
            dotted = f"{dotted}.{attr}"
            if dotted not in modules:
                break
            found.add(sys.intern(dotted))
    return found


def checked_project(project: ProjectIndex, in_full: set[str]) -> ProjectIndex:
    """The project a partial run checks: the files `in_full` as they are, every other file's
    outline. `in_full`: the recomputed files and those defining their classes' project
    ancestors (resolve.ProjectView.ancestor_files), on which their findings rest beyond the
    outlines (a project base's own calls are roots of the subclass's borrowed code)."""
    files = {rel: facts if rel in in_full else _outline(facts) for rel, facts in project.files.items()}
    return dataclasses.replace(project, files=files)


def _outline(facts: FileFacts) -> FileFacts:
    return FileFacts(path=facts.path, module=facts.module, noqa=facts.noqa,
                     **{name: getattr(facts, name) for name in OUTLINE_FACTS})


def merged(run: Plan, diagnostics: list[Diagnostic], whole_project: Iterable[str],
           touched: dict[str, set[str]]) -> tuple[list[Diagnostic], dict[str, set[str]]]:
    """This run's findings in the recomputed files and those of the `whole_project` rules (checked
    over every file: contracts/base.py WHOLE_PROJECT), the last run's everywhere else; and so
    for the codes of the bump found in each file (`touched`, runner.bump_touched), which decide
    where SGC801/SGC803 are shown (a launch script's SGC505, checked whole, makes it a file the
    bump touches: its SGC801 is shown though the file was not checked again)."""
    if run.full:
        return diagnostics, touched

    whole = set(whole_project)

    def ours(path: str, code: str) -> bool:
        return path in run.recomputed or code in whole

    kept = sorted([*(d for d in diagnostics if ours(d.path, d.code)),
                   *(d for d in run.previous if not ours(d.path, d.code))], key=Diagnostic.sort_key)
    return kept, _merged_touched(touched, run.previous_touched, ours)


def _merged_touched(touched: dict[str, set[str]], previous_touched: dict[str, set[str]],
                    ours: Callable[[str, str], bool]) -> dict[str, set[str]]:
    """The codes of the bump by file: this run's where it checked them (`ours`), the last run's elsewhere."""
    files: dict[str, set[str]] = {}
    for table, mine in ((touched, True), (previous_touched, False)):
        for path, codes in table.items():
            codes = {code for code in codes if ours(path, code) == mine}
            if codes:
                files.setdefault(path, set()).update(codes)
    return files


def save(store, run: Plan, diagnostics: list[Diagnostic], touched: dict[str, set[str]],
         asked: dict[str, list[str] | None] | None = None) -> None:
    """The findings as merged, SGC801/SGC803 not yet left out (which a later edit elsewhere may
    bring back), the codes of the bump in each file, and the each_file tables this run and the
    last asked (ProjectIndex.asked: the next run compares an edited file's rows in them,
    moved_since_recorded)."""
    asked = {**run.asked, **(asked or {})}
    store.put(run.key, {"files": run.files, "diagnostics": [d.to_record() for d in diagnostics],
                        "touched": {path: sorted(codes) for path, codes in sorted(touched.items())}, "asked": asked})


def imports_digest(project: ProjectIndex, relpath: str) -> str | None:
    """A file's imports, positions left out: read by its importers (what it re-exports) and by
    the rules in IMPORTS_ANYWHERE, which an edit of them alone leaves to be checked again."""
    facts = project.files.get(relpath)
    if facts is None:
        return None
    imports = [json_without(fact, FACT_LISTS["imports"], Position) for fact in facts.imports]
    return hashlib.sha256(json.dumps(imports, default=str).encode("utf-8", "surrogateescape")).hexdigest()


# What of a class is its outline: its name and bases (the ancestry every check may follow from
# any file); the rest, its members, is in members_digest.
CLASS_OUTLINE = ("name", "bases")


def members_digest(project: ProjectIndex, relpath: str) -> str | None:
    """What a file's classes hold beyond CLASS_OUTLINE, positions left out: their methods,
    what their instances are given (`self.x = ...`), their typed and borrowed attributes. Read
    by the files that import it (its subclasses, the users of its classes) and by the rules in
    MEMBERS_ANYWHERE, which an edit of them alone leaves to be checked again."""
    facts = project.files.get(relpath)
    if facts is None:
        return None
    members = [json_without(fact, FACT_LISTS["classes"], Position) for fact in facts.classes]
    return hashlib.sha256(json.dumps(members, default=str).encode("utf-8", "surrogateescape")).hexdigest()


def outline_digest(project: ProjectIndex, relpath: str,
                   import_outlines: dict[str, Callable[[FileFacts], Any]] | None = None) -> str:
    """What of a file every check may read for the whole project, positions left out (moving
    code does not change it): its outline facts but its imports (imports_digest), if it holds
    contracts, what the rules read of its imports for the whole project (`import_outlines`),
    and what is read of any file's text for other files."""
    facts = project.files.get(relpath)
    text = project.texts.get(relpath, "")
    # Read from any file's text: the classes it defines (the project's own `Req` claims the name
    # `req`, SGC322), and whether it ignores unknown flags (SGC505's severity in launch scripts);
    # setup.py's whole text, which declares the project's requirements (SGC701, SGC702, SGC705).
    outline = [module_name_for(relpath), sorted(set(CLASS_DEFINITION.findall(text))), ignores_unknown_flags(text),
               text if relpath == "setup.py" else None]
    if facts is not None:
        outline += [[json_without(fact, FACT_LISTS[name], Position) for fact in getattr(facts, name)]
                    for name in OUTLINE_FACTS if name not in ("imports", "classes")]
        outline.append([[getattr(fact, part) for part in CLASS_OUTLINE] for fact in facts.classes])
        outline += [[name, read(facts)] for name, read in sorted((import_outlines or {}).items())]
    return hashlib.sha256(json.dumps(outline, default=str).encode("utf-8", "surrogateescape")).hexdigest()
