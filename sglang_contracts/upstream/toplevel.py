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
    if isinstance(node, ast.Dict):
        items = node.keys
    elif isinstance(node, ast.List | ast.Tuple | ast.Set):
        items = node.elts
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords \
            and node.func.id in ("set", "frozenset", "dict", "list", "tuple"):
        return [] if not node.args else (_strings(node.args[0]) if len(node.args) == 1 else None)
    else:
        return None
    if not all(isinstance(item, ast.Constant) and isinstance(item.value, str) for item in items):
        return None
    return [item.value for item in items]  # type: ignore[union-attr]


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
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                if isinstance(target, ast.Name):  # a list of its own per name: `A = B = [...]`, then A grows
                    strings = None if conditional else _strings(statement.value)
                    self._make(target.id, line, None if strings is None else list(strings))
                elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    key = target.slice
                    self._change(target.value.id, line, [key.value] if isinstance(key, ast.Constant)
                                 and isinstance(key.value, str) and not conditional else None)
        elif isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
            self._change(statement.target.id, line, None if conditional else _strings(statement.value))
        elif isinstance(statement, ast.Expr) and isinstance(call := statement.value, ast.Call) \
                and isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name):
            name, method = call.func.value.id, call.func.attr
            argument = call.args[0] if len(call.args) == 1 and not call.keywords else None
            if method in _READERS:
                return
            if method in _ADDERS and isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                self._change(name, line, None if conditional else [argument.value])
            elif method in _EXTENDERS and argument is not None:
                self._change(name, line, None if conditional else _strings(argument))
            else:
                self._change(name, line, None)
        elif isinstance(statement, ast.Delete):
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
    if isinstance(node, ast.Call) and not node.keywords:
        func = node.func
        if isinstance(func, ast.Name) and func.id in _GLOBALS_CALLS and not node.args:
            return True
        if isinstance(func, ast.Name) and func.id in _ORDERING_CALLS and len(node.args) == 1:
            return _iterates_globals(node.args[0])
        if isinstance(func, ast.Attribute) and func.attr == "keys" and not node.args:
            return _iterates_globals(func.value)
    return False


# The strings a module-level container holds where a comprehension reads it (None: not known).
ContainerLookup = Callable[[str], "list[str] | None"]


def _predicate(node: ast.expr, name: str, containers: ContainerLookup) -> Predicate | None:
    """The condition as a JSON predicate over the global's name; None when it cannot be read."""
    if isinstance(node, ast.BoolOp):
        parts = [_predicate(value, name, containers) for value in node.values]
        if any(part is None for part in parts):
            return None
        return ["and" if isinstance(node.op, ast.And) else "or", *parts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = _predicate(node.operand, name, containers)
        return None if inner is None else ["not", inner]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
            and node.func.value.id == name and node.func.attr in ("startswith", "endswith") \
            and len(node.args) == 1 and not node.keywords:
        affixes = [node.args[0].value] if isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
            else _strings(node.args[0])
        return None if affixes is None else [node.func.attr, affixes]
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.left, ast.Name) and node.left.id == name:
        operator, right = node.ops[0], node.comparators[0]
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
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ORDERING_CALLS \
            and len(node.args) == 1 and not node.keywords:
        node = node.args[0]
    if not isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp) or len(node.generators) != 1:
        return None
    generator = node.generators[0]
    if not (isinstance(generator.target, ast.Name) and isinstance(node.elt, ast.Name)
            and node.elt.id == generator.target.id and _iterates_globals(generator.iter)) or generator.is_async:
        return None
    parts = [_predicate(condition, generator.target.id, containers) for condition in generator.ifs]
    if any(part is None for part in parts):
        return None
    return ["and", *parts]


