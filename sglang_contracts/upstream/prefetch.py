"""Extract, in parallel, the upstream modules the project's contracts will reach.

Resolution loads modules one at a time as it follows re-exports; the modules the project
imports directly, and the ones their imported names re-export from, are known up front, so
they are extracted together on every core first. Whatever resolution needs beyond them is
still loaded on demand.
"""

from __future__ import annotations

import pickle

from sglang_contracts.infra.cache import JsonCache
from sglang_contracts.infra.parallel import map_jobs
from sglang_contracts.project.index import ProjectIndex
from sglang_contracts.upstream.extract import extract_module
from sglang_contracts.upstream.model import UpstreamModel, is_upstream


SLICE = 600  # module names per round of extraction
ANCESTRY_ROUNDS = 8  # steps down the bases of the classes the project names, fetched a round at a time


def _extract_job(job: tuple[list[tuple[str, str, str, str, str]], JsonCache]) -> list[bytes]:
    """The records of one module in each release that has it (one, or two that differ), also
    written to the cache under their keys: encoding and writing them in the workers, not in the
    process that gathers them all. One job for both: the other release's unchanged bodies are
    not walked again (bodies.module_bodies). Each record is pickled on its own: records that
    share facts here share no object in the process that receives them."""
    modules, cache = job
    known: dict = {}
    records = []
    for name, _, relpath, code, key in modules:
        extracted = extract_module(name, relpath, code, known)
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


def prefetch(project: ProjectIndex, models: list[UpstreamModel], workers: int | None = None) -> None:
    imported = _imported(project)
    named = {f"{module}.{name}" for module, name in imported if name not in (None, "*")}
    names = sorted({module for module, _ in imported} | named)
    # A slice of the modules at a time: only its sources are in memory at once, not those of
    # every module of both releases (a project that imports most of SGLang).
    for start in range(0, len(names), SLICE):
        part = set(names[start:start + SLICE])
        _extract_all(models, {id(model): part for model in models}, workers)
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
    unique = list({job[4]: job for _, job in batch}.values())
    by_module: dict[str, list[tuple[str, str, str, str, str]]] = {}
    for job in unique:
        by_module.setdefault(job[0], []).append(job)
    # The largest first: a round waits for its last job, which is then a small one.
    groups = sorted(by_module.values(), key=lambda group: -sum(len(job[3]) for job in group))
    cache = models[0].cache  # the workers write each record there; a model with another cache writes its own
    results = map_jobs(_extract_job, [(group, cache) for group in groups],
                       sum(len(job[3]) for job in unique), workers, progress="Extracting SGLang modules",
                       small=True)  # this process waits for the records
    extracted = {job[4]: pickle.loads(record) for group, records in zip(groups, results) for job, record in zip(group, records)}
    for model, job in batch:
        model.accept_extraction(job, extracted[job[4]], stored=model.cache.folder == cache.folder)
