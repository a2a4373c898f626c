"""Upstream's own uses of an API in one file of a release: the project scanner's facts of that
file, resolved against that release alone (every class there is upstream's), and the syntax
tree the uses sit in."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from functools import cached_property

from sglang_contracts.infra.pysource import parse_shared
from sglang_contracts.migrations.edits import Use, call_slots
from sglang_contracts.migrations.pairing import Statement, definition, scoped_statements, statement_of
from sglang_contracts.project.facts import CallFact, FileFacts, ReadFact, Receiver
from sglang_contracts.project.index import absolute_module
from sglang_contracts.project.positions import SourcePositions
from sglang_contracts.project.scanner import scan_source
from sglang_contracts.project.scopes import dotted_chain
from sglang_contracts.upstream.model import Signature, UpstreamModel
from sglang_contracts.upstream.targets import callable_signature


class ReleaseFile:
    """One parsed file of a release. The project scanner's facts (receivers' types) are made
    only for the files whose uses need them: a method's receiver, an attribute read."""

    def __init__(self, relpath: str, module: str, text: str, tree: ast.Module) -> None:
        self.relpath, self.module, self.text, self.tree = relpath, module, text, tree
        self.at = SourcePositions(text)

    @cached_property
    def facts(self) -> FileFacts | None:
        facts = scan_source(self.relpath, self.module, self.text)
        return None if facts.parse_error or facts.problem else facts

    @cached_property
    def bindings(self) -> dict[str, str]:
        """Name -> the dotted path its import binds, read from the tree alone (any depth)."""
        found: dict[str, str] = {}
        package = self.relpath.endswith("__init__.py")
        for node in statements_below(self.tree):  # imports are statements: no expression is walked
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                source = absolute_module(self.module, package, "." * node.level + (node.module or ""))
                for alias in node.names:
                    if alias.name != "*":
                        found[alias.asname or alias.name] = f"{source}.{alias.name}"
        return found

    @cached_property
    def defined(self) -> frozenset[str] | None:
        """The names the module's own top-level statements define (`def`, `class`, an
        assignment); None when a star import may define others (the release's model knows)."""
        found: set[str] = set()
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    found.update(child.id for child in ast.walk(target) if isinstance(child, ast.Name))
            elif isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
                return None
        return frozenset(found)

    @cached_property
    def attributes(self) -> dict[tuple[int, int], ast.Attribute]:
        """(line, column) of an attribute's name -> the attribute."""
        return {(where.line, where.col): node for node in ast.walk(self.tree) if isinstance(node, ast.Attribute)
                for where in (self.at.attribute_name(node),)}

    @cached_property
    def _read_on(self) -> dict[int, ast.Attribute]:
        """id(node) -> the attribute read on it."""
        return {id(node.value): node for node in self.attributes.values() if isinstance(node.value, ast.Attribute)}

    def chain_above(self, read: ast.Attribute) -> list[ast.Attribute]:
        """The read, then each attribute read on it in turn: `req.extend_range`, then
        `req.extend_range.end` (an edit may rewrite a member of what was lost with it)."""
        chain = [read]
        while id(chain[-1]) in self._read_on:
            chain.append(self._read_on[id(chain[-1])])
        return chain

    @cached_property
    def wrapping(self) -> dict[int, ast.Call]:
        """id(node) -> the call of a plain name that takes it as its one argument (`len(x)`,
        `int(x)`): what an edit may have rewritten with a read (`len(req.prefix_indices)` ->
        `req.prefix_len`)."""
        return wrapping_calls(self.tree)


def wrapping_calls(tree: ast.AST) -> dict[int, ast.Call]:
    """id(argument) -> `f(argument)`, for calls of a plain name with one argument and nothing else."""
    return {id(node.args[0]): node for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1
            and not node.keywords and not isinstance(node.args[0], ast.Starred)}


def statements_below(tree: ast.AST) -> list[ast.stmt]:
    """Every statement of a tree, at any depth, without walking an expression."""
    found: list[ast.stmt] = []
    pending = list(getattr(tree, "body", []))
    while pending:
        node = pending.pop()
        found.append(node)
        for block in ("body", "orelse", "finalbody", "handlers", "cases"):
            for child in getattr(node, block, None) or []:
                pending.extend([child] if isinstance(child, ast.stmt) else getattr(child, "body", []))
    return found


def read_release_file(model: UpstreamModel, relpath: str) -> ReleaseFile | None:
    """One file of the release, parsed; None when it cannot be read or parsed."""
    text = model.tree.readable_source(relpath)
    if text is None:
        return None
    try:
        tree = parse_shared(text, relpath)  # the scanner's own parse, when the file's receivers are asked for
    except (SyntaxError, ValueError):  # ValueError: a NUL byte, or too deep for the parser
        return None
    return ReleaseFile(relpath, model.module_name_of(relpath), text, tree)


