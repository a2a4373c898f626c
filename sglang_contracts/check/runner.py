"""One check run, end to end: sources -> upstream models -> project facts -> contracts -> diagnostics."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
import os
import re
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable


# What a replayed run needs; the checks and what feeds them are imported by _computed, so
# that a replay (and the editor's first answer) does not pay for importing every rule.
from sglang_contracts.diagnostics import baseline as baselines
from sglang_contracts.check import replay
from sglang_contracts.infra.memo import KeptMemo
from sglang_contracts.infra.display import printable
from sglang_contracts.infra.cache import (CACHEDIR_TAG, RECORD_FOLDERS, RecordCache, cache_for_project, cache_root,
                                          evict_over_bounds, tag_cache_folders, unwritable_reason,
                                          warn_unwritable_once)
from sglang_contracts.infra.collector import batch_collection, kept_to_the_end
from sglang_contracts.infra.executors import stopped_at_end
from sglang_contracts.config import configured_objects
from sglang_contracts.diagnostics import Diagnostic, finding_at, listed_per_file
from sglang_contracts.diagnostics.catalog import report_of
from sglang_contracts.infra.errors import ContractsError, UsageError, shown
from sglang_contracts.infra.boundary import Problem, collecting_problems, debugging
from sglang_contracts.infra.files import in_version_control_folder, unsaved_buffer
from sglang_contracts.infra.roots import absolute, holds_a_project, require_existing, root_of_all, working_folder
from sglang_contracts.project.index import (LISTING, UNREAD_FOLDER, IndexMemo, ProjectIndex, as_named, build_index,
                                             confined_to, links_out_of, one_walk_per_run, read_python,
                                             skipped_on_the_way, unread_python_kind)
from sglang_contracts.project.pin_history import names_the_same_release, pin_before_the_bump
from sglang_contracts.project.pins import ProjectPin, find_sglang_pin
from sglang_contracts.sources import open_release, pinned_release_spec
from sglang_contracts.diagnostics.suppressions import (
    INTERNAL_ERROR, UNUSED_NOQA, FileIgnores, NoqaIndex, PathGlobs, ProjectText, code_active, override_severity,
)
from sglang_contracts.upstream.model import UpstreamModel, is_upstream

if TYPE_CHECKING:
    from sglang_contracts.patch.stack import PatchStacks
    from sglang_contracts.sources.base import Release
    from sglang_contracts.closure.delta import ClosureDelta
    from sglang_contracts.upstream.delta import UpstreamDelta

IDENTIFIER_AT = re.compile(r"[A-Za-z_][\w.]*")


@dataclass
class CheckOptions:
    old: str | None = None
    new: str | None = None
    sglang_repo: Path | None = None
    select: list[str] = field(default_factory=lambda: ["SGC"])
    ignore: list[str] = field(default_factory=list)
    report_unresolved: bool = False
    cache_dir: Path | None = None
    use_cache: bool = True
    # Replay the findings of an earlier run with exactly these inputs (replay.py), or reuse those
    # of the files an edit cannot change (incremental.py). A replayed result holds no project
    # facts, so only callers that need nothing but the findings (the CLI, the LSP) opt in.
    replay: bool = False
    # With `replay`: every finding computed again all the same (nothing replayed, no file's
    # reused), and recorded for the next run as a replayable run records them: a resident
    # process's warm-up (ResidentEngine.computed), after which an edit reuses what it recorded.
    recompute: bool = False
    workers: int | None = None
    exclude: list[str] = field(default_factory=list)  # globs of project paths not to read
    # The only files and folders read, relative to the root, when the root is a named file's
    # folder that holds no project (no marker at or above it): a scratch file beside 40,000
    # others had every one of them parsed or read (campaign 19, R03 and R12; campaign 20, R03)
    only: tuple[str, ...] = ()
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)  # glob -> code prefixes
    severity: dict[str, str] = field(default_factory=dict)  # code prefix -> error/warning/info
    report_unused_noqa: bool = False
    baseline: Path | None = None  # accepted findings (baseline.py); only others are reported
    # Configuration read by individual rules (server-args-seam, fakes, patch-files), as given.
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass
class CheckResult:
    diagnostics: list[Diagnostic]
    project: ProjectIndex
    old: UpstreamModel
    new: UpstreamModel
    pin: ProjectPin | None = None  # the project's own pin (sglang==X, or its SGLang image) and where
    notes: list[str] = field(default_factory=list)  # what to know about the pin (pins.ProjectPin.notes)
    baselined: int = 0  # findings the baseline accepted (not in `diagnostics`)
    stale_baseline: list[baselines.Entry] = field(default_factory=list)  # entries nothing matched
    upstream_delta: UpstreamDelta | None = None  # with --sglang-repo: the commits behind the contracts
    closure_delta: ClosureDelta | None = None  # what moves between the releases' dependency closures (closure/)
    # Set when no input changed since a run whose findings are replayed (replay.py): how many
    # files held contracts then (the project index is not rebuilt).
    replayed_files_with_contracts: int | None = None


class Fresh:
    """What a run opens, reads and builds that does not change between edits: here made anew
    for each run; a resident engine (resident.py) keeps it across the runs of one process."""

    # The checks on two cores, half of them in a forked copy of the process (contracts/base.py
    # run_checks_in_two): for a process that does one run; a resident one has other threads.
    checks_in_two = True

    def release(self, spec: str, sglang_repo: Path | None, cache: Path) -> Release:
        return open_release(spec, sglang_repo=sglang_repo, cache=cache)

    def models(self, root: Path, options: CheckOptions, old: Release, new: Release,
               store: Callable[[str], RecordCache]) -> tuple[UpstreamModel, UpstreamModel]:
        """Both releases' models, as the image has them (the project's live patch stack applied)."""
        old, new = as_the_image_has_them(live_stacks(root, options), old, new)
        return UpstreamModel.pair(old, new, store("upstream"))

    def index(self, root: Path, options: CheckOptions, store: Callable[[str], RecordCache],
              after_first_round: Callable[[ProjectIndex], None] | None = None) -> ProjectIndex:
        return build_index(root, [root], store("project"), workers=options.workers, excluded=excluder(options),
                           read=self.read_python, memo=self.index_memo(), after_first_round=after_first_round,
                           configured=configured_objects(options.settings), one_shot=self.checks_in_two)

    def index_memo(self) -> IndexMemo | None:
        """What earlier runs derived from the project's files (project/index.py IndexMemo)."""
        return None

    def pin(self, root: Path, listed: list[tuple[str, str]] | None) -> tuple[ProjectPin | None, str]:
        """The project's pin and why it could not be read (_read_pin); `listed`: the files
        below the root by path, size and time (replay.listing), when the run took them."""
        return _read_pin(root)

    def read_python(self, path: Path, root: Path | None = None) -> tuple[str, str]:
        """(digest, text) of a project Python file (project/index.py)."""
        return read_python(path, root)

    def moved(self) -> Callable[[str, str], bool] | None:
        """Which edited files changed only where their code sits (incremental.moved_only), for
        a process that kept the index before the edit: None here."""
        return None

    def releases_memo(self, old: UpstreamModel, new: UpstreamModel) -> dict[str, Any]:
        """Where the checks keep what they derive from the two releases alone (CheckContext.of_releases)."""
        return {}

    def placeless_memo(self, old: UpstreamModel, new: UpstreamModel, partial_run: Any = None,
                       store: Callable[[str], RecordCache] | None = None, project: ProjectIndex | None = None
                       ) -> dict[str, Any]:
        """Where the checks keep what they derive from the releases and the whole project's
        facts without positions (CheckContext.of_placeless_project), asked once the run's plan
        (`partial_run`) is made: here, in the records the last run left (incremental.kept_placeless)."""
        from sglang_contracts.check import incremental

        if partial_run is None or store is None or project is None:
            return {}
        return incremental.kept_placeless(store("incremental"), partial_run, project)

    def files_memo(self, salt: str | None, setup_py: str | None) -> dict[str, Any]:
        """Where the checks keep what they read of the project's files that are not Python and
        of setup.py (CheckContext.of_stack_files), by the run's inputs but its Python files
        (`salt`: incremental.py's) and setup.py's digest."""
        return {}

    def kept(self, result: CheckResult) -> None:
        """Called with each computed result: what may be kept for the next run."""

    def records_written(self) -> None:
        """Called at the end of each run: the run's records are written, and the cache's folders
        that outgrow their bound are swept (infra/cache.py evict_over_bounds). A resident engine
        writes some after the answer, and sweeps then."""
        evict_over_bounds()


