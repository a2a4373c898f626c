"""Extract, in parallel, the upstream modules the project's contracts will reach.

Resolution loads modules one at a time as it follows re-exports; the modules the project
imports directly, and the ones their imported names re-export from, are known up front, so
they are extracted together on every core first. Whatever resolution needs beyond them is
still loaded on demand.
"""

from __future__ import annotations

import pickle
import threading
from concurrent.futures import Executor, Future
from typing import Callable, Iterable, Iterator

from sglang_contracts.infra.cache import RecordCache
from sglang_contracts.infra.parallel import map_jobs
from sglang_contracts.project.index import ProjectIndex
from sglang_contracts.upstream.model import UpstreamModel, extract_stored, is_upstream


SLICE = 600  # module names per round of extraction
ANCESTRY_ROUNDS = 8  # steps down the bases of the classes the project names, fetched a round at a time


def _extract_job(job: tuple[list[tuple[str, str, str, str, str]], RecordCache]) -> list[bytes]:
    """The records of one module in each release that has it (one, or two that differ), also
    written to the cache under their keys: encoding and writing them in the workers, not in the
    process that gathers them all. One job for both: the other release's unchanged bodies are
    not walked again (bodies.module_bodies). Each record is pickled on its own: records that
    share facts here share no object in the process that receives them."""
    modules, cache = job
    known: dict = {}
    records = []
    for name, _, relpath, code, key in modules:
        extracted = extract_stored(name, relpath, code, known)
        cache.put(key, extracted)
        records.append(pickle.dumps(extracted, pickle.HIGHEST_PROTOCOL))
    return records


def _imported(project: ProjectIndex) -> list[tuple[str, str | None]]:
    return [
        (fact.module, fact.name)
        for facts in project.files.values()
        for fact in facts.imports
        if is_upstream(fact.module)
    ]


def _behind(model: UpstreamModel, imported: list[tuple[str, str | None]]) -> set[str]:
    """Modules that the imported names are re-exported from (one step of each chain)."""
    names: set[str] = set()
    for module, name in imported:
        record = model.loaded(module)
        if record is None:
            continue
        names.update(record.wildcards)
        binding = record.bindings.get(name or "")
        if binding and binding["kind"] == "alias" and is_upstream(binding["target"]):
            target = binding["target"]
            names.update({target, target.rpartition(".")[0]})
    return names


def _first_names(imported: list[tuple[str, str | None]]) -> tuple[set[str], set[str]]:
    """(the modules the project imports and the dotted names it imports from them, those names)."""
    named = {f"{module}.{name}" for module, name in imported if name not in (None, "*")}
    return {module for module, _ in imported} | named, named


def _slices(names: set[str]) -> Iterator[set[str]]:
    """The names, sorted, a slice at a time: only a slice's sources are in memory at once, not
    those of every module of both releases (a project that imports most of SGLang)."""
    ordered = sorted(names)
    for start in range(0, len(ordered), SLICE):
        yield set(ordered[start:start + SLICE])


def prefetch(project: ProjectIndex, models: list[UpstreamModel], workers: int | None = None,
             early: "EarlyExtraction | None" = None) -> None:
    """`early`: the extraction begun while the project was scanned, finished here first."""
    if early is not None:
        early.finish()
    imported = _imported(project)
    first, named = _first_names(imported)
    if early is None and all(model.all_cached(first) for model in models):
        # Nothing to extract (a re-check): each record is read when a check first asks for it,
        # only those (an edit's re-check reads 212 of the 497 records of omni's imports).
        return
    for part in _slices(first):
        _extract_all(models, {id(model): part for model in models}, workers)
    _prefetch_ancestry(models, imported, named, workers)


def _prefetch_ancestry(models: list[UpstreamModel], imported: list[tuple[str, str | None]], named: set[str],
                       workers: int | None) -> None:
    """What resolving the project's names reads beyond their own modules, a round at a time."""
    # Then, a round at a time, the modules the imported names are re-exported from (one step of
    # each chain) and those of the bases of the classes the project names, and of their bases:
    # resolution reads each to look a member up (a Scheduler has a dozen mixins), one at a time
    # in this process when they are not fetched here (70 modules, a tenth of a real run's
    # checks). The first of those rounds fetches both kinds: each round waits for its slowest module.
    behind = {id(model): _behind(model, imported) for model in models}
    pending = {id(model): set(named) for model in models}
    seen: dict[int, set[str]] = {id(model): set() for model in models}
    for _ in range(ANCESTRY_ROUNDS):
        for model in models:
            seen[id(model)] |= pending[id(model)]
            pending[id(model)] = _next_in_ancestry(model, pending[id(model)]) - seen[id(model)]
        modules = {id(model): {dotted.rpartition(".")[0] for dotted in pending[id(model)]} | behind.pop(id(model), set())
                   for model in models}
        if not any(modules.values()):
            break
        _extract_all(models, modules, workers)


