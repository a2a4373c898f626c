"""What upstream's own code did, between two releases, with the APIs a run's findings are
about: their uses in the old release (by resolved target), each paired with its counterpart in
the new release, their edits generalised into variants.

Every API a run asks about is learned in one pass over the old release: the files that name
any of them are found in one search, each is parsed once (with its counterpart in the new
release, and the scanner's receiver types only where a question needs them), and its uses are
resolved once and handed to the question whose target they resolve to. A pass reads at most
FILE_BUDGET of the old release's files; a question whose files do not fit is answered "not
learned: budget", never silently left out. What a pass learned is kept in one cache record
per release pair (and learner), for releases whose content cannot change (a published
version, a commit), and read back by the next run."""

from __future__ import annotations

import ast
import difflib
import hashlib
import sys
from dataclasses import dataclass, field
from typing import Callable, Iterable

from sglang_contracts.infra.cache import code_fingerprint
from sglang_contracts.infra.lines import numbered_lines
from sglang_contracts.infra.shapes import ListOf, TableOf
from sglang_contracts.infra.wording import plural
from sglang_contracts.migrations import edits, pairing, sites
from sglang_contracts.migrations.edits import Variant
from sglang_contracts.migrations.pairing import Statement
from sglang_contracts.migrations.sites import ReleaseFile, read_release_file
from sglang_contracts.project import scanner
from sglang_contracts.upstream.bodies import unparsed
from sglang_contracts.upstream.model import Signature, UpstreamModel

# The old release's files one pass may read (each with its counterpart in the new release):
# sglang-omni 0.1.8's bump asks about 12 APIs named in some 260 files of 0.5.21.
FILE_BUDGET = 600
LEARNER = code_fingerprint(edits, pairing, sites, scanner, sys.modules[__name__])


@dataclass(frozen=True)
class Question:
    """An API a finding asks about: `calls` of a callable (its owner in each release, as the
    call contracts name them: `pkg.mod.Class.__init__`), `reads` of an attribute of a class
    (`pkg.mod.Class`, `attr`), or `imports` from a lost module."""

    kind: str
    subject: tuple[str, ...]

    @property
    def key(self) -> str:
        return "\0".join((self.kind, *self.subject))

    @property
    def needle(self) -> str:
        """A text every file that uses the API holds (the callee's name, `.attr`, the module's tail)."""
        if self.kind == "calls":
            parts = self.subject[0].split(".")
            return parts[-2] if parts[-1] == "__init__" else parts[-1]
        if self.kind == "reads":
            return f".{self.subject[1]}"
        return self.subject[0].rpartition(".")[2]

    def mentioned_in(self, text: str) -> bool:
        if self.kind == "reads":  # the owner's class is named where its instances are typed
            return self.needle in text and self.subject[0].rpartition(".")[2] in text
        if self.kind == "imports":
            parts = self.subject[0].split(".")
            return (".".join(parts[-2:]) in text or f"from .{parts[-1]} import" in text) if len(parts) > 1 \
                else self.subject[0] in text
        return self.needle in text


@dataclass(frozen=True)
class Answer:
    """What upstream did with one API: its edits, or why they were not learned."""

    variants: list[Variant] = field(default_factory=list)
    unlearned: str = ""  # "budget: ..." when the pass could not read the files that use it