FRESH = Fresh()


def run_check(paths: list[Path], options: CheckOptions, keep: Fresh = FRESH) -> CheckResult:
    """`keep`: where what does not change between edits comes from (resident.py keeps it)."""
    with batch_collection(), one_walk_per_run():  # a run's objects (facts, records) mostly live until it ends
        result = _run_check(paths, options, keep)
    keep.records_written()
    return result


def _run_check(paths: list[Path], options: CheckOptions, keep: Fresh) -> CheckResult:
    paths = paths or [Path(working_folder())]
    _refuse_empty_releases(options)
    require_existing(paths)
    root = root_of_all(paths)
    # as named, and what a link named leads to, which the run reads (campaign 20, R08)
    named = sorted({Path(os.path.relpath(place, root)).as_posix() for path in paths
                    for place in {absolute(path), os.path.realpath(absolute(path))}})
    if not holds_a_project(root) and "." not in named:
        options = dataclasses.replace(options, only=tuple(named))
    # what is named is read alone, by every reader: the Python index and the stack's (campaign 19, R12)
    with confined_to([root / name for name in options.only] if options.only else None):
        return _checked_in(root, paths, options, keep)


def _checked_in(root: Path, paths: list[Path], options: CheckOptions, keep: Fresh) -> CheckResult:
    _refuse_what_leaves_the_project(root, options)
    accepted_entries = baselines.read_baseline(options.baseline) if options.baseline is not None else None
    options, download_cache = _with_usable_cache(options, root)
    listed = _listed(root, options)
    old_spec, pin = old_release_spec(root, options.old, options.new, *keep.pin(root, listed), options.sglang_repo)

    def store(kind: str) -> RecordCache:
        return RecordCache(download_cache / kind if options.use_cache else None)

    runs = store("runs")
    key = replay.run_key(root, paths, options, old_spec, listed) if listed is not None else None
    saved = runs.get_decoded(key, replay.RUN_RECORD, replay.replay_of) if key and not options.recompute else None
    if saved is not None:
        result = _replayed(saved, root, old_spec, options, download_cache, store, pin)
    else:
        result = _computed_on_a_pool(paths, options, root, old_spec, pin, download_cache, store, keep, listed)
        _keep_computed(result, keep, options, download_cache, runs, key)
    result.notes = _run_notes(result, pin, options)
    if accepted_entries is not None:
        _apply_baseline(result, accepted_entries)
    return result


def _apply_baseline(result: CheckResult, accepted_entries: list[baselines.Entry]) -> None:
    """Leaves out of the result the findings the baseline accepts, and says which entries nothing matched."""
    result.diagnostics, accepted, result.stale_baseline = baselines.match(result.diagnostics, accepted_entries)
    result.baselined = len(accepted)


def _refuse_empty_releases(options: CheckOptions) -> None:
    for flag, spec in (("--old", options.old), ("--new", options.new)):
        if spec is not None and not spec.strip():  # as a path, '' would be the current directory
            raise UsageError(f"{flag} is empty: give an SGLang version, a git ref with --sglang-repo, or a directory")


def _with_usable_cache(options: CheckOptions, root: Path) -> tuple[CheckOptions, Path]:
    """The options and the cache folder the run uses: a temporary folder, nothing kept, when the
    configured one may be the pull request's (cache_for_project)."""
    configured = options.cache_dir or cache_root()
    download_cache = cache_for_project(configured, root)
    if download_cache != configured:
        options = dataclasses.replace(options, use_cache=False)
    if options.use_cache:
        tag_cache_folders(download_cache)  # before the walks, which then pass over them (`--cache-dir .cache`)
    return options, download_cache


