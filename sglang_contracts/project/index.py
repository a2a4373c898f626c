"""The project's facts as a whole: which files to read, their facts, and the links between them.

A file is parsed only if it can hold a contract: it names `sglang`, or it imports one of
the project's own modules that re-export SGLang names, or it defines or imports an object the
rule settings name (a mapped fake, a ServerArgs seam). Facts are cached per file content.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterable, Iterator, MutableMapping

from sglang_contracts.infra.cache import CACHEDIR_TAG, RecordCache, code_fingerprint
from sglang_contracts.infra import pysource
from sglang_contracts.infra.pysource import (
    SHEBANG_BYTES, named_as_nothing, is_python_file, is_python_script, python_shebang)
from sglang_contracts.infra.collector import collector_paused
from sglang_contracts.infra.boundary import Problem, debugging, problem_for
from sglang_contracts.infra.graphs import reachable
from sglang_contracts.infra.files import (MAX_PYTHON_BYTES, Unreadable, is_below, os_reason, read_head, read_limited,
                                          resolved)
from sglang_contracts.infra.lines import decoded_line_digests, encoded_line_digests, matches_at_line_start
from sglang_contracts.infra.parallel import iter_jobs, start_forked
from sglang_contracts.infra.shapes import ListOf, Row, Table, TableOf, fits, row_shape, rows_of
from sglang_contracts.infra.temporaries import is_temporary, remove_if_stale
from sglang_contracts.project.facts import FACTS_RECORD, FileFacts, forget_shared
from sglang_contracts.project.texts import ProjectTexts, as_text, held
from sglang_contracts.sources.base import PACKAGE
from sglang_contracts.upstream.model import is_upstream

# Skipped wherever they are: tools' folders, none of them a name a package of the project can have.
EXCLUDED_DIRS = {".git", ".hg", ".venv", "__pycache__", "node_modules", ".tox", ".nox", ".mypy_cache",
                 ".pytest_cache", "site-packages", ".eggs"}
# What a folder of an environment holds (venv's, conda's): skipped whatever its name (env, venv, py311).
ENVIRONMENT_MARKS = ("pyvenv.cfg", "conda-meta")
# Skipped only beside a project's build file, where setuptools and `python -m build` write them:
# a package's own `build` or `dist` subpackage is the project's code.
BUILD_OUTPUTS = {"build", "dist"}
BUILD_FILES = {"pyproject.toml", "setup.py", "setup.cfg"}
IMPORTS_SGLANG = re.compile(r"^[ \t]*(?:from|import)[ \t]+sglang\b", re.M)
# Both found at a line's start (infra/lines.py matches_at_line_start).
FROM_IMPORT = re.compile(r"from[ \t]+(?P<source>\.*[\w.]*)[ \t]+import[ \t]+(?P<clause>\([^)]*\)|[^\n]*)")
IMPORTED_NAME = re.compile(r"\b(\w+)\b(?:\s+as\s+\w+)?")
PLAIN_IMPORT = re.compile(r"import[ \t]+([^\n]*)")
LISTING = "listing the folder"  # the stage of a Problem about a project folder that cannot be listed
UNREAD_FOLDER = "in an environment, a build's output or a tool's folder, not read"  # a named path there


def mentions(text: str, word: str) -> Iterator[int]:
    """Offsets of every `word` in a text: a plain search, far cheaper than a regular expression
    tried at every position of every file of a project."""
    start = text.find(word)
    while start != -1:
        yield start
        start = text.find(word, start + len(word))


def mentions_sglang(text: str) -> bool:
    """`sglang.` anywhere (imports, patch targets in strings) or an import of the bare package;
    or the package's name quoted in a file that reads a version (`get_version("sglang")`, a
    dispatch on `importlib.metadata.version` of it that imports nothing of SGLang).
    Found by plain search first: a project's own name (sglang_omni) puts "sglang" in most of its files."""
    if any(text.startswith(".", at + 6) and not (at and (text[at - 1].isalnum() or text[at - 1] == "_"))
           for at in mentions(text, "sglang")):
        return True
    if ('"sglang"' in text or "'sglang'" in text) and ("version(" in text or "__version__" in text):
        return True
    return IMPORTS_SGLANG.search(text) is not None


def names_sglang(text: str) -> bool:
    """Whether the text says sglang in any letter case: by plain search first, since lowering a
    text copies it and most files that name SGLang do so in lower case (every file of a
    project meets this test)."""
    return "sglang" in text or "sglang" in text.lower()


def skipped_folder(parent: str, name: str, beside: list[str]) -> bool:
    """A folder `name` of `parent` (whose files are `beside`) no reader looks into: a tool's, an
    environment's, or a build's output beside the build file that makes it."""
    if name in EXCLUDED_DIRS or name.endswith(".egg-info"):
        return True
    if name in BUILD_OUTPUTS and not BUILD_FILES.isdisjoint(beside):
        return True
    return any(os.path.lexists(os.path.join(parent, name, mark)) for mark in ENVIRONMENT_MARKS)


def skipped_on_the_way(path: Path, root: Path) -> bool:
    """Whether `path` (a file or folder below `root`) is in, or is, a folder the project's walk
    from the root does not go into (project_folders)."""
    try:
        names = path.relative_to(root).parts
    except ValueError:
        return False
    folder = root
    for name in names if path.is_dir() else names[:-1]:
        beside = [file for file in BUILD_FILES if (folder / file).is_file()]
        if skipped_folder(os.fspath(folder), name, beside) or (folder / name / CACHEDIR_TAG).is_file():
            return True
        folder = folder / name
    return False


def walk_project(paths: list[Path], accept: Callable[[str], bool],
                 unlisted: Callable[[str, str], None] | None = None) -> list[Path]:
    """Files below the given paths (files or folders) whose name `accept`s, sorted, without tool
    folders; `unlisted` is told each folder that cannot be listed, and why (project_folders)."""
    found: set[str] = set()
    for path in paths:
        if path.is_file():
            found.add(os.fspath(resolved(path)))
            continue
        # The folder is resolved once; os.walk does not follow links, so what it yields below it
        # is already resolved (resolving 900 files one by one cost a third of a second). Walked
        # on strings, sorted as paths are (part by part): a Path per file, made and compared,
        # cost half of a re-check's walk.
        for folder, files in _folders(os.fspath(resolved(path)), unlisted):
            found.update(os.path.join(folder, f) for f in files if accept(f))
    return [Path(name) for name in sorted(found, key=_path_parts)]


# top -> project_folders(top), walked once a run for the readers that want no word of what
# could not be listed (a dozen readers of Dockerfiles, scripts, requirements and patches each
# walked the whole project); None outside one_walk_per_run.
_WALKS: dict[str, list[tuple[str, list[str]]]] | None = None


@contextmanager
def one_walk_per_run() -> Iterator[None]:
    """Within it, walk_project walks each top once (a run's files do not change under it)."""
    global _WALKS, _ONCE
    outer, outer_once = _WALKS, _ONCE
    _WALKS = {} if outer is None else outer
    _ONCE = {} if outer_once is None else outer_once
    try:
        yield
    finally:
        _WALKS, _ONCE = outer, outer_once


# key -> what once_per_run computed for it in the run under way; None outside one_walk_per_run.
_ONCE: dict[tuple, Any] | None = None


def once_per_run(key: tuple, compute: Callable[[], Any]) -> Any:
    """compute(), once a run for `key` (a run's files do not change under it); each time outside one."""
    once = _ONCE
    if once is None:
        return compute()
    if key not in once:
        once[key] = compute()
    return once[key]


@dataclass(frozen=True)
class Confinement:
    """The paths a run reads when it is confined to those it was given (a lone file, or files
    and folders, in a folder that holds no project): the named files, by folder, and the named
    folders, each read whole."""

    files: dict[str, frozenset[str]]
    folders: tuple[str, ...]

    def holds(self, path: str) -> bool:
        folder, name = os.path.split(path)
        return name in self.files.get(folder, ()) or any(is_below(path, named) for named in self.folders)

    def tops_below(self, top: str) -> tuple[list[tuple[str, list[str]]], list[str]]:
        """(folder, the named files there) below `top`, and the folders to walk whole there."""
        files = sorted((folder, sorted(names)) for folder, names in self.files.items()
                       if folder == top or is_below(folder, top))
        walks = [top] if any(top == named or is_below(top, named) for named in self.folders) else \
            [named for named in self.folders if is_below(named, top)]
        return files, walks


# The confinement of the run under way, None for a run that reads its project: `check
# ~/Downloads/one.md` read the folder's 40,000 other files for release mentions and requirements,
# 48 s (campaign 19, R12), and so did `check ~/Downloads/one.md ~/Downloads/sub` (campaign 20, R03).
_CONFINED: Confinement | None = None


