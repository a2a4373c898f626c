"""What every contract check receives, and the registry that maps rule codes to checks.

A check is one function per rule code: it reads the project index and the two upstream
models and yields diagnostics for contracts that held on the old release and fail on the new.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from sglang_contracts.diagnostics import Diagnostic
from sglang_contracts.infra.boundary import Problem, collecting_problems, note, problem_for
from sglang_contracts.infra.memo import Codec, KeptMemo, KeptPerReleasePair
from sglang_contracts.infra.parallel import start_forked
from sglang_contracts.project.facts import FileFacts
from sglang_contracts.project.index import ProjectIndex
from sglang_contracts.project.serving import Serving
from sglang_contracts.project.texts import held
from sglang_contracts.infra.pysource import source_depth
from sglang_contracts.upstream.model import UpstreamModel

if TYPE_CHECKING:
    from sglang_contracts.check.fixes import Workspace


@dataclass
class CheckContext:
    project: ProjectIndex
    old: UpstreamModel
    new: UpstreamModel
    report_unresolved: bool = False  # also report what was already broken on the old release
    # Configuration read by individual rules (server-args-seam, fakes, patch-files), as given.
    settings: dict[str, Any] = field(default_factory=dict)
    memo: dict[str, Any] = field(default_factory=dict)  # analyses shared by several checks
    # Analyses of the two releases alone, kept by a resident process for as long as it keeps
    # both models (resident/engine.py; a fresh run starts with an empty one).
    releases_memo: dict[str, Any] = field(default_factory=dict)
    # Analyses of the whole project's facts that no position enters, and of the releases: kept
    # by a resident process while every file it re-read changed only where its code sits
    # (incremental.moved_only), with the same models (a fresh run starts with an empty one).
    placeless_memo: dict[str, Any] = field(default_factory=dict)
    # What the checks read of the project's files that are not Python (requirements, scripts,
    # Dockerfiles, patches) and of setup.py, with the releases: kept by a resident process while
    # the run's inputs but its Python files (incremental.py's salt) and setup.py are the same.
    files_memo: dict[str, Any] = field(default_factory=dict)
    # The files whose findings this run keeps (None: every file). A run that recomputes a few
    # files (incremental.py) keeps only theirs: the loops that report in the file they walk
    # walk these (checked_files), while what is looked up across files sees every file.
    checked: frozenset[str] | None = None
    # Which releases each project module serves (project/serving.py), from every file's imports
    # as written, version branches for the old release included; None where no run computed it.
    serving: Serving | None = None
    # The rules this process's run_checks runs: what a shared analysis may prepare for at once
    # (the migrations every one of them will ask about, learned in one pass: analysis/migrated.py).
    running: frozenset[str] = frozenset()
    # The files whose text an analysis read beyond their facts (astroid's inference at a site):
    # what a kept placeless value rests on besides the facts (KeptMemo)
    texts_read: set[str] = field(default_factory=set)

    def checked_files(self) -> list[FileFacts]:
        """The facts of the files whose findings this run keeps, in the project's order."""
        files = self.project.files
        if self.checked is None:
            return list(files.values())
        return [facts for rel, facts in files.items() if rel in self.checked]

    def shared(self, key: str, compute: Callable[["CheckContext"], Any]) -> Any:
        if key not in self.memo:
            self.memo[key] = compute(self)
        return self.memo[key]

    def of_releases(self, key: str, compute: Callable[["CheckContext"], Any]) -> Any:
        """`shared` for what `compute` derives from `old` and `new` alone (never the project's
        files or settings): kept from run to run while both releases are."""
        if key not in self.releases_memo:
            self.releases_memo[key] = compute(self)
        return self.releases_memo[key]

    def of_placeless_project(self, key: str, compute: Callable[["CheckContext"], Any], codec: Codec | None = None) -> Any:
        """`shared` for what `compute` derives from the releases and every project file's facts
        but their positions (no position, line or column may be in what it returns, nor decide
        it), under this run's settings: kept from run to run while those are the same, and,
        given a `codec`, from one process to the next (KeptMemo)."""
        key = f"{key}\0{json.dumps([self.settings, self.report_unresolved], sort_keys=True, default=repr)}"
        if key not in self.placeless_memo:
            self.placeless_memo[key] = self._kept_or_computed(key, compute, codec)
        return self.placeless_memo[key]

    def _kept_or_computed(self, key: str, compute: Callable[["CheckContext"], Any], codec: Codec | None) -> Any:
        memo = self.placeless_memo
        if codec is None or not isinstance(memo, KeptMemo):
            return compute(self)
        encoded = memo.read(key)
        if encoded is not None:
            try:
                return codec.decode(encoded)
            except (KeyError, TypeError, ValueError, IndexError):  # another shape: computed again
                pass
        value = compute(self)
        memo.write(key, codec.encode(value), sorted(self.texts_read))
        return value

    def of_stack_files(self, key: str, compute: Callable[["CheckContext"], Any]) -> Any:
        """`shared` for what `compute` reads of the project's files that are not Python and of
        setup.py, and derives from them, the settings and the releases alone (see files_memo).
        What it could not read (SGC000) is noted again in each run that uses it."""
        if key not in self.memo:
            if key not in self.files_memo:
                with collecting_problems() as noted:
                    value = compute(self)
                self.files_memo[key] = (value, list(noted))
            value, problems = self.files_memo[key]
            for problem in problems:
                note(problem)
            self.memo[key] = value
        return self.memo[key]

    @property
    def old_version(self) -> str:
        return self.old.release.short

    @property
    def new_version(self) -> str:
        return self.new.release.short