class Migrations:
    """The learned migrations of one release pair, asked by the checks (CheckContext.of_releases).
    The questions a run will ask are `expect`ed first, so the first one asked learns them all."""

    def __init__(self, old: UpstreamModel, new: UpstreamModel, budget: int | None = None) -> None:
        self.old, self.new = old, new
        self.budget = FILE_BUDGET if budget is None else budget
        self._answers: dict[str, Answer] = {}
        self._expected: dict[str, Question] = {}
        identities = (old.release.identity, new.release.identity)
        self._record = hashlib.sha256(f"{LEARNER}\0migrations\0{identities}".encode()).hexdigest() \
            if all(identities) else None
        self.files_read = 0  # the old release's files the passes read (benchmarks, tests)

    # -- what the checks ask ---------------------------------------------------------------------

    def expect(self, questions: Iterable[Question]) -> None:
        """Questions the run will ask: learned together when the first question is."""
        for question in questions:
            if question.key not in self._answers:
                self._expected.setdefault(question.key, question)

    def calls(self, old_owner: str, new_owner: str) -> Answer:
        """How upstream rewrote its calls of a callable."""
        return self.answer(Question("calls", (old_owner, new_owner)))

    def reads(self, owner: str, attr: str) -> Answer:
        """How upstream rewrote its reads of `attr` on instances of the class `owner` defines it in."""
        return self.answer(Question("reads", (owner, attr)))

    def imports(self, module: str) -> Answer:
        """Where upstream's own `from <module> import ...` statements went (slot `module`)."""
        return self.answer(Question("imports", (module,)))

    def answer(self, question: Question) -> Answer:
        if question.key not in self._answers:
            self._expected.setdefault(question.key, question)
            self._learn(list(self._expected.values()))
            self._expected.clear()
        return self._answers[question.key]

    # -- one pass --------------------------------------------------------------------------------

    def _learn(self, questions: list[Question]) -> None:
        kept = self._kept()
        unknown = []
        for question in questions:
            if question.key in kept:
                self._answers[question.key] = Answer(kept[question.key])
            else:
                unknown.append(question)
        if not unknown:
            return
        learned = _Pass(self, unknown).run()
        self._answers.update(learned)
        if self._record is not None:
            # Read again: the run's other process may have kept what it learned meanwhile.
            rows = {key: [variant.to_json() for variant in variants] for key, variants in self._kept().items()}
            rows.update({key: [variant.to_json() for variant in answer.variants]
                         for key, answer in learned.items() if not answer.unlearned})
            self.old.cache.put(self._record, rows)

    def _kept(self) -> dict[str, list[Variant]]:
        """The record of this release pair: question key -> variants."""
        # question key -> each variant's to_json (a damaged one reads back as None: _read_back)
        raw = self.old.cache.get(self._record, TableOf(ListOf(object))) if self._record is not None else None
        if raw is None:
            return {}
        found = {}
        for key, rows in raw.items():
            variants = _read_back(rows)
            if variants is not None:  # a damaged entry is learned again
                found[key] = variants
        return found


