"""Findings as the Language Server Protocol shows them: ranges, severities, codes, hover text."""

from __future__ import annotations

import re

from lsprotocol import types

from sglang_contracts.diagnostics.catalog import explanation, rule
from sglang_contracts.diagnostics import Diagnostic
from sglang_contracts.infra.errors import ContractsError
from sglang_contracts.infra.markdown import code_block, inline

SOURCE = "sglang-contracts"
SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
            "info": types.DiagnosticSeverity.Information}
WORD = re.compile(r"[\w.]+")


def lsp_range(finding: Diagnostic, line_text: str) -> types.Range:
    """The finding's span (0-based; flake8's columns are characters): its own end where the
    check knows it, else the dotted name at its column, else one character."""
    line, col = max(finding.line - 1, 0), max(finding.col - 1, 0)
    if finding.end_line is not None and finding.end_col is not None:
        return types.Range(types.Position(line, col), types.Position(max(finding.end_line - 1, 0), max(finding.end_col - 1, 0)))
    match = WORD.match(line_text, col)
    return types.Range(types.Position(line, col), types.Position(line, match.end() if match else col + 1))


def lsp_diagnostic(finding: Diagnostic, line_text: str) -> types.Diagnostic:
    reference = _reference(finding.code)
    return types.Diagnostic(
        range=lsp_range(finding, line_text),
        message=finding.message,
        severity=SEVERITY.get(finding.severity, types.DiagnosticSeverity.Error),
        code=finding.code,
        code_description=types.CodeDescription(href=reference) if reference else None,
        source=SOURCE,
        # What a code action needs to act on the finding again (the fix hook, noqa).
        data={"code": finding.code, "symbol": finding.symbol, "fingerprint": finding.fingerprint},
    )


def _reference(code: str) -> str | None:
    """The rule's own entry (its TOML file: what it reports, what to do, its examples), which the
    editor opens from the diagnostic's code; not the rule's outside reference, which is general."""
    try:
        return rule(code).source.resolve().as_uri()
    except (ContractsError, OSError, ValueError):
        return None


def hover_text(findings: list[types.Diagnostic]) -> str:
    """Markdown: each finding's message (project text: shown as the markdown report shows it),
    then its rule's explanation (`sglang-contracts explain`)."""
    parts = []
    for code in dict.fromkeys(str(d.code) for d in findings):
        messages = "\n".join(f"- {inline(d.message)}" for d in findings if str(d.code) == code)
        try:
            text = explanation(code)
        except ContractsError:
            text = ""
        parts.append(f"**{code}**\n\n{messages}\n\n{code_block(text, 'text')}")
    return "\n\n---\n\n".join(parts)


def contains(span: types.Range, position: types.Position) -> bool:
    start, end = span.start, span.end
    after_start = (position.line, position.character) >= (start.line, start.character)
    before_end = (position.line, position.character) <= (end.line, end.character)
    return after_start and before_end
