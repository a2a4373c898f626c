"""A resident engine: the runs of one process (the language server, the daemon) share what
does not change between edits, and each run gives the findings a fresh process would.

Kept, each under a key of everything that would change it:
- the opened releases, by their spec, clone, cache folder and content (sources.content_identity:
  a version's name, a ref's commit, a directory's files by path, size and time); one whose
  content cannot be told is opened for each run;
- both releases' UpstreamModels, with every memo they fill (modules loaded, resolutions, class
  orders, members, body lines, whole-release searches), by the releases kept, the cache folder
  and the project's live patch stacks (by content); a pair that met a module it could not read
  or analyse, or one the project's patch stack left unanalysable (read as released), is not
  kept, since such a module is reported (at the project's imports of it, or at the patch) and a
  fresh run reports only the modules it reaches;
- each project Python file's digest and decoded text, by its size, modification and change
  times, inode and device; an editor's unsaved buffer is read in every run;
- what the project index derives from file contents and from the re-export table
  (project/index.py IndexMemo: a content's sglang mention, a file's imports, each round's
  upstream-named re-exports), each under what it was computed from; and the last index itself,
  which an edit that cannot change which files are scanned nor what a name resolves to updates
  by scanning the changed files alone (updated_index), and which tells the plan which edits
  only moved code (incremental.moved_only: their importers keep their findings);
- what the checks derive from the whole project's facts without positions and the releases
  (CheckContext.of_placeless_project: SGC302's reach of the upstream code the project runs,
  SGC322's suspects), by the models kept, while every Python file that changed since changed
  only where its code sits (incremental.moved_only, asked by the plan; a rebuilt index, or a
  changed file the plan did not ask about or that changed more, starts it afresh);
- the project's SGLang pin, by the path, size and time of every file the pin readers may read
  (pins.pin_may_read) and the unsaved buffers;
- what the checks read of the project's files that are not Python and of setup.py
  (CheckContext.of_stack_files: the requirements declared and installed, the releases the
  stack files name, the Pythons declared), by the run's inputs but its Python files (the
  incremental plan's salt: the options, both releases, every other file by path, size and
  time) and setup.py's digest;
- decoded cache records (project facts, upstream records), by their file's size and time
  (infra.cache.remember_records), once read back (what this process wrote is read as any
  record is: a record kept as written would hold tuples where a read gives lists); the catalog and the
  rules, imported once.

Everything else, the plan of which files to recompute among them (incremental.py) included,
is the ordinary run's (runner.run_check with this engine as its `keep`), so that the findings
are those of a fresh run: tests/resident/test_resident.py compares them, on the fixture project and on
real sglang-omni edits. This tool's own code is in no key: a process runs one version of it
(the daemon exits when its files change).
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import os
import threading
from functools import partial
from pathlib import Path
from typing import Callable

from sglang_contracts.check.incremental import moved_only
from sglang_contracts.config import configured_objects
from sglang_contracts.infra.allocator import one_malloc_arena
from sglang_contracts.infra.cache import RecordCache, evict_over_bounds, remember_records
from sglang_contracts.infra.collector import resident_process
from sglang_contracts.infra.files import file_state, unsaved_buffer, unsaved_buffer_items
from sglang_contracts.patch.stack import PatchStacks, stack_may_read
from sglang_contracts.project.index import IndexMemo, ProjectIndex, read_python, updated_index
from sglang_contracts.project.pins import ProjectPin, pin_may_read
from sglang_contracts.check.runner import (CheckOptions, CheckResult, Fresh, as_the_image_has_them, live_stacks, excluder,
                                     run_check)
from sglang_contracts.sources import content_identity
from sglang_contracts.sources.base import Release
from sglang_contracts.upstream.model import LoadStats, UpstreamModel


class ResidentEngine(Fresh):
    """`check(paths, options)`: run_check on what the earlier runs of this process kept."""

    checks_in_two = False  # a daemon's or a language server's threads: no forked copy

    def __init__(self, collect_between: bool = False) -> None:
        self.collect_between = collect_between  # the caller calls `collect` after each run's answer
        remember_records()
        resident_process()
        one_malloc_arena()  # a resident process allocates on several threads, run after run
        self._lock = threading.Lock()  # one run at a time: the kept state changes during a run
        self._releases: dict[tuple, Release] = {}
        self._models: dict[tuple, tuple[UpstreamModel, UpstreamModel]] = {}
        self._releases_memos: dict[tuple, dict] = {}  # what the checks derived from each kept pair alone
        self._files: dict[str, tuple[str, str, str]] = {}  # path -> (file_state, digest, text)
        # This run's: the releases it asked for, the files it read, the models it was given.
        self._asked: set[tuple] = set()
        self._read: set[str] = set()
        self._given: tuple[tuple, tuple[UpstreamModel, UpstreamModel]] | None = None
        self._index_memo = IndexMemo()
        self._index: tuple[tuple, ProjectIndex] | None = None  # (what it was built for, the last index built)
        self._before: ProjectIndex | None = None  # this run's: the index of the run before, for the same paths
        # (the models' key, what the checks derived from the project's facts without positions)
        self._placeless_memo: tuple[tuple, dict] | None = None
        self._changed: set[str] | None = None  # this run's: the Python files changed since the last run's index
        self._only_moved: set[str] = set()  # this run's: those of them moved_only said only moved
        self._pin: tuple[tuple[str, str], ProjectPin | None] | None = None  # (key, the pin read under it)
        self._listed: list[tuple[str, str]] | None = None  # this run's listing (pin), None: not taken
        self._stacks: tuple[tuple[str, str], PatchStacks, str] | None = None  # (key, stacks, their digest)
        self._files_memo: tuple[tuple[str, str | None], dict] | None = None  # (key, CheckContext.files_memo)
        self.runs = 0  # computed runs (for tests and logs)
        self._owed = False  # the collector is off since the last run began (check)

    def check(self, paths: list[Path], options: CheckOptions) -> CheckResult:
        """One run. With `collect_between`, the cyclic collector stays off from its start until
        `collect` (or the next run's start): its passes over a run's young objects cost a tenth
        of a re-check, paid while the user waits; the daemon and the language server collect
        once the answer is out."""
        with self._lock:
            self._collect()
            if self.collect_between:
                self._owed = True
                gc.disable()
            self._asked, self._read, self._given = set(), set(), None
            return run_check(paths, options, keep=self)

    def computed(self, paths: list[Path], options: CheckOptions, result: CheckResult) -> CheckResult:
        """`result` of `check(paths, options)`, or, when it was replayed, the same check computed:
        a replay holds the findings only (no project facts for a fix), reads no record and
        imports no rule, which the next edit's check would otherwise pay for. Computed every
        file again and recorded (CheckOptions.recompute): the next edit is planned against this
        state of the files, not against whatever state the last recorded run saw."""
        if result.replayed_files_with_contracts is None:
            return result
        return self.check(paths, dataclasses.replace(options, recompute=True))

    def collect(self) -> None:
        """The garbage the last run left, collected, and the records it changed written (the
        per-file tables, the edited file's facts: IndexMemo.write_records), between runs, when
        no one waits."""
        with self._lock:
            self._collect()

    def _collect(self) -> None:
        self._index_memo.write_records()
        evict_over_bounds(lambda folder: self._index[1].record_keys(folder) if self._index is not None else set())
        if self._owed:
            self._owed = False
            gc.enable()
            gc.collect(0)

    # -- what runner.run_check asks its `keep` for ---------------------------------------------

    def release(self, spec: str, sglang_repo: Path | None, cache: Path) -> Release:
        identity = content_identity(spec, sglang_repo)
        if identity is None:  # nothing tells its content: opened (or its error said) as in any run
            return super().release(spec, sglang_repo, cache)
        key = (spec, str(sglang_repo), str(cache), identity)
        self._asked.add(key)
        release = self._releases.get(key)
        if release is None:
            release = self._releases[key] = super().release(spec, sglang_repo, cache)
        return release

    def models(self, root: Path, options: CheckOptions, old: Release, new: Release,
               store: Callable[[str], RecordCache]) -> tuple[UpstreamModel, UpstreamModel]:
        stacks, stacked = self._live_stacks(root, options)
        kept = {id(release) for release in self._releases.values()}
        if stacks is None or id(old) not in kept or id(new) not in kept:
            return super().models(root, options, old, new, store)
        upstream = store("upstream")
        key = (id(old), id(new), str(upstream.folder), stacked)
        pair = self._models.get(key)
        if pair is None:
            patched_old, patched_new = as_the_image_has_them(stacks, old, new)
            pair = UpstreamModel.pair(patched_old, patched_new, upstream)
        for model in pair:
            model.stats = LoadStats()  # what this run loaded, for `-v`
        self._given = (key, pair)
        return pair

    def _live_stacks(self, root: Path, options: CheckOptions) -> tuple[PatchStacks | None, str]:
        """runner.live_stacks and a digest of them, read again only when a file their readers
        may read (patch/stack.py stack_may_read: by path, size and time) or an unsaved buffer of
        one changed (150 shell scripts' words were a second of each of miles' re-checks); every
        run with `patch-files`, whose globs may name any file. A failure is not kept."""
        named = options.settings.get("patch-files") or ()
        if self._listed is not None and not named:
            key = _read_state(root, [row for name, row in self._listed if stack_may_read(name)],
                              lambda path: stack_may_read(os.path.basename(path)))
            if self._stacks is not None and self._stacks[0] == key:
                return self._stacks[1], self._stacks[2]
        else:
            key = None
        stacks = live_stacks(root, options)
        stacked = hashlib.sha256(repr(stacks).encode("utf-8", "surrogateescape")).hexdigest()
        self._stacks = (key, stacks, stacked) if key is not None and stacks is not None else None
        return stacks, stacked

    def pin(self, root: Path, listed: list[tuple[str, str]] | None) -> tuple[ProjectPin | None, str]:
        """Read again when a file it may read (by path, size and time) or an unsaved buffer
        changed: the pin readers read nothing else. A failure is not kept (each run says it).
        `listed`, this run's listing, is kept for the run's other readers (_live_stacks)."""
        self._listed = listed
        if listed is None:
            return super().pin(root, listed)
        # Only the buffers of files the readers may read: a module typed in is no pin file.
        key = _read_state(root, [row for _, row in listed if pin_may_read(row.partition("\0")[0])],
                          partial(_pin_may_read_path, root.resolve()))
        if self._pin is not None and self._pin[0] == key:
            return self._pin[1], ""
        pin, failure = super().pin(root, listed)
        self._pin = None if failure else (key, pin)
        return pin, failure

    def releases_memo(self, old: UpstreamModel, new: UpstreamModel) -> dict:
        """Kept with the pair of models, and only while they are: a pair made for this run alone
        (not kept: see `kept`) gets its own."""
        if self._given is None or self._given[1][0] is not old or self._given[1][1] is not new:
            return {}
        return self._releases_memos.setdefault(self._given[0], {})

    def index(self, root: Path, options: CheckOptions, store: Callable[[str], RecordCache],
              after_first_round: Callable[[ProjectIndex], None] | None = None) -> ProjectIndex:
        """The last index with the changed files scanned again, when they cannot change which
        files are scanned nor the re-export table (project/index.py updated_index); else built."""
        cache = store("project")
        # The configured objects decide which files are scanned, as the files do (ProjectIndex.configured).
        key = (str(root), tuple(options.exclude or ()), str(cache.folder), options.workers,
               configured_objects(options.settings))
        index = None
        if self._index is not None and self._index[0] == key:
            index = updated_index(self._index[1], root, [root], cache, options.workers, excluder(options),
                                  self.read_python, self._index_memo)
        # Only an updated index scans the files it had (a rebuilt one may scan others, their
        # contents unchanged): the files changed since, or None.
        self._changed = None if index is None else {
            rel for rel, digest in index.digests.items() if self._index[1].digests[rel] != digest}
        self._only_moved = set()
        if index is None:
            index = super().index(root, options, store, after_first_round)
        self._before = self._index[1] if self._index is not None and self._index[0] == key else None
        self._index = (key, index)
        return index

    def moved(self) -> Callable[[str, str], bool] | None:
        if self._before is None or self._index is None:
            return None
        compare = partial(moved_only, self._before, self._index[1])

        def moved(relpath: str, digest_before: str | None) -> bool:
            only_moved = compare(relpath, digest_before)
            if only_moved:
                self._only_moved.add(relpath)
            return only_moved

        return moved

    def placeless_memo(self, old: UpstreamModel, new: UpstreamModel, partial_run: object = None,
                       store: object = None, project: object = None) -> dict:
        """The last run's while its models are these and every file changed since only moved
        (see the module's docstring); else a fresh one, kept for the next run."""
        if self._given is None or self._given[1][0] is not old or self._given[1][1] is not new:
            return {}
        kept = self._placeless_memo
        if kept is None or kept[0] != self._given[0] or self._changed is None or self._changed - self._only_moved:
            kept = self._placeless_memo = (self._given[0], {})
        return kept[1]

    def files_memo(self, salt: str | None, setup_py: str | None) -> dict:
        """The last run's while its inputs but the Python files, and setup.py, are the same."""
        if salt is None:
            return {}
        if self._files_memo is None or self._files_memo[0] != (salt, setup_py):
            self._files_memo = ((salt, setup_py), {})
        return self._files_memo[1]

    def index_memo(self) -> IndexMemo:
        return self._index_memo

    def read_python(self, path: Path, root: Path | None = None) -> tuple[str, str]:
        name = os.fspath(path)
        if unsaved_buffer(name) is not None:
            return read_python(path, root)
        try:
            status = os.stat(name)
        except (OSError, ValueError):
            return read_python(path, root)  # which says why it cannot be read
        stamp = file_state(status)
        self._read.add(name)
        kept = self._files.get(name)
        if kept is not None and kept[0] == stamp:
            return kept[1], kept[2]
        digest, text = read_python(path, root)
        self._files[name] = (stamp, digest, text)
        return digest, text

    def records_written(self) -> None:
        """Nothing: the records of an edit are written, and the cache swept, after the answer (_collect)."""

    def kept(self, result: CheckResult) -> None:
        """Only what this run used stays: a process checks one project at a time."""
        self.runs += 1
        self._before = None
        self._drop_unused_releases_and_files()
        self._models = {}
        if self._given is not None and self._keeps_models(*self._given):
            key, pair = self._given
            self._models[key] = pair
        self._releases_memos = {key: memo for key, memo in self._releases_memos.items() if key in self._models}
        if self._placeless_memo is not None and self._placeless_memo[0] not in self._models:
            self._placeless_memo = None


    def _drop_unused_releases_and_files(self) -> None:
        """The releases this run did not ask for and the files it did not read are let go."""
        for key in self._releases.keys() - self._asked:
            del self._releases[key]
        for name in self._files.keys() - self._read:
            del self._files[name]

    def _keeps_models(self, key: tuple, pair: tuple) -> bool:
        """Whether the models this run was given are kept: both releases are, and neither model
        met a module it could not read, or one the stack left unanalysable (a fresh run reports
        only the modules it reaches)."""
        kept = {id(release) for release in self._releases.values()}
        return key[0] in kept and key[1] in kept and not any(model.problems() or model.read_as_released
                                                             for model in pair)


def _read_state(root: Path, rows: list[str], may_read: Callable[[str], bool]) -> tuple[str, str]:
    """A key of what a reader of the project's files reads: the listing's rows of the files it
    may read (by path, size and time) and the unsaved buffers (by content) of the paths
    `may_read` accepts."""
    buffers = sorted((path, hashlib.sha256(data).hexdigest()) for path, data in unsaved_buffer_items() if may_read(path))
    return str(root), hashlib.sha256(repr((rows, buffers)).encode("utf-8", "surrogateescape")).hexdigest()


def _pin_may_read_path(root: Path, path: str) -> bool:
    """pin_may_read of a buffer's real path; one outside the (resolved) root is read by no pin reader."""
    try:
        return pin_may_read(Path(path).relative_to(root).as_posix())
    except ValueError:
        return False