class _Pass:
    """One pass over the old release for a set of questions."""

    def __init__(self, migrations: Migrations, questions: list[Question]) -> None:
        self.old, self.new = migrations.old, migrations.new
        self.migrations = migrations
        self.questions = questions
        self.found: dict[str, list[Variant]] = {question.key: [] for question in questions}
        self.new_signatures: dict[str, Signature | None] = {}

    def run(self) -> dict[str, Answer]:
        candidates = self._candidates()
        answers, admitted, files = self._admitted(candidates)
        by_file: dict[str, list[Question]] = {}
        for question in admitted:
            for relpath in candidates[question.key]:
                by_file.setdefault(relpath, []).append(question)
        for relpath in sorted(by_file):
            self.migrations.files_read += 1
            self._learn_file(relpath, by_file[relpath])
        answers.update({question.key: Answer(edits.merged(self.found[question.key])) for question in admitted})
        return answers

    def _candidates(self) -> dict[str, list[str]]:
        """question key -> the old release's files that mention its API and changed in the new
        release (an unchanged file migrated nothing), from one search over the release."""
        found: dict[str, list[str]] = {question.key: [] for question in self.questions}
        needles = sorted({question.needle for question in self.questions})
        for relpath, text in self.old.texts_mentioning_any(needles):
            asking = [question for question in self.questions if question.mentioned_in(text)]
            if asking and self.new.tree.readable_source(relpath) != text:
                for question in asking:
                    found[question.key].append(relpath)
        return found

    def _admitted(self, candidates: dict[str, list[str]]) -> tuple[dict[str, Answer], list[Question], set[str]]:
        """The questions whose files fit in the budget, the fewest files first (a question
        too wide for the pass leaves room for many narrow ones), and an answer for the others."""
        budget = self.migrations.budget
        files: set[str] = set()
        admitted, answers = [], {}
        for question in sorted(self.questions, key=lambda q: (len(candidates[q.key]), q.key)):
            wanted = files | set(candidates[question.key])
            if len(wanted) <= budget:
                files = wanted
                admitted.append(question)
            else:
                answers[question.key] = Answer(unlearned=(
                    f"budget (upstream uses it in {plural(len(candidates[question.key]), 'changed file')}; a run "
                    f"reads at most {budget}, {len(files)} of them taken by narrower questions)"))
        return answers, admitted, files

    def _learn_file(self, relpath: str, questions: list[Question]) -> None:
        changed = _changed_lines(self.old.tree.readable_source(relpath) or "", self.new.tree.readable_source(relpath) or "")
        # A read upstream rewrote is on a line it changed: a file with none is not parsed for it.
        questions = [question for question in questions if question.kind != "reads"
                     or any(question.needle in line for line in changed.values())]
        old_file = read_release_file(self.old, relpath) if questions else None
        if old_file is None:
            return
        pairs = _FilePair(self, old_file, set(changed))
        calls = [question for question in questions if question.kind == "calls"]
        if calls:
            self._learn_calls(pairs, calls)
        for question in questions:
            if question.kind == "reads":
                self._learn_reads(pairs, question)
            elif question.kind == "imports":
                self._learn_imports(pairs, question)

    def _learn_calls(self, pair: "_FilePair", questions: list[Question]) -> None:
        """Each call of the file named like a question's callee, resolved once, to the question
        its target is."""
        asked = {question.subject[0]: question for question in questions}
        old_file = pair.old_file
        uses: dict[str, list[tuple[str, ast.Call]]] = {}
        signatures: dict[int, Signature] = {}
        for scope, node in _calls_named(pair, {question.needle for question in questions}):
            if not pair.changed(node):
                continue  # a call upstream left as it was, the call's lines and all: no edit
            signature = sites.node_signature(self.old, old_file, node)
            if signature is not None and signature.owner in asked:
                uses.setdefault(signature.owner, []).append((scope, node))
                signatures[id(node)] = signature
        for owner, nodes in uses.items():
            question = asked[owner]
            new_owner = question.subject[1]
            for old_node, new_node, new_file, defined in pair.counterparts(nodes):
                new_signature = self._new_signature(new_file, old_node, new_node, new_owner)
                if new_signature is None or new_signature.owner != new_owner:
                    continue
                edit = edits.call_edit(old_node, new_node, _keywords(signatures[id(old_node)]), _keywords(new_signature))
                if edit is not None:
                    self.found[question.key].append(edits.generalised(
                        edit[0], edit[1], new_file.at.lines, pair.bound, old_file.at.lines,
                        f"{old_file.relpath}:{old_node.lineno}", defined))

    def _new_signature(self, new_file: ReleaseFile, old_node: ast.AST, new_node: ast.AST, new_owner: str
                       ) -> Signature | None:
        """What the counterpart calls: through its file's imports, else (a method's receiver,
        which only the scanner types) the callable the old call bound to, where it calls it
        the same way (`batch.filter_batch(...)` in both)."""
        if not isinstance(new_node, ast.Call):
            return None
        found = sites.node_signature(self.new, new_file, new_node, scan=False)
        if found is None and unparsed(new_node.func) == unparsed(old_node.func):
            if new_owner not in self.new_signatures:
                self.new_signatures[new_owner] = sites.owner_signature(self.new, new_owner)
            found = self.new_signatures[new_owner]
        return found

    def _learn_imports(self, pair: "_FilePair", question: Question) -> None:
        module = question.subject[0]
        old_file = pair.old_file
        uses = [(None, node) for node in sites.statements_below(old_file.tree)
                if isinstance(node, ast.ImportFrom) and sites.imported_from(old_file, node) == module]
        for old_node, new_node, new_file, _ in pair.counterparts(uses):
            if not isinstance(new_node, ast.ImportFrom) \
                    or {a.name for a in new_node.names} != {a.name for a in old_node.names}:
                continue
            moved = sites.imported_from(new_file, new_node)
            if moved == module:
                continue
            self.found[question.key].append(Variant(
                before=(("module", module),), after=(("module", moved),), imports=(), foreign=(),
                templates=(("module", (moved,)),), shown_before=f"from {module}", shown_after=f"from {moved}",
                where=f"{old_file.relpath}:{old_node.lineno}"))

    def _learn_reads(self, pair: "_FilePair", question: Question) -> None:
        owner, attr = question.subject
        old_file = pair.old_file
        reads: dict[int, ast.Attribute] = {}
        scopes: dict[int, str] = {}
        # The scanner's receiver types cost more than the parse: asked only where a read changed.
        if not any(node.attr == attr and pair.changed(node) for node in old_file.attributes.values()):
            return
        for read in old_file.facts.reads if old_file.facts is not None else ():
            if read.attr != attr:
                continue
            node = old_file.attributes.get((read.position.line, read.position.col))
            if node is not None and pair.changed(node) and sites.read_owner(self.old, old_file, read) == owner:
                reads[id(node)], scopes[id(node)] = node, read.scope
        # The use is the read with what is read on it in turn: `req.extend_range.end`; where
        # that has no counterpart, the call it is the one argument of (`len(req.prefix_indices)`
        # -> `req.prefix_len`).
        uses = [(scopes[key], old_file.chain_above(node)[-1]) for key, node in reads.items()]
        paired = list(pair.counterparts(uses))
        done = {id(old_node) for old_node, *_ in paired}
        wrapped = [(scope, old_file.wrapping[id(node)]) for scope, node in uses
                   if id(node) not in done and id(node) in old_file.wrapping]
        for old_node, new_node, new_file, defined in paired + list(pair.counterparts(wrapped)):
            old_node, new_node = _without_common_members(old_node, new_node, reads)
            if not isinstance(new_node, ast.expr) or unparsed(old_node) == unparsed(new_node):
                continue
            read = next(node for node in sites.chain_above_inside(old_node) if id(node) in reads)
            self.found[question.key].append(edits.generalised(
                [("expr", old_node)], [("expr", new_node)], new_file.at.lines, pair.bound, old_file.at.lines,
                f"{old_file.relpath}:{old_node.lineno}", defined, receiver=unparsed(read.value)))


