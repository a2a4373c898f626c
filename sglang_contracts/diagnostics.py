"""Diagnostics: what a contract reports, and the filters a user applies (select, ignore, noqa)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable

from sglang_contracts.catalog import rule
from sglang_contracts.project.facts import FileFacts, Position


@dataclass(frozen=True)
class Diagnostic:
    path: str
    line: int
    col: int
    code: str
    severity: str  # error, warning, or info (a contract already broken on the old release)
    message: str
    symbol: str  # the upstream qualified name the contract is about

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.col, self.code, self.message)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def finding(code: str, facts: FileFacts, position: Position, symbol: str, *,
            severity: str | None = None, **fields: Any) -> Diagnostic:
    """A diagnostic for `code`, its message rendered from the catalog's template."""
    return finding_at(code, facts.path, position.line, position.col, symbol, severity=severity, **fields)


def finding_at(code: str, path: str, line: int, col: int, symbol: str, *,
               severity: str | None = None, **fields: Any) -> Diagnostic:
    """The same for a place in any project file (a Dockerfile, a pyproject, a .patch)."""
    entry = rule(code)
    return Diagnostic(
        path=path,
        line=line,
        col=col,
        code=code,
        severity=severity or entry.severity,
        message=entry.render({"symbol": symbol, **fields}, unresolved=severity == "info"),
        symbol=symbol,
    )


def code_selected(code: str, select: Iterable[str], ignore: Iterable[str]) -> bool:
    """ruff's prefix semantics: the longest matching prefix of --select/--ignore decides."""
    best_select = max((len(p) for p in select if code.startswith(p)), default=-1)
    best_ignore = max((len(p) for p in ignore if code.startswith(p)), default=-1)
    return best_select >= 0 and best_select > best_ignore


def suppressed(diagnostic: Diagnostic, noqa: dict[int, list[str] | None]) -> bool:
    if diagnostic.line not in noqa:
        return False
    codes = noqa[diagnostic.line]
    return codes is None or diagnostic.code in codes