def _listed(root: Path, options: CheckOptions) -> list[tuple[str, str]] | None:
    """One walk of the project for the run's keys (replay, incremental) and the pin a resident
    engine keeps while the files are unchanged; None for a run that keeps or replays nothing."""
    if not (options.use_cache and options.replay):
        return None
    return replay.listing(root, list(options.settings.get("patch-files") or ()))


def _computed_on_a_pool(paths: list[Path], options: CheckOptions, root: Path, old_spec: str,
                        pin: ProjectPin | None, download_cache: Path, store: Callable[[str], RecordCache], keep: Fresh,
                        listed: list[tuple[str, str]] | None) -> CheckResult:
    """_computed, with one pool of workers for the scan, the extraction and the per-file analyses."""
    from sglang_contracts.infra.parallel import run_pool, start_early  # not for a replay, which starts no worker

    nothing_cached = _nothing_cached(store("project"))
    with run_pool():
        if nothing_cached:  # the whole project is to be scanned: on the workers
            start_early(options.workers)
        return _computed(paths, options, root, old_spec, pin, download_cache, store, keep, listed, nothing_cached)


def _keep_computed(result: CheckResult, keep: Fresh, options: CheckOptions, download_cache: Path,
                   runs: RecordCache, key: str | None) -> None:
    """A computed result kept for the next runs: by `keep`, and in `runs` under `key` (replay.py)."""
    keep.kept(result)
    if key:
        runs.put(key, replay.record(result.diagnostics, result.project.scanned, len(result.project.files),
                                    [result.old.release, result.new.release], result.upstream_delta,
                                    result.closure_delta))
    if options.use_cache:
        _tell_if_unkept(download_cache)


def _run_notes(result: CheckResult, pin: ProjectPin | None, options: CheckOptions) -> list[str]:
    """What to know about the pin, the dependency closures and this tool's missing dependencies."""
    notes = pin.notes(defaulted=options.old is None, from_clone=options.sglang_repo is not None) if pin else []
    notes += result.closure_delta.notes if result.closure_delta is not None else []
    notes += _missing_dependencies()
    return notes


def old_release_spec(root: Path, old: str | None, new: str | None, pin: ProjectPin | None,
                     pin_failure: str = "", sglang_repo: Path | None = None) -> tuple[str, ProjectPin | None]:
    """The release the bump leaves, and the project's pin: `old` as given, else the pin (the
    pin before the bump when the pin already names `new`: a bump branch, or after `fix`), as a
    published release (pinned_release_spec). `pin_failure`: why the pin could not be read (_read_pin)."""
    if new is None:
        raise UsageError("--new is required (an SGLang version, a git ref with --sglang-repo, or a directory)")
    if old is not None:
        return old, pin
    if pin_failure:
        raise UsageError(f"--old not given and the project's SGLang pin could not be read ({pin_failure}); "
                         "give --old")
    if pin is None:
        raise UsageError(f"--old not given and no SGLang pin found in {root} (an exact sglang==X requirement, "
                         "or an SGLang image tag in a Dockerfile or build script)")
    if names_the_same_release(pin.version, new):
        pin, why_not = pin_before_the_bump(root, pin)
        if pin is None:
            raise UsageError(f"--old not given and the project's pin already names --new {new} ({why_not}); "
                             "give --old, the release the bump leaves")
    return pinned_release_spec(pin.version, sglang_repo), pin


def project_old_release(root: Path, old: str | None, new: str | None,
                        sglang_repo: Path | None = None) -> tuple[str, ProjectPin | None]:
    """old_release_spec with the project's pin read from its files, as a check reads it."""
    return old_release_spec(root, old, new, *_read_pin(root), sglang_repo)


def _missing_dependencies() -> list[str]:
    """A note for each dependency a check would go without, silently otherwise: astroid is looked
    for, not imported (0.4 s a run, a replay's whole time)."""
    if importlib.util.find_spec("astroid") is None:
        return ["astroid is not installed: receivers no annotation types are not inferred, and the breaks "
                "behind them are not reported (install this tool's dependencies: pip install sglang-contracts)"]
    return []


def _refuse_what_leaves_the_project(root: Path, options: CheckOptions) -> None:
    """A baseline that is a link out of the project is not read, and a repository of SGLang
    inside the project is read only when git keeps it (in a `.git` folder, as a clone or a
    submodule has it): a bare repository committed as files is a pull request's, and its
    configuration would be git's."""
    if options.baseline is not None and links_out_of(options.baseline, root):
        raise UsageError(f"{shown(options.baseline)}: a link out of the project, not read as the baseline")
    if options.baseline is not None and in_version_control_folder(os.path.realpath(options.baseline),
                                                                  os.path.realpath(root)):
        # `.git/config` holds the token actions/checkout keeps; its parse error quoted its text (campaign 18, R03)
        raise UsageError(f"{shown(options.baseline)}: in the project's version control folder, not read as the "
                         "baseline")
    repo = options.sglang_repo
    real = Path(os.path.realpath(repo)) if repo is not None else None
    if real is not None and _under_any(real, [root]) and not (
            os.path.exists(os.path.join(repo, ".git")) or _under_any(real, [root / ".git"])):
        raise UsageError(f"--sglang-repo {shown(repo)}: a repository that is files of the project (not a clone's "
                         "or a submodule's .git) is not read; give a clone of SGLang")


def _tell_if_unkept(cache: Path) -> None:
    """One warning line when a folder of the cache cannot take this run's records (a file in
    its place, a read-only file system): every run then computes everything again, and the
    user is told why it stays slow. Records that cannot be written never fail a run."""
    for kind in RECORD_FOLDERS:
        reason = unwritable_reason(cache / kind)
        if reason is not None:
            warn_unwritable_once(cache, f"cannot write the cache folder {shown(cache / kind)} ({reason}); what this "
                                        "run computed is not kept for the next (give a writable --cache-dir)")
            return


def _read_pin(root: Path) -> tuple[ProjectPin | None, str]:
    """The project's pin, and why it could not be read: a bug in reading it costs the default
    of --old (one line), never the run."""
    try:
        return find_sglang_pin(root), ""
    except ContractsError:
        raise
    except Exception as error:  # noqa: BLE001 - the boundary of the pin reader
        if debugging():
            raise
        print(f"sglang-contracts: warning: the SGLang pin could not be read: {type(error).__name__}: "
              f"{printable(str(error))}", file=sys.stderr)
        return None, f"{type(error).__name__}: {error}"