@contextmanager
def confined_to(paths: Iterable[Path] | None) -> Iterator[None]:
    """Within it, the project holds `paths` alone, files and folders (project_folders,
    within_the_run); None: no confinement."""
    global _CONFINED
    outer = _CONFINED
    if paths is not None:
        files: dict[str, set[str]] = {}
        folders = []
        for path in map(os.fspath, paths):
            if os.path.isdir(path) and not os.path.islink(path):
                folders.append(path)
            else:
                folder, name = os.path.split(path)
                files.setdefault(folder, set()).add(name)
        _CONFINED = Confinement({folder: frozenset(names) for folder, names in files.items()}, tuple(folders))
    try:
        yield
    finally:
        _CONFINED = outer


def within_the_run(path: Path) -> bool:
    """Whether a file found by a name or a pattern of the project's (`requirements*.txt`) is one
    the run reads (see confined_to)."""
    return _CONFINED is None or _CONFINED.holds(os.fspath(path))


def _folders(top: str, unlisted: Callable[[str, str], None] | None) -> Iterable[tuple[str, list[str]]]:
    walks = _WALKS
    if unlisted is not None or walks is None:
        return project_folders(top, unlisted)
    if top not in walks:
        walks[top] = list(project_folders(top))
    return walks[top]


def links_out_of(path: Path, root: Path) -> bool:
    """Whether a path named below `root` (as given, links not followed) is really outside it."""
    named = os.path.abspath(path)
    return is_below(named, os.fspath(root)) and not is_below(os.path.realpath(named), os.path.realpath(root))


def as_named(path: Path, root: Path) -> Path:
    """A path given to a run, as the run reports on it: resolved, but a link out of the project
    where it is named (what its SGC000 is at, and what keys a run naming it)."""
    return Path(os.path.abspath(path)) if links_out_of(path, root) else path.resolve()


def project_folders(top: str, unlisted: Callable[[str, str], None] | None = None) -> Iterator[tuple[str, list[str]]]:
    """(folder, its file names) of the folders below `top` (itself included) that a reader looks
    into: not tools', environments' or builds' (skipped_folder), nor a cache folder below the
    top (this tool's own, pytest's: CACHEDIR.TAG); the top, which the user named, is read
    whatever it holds. os.walk, which does not follow links to folders. A folder that is there
    but cannot be listed (permission denied, a path over the system's bound) is passed over
    after telling `unlisted` (its path, why): its files' contracts are lost, never silently. A
    temporary file of a `fix` is no file of the project: left out, and removed once its writer
    is gone. Within a confinement (confined_to), the named files below `top` and the named
    folders there, walked."""
    confined = _CONFINED
    if confined is not None:
        named_files, walks = confined.tops_below(top)
        yield from named_files
        for below in walks:
            yield from _walked(below, top, unlisted)
        return
    yield from _walked(top, top, unlisted)


def _walked(start: str, top: str, unlisted: Callable[[str, str], None] | None) -> Iterator[tuple[str, list[str]]]:
    """project_folders of the folders below `start`, within `top`."""
    def skipped(error: OSError) -> None:
        # Gone since its parent was listed, or a file given as the top: nothing was lost.
        if unlisted is not None and error.filename is not None \
                and not isinstance(error, (FileNotFoundError, NotADirectoryError)):
            unlisted(os.fsdecode(error.filename), os_reason(error))

    for folder, dirs, files in os.walk(start, onerror=skipped):
        if CACHEDIR_TAG in files and folder != top:
            dirs[:] = []
            continue
        dirs[:] = [d for d in dirs if not skipped_folder(folder, d, files)]
        if unlisted is not None:  # a link to a folder is never walked; one out of the project is said
            _tell_links_out(folder, dirs, top, unlisted)
        yield folder, _project_files(folder, files)


def _tell_links_out(folder: str, dirs: list[str], top: str, unlisted: Callable[[str, str], None]) -> None:
    for name in dirs:
        path = os.path.join(folder, name)
        if os.path.islink(path) and links_out_of(Path(path), Path(top)):
            unlisted(path, "a link out of the project, not read")


def _project_files(folder: str, files: list[str]) -> list[str]:
    """A folder's files but a `fix`'s temporary ones, which are removed once their writer is gone."""
    temporaries = [name for name in files if is_temporary(name)]
    for name in temporaries:
        remove_if_stale(folder, name)
    return [name for name in files if name not in temporaries] if temporaries else files


def _path_parts(name: str) -> list[str]:
    return name.split(os.sep)


# Why a named file of a kind of Python the index does not read is not read (its SGC000).
UNREAD_KINDS = {".pyi": "a type stub, never run: its imports raise nothing when the bump ships, not read",
                ".ipynb": "a notebook, whose code cells are not read"}
# What else pre-commit's `identify` tags as Python, and its hook therefore names (campaign 14, R09).
UNREAD_PYTHON = "Python in a file not named .py, which this tool does not read"
UNREAD_PYTHON_SUFFIXES = frozenset({".pyw", ".pyt", ".wsgi", ".tac", ".gyp", ".gypi"})
UNREAD_PYTHON_NAMES = frozenset({"wscript", ".pdbrc"})
UNREAD_SCRIPT = "a Python script neither executable nor named .py, not read"


def unread_python_kind(path: Path, root: Path) -> str | None:
    """Why a file, named to a run, that is Python of a kind the index does not read (a stub, a
    notebook, a script of no suffix without the executable bit, what else pre-commit tags as
    Python) is not read; None for any other."""
    if path.suffix.lower() in UNREAD_KINDS:
        return UNREAD_KINDS[path.suffix.lower()]
    if path.suffix.lower() in UNREAD_PYTHON_SUFFIXES or path.name in UNREAD_PYTHON_NAMES:
        return UNREAD_PYTHON
    if not named_as_nothing(path.name) or is_python_script(os.fspath(path), root):
        return None
    try:
        return UNREAD_SCRIPT if python_shebang(read_head(path, SHEBANG_BYTES, root)) else None
    except Unreadable:
        return None


def discover(root: Path, paths: list[Path], excluded: Callable[[str], bool] | None = None,
             unlisted: Callable[[str, str], None] | None = None) -> list[Path]:
    """Python files below the given paths (`.py`, and scripts of no suffix: is_python_script),
    without what `excluded` says of a path relative to the root (the configured excludes);
    `unlisted` as walk_project's."""
    found = walk_project(paths, lambda name: name.endswith(".py") or named_as_nothing(name), unlisted)
    found = [path for path in found if is_python_file(os.fspath(path), root)]
    if excluded is None:
        return found
    return [path for path in found if not (path.is_relative_to(root) and excluded(path.relative_to(root).as_posix()))]


# The module name of a Python script of no suffix (bin/launch): what Python runs it as, which no
# import of the project's names.
SCRIPT_MODULE = "__main__"


def module_name_for(relpath: str) -> str:
    if not relpath.endswith(".py") and named_as_nothing(relpath.rpartition("/")[2]):
        return SCRIPT_MODULE
    parts = relpath[:-3].split("/") if relpath.endswith(".py") else relpath.split("/")
    if parts and parts[0] == "src" and len(parts) > 1:
        parts = parts[1:]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


# Per-file analyses (ProjectIndex.each_file) that read the syntax tree the scan has just made
# (pysource.parse_shared keeps it): kind -> (module, analysis, its cheap test). A scan job runs
# them on that tree, and each_file takes their results for the files scanned instead of parsing
# them again on the pool (sglang's own tree: 534 and 266 files, 6.6 s of the workers' time).
ON_THE_SCANNED_TREE = {
    "http-requests": ("sglang_contracts.project.http", "_file_requests", "_may_request"),
    "release-mentions": ("sglang_contracts.project.images", "script_mentions", "may_name_release"),
    # and, of an edited file a forked copy scans (_scanning_beside), there: its prose's tokens
    # were a third of a re-check's plan
    "mirror-citations": ("sglang_contracts.project.mirrors", "_file_citations", "_may_cite"),
}


def _on_the_scanned_tree(relpath: str, text: str) -> dict[str, list]:
    """The ON_THE_SCANNED_TREE analyses of a file that their tests accept; one that fails is
    left out, to run again (and be reported) where each_file asks for it."""
    import importlib

    found: dict[str, list] = {}
    for kind, (module_name, analysis, test) in ON_THE_SCANNED_TREE.items():
        module = importlib.import_module(module_name)
        if getattr(module, test)(text):
            try:
                found[kind] = getattr(module, analysis)(relpath, text)
            except Exception:
                continue
    return found


def _scan_job(job: tuple[str, str, str, tuple[str, ...], RecordCache, str]) -> tuple[dict, dict[str, list]]:
    """One file's facts as JSON, also written to the cache under the key given: encoding and
    writing them in the workers, not in the process that gathers them all; and the analyses
    that read the same tree (ON_THE_SCANNED_TREE)."""
    _, result, analyses = _scanned(job)
    return result, analyses