Check = Callable[[CheckContext], Iterable[Diagnostic]]
CHECKS: dict[str, Check] = {}


class Reads(Enum):
    """What a rule's finding in one file may rest on: what an incremental re-check must check
    again after an edit (check/incremental.py). Declared by every rule (`@contract(reads=...)`);
    tests/check/test_incremental.py fails a rule that declares too little."""

    # The file itself and the outlines (incremental.OUTLINE_FACTS) of the files it imports:
    # checked again with the changed files and their importers.
    FILE_AND_IMPORTS = "file-and-imports"
    # Also the imports of files it does not import (the first import anywhere that reaches a
    # package, a patch target named by its string, the modules imported anywhere): checked over
    # every file after an edit of imports alone (incremental.plan).
    IMPORTS_ANYWHERE = "imports-anywhere"
    # Also the members of classes in files it does not import (which attributes any project
    # class provides): checked over every file after an edit of class members alone (a method,
    # a `self.x = ...`: incremental.members_digest). A rule that needs this and IMPORTS_ANYWHERE
    # declares WHOLE_PROJECT.
    MEMBERS_ANYWHERE = "members-anywhere"
    # What another file holds beyond its outline: its calls, reads and probes, its text, the
    # rows each_file reads of it. Checked over every file at every edit, keeping none of its
    # last findings.
    WHOLE_PROJECT = "whole-project"


class Process(Enum):
    """Which process of a one-shot run checks a rule (run_checks_in_two). A daemon or the
    language server checks every rule in one process."""

    MAIN = "main"
    # The forked copy: the rules whose analyses read every file of a release (imports' hints,
    # the import graph, a patched function's importers, the copies' citations), which then
    # share the texts they read; about half of a cold run's checks (sglang-omni: 4.1 and 4.2 s
    # of CPU).
    COPY = "copy"


# The codes of each declaration, as check/runner.py and incremental.py read them.
WHOLE_PROJECT: set[str] = set()
IMPORTS_ANYWHERE: set[str] = set()
MEMBERS_ANYWHERE: set[str] = set()
IN_COPY: set[str] = set()  # Process.COPY
READS: dict[str, Reads] = {}
# What the checks read of every file's imports for the whole project and that seldom changes
# (does the file import ServerArgs at all): each file's part is in its outline
# (incremental.outline_digest), so that an edit that changes it recomputes every file.
IMPORT_OUTLINES: dict[str, Callable[[FileFacts], Any]] = {}