def _replayed(saved: replay.Replay, root: Path, old_spec: str, options: CheckOptions, download_cache: Path,
              store: Callable[[str], RecordCache], pin: ProjectPin | None) -> CheckResult:
    """The findings of the last run with exactly these inputs (replay.py), with the releases
    as that run named them (opened only if something reads them)."""
    releases = [replay.replayed_release(fields, partial(open_release, spec, sglang_repo=options.sglang_repo,
                                                        cache=download_cache))
                for fields, spec in zip(saved.releases, (old_spec, options.new))]
    old, new = UpstreamModel.pair(*releases, store("upstream"))
    project = ProjectIndex(root=root, scanned=saved.scanned)
    return CheckResult(saved.diagnostics, project, old, new, pin=pin, upstream_delta=saved.upstream_delta,
                       closure_delta=saved.closure_delta, replayed_files_with_contracts=saved.with_contracts)


def live_stacks(root: Path, options: CheckOptions) -> PatchStacks | None:
    """The project's live patch stacks (patch/stack.py); None when reading them met a bug,
    which costs the overlay, not the run: the patch rules then judge the stock trees themselves,
    inside the error boundary."""
    from sglang_contracts.patch.stack import patch_stacks

    try:
        return patch_stacks(root, options.settings.get("patch-files") or ())
    except ContractsError:
        raise
    except Exception:
        if debugging():
            raise
        return None


def as_the_image_has_them(stacks: PatchStacks | None, *releases: Release) -> list[Release]:
    """The releases with the project's live patch stacks applied (patch/), so that the names
    the stack adds upstream resolve; a bug here costs the overlay, as in live_stacks."""
    from sglang_contracts.patch.release import with_stack_applied

    if stacks is None:
        return list(releases)
    try:
        return [with_stack_applied(release, stacks) for release in releases]
    except ContractsError:
        raise
    except Exception:
        if debugging():
            raise
        return list(releases)


def _nothing_cached(cache: RecordCache) -> bool:
    folder = cache.folder
    try:
        return folder is None or next((entry for entry in folder.iterdir() if entry.name != CACHEDIR_TAG), None) is None
    except OSError:  # no folder yet (a first run), or one that cannot be listed
        return True


def _computed(paths: list[Path], options: CheckOptions, root: Path, old_spec: str, pin: ProjectPin | None,
              download_cache: Path, store: Callable[[str], RecordCache], keep: Fresh,
              listed: list[tuple[str, str]] | None, nothing_cached: bool) -> CheckResult:
    """`nothing_cached`: the project's facts cache is empty (a first run)."""
    import sglang_contracts.contracts  # noqa: F401  (registers every check)
    from sglang_contracts.contracts.base import CheckContext, worth_a_copy
    from sglang_contracts.project.releasefacts import for_release, judged_release, with_star_names
    from sglang_contracts.project.serving import NEW, OLD, serving_model
    from sglang_contracts.check.served import judged_as_served
    from sglang_contracts.check.prefetch import prefetch

    project, releases, opened, early, walk = _opened_inputs(options, root, old_spec, download_cache, store, keep,
                                                            nothing_cached)
    _yield_kept_sources(releases, project)  # again after a first round: the same budgets
    old, new = opened()
    prefetch(project, [old, new], workers=options.workers, early=early)
    # A named path that is a link out of the project is wanted where it is named: its SGC000.
    wanted = [as_named(path, root) for path in paths]

    # The checks judge what runs on the target release: not branches for other SGLang versions,
    # nor import fallbacks it never takes (project/gates.py).
    released = with_star_names(for_release(project, new), old)
    # Which releases each module serves, from the imports as written (the old release's branches too).
    serving = serving_model(project, {OLD: judged_release(project, old), NEW: judged_release(project, new)},
                            options.settings.get("serves", {}))
    salt = _files_salt(root, options, old_spec, listed)
    partial_run = _partial_run(store, salt, released, options, keep)
    if partial_run is not None and not partial_run.full:  # a full run's garbage is left to the collector
        kept_to_the_end()
    whole = _checked_over_the_whole_project(partial_run)
    context = CheckContext(project=released, old=old, new=new,
                           report_unresolved=options.report_unresolved, settings=options.settings,
                           releases_memo=keep.releases_memo(old, new),
                           placeless_memo=keep.placeless_memo(old, new, partial_run, store, project),  # after the plan
                           files_memo=keep.files_memo(salt, _setup_py_state(root, released)), serving=serving)
    active = partial(code_active, select=options.select, ignore=options.ignore,
                     per_file_ignores=FileIgnores(options.per_file_ignores))
    codes = _active_codes(active)
    excluded = PathGlobs(options.exclude).matches

    def recorded(relpath: str) -> bool:
        return not excluded(relpath)

    named = _NamedPaths(wanted)

    def reported(relpath: str) -> bool:
        # A folder on a named path's way is what made it unread (a link out of the project): its SGC000 is said.
        path = root / relpath
        return (named.holds(path) or path != root and named.on_the_way(path)) and recorded(relpath)

    text = ProjectText(root)
    noqa = NoqaIndex(project.files, text)
    problems: list[Problem] = []
    with collecting_problems() as noted:  # what the readers of non-Python files could not read
        # Before the checks, in this process: the forked copy that runs the closure's rules reads it.
        closures = _closures(context, store, walk)
        found = _found(context, codes, whole, partial_run, keep.checks_in_two and worth_a_copy(project), problems)
    context.memo.clear()  # the checks' shared analyses: what follows needs none of them
    # Which files the bump touches, by this run's findings before any is suppressed; the findings
    # shown only where the bump touches (SGC801/SGC803) of the others are left out once the last
    # run's findings are merged in.
    touched = bump_touched(found)
    bump = old.release.short != new.release.short
    if bump and partial_run is None:  # no record to keep them for: left out before a `# noqa` can count as used (SGC010)
        found = set(bump_noise_filtered(found, touched))
    problems = [*_index_problems(project), *_upstream_problems(project, [old, new]), *noted, *problems]
    found.update(problem_diagnostics(problems, root))
    diagnostics = listed_per_file(_unsuppressed(found, options, active, recorded, noqa))  # before each is enriched
    diagnostics = _enriched(diagnostics, options.severity, text, old, new)
    diagnostics, touched = _merged_and_recorded(store, partial_run, diagnostics, whole, touched, project)
    if bump and partial_run is not None:
        diagnostics = bump_noise_filtered(diagnostics, touched)
    if serving.served:  # after the record is kept: an edit of the choice alone changes what is judged
        diagnostics = judged_as_served(diagnostics, serving, old.release.short, new.release.short)
    diagnostics = [d for d in diagnostics if reported(d.path)]
    unread = [d for d in _named_but_unread(wanted, root) if active(d.code, d.path) and recorded(d.path)]
    diagnostics += _enriched(unread, options.severity, text, old, new)
    _require_loaded(project, old, new)
    delta = _delta(options.sglang_repo, project, old, new)
    return CheckResult(sorted(diagnostics, key=Diagnostic.sort_key), project, old, new, pin=pin, upstream_delta=delta,
                       closure_delta=closures)


