"""What a module's top level makes at import time that griffe does not read: an `__all__`
built by a comprehension over the module's globals, and attributes set by name at run time
(`setattr(cls, name, ...)`, `globals()[name] = ...`).

Both are read from the parsed tree, never run. A shape that cannot be evaluated is said to be
so (an export rule of "unknown", a dynamic owner with its reason): the checks then say they
could not verify, rather than claim a name is gone.
"""

from __future__ import annotations

import ast
import bisect
from typing import Any, Callable, Iterator

# What a comprehension may iterate to see every global of the module, as a name list.
_GLOBALS_CALLS = {"globals", "dir", "vars", "locals"}
_ORDERING_CALLS = {"list", "sorted", "tuple", "set", "frozenset"}
# Methods of a literal container that add keys (dict/set/list), and those that only read it.
_ADDERS = {"add", "append"}
_EXTENDERS = {"update", "extend"}
_READERS = {"get", "items", "keys", "values", "copy", "index", "count", "__contains__"}
Predicate = list  # a JSON predicate over a name: ["and", p...], ["not", p], ["startswith", [..]], ...


def _top_statements(body: list[ast.stmt], conditional: bool = False) -> Iterator[tuple[ast.stmt, bool]]:
    """The module's statements in order, with those of top-level `if`/`try`/`with`/`for` blocks,
    each with whether it runs only on some condition."""
    for statement in body:
        yield statement, conditional
        if isinstance(statement, ast.If):
            yield from _top_statements(statement.body, True)
            yield from _top_statements(statement.orelse, True)
        elif isinstance(statement, ast.Try | ast.TryStar):
            yield from _top_statements(statement.body, conditional)
            for handler in statement.handlers:
                yield from _top_statements(handler.body, True)
            yield from _top_statements(statement.orelse, True)
            yield from _top_statements(statement.finalbody, conditional)
        elif isinstance(statement, ast.With):
            yield from _top_statements(statement.body, conditional)
        elif isinstance(statement, ast.For | ast.While):
            yield from _top_statements(statement.body, True)


def _strings(node: ast.AST) -> list[str] | None:
    """The strings a literal list, tuple or set (or a dict's keys) holds; None when not literal."""
    if _is_container_call(node):
        return [] if not node.args else (_strings(node.args[0]) if len(node.args) == 1 else None)
    items = _literal_items(node)
    if items is None or not all(isinstance(item, ast.Constant) and isinstance(item.value, str) for item in items):
        return None
    return [item.value for item in items]  # type: ignore[union-attr]


