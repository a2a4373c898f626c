"""One check run, end to end: sources -> upstream models -> project facts -> contracts -> diagnostics."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from git import GitCommandError

import sglang_contracts.contracts  # noqa: F401  (registers every check)
from sglang_contracts.cache import JsonCache, cache_root
from sglang_contracts.catalog import load_catalog
from sglang_contracts.contracts.base import CHECKS, CheckContext, run_checks
from sglang_contracts.diagnostics import Diagnostic, code_selected, suppressed
from sglang_contracts.errors import ContractsError, UsageError
from sglang_contracts.project.index import ProjectIndex, build_index
from sglang_contracts.project.pins import find_sglang_pin
from sglang_contracts.project.scanner import parse_noqa
from sglang_contracts.sources import open_release
from sglang_contracts.upstream.delta import UpstreamDelta, upstream_delta
from sglang_contracts.upstream.model import UpstreamModel, is_upstream
from sglang_contracts.upstream.prefetch import prefetch


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
    workers: int | None = None


@dataclass
class CheckResult:
    diagnostics: list[Diagnostic]
    project: ProjectIndex
    old: UpstreamModel
    new: UpstreamModel
    upstream_delta: UpstreamDelta | None = None  # with --sglang-repo: the commits behind the contracts


def project_root_for(paths: list[Path]) -> Path:
    """The nearest folder at or above the first path with a pyproject.toml, setup.py or .git."""
    start = paths[0].resolve() if paths else Path.cwd()
    start = start if start.is_dir() else start.parent
    for folder in (start, *start.parents):
        if any((folder / marker).exists() for marker in ("pyproject.toml", "setup.py", "setup.cfg", ".git")):
            return folder
    return start


def run_check(paths: list[Path], options: CheckOptions) -> CheckResult:
    paths = paths or [Path.cwd()]
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file or directory")
    root = project_root_for(paths)
    old_spec = options.old
    if old_spec is None:
        pin = find_sglang_pin(root)
        if pin is None:
            raise UsageError(f"--old not given and no exact sglang==X pin found in {root} (pyproject.toml or requirements)")
        old_spec = pin[0]
    if options.new is None:
        raise UsageError("--new is required (an SGLang version, a git ref with --sglang-repo, or a directory)")
    download_cache = options.cache_dir or cache_root()

    def store(kind: str) -> JsonCache:
        return JsonCache(download_cache / kind if options.use_cache else None)

    # Unpacking two releases (I/O and zlib) overlaps with parsing the project (a process pool).
    with ThreadPoolExecutor(max_workers=3) as threads:
        opening = [
            threads.submit(open_release, spec, sglang_repo=options.sglang_repo, cache=download_cache)
            for spec in (old_spec, options.new)
        ]
        # The whole project is indexed even when a few files are named (pre-commit passes file
        # names): a named file may depend on upstream names through the project's own modules.
        indexing = threads.submit(
            build_index, root, [root], store("project"), workers=options.workers
        )
        old_release, new_release = (future.result() for future in opening)
        project = indexing.result()
    old = UpstreamModel(old_release, store("upstream"))
    new = UpstreamModel(new_release, store("upstream"))
    prefetch(project, [old, new], workers=options.workers)
    wanted = [path.resolve() for path in paths]

    context = CheckContext(project=project, old=old, new=new, report_unresolved=options.report_unresolved)
    catalog = load_catalog()
    codes = [code for code in CHECKS if code in catalog and code_selected(code, options.select, options.ignore)]
    noqa = _NoqaLookup(project)
    diagnostics = [
        d for d in run_checks(context, codes)
        if not suppressed(d, noqa(d.path)) and _under_any(root / d.path, wanted)
    ]
    _require_loaded(project, old)
    delta = _delta(options.sglang_repo, project, old, new) if options.sglang_repo is not None else None
    return CheckResult(sorted(set(diagnostics), key=Diagnostic.sort_key), project, old, new, delta)


def _delta(repo: Path, project: ProjectIndex, old: UpstreamModel, new: UpstreamModel) -> UpstreamDelta | None:
    """The upstream delta behind the project's contracts, when both releases are refs of the clone."""
    if old.release.ref is None or new.release.ref is None:
        return None
    files = set()
    for facts in project.files.values():
        for fact in facts.imports:
            for name in (fact.module, fact.target):
                for model in (old, new):
                    record = model.module(name) if is_upstream(name) else None
                    if record is not None and record.relpath:
                        files.add(record.relpath)
    try:
        return upstream_delta(repo, old.release.ref, new.release.ref, files)
    except (ContractsError, GitCommandError):  # context for a reviewer: never worth losing the report over
        return None


class _NoqaLookup:
    """`# noqa` comments of any project file: Python files from their facts, others (a Dockerfile,
    a pyproject, a workflow) read once when a diagnostic lands in them."""

    def __init__(self, project: ProjectIndex) -> None:
        self.project = project
        self.other: dict[str, dict[int, list[str] | None]] = {}

    def __call__(self, path: str) -> dict[int, list[str] | None]:
        facts = self.project.files.get(path)
        if facts is not None:
            return facts.noqa
        if path not in self.other:
            try:
                text = (self.project.root / path).read_text(errors="replace")
            except OSError:
                text = ""
            self.other[path] = {} if path.endswith((".patch", ".diff")) else parse_noqa(text)
        return self.other[path]


def _under_any(path: Path, folders: list[Path]) -> bool:
    return any(path == folder or folder in path.parents for folder in folders)


def _require_loaded(project: ProjectIndex, old: UpstreamModel) -> None:
    """Never trust a loader that found nothing: if none of the upstream modules the project
    imports exists in the release it works with, the source or the loader is wrong."""
    reached = {f.module for facts in project.files.values() for f in facts.imports if is_upstream(f.module)}
    if reached and not any(old.module_exists(module) for module in reached):
        raise ContractsError(
            f"{old.release.label}: none of the {len(reached)} SGLang modules the project imports "
            "was found in it; refusing to report a clean result"
        )
