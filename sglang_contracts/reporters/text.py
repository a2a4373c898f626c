"""flake8's format: `path:line:col: CODE message`, one diagnostic a line, sorted."""

from __future__ import annotations

from typing import TextIO

from sglang_contracts.diagnostics import Diagnostic


def format_line(diagnostic: Diagnostic) -> str:
    return f"{diagnostic.path}:{diagnostic.line}:{diagnostic.col}: {diagnostic.code} {diagnostic.message}"


def write_text(diagnostics: list[Diagnostic], out: TextIO) -> None:
    for diagnostic in diagnostics:
        out.write(format_line(diagnostic) + "\n")
