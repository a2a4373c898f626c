"""Findings as the Language Server Protocol shows them: ranges, severities, codes, hover text."""

from __future__ import annotations

import re
from bisect import bisect_left

from lsprotocol import types

from sglang_contracts.diagnostics.catalog import explanation, rule
from sglang_contracts.diagnostics import Diagnostic
from sglang_contracts.infra.errors import ContractsError
from sglang_contracts.infra.markdown import code_block, inline

SOURCE = "sglang-contracts"
SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
            "info": types.DiagnosticSeverity.Information}
WORD = re.compile(r"[\w.]+")
# Per position encoding a client may negotiate: the characters that each count one unit more
# than the one code point a Python str index counts (UTF-8: 2 bytes from U+0080, 3 from U+0800
# (a lone surrogate too), 4 from U+10000). An encoding pygls does not know is UTF-16, as in pygls.
_ONE_UNIT_MORE = {
    types.PositionEncodingKind.Utf32: (),
    types.PositionEncodingKind.Utf16: (re.compile("[\U00010000-\U0010ffff]"),),
    types.PositionEncodingKind.Utf8: (re.compile("[^\x00-\x7f]"), re.compile("[^\x00-\u07ff]"),
                                      re.compile("[\U00010000-\U0010ffff]")),
}


class ClientColumns:
    """Positions in one file's `lines` (the editor's lines: infra.lines.numbered_lines) whose
    columns count code points, as findings and the server's edits do (Python str indices), as
    the client counts them: in the position encoding negotiated at initialize (UTF-16 code
    units unless the client offered UTF-8 or UTF-32). Sent as code points, a character outside
    the BMP before a finding misplaced its squiggle and put the `# noqa` edit inside the
    statement (campaign 10, R04). Each line's wide characters are found once: a long line with
    many findings costs a search per finding, not a walk of the line."""

    def __init__(self, lines: list[str], encoding: str | None) -> None:
        self.lines = lines
        self.wider = _ONE_UNIT_MORE.get(encoding, _ONE_UNIT_MORE[types.PositionEncodingKind.Utf16])
        self._wide: dict[int, list[list[int]]] = {}  # line -> per pattern, where its characters are

    def position(self, line: int, column: int) -> types.Position:
        if line not in self._wide:
            text = self.lines[line] if 0 <= line < len(self.lines) else ""
            self._wide[line] = [] if text.isascii() else [[m.start() for m in p.finditer(text)] for p in self.wider]
        return types.Position(line, column + sum(bisect_left(found, column) for found in self._wide[line]))


def lsp_range(finding: Diagnostic, columns: ClientColumns) -> types.Range:
    """The finding's span (flake8's columns are characters, 1-based): its own end where the check
    knows it, else the dotted name at its column, else one character."""
    line, col = max(finding.line - 1, 0), max(finding.col - 1, 0)
    if finding.end_line is not None and finding.end_col is not None:
        end_line, end_col = max(finding.end_line - 1, 0), max(finding.end_col - 1, 0)
    else:
        match = WORD.match(columns.lines[line] if line < len(columns.lines) else "", col)
        end_line, end_col = line, match.end() if match else col + 1
    return types.Range(columns.position(line, col), columns.position(end_line, end_col))


def lsp_diagnostic(finding: Diagnostic, columns: ClientColumns) -> types.Diagnostic:
    """The finding as the editor shows it; `columns`: its file's lines in the client's encoding."""
    reference = _reference(finding.code)
    return types.Diagnostic(
        range=lsp_range(finding, columns),
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