def import_outline(name: str) -> Callable[[Callable[[FileFacts], Any]], Callable[[FileFacts], Any]]:
    """Register what a file's imports give to a project-wide analysis (see IMPORT_OUTLINES):
    a JSON value of the file's import facts alone, positions left out."""

    def register(function: Callable[[FileFacts], Any]) -> Callable[[FileFacts], Any]:
        if name in IMPORT_OUTLINES:
            raise ValueError(f"two import outlines named {name}")
        IMPORT_OUTLINES[name] = function
        return function

    return register


def contract(code: str, *, reads: Reads, process: Process) -> Callable[[Check], Check]:
    """Register the check for one rule code, named as the rule is (`imported-name-removed`:
    `imported_name_removed`); its documentation and report group live in rules/<code>.toml.
    `reads`: what its finding in one file may rest on (Reads); `process`: where a one-shot run
    checks it (Process). Both are the rule's to declare: neither has a default."""
    if not isinstance(reads, Reads) or not isinstance(process, Process):
        raise TypeError(f"{code}: reads must be a Reads and process a Process")

    def register(function: Check) -> Check:
        if code in CHECKS:
            raise ValueError(f"two checks registered for {code}")
        CHECKS[code] = function
        READS[code] = reads
        {Reads.WHOLE_PROJECT: WHOLE_PROJECT, Reads.IMPORTS_ANYWHERE: IMPORTS_ANYWHERE,
         Reads.MEMBERS_ANYWHERE: MEMBERS_ANYWHERE}.get(reads, set()).add(code)
        if process is Process.COPY:
            IN_COPY.add(code)
        return function

    return register


# A fix rewrites the place one finding points at, in the project files of the workspace
# (`workspace.document(path)`): True when it changed one; why it cannot goes to `document.note`.
Fixer = Callable[[Diagnostic, "Workspace"], bool]
FIXES: dict[str, Fixer] = {}


def fixes(code: str) -> Callable[[Fixer], Fixer]:
    """Register the fix for one rule code, beside its check (safe or unsafe: rules/<code>.toml)."""

    def register(function: Fixer) -> Fixer:
        if code in FIXES:
            raise ValueError(f"two fixes registered for {code}")
        FIXES[code] = function
        return function

    return register


# A rule that fails on this many files is given up: the fault is not the files'.
MAX_FILES_SKIPPED = 3


def run_checks(context: CheckContext, codes: Iterable[str], problems: list[Problem]) -> Iterator[Diagnostic]:
    """Every rule's findings. A rule that raises is run again without the project file it was
    analysing (found in the traceback), so one bad file costs that file's part of the rule,
    not the rule; what was lost is added to `problems`."""
    codes = sorted(codes)
    context = dataclasses.replace(context, running=context.running | frozenset(codes))
    for code in codes:
        yield from _guarded(context, code, problems)
    for value in list(context.releases_memo.values()):
        if isinstance(value, KeptPerReleasePair):
            value.keep()


COPY_GRACE = 60.0  # seconds the copy may take beyond three times the first half's time
# Below this much text in the files that hold contracts the checks take a few tens of
# milliseconds, which a fork, the copy's result and its wait cost as much as they save: a 250 KB
# slice of sglang-omni checked in 157 ms alone and 161-179 ms in two; in a process that holds
# more (a test session of 600 MB) the fork cost 60 ms of each check of the fixture project.
COPY_WORTH = 256 * 1024


def worth_a_copy(project: ProjectIndex) -> bool:
    """Whether the project's checks are long enough to share with a forked copy (COPY_WORTH)."""
    size = 0
    for relpath in project.files:
        size += len(held(project.texts, relpath)) if relpath in project.texts else 0
        if size >= COPY_WORTH:
            return True
    return False


