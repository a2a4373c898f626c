"""The fix run: check, apply each finding's fix to the files it points at, write them
atomically (or show the diff), and check again until nothing more can be fixed, as ruff does."""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from pathlib import Path

from sglang_contracts.catalog import rule
from sglang_contracts.contracts.base import FIXES
from sglang_contracts.diagnostics import Diagnostic
from sglang_contracts.fix.document import Document, NotRewritable, read_only, write_atomically
from sglang_contracts.fix.python import ensure_import
from sglang_contracts.infra.files import printable_path
from sglang_contracts.runner import CheckOptions, CheckResult, run_check

# Applying fixes can uncover more (a moved import that now resolves exposes its calls); ruff
# re-checks until stable too. A bound keeps two fixes that undo each other from looping.
MAX_ROUNDS = 4
UNPARSABLE = "SGC000"


class Workspace:
    """The project files one round of fixes edits, opened once each, and those refused."""

    def __init__(self, root: Path, refused: dict[str, str], result: CheckResult | None = None) -> None:
        self.root = root.resolve()
        self.result = result  # the check the findings come from: the releases, for fixes that re-check
        self.documents: dict[str, Document] = {}
        self.refused = dict(refused)  # relpath -> why no fix may touch it

    def document(self, relpath: str) -> Document:
        if relpath in self.refused:
            raise NotRewritable(self.refused[relpath])
        if relpath not in self.documents:
            try:
                self.documents[relpath] = self._open(relpath)
            except NotRewritable as error:
                self.refused[relpath] = str(error)
                raise
        return self.documents[relpath]

    def path_of(self, relpath: str) -> Path:
        path = (self.root / relpath).resolve()
        if not path.is_relative_to(self.root):  # `..`, an absolute path, a link out of the project
            raise NotRewritable("outside the project")
        return path

    def _open(self, relpath: str) -> Document:
        path = self.path_of(relpath)
        if not path.is_file():
            raise NotRewritable("not a regular file")
        if read_only(path):
            raise NotRewritable("the file is read-only")
        return Document.read(path, relpath)


@dataclass
class FixReport:
    found: int = 0  # findings of the first check
    fixed: int = 0  # fixes applied (or, with --diff, that would be)
    remaining: list[Diagnostic] = field(default_factory=list)
    diffs: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # relpaths written, or that would be
    errors: list[str] = field(default_factory=list)  # a file a fix could not touch: one line each
    notes: list[str] = field(default_factory=list)  # a finding left, with why
    last: CheckResult | None = None


def can_fix(diagnostic: Diagnostic, unsafe: bool) -> bool:
    if diagnostic.code not in FIXES or diagnostic.severity == "info":  # info: broken before the bump
        return False
    return rule(diagnostic.code).fix == "safe" or unsafe


def apply_fixes(result: CheckResult, unsafe: bool) -> tuple[Workspace, int, list[str]]:
    """One round: every fixable finding's fix, bottom-up in each file so that an edit never moves
    a place a later fix points at. Returns the workspace, how many fixes applied, and errors."""
    diagnostics = result.diagnostics
    refused = {d.path: "cannot parse this file" for d in diagnostics if d.code == UNPARSABLE}
    workspace = Workspace(result.project.root, refused, result)
    fixed = 0
    errors: list[str] = []
    ordered = sorted((d for d in diagnostics if can_fix(d, unsafe)), key=lambda d: (d.path, -d.line, -d.col, d.code))
    for diagnostic in ordered:
        try:
            workspace.document(diagnostic.path)
            fixed += bool(FIXES[diagnostic.code](diagnostic, workspace))
        except NotRewritable as error:
            line = f"{printable_path(diagnostic.path)}: not rewritten: {error}"
            if line not in errors:
                errors.append(line)
    for document in workspace.documents.values():
        for module in sorted(document.imports_needed):
            ensure_import(document, module)
    return workspace, fixed, errors


def unified_diff(document: Document) -> str:
    before = document.original.decode(document.encoding).splitlines(keepends=True)
    after = document.text.splitlines(keepends=True)
    name = printable_path(document.relpath)
    lines = difflib.unified_diff(before, after, fromfile=f"a/{name}", tofile=f"b/{name}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def run_fix(paths: list[Path], options: CheckOptions, *, unsafe: bool = False, write: bool = True) -> FixReport:
    """Fix what can be fixed; with `write` False, only compute the diff (nothing is written)."""
    options = dataclasses.replace(options, replay=False)  # a fix needs the findings' data, not a replay
    result = run_check(paths, options)
    if options.old is None and result.pin is not None:
        # The old release stays what it was: the fix moves the project's own pin to the new one.
        options = dataclasses.replace(options, old=result.pin[0])
    report = FixReport(found=len(result.diagnostics))
    for _ in range(MAX_ROUNDS):
        workspace, fixed, errors = apply_fixes(result, unsafe)
        report.errors += [e for e in errors if e not in report.errors]
        for document in workspace.documents.values():
            report.notes += [n for n in document.notes if n not in report.notes]
        changed = [doc for doc in workspace.documents.values() if doc.changed]
        if not write:
            report.fixed += fixed
            report.diffs = [unified_diff(doc) for doc in sorted(changed, key=lambda d: d.relpath)]
            report.changed = sorted(doc.relpath for doc in changed)
            report.remaining = [d for d in result.diagnostics if not can_fix(d, unsafe)]
            break
        written = 0
        for document in changed:
            try:
                write_atomically(workspace.path_of(document.relpath), document.encoded())
            except (OSError, NotRewritable) as error:
                report.errors.append(f"{printable_path(document.relpath)}: not written: "
                                     f"{getattr(error, 'strerror', None) or error}")
                continue
            written += 1
            if document.relpath not in report.changed:
                report.changed.append(document.relpath)
        report.fixed += fixed if written else 0
        if not written:
            report.remaining = result.diagnostics
            break
        result = run_check(paths, options)
        report.remaining = result.diagnostics
        if not any(can_fix(d, unsafe) for d in result.diagnostics):
            break
    report.changed.sort()
    report.last = result
    return report
