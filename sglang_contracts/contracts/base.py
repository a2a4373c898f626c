"""What every contract check receives, and the registry that maps rule codes to checks.

A check is one function per rule code: it reads the project index and the two upstream
models and yields diagnostics for contracts that held on the old release and fail on the new.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from sglang_contracts.diagnostics import Diagnostic
from sglang_contracts.project.index import ProjectIndex
from sglang_contracts.upstream.model import UpstreamModel


@dataclass
class CheckContext:
    project: ProjectIndex
    old: UpstreamModel
    new: UpstreamModel
    report_unresolved: bool = False  # also report what was already broken on the old release
    # Configuration read by individual rules (server-args-seam, fakes, patch-files), as given.
    settings: dict[str, Any] = field(default_factory=dict)
    memo: dict[str, Any] = field(default_factory=dict)  # analyses shared by several checks

    def shared(self, key: str, compute: Callable[["CheckContext"], Any]) -> Any:
        if key not in self.memo:
            self.memo[key] = compute(self)
        return self.memo[key]

    @property
    def old_version(self) -> str:
        return self.old.release.short

    @property
    def new_version(self) -> str:
        return self.new.release.short


Check = Callable[[CheckContext], Iterable[Diagnostic]]
CHECKS: dict[str, Check] = {}


def contract(code: str) -> Callable[[Check], Check]:
    """Register the check for one rule code (its documentation lives in rules/<code>.toml)."""

    def register(function: Check) -> Check:
        if code in CHECKS:
            raise ValueError(f"two checks registered for {code}")
        CHECKS[code] = function
        return function

    return register


def run_checks(context: CheckContext, codes: Iterable[str]) -> Iterator[Diagnostic]:
    for code in sorted(codes):
        yield from CHECKS[code](context)