class _FilePair:
    """One old-release file and its counterpart in the new release, each parsed once for every
    question that reads them, with each scope's statements aligned once."""

    def __init__(self, learning: _Pass, old_file: ReleaseFile, changed_lines: set[int]) -> None:
        self.learning, self.old_file, self.changed_lines = learning, old_file, changed_lines
        self.old_scopes = pairing.scoped_statements(old_file.tree)
        self._alignments: dict[str, dict[int, int]] = {}

    def changed(self, node: ast.AST) -> bool:
        """Whether upstream changed a line of the node (the old release's lines)."""
        first = node.lineno
        return any(line in self.changed_lines for line in range(first, (node.end_lineno or first) + 1))

    @property
    def new_file(self) -> ReleaseFile | None:
        if not hasattr(self, "_new_file"):
            self._new_file = read_release_file(self.learning.new, self.old_file.relpath)
            self._new_scopes = pairing.scoped_statements(self._new_file.tree) if self._new_file is not None else {}
        return self._new_file

    def counterparts(self, nodes: list[tuple[str | None, ast.AST]]
                     ) -> Iterable[tuple[ast.AST, ast.AST, ReleaseFile, Callable[[str], str | None]]]:
        """(old node, the node at its place in the new release, the new file, what the old
        use's local names hold) of each (scope or None, node) of the old file that has a
        counterpart: the same scope's statement that it pairs with (pairing.aligned), changed,
        and only where the statement's uses are (else the pair says nothing certain of them)."""
        new_file = self.new_file if nodes else None
        if new_file is None:
            return
        old_scopes, new_scopes = self.old_scopes, self._new_scopes
        by_statement: dict[tuple[str, int], list[tuple[ast.AST, list[tuple]]]] = {}
        for scope, node in nodes:
            # A use whose scope is not known is looked for in every scope (its line first).
            for where in ([scope] if scope is not None else list(old_scopes)):
                before, after = old_scopes.get(where), new_scopes.get(where)
                located = pairing.statement_of(before, node) if before and after else None
                if located is not None:
                    by_statement.setdefault((where, located[0]), []).append((node, located[1]))
                    break
        for (scope, index), uses in by_statement.items():
            before, after = old_scopes[scope], new_scopes[scope]
            if scope not in self._alignments:
                self._alignments[scope] = pairing.aligned(before, after)
            paired = self._alignments[scope].get(index)
            if paired is None or before[index].key == after[paired].key:
                continue  # no counterpart, or a statement upstream left as it was: no edit to learn
            counterparts = [pairing.follow(before[index].node, after[paired].node, path) for _, path in uses]
            if any(found is None for found in counterparts) or pairing.substituted(
                    before[index].node, [(path, found) for (_, path), found in zip(uses, counterparts)]) \
                    != after[paired].key:
                continue
            defined = self._defined(before, index)
            for (node, _), found in zip(uses, counterparts):
                yield node, found, new_file, defined

    def _defined(self, statements: list[Statement], index: int) -> Callable[[str], str | None]:
        bindings = self.old_file.bindings
        return lambda name: None if name in bindings else pairing.definition(statements, index, name)

    def bound(self, name: str) -> str | None:
        """The path a name of the new-release file is bound to at its top level."""
        return sites.dotted_name(self.learning.new, self.new_file, name)