def _is_container_call(node: ast.AST) -> bool:
    """`set(...)`, `frozenset(...)`, `dict(...)`, `list(...)` or `tuple(...)` without keywords."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords \
        and node.func.id in ("set", "frozenset", "dict", "list", "tuple")


def _literal_items(node: ast.AST) -> list[ast.expr | None] | None:
    """The elements of a list, tuple or set display, the keys of a dict display; None for any other node."""
    if isinstance(node, ast.Dict):
        return node.keys
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return node.elts
    return None


class LiteralContainers:
    """Each module-level literal container's strings as of any line, from one pass over the
    top level (`X = {...}`, then `X["k"] = v`, `X.add("k")`, `X.update({...})`, `X |= {...}`).

    Asked once per loop or `__all__` statement, so it must not read the top level again for
    each: a module of thousands of such statements took minutes. Each name keeps its versions
    (line, strings so far, how many of them); keys added one by one extend one shared list, so
    the pass is linear however often a table grows."""

    def __init__(self, body: list[ast.stmt]) -> None:
        # name -> [(line of the statement that made this version, its list or None, its length)]
        self._versions: dict[str, list[tuple[int, list[str] | None, int]]] = {}
        for statement, conditional in _top_statements(body):
            self._read(statement, conditional)

    def _make(self, name: str, line: int, strings: list[str] | None) -> None:
        self._versions.setdefault(name, []).append((line, strings, 0 if strings is None else len(strings)))

    def _change(self, name: str, line: int, added: list[str] | None) -> None:
        versions = self._versions.get(name)
        if not versions or versions[-1][1] is None:
            return  # not a literal container, or one already unknown
        strings = versions[-1][1]
        if added is None:
            versions.append((line, None, 0))
            return
        strings.extend(added)  # the earlier versions keep their length: a prefix of this list
        versions.append((line, strings, len(strings)))

    def _read(self, statement: ast.stmt, conditional: bool) -> None:
        line = statement.lineno
        if isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
            self._read_assignment(statement, line, conditional)
        elif isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
            self._change(statement.target.id, line, None if conditional else _strings(statement.value))
        elif (call := _method_call_on_name(statement)) is not None:
            if call.func.attr not in _READERS:
                self._change(call.func.value.id, line, _added_by(call, conditional))
        elif isinstance(statement, ast.Delete):
            self._read_delete(statement, line)

    def _read_assignment(self, statement: ast.Assign | ast.AnnAssign, line: int, conditional: bool) -> None:
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        for target in targets:
            if isinstance(target, ast.Name):  # a list of its own per name: `A = B = [...]`, then A grows
                strings = None if conditional else _strings(statement.value)
                self._make(target.id, line, None if strings is None else list(strings))
            elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                self._change(target.value.id, line, None if conditional else _string_key(target.slice))

    def _read_delete(self, statement: ast.Delete, line: int) -> None:
        for target in statement.targets:
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                self._change(target.value.id, line, None)  # a key taken out: the keys left are not known

    def _latest(self, name: str, until: int | None) -> tuple[int, list[str] | None, int] | None:
        """The name's last version made before line `until`; None when it had none yet."""
        versions = self._versions.get(name, [])
        index = len(versions) if until is None else bisect.bisect_left(versions, until, key=lambda version: version[0])
        return versions[index - 1] if index else None

    def version(self, name: str, until: int | None = None) -> tuple[list[str], int] | None:
        """(the shared list, how many of its strings) the container holds once the statements
        before line `until` ran; None when it is not a literal container then."""
        latest = self._latest(name, until)
        return None if latest is None or latest[1] is None else (latest[1], latest[2])

    def strings(self, name: str, until: int | None = None) -> list[str] | None:
        """The strings the container holds once the statements before line `until` ran."""
        version = self.version(name, until)
        return None if version is None else version[0][:version[1]]

    def at(self, until: int | None = None) -> dict[str, list[str] | None]:
        """name -> strings (None: changed otherwise) for every name made before line `until`."""
        return {name: self.strings(name, until) for name in self._versions if self._latest(name, until) is not None}


def _method_call_on_name(statement: ast.stmt) -> ast.Call | None:
    """The call of a statement `NAME.method(...)`."""
    if isinstance(statement, ast.Expr) and isinstance(call := statement.value, ast.Call) \
            and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
        return call
    return None


def _string_key(key: ast.expr) -> list[str] | None:
    """[the key] of `X["key"] = ...`; None when it is not a string literal."""
    return [key.value] if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


def _added_by(call: ast.Call, conditional: bool) -> list[str] | None:
    """The strings `X.add("k")`, `X.append("k")`, `X.update({...})` or `X.extend([...])` add to a
    literal container; None when they are not known (any other method, or on a condition)."""
    method = call.func.attr  # type: ignore[attr-defined]
    argument = call.args[0] if len(call.args) == 1 and not call.keywords else None
    if method in _ADDERS and isinstance(argument, ast.Constant) and isinstance(argument.value, str):
        return None if conditional else [argument.value]
    if method in _EXTENDERS and argument is not None:
        return None if conditional else _strings(argument)
    return None


def literal_containers(body: list[ast.stmt], until: int | None = None) -> dict[str, list[str] | None]:
    """name -> the strings a module-level literal container holds once the statements before
    line `until` ran; None for a name changed otherwise, whose contents are then unknown."""
    return LiteralContainers(body).at(until)


# -- __all__ ----------------------------------------------------------------------------------

