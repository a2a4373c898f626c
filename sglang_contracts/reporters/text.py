"""flake8's format: `path:line:col: CODE message`, one diagnostic a line, sorted.

A warning's or an info's message starts with its severity (`SGC103 warning: ...`), so a
problem matcher can read it; an error's is plain. On a terminal the lines are coloured
(unless NO_COLOR is set) and a summary line closes the report.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, TextIO

from sglang_contracts.diagnostics import Diagnostic
from sglang_contracts.infra.display import printable, printable_path
from sglang_contracts.reporters.base import display_path, summary_line

if TYPE_CHECKING:
    from sglang_contracts.check.runner import CheckResult

COLOURS = {"error": "\033[1;31m", "warning": "\033[1;33m", "info": "\033[1;36m"}
BOLD, DIM, RESET = "\033[1m", "\033[2m", "\033[0m"


def format_line(diagnostic: Diagnostic, path: str | None = None, colour: bool = False) -> str:
    """`path`: as display_path shows it (else the project-relative path, shown printable)."""
    path = printable_path(diagnostic.path) if path is None else path
    message = printable(diagnostic.message)
    severity = "" if diagnostic.severity == "error" else f"{diagnostic.severity}: "
    if not colour:
        return f"{path}:{diagnostic.line}:{diagnostic.col}: {diagnostic.code} {severity}{message}"
    tint = COLOURS.get(diagnostic.severity, BOLD)
    severity = f"{tint}{severity}{RESET}" if severity else ""
    return (f"{BOLD}{path}{RESET}{DIM}:{diagnostic.line}:{diagnostic.col}:{RESET} "
            f"{tint}{diagnostic.code}{RESET} {severity}{message}")


def write_text(result: "CheckResult", out: TextIO, quiet: bool = False) -> None:
    terminal = out.isatty()
    colour = terminal and not os.environ.get("NO_COLOR")
    root = result.project.root
    for diagnostic in result.diagnostics:
        out.write(format_line(diagnostic, display_path(root, diagnostic.path), colour) + "\n")
    if terminal and not quiet:
        if result.diagnostics:
            line = summary_line(result.diagnostics)
        else:
            line = printable(f"no broken contracts (sglang {result.old.release.short} -> {result.new.release.short})")
        if result.baselined:
            line += f" ({result.baselined} more accepted by the baseline)"
        out.write((f"{BOLD}{line}{RESET}" if colour else line) + "\n")