def _scanned(job: tuple[str, str, str, tuple[str, ...], RecordCache, str]) -> tuple[FileFacts, dict, dict[str, list]]:
    """A file's facts, as JSON too (written to the cache), and ON_THE_SCANNED_TREE's rows."""
    *_, cache, key = job
    facts, analyses = _scanned_facts(job)
    result = facts.to_record()
    cache.put(key, result)
    cache.put(lines_key(key), encoded_line_digests(job[2]))
    return facts, result, analyses


def _scanned_facts(job: tuple[str, str, str, tuple[str, ...], RecordCache, str]) -> tuple[FileFacts, dict[str, list]]:
    """A file's facts and ON_THE_SCANNED_TREE's rows, nothing written."""
    from sglang_contracts.project.scanner import scan_source

    relpath, module, text, packages, _, _ = job
    # A syntax tree and facts: many objects and no cycles, all freed as the scan returns.
    with collector_paused():
        return scan_source(relpath, module, text, packages), _on_the_scanned_tree(relpath, text)


# The per-file tables the index's build reads (each_file): they decide which files are scanned
# and what the re-export table holds, which a re-check compares as the files' outlines and
# whether they are indexed (incremental.py), and the build has them up to date before any
# comparison: not among what a file's edit is compared by (ProjectIndex.asked).
BUILD_TABLES = ("sglang-mentions", "imports")


@dataclass
class ProjectIndex:
    root: Path
    files: dict[str, FileFacts] = field(default_factory=dict)  # relpath -> facts
    scanned: int = 0
    parsed: int = 0  # cache misses
    packages: tuple[str, ...] = ()  # the project's top-level packages (and modules)
    # module -> {bound name -> dotted target}: what each project module binds at its top level
    exports: dict[str, dict[str, str]] = field(default_factory=dict)
    # relpath -> SHA-256 of the content of every Python file (the bytes themselves are not kept)
    digests: dict[str, str] = field(default_factory=dict)
    # relpath -> that content decoded, once per run (project/texts.py: compactly)
    texts: MutableMapping[str, str] = field(default_factory=ProjectTexts)
    cache: RecordCache = field(default_factory=lambda: RecordCache(None))
    # each_file's tables as the last run of a resident process left them (IndexMemo.tables), by
    # key; None in a run of its own, which reads each once
    tables: dict[str, dict[str, list]] | None = field(default=None, repr=False)
    # A resident process's records changed but not yet written to the cache (IndexMemo.unwritten):
    # written after the answer is out, not while the user waits; None: written at once
    unwritten: dict[str, tuple[RecordCache, dict[str, list] | FileFacts]] | None = field(default=None, repr=False)
    # kind -> relpath -> the results of ON_THE_SCANNED_TREE analyses the scan jobs ran
    on_the_scanned_tree: dict[str, dict[str, list]] = field(default_factory=dict, repr=False)
    # table key -> (analyse, may_hold) of each_file's kinds this process ran (IndexMemo.analyses)
    analyses: dict[str, tuple[Callable[[str, str], list], Callable[[str], bool]]] | None = field(default=None, repr=False)
    # Files or analyses the report lacks, and why (SGC000, SGC001): unreadable files, and the
    # per-file analyses that failed (a scan's own problem is in its facts).
    problems: list[Problem] = field(default_factory=list)
    # table key -> [kind, analyse's module and name, may_hold's module and name] of each
    # each_file this run asked (None where one is no module's own function): what the next run,
    # in a process of its own, compares an edited file's rows of (incremental.moved_since_recorded)
    asked: dict[str, list[str] | None] = field(default_factory=dict, repr=False)
    read_tables: dict[str, dict[str, list]] = field(default_factory=dict, repr=False)  # stored_table's
    rows_kept: set[str] = field(default_factory=set, repr=False)  # the tables keep_rows changed since written
    # Dotted paths of the project's own objects the rule settings name (a mapped fake's class, a
    # ServerArgs seam): their modules are scanned whatever they mention, and their importers as
    # the importers of a re-export from SGLang are (no name or import heuristic sees them).
    configured: tuple[str, ...] = ()
    # (project module, name) -> the SGLang dotted path the module's star imports give the name as,
    # or None: what upstream_path follows where the re-export table holds no name
    # (releasefacts.with_star_names); None where no module star-imports
    given_by_stars: Callable[[str, str], str | None] | None = field(default=None, repr=False)
    star_reexporters: frozenset[str] = frozenset()  # the project modules given_by_stars may answer for

    def each_file(self, kind: str, analyse: Callable[[str, str], list], may_hold: Callable[[str], bool],
                  *code: ModuleType, by_pattern: bool = False) -> list:
        """`analyse(relpath, text)` over every Python file whose text `may_hold` (a cheap test)
        something, concatenated in path order. Results are JSON lists, cached per file content
        and per the `code` modules that compute them and `may_hold` (a file it refuses is kept
        with none), in one table per project and kind: a first run writes one record, not one
        per file. `by_pattern`: the analysis only matches patterns, which costs less than
        sending the texts to the workers (omni's 9.8 MB: 0.37 s here, 0.53 s there). `analyse`
        declares the shape of its rows (infra/shapes.py rows_of): a record of another shape is
        computed again."""
        rows = row_shape(analyse)
        fingerprint = code_fingerprint(pysource, *code)  # pysource: how `text` was decoded
        table_key = hashlib.sha256(f"{fingerprint}\0{kind}\0{self.root}".encode("utf-8", "surrogateescape")).hexdigest()
        table = self._stored_table(table_key, rows)
        computed = self._computed(kind, analyse, may_hold, table, by_pattern)
        if self.analyses is not None:
            self.analyses[table_key] = (analyse, may_hold)
        if kind not in BUILD_TABLES:
            named = [_function_name(analyse), _function_name(may_hold)]
            self.asked[table_key] = None if None in named else [kind, *named]
        fresh, recomputed, found = self._refreshed(table, computed)
        if recomputed and debugging() and not fits(json.loads(json.dumps(fresh)), each_file_table(rows)):
            # a declaration its own rows (as the record keeps them) do not fit: computed at every run
            raise TypeError(f"each_file {kind!r}: rows not of the shape {_function_name(analyse)} declares")
        if recomputed or fresh.keys() != table.keys():
            if self.unwritten is not None:
                self.unwritten[table_key] = (self.cache, fresh)
            else:
                self.cache.put(table_key, fresh)
            self.rows_kept.discard(table_key)
        if self.tables is not None:
            self.tables[table_key] = fresh
        self.read_tables[table_key] = fresh  # as written: the table a later each_file of the run reads
        return found

    def _stored_table(self, table_key: str, rows: Any) -> dict[str, list]:
        """each_file's table as last kept: a resident process's own (the record it wrote is not
        read and decoded again), or the cache's record; empty when there is none."""
        stored = self.tables.get(table_key) if self.tables is not None else None
        return stored if isinstance(stored, dict) else self.stored_table(table_key, rows)

    def keep_rows(self, table_key: str, rows_shape: Any, relpath: str, rows: list) -> None:
        """A file's rows of an each_file table, found as this run's analysis finds them (the plan
        compares them: incremental.moved_since_recorded), kept in the table as each_file would
        keep them; written by write_kept_rows when no each_file of the run writes the table."""
        self.stored_table(table_key, rows_shape)[relpath] = [self.digests[relpath], rows]
        self.rows_kept.add(table_key)

    def record_keys(self, folder: Path | None) -> set[str]:
        """The keys of the records of this index in its cache's `folder` (none for another one):
        its files' facts and line digests, its per-file tables, its rounds. A resident process
        holds them from one edit to the next without reading them again; a run of its own reads
        them (infra/cache.py evict_over_bounds keeps them)."""
        if folder is None or self.cache.folder != folder:
            return set()
        keys = {_rounds_key(self.root), *self.read_tables, *(self.tables or {})}
        for relpath, facts in self.files.items():
            if relpath in self.digests:
                key = _facts_key(relpath, facts.module, self.digests[relpath], self.packages)
                keys.update((key, lines_key(key)))
        return keys

    def write_kept_rows(self) -> None:
        for table_key in sorted(self.rows_kept):
            self.cache.put(table_key, self.read_tables[table_key])
        self.rows_kept.clear()

    def stored_table(self, table_key: str, rows: Any) -> dict[str, list]:
        """The cache's record of an each_file table as the last run left it, its rows of the shape
        `rows` (its analysis's row_shape; empty when there is none, or it is of another shape),
        read once a run: the plan reads it before the checks do (incremental.py)."""
        if table_key not in self.read_tables:
            self.read_tables[table_key] = self.cache.get(table_key, each_file_table(rows)) or {}
        return self.read_tables[table_key]

    def _computed(self, kind: str, analyse: Callable[[str, str], list], may_hold: Callable[[str], bool],
                  table: dict[str, list], by_pattern: bool) -> dict[str, list | None]:
        """The results of the files the table holds none for (or a stale one) that `may_hold`
        something: what the scan jobs found already, else analysed now (None where it failed)."""
        stale = [relpath for relpath, digest in sorted(self.digests.items())
                 if not _entry_holds(table.get(relpath), digest) and may_hold(self.texts[relpath])]
        premade = self._premade(kind, analyse)
        computed = {relpath: premade[relpath] for relpath in stale if relpath in premade}
        computed.update(self._analysed_all(kind, analyse, [relpath for relpath in stale if relpath not in computed],
                                           in_process=by_pattern))
        return computed

    def _refreshed(self, table: dict[str, list], computed: dict[str, list | None]
                   ) -> tuple[dict[str, list], bool, list]:
        """(the table now, was any entry computed again, every file's results in path order)."""
        fresh: dict[str, list] = {}
        recomputed = False
        found: list = []
        for relpath, digest in sorted(self.digests.items()):
            # A file unchanged since the table was written is not tested again: a file that
            # cannot hold anything is kept with no results (the test costs more than the lookup).
            entry = table.get(relpath)
            if not _entry_holds(entry, digest):
                result = computed.get(relpath, [])
                if result is None:  # failed: reported, and not kept, so that a rerun tries again
                    continue
                entry = [digest, result]
                recomputed = True
            fresh[relpath] = entry
            found.extend(entry[1])
        return fresh, recomputed, found

    def scanned_rows(self, analyse: Callable[[str, str], list], relpath: str) -> list | None:
        """What this index's scan job found in a file with `analyse` (ON_THE_SCANNED_TREE), if
        it ran it there."""
        for kind in ON_THE_SCANNED_TREE:
            rows = self._premade(kind, analyse).get(relpath)
            if rows is not None:
                return rows
        return None

    def _premade(self, kind: str, analyse: Callable[[str, str], list]) -> dict[str, list]:
        """What the scan jobs found with `analyse` (ON_THE_SCANNED_TREE), by file."""
        module_name, name, _ = ON_THE_SCANNED_TREE.get(kind, ("", "", ""))
        if (getattr(analyse, "__module__", None), getattr(analyse, "__name__", None)) != (module_name, name):
            return {}
        return self.on_the_scanned_tree.get(kind, {})

    def _analysed_all(self, kind: str, analyse: Callable[[str, str], list], relpaths: list[str],
                      in_process: bool = False) -> dict[str, list | None]:
        """Each file's analysis, on the run's workers when there is enough text to pay for it
        (the first run of a large project: sglang's own tree spent 18 s in these one file at a
        time); in this process when the analysis cannot be sent to a worker (a lambda), or when
        one raised there: each file then fails or not on its own, as always."""
        jobs = [(analyse, relpath, held(self.texts, relpath)) for relpath in relpaths]
        if len(jobs) > 1 and not in_process and _sendable(analyse):
            try:
                return dict(zip(relpaths, iter_jobs(_analysis_job, jobs, sum(len(job[2]) for job in jobs))))
            except Exception:
                pass  # computed again below, where a failure is one file's problem
        return {relpath: self._analysed(kind, analyse, relpath, as_text(form)) for _, relpath, form in jobs}

    def _analysed(self, kind: str, analyse: Callable[[str, str], list], relpath: str, text: str) -> list | None:
        """One file's analysis; one that fails costs that file's part of the report (SGC000 or
        SGC001, and None here), not the run."""
        try:
            return analyse(relpath, text)
        except Exception as error:
            self.problems.append(problem_for(error, relpath, f"reading {kind}",
                                             depth=lambda: pysource.source_depth(text)))
            return None

    def resolve_local(self, module: str, name: str, _depth: int = 0) -> str | None:
        """The upstream dotted path a project module's top-level name stands for, if any."""
        target = self.exports.get(module, {}).get(name)
        if target is None or _depth > 20:
            return None
        return self.upstream_path(target, _depth + 1)

    def upstream_path(self, dotted: str, _depth: int = 0) -> str | None:
        """The upstream path that a dotted path stands for, seen through the project's re-exports:
        followed hop by hop (a loop, not recursion), at most 20 hops, and never through the
        same re-export twice (modules re-exporting each other's names lead nowhere)."""
        after: list[str] = []  # the names written after each re-exported one, the last hop's first
        seen: set[tuple[str, str]] = set()
        depth = _depth
        while not is_upstream(dotted):
            parts = dotted.split(".")
            for split in range(len(parts) - 1, 0, -1):
                owner = ".".join(parts[:split])
                if owner in self.exports:
                    break
            else:
                return None
            name = parts[split]
            target = self.exports[owner].get(name)
            if target is None and owner in self.star_reexporters and self.given_by_stars is not None:
                target = self.given_by_stars(owner, name)
            if target is None or depth > 20 or (owner, name) in seen:
                return None
            seen.add((owner, name))
            after = [*parts[split + 1 :], *after]
            dotted, depth = target, depth + 1
        return ".".join([dotted, *after])


