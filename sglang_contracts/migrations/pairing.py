"""A use in the old release paired with its counterpart in the new one: the same module and
function (scope named as the project scanner names it, `Class.method`, `outer.inner`), the
statement matched by its position among the function's statements, then the node at the same
place within the statement."""

from __future__ import annotations

import ast
import copy
import difflib
from functools import cached_property

from sglang_contracts.upstream.bodies import unparsed

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# A compound statement's own expressions (its header); its blocks are statements of their own.
BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


class Statement:
    """One statement of a scope, with the texts that pair it (computed when first asked:
    a scope is aligned only when it holds a use)."""

    def __init__(self, node: ast.stmt) -> None:
        self.node = node

    @cached_property
    def key(self) -> str:
        """Its text, formatting aside (a compound statement's header alone)."""
        return _key(self.node)

    @cached_property
    def head(self) -> str:
        """What pairs it within a changed run: its kind, and what it assigns or calls."""
        return _head(self.node)


def _key(node: ast.stmt) -> str:
    if not any(hasattr(node, block) for block in BLOCKS):
        return unparsed(node)
    parts = [type(node).__name__]
    for name, value in ast.iter_fields(node):
        if name not in BLOCKS and isinstance(value, ast.AST):
            parts.append(unparsed(value))
        elif name not in BLOCKS and isinstance(value, list):
            parts += [unparsed(item) for item in value if isinstance(item, ast.AST)]
    return " ".join(parts)


def _head(node: ast.stmt) -> str:
    kind = type(node).__name__
    if isinstance(node, ast.Assign):
        return f"{kind} {' '.join(unparsed(target) for target in node.targets)}"
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return f"{kind} {unparsed(node.target)}"
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        return f"{kind} {unparsed(node.value.func)}"
    return kind


def scoped_statements(tree: ast.Module) -> dict[str, list[Statement]]:
    """scope -> its statements in order, flattened (an `if`'s header, then its blocks'
    statements); a nested function or class is a scope of its own."""
    scopes: dict[str, list[Statement]] = {}
    pending: list[tuple[str, list[ast.stmt], str | None]] = [("", list(tree.body), None)]
    while pending:
        scope, block, cls = pending.pop()
        statements = scopes.setdefault(scope, [])
        stack = list(reversed(block))
        while stack:
            node = stack.pop()
            if isinstance(node, FUNCTIONS):
                inner = f"{cls}.{node.name}" if cls is not None else f"{scope}.{node.name}" if scope else node.name
                pending.append((inner, list(node.body), None))
                continue
            if isinstance(node, ast.ClassDef):
                pending.append((scope, list(node.body), node.name))
                continue
            statements.append(Statement(node))
            for block_name in reversed(BLOCKS):
                for child in reversed(getattr(node, block_name, None) or []):
                    stack.extend([child] if isinstance(child, ast.stmt) else reversed(getattr(child, "body", [])))
    return scopes


def aligned(old: list[Statement], new: list[Statement]) -> dict[int, int]:
    """old statement index -> its counterpart's in `new`: unchanged runs pair in order; in a
    changed run, a statement pairs with the one of the same head when each is the only one so
    in the run, else by position when both sides of the run are as long."""
    pairs: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, [s.key for s in old], [s.key for s in new], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs.update({i1 + k: j1 + k for k in range(i2 - i1)})
        elif tag == "replace":
            heads_old = [old[i].head for i in range(i1, i2)]
            heads_new = [new[j].head for j in range(j1, j2)]
            for i in range(i1, i2):
                head = old[i].head
                if heads_old.count(head) == 1 and heads_new.count(head) == 1:
                    pairs[i] = j1 + heads_new.index(head)
                elif i2 - i1 == j2 - j1:
                    pairs[i] = j1 + (i - i1)
    return pairs


def _children(node: ast.AST, top: bool) -> list[tuple[tuple, ast.AST]]:
    """(step, child) of a node; a keyword argument's step is its name, so that a call whose
    other keywords changed still leads to the same argument."""
    found = []
    for name, value in ast.iter_fields(node):
        if top and name in BLOCKS:
            continue
        if isinstance(value, ast.AST):
            found.append(((name,), value))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, ast.keyword):
                    found.append(((name, item.arg or f"**{index}"), item))
                elif isinstance(item, ast.AST):
                    found.append(((name, index), item))
    return found