def _opened_inputs(options: CheckOptions, root: Path, old_spec: str, download_cache: Path,
                   store: Callable[[str], RecordCache], keep: Fresh, nothing_cached: bool
                   ) -> tuple[ProjectIndex, list[Release], Callable[[], list[UpstreamModel]], Any,
                              "_EarlyClosureWalk | None"]:
    """The project's index, the two releases, their models (opened when first asked), the
    early extraction, if any, and a first run's early walk of the closures: the releases
    download while the project is parsed."""
    from sglang_contracts.infra.parallel import default_workers, running_pool
    from sglang_contracts.check.prefetch import EarlyExtraction

    first_run = options.use_cache and nothing_cached
    # Downloading the releases (on a first run) overlaps with parsing the project (a process pool).
    with stopped_at_end(ThreadPoolExecutor(max_workers=3)) as threads:
        opening = [threads.submit(keep.release, spec, options.sglang_repo, download_cache)
                   for spec in (old_spec, options.new)]
        releases = _Once(lambda: [future.result() for future in opening])
        opened = _Once(lambda: _opened_models(keep, root, options, store, releases()))
        walk = _EarlyClosureWalk(root, options, opened, store) if first_run else None
        # On a first run the pool is running already, and extracting may begin before the scan ends.
        pool = running_pool()
        workers = options.workers if options.workers is not None else default_workers()
        early = EarlyExtraction(opened, pool, workers) if pool is not None else None

        def first_round(project: ProjectIndex) -> None:
            # Every file is read before the first round: the releases' budgets can yield now,
            # before the early extraction reads the releases' texts.
            _yield_kept_sources(releases(), project)
            early.begin(project)

        # The whole project is indexed even when a few files are named (pre-commit passes file
        # names): a named file may depend on upstream names through the project's own modules.
        indexing = threads.submit(keep.index, root, options, store, first_round if early else None)
        releases()  # a release that cannot be opened is said before the project's index is waited for
        project = indexing.result()
    return project, releases(), opened, early, walk


def _files_salt(root: Path, options: CheckOptions, old_spec: str, listed: list[tuple[str, str]] | None) -> str | None:
    """The run's inputs but its Python files, when the run listed the project (incremental.py)."""
    # The record holds every file's findings, whatever paths were named (a pre-commit run names
    # the staged files): the next run, whichever files it names, reuses it.
    from sglang_contracts.check import incremental

    if listed is None:
        return None
    return replay.inputs_key(root, [root], options, old_spec, lambda name: not incremental.told_by_digest(name),
                             listed)


def _partial_run(store: Callable[[str], RecordCache], salt: str | None, released: ProjectIndex,
                 options: CheckOptions, keep: Fresh) -> Any:
    """The incremental plan (incremental.plan), or None when every file is checked."""
    from sglang_contracts.check import incremental
    from sglang_contracts.contracts.base import IMPORT_OUTLINES

    # An unused `# noqa` in one file may follow from a finding anywhere: every file is checked.
    if not salt or options.report_unused_noqa:
        return None
    return incremental.plan(store("incremental"), salt, released, moved=keep.moved(),
                            import_outlines=IMPORT_OUTLINES, every_file=options.recompute)


def _checked_over_the_whole_project(partial_run: Any) -> set[str]:
    """The rules checked over every file in full when a run recomputes a few (incremental.py)."""
    from sglang_contracts.contracts.base import IMPORTS_ANYWHERE, MEMBERS_ANYWHERE, WHOLE_PROJECT

    whole = set(WHOLE_PROJECT)
    if partial_run is None:
        return whole
    if partial_run.imports_edited:
        whole |= IMPORTS_ANYWHERE
    if partial_run.members_edited:
        whole |= MEMBERS_ANYWHERE
    return whole


def _found(context: Any, codes: list[str], whole: set[str], partial_run: Any, checks_in_two: bool,
           problems: list[Problem]) -> set[Diagnostic]:
    """What the checks find: on every file, or (a partial run) the local rules on the files recomputed."""
    from sglang_contracts.contracts.base import run_checks, run_checks_in_two

    if partial_run is not None and not partial_run.full:
        return _found_in_part(context, codes, whole, partial_run, checks_in_two, problems)
    if checks_in_two:
        return run_checks_in_two(context, codes, problems)
    return set(run_checks(context, codes, problems))


def _found_in_part(context: Any, codes: list[str], whole: set[str], partial_run: Any, checks_in_two: bool,
                   problems: list[Problem]) -> set[Diagnostic]:
    """The rules that read only the recomputed files' own facts (and every file's outline) on
    those; the others over the whole project (incremental.py)."""
    from sglang_contracts.check import incremental
    from sglang_contracts.contracts.base import run_checks, run_parts_in_two
    from sglang_contracts.analysis.resolve import project_view

    # A class's members changed: the project bases of every class recomputed are checked
    # again, since a base's method hands the subclass's object to borrowed code (SGC314
    # at the base's call) and the subclass may be a user of the edited class (a mixin, a
    # stand-in's class); their other subclasses are read in full for it, not checked.
    view = project_view(context)
    bases = view.ancestor_files(partial_run.recomputed)
    in_full = partial_run.recomputed | bases
    if partial_run.members_edited:
        partial_run.recompute(bases)
        in_full |= view.descendant_files(bases)
    # The local rules see other files' outlines only: none of the whole project's analyses.
    local = dataclasses.replace(context, project=incremental.checked_project(context.project, in_full), memo={},
                                placeless_memo=_read_only(context.placeless_memo),
                                checked=frozenset(partial_run.recomputed))
    local_codes = [code for code in codes if code not in whole]
    whole_codes = [code for code in codes if code in whole]
    if checks_in_two:  # the whole project's rules in a forked copy meanwhile
        found = run_parts_in_two((local, local_codes), (context, whole_codes), problems)
    else:
        found = set(run_checks(local, local_codes, problems))
        found.update(run_checks(context, whole_codes, problems))
    local.memo.clear()
    return found