def chain_above_inside(outer: ast.AST) -> list[ast.Attribute]:
    """The attributes of a chain from the outermost in: `a.b.c`, `a.b` (of `len(a.b.c)` too)."""
    if isinstance(outer, ast.Call) and len(outer.args) == 1:
        outer = outer.args[0]
    found = []
    while isinstance(outer, ast.Attribute):
        found.append(outer)
        outer = outer.value
    return found


def dotted_name(model: UpstreamModel, file: ReleaseFile, name: str) -> str | None:
    """The upstream path a name written in the file stands for: through its imports, or a
    name the module itself defines."""
    head, _, rest = name.partition(".")
    target = file.bindings.get(head)
    defined = file.defined
    if target is None and (head in defined if defined is not None else model.resolve_name(file.module, head).found):
        target = f"{file.module}.{head}"
    if target is None:
        return None
    return f"{target}.{rest}" if rest else target


def receiver_classes(model: UpstreamModel, file: ReleaseFile, receiver: Receiver) -> list[str] | None:
    """The upstream classes a receiver in the file stands for, through annotations, `self` and
    the classes' attribute types in this release; None when any alternative is unknown."""
    current: list[str] = []
    for kind in receiver.types:
        tag, _, name = kind.partition(":")
        dotted = f"{file.module}.{name}" if tag == "S" else dotted_name(model, file, name) if tag == "T" else None
        origin = model.resolve_class(dotted) if dotted else None
        if origin is None:
            return None
        current.append(origin)
    for attr in receiver.attrs:
        following: list[str] = []
        for origin in current:
            member = model.member(origin, attr)
            if member is None or member.kind == "method":
                return None
            types = member.record.get("returns" if member.kind == "property" else "types", [])
            classes = [found for found in map(model.resolve_class, types) if found is not None]
            if not classes:
                return None
            following += classes
        current = following
    return current or None


def node_signature(model: UpstreamModel, file: ReleaseFile, node: ast.Call, scan: bool = True) -> Signature | None:
    """The signature a call of the file binds to: through its imports where it calls a name or
    a dotted path they bind (no scan needed), else (`scan`) through the scanner's receiver types."""
    chain = dotted_chain(node.func)
    if chain is not None and chain[0] not in ("self", "cls"):
        dotted = dotted_name(model, file, ".".join([chain[0], *(attribute.attr for attribute in chain[1])]))
        if dotted is not None:
            found = callable_signature(model, dotted)
            return found[0] if found is not None else None
    if not scan:
        return None
    facts = file.facts
    func = node.func
    where = file.at.attribute_name(func) if isinstance(func, ast.Attribute) else file.at.start(func)
    fact = next((call for call in facts.calls if call.position == where), None) if facts is not None else None
    return call_signature(model, file, fact) if fact is not None else None


def owner_signature(model: UpstreamModel, owner: str) -> Signature | None:
    """The signature of a callable named as the call contracts name it (`pkg.mod.Class.__init__`,
    `pkg.mod.func`, `pkg.mod.Class.method`, bound)."""
    head, _, leaf = owner.rpartition(".")
    origin = model.resolve_class(head) if head else None
    if origin is None:
        found = callable_signature(model, owner)
        return found[0] if found is not None else None
    if leaf == "__init__":
        return model.constructor(origin)
    member = model.member(origin, leaf)
    return model.method_signature(member, bound=True) if member is not None and member.kind == "method" else None


def call_signature(model: UpstreamModel, file: ReleaseFile, call: CallFact) -> Signature | None:
    """The signature a call binds to, whose owner is named as the call contracts name it
    (`pkg.mod.Class.__init__`, `pkg.mod.func`, `pkg.mod.Class.method`)."""
    kinds = call.callee.types
    if len(kinds) == 1 and kinds[0].startswith("C:") and not call.callee.attrs:
        dotted = dotted_name(model, file, kinds[0][2:])
        found = callable_signature(model, dotted) if dotted else None
        return found[0] if found is not None else None
    if not call.callee.attrs or kinds[0].startswith(("C:", "U:")):
        return None
    classes = receiver_classes(model, file, Receiver(kinds, call.callee.attrs[:-1]))
    if not classes or len(classes) != 1:
        return None
    member = model.member(classes[0], call.callee.attrs[-1])
    if member is None or member.kind != "method":
        return None
    return model.method_signature(member, bound=True)


def read_owner(model: UpstreamModel, file: ReleaseFile, read: ReadFact) -> str | None:
    """The class that defines the attribute a read reaches (`pkg.mod.Class`), when its
    receiver's type is known in this release."""
    if read.store or read.receiver.types[0].startswith("U:"):
        return None
    classes = receiver_classes(model, file, read.receiver)
    owners = {member.owner for member in (model.member(origin, read.attr) for origin in classes or ()) if member}
    return owners.pop() if len(owners) == 1 else None