def own_nodes(statement: ast.stmt) -> list[ast.AST]:
    """The nodes of a statement's own expressions (a compound statement's header alone)."""
    found: list[ast.AST] = []
    pending: list[ast.AST] = [statement]
    while pending:
        node = pending.pop()
        found.append(node)
        pending += [child for _, child in _children(node, node is statement)]
    return found


def path_to(statement: ast.stmt, target: ast.AST) -> list[tuple] | None:
    """The steps from a statement to a node within its own expressions."""
    pending: list[tuple[ast.AST, list[tuple]]] = [(statement, [])]
    while pending:
        node, path = pending.pop()
        if node is target:
            return path
        pending += [(child, [*path, step]) for step, child in _children(node, node is statement)]
    return None


def follow(old: ast.stmt, new: ast.stmt, path: list[tuple]) -> ast.AST | None:
    """The node the same steps reach in the counterpart statement, through nodes of the same
    kinds as the old statement's up to the last step; None where they do not lead there."""
    before: ast.AST = old
    after: ast.AST = new
    for step in path:
        if type(before) is not type(after):
            return None
        children = dict(_children(after, after is new))
        if step not in children:
            return None
        before, after = dict(_children(before, before is old))[step], children[step]
    return after


def statement_of(statements: list[Statement], target: ast.AST) -> tuple[int, list[tuple]] | None:
    """(index of the statement whose own expressions hold the node, the path to it)."""
    line = getattr(target, "lineno", None)
    for index, statement in enumerate(statements):
        node = statement.node
        if line is not None and not node.lineno <= line <= (node.end_lineno or node.lineno):
            continue
        path = path_to(node, target)
        if path is not None:
            return index, path
    return None


UNASSIGNED = "(not assigned here)"
REASSIGNED = "(assigned several ways)"


def definition(statements: list[Statement], before: int, name: str) -> str:
    """What a local name holds where a use reads it: the value of its one plain assignment in
    the scope before the use's statement (`attn_tp_rank = get_parallel().attn_tp_rank`, or one
    element of `a, b = x, y`), else UNASSIGNED or REASSIGNED: the same name may stand for
    different things in two functions (grok's `attn_tp_rank` was the tensor-parallel rank)."""
    values: list[str] = []
    for statement in statements[:before]:
        node = statement.node
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)) else []
        value = getattr(node, "value", None)
        for target in targets:
            if isinstance(target, ast.Name) and target.id == name:
                values.append(unparsed(value) if isinstance(node, (ast.Assign, ast.AnnAssign)) and value else REASSIGNED)
            elif isinstance(target, (ast.Tuple, ast.List)) and any(
                    isinstance(element, ast.Name) and element.id == name for element in ast.walk(target)):
                elements = target.elts
                index = next((i for i, e in enumerate(elements) if isinstance(e, ast.Name) and e.id == name), None)
                if isinstance(node, ast.Assign) and isinstance(value, (ast.Tuple, ast.List)) and index is not None \
                        and len(value.elts) == len(elements):
                    values.append(unparsed(value.elts[index]))
                else:
                    values.append(REASSIGNED)
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(
                isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == name for item in node.items):
            values.append(REASSIGNED)
    if not values:
        return UNASSIGNED
    return values[0] if len(set(values)) == 1 else REASSIGNED


def substituted(statement: ast.stmt, replacements: list[tuple[list[tuple], ast.AST]]) -> str:
    """The statement's key (`Statement.key`) with the nodes at `paths` replaced: equal to its
    counterpart's key exactly when the uses were all that changed in it."""
    copied = copy.deepcopy(statement)
    for path, node in sorted(replacements, key=lambda item: -len(item[0])):
        parent: ast.AST = copied
        for step in path[:-1]:
            parent = dict(_children(parent, parent is copied))[step]
        field, *rest = path[-1] if path else (None,)
        if field is None:
            return _key(node) if isinstance(node, ast.stmt) else ""
        value = getattr(parent, field)
        if not rest:
            setattr(parent, field, node)
        elif isinstance(rest[0], int):
            value[rest[0]] = node
        else:
            index = next(i for i, item in enumerate(value) if isinstance(item, ast.keyword)
                         and (item.arg or f"**{i}") == rest[0])
            value[index] = node
    return _key(copied)