def _read_only(placeless_memo: dict) -> dict:
    """The local rules' placeless memo: what the last run kept of the whole project (a full
    run's values, which a process of its own reads from the records: KeptMemo), never what they
    compute of the outlines they see."""
    if not isinstance(placeless_memo, KeptMemo):
        return {}
    return KeptMemo(placeless_memo.read, lambda key, encoded, texts_read: None)


def _merged_and_recorded(store: Callable[[str], RecordCache], partial_run: Any, diagnostics: list[Diagnostic],
                         whole: set[str], touched: dict[str, set[str]], project: ProjectIndex
                         ) -> tuple[list[Diagnostic], dict[str, set[str]]]:
    """With an incremental plan: the last run's findings of the files not checked again merged
    in, and the result recorded for the next run (incremental.py)."""
    from sglang_contracts.check import incremental

    if not partial_run:
        return diagnostics, touched
    diagnostics, touched = incremental.merged(partial_run, diagnostics, whole, touched)
    project.write_kept_rows()  # before the record that names the tables
    incremental.save(store("incremental"), partial_run, diagnostics, touched, project.asked)
    return diagnostics, touched


def _active_codes(active: Callable[[str, str], bool]) -> list[str]:
    """The rules the run checks: those of the catalog the configuration selects."""
    from sglang_contracts.diagnostics.catalog import load_catalog
    from sglang_contracts.contracts.base import CHECKS

    catalog = load_catalog()
    return [code for code in CHECKS if code in catalog and active(code, "")]


def _index_problems(project: ProjectIndex) -> list[Problem]:
    """What the project's index could not read or analyse: of the project, then of each file."""
    return [*project.problems, *(f.problem for f in project.files.values() if f.problem)]


def _enriched(diagnostics: list[Diagnostic], severity: dict[str, str], text: ProjectText, old: UpstreamModel,
              new: UpstreamModel) -> list[Diagnostic]:
    """Each finding at its configured severity, with what every report can use (enrich)."""
    return [enrich(override_severity(d, severity), text, old, new) for d in diagnostics]


def _unsuppressed(found: set[Diagnostic], options: CheckOptions, active: Callable[[str, str], bool],
                  recorded: Callable[[str], bool], noqa: NoqaIndex) -> list[Diagnostic]:
    """The findings the configuration keeps and no `# noqa` suppresses, in report order, and
    the unused `# noqa` comments when asked for."""
    diagnostics = [
        d for d in sorted(found, key=Diagnostic.sort_key)
        if active(d.code, d.path) and recorded(d.path) and not noqa.suppresses(d)
    ]
    if options.report_unused_noqa:
        diagnostics += [d for d in noqa.unused(active, recorded)
                        if active(UNUSED_NOQA, d.path) and not noqa.suppresses(d)]
    return diagnostics


def _closures(context: Any, store: Callable[[str], RecordCache], walk: "_EarlyClosureWalk | None" = None
              ) -> ClosureDelta | None:
    """The releases' dependency closures (closure/, contracts/dependencies.py), and what moves
    between them; a bug in computing them costs the closure's rules and section, not the run.
    `walk`: a first run's early walk, whose reads of the package index this one takes from the
    cache."""
    from sglang_contracts.contracts.dependencies import compute_closures

    if walk is not None:
        walk.wait()
    if context.old.release.short == context.new.release.short:  # no bump: nothing moves
        return None
    try:
        found = compute_closures(context, store("closure"))
    except ContractsError:
        raise
    except Exception as error:  # noqa: BLE001 - the boundary of the closure
        if debugging():
            raise
        print(f"sglang-contracts: warning: the dependency closure could not be computed: {type(error).__name__}: "
              f"{printable(str(error))}", file=sys.stderr)
        return None
    return found.delta if found is not None else None


class _EarlyClosureWalk:
    """A first run's walk of the releases' dependency closures, on a thread of its own from the
    moment both releases are open: the walk waits on the package index (22 s of sglang-omni's
    47 s first run, loaded), which the project's scan and the releases' extraction need not
    wait for. It reads the project's files that are not Python, as the run's own computation
    does (contracts/dependencies.py), and fills the closure cache; its result, its notes and
    its failures are dropped: the run's own computation (_closures), once it has waited for it,
    reads back what it fetched, and meets and says whatever failed."""

    def __init__(self, root: Path, options: CheckOptions, opened: Callable[[], list[UpstreamModel]],
                 store: Callable[[str], RecordCache]) -> None:
        self._thread = threading.Thread(target=self._walk, args=(root, options, opened, store),
                                        name="closure walk", daemon=True)
        try:
            self._thread.start()
        except RuntimeError:  # no thread to be had (`ulimit -v`): the run walks the closures itself
            self._thread = None

    @staticmethod
    def _walk(root: Path, options: CheckOptions, opened: Callable[[], list[UpstreamModel]],
              store: Callable[[str], RecordCache]) -> None:
        from sglang_contracts.contracts.base import CheckContext
        from sglang_contracts.contracts.dependencies import compute_closures

        try:
            old, new = opened()
            if old.release.short != new.release.short:
                # The project as the closure's readers see it: its root; no Python file of it is read.
                project = ProjectIndex(root=root, cache=RecordCache(None))
                compute_closures(CheckContext(project=project, old=old, new=new, settings=options.settings),
                                 store("closure"))
        except Exception:  # noqa: BLE001 - met again, and said, by the run's own computation
            pass

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()