def each_file_table(rows: Any) -> TableOf:
    """The shape of an each_file table's record: relpath -> [the file's digest, its rows], each
    row of the shape its analysis declares (`rows`)."""
    return TableOf(Row(str, ListOf(rows)))

# LastRounds' record: relpath -> [content digest, mentions SGLang, digest of its imports as read].
LAST_ROUNDS = Table(packages=ListOf(str), files=TableOf(Row(str, bool, str)), rounds=ListOf(ListOf(str)),
                    scanned=TableOf(str))


def _entry_holds(entry: Any, digest: str) -> bool:
    """Whether a per-file table entry is [the file's digest, its results]."""
    return isinstance(entry, list) and len(entry) == 2 and entry[0] == digest and isinstance(entry[1], list)


def _sendable(analyse: Callable) -> bool:
    try:
        pickle.dumps(analyse)
    except (pickle.PicklingError, AttributeError, TypeError):
        return False
    return True


def _analysis_job(job: tuple[Callable[[str, str], list], str, str | bytes]) -> list:
    analyse, relpath, form = job
    return analyse(relpath, as_text(form))


@lru_cache(maxsize=1)
def _scanner_fingerprint() -> str:
    from sglang_contracts.infra import pysource
    from sglang_contracts.project import dispatches, facts, gates, positions, scanner, scopes

    return code_fingerprint(scanner, scopes, facts, positions, gates, dispatches, pysource)


def _facts_key(relpath: str, module: str, content: str, packages: tuple[str, ...]) -> str:
    """`content`: the SHA-256 of the file's bytes."""
    # surrogateescape: a file name may hold bytes that are not UTF-8 (os.fsdecode's surrogates)
    key = f"{_scanner_fingerprint()}\0{relpath}\0{module}\0{packages}\0{content}"
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()


def _function_name(function: Callable) -> list | None:
    """[module, name, keywords] by which another process finds a module's own function (with
    the keywords a `functools.partial` of it gives); None for a lambda, a nested function, a
    method, or a partial with positional arguments or keywords that are not plain values."""
    keywords: dict[str, Any] = {}
    if isinstance(function, partial):
        if function.args or not all(isinstance(value, (str, int, bool)) for value in function.keywords.values()):
            return None
        keywords, function = dict(function.keywords), function.func
    module, name = getattr(function, "__module__", None), getattr(function, "__qualname__", "")
    return [module, name, keywords] if module and name.isidentifier() else None


def lines_key(facts_key: str) -> str:
    """The key of the line digests (infra/lines.py) of the content a facts record is of: what a
    later run compares the file's new lines with, when only the old content's digest is known."""
    return hashlib.sha256(f"lines\0{facts_key}".encode()).hexdigest()


def recorded_facts(index: ProjectIndex, relpath: str, digest: str) -> tuple[FileFacts | None, list[int] | None]:
    """(the facts, the line digests) the cache holds of a file's content by its digest, as a
    scan of it wrote them; None for what it holds not."""
    key = _facts_key(relpath, module_name_for(relpath), digest, index.packages)
    facts = index.cache.get_decoded(key, FACTS_RECORD, FileFacts.from_json)
    return facts, decoded_line_digests(index.cache.get(lines_key(key), str))


def read_python(path: Path, root: Path | None = None) -> tuple[str, str]:
    """(SHA-256 of a project Python file's bytes, its text decoded); raises Unreadable, as for a
    link out of the project `root`."""
    data = read_limited(path, MAX_PYTHON_BYTES, within=root)
    return hashlib.sha256(data).hexdigest(), pysource.decode_source(data)


