"""Attribute reads on objects whose type the code does not show, found by the receiver's name.

`req.extend_range` where `req` has no annotation: the scanner keeps no fact for it, since its
type is unknown. A check that suspects `req` stands for an upstream `Req` asks here, first
which names anything is read from (by text, per file), then where `req.<attr>` is read
(parsed, for the few files that spell both). Both answers are cached per file content.
"""

from __future__ import annotations

import ast
import hashlib
import re
import sys
from dataclasses import dataclass
from functools import lru_cache

from sglang_contracts.infra.cache import code_fingerprint
from sglang_contracts.infra.shapes import ListOf, Row, rows_of
from sglang_contracts.project.facts import Position
from sglang_contracts.project.index import ProjectIndex, any_text
from sglang_contracts.project.positions import SourcePositions
from sglang_contracts.project.stack import is_package_code
from sglang_contracts.infra.pysource import child_nodes, parse_shared

# `name.attr` (comments and strings included: a superset, narrowed by parsing later). The name
# is matched possessively: a shorter prefix of it is followed by a name character, never by a
# dot, so backtracking into it (letter by letter, at every name of every file) finds nothing.
# `(?<!\w)` is `\b` before a name's first letter, and a quarter cheaper to try at every position.
READ_FROM = re.compile(r"(?<!\w)([a-z_][a-z0-9_]*+)(?=\s*\.\s*[A-Za-z_])")
CAPWORDS_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
CLASS_DEFINITION = re.compile(r"^[ \t]*class[ \t]+([A-Za-z_]\w*)", re.M)


def snake_name(class_name: str) -> str:
    """The name code conventionally gives an instance: `Req` -> `req`, `KVCache` -> `kv_cache`."""
    return CAPWORDS_BOUNDARY.sub("_", class_name).lower()


@dataclass
class NamesInFiles:
    read_from: dict[str, set[str]]  # relpath -> lower-case names it reads something from
    classes: set[str]  # names of classes the project's package code defines (test fakes aside)


@rows_of(Row(str, ListOf(str), ListOf(str)))  # [path, names read from, classes defined]
def _file_names(relpath: str, text: str) -> list[list]:
    return [[relpath, sorted(set(READ_FROM.findall(text))), sorted(set(CLASS_DEFINITION.findall(text)))]]


def names_in_files(project: ProjectIndex) -> NamesInFiles:
    """What every project file (not only those the scanner read) reads from (`name.x`,
    `a.name.x`), and which classes the package code defines, by text: a superset, cached
    per file."""
    found = NamesInFiles({}, set())
    for relpath, read_from, classes in project.each_file("names-in-files", _file_names, any_text,
                                                       sys.modules[__name__], by_pattern=True):
        found.read_from[relpath] = set(read_from)
        if is_package_code(relpath):
            found.classes.update(classes)
    return found


def named_reads(project: ProjectIndex, relpath: str, receiver: str, attr: str) -> list[Position]:
    """Loads of `receiver.attr` and `x.receiver.attr` in a file, where `receiver` is a plain
    name that its function does not type: no annotation, and not bound by a constructor call."""
    content = project.digests.get(relpath)
    if content is None:
        return []
    key = hashlib.sha256(f"{_fingerprint()}\0named-reads\0{relpath}\0{receiver}\0{attr}\0{content}".encode()).hexdigest()
    cached = project.cache.get(key, ListOf(Row(int, int)))
    if cached is not None:
        return [Position(line, col) for line, col in cached]
    try:
        tree = parse_shared(project.texts[relpath], relpath)
    except Exception:  # an unparsable file is SGC000's to report
        return []
    finder = _ReadFinder(receiver, attr, SourcePositions(project.texts[relpath]))
    finder.visit(tree)
    project.cache.put(key, [[position.line, position.col] for position in finder.found])
    return finder.found


@lru_cache(maxsize=1)
def _fingerprint() -> str:
    return code_fingerprint(sys.modules[__name__])


class _ReadFinder:
    """Loads of `<receiver>.<attr>` whose receiver is untyped where it is read.

    The tree is walked with a stack, not by recursion: a long method chain (`f().a().a()...`)
    nests one node per link, deeper than Python's recursion limit allows a visitor to go."""

    _LEAVE = object()  # on the stack after a function's nodes: its typed names are popped there

    def __init__(self, receiver: str, attr: str, positions: SourcePositions) -> None:
        self.receiver = receiver
        self.attr = attr
        self.positions = positions
        self.typed: list[set[str]] = [set()]  # per enclosing function: names the code gives a type
        self.found: list[Position] = []

    def visit(self, tree: ast.AST) -> None:
        """Every node in source order, depth first (what ast.NodeVisitor.generic_visit visits)."""
        pending: list[object] = [tree]
        while pending:
            node = pending.pop()
            if node is self._LEAVE:
                self.typed.pop()
                continue
            if isinstance(node, ast.Module):
                self.typed[0] = _typed_in_body(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.typed.append(_annotated_parameters(node.args) | _typed_in_body(node))
                pending.append(self._LEAVE)
            elif isinstance(node, ast.Attribute):
                if node.attr == self.attr and isinstance(node.ctx, ast.Load) and self._is_untyped_receiver(node.value):
                    self.found.append(self.positions.attribute_name(node))
            pending.extend(reversed(child_nodes(node)))

    def _is_untyped_receiver(self, value: ast.expr) -> bool:
        if isinstance(value, ast.Attribute):
            return value.attr == self.receiver
        return isinstance(value, ast.Name) and value.id == self.receiver \
            and not any(self.receiver in typed for typed in self.typed)


def _annotated_parameters(arguments: ast.arguments) -> set[str]:
    """The names of a function's parameters that carry an annotation."""
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
    return {argument.arg for argument in every if argument is not None and argument.annotation is not None}


def _typed_in_body(scope: ast.AST) -> set[str]:
    """Names a scope annotates (`x: T = ...`) or binds to a constructor call (`x = Thing(...)`),
    not descending into nested functions and classes."""
    typed: set[str] = set()
    pending = child_nodes(scope)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            typed.add(node.target.id)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and _is_constructor(node.value.func):
            typed.update(target.id for target in node.targets if isinstance(target, ast.Name))
        pending.extend(child_nodes(node))
    return typed


def _is_constructor(func: ast.expr) -> bool:
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name[:1].isupper()
