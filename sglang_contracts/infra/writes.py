"""What a statement writes or hands on, read the same way in an upstream release's function
bodies (upstream/bodies.py) and in the project's (project/scanner.py): the value a name is
given, and the `self.<name>` a node may fill."""

from __future__ import annotations

import ast

# Methods of a container (or any object) that only look at it or take from it: an empty one stays empty.
READ_ONLY = frozenset({"get", "keys", "values", "items", "copy", "count", "index", "qsize", "empty",
                       "full", "is_set", "startswith", "endswith", "format", "split", "strip",
                       "clear", "pop", "popleft", "popitem", "remove", "discard", "get_nowait"})
# Builtins that only look at their argument.
LOOKERS = frozenset({"len", "bool", "isinstance", "any", "all", "sorted", "list", "tuple", "set", "sum",
                     "min", "max", "id", "repr", "str", "hasattr", "getattr", "iter", "enumerate", "type"})


def self_attribute(node: ast.AST, receiver: str) -> str | None:
    """`name` when the node is `<receiver>.name` (`self.name`), else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == receiver:
        return node.attr
    return None


def value_token(node: ast.AST | None) -> str:
    """What a value written or compared is, when the source says it: "c:<repr>" for a literal
    (None, True, 0, "x"), "e:Enum.MEMBER" for a dotted name ending in an upper-case member,
    "empty" for an empty list, dict, set, tuple or deque; "" for anything else."""
    if isinstance(node, ast.Constant):
        return f"c:{node.value!r}" if isinstance(node.value, (type(None), bool, int, float, str, bytes)) else ""
    if isinstance(node, ast.Attribute):
        return _enum_member_token(node)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return "" if node.elts else "empty"
    if isinstance(node, ast.Dict):
        return "" if node.keys else "empty"
    if isinstance(node, ast.Call):
        return _made_empty_token(node)
    return ""


def _enum_member_token(node: ast.Attribute) -> str:
    """"e:Enum.MEMBER" for `Enum.MEMBER` or `mod.Enum.MEMBER`; "" for any other attribute."""
    if isinstance(node.value, (ast.Name, ast.Attribute)) and node.attr.isupper() and node.attr[:1].isalpha():
        owner = node.value.attr if isinstance(node.value, ast.Attribute) else node.value.id
        return f"e:{owner}.{node.attr}" if owner[:1].isupper() else ""
    return ""


def _made_empty_token(node: ast.Call) -> str:
    """"empty" for `list()`, `dict()`, `deque()`, ... called without arguments; "" for any other call."""
    if node.args or node.keywords:
        return ""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return "empty" if name in ("list", "dict", "set", "tuple", "deque", "OrderedDict", "defaultdict") else ""


# The nodes through which code may fill `self.<name>` or hand it on (add_mutated).
MUTATING = frozenset({ast.Assign, ast.AugAssign, ast.Subscript, ast.Call})


def add_mutated(child: ast.AST, receiver: str, mutates: set[str]) -> None:
    """Add to `mutates` the self.<name> that the node itself may fill or hand on: `y = self.x`
    (an alias that may be filled), `self.x += ...`, `self.x[k] = v`, `self.x.append(...)`,
    `f(self.x)` (not a builtin that only looks, not a method that only reads)."""
    if isinstance(child, ast.Assign):
        name = self_attribute(child.value, receiver)
    elif isinstance(child, ast.AugAssign):
        name = self_attribute(child.target, receiver)
    elif isinstance(child, ast.Subscript):
        name = self_attribute(child.value, receiver) if isinstance(child.ctx, (ast.Store, ast.Del)) else None
    elif isinstance(child, ast.Call):
        _add_called_mutated(child, receiver, mutates)
        return
    else:
        return
    if name is not None:
        mutates.add(name)


def _add_called_mutated(call: ast.Call, receiver: str, mutates: set[str]) -> None:
    """add_mutated of a call: `self.x.append(...)` (not a method that only reads), and each
    `self.x` handed to it (not to a builtin that only looks)."""
    func = call.func
    if isinstance(func, ast.Attribute) and (name := self_attribute(func.value, receiver)) is not None \
            and func.attr not in READ_ONLY:
        mutates.add(name)
    if not (isinstance(func, ast.Name) and func.id in LOOKERS):
        for argument in [*call.args, *(k.value for k in call.keywords)]:
            argument = argument.value if isinstance(argument, ast.Starred) else argument
            if (name := self_attribute(argument, receiver)) is not None:
                mutates.add(name)