@dataclass
class IndexMemo:
    """What build_index derives from file contents and from the re-export table, kept by a
    resident process between its runs (a fresh run starts with an empty one): each is keyed by
    everything it is computed from, so that the index is the one a fresh run builds."""

    mentions: dict[str, bool] = field(default_factory=dict)  # content digest -> mentions_sglang
    # relpath -> (content digest, its imports read from the text): the "imports" table's rows
    imports: dict[str, tuple[str, "_Imports"]] = field(default_factory=dict)
    # (the re-export table as it stood, the names each module binds to SGLang) of each round
    upstream_names: list[tuple[dict[str, dict[str, str]], dict[str, set[str]]]] = field(default_factory=list)
    # id of those names -> relpath -> (the file's imports read, whether it imports one of them)
    reexported: dict[int, dict[str, tuple["_Imports", bool]]] = field(default_factory=dict)
    # relpath -> (its facts, the project modules that may define a class they use)
    class_modules: dict[str, tuple[FileFacts, list[str]]] = field(default_factory=dict)
    # ProjectIndex.each_file's per-file tables, by table key (each entry holds its file's digest)
    tables: dict[str, dict[str, list]] = field(default_factory=dict)
    # and the analysis behind each table, with its cheap test (the same code for the same key)
    analyses: dict[str, tuple[Callable[[str, str], list], Callable[[str], bool]]] = field(default_factory=dict)
    # the records changed since they were last written, by key, with the cache they go to: the
    # tables, and the facts of a file scanned again
    unwritten: dict[str, tuple[RecordCache, dict[str, list] | FileFacts]] = field(default_factory=dict)

    def write_records(self) -> None:
        """Write the records the runs since the last call changed (each table a JSON record of a
        row per project file, 3% of a re-check of omni when written before the answer; the
        edited file's facts, their encoding 5%)."""
        while self.unwritten:
            key, (cache, record) = self.unwritten.popitem()
            cache.put(key, record.to_record() if isinstance(record, FileFacts) else record)

    def sglang_mentioned(self, digest: str, text: str) -> bool:
        known = self.mentions.get(digest)
        if known is None:
            known = self.mentions[digest] = mentions_sglang(text)
        return known

    def kept_for(self, digests: dict[str, str]) -> None:
        """Only what the files as they are now can use again."""
        live = set(digests.values())
        self.mentions = {digest: known for digest, known in self.mentions.items() if digest in live}
        self.imports = {rel: row for rel, row in self.imports.items() if digests.get(rel) == row[0]}
        kept = {id(names) for _, names in self.upstream_names}
        self.reexported = {key: verdicts for key, verdicts in self.reexported.items() if key in kept}
        self.class_modules = {rel: row for rel, row in self.class_modules.items() if rel in digests}


def build_index(root: Path, paths: list[Path], cache: RecordCache, workers: int | None = None,
                excluded: Callable[[str], bool] | None = None,
                read: Callable[[Path, Path], tuple[str, str]] = read_python, memo: IndexMemo | None = None,
                after_first_round: Callable[[ProjectIndex], None] | None = None,
                configured: tuple[str, ...] = (), one_shot: bool = False) -> ProjectIndex:
    """`read`: how a file is read (read_python; a resident engine's keeps the unchanged ones);
    `memo`: what earlier runs of a resident process derived (IndexMemo); `after_first_round`:
    called with the index once the files that name SGLang are scanned (prefetch.EarlyExtraction);
    `configured`: ProjectIndex.configured; `one_shot`: for a process that does one run (it may
    fork: _scanned_as_planned)."""
    tables, analyses = (memo.tables, memo.analyses) if memo is not None else (None, None)
    memo = memo if memo is not None else IndexMemo()
    index = ProjectIndex(root=root, cache=cache, tables=tables, analyses=analyses,
                         unwritten=memo.unwritten if tables is not None else None, configured=configured)
    texts = _read_project(index, root, paths, excluded, read)
    # The project's own top-level packages: imports from anywhere else but SGLang are third-party.
    index.packages = tuple(sorted({module.split(".")[0] for module, _ in texts.values() if module}))

    last = LastRounds.read(index, cache)
    planned = last.planned(index, texts, memo) if last is not None else None
    if planned is None or not _scanned_as_planned(index, texts, cache, workers, memo, planned, after_first_round,
                                                  one_shot):
        rounds = _scan_rounds(index, texts, cache, workers, memo, after_first_round,
                              known=planned.read if planned is not None else None)
        LastRounds.made(index, texts, memo, rounds).write(index, cache, last)
    else:
        planned.last.updated(index, planned).write(index, cache, last)
    memo.kept_for(index.digests)
    return index


def _scan_rounds(index: ProjectIndex, texts: dict[str, tuple[str, str]], cache: RecordCache, workers: int | None,
                 memo: IndexMemo, after_first_round: Callable[[ProjectIndex], None] | None,
                 known: dict[str, FileFacts] | None = None) -> list[list[str]]:
    """Scan the files that name SGLang, then, round after round, those they make matter: the
    importers of names they re-export from SGLang, the definers of classes they use. The files
    of each round, in order. `known`: facts read already (a plan given up: Planned.read)."""
    pending = _mentioning_sglang(index, memo) | configured_files(index).keys()
    imports: dict[str, _Imports] = {}  # each file's import statements, read once however many rounds
    rounds: list[list[str]] = []
    while pending:
        _scan(index, {rel: texts[rel] for rel in pending}, cache, workers, known=known)
        rounds.append(sorted(pending))
        scanned = [index.files[rel] for rel in rounds[-1] if rel in index.files]
        # The files of earlier rounds are linked already, and come before these in index.files:
        # linking these alone leaves the table as linking every file again would.
        _link(index, scanned)
        if len(rounds) == 1 and after_first_round is not None:
            after_first_round(index)
        pending = (_importers_of_reexports(index, texts, imports, memo, len(rounds) - 1)
                   | _definers_of_used_classes(scanned, index, texts, memo))
    return rounds


@dataclass
class Planned:
    """The last build's rounds, to be scanned again as they were: `changed`, the files whose
    content changed since; `read`, the facts read for it (the changed files' where a round scans
    them, and the others' records decoded while a forked copy scanned those), which the rounds
    take, or the build's own rounds where the plan is given up."""

    last: "LastRounds"
    changed: list[str]
    read: dict[str, FileFacts] = field(default_factory=dict)


@dataclass
class LastRounds:
    """Which files the last build of this project scanned, round by round, and what of each
    file decided it: a build whose changed files read alike (the same SGLang mention and
    imports read from the text; scanned, the same top-level bindings, class bases and modules
    of the classes it uses: _round_inputs) scans the same files in the same rounds, and scans
    them so without looking for the next round's (the re-export rounds were a tenth of an
    edited file's re-check in a process of its own)."""

    packages: list[str]
    files: dict[str, list]  # relpath -> [content digest, mentions SGLang, digest of its imports as read]
    rounds: list[list[str]]
    scanned: dict[str, str]  # relpath -> digest of its _round_inputs

    @classmethod
    def read(cls, index: ProjectIndex, cache: RecordCache) -> "LastRounds | None":
        saved = cache.get(_rounds_key(index.root, index.configured), LAST_ROUNDS)
        if saved is None:
            return None
        last = cls(list(saved["packages"]), dict(saved["files"]), [list(batch) for batch in saved["rounds"]],
                   dict(saved["scanned"]))
        return last if last.scans_its_own_files() else None

    def scans_its_own_files(self) -> bool:
        """Whether every file of its rounds is one of its files (its shape is LAST_ROUNDS')."""
        return all(rel in self.files for batch in self.rounds for rel in batch)

    @classmethod
    def made(cls, index: ProjectIndex, texts: dict[str, tuple[str, str]], memo: IndexMemo,
             rounds: list[list[str]]) -> "LastRounds":
        imports = _read_imports(index, memo)
        files = {rel: [digest, memo.sglang_mentioned(digest, index.texts[rel]),
                       _imports_digest(imports.get(rel) or _Imports.read(rel, texts[rel][0], index.texts[rel]))]
                 for rel, digest in index.digests.items()}
        scanned = {rel: _round_inputs(index.files[rel]) for batch in rounds for rel in batch if rel in index.files}
        return cls(list(index.packages), files, rounds, scanned)

    def planned(self, index: ProjectIndex, texts: dict[str, tuple[str, str]], memo: IndexMemo) -> Planned | None:
        """The rounds to scan again, when every changed file reads alike before it is scanned."""
        if self.packages != list(index.packages) or self.files.keys() != index.digests.keys():
            return None
        changed = [rel for rel, digest in index.digests.items() if self.files[rel][0] != digest]
        # Read as a build reads them (their tables kept up to date for the next run's comparisons:
        # incremental.moved_since_recorded), unchanged files from those tables.
        mentioning, imports = _mentioning_sglang(index, memo), _read_imports(index, memo)
        for rel in changed:
            if (rel in mentioning) != self.files[rel][1] or rel not in imports \
                    or _imports_digest(imports[rel]) != self.files[rel][2]:
                return None
        return Planned(self, changed)

    def updated(self, index: ProjectIndex, planned: Planned) -> "LastRounds":
        files = dict(self.files)
        for rel in planned.changed:
            files[rel] = [index.digests[rel], *self.files[rel][1:]]
        return LastRounds(self.packages, files, self.rounds, self.scanned)

    def write(self, index: ProjectIndex, cache: RecordCache, last: "LastRounds | None") -> None:
        if last is None or self != last:
            cache.put(_rounds_key(index.root, index.configured),
                      {"packages": self.packages, "files": self.files, "rounds": self.rounds, "scanned": self.scanned})