def _concatenated(node: ast.expr) -> list[str] | None:
    """The strings of a literal list, or of literal lists added together (`[...] + [...]`)."""
    parts: list[ast.expr] = []
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # nested to the left, a level per `+`
        parts.append(node.right)
        node = node.left
    parts.append(node)
    names: list[str] = []
    for part in reversed(parts):
        listed = _strings(part) if isinstance(part, ast.List | ast.Tuple) else None
        if listed is None:
            return None
        names += listed
    return names


def _iterates_globals(node: ast.AST) -> bool:
    """`globals()`, `list(globals())`, `globals().keys()`, `sorted(dir())`, ..."""
    if not (isinstance(node, ast.Call) and not node.keywords):
        return False
    func = node.func
    if isinstance(func, ast.Name):
        return _call_iterates_globals(func.id, node.args)
    if isinstance(func, ast.Attribute) and func.attr == "keys" and not node.args:
        return _iterates_globals(func.value)
    return False


def _call_iterates_globals(called: str, arguments: list[ast.expr]) -> bool:
    """Whether `called(*arguments)` iterates the globals: `globals()`, or an ordering of them."""
    if called in _GLOBALS_CALLS and not arguments:
        return True
    if called in _ORDERING_CALLS and len(arguments) == 1:
        return _iterates_globals(arguments[0])
    return False


# The strings a module-level container holds where a comprehension reads it (None: not known).
ContainerLookup = Callable[[str], "list[str] | None"]


def _predicate(node: ast.expr, name: str, containers: ContainerLookup) -> Predicate | None:
    """The condition as a JSON predicate over the global's name; None when it cannot be read."""
    if isinstance(node, ast.BoolOp):
        return _combined_predicate(node, name, containers)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _predicate(node.operand, name, containers)
        return None if inner is None else ["not", inner]
    if _is_affix_test(node, name):
        return _affix_predicate(node)  # type: ignore[arg-type]
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.left, ast.Name) and node.left.id == name:
        return _compared_predicate(node.ops[0], node.comparators[0], containers)
    return None


def _combined_predicate(node: ast.BoolOp, name: str, containers: ContainerLookup) -> Predicate | None:
    """["and"/"or", parts...] of `a and b`, `a or b`; None when a part cannot be read."""
    parts = [_predicate(value, name, containers) for value in node.values]
    if any(part is None for part in parts):
        return None
    return ["and" if isinstance(node.op, ast.And) else "or", *parts]


def _is_affix_test(node: ast.expr, name: str) -> bool:
    """`<name>.startswith(x)` or `<name>.endswith(x)`, one argument."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
        and isinstance(node.func.value, ast.Name) and node.func.value.id == name \
        and node.func.attr in ("startswith", "endswith") and len(node.args) == 1 and not node.keywords


def _affix_predicate(node: ast.Call) -> Predicate | None:
    """["startswith"/"endswith", affixes] of an affix test (_is_affix_test)."""
    argument = node.args[0]
    affixes = [argument.value] if isinstance(argument, ast.Constant) and isinstance(argument.value, str) \
        else _strings(argument)
    return None if affixes is None else [node.func.attr, affixes]  # type: ignore[attr-defined]


def _compared_predicate(operator: ast.cmpop, right: ast.expr, containers: ContainerLookup) -> Predicate | None:
    """The predicate of `<name> in X`, `<name> not in X`, `<name> == "s"`, `<name> != "s"`."""
    if isinstance(operator, ast.In | ast.NotIn):
        members = containers(right.id) if isinstance(right, ast.Name) else _strings(right)
        if members is None:
            return None
        return ["in", members] if isinstance(operator, ast.In) else ["not", ["in", members]]
    if isinstance(operator, ast.Eq | ast.NotEq) and isinstance(right, ast.Constant) and isinstance(right.value, str):
        return ["in", [right.value]] if isinstance(operator, ast.Eq) else ["not", ["in", [right.value]]]
    return None


def holds(predicate: Predicate, name: str) -> bool:
    """Whether a name passes a predicate that `evaluated_exports` recorded."""
    kind = predicate[0]
    if kind == "and":
        return all(holds(part, name) for part in predicate[1:])
    if kind == "or":
        return any(holds(part, name) for part in predicate[1:])
    if kind == "not":
        return not holds(predicate[1], name)
    if kind == "startswith":
        return name.startswith(tuple(predicate[1]))
    if kind == "endswith":
        return name.endswith(tuple(predicate[1]))
    if kind == "in":
        return name in predicate[1]
    return False


def _comprehension(node: ast.expr, containers: ContainerLookup) -> Predicate | None:
    """The predicate of `[n for n in list(globals()) if ...]` (any ordering wrapper, a set or
    generator), which a global's name must pass to be exported; None for any other shape."""
    node = _ordered_inner(node)
    if not isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp) or len(node.generators) != 1:
        return None
    generator = node.generators[0]
    if not _yields_each_global(node, generator):
        return None
    parts = [_predicate(condition, generator.target.id, containers) for condition in generator.ifs]
    if any(part is None for part in parts):
        return None
    return ["and", *parts]


