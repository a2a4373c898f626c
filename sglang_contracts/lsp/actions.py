"""Code actions on a finding: the fixes of `sglang-contracts fix`, and a `# noqa` for the line.

The fixes are `sglang_contracts.check.fixes.lsp_fixes`: (title, the file's whole new text) for
the fix of the finding `data` names (the diagnostic's data: code, symbol, fingerprint) in the
last check's result, applied to `text`, the buffer as the editor has it.
"""

from __future__ import annotations

import re
from typing import Any

from lsprotocol import types

from sglang_contracts.infra.lines import numbered_lines
from sglang_contracts.lsp.convert import ClientColumns


NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z0-9, ]+))?", re.I)


def code_actions(uri: str, result: Any, relpath: str, text: str, findings: list[types.Diagnostic],
                 encoding: str | None) -> list[types.CodeAction]:
    """Quick fixes and `# noqa` for the findings the editor asks about; `result` is the last
    check's CheckResult (None before the first); `encoding`: the client's position encoding."""
    from sglang_contracts.check.fixes import lsp_fixes  # the fix engine loads with the first request

    actions: list[types.CodeAction] = []
    lines = numbered_lines(text, keepends=True)
    columns = ClientColumns(lines, encoding)
    for finding in findings:
        data: dict[str, Any] = finding.data if isinstance(finding.data, dict) else {}
        for title, new_text in lsp_fixes(result, relpath, text, data) if result is not None else ():
            actions.append(types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[finding],
                                            is_preferred=True, edit=_whole_file_edit(uri, lines, new_text)))
        line = finding.range.start.line
        if line < len(lines):
            actions.append(types.CodeAction(
                title=f"Silence {finding.code} on this line (# noqa)", kind=types.CodeActionKind.QuickFix,
                diagnostics=[finding],
                edit=types.WorkspaceEdit(changes={uri: [_noqa_edit(columns, line, str(finding.code))]})))
    return actions


def _whole_file_edit(uri: str, lines: list[str], new_text: str) -> types.WorkspaceEdit:
    end = types.Position(len(lines), 0)
    return types.WorkspaceEdit(changes={uri: [types.TextEdit(types.Range(types.Position(0, 0), end), new_text)]})


def _noqa_edit(columns: ClientColumns, line: int, code: str) -> types.TextEdit:
    """Add the code to the line's `# noqa: ...` comment, or a new one at the line's end."""
    body = columns.lines[line].rstrip("\r\n")
    match = NOQA.search(body)
    if match and match.group("codes"):
        codes = [c.strip() for c in match.group("codes").split(",") if c.strip()]
        replacement = f"# noqa: {','.join([*codes, code])}"
        start, end = match.span()
    elif match:  # a bare `# noqa` already silences every code
        replacement, start, end = match.group(), *match.span()
    else:
        replacement, start, end = f"  # noqa: {code}", len(body), len(body)
    return types.TextEdit(types.Range(columns.position(line, start), columns.position(line, end)), replacement)