def _changed_lines(old: str, new: str) -> dict[int, str]:
    """line number -> text of the old text's lines that are not in the new one at their place
    (difflib's matching: more lines than a statement's pairing would say, never fewer)."""
    before, after = numbered_lines(old), numbered_lines(new)
    found: dict[int, str] = {}
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, before, after).get_opcodes():
        if tag != "equal":
            found.update((number + 1, before[number]) for number in range(i1, i2))
    return found


def _calls_named(pair: _FilePair, needles: set[str]) -> Iterable[tuple[str, ast.Call]]:
    """(scope, call) of the calls of one of `needles` in the old file: only the statements on
    the lines that name one are walked (walking a model file's every expression cost more than
    parsing it)."""
    lines = {number for number, line in enumerate(pair.old_file.at.lines, 1) if any(needle in line for needle in needles)}
    for scope, statements in pair.old_scopes.items():
        for statement in statements:
            node = statement.node
            if not any(node.lineno <= line <= (node.end_lineno or node.lineno) for line in lines):
                continue
            for found in pairing.own_nodes(node):
                if isinstance(found, ast.Call) and _called_name(found) in needles:
                    yield scope, found


def _called_name(node: ast.Call) -> str | None:
    """The last name of what a call calls (`Class` of `mod.Class(...)`)."""
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _without_common_members(old: ast.AST, new: ast.AST, reads: dict[int, ast.Attribute]) -> tuple[ast.AST, ast.AST]:
    """A read's chain and its counterpart without the members both end with (`.cpu_group` of
    `self.model_runner.tp_group.cpu_group` -> `get_parallel().tp_group.cpu_group`), down to
    the read itself: the smallest edit."""
    while id(old) not in reads and isinstance(old, ast.Attribute) and isinstance(new, ast.Attribute) \
            and old.attr == new.attr:
        old, new = old.value, new.value
    return old, new


def _keywords(signature: Signature) -> set[str]:
    """The names a call may pass by keyword."""
    return {name for name, kind, _ in signature.params if kind in ("pk", "ko")}


def _read_back(rows: list) -> list[Variant] | None:
    """Variants as the cache kept them; None for a record of another shape (learned again
    rather than fail a check on a pattern that does not parse)."""
    try:
        found = [Variant.from_json(row) for row in rows]
        for variant in found:
            for _, pattern in (*variant.before, *variant.after):
                if not isinstance(pattern, str):
                    raise TypeError("a pattern that is no text")
            for slot, pattern in (*variant.before, *variant.after):
                if slot != "module" and not slot.startswith("="):
                    ast.parse(pattern, mode="eval")
        return found
    except (TypeError, ValueError, SyntaxError, RecursionError, MemoryError):
        return None
