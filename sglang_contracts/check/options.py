"""A run's options from what it is given (the command line's flags, a language client's
settings) over the project's configuration file (config.py) over the defaults: one public
function for the command line, the daemon and the language server alike."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sglang_contracts.check.runner import CheckOptions
from sglang_contracts.config import find_config, with_source
from sglang_contracts.diagnostics.catalog import load_catalog
from sglang_contracts.infra.display import printable
from sglang_contracts.infra.errors import UsageError
from sglang_contracts.infra.roots import root_of_all


@dataclass(frozen=True)
class Overrides:
    """What a run is given over the configuration file: None leaves the file's value (or the
    default). The command line's flags (cli.py), a language client's settings (lsp/server.py)."""

    old: str | None = None
    new: str | None = None
    sglang_repo: Path | None = None
    config: Path | None = None  # the configuration file, in place of the project's pyproject.toml
    select: list[str] | None = None
    ignore: list[str] | None = None
    report_unresolved: bool | None = None
    report_unused_noqa: bool | None = None
    baseline: Path | None = None
    writes_baseline: bool = False  # `--write-baseline`: every finding is recorded, none accepted
    package_index: str | None = None
    cache_dir: Path | None = None
    use_cache: bool = True


def _first(*values: Any) -> Any:
    return next((value for value in values if value is not None), None)


def resolve_options(paths: list[Path], overrides: Overrides) -> tuple[list[Path], CheckOptions]:
    """The paths to check and the run's options: `overrides` over the configuration file over
    the defaults. No path given: the configuration's `paths`."""
    for flag, given in (("--old", overrides.old), ("--new", overrides.new)):
        if given is not None and not given.strip():  # as a path, '' would be the current directory
            raise UsageError(f"{flag} is empty: give an SGLang version, a git ref with --sglang-repo, or a directory")
    config = find_config(root_of_all(paths), overrides.config)
    paths = paths or [config.folder / p for p in config.get("paths", [])]
    source = config.get("source")
    index = {"package-index": overrides.package_index} if overrides.package_index else {}
    options = CheckOptions(
        old=with_source(_first(overrides.old, config.release_spec("old")), source),
        new=with_source(_first(overrides.new, config.release_spec("new")), source),
        sglang_repo=_first(overrides.sglang_repo, config.path_value("sglang-repo")),
        select=_first(overrides.select, config.get("select"), ["SGC"]),
        ignore=_first(overrides.ignore, config.get("ignore"), []),
        report_unresolved=bool(_first(overrides.report_unresolved, config.get("report-unresolved"))),
        report_unused_noqa=bool(_first(overrides.report_unused_noqa, config.get("report-unused-noqa"))),
        cache_dir=overrides.cache_dir, use_cache=overrides.use_cache, replay=True,
        exclude=config.get("exclude", []),
        per_file_ignores=config.get("per-file-ignores", {}),
        severity=config.get("severity", {}),
        baseline=None if overrides.writes_baseline else _first(overrides.baseline, config.path_value("baseline")),
        settings={**config.settings(), **index},
    )
    _refuse_unknown_selections(options.select)
    if options.new is None:
        raise UsageError("--new is required (an SGLang version, a git ref with --sglang-repo, or a directory), "
                         "on the command line or as `new` in [tool.sglang-contracts]")
    return paths, options


def _refuse_unknown_selections(select: list[str]) -> None:
    """A `select` entry that no rule's code starts with selects nothing: a run would report
    nothing and pass (a typo in a CI step turning the check green)."""
    if not select:
        raise UsageError("--select names no rule code (`sglang-contracts rules` lists them)")
    codes = load_catalog().keys()
    for prefix in select:
        if not any(code.startswith(prefix) for code in codes):
            raise UsageError(f"--select {printable(repr(prefix))} matches no rule's code "
                             "(`sglang-contracts rules` lists them)")