def evaluated_exports(tree: ast.Module) -> dict[str, Any] | None:
    """The module's `__all__` where griffe's reading of it would be wrong: None when every
    statement that makes it is a literal griffe reads (or there is none). Else
    {"names": [...], "globals": predicate or None, "unknown": bool}: the names listed, the
    public globals a comprehension over `globals()` keeps (`globals`: a global passing it is
    exported), and whether some part could not be evaluated (the module's other globals are
    then neither known to be exported nor known not to be)."""
    names: list[str] = []
    kept: tuple[ast.expr, int] | None = None  # the comprehension whose rule is kept, and its line
    unknown = False
    literal_only = True
    seen = False
    tables: list[LiteralContainers] = []  # made at the first comprehension: most modules have none

    def table() -> LiteralContainers:
        if not tables:
            tables.append(LiteralContainers(tree.body))
        return tables[0]

    for statement, conditional in _top_statements(tree.body):
        value: ast.expr | None = None
        extend = False
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in statement.targets):
            value = statement.value
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) \
                and statement.target.id == "__all__" and statement.value is not None:
            value = statement.value
        elif isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name) and statement.target.id == "__all__":
            value, extend = statement.value, True
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) \
                and isinstance(statement.value.func, ast.Attribute) \
                and isinstance(statement.value.func.value, ast.Name) and statement.value.func.value.id == "__all__":
            call = statement.value
            argument = call.args[0] if len(call.args) == 1 else None
            if call.func.attr == "append" and argument is not None:  # type: ignore[union-attr]
                value, extend = ast.List(elts=[argument]), True
            elif call.func.attr == "extend" and argument is not None:  # type: ignore[union-attr]
                value, extend = argument, True
            else:
                literal_only, unknown = False, True
                continue
        else:
            continue
        seen = True
        listed = _concatenated(value)
        # Whether the comprehension can be read; its rule, with the tables' strings, is built for
        # the one kept at the end only, since a module may rebuild `__all__` thousands of times.
        line = statement.lineno
        readable = listed is None and _comprehension(
            value, lambda name: _KNOWN if table().version(name, line) is not None else None) is not None
        if listed is None or conditional:
            literal_only = False
        if conditional:
            unknown = True  # names added on a condition may or may not be there
            continue
        if listed is not None:
            if extend:
                names.extend(listed)  # in place: `__all__ += [...]` on every line stays linear
            else:
                names, kept, unknown = list(listed), None, False
        elif readable and not extend:
            names, kept, unknown = [], (value, line), False
        else:
            unknown = True
            if not extend:
                names, kept = [], None
    if not seen or literal_only:
        return None
    rule = None
    if kept is not None:
        comprehension, at = kept
        rule = _comprehension(comprehension, lambda name: table().strings(name, at))
    return {"names": names, "globals": rule, "unknown": unknown}


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
            if node.id in self.classes:
                return node.id, "class"
            if node.id in self.module_aliases:
                return MODULE, "attribute"
            enclosing = self._enclosing_class()
            if enclosing is not None and node.id in ("cls", "self", "mcs", "klass"):
                return enclosing, "instance" if node.id == "self" else "class"
        if _is_this_module(node):
            return MODULE, "attribute"
        enclosing = self._enclosing_class()
        if enclosing is not None and (
                (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type"
                 and len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id == "self")
                or (isinstance(node, ast.Attribute) and node.attr == "__class__"
                    and isinstance(node.value, ast.Name) and node.value.id == "self")):
            return enclosing, "class"
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
        loop = next((node for node in reversed(self.scope) if isinstance(node, ast.For | ast.comprehension)
                     and variable.id in {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}), None)
        if loop is None:
            return None
        target = loop.target
        first = target.elts[0] if isinstance(target, ast.Tuple) and target.elts else target
        source = loop.iter
        if _own_fields(source):
            return [], 0, False  # each name is one the object already has
        if key is not variable or not isinstance(first, ast.Name) or first.id != variable.id:
            return None
        if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) and source.func.attr in ("items", "keys") \
                and not source.args:
            source = source.func.value
        elif isinstance(target, ast.Tuple):
            return None
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
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("items", "keys") \
            and not node.args:
        node = node.func.value
    if isinstance(node, ast.Call) and len(node.args) == 1:
        func = node.func
        called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        return called in ("fields", "vars") and isinstance(node.args[0], ast.Name) and node.args[0].id == "self"
    return isinstance(node, ast.Attribute) and node.attr in ("__dict__", "__slots__", "__dataclass_fields__") \
        and isinstance(node.value, ast.Name) and node.value.id == "self"


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
