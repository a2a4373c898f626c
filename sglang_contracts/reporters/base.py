"""What every reporter shares: where a path is shown from, and how findings are counted."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from sglang_contracts.diagnostics import Diagnostic
from sglang_contracts.infra.display import printable_path
from sglang_contracts.infra.roots import working_folder
from sglang_contracts.infra.wording import plural

if TYPE_CHECKING:
    from sglang_contracts.check.runner import CheckResult

SEVERITY_ORDER = ("error", "warning", "info")


def display_path(root: Path, relpath: str) -> str:
    """A project path as the user typed it: relative to the working directory when below it,
    on one printable line whatever bytes its name holds."""
    absolute = root / relpath
    try:
        return printable_path(absolute.relative_to(working_folder()).as_posix())
    except ValueError:
        return printable_path(absolute.as_posix())


def repository_root(root: Path) -> Path:
    """The git work tree holding the project (code scanning and annotations want paths
    relative to it), else the project root."""
    for folder in (root, *root.parents):
        if (folder / ".git").exists():
            return folder
    return root


def repository_path(result: "CheckResult", d: Diagnostic) -> str:
    """The finding's path relative to the repository root, as the file is named (a newline, a
    byte that is not UTF-8 and all): each format that locates it encodes it its own way."""
    root = result.project.root
    absolute = root / d.path
    try:
        return absolute.relative_to(repository_root(root)).as_posix()
    except ValueError:
        return d.path


def summary_line(diagnostics: list[Diagnostic]) -> str:
    """`N errors, M warnings in K files` (infos counted only when there are some)."""
    severities = Counter(d.severity for d in diagnostics)
    parts = [plural(severities["error"], "error"), plural(severities["warning"], "warning")]
    if severities["info"]:
        parts.append(f"{severities['info']} info")
    files = len({d.path for d in diagnostics})
    return f"{', '.join(parts)} in {plural(files, 'file')}"


def statistics_lines(diagnostics: list[Diagnostic]) -> list[str]:
    """flake8's --statistics: one line per code, with its count and the rule's name."""
    from sglang_contracts.diagnostics.catalog import load_catalog

    catalog = load_catalog()
    counts = Counter(d.code for d in diagnostics)
    return [f"{counts[code]:<5} {code} {catalog[code].name if code in catalog else ''}".rstrip()
            for code in sorted(counts)]