def _setup_py_state(root: Path, project: ProjectIndex) -> str | None:
    """What the stack readers read of setup.py: its digest, or an unsaved buffer's where there
    is no file (an editor's new setup.py)."""
    buffer = unsaved_buffer(root / "setup.py")
    if buffer is not None:
        return hashlib.sha256(buffer).hexdigest()
    return project.digests.get("setup.py")


class _Once:
    """`compute()` the first time it is called, from whichever thread; the same value after."""

    def __init__(self, compute: Callable[[], Any]) -> None:
        self._compute = compute
        self._lock = threading.Lock()
        self._done = False
        self._value: Any = None

    def __call__(self) -> Any:
        with self._lock:
            if not self._done:
                self._value, self._done = self._compute(), True
            return self._value


def _opened_models(keep: Fresh, root: Path, options: CheckOptions, store: Callable[[str], RecordCache],
                   releases: list[Release]) -> list[UpstreamModel]:
    return list(keep.models(root, options, releases[0], releases[1], store))


def _yield_kept_sources(releases: list[Release], project: ProjectIndex) -> None:
    """Each release keeps no more of its texts than the project's own leave room for, and the
    texts the two have alike once."""
    project_characters = sum(map(len, project.texts.values()))
    for release in releases:
        release.tree.yield_kept_sources(project_characters)
    releases[0].tree.share_kept_sources(releases[-1].tree)


def bump_touched(found: Iterable[Diagnostic]) -> dict[str, set[str]]:
    """The files that have findings of the bump, path -> the codes found there (what
    incremental.merged needs to keep a file's part that this run did not check again). A rule's
    entry declares its findings not of the bump (`report.bump`, catalog.BUMP_ROLES): what the
    pin alone reports too, problems reading files, unused noqa comments; a file with only these
    is not one the bump touches."""
    touched: dict[str, set[str]] = {}
    for d in found:
        if report_of(d.code).bump == "of-the-bump":
            touched.setdefault(d.path, set()).add(d.code)
    return touched


def bump_noise_filtered(diagnostics: Iterable[Diagnostic], touched: dict[str, set[str]]) -> list[Diagnostic]:
    """In a bump run (old != new), the findings that hold on the pin alone and repeat on every
    bump (a release switch, a probe of what both releases define: `report.bump =
    "shown-where-the-bump-touches"`) only in files that have other findings of the bump
    (`touched`, bump_touched): a bump adds no defensive access and converts the ones in the
    files it touches. With `--old X --new X` (the pin alone) every one is reported."""
    return [d for d in diagnostics if report_of(d.code).bump != "shown-where-the-bump-touches" or d.path in touched]


def problem_diagnostics(problems: list[Problem], root: Path) -> list[Diagnostic]:
    """The parts of the report that are missing: SGC001 for a bug met at the error boundary,
    SGC000 for an input that cannot be analysed. A problem tied to no project file (a rule
    that failed on the project as a whole) is reported at the project's configuration."""
    from sglang_contracts.contracts.imports import NOT_CHECKED

    anywhere = "pyproject.toml" if (root / "pyproject.toml").is_file() else "."
    found = []
    for problem in dict.fromkeys(problems):  # one per problem, in order
        path = problem.path or anywhere
        if problem.internal:
            found.append(finding_at(INTERNAL_ERROR, path, problem.line, problem.col, "",
                                    stage=problem.stage, error=problem.error))
        elif problem.module:
            found.append(finding_at("SGC000", path, problem.line, problem.col, problem.module,
                                    what=f"cannot {problem.stage}", error=problem.error,
                                    unchecked=problem.unchecked or "the contracts with it are not checked", hint=""))
        elif problem.stage == LISTING:
            found.append(finding_at("SGC000", path, problem.line, problem.col, "", what="cannot list this folder",
                                    error=problem.error, unchecked="the SGLang contracts of its files are not checked",
                                    hint=""))
        else:
            reading = problem.stage == "reading the file"
            found.append(finding_at("SGC000", path, problem.line, problem.col, "",
                                    what=f"cannot {'read' if reading else 'analyse'} this file",
                                    error=problem.error if reading else f"{problem.error}, {problem.stage}",
                                    unchecked=problem.unchecked or NOT_CHECKED, hint=""))
    return found


def _upstream_problems(project: ProjectIndex, models: list[UpstreamModel]) -> list[Problem]:
    """What could not be read or analysed of the releases, at each project import of it."""
    found = []
    for model in models:
        for module, stage, error, internal in model.problems():
            for path, position in _import_sites(project, module) or [("", None)]:
                found.append(Problem(path, position.line if position else 1, position.col if position else 1,
                                     stage, error, internal, module=module))
    found += _broken_by_the_patches(models)
    return found


def _import_sites(project: ProjectIndex, module: str) -> list[tuple[str, Any]]:
    """Where the project imports `module` (or binds it): (path, position) of each import."""
    return [(facts.path, fact.position) for facts in project.files.values() for fact in facts.imports
            if fact.module == module or fact.binds == module]


def _broken_by_the_patches(models: list[UpstreamModel]) -> list[Problem]:
    """Modules the project's patch stack leaves unanalysable, read as released: once at the patch
    that breaks the module, naming the releases where it does (and why, where they differ)."""
    found = []
    broken: dict[tuple[str, int, str], tuple[list[str], list[str]]] = {}
    for model in models:
        blame = getattr(model.tree, "breaking_patches", None)
        for module, (relpath, error) in sorted(model.read_as_released.items()):
            for path, line in blame(relpath) if blame else []:
                labels, errors = broken.setdefault((path, line, module), ([], []))
                labels.append(model.release.label)
                errors.extend([error] if error not in errors else [])
    for (path, line, module), (labels, errors) in broken.items():
        found.append(Problem(path, line, 1, f"analyse {module} as this patch stack leaves it in {' and '.join(labels)}",
                             "; ".join(errors), False, module=module,
                             unchecked="it is read as released, without the stack's changes to it"))
    return found