def _scanned_as_planned(index: ProjectIndex, texts: dict[str, tuple[str, str]], cache: RecordCache, workers: int | None,
                        memo: IndexMemo, planned: Planned, after_first_round: Callable[[ProjectIndex], None] | None,
                        one_shot: bool = False) -> bool:
    """The last build's rounds scanned again, when each changed file a round scans gives the
    same round inputs (scanned first, on their own: nothing is in the index until all agree);
    False, and nothing scanned into the index, when one does not. `one_shot`: the changed files
    may be scanned in a forked copy while this process decodes the other files' records."""
    in_rounds = {rel for batch in planned.last.rounds for rel in batch}
    changed = {rel: texts[rel] for rel in planned.changed if rel in in_rounds}
    jobs, cached = _uncached(index, changed, cache)  # an edit undone: its facts are the cache's
    scanning = _scanning_beside(jobs) if one_shot else None
    if scanning is not None:
        unchanged = {rel: texts[rel] for batch in planned.last.rounds for rel in batch if rel not in changed}
        planned.read.update(_uncached(index, unchanged, cache)[1])
    scanned_beside = scanning() if scanning is not None else {}
    for job in jobs:
        index.parsed += 1
        if job[0] in scanned_beside:
            cached[job[0]], analyses = scanned_beside[job[0]]
            _keep_analyses(index, job[0], analyses)
        else:
            cached[job[0]] = _scanned_here(index, job, cache)
    for rel in changed:
        planned.read[rel] = cached[rel]
        if _round_inputs(cached[rel]) != planned.last.scanned.get(rel):
            return False
    for number, batch in enumerate(planned.last.rounds):
        _scan(index, {rel: texts[rel] for rel in batch}, cache, workers, known=planned.read)
        scanned = [index.files[rel] for rel in batch if rel in index.files]
        _link(index, scanned)
        for facts in scanned:  # as _definers_of_used_classes keeps them, for a resident process's next edit
            memo.class_modules[facts.path] = (facts, _class_modules(facts))
        if number == 0 and after_first_round is not None:
            after_first_round(index)
    return True


# A process of its own re-checking an edit has its second core idle while it builds the index:
# the edited files' scan (0.15 s for a 4,000-line file) runs in a forked copy of it while it
# decodes the other files' records (about as long). Edited files smaller than this in all are
# scanned here.
SCAN_BESIDE_MIN_BYTES = 16_000
# How long the copy may take, beyond a scan's rate (the copy is stopped and the files scanned
# here: a lock another thread held when it was made would stall it for ever).
SCAN_BESIDE_PATIENCE = 2.0
SCAN_BESIDE_SECONDS_PER_BYTE = 5e-6


def _scanning_beside(jobs: list[tuple[str, str, str, tuple[str, ...], RecordCache, str]]
                     ) -> Callable[[], dict[str, tuple[FileFacts, dict[str, list]]]] | None:
    """A forked copy running the scan `jobs` (_uncached's: writing their records, as a pool's
    worker does), and how to wait for what it found (relpath -> facts, ON_THE_SCANNED_TREE's
    rows; a file it did not give is scanned here); None when they are too small to be worth a
    copy."""
    size = sum(len(job[2]) for job in jobs)
    if not jobs or size < SCAN_BESIDE_MIN_BYTES:
        return None
    # Imported here, not in the copy: another thread importing a module when the copy is made
    # leaves that module's lock held there for ever.
    from sglang_contracts.project.scanner import scan_source  # noqa: F401

    waiting = start_forked(lambda: [_scan_job(job) for job in jobs])

    def found() -> dict[str, tuple[FileFacts, dict[str, list]]]:
        results = waiting(SCAN_BESIDE_PATIENCE + size * SCAN_BESIDE_SECONDS_PER_BYTE)
        if results is None:
            return {}
        return {job[0]: (FileFacts.from_json(result), analyses) for job, (result, analyses) in zip(jobs, results)}

    return found


@lru_cache(maxsize=None)
def _rounds_key(root: Path, configured: tuple[str, ...] = ()) -> str:
    """Per the configured objects too: they add files to the first round (ProjectIndex.configured)."""
    key = f"index-rounds\0{_scanner_fingerprint()}\0{code_fingerprint(sys.modules[__name__])}\0{root}\0{configured}"
    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()


def _imports_digest(imports: "_Imports") -> str:
    return _json_digest([imports.froms, sorted(imports.modules)])


def _round_inputs(facts: FileFacts) -> str:
    """What of a scanned file decides the next rounds: what it binds at its top level (the
    re-export table), its top-level classes' bases as dotted paths (the project's subclasses of
    SGLang's), and the modules that may define the classes it uses."""
    return _json_digest([_top_level_bindings(facts), _top_level_class_bases(facts), _class_modules(facts)])


def _json_digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, default=str).encode("utf-8", "surrogateescape")).hexdigest()


def _mentioning_sglang(index: ProjectIndex, memo: IndexMemo) -> set[str]:
    """The files whose text mentions SGLang (mentions_sglang), each tested once per content: by
    a resident process's memo, or in a table per project (a re-check in a fresh process tests
    the edited files only; the test of every file cost a tenth of its index)."""
    if all(digest in memo.mentions for digest in index.digests.values()):
        return {rel for rel, digest in index.digests.items() if memo.mentions[digest]}
    found = set(index.each_file("sglang-mentions", _mention_row, _may_mention_sglang, sys.modules[__name__],
                                by_pattern=True))
    for rel, digest in index.digests.items():
        memo.mentions[digest] = rel in found
    return found


def any_text(text: str) -> bool:
    """each_file's test of a file every text of which may hold something."""
    return True


@rows_of(str)  # the file's own path, when it mentions SGLang
def _mention_row(relpath: str, text: str) -> list[str]:
    return [relpath] if mentions_sglang(text) else []


def _may_mention_sglang(text: str) -> bool:
    return "sglang" in text