class ProjectSites:
    """A project's uses, read as upstream's are: a call's arguments by slot, an attribute
    read's expression, and what the local names there hold. Each file is parsed once a run."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        self.texts = texts
        self._at: dict[str, SourcePositions] = {}
        self._above: dict[str, dict[int, ast.Attribute]] = {}  # per file: id(node) -> the attribute read on it
        self._wrapping: dict[str, dict[int, ast.Call]] = {}  # per file: id(node) -> `f(node)` (wrapping_calls)
        self._files: dict[str, tuple[dict[tuple[int, int], ast.AST], dict[str, list[Statement]]] | None] = {}

    def _file(self, relpath: str) -> tuple[dict[tuple[int, int], ast.AST], dict[str, list[Statement]]] | None:
        if relpath not in self._files:
            text = self.texts.get(relpath)
            try:
                tree = parse_shared(text, relpath) if text is not None else None
            except (SyntaxError, ValueError):
                tree = None
            if tree is None:
                self._files[relpath] = None
            else:
                at = self._at[relpath] = SourcePositions(text)
                self._above[relpath] = {id(node.value): node for node in ast.walk(tree)
                                        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)}
                self._wrapping[relpath] = wrapping_calls(tree)
                places: dict[tuple[int, int], ast.AST] = {}
                for node in ast.walk(tree):
                    if isinstance(node, ast.Call):
                        func = node.func
                        where = at.attribute_name(func) if isinstance(func, ast.Attribute) else at.start(func)
                        places.setdefault((where.line, where.col), node)
                    elif isinstance(node, ast.Attribute):
                        where = at.attribute_name(node)
                        places.setdefault((where.line, where.col), node)
                self._files[relpath] = places, scoped_statements(tree)
        return self._files[relpath]

    def use(self, facts: FileFacts, line: int, col: int, scope: str | None) -> Use | None:
        """The use whose call's callee (or whose attribute) is named at line:col, in `scope`
        (None: a read the scanner kept no fact of, looked for in every scope)."""
        found = self._file(facts.path)
        node = found[0].get((line, col)) if found else None
        if node is None:
            return None
        located = statements = None
        for where in [scope] if scope is not None else list(found[1]):
            statements = found[1].get(where)
            located = statement_of(statements, node) if statements else None
            if located is not None:
                break
        if located is None:
            return None
        bindings = facts.bindings()
        defined = lambda name: None if name in bindings else definition(statements, located[0], name)  # noqa: E731
        if isinstance(node, ast.Call):
            slots = call_slots(node)
            return Use(slots, defined) if slots is not None else None
        at = self._at[facts.path]
        chain = [(level, at.attribute_name(level) if isinstance(level, ast.Attribute) else at.start(level.func))
                 for level in self._chain(facts.path, node)]
        return Use({"expr": node}, defined, chain=chain)

    def _chain(self, relpath: str, node: ast.Attribute) -> list[ast.expr]:
        """The read, each attribute read on it in turn, and the call of a plain name that takes
        the last as its one argument (`len(req.prefix_indices)`), if one does."""
        above = self._above.get(relpath, {})
        chain: list[ast.expr] = [node]
        while id(chain[-1]) in above:
            chain.append(above[id(chain[-1])])
        wrapping = self._wrapping.get(relpath, {}).get(id(chain[-1]))
        return chain + [wrapping] if wrapping is not None else chain


def imported_from(file: ReleaseFile, node: ast.ImportFrom) -> str:
    """The absolute module a `from ... import` statement of the file imports from."""
    return absolute_module(file.module, file.relpath.endswith("__init__.py"), "." * node.level + (node.module or ""))


def calls_on(model: UpstreamModel, callee: str, argument: str) -> list[str]:
    """Where the release's own code calls `callee` (a dotted path: `msgspec.structs.fields`) on
    the object `argument` names (`sglang.srt.server_args.ServerArgs`), as `relpath:line`: how
    upstream now does what a project's call no longer can. The argument's own module first,
    then the release's order. Only the files that write the callee's last two names are parsed."""
    tail = ".".join(callee.split(".")[-2:])
    leaf = argument.rpartition(".")[2]
    found = []
    for relpath, text in model.texts_mentioning(f"{tail}("):
        if leaf not in text:
            continue
        file = read_release_file(model, relpath)
        for node in ast.walk(file.tree) if file is not None else ():
            if not isinstance(node, ast.Call) or len(node.args) != 1 or node.keywords:
                continue
            chain, subject = dotted_chain(node.func), dotted_chain(node.args[0])
            if chain is None or subject is None or chain[0] in ("self", "cls") or subject[0] in ("self", "cls"):
                continue
            written = ".".join([chain[0], *(attribute.attr for attribute in chain[1])])
            named = ".".join([subject[0], *(attribute.attr for attribute in subject[1])])
            if dotted_name(model, file, written) == callee and same_object(model, dotted_name(model, file, named), argument):
                found.append(f"{relpath}:{node.lineno}")
    home = argument.rpartition(".")[0].replace(".", "/")
    return sorted(found, key=lambda where: not where.startswith((f"{home}.py:", f"{home}/__init__.py:")))


def same_object(model: UpstreamModel, path: str | None, other: str) -> bool:
    """Whether two paths name the same object of the release (one re-exports the other)."""
    if path is None:
        return False
    if path == other:
        return True
    first, second = model.resolve_path(path), model.resolve_path(other)
    return first.found and second.found and first.origin == second.origin
