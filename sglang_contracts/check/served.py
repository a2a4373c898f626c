"""Findings judged against the releases their module serves (project/serving.py).

A module that serves neither release of the bump (the folder for an older release) reports
nothing; one that serves the old release only is not judged as if it ran on the new one. Where
the new release reaches a choice with no code for it (SGC106), the breaks of the modules that
choice loads on the old release are what the new release's module (a copy of them) must
change: they are kept, each grouped under that SGC106 (`grouped_under`, its `path:line:col`,
in the JSON output; its message says so).
"""

from __future__ import annotations

import dataclasses

from sglang_contracts.diagnostics import Diagnostic
from sglang_contracts.project.serving import NEW, OLD, Serving

DISPATCH_CODE = "SGC106"


def judged_as_served(diagnostics: list[Diagnostic], serving: Serving, old_version: str,
                     new_version: str) -> list[Diagnostic]:
    refusals: dict[str, Diagnostic] = {}
    for diagnostic in diagnostics:
        if diagnostic.code == DISPATCH_CODE and diagnostic.severity != "info":
            refusals.setdefault(diagnostic.path, diagnostic)
    kept = []
    for diagnostic in diagnostics:
        if serving.serves(diagnostic.path, NEW):
            kept.append(diagnostic)
            continue
        if not serving.serves(diagnostic.path, OLD):
            continue  # code for other releases: nothing of this bump
        refusal = next((refusals[path] for path in sorted(serving.dispatchers.get(diagnostic.path, ()))
                        if path in refusals), None)
        if refusal is None:
            continue  # the new release has code of its own; this module never runs there
        where = f"{refusal.path}:{refusal.line}:{refusal.col}"
        kept.append(dataclasses.replace(
            diagnostic, grouped_under=where,
            message=f"{diagnostic.message} [in code that serves sglang {old_version} only: what its copy for "
                    f"{new_version} must change, under the {DISPATCH_CODE} at {where}]"))
    return kept