def _ordered_inner(node: ast.expr) -> ast.expr:
    """X of `list(X)`, `sorted(X)`, `tuple(X)`, ... (an ordering wrapper); the node itself otherwise."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ORDERING_CALLS \
            and len(node.args) == 1 and not node.keywords:
        return node.args[0]
    return node


def _yields_each_global(node: ast.ListComp | ast.SetComp | ast.GeneratorExp, generator: ast.comprehension) -> bool:
    """Whether the comprehension's one (not async) generator yields its variable, over the globals."""
    return isinstance(generator.target, ast.Name) and isinstance(node.elt, ast.Name) \
        and node.elt.id == generator.target.id and _iterates_globals(generator.iter) and not generator.is_async


def evaluated_exports(tree: ast.Module) -> dict[str, Any] | None:
    """The module's `__all__` where griffe's reading of it would be wrong: None when every
    statement that makes it is a literal griffe reads (or there is none). Else
    {"names": [...], "globals": predicate or None, "unknown": bool}: the names listed, the
    public globals a comprehension over `globals()` keeps (`globals`: a global passing it is
    exported), and whether some part could not be evaluated (the module's other globals are
    then neither known to be exported nor known not to be)."""
    return _read_exports(tree).result()


def listed_exports(tree: ast.Module) -> list[str] | None:
    """The names the module's `__all__` lists, where every statement that makes it is read
    (literals, their sums, `+=`, `append`, `extend`); None where it has none. A module that
    makes it otherwise (a comprehension, a condition, a call not read) gives UNREAD_EXPORTS:
    what its star import binds is not known."""
    reading = _read_exports(tree)
    if not reading.seen and not reading.unknown:
        return None
    if reading.kept is None and not reading.unknown:
        return reading.names
    return UNREAD_EXPORTS


UNREAD_EXPORTS = ["*"]  # listed_exports' answer for an `__all__` not read: no name is `*`


def _read_exports(tree: ast.Module) -> "_ExportsReading":
    reading = _ExportsReading(tree)
    for statement, conditional in _top_statements(tree.body):
        reading.read(statement, conditional)
    return reading


