"""Upstream targets as the project writes them: where a found target is defined, and the
upstream path a dotted name written in a project file stands for.

Shared by the monkeypatch, test-double and defensive-access contracts, which all name an
upstream attribute by a path (an assignment target, a `mock.patch` string, a `getattr`
string) rather than by a typed read.
"""

from __future__ import annotations

from sglang_contracts.analysis.resolve import ProjectView
from sglang_contracts.project.facts import FileFacts
from sglang_contracts.upstream.model import UpstreamModel, is_upstream
from sglang_contracts.upstream.targets import Target

def upstream_dotted(view: ProjectView, facts: FileFacts, written: str) -> str | None:
    """The upstream path a dotted name written in a project file stands for, if any. A name
    that starts at `sglang` with nothing in the file binding it is absolute: the scanner
    writes a module reached through `sys.modules["sglang..."]` so."""
    dotted = view.dotted(facts, written)
    if dotted is None and is_upstream(written):
        dotted = written
    return dotted if dotted and is_upstream(dotted) else None


def _recorded_line(target: Target) -> int | None:
    """The line its member's record, or else its own, gives."""
    return (target.member.record.get("line") if target.member else None) or (target.record or {}).get("line")


def _binding_line(model: UpstreamModel, origin: str) -> int | None:
    """The line where the module binds the name at `origin`, as far as it says."""
    module, _, name = origin.rpartition(".")
    record = model.module(module)
    return record.bindings.get(name, {}).get("line") if record is not None else None


def where_defined(model: UpstreamModel, target: Target) -> str:
    """`sglang/srt/x.py:12` for a found target, as far as the release says."""
    if not target.found or not target.origin:
        return ""
    relpath = model.relpath_of(target.member.owner if target.member else target.origin)
    line = _recorded_line(target)
    if line is None and target.kind in ("class", "function", "attribute"):
        line = _binding_line(model, target.origin)
    if not relpath:
        return target.origin
    return f"{relpath}:{line}" if line else relpath
