"""The fix run: check, apply each finding's fix to the files it points at, write them
atomically (or show the diff), and check again until nothing more can be fixed, as ruff does."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sglang_contracts.diagnostics.catalog import rule
import sglang_contracts.contracts  # noqa: F401  (registers every fix beside its check)
from sglang_contracts.contracts.base import FIXES
from sglang_contracts.diagnostics import NOT_LISTED, Diagnostic
from sglang_contracts.fix.document import (
    ChangedMeanwhile, Document, FixNotBuilt, LeftWhole, NotRewritable, not_fixed, read_only, write_atomically,
)
from sglang_contracts.fix.python import ensure_import, ensure_name_import, remove_imports_left_unused
from sglang_contracts.infra.collector import batch_collection
from sglang_contracts.infra.display import printable, printable_path, unified_text_diff
from sglang_contracts.infra.files import in_version_control_folder, os_reason, resolved
from sglang_contracts.check.runner import CheckOptions, CheckResult, run_check
from sglang_contracts.sources import pinned_release_spec

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
        # What the fixes said of the findings they left, in every document: one list the documents
        # share, read and cleared after each fix (gathered from each document, the documents times
        # the fixes: 8,000 files of one fix each took 58 s, campaign 20 R12)
        self.notes: list[str] = []
        self.refused: dict[str, NotRewritable] = {path: NotRewritable(why) for path, why in refused.items()}
        # What the round's fixes derive from the project once, not at each finding (the patch
        # stacks its build applies: every patch file parsed)
        self.derived: dict[str, Any] = {}

    def document(self, relpath: str) -> Document:
        if relpath in self.refused:
            raise self.refused[relpath]
        if relpath not in self.documents:
            try:
                self.documents[relpath] = self._open(relpath)
            except NotRewritable as error:
                self.refused[relpath] = error  # its kind too: a file too large is said at each finding
                raise
        return self.documents[relpath]

    def add_needed_imports(self) -> None:
        """The `import x` lines the round's edits need, once they are all made (a line added at
        the top earlier would move every place a later fix points at), and without those whose
        last use the edits rewrote."""
        for document in self.documents.values():
            remove_imports_left_unused(document)
            needed = [(ensure_import, (module,)) for module in sorted(document.imports_needed)]
            needed += [(ensure_name_import, pair) for pair in sorted(document.names_needed)]
            for ensure, names in needed:
                try:
                    ensure(document, *names)
                except FixNotBuilt as error:
                    document.note(1, 1, "import", f"the fix cannot be built ({error})")

    def path_of(self, relpath: str) -> Path:
        try:
            path = resolved(self.root / relpath)
        except ValueError:  # a character with no byte in this locale (UnicodeEncodeError), a NUL
            raise NotRewritable("not a name a file can have here") from None
        except OSError as error:  # a link that leads back to itself
            raise NotRewritable(os_reason(error)) from None
        if not path.is_relative_to(self.root):  # `..`, an absolute path, a link out of the project
            raise NotRewritable("outside the project")
        if in_version_control_folder(str(path), str(self.root)):  # a link into .git (campaign 14, R04)
            raise NotRewritable("in the project's version control folder")
        return path

    def _open(self, relpath: str) -> Document:
        path = self.path_of(relpath)
        if not path.is_file():
            raise NotRewritable("not a regular file")
        if read_only(path):
            raise NotRewritable("the file is read-only")
        document = Document.read(path, relpath)
        document.notes = self.notes
        return document


@dataclass
class FixReport:
    found: int = 0  # findings of the first check
    fixed: int = 0  # fixes applied (or, with --diff, that would be)
    remaining: list[Diagnostic] = field(default_factory=list)
    diffs: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # relpaths written, or that would be
    errors: list[str] = field(default_factory=list)  # a file a fix could not touch: one line each
    notes: list[str] = field(default_factory=list)  # a finding left, with why
    texts: dict[str, tuple[str, str]] = field(default_factory=dict)  # without `write`: relpath -> (before, after)
    last: CheckResult | None = None


def fix_safety(diagnostic: Diagnostic) -> str | None:
    """"safe" or "unsafe": the rule's, or the finding's own where its rule lets a finding
    say (fix_safe_when: a rewrite upstream's examples make certain); None: no fix."""
    entry = rule(diagnostic.code)
    said = diagnostic.data.get("fix_safety")
    return said if entry.fix_safe_when and said in ("safe", "unsafe") else entry.fix


def can_fix(diagnostic: Diagnostic, unsafe: bool) -> bool:
    # info: broken before the bump; NOT_LISTED: a count of findings a file does not list
    if diagnostic.code not in FIXES or diagnostic.severity == "info" or NOT_LISTED in diagnostic.data:
        return False
    return fix_safety(diagnostic) == "safe" or unsafe


def apply_fixes(result: CheckResult, unsafe: bool, notes: dict[tuple, list[str]] | None = None,
                left: dict[str, str] | None = None) -> tuple[Workspace, list[Diagnostic], list[str]]:
    """One round: every fixable finding's fix, bottom-up in each file so that an edit never moves
    a place a later fix points at. Returns the workspace, the findings fixed, and errors; what
    each fix said of the finding it left goes to `notes`, by the finding (a later round's
    finding, at a moved line, is the same finding). `left`: files an earlier round left as they
    are, with why (relpath -> reason), not opened again."""
    diagnostics = result.diagnostics
    refused = {d.path: "cannot parse this file" for d in diagnostics if d.code == UNPARSABLE} | (left or {})
    workspace = Workspace(result.project.root, refused, result)
    fixed: list[Diagnostic] = []
    errors: list[str] = []
    ordered = sorted((d for d in diagnostics if can_fix(d, unsafe)), key=lambda d: (d.path, -d.line, -d.col, d.code))
    for diagnostic in ordered:
        try:
            said = _fixed_one(diagnostic, workspace, fixed)
        except LeftWhole as error:  # said at each finding: the file could be fixed by hand
            said = [not_fixed(diagnostic.path, diagnostic.line, diagnostic.col, diagnostic.code, str(error))]
        except NotRewritable as error:
            line = f"{printable_path(diagnostic.path)}: not rewritten: {error}"
            if line not in errors:
                errors.append(line)
            continue
        if notes is not None and said:
            notes.setdefault(_key(diagnostic), said)
    workspace.add_needed_imports()
    for document in workspace.documents.values():  # an import a fix needed that could not be built
        errors += [line for line in document.notes if line not in errors]
        document.notes.clear()
    return workspace, fixed, errors


def _fixed_one(diagnostic: Diagnostic, workspace: Workspace, fixed: list[Diagnostic]) -> list[str]:
    """Apply one finding's fix (added to `fixed` when it applied); what the fix said of it."""
    document = workspace.document(diagnostic.path)
    try:
        if FIXES[diagnostic.code](diagnostic, workspace):
            fixed.append(diagnostic)
    except FixNotBuilt as error:  # the finding stays, and says why it was not fixed
        document.note(diagnostic.line, diagnostic.col, diagnostic.code, f"the fix cannot be built ({error})")
    said = list(workspace.notes)
    workspace.notes.clear()
    return said


def unified_diff(document: Document) -> str:
    return unified_text_diff(document.relpath, document.original_text, document.text)


def _key(diagnostic: Diagnostic) -> tuple:
    return diagnostic.code, diagnostic.path, diagnostic.symbol, diagnostic.message


def remaining_after(first: list[Diagnostic], fixed: list[Diagnostic], last: list[Diagnostic]) -> list[Diagnostic]:
    """What is left: the first check's findings no fix took (where the last check still has one
    alike, at its place now), and what the last check found that the first did not. Not the last
    check alone: contracts are differential, and a project already rewritten for the new release
    no longer binds on the old one, so the last check cannot see a break a fix did not touch
    (a removed keyword beside a renamed one in the same call)."""
    taken = {id(d) for d in fixed}
    now: dict[tuple, list[Diagnostic]] = {}
    for diagnostic in last:
        now.setdefault(_key(diagnostic), []).append(diagnostic)
    fixed_keys = {_key(d) for d in fixed}
    # Fixes of later rounds are findings of a re-check: each stands for one first finding alike
    # (a key holds no place, which edits move), not for every one: two findings alike in a file,
    # one fixed, left one (the summary said none).
    firsts = {id(d) for d in first}
    fixed_later = Counter(_key(d) for d in fixed if id(d) not in firsts)
    left = []
    for diagnostic in first:
        if id(diagnostic) in taken:
            continue
        if fixed_later[_key(diagnostic)]:
            fixed_later[_key(diagnostic)] -= 1
            continue
        alike = now.get(_key(diagnostic))
        left.append(alike.pop(0) if alike else diagnostic)
    first_keys = {_key(d) for d in first}
    left += [d for d in last if _key(d) not in first_keys | fixed_keys]
    return sorted(left, key=Diagnostic.sort_key)


def run_fix(paths: list[Path], options: CheckOptions, *, unsafe: bool = False, write: bool = True) -> FixReport:
    """Fix what can be fixed; with `write` False, only compute the diff (nothing is written)."""
    with batch_collection():  # the checks' results live through the run; edited trees go by reference count
        return _fixed(paths, options, unsafe, write)


def _fixed(paths: list[Path], options: CheckOptions, unsafe: bool, write: bool) -> FixReport:
    options = dataclasses.replace(options, replay=False)  # a fix needs the findings' data, not a replay
    result = run_check(paths, options)
    if options.old is None and result.pin is not None:
        # The old release stays what it was: the fix moves the project's own pin to the new one.
        options = dataclasses.replace(options, old=pinned_release_spec(result.pin.version, options.sglang_repo))
    first = result.diagnostics
    report = FixReport(found=len(first))
    fixed_all: list[Diagnostic] = []
    notes: dict[tuple, list[str]] = {}
    left: dict[str, str] = {}  # files that changed while the run worked: no later round touches them
    for _ in range(MAX_ROUNDS):
        workspace, fixed, errors = apply_fixes(result, unsafe, notes, left)
        report.errors += [e for e in errors if e not in report.errors]
        changed = [doc for doc in workspace.documents.values() if doc.changed]
        if not write:
            fixed_all += fixed
            report.diffs = [unified_diff(doc) for doc in sorted(changed, key=lambda d: d.relpath)]
            report.changed = sorted(doc.relpath for doc in changed)
            report.texts = {doc.relpath: (doc.original_text, doc.text) for doc in changed}
            break
        written = _written(workspace, changed, report, left)
        unwritten = {doc.relpath for doc in changed} - written
        fixed_all += [d for d in fixed if d.path not in unwritten]
        if not written:
            break
        result = run_check(paths, options)
        if not any(can_fix(d, unsafe) and _key(d) not in {_key(f) for f in fixed_all} for d in result.diagnostics):
            break
    report.fixed = len(fixed_all)
    report.notes = [line for said in notes.values() for line in said]
    report.remaining = remaining_after(first, fixed_all, result.diagnostics if write else first)
    report.changed.sort()
    report.last = result
    return report


def _written(workspace: Workspace, changed: list[Document], report: FixReport, left: dict[str, str]) -> set[str]:
    """Each changed document written over its file, unless the file no longer holds what was
    read (then left as it is, in `left`); the relpaths written."""
    written = set()
    for document in changed:
        try:
            write_atomically(workspace.path_of(document.relpath), document.encoded(), read=document.original)
        except ChangedMeanwhile as error:  # said as a later round's refusal is, once
            left[document.relpath] = str(error)
            report.errors.append(f"{printable_path(document.relpath)}: not rewritten: {error}")
            continue
        except (OSError, NotRewritable) as error:
            report.errors.append(f"{printable_path(document.relpath)}: not written: "
                                 f"{getattr(error, 'strerror', None) or error}")
            continue
        written.add(document.relpath)
        if document.relpath not in report.changed:
            report.changed.append(document.relpath)
    return written


def lsp_fixes(result: CheckResult, relpath: str, text: str, data: dict) -> list[tuple[str, str]]:
    """The editor's quick fix for one finding (`data`: the code and fingerprint the language
    server gave the diagnostic): (title, the file's whole new text), applied to `text`, the
    buffer as the editor has it. Offered only when the fix edits that file alone; unsafe fixes
    are offered too, their title says so (the editor's user reads each before taking it)."""
    found = [d for d in result.diagnostics if d.path == relpath and d.code == data.get("code")
             and d.fingerprint == data.get("fingerprint")]
    if not found or not can_fix(found[0], unsafe=True):
        return []
    diagnostic = found[0]
    workspace = Workspace(result.project.root, {}, result)
    try:
        document = Document(relpath, text.encode(), python=relpath.endswith(".py"))
    except NotRewritable:
        return []  # the buffer does not parse: never rewrite it
    document.notes = workspace.notes
    workspace.documents[relpath] = document
    try:
        if not FIXES[diagnostic.code](diagnostic, workspace):
            return []
    except NotRewritable:
        return []  # the fix needs another file it may not touch
    except FixNotBuilt:
        return []  # its new code cannot be built: no quick fix to offer
    workspace.add_needed_imports()
    if document.notes:  # an import it needs could not be built
        return []
    if any(other.changed for path, other in workspace.documents.items() if path != relpath) or not document.changed:
        return []
    entry = rule(diagnostic.code)
    kind = "" if fix_safety(diagnostic) == "safe" else " (unsafe: review it)"
    return [(f"Fix {diagnostic.code} ({entry.name}){kind}", document.text)]