def _delta(repo: Path | None, project: ProjectIndex, old: UpstreamModel,
           new: UpstreamModel) -> UpstreamDelta | None:
    """The upstream delta behind the project's contracts, when both releases are refs of a clone (`repo`)."""
    if repo is None or old.release.ref is None or new.release.ref is None:
        return None
    files = _imported_release_files(project, (old, new))
    from git import GitCommandError  # GitPython costs 40 ms to import; only clones need it

    from sglang_contracts.upstream.delta import upstream_delta

    try:
        return upstream_delta(repo, old.release.ref, new.release.ref, files)
    except (ContractsError, GitCommandError):  # context for a reviewer: never worth losing the report over
        return None



def _imported_release_files(project: ProjectIndex, models: tuple[UpstreamModel, ...]) -> set[str]:
    """The releases' files of the upstream modules the project imports (from), in any of `models`."""
    files = set()
    for facts in project.files.values():
        for fact in facts.imports:
            for name in (fact.module, fact.target):
                files.update(_release_files(name, models))
    return files


def _release_files(name: str, models: tuple[UpstreamModel, ...]) -> list[str]:
    """The file of module `name` in each of `models` that has it."""
    if not is_upstream(name):
        return []
    records = [model.module(name) for model in models]
    return [record.relpath for record in records if record is not None and record.relpath]


def _under_any(path: Path, folders: list[Path]) -> bool:
    return any(path == folder or folder in path.parents for folder in folders)


class _NamedPaths:
    """The paths named to a run, asked of each finding's path: by sets, not path by path (pre-commit
    names every staged file: 20,000 files each with a finding, all named, took the square of their
    count, campaign 20 R10)."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = frozenset(paths)
        self.ways = frozenset(folder for path in paths for folder in path.parents)

    def holds(self, path: Path) -> bool:
        """Whether the path is named, or lies in a named folder."""
        return path in self.paths or any(folder in self.paths for folder in path.parents)

    def on_the_way(self, folder: Path) -> bool:
        """Whether the folder holds a named path."""
        return folder in self.ways


def _named_but_unread(wanted: list[Path], root: Path) -> list[Diagnostic]:
    """An SGC000 at each path named to the run that the project's walk does not go into (an
    environment, a build's output, a tool's folder), and at each named file of a kind of Python
    the index does not read (a stub, a notebook: unread_python_kind): never dropped without a
    word. Not part of the project's record, which is the same whatever paths a run names."""
    problems = []
    for path in wanted:
        if links_out_of(path, root):
            continue
        why = UNREAD_FOLDER if skipped_on_the_way(path, root) else \
            unread_python_kind(path, root) if path.is_file() else None
        if why is not None:
            problems.append(Problem(path.relative_to(root).as_posix(), 1, 1,
                                    LISTING if path.is_dir() else "reading the file", why, internal=False))
    return problem_diagnostics(problems, root)


def excluder(options: CheckOptions) -> Callable[[str], bool] | None:
    """What the configured excludes say of a path relative to the root, if any are configured
    (a run with `only` walks no other file: confined_to)."""
    return PathGlobs(options.exclude).matches if options.exclude else None


def enrich(d: Diagnostic, text: ProjectText, old: UpstreamModel, new: UpstreamModel) -> Diagnostic:
    """What every report can use and a check need not compute: the reported span where the
    line shows the symbol's name at the position, what each release says of the symbol, and
    a fingerprint of the finding that does not depend on its line number."""
    line = text.line(d.path, d.line)
    changes: dict[str, Any] = {}
    if d.end_line is None and d.symbol:
        changes.update(_symbol_span(d, line))
    if d.old is None and d.new is None and is_upstream(d.symbol):
        changes.update(old=_symbol_facts(old, d.symbol), new=_symbol_facts(new, d.symbol))
    if not d.fingerprint:
        key = "\0".join([d.code, d.path, d.symbol, _collapsed(line)])
        changes["fingerprint"] = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return dataclasses.replace(d, **changes) if changes else d


def _symbol_span(d: Diagnostic, line: str) -> dict[str, int]:
    """The end of the reported span where `line` shows the symbol's name (its longest dotted
    suffix) at the finding's position; nothing where it does not."""
    match = IDENTIFIER_AT.match(line, max(d.col - 1, 0))
    if not match:
        return {}
    parts = d.symbol.split(".")
    for start in range(len(parts)):
        suffix = ".".join(parts[start:])
        if match.group().startswith(suffix):
            return {"end_line": d.line, "end_col": d.col + len(suffix)}
    return {}


# A line longer than this enters a fingerprint by its digest (see _collapsed).
LONGEST_FINGERPRINTED_LINE = 1000


@functools.lru_cache(maxsize=256)
def _collapsed(line: str) -> str:
    """What a fingerprint keeps of the finding's line: its runs of blanks made one space, and a
    line longer than LONGEST_FINGERPRINTED_LINE as its digest. Once per line: a pull request's
    line of 16,000 findings cost their number times its length to collapse and to hash, minutes
    (campaign 4, D06). ProjectText gives one string object per line, whose hash Python keeps,
    so a lookup costs no pass over it."""
    collapsed = " ".join(line.split())
    if len(collapsed) <= LONGEST_FINGERPRINTED_LINE:
        return collapsed
    return "sha256:" + hashlib.sha256(collapsed.encode("utf-8", "surrogateescape")).hexdigest()


def _symbol_facts(model: UpstreamModel, dotted: str) -> dict[str, Any]:
    symbol = model.resolve_path(dotted)
    facts: dict[str, Any] = {"release": model.release.short, "status": symbol.status}
    if symbol.kind:
        facts["kind"] = symbol.kind
    if symbol.origin:
        facts["defined_at"] = symbol.origin
    return facts


def _require_loaded(project: ProjectIndex, old: UpstreamModel, new: UpstreamModel) -> None:
    """Never trust a loader that found nothing: if none of the upstream modules the project
    imports exists in either release, the source or the loader is wrong. Either will do: a
    project that has migrated (what `fix` leaves) imports only what the new release has."""
    reached = {f.module for facts in project.files.values() for f in facts.imports if is_upstream(f.module)}
    if reached and not any(model.module_exists(module) for module in reached for model in (old, new)):
        raise ContractsError(
            f"{old.release.label} and {new.release.label}: none of the {len(reached)} SGLang modules the "
            "project imports was found in either; refusing to report a clean result"
        )