class _ExportsReading:
    """evaluated_exports' reading of the statements that make `__all__`, in order."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.names: list[str] = []
        self.kept: tuple[ast.expr, int] | None = None  # the comprehension whose rule is kept, and its line
        self.unknown = False
        self.literal_only = True
        self.seen = False
        self._table: LiteralContainers | None = None  # made at the first comprehension: most modules have none

    def table(self) -> LiteralContainers:
        if self._table is None:
            self._table = LiteralContainers(self.tree.body)
        return self._table

    def read(self, statement: ast.stmt, conditional: bool) -> None:
        change = _change_of_all(statement)
        if change is None:
            return
        value, extend = change
        if value is None:  # changed by a method that is not read
            self.literal_only, self.unknown = False, True
            return
        if isinstance(statement, ast.Expr):  # `__all__.extend(...)`: griffe reads only assignments to `__all__`
            self.literal_only = False
        self.seen = True
        listed = _concatenated(value)
        # Whether the comprehension can be read; its rule, with the tables' strings, is built for
        # the one kept at the end only, since a module may rebuild `__all__` thousands of times.
        line = statement.lineno
        readable = listed is None and _comprehension(
            value, lambda name: _KNOWN if self.table().version(name, line) is not None else None) is not None
        if listed is None or conditional:
            self.literal_only = False
        if conditional:
            self.unknown = True  # names added on a condition may or may not be there
            return
        self._take(value, extend, listed, readable, line)

    def _take(self, value: ast.expr, extend: bool, listed: list[str] | None, readable: bool, line: int) -> None:
        """An unconditional setting (or extension) of `__all__`."""
        if listed is not None:
            if extend:
                self.names.extend(listed)  # in place: `__all__ += [...]` on every line stays linear
            else:
                self.names, self.kept, self.unknown = list(listed), None, False
        elif readable and not extend:
            self.names, self.kept, self.unknown = [], (value, line), False
        else:
            self.unknown = True
            if not extend:
                self.names, self.kept = [], None

    def result(self) -> dict[str, Any] | None:
        if not self.seen or self.literal_only:
            return None
        rule = None
        if self.kept is not None:
            comprehension, at = self.kept
            rule = _comprehension(comprehension, lambda name: self.table().strings(name, at))
        return {"names": self.names, "globals": rule, "unknown": self.unknown}


def _is_all(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "__all__"


def _change_of_all(statement: ast.stmt) -> tuple[ast.expr | None, bool] | None:
    """(the value, whether it extends `__all__`) of a statement that sets or extends it ((None,
    True) for a method call on it that is not read); None for any other statement."""
    if isinstance(statement, ast.Expr):
        return _method_call_on_all(statement.value)
    return _assignment_to_all(statement)


def _assignment_to_all(statement: ast.stmt) -> tuple[ast.expr, bool] | None:
    """`__all__ = ...`, `__all__: T = ...`, `__all__ += ...`."""
    if isinstance(statement, ast.Assign) and any(_is_all(target) for target in statement.targets):
        return statement.value, False
    if isinstance(statement, ast.AnnAssign) and _is_all(statement.target) and statement.value is not None:
        return statement.value, False
    if isinstance(statement, ast.AugAssign) and _is_all(statement.target):
        return statement.value, True
    return None


def _method_call_on_all(value: ast.expr) -> tuple[ast.expr | None, bool] | None:
    """`__all__.append(x)`, `__all__.insert(i, x)` (as `[x]`), `__all__.extend(x)`; (None, True)
    for another call on it (`remove`, `clear`, keywords: what is left is not read)."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and _is_all(value.func.value)):
        return None
    method, arguments = value.func.attr, value.args
    if value.keywords:
        return None, True
    if method == "append" and len(arguments) == 1 or method == "insert" and len(arguments) == 2:
        return ast.List(elts=[arguments[-1]]), True
    if method == "extend" and len(arguments) == 1:
        return arguments[0], True
    return None, True


_KNOWN: list[str] = []  # what a table read as known answers before its strings are needed


# -- attributes set by name -------------------------------------------------------------------

MODULE = ""  # the owner key of the module itself in dynamic_setters' answer