def _next_in_ancestry(model: UpstreamModel, dotteds: set[str]) -> set[str]:
    """The paths to read next to resolve these (their modules loaded): an alias's target, a
    class's upstream bases (without their type arguments)."""
    found: set[str] = set()
    for dotted in dotteds:
        module, _, name = dotted.rpartition(".")
        record = model.loaded(module)
        if record is None:
            continue
        binding = record.bindings.get(name)
        if binding is not None and binding["kind"] == "alias":
            found.add(binding["target"])
        elif name in record.classes:
            found.update(base.split("[")[0] for base in record.classes[name]["bases"])
    return {dotted for dotted in found if is_upstream(dotted)}


def _extract_all(models: list[UpstreamModel], per_model: dict[int, set[str]], workers: int | None) -> None:
    batch = [(model, job) for model in models for job in model.pending_extractions(per_model[id(model)])]
    # A module unchanged between the releases has one cache key: extract it once for both.
    if not batch:
        return
    groups = _grouped(batch)
    cache = models[0].cache  # the workers write each record there; a model with another cache writes its own
    results = map_jobs(_extract_job, [(group, cache) for group in groups],
                       sum(len(job[3]) for group in groups for job in group), workers,
                       progress="Extracting SGLang modules", small=True)  # this process waits for the records
    _accept(batch, groups, results, cache)


Job = tuple[str, str, str, str, str]


def _grouped(batch: list[tuple[UpstreamModel, Job]]) -> list[list[Job]]:
    """The jobs of a batch, one per cache key (a module unchanged between the releases is
    extracted once for both), a group per module, the largest group first: a round waits for
    its last job, which is then a small one."""
    by_module: dict[str, list[Job]] = {}
    for job in {job[4]: job for _, job in batch}.values():
        by_module.setdefault(job[0], []).append(job)
    return sorted(by_module.values(), key=lambda group: -sum(len(job[3]) for job in group))


def _accept(batch: list[tuple[UpstreamModel, Job]], groups: list[list[Job]], results: Iterable[list[bytes]],
            cache: RecordCache) -> None:
    extracted = {job[4]: pickle.loads(record) for group, records in zip(groups, results) for job, record in zip(group, records)}
    for model, job in batch:
        model.accept_extraction(job, extracted[job[4]], stored=model.cache.folder == cache.folder)


class EarlyExtraction:
    """prefetch's first round (the modules the project imports), begun while the project is
    still being scanned. Once the files that name SGLang are scanned their imports are known,
    and the scan's later rounds (the files importing those files' re-exports, each round waiting
    for its slowest file) leave the workers idle half the time. Its jobs go to the run's pool a
    few at a time, so that a scan round queued behind them waits for one job at most.
    It extracts what prefetch would, and nothing else: the same names, of facts that later
    rounds leave as they are (prefetch asks for the rest), so the models end as they would."""

    def __init__(self, models: Callable[[], list[UpstreamModel]], pool: Executor, workers: int) -> None:
        self._models = models  # waits for the releases to be open, the first time
        self._pool = pool
        self._in_flight = threading.Semaphore(max(workers, 1))
        self._thread: threading.Thread | None = None

    def begin(self, project: ProjectIndex) -> None:
        """Called with the index as its first round left it (in the thread that builds it):
        the names are read there and then, before the next round adds files."""
        if self._thread is None:
            names, _ = _first_names(_imported(project))
            self._thread = threading.Thread(target=self._extract, args=(names,), name="early extraction", daemon=True)
            self._thread.start()

    def finish(self) -> None:
        if self._thread is not None:
            self._thread.join()

    def _extract(self, names: set[str]) -> None:
        try:
            models = self._models()
            for part in _slices(names):  # as prefetch slices them
                batch = [(model, job) for model in models for job in model.pending_extractions(part)]
                groups = _grouped(batch)
                futures = [self._submitted((group, models[0].cache)) for group in groups]
                _accept(batch, groups, (future.result() for future in futures), models[0].cache)
        except Exception:  # noqa: BLE001 - a broken pool, a failed job: prefetch extracts what is left
            return

    def _submitted(self, job: tuple[list[Job], RecordCache]) -> Future:
        self._in_flight.acquire()
        future = self._pool.submit(_extract_job, job)
        future.add_done_callback(lambda _: self._in_flight.release())
        return future