def run_checks_in_two(context: CheckContext, codes: Iterable[str], problems: list[Problem]) -> set[Diagnostic]:
    """`run_checks` on two cores: a forked copy of this process (which has the project and
    both models as they are) runs the checks declared Process.COPY while this one runs the
    others (run_parts_in_two)."""
    codes = sorted(codes)
    second = [code for code in codes if code in IN_COPY]
    return run_parts_in_two((context, [code for code in codes if code not in second]), (context, second), problems)


def run_parts_in_two(first: tuple[CheckContext, list[str]], second: tuple[CheckContext, list[str]],
                     problems: list[Problem]) -> set[Diagnostic]:
    """The findings of `first`'s checks on its context, run here, and of `second`'s on its
    context, run at the same time by a forked copy of this process (which has the project and
    both models as they are): a full run's two halves, or a re-check's rules of the edited
    files and those of the whole project. What the copy learns beside its findings comes back
    with them: the problems it met (its rules', the files its analyses could not read, the
    upstream modules it could not load or read as released, which are loaded here again so
    the report names them). When the copy fails, or stalls (COPY_GRACE), its checks run
    here. For a one-shot run only (infra/parallel.py start_forked)."""
    (here, first_codes), (there, second_codes) = first, second
    models = (there.old, there.new)
    known_problems = len(there.project.problems)
    reported = [_reported_modules(model) for model in models]

    def in_the_copy() -> tuple:
        for tree in {id(model.tree): model.tree for model in models}.values():
            tree.in_forked_copy()
        own: list[Problem] = []
        with collecting_problems() as noted:
            found = list(run_checks(there, second_codes, own))
        unreadable = [sorted(_reported_modules(model) - before) for model, before in zip(models, reported)]
        return found, own, noted, there.project.problems[known_problems:], unreadable, there.project.asked

    waiting = start_forked(in_the_copy) if second_codes and first_codes else (lambda patience=None: None)
    started = time.monotonic()
    try:
        found = set(run_checks(here, first_codes, problems))
    except BaseException:
        waiting(0)  # the run ends here: the copy is stopped, not left behind
        raise
    # The halves take about as long: a copy far behind is stalled, not slow.
    result = waiting(COPY_GRACE + 3 * (time.monotonic() - started))
    if result is None:
        found.update(run_checks(there, second_codes, problems))
        return found
    diagnostics, own, noted, project_problems, unreadable, asked = result
    found.update(diagnostics)
    problems.extend(own)
    there.project.asked.update(asked)  # the per-file tables the copy's rules read
    for problem in noted:
        note(problem)
    there.project.problems.extend(project_problems)
    for model, names in zip(models, unreadable):
        for name in names:
            model.module(name)
    return found


def _reported_modules(model: UpstreamModel) -> set[str]:
    """The modules loaded so far that the report names: those that could not be read or
    analysed, and those the patch stack left unanalysable (read as released)."""
    return {name for name, *_ in model.problems()} | set(model.read_as_released)


def _guarded(context: CheckContext, code: str, problems: list[Problem]) -> list[Diagnostic]:
    skipped: set[str] = set()
    current = context
    while True:
        try:
            return list(CHECKS[code](current))
        except Exception as error:
            relpath = _file_being_analysed(error, current.project)
            text = context.project.texts.get(relpath or "")
            problems.append(problem_for(error, relpath or "", f"rule {code}",
                                        depth=(lambda: source_depth(text)) if text is not None else None))
            if relpath is None or len(skipped) >= MAX_FILES_SKIPPED - 1:
                return []
            skipped.add(relpath)
            project = dataclasses.replace(context.project, files={
                rel: facts for rel, facts in context.project.files.items() if rel not in skipped})
            current = dataclasses.replace(context, project=project, memo=dict(context.memo))


def _file_being_analysed(error: BaseException, project: ProjectIndex) -> str | None:
    """The project file whose facts the innermost frame of the traceback that holds any had."""
    found = None
    trace = error.__traceback__
    while trace is not None:
        for value in trace.tb_frame.f_locals.values():
            if isinstance(value, FileFacts) and value.path in project.files:
                found = value.path
        trace = trace.tb_next
    return found