class _Setters:
    """Every `setattr(owner, name, ...)` and `globals()[name] = ...` of a module, by owner."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
        self.module_aliases = {target.id for node in tree.body if isinstance(node, ast.Assign)
                               and _is_this_module(node.value) for target in node.targets if isinstance(target, ast.Name)}
        self.literal: dict[str, dict[str, tuple[int, str]]] = {}  # owner -> name -> (line, kind)
        self.dynamic: dict[str, str] = {}  # owner -> why its attributes are not known
        self.scope: list[ast.AST] = []
        self.table = LiteralContainers(tree.body)
        # (owner, id of a table's list) -> how many of its strings were set on the owner: a loop
        # over the table again sets only the strings added since (thousands of loops over one
        # table stay linear). The table keeps its lists alive, so an id is never reused.
        self.applied: dict[tuple[str, int], int] = {}

    def _where(self) -> str:
        names = [node.name for node in self.scope if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)]
        return ".".join(names) if names else "the module's top level"

    def _enclosing_class(self) -> str | None:
        return next((node.name for node in reversed(self.scope) if isinstance(node, ast.ClassDef)), None)

    def _owner(self, node: ast.expr) -> tuple[str, str] | None:
        """(owner, kind of what is set on it) for the object a setattr targets, when it is a
        class of this module (kind "class"), its instances ("instance"), or the module."""
        if isinstance(node, ast.Name):
            return self._named_owner(node.id)
        if _is_this_module(node):
            return MODULE, "attribute"
        enclosing = self._enclosing_class()
        if enclosing is not None and (_is_type_of_self(node) or _is_class_of_self(node)):
            return enclosing, "class"
        return None

    def _named_owner(self, name: str) -> tuple[str, str] | None:
        """_owner of a name: a class of the module, an alias of the module, or `self`/`cls` in a class."""
        if name in self.classes:
            return name, "class"
        if name in self.module_aliases:
            return MODULE, "attribute"
        enclosing = self._enclosing_class()
        if enclosing is not None and name in ("cls", "self", "mcs", "klass"):
            return enclosing, "instance" if name == "self" else "class"
        return None

    def _set(self, owner: str, kind: str, key: ast.expr, line: int, written: str) -> None:
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            self.literal.setdefault(owner, {}).setdefault(key.value, (line, kind))
            return
        keys = self._loop_keys(key)
        if keys is not None:
            names, count, from_table = keys
            start = 0
            if from_table:
                start = self.applied.get((owner, id(names)), 0)
                self.applied[(owner, id(names))] = max(start, count)
            for name in names[start:count]:  # the first setting of a name is the one kept
                self.literal.setdefault(owner, {}).setdefault(name, (line, kind))
            return
        self.dynamic.setdefault(owner, f"{written} in {self._where()}")

    def _loop_keys(self, key: ast.expr) -> tuple[list[str], int, bool] | None:
        """The names a loop variable takes, as (a list, how many of its first strings, whether
        the list is a module table's), where the loop runs over a literal (`for name in ("a",
        "b")`), a module table read as a literal (`for _name, _r in _TABLE.items():
        globals()[_name] = ...`), or the object's own fields (`for f in fields(self):
        setattr(self, f.name, ...)` sets nothing new: no names); None otherwise."""
        variable = key.value if isinstance(key, ast.Attribute) and key.attr == "name" else key
        if not isinstance(variable, ast.Name):
            return None
        loop = self._loop_over(variable.id)
        if loop is None:
            return None
        if _own_fields(loop.iter):
            return [], 0, False  # each name is one the object already has
        if key is not variable or not _first_target_is(loop.target, variable.id):
            return None
        return self._iterated_strings(loop)

    def _loop_over(self, name: str) -> ast.For | ast.comprehension | None:
        """The innermost loop around here whose target binds `name`."""
        return next((node for node in reversed(self.scope) if isinstance(node, ast.For | ast.comprehension)
                     and name in {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}), None)

    def _iterated_strings(self, loop: ast.For | ast.comprehension) -> tuple[list[str], int, bool] | None:
        """_loop_keys' answer for the strings the loop iterates (a mapping's keys, with `.items()`
        or `.keys()`), when it runs over a literal or a module table read as one."""
        source = _mapping_of_keys(loop.iter)
        if source is loop.iter and isinstance(loop.target, ast.Tuple):
            return None  # unpacking what is not a mapping's items
        if isinstance(source, ast.Name):
            top_level = not any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) for n in self.scope)
            version = self.table.version(source.id, loop.lineno) if top_level else None
            return None if version is None else (*version, True)
        listed = _strings(source)
        return None if listed is None else (listed, len(listed), False)

    def walk(self) -> None:
        """Every node, with the scopes around it, by a stack: an expression nests a level per
        link of a method chain, deeper than recursion may go."""
        pending: list[tuple[ast.AST, tuple[ast.AST, ...]]] = [(self.tree, ())]
        while pending:
            node, scope = pending.pop()
            self.scope = list(scope)
            if isinstance(node, ast.Call):
                self._call(node)
            elif isinstance(node, ast.Assign):
                self._assign(node)
            inner = (*scope, node) if isinstance(node, _SCOPES) else scope
            pending.extend((child, inner) for child in reversed(list(ast.iter_child_nodes(node))))

    def _call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "setattr" and len(node.args) >= 2:
            owner = self._owner(node.args[0])
            if owner is not None:
                self._set(owner[0], owner[1], node.args[1], node.lineno,
                          f"setattr({_short(node.args[0])}, {_short(node.args[1])}, ...)")
        elif isinstance(func, ast.Attribute) and func.attr in ("update", "setdefault") and _is_globals(func.value):
            self.dynamic.setdefault(MODULE, f"globals().{func.attr}(...) in {self._where()}")

    def _assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            for each in _flat(target):
                if isinstance(each, ast.Subscript) and _is_globals(each.value):
                    self._set(MODULE, "attribute", each.slice, node.lineno, f"globals()[{_short(each.slice)}] = ...")


# What a setattr's place is judged by: the class or function it is in, the loop over its names.
_SCOPES = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef, ast.For, ast.AsyncFor, ast.comprehension)


def _own_fields(node: ast.expr) -> bool:
    """`fields(self)`, `dataclasses.fields(self)`, `vars(self)`, `self.__dict__` (or `.items()`/`.keys()`
    of these), `self.__slots__`: what an object has already."""
    node = _mapping_of_keys(node)
    if isinstance(node, ast.Call) and len(node.args) == 1:
        return _called_name(node.func) in ("fields", "vars") and _is_self(node.args[0])
    return isinstance(node, ast.Attribute) and node.attr in ("__dict__", "__slots__", "__dataclass_fields__") \
        and _is_self(node.value)


def _mapping_of_keys(node: ast.expr) -> ast.expr:
    """X of `X.items()` or `X.keys()`; the node itself otherwise."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("items", "keys") \
            and not node.args:
        return node.func.value
    return node


def _called_name(func: ast.expr) -> str:
    """`f` of `f(...)` or of `mod.f(...)`; "" for any other callee."""
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _first_target_is(target: ast.expr, name: str) -> bool:
    """Whether a loop's target is `name`, or a tuple whose first element is."""
    first = target.elts[0] if isinstance(target, ast.Tuple) and target.elts else target
    return isinstance(first, ast.Name) and first.id == name


def _is_type_of_self(node: ast.expr) -> bool:
    """`type(self)`."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type" \
        and len(node.args) == 1 and _is_self(node.args[0])


def _is_class_of_self(node: ast.expr) -> bool:
    """`self.__class__`."""
    return isinstance(node, ast.Attribute) and node.attr == "__class__" and _is_self(node.value)


def _flat(target: ast.expr) -> Iterator[ast.expr]:
    if isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _flat(element)
    else:
        yield target


def _is_globals(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("globals", "vars") \
        and not node.args


def _is_this_module(node: ast.expr) -> bool:
    """`sys.modules[__name__]`."""
    return isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name) and node.slice.id == "__name__" \
        and isinstance(node.value, ast.Attribute) and node.value.attr == "modules"


def _short(node: ast.expr) -> str:
    try:
        text = ast.unparse(node)
    except RecursionError:  # a chain deeper than unparse recurses: the reason needs no more than its start
        return "..."
    return text if len(text) <= 40 else text[:37] + "..."


def dynamic_setters(tree: ast.Module) -> tuple[dict[str, dict[str, tuple[int, str]]], dict[str, str]]:
    """(owner -> name -> (line, kind) of the attributes set by a literal name, owner -> why the
    owner's other attributes are not known) for the module's classes and the module itself
    (owner MODULE): `setattr(cls, name, ...)` in a registration method, `setattr(self, k, v)` over
    keyword arguments, `globals()[name] = ...` in a loop over a table that cannot be read."""
    setters = _Setters(tree)
    setters.walk()
    return setters.literal, setters.dynamic
