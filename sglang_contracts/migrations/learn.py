"""What upstream's own code did, between two releases, with an API a finding is about: its
uses in the old release (by resolved target), each paired with its counterpart in the new
release, their edits generalised into variants. Learned once per release pair and API, and
kept in the cache for releases whose content cannot change (a published version, a commit)."""

from __future__ import annotations

import ast
import hashlib
import sys
from typing import Callable, Iterable

from sglang_contracts.infra.cache import code_fingerprint
from sglang_contracts.migrations import edits, pairing, sites
from sglang_contracts.migrations.edits import Variant
from sglang_contracts.migrations.pairing import Statement
from sglang_contracts.migrations.sites import ReleaseFile, read_release_file
from sglang_contracts.project import scanner
from sglang_contracts.upstream.bodies import unparsed
from sglang_contracts.upstream.model import Signature, UpstreamModel

LEARNER = code_fingerprint(edits, pairing, sites, scanner, sys.modules[__name__])


class Migrations:
    """The learned migrations of one release pair, asked by the checks (CheckContext.of_releases)."""

    def __init__(self, old: UpstreamModel, new: UpstreamModel) -> None:
        self.old, self.new = old, new
        self._files: dict[tuple[bool, str], ReleaseFile | None] = {}
        self._scopes: dict[tuple[bool, str], dict[str, list[Statement]]] = {}
        self._learned: dict[str, list[Variant]] = {}

    # -- what the checks ask ---------------------------------------------------------------------

    def calls(self, old_owner: str, new_owner: str) -> list[Variant]:
        """How upstream rewrote its calls of a callable (signature owners as the call contracts
        name them: `pkg.mod.Class.__init__`, `pkg.mod.func`, `pkg.mod.Class.method`)."""
        return self._known(f"calls\0{old_owner}\0{new_owner}", lambda: self._learn_calls(old_owner, new_owner))

    def reads(self, owner: str, attr: str) -> list[Variant]:
        """How upstream rewrote its reads of `attr` on instances of the class `owner` defines it in."""
        return self._known(f"reads\0{owner}\0{attr}", lambda: self._learn_reads(owner, attr))

    def imports(self, module: str) -> list[Variant]:
        """Where upstream's own `from <module> import ...` statements went (slot `module`)."""
        return self._known(f"imports\0{module}", lambda: self._learn_imports(module))

    # -- learning --------------------------------------------------------------------------------

    def _known(self, what: str, learn: Callable[[], list[Variant]]) -> list[Variant]:
        if what in self._learned:
            return self._learned[what]
        identities = (self.old.release.identity, self.new.release.identity)
        key = hashlib.sha256(f"{LEARNER}\0migrations\0{identities}\0{what}".encode()).hexdigest() \
            if all(identities) else None
        cached = self.old.cache.get(key) if key else None
        found = _read_back(cached) if isinstance(cached, list) else None
        if found is None:
            found = learn()
            if key:
                self.old.cache.put(key, [variant.to_json() for variant in found])
            # A release's parsed files are many megabytes: kept for one question's learning only.
            self._files.clear()
            self._scopes.clear()
        self._learned[what] = found
        return found

    def _file(self, new: bool, relpath: str) -> ReleaseFile | None:
        if (new, relpath) not in self._files:
            self._files[new, relpath] = read_release_file(self.new if new else self.old, relpath)
        return self._files[new, relpath]

    def _statements(self, file: ReleaseFile, new: bool) -> dict[str, list[Statement]]:
        if (new, file.relpath) not in self._scopes:
            self._scopes[new, file.relpath] = pairing.scoped_statements(file.tree)
        return self._scopes[new, file.relpath]

    def _candidates(self, needles: Iterable[str], also: str | None = None) -> list[str]:
        """The old release's files whose text mentions one of `needles` (and `also`)."""
        return [relpath for relpath, text in self.old.texts_mentioning_any(list(needles))
                if also is None or also in text]

    def _counterparts(self, old_file: ReleaseFile, nodes: list[tuple[str | None, ast.AST]]
                      ) -> Iterable[tuple[ast.AST, ast.AST, ReleaseFile, Callable[[str], str | None]]]:
        """(old node, the node at its place in the new release, the new file, what the old
        use's local names hold) of each (scope or None, node) of the old file that has a counterpart:
        the same scope's statement that it pairs with (pairing.aligned), which differs from it
        only where the statement's uses are (else the pair says nothing certain of them)."""
        new_file = self._file(True, old_file.relpath) if nodes else None
        if new_file is None:
            return
        old_scopes, new_scopes = self._statements(old_file, False), self._statements(new_file, True)
        alignments: dict[str, dict[int, int]] = {}
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
            if scope not in alignments:
                alignments[scope] = pairing.aligned(before, after)
            paired = alignments[scope].get(index)
            if paired is None:
                continue
            counterparts = [pairing.follow(before[index].node, after[paired].node, path) for _, path in uses]
            if any(found is None for found in counterparts) or pairing.substituted(
                    before[index].node, [(path, found) for (_, path), found in zip(uses, counterparts)]) \
                    != after[paired].key:
                continue
            defined = self._defined(old_file, before, index)
            for (node, _), found in zip(uses, counterparts):
                yield node, found, new_file, defined

    def _defined(self, file: ReleaseFile, statements: list[Statement], index: int) -> Callable[[str], str | None]:
        bindings = file.bindings
        return lambda name: None if name in bindings else pairing.definition(statements, index, name)

    def _bound(self, file: ReleaseFile) -> Callable[[str], str | None]:
        """The path a name of a new-release file is bound to at its top level."""
        bindings = file.bindings

        def bound(name: str) -> str | None:
            if name in bindings:
                return bindings[name]
            return f"{file.module}.{name}" if self.new.resolve_name(file.module, name).found else None

        return bound

    def _learn_calls(self, old_owner: str, new_owner: str) -> list[Variant]:
        parts = old_owner.split(".")
        needle = parts[-2] if parts[-1] == "__init__" else parts[-1]
        found: list[Variant] = []
        for relpath in self._candidates([needle]):
            old_file = self._file(False, relpath)
            if old_file is None:
                continue
            uses, signatures = [], {}
            for scope, node in self._calls_named(old_file, needle):
                signature = sites.node_signature(self.old, old_file, node)
                if signature is not None and signature.owner == old_owner:
                    uses.append((scope, node))
                    signatures[id(node)] = signature
            for old_node, new_node, new_file, defined in self._counterparts(old_file, uses):
                new_signature = sites.node_signature(self.new, new_file, new_node) if isinstance(new_node, ast.Call) else None
                if new_signature is None or new_signature.owner != new_owner:
                    continue
                edit = edits.call_edit(old_node, new_node, _keywords(signatures[id(old_node)]), _keywords(new_signature))
                if edit is not None:
                    found.append(edits.generalised(edit[0], edit[1], new_file.at.lines, self._bound(new_file),
                                                   old_file.at.lines, f"{relpath}:{old_node.lineno}", defined))
        return edits.merged(found)

    def _calls_named(self, file: ReleaseFile, needle: str) -> Iterable[tuple[str, ast.Call]]:
        """(scope, call) of the calls of `needle` in the file: only the statements on the lines
        that name it are walked (walking a model file's every expression cost more than parsing it)."""
        lines = {number for number, line in enumerate(file.at.lines, 1) if needle in line}
        for scope, statements in self._statements(file, False).items():
            for statement in statements:
                node = statement.node
                if not any(node.lineno <= line <= (node.end_lineno or node.lineno) for line in lines):
                    continue
                for found in pairing.own_nodes(node):
                    if isinstance(found, ast.Call) and _called_name(found) == needle:
                        yield scope, found

    def _learn_imports(self, module: str) -> list[Variant]:
        parts = module.split(".")
        needles = [".".join(parts[-2:]), f"from .{parts[-1]} import"] if len(parts) > 1 else [module]
        found: list[Variant] = []
        for relpath in self._candidates(needles):
            old_file = self._file(False, relpath)
            statements = _import_statements(old_file, module) if old_file is not None else []
            if not statements:
                continue
            uses = [(None, node) for node in statements]
            for old_node, new_node, new_file, _ in self._counterparts(old_file, uses):
                if not isinstance(new_node, ast.ImportFrom) \
                        or {a.name for a in new_node.names} != {a.name for a in old_node.names}:
                    continue
                moved = sites.imported_from(new_file, new_node)
                if moved == module:
                    continue
                found.append(Variant(before=(("module", module),), after=(("module", moved),), imports=(), foreign=(),
                                     templates=(("module", (moved,)),), shown_before=f"from {module}",
                                     shown_after=f"from {moved}", where=f"{relpath}:{old_node.lineno}"))
        return edits.merged(found)

    def _learn_reads(self, owner: str, attr: str) -> list[Variant]:
        leaf = owner.rsplit(".", 1)[-1]
        found: list[Variant] = []
        for relpath in self._candidates([f".{attr}"], also=leaf):
            old_file = self._file(False, relpath)
            if old_file is None:
                continue
            reads: dict[int, ast.Attribute] = {}
            scopes: dict[int, str] = {}
            for read in old_file.facts.reads if old_file.facts is not None else ():
                node = old_file.attributes.get((read.position.line, read.position.col))
                if node is not None and read.attr == attr and sites.read_owner(self.old, old_file, read) == owner:
                    reads[id(node)], scopes[id(node)] = node, read.scope
            # The use is the read with what is read on it in turn: `req.extend_range.end`.
            uses = [(scopes[key], sites.chain_above(node, old_file.tree)[-1]) for key, node in reads.items()]
            for old_node, new_node, new_file, defined in self._counterparts(old_file, uses):
                old_node, new_node = _without_common_members(old_node, new_node, reads)
                if not isinstance(new_node, ast.expr) or unparsed(old_node) == unparsed(new_node):
                    continue
                read = next(node for node in sites.chain_above_inside(old_node) if id(node) in reads)
                found.append(edits.generalised([("expr", old_node)], [("expr", new_node)], new_file.at.lines,
                                               self._bound(new_file), old_file.at.lines, f"{relpath}:{old_node.lineno}",
                                               defined, receiver=unparsed(read.value)))
        return edits.merged(found)

def _import_statements(file: ReleaseFile, module: str) -> list[ast.ImportFrom]:
    """The file's `from <module> import ...` statements (relative ones resolved)."""
    return [node for node in ast.walk(file.tree)
            if isinstance(node, ast.ImportFrom) and sites.imported_from(file, node) == module]


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