def _read_project(index: ProjectIndex, root: Path, paths: list[Path], excluded: Callable[[str], bool] | None,
                  read: Callable[[Path, Path], tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """Every Python file's digest and text into the index; relpath -> (module, content digest)."""
    texts: dict[str, tuple[str, str]] = {}
    below = os.path.join(os.fspath(root), "")

    def relative(name: str) -> str:
        if name.startswith(below) and os.sep == "/":  # Path.relative_to, without a Path per file
            return name[len(below):]
        try:
            return Path(name).relative_to(root).as_posix()
        except ValueError:
            return Path(name).as_posix()

    def unlisted(folder: str, reason: str) -> None:  # the files below it are lost: said, never silently
        relpath = relative(folder)
        if excluded is None or not excluded(relpath):
            index.problems.append(Problem(relpath, 1, 1, LISTING, reason, internal=False))

    for path in discover(root, paths, excluded, unlisted):
        relpath = relative(os.fspath(path))
        try:
            # Only the decoded text and a digest are kept: the bytes of a large project's files
            # would otherwise stay in memory all run long.
            digest, text = read(path, root)
        except Unreadable as unreadable:  # its contracts are lost: said, never silently
            index.problems.append(Problem(relpath, 1, 1, "reading the file", unreadable.reason, internal=False))
            continue
        texts[relpath] = (module_name_for(relpath), digest)
        index.digests[relpath] = digest
        index.texts[relpath] = text
    index.scanned = len(texts)
    return texts


def updated_index(previous: ProjectIndex, root: Path, paths: list[Path], cache: RecordCache, workers: int | None,
                  excluded: Callable[[str], bool] | None, read: Callable[[Path, Path], tuple[str, str]],
                  memo: IndexMemo) -> ProjectIndex | None:
    """The index build_index would build now, made from `previous` (the last one it built for
    these paths, with nothing a run added to it) when the files that changed since cannot
    change which files are scanned nor what the re-export table holds: None when they may (a
    file added, removed or unreadable; a changed file whose sglang mention, text-read imports,
    top-level bindings or used classes' modules differ), and build_index decides. Only the
    changed files are scanned; every other file keeps its facts."""
    index = ProjectIndex(root=root, cache=cache, tables=memo.tables, analyses=memo.analyses, packages=previous.packages,
                         unwritten=memo.unwritten, configured=previous.configured)
    texts = _read_project(index, root, paths, excluded, read)
    if index.problems or index.digests.keys() != previous.digests.keys():
        return None
    changed = sorted(rel for rel, digest in index.digests.items() if digest != previous.digests[rel])
    index.files = dict(previous.files)
    relinked = False
    for rel in changed:
        relink = _rescanned(index, previous, rel, texts, cache, workers, memo)
        if relink is None:
            return None
        relinked |= relink
    if relinked:
        _link(index)
    else:
        index.exports = {module: dict(table) for module, table in previous.exports.items()}
    memo.kept_for(index.digests)
    forget_shared()
    return index


def _rescanned(index: ProjectIndex, previous: ProjectIndex, rel: str, texts: dict[str, tuple[str, str]],
               cache: RecordCache, workers: int | None, memo: IndexMemo) -> bool | None:
    """A changed file taken into `index` (scanned again if `previous` had scanned it): whether the
    re-export table must be linked again; None when the change may change which files are scanned."""
    if not _same_reach(index, previous, rel, texts, memo):
        return None
    if rel not in previous.files:
        return False
    _scan(index, {rel: texts[rel]}, cache, workers)  # in its place: the files keep their order
    before, now = previous.files[rel], index.files[rel]
    kept_classes = memo.class_modules.get(rel)
    if kept_classes is None or kept_classes[0] is not before or _class_modules(now) != kept_classes[1] \
            or top_level_stars(now) != top_level_stars(before):  # a star re-export makes its star importers scanned
        return None
    bindings = _top_level_bindings(now), _top_level_bindings(before)
    relink = bindings[0] != bindings[1]
    if relink and not _resolve_alike(*bindings):
        return None
    memo.class_modules[rel] = (now, kept_classes[1])
    return relink


def _same_reach(index: ProjectIndex, previous: ProjectIndex, rel: str, texts: dict[str, tuple[str, str]],
                memo: IndexMemo) -> bool:
    """Does a changed file mention SGLang as it did and, where it does not, import what it did
    (scanned, if at all, as a re-export's importer)?"""
    old_mention = memo.mentions.get(previous.digests[rel])
    if old_mention is None or old_mention != memo.sglang_mentioned(index.digests[rel], index.texts[rel]):
        return False
    if old_mention:
        return True
    kept = memo.imports.get(rel)
    if kept is None or kept[0] != previous.digests[rel]:
        return False
    module, _ = texts[rel]
    imports = _Imports.read(rel, module, index.texts[rel])
    if imports != kept[1]:
        return False
    memo.imports[rel] = (index.digests[rel], imports)
    return True


def _top_level_bindings(facts: FileFacts) -> list[tuple[str, str]]:
    """What a scanned file puts in the re-export table (_link), in order."""
    return [(fact.bound, fact.binds) for fact in facts.imports if fact.module_level and fact.name != "*"]


def top_level_stars(facts: FileFacts) -> list[str]:
    """The modules a scanned file star-imports at its top level, in order (_star_reexporters)."""
    return [fact.module for fact in facts.imports if fact.module_level and fact.name == "*"]


def _resolve_alike(now: list[tuple[str, str]], before: list[tuple[str, str]]) -> bool:
    """Whether two files' top-level bindings bind the same names, each to the same target or to
    SGLang both times (an import fixed to where a name now lives): every name then resolves to
    SGLang or not as before, so the scan rounds read the same files."""
    return len(now) == len(before) and all(
        name == was_name and (target == was_target or (is_upstream(target) and is_upstream(was_target)))
        for (name, target), (was_name, was_target) in zip(now, before))


def _scan(index: ProjectIndex, batch: dict[str, tuple[str, str]], cache: RecordCache, workers: int | None,
          known: dict[str, FileFacts] | None = None) -> None:
    """The batch's files' facts into the index, in path order: those `known` (scanned already),
    the cache's, and the others scanned."""
    known = {rel: facts for rel, facts in (known or {}).items() if rel in batch}
    jobs, scanned = _uncached(index, {rel: item for rel, item in batch.items() if rel not in known}, cache)
    scanned.update(known)
    index.parsed += len(jobs)
    if len(jobs) == 1:  # a re-check's edited file: here, and its facts as scanned (decoding them costs a tenth of it)
        scanned[jobs[0][0]] = _scanned_here(index, jobs[0], cache)
        jobs = []
    # The largest first: a round waits for its last file, which is then a small one.
    by_size = sorted(jobs, key=lambda job: -len(job[2]))
    # Each file's facts are decoded as they come: the JSON of every file at once would double the
    # peak.
    results = iter_jobs(_scan_job, by_size, sum(len(job[2]) for job in jobs), workers, progress="Scanning the project",
                        small=True)  # the run waits for the facts
    for job, (result, analyses) in zip(by_size, results):
        scanned[job[0]] = FileFacts.from_json(result)
        _keep_analyses(index, job[0], analyses)
    # Cached or not, in path order: the order of the project's classes decides which of two
    # subclasses a finding names (SGC314 once per root and member), whatever the cache held.
    for relpath in sorted(batch):
        index.files[relpath] = scanned[relpath]


def _uncached(index: ProjectIndex, batch: dict[str, tuple[str, str]], cache: RecordCache
              ) -> tuple[list[tuple[str, str, str, tuple[str, ...], RecordCache, str]], dict[str, FileFacts]]:
    """(the scan jobs of the batch's files the cache holds no facts of, the facts it holds)."""
    jobs: list[tuple[str, str, str, tuple[str, ...], RecordCache, str]] = []
    scanned: dict[str, FileFacts] = {}
    for relpath, (module, digest) in sorted(batch.items()):
        key = _facts_key(relpath, module, digest, index.packages)
        cached = cache.get_decoded(key, FACTS_RECORD, FileFacts.from_json)
        if cached is not None:
            scanned[relpath] = cached
            continue
        jobs.append((relpath, module, index.texts[relpath], index.packages, cache, key))
    return jobs, scanned


def _scanned_here(index: ProjectIndex, job: tuple[str, str, str, tuple[str, ...], RecordCache, str],
                  cache: RecordCache) -> FileFacts:
    """One file's facts, scanned in this process (a resident one's record is written after the answer)."""
    if index.unwritten is not None:
        facts, analyses = _scanned_facts(job)
        index.unwritten[job[5]] = (cache, facts)
        index.unwritten[lines_key(job[5])] = (cache, encoded_line_digests(job[2]))
    else:
        facts, _, analyses = _scanned(job)
    _keep_analyses(index, job[0], analyses)
    return facts


def _keep_analyses(index: ProjectIndex, relpath: str, analyses: dict[str, list]) -> None:
    """What the scan job's analyses found in a file (ON_THE_SCANNED_TREE), for each_file."""
    for kind, rows in analyses.items():
        index.on_the_scanned_tree.setdefault(kind, {})[relpath] = rows


def _link(index: ProjectIndex, files: Iterable[FileFacts] | None = None) -> None:
    """Record what each scanned project module (of `files`, by default every one) binds at
    its top level to an import target."""
    for facts in index.files.values() if files is None else files:
        index.exports.setdefault(facts.module, {}).update(_top_level_bindings(facts))


def absolute_module(module: str, is_package: bool, target: str) -> str:
    level = len(target) - len(target.lstrip("."))
    if not level:
        return target
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: max(len(package) - (level - 1), 0)]
    rest = target[level:]
    return ".".join(base + ([rest] if rest else []))


def from_imports(relpath: str, module: str, text: str, module_level: bool = False) -> Iterator[tuple[str, list[str]]]:
    """(absolute source module, names imported, `*` included) of each `from x import ...` in a
    file's text, read without parsing it; `module_level`: only statements at column 0."""
    is_package = relpath.endswith("__init__.py")
    for indent, match in matches_at_line_start(FROM_IMPORT, text):
        if module_level and indent:
            continue
        clause = match.group("clause")
        names = IMPORTED_NAME.findall(clause.strip("()")) + (["*"] if "*" in clause else [])
        yield absolute_module(module, is_package, match.group("source")), names


@dataclass
class _Imports:
    """What a file imports, read from its text: (source module, names) of each `from` import,
    and the modules of its plain imports."""

    froms: list[tuple[str, list[str]]]
    modules: set[str]

    @classmethod
    def read(cls, relpath: str, module: str, text: str) -> "_Imports":
        modules = {part.split(" as ")[0].strip() for _, match in matches_at_line_start(PLAIN_IMPORT, text)
                   for part in match.group(1).split(",")}
        return cls(list(from_imports(relpath, module, text)), modules)

    def reexported(self, upstream_names: dict[str, set[str]]) -> bool:
        """Does the file import, from a project module, a name that module binds to SGLang, or
        such a module itself (`from pk import base`)?"""
        for source, imported in self.froms:
            names = upstream_names.get(source)
            # a module that re-exports by a star import (STAR) may give any name imported from it
            if names and ("*" in imported or "*" in names or names.intersection(imported)):
                return True
            if any(f"{source}.{name}" in upstream_names for name in imported):
                return True
        return not self.modules.isdisjoint(upstream_names)


def imports_by_text(index: ProjectIndex) -> dict[str, tuple[list[tuple[str, list[str]]], list[str]]]:
    """relpath -> (source module and names of each `from` import, modules of plain imports) of
    every Python file, read from its text without parsing it: what the files the scan left out
    import (a package's `from . import engine`). Cached per content, in the table the index reads."""
    rows = index.each_file("imports", _imports_row, any_text, sys.modules[__name__], by_pattern=True)
    return {relpath: ([(source, names) for source, names in froms], modules) for relpath, froms, modules in rows}


# [path, [[module, [names]] of each `from` import], [modules of plain imports]]
@rows_of(Row(str, ListOf(Row(str, ListOf(str))), ListOf(str)))
def _imports_row(relpath: str, text: str) -> list[list]:
    read = _Imports.read(relpath, module_name_for(relpath), text)
    return [[relpath, read.froms, sorted(read.modules)]]


def _upstream_names(index: ProjectIndex, memo: IndexMemo, round_number: int) -> dict[str, set[str]]:
    """module -> the top-level names it binds to SGLang, through the re-export table. The
    same table gives the same names: a resident process's later runs find each round's table
    as it was unless an edit changed what some module binds."""
    derived = _upstream_subclasses(index)
    for module in _star_reexporters(index):
        derived[module] = derived.get(module, frozenset()) | STAR
    for rel, names in configured_files(index).items():
        module = module_name_for(rel)
        derived[module] = derived.get(module, frozenset()) | names
    if round_number < len(memo.upstream_names) and memo.upstream_names[round_number][0] == (index.exports, derived):
        return memo.upstream_names[round_number][1]
    upstream_names: dict[str, set[str]] = {module: set(names) for module, names in derived.items()}
    # A name bound to a third-party module (most of them) resolves to no SGLang name in any
    # round: only SGLang's and the project's own are followed through the re-export table.
    followed = {*index.packages, PACKAGE}
    paths: dict[str, str | None] = {}  # one round's table leads a target to one path, whoever binds it

    def reaches_sglang(target: str) -> bool:
        if target not in paths:
            paths[target] = index.upstream_path(target, 1) if target.partition(".")[0] in followed else None
        return paths[target] is not None

    for module, table in index.exports.items():
        names = {name for name, target in table.items() if reaches_sglang(target)}
        if names:
            upstream_names.setdefault(module, set()).update(names)
    for _, dropped in memo.upstream_names[round_number:]:  # their verdicts go with them (ids are reused)
        memo.reexported.pop(id(dropped), None)
    del memo.upstream_names[round_number:]
    memo.upstream_names.append((({module: dict(table) for module, table in index.exports.items()}, derived),
                                upstream_names))
    return upstream_names


def configured_files(index: ProjectIndex) -> dict[str, frozenset[str]]:
    """relpath -> the names defined at the top level of its module that the configured objects
    are (ProjectIndex.configured); an object's module is the longest prefix of its dotted path
    that names a project module (`tests.fakes.Outer.Inner`: `Outer` of tests/fakes.py)."""
    if not index.configured:
        return {}
    by_module = {module_name_for(rel): rel for rel in index.digests}
    found: dict[str, frozenset[str]] = {}
    for dotted in index.configured:
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            rel = by_module.get(".".join(parts[:cut]))
            if rel is not None:
                found[rel] = found.get(rel, frozenset()) | {parts[cut]}
                break
    return found


STAR = frozenset({"*"})  # the names of a module that re-exports by a star import: its star importers'


def _star_reexporters(index: ProjectIndex) -> set[str]:
    """The scanned modules whose star imports may give SGLang's names: those that star-import an
    SGLang module, and those that star-import one of them, through any chain (what the star
    import of each gives is releasefacts.with_star_names' to say). A file that star-imports one
    is scanned like an importer of SGLang's names; each link is followed once."""
    importers: dict[str, list[str]] = {}  # project module -> the modules that star-import it
    starts = []  # the modules that star-import SGLang
    for facts in index.files.values():
        for star in top_level_stars(facts):
            if is_upstream(star):
                starts.append(facts.module)
            else:
                importers.setdefault(star, []).append(facts.module)
    return reachable(starts, importers)


def _upstream_subclasses(index: ProjectIndex) -> dict[str, frozenset[str]]:
    """module -> the classes the scanned files define on an SGLang class, directly or through
    the project's own (`class MyScheduler(Scheduler)`): a file that imports one and runs it
    (`MyScheduler(args).event_loop_normal()` in an entry point that imports nothing of SGLang)
    runs upstream code, so it is scanned like an importer of SGLang's names."""
    bases = _class_bases(index)
    found = {key for key, dotted in bases.items() if any(index.upstream_path(base) is not None for base in dotted)}
    found = _with_subclasses(bases, found)
    modules: dict[str, set[str]] = {}
    for module, name in found:
        modules.setdefault(module, set()).add(name)
    return {module: frozenset(names) for module, names in modules.items()}


def _class_bases(index: ProjectIndex) -> dict[tuple[str, str], list[str]]:
    """(module, class) -> its bases as dotted paths, for the top-level classes of the scanned files."""
    return {(facts.module, name): dotted for facts in index.files.values()
            for name, dotted in _top_level_class_bases(facts)}


def _top_level_class_bases(facts: FileFacts) -> list[tuple[str, list[str]]]:
    """(class, its bases as dotted paths) of a scanned file's top-level classes."""
    named = [cls for cls in facts.classes if "." not in cls.name] if facts.module else []
    bindings = facts.bindings() if named else {}
    return [(cls.name, _dotted_bases(cls.bases, bindings, facts.module)) for cls in named]


def _dotted_bases(written: tuple[str, ...], bindings: dict[str, str], module: str) -> list[str]:
    """A class's bases as written, as dotted paths through the module's bindings (or the module itself)."""
    dotted = []
    for base in written:
        head, _, rest = base.partition(".")
        target = bindings.get(head, f"{module}.{head}")
        dotted.append(f"{target}.{rest}" if rest else target)
    return dotted


def _with_subclasses(bases: dict[tuple[str, str], list[str]], found: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """`found` and the classes based on them, level by level."""
    for _ in range(8):  # a subclass of a subclass: a few levels settle every real project
        grown = {key for key, dotted in bases.items()
                 if key not in found and any(tuple(base.rpartition(".")[::2]) in found for base in dotted)}
        if not grown:
            break
        found |= grown
    return found


def _read_imports(index: ProjectIndex, memo: IndexMemo) -> dict[str, _Imports]:
    """Every file's imports, read from its text once per content (a table per project; a
    resident process keeps the rows of the files that did not change)."""
    if all(memo.imports.get(rel, ("",))[0] == digest for rel, digest in index.digests.items()):
        return {rel: row[1] for rel, row in memo.imports.items() if rel in index.digests}
    found = {}
    for rel, froms, modules in index.each_file("imports", _imports_row, any_text, sys.modules[__name__],
                                               by_pattern=True):
        found[rel] = _Imports([(source, names) for source, names in froms], set(modules))
        memo.imports[rel] = (index.digests[rel], found[rel])
    return found


def _importers_of_reexports(index: ProjectIndex, texts: dict[str, tuple[str, str]], imports: dict[str, _Imports],
                            memo: IndexMemo, round_number: int) -> set[str]:
    """Unscanned files that import, from a scanned project module, a name it binds to SGLang."""
    upstream_names = _upstream_names(index, memo, round_number)
    if not upstream_names:
        return set()
    if not imports:
        imports.update(_read_imports(index, memo))
    # The same names (kept by the memo) and the same imports read give the same verdict.
    verdicts = memo.reexported.setdefault(id(upstream_names), {})
    found = set()
    for rel, (module, _) in texts.items():
        if rel in index.files:
            continue
        if rel not in imports:  # its reading failed (reported): read it again here
            imports[rel] = _Imports.read(rel, module, index.texts[rel])
        known = verdicts.get(rel)
        if known is None or known[0] is not imports[rel]:
            known = verdicts[rel] = (imports[rel], imports[rel].reexported(upstream_names))
        if known[1]:
            found.add(rel)
    return found


def _definers_of_used_classes(scanned: list[FileFacts], index: ProjectIndex,
                              texts: dict[str, tuple[str, str]], memo: IndexMemo) -> set[str]:
    """Unscanned project files that define a class the files just scanned use as a type or a
    base: `data: VoxtralRequestData` then `data.req.extend_range` needs that class's typed fields."""
    by_module = {module: rel for rel, (module, _) in texts.items()}
    wanted: set[str] = set()
    for facts in scanned:
        kept = memo.class_modules.get(facts.path)
        if kept is None or kept[0] is not facts:  # the same facts (a kept record's) use the same classes
            kept = memo.class_modules[facts.path] = (facts, _class_modules(facts))
        for module in kept[1]:
            rel = by_module.get(module)
            if rel is not None and rel not in index.files:
                wanted.add(rel)
    return wanted


def _class_modules(facts: FileFacts) -> list[str]:
    """The modules that may define a project class a file uses as a type or a base."""
    bindings = facts.bindings()
    found = []
    for name in facts.class_names:
        head, _, rest = name.partition(".")
        target = bindings.get(head)
        if target is None or is_upstream(target):
            continue
        dotted = f"{target}.{rest}" if rest else target
        found += [dotted.rpartition(".")[0], dotted]
    return found
