"""Static types of a function's names and a class's attributes, as far as the file itself says.

Types come from annotations (`Optional[T]`, `T | None`, unions, string annotations) and from
constructor calls (`x = T(...)`). The inference is flow-insensitive and errs on silence: a
name that is ever bound another way (a loop target, an unknown value) has no type, so a
contract is never judged on a guess.
"""

from __future__ import annotations

import libcst as cst
from libcst.helpers import get_full_name_for_node

UNION_WRAPPERS = {"Optional", "Union"}
CONTAINERS = {"list", "sequence", "iterable", "iterator", "set", "frozenset", "deque", "collection",
              "mutablesequence"}  # their lower-cased names; a `for` loop yields their items
NOT_A_TYPE = {"None", "Any", "typing.Any", "object"}
POISON: tuple[str, ...] = ()  # "bound to something we cannot type"


def annotation_types(node: cst.BaseExpression | None) -> tuple[str, ...]:
    """`T:dotted` for each class an annotation admits; containers admit nothing we follow."""
    if node is None:
        return ()
    if isinstance(node, (cst.Name, cst.Attribute)):
        name = get_full_name_for_node(node)
        return () if not name or name in NOT_A_TYPE else (f"T:{name}",)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        return annotation_types(node.left) + annotation_types(node.right)
    if isinstance(node, cst.SimpleString):
        try:
            return annotation_types(cst.parse_expression(node.evaluated_value))
        except Exception:  # not an expression: a comment-like string annotation
            return ()
    if isinstance(node, cst.Subscript):
        wrapper = (get_full_name_for_node(node.value) or "").rsplit(".", 1)[-1]
        members = [element.slice.value for element in node.slice if isinstance(element.slice, cst.Index)]
        if wrapper in UNION_WRAPPERS:
            return tuple(kind for member in members for kind in annotation_types(member))
        if wrapper.lower() in CONTAINERS and len(members) == 1:
            # `L:T`: a container of T. It has no attributes we follow; a loop over it yields T.
            return tuple(f"L:{kind[2:]}" for kind in annotation_types(members[0]) if kind.startswith("T:"))
    return ()


def _chain(node: cst.BaseExpression) -> tuple[str, tuple[str, ...]] | None:
    """`a.b.c` -> ("a", ("b", "c")); None for anything but a dotted name."""
    attrs: list[str] = []
    while isinstance(node, cst.Attribute):
        attrs.append(node.attr.value)
        node = node.value
    return (node.value, tuple(reversed(attrs))) if isinstance(node, cst.Name) else None


def derived_types(prefix: str, node: cst.BaseExpression, known: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """Types reached from a typed name: `P:<type>|a.b` (the value of `x.a.b`) or `E:<type>|a.b`
    (an item of it, for loops). Nothing when the chain does not start at a typed name."""
    chain = _chain(node)
    if chain is None or chain[0] not in known:
        return POISON
    root, attrs = chain
    if prefix == "P" and not attrs:
        return known[root]
    return tuple(f"{prefix}:{kind}|{'.'.join(attrs)}" for kind in known[root])


def value_types(node: cst.BaseExpression, known: dict[str, tuple[str, ...]]) -> tuple[str, ...] | None:
    """Types of an assigned value: `T(...)` -> R:T, a typed name -> its types; None when `None`."""
    if isinstance(node, cst.Name) and node.value == "None":
        return None
    if isinstance(node, cst.Call):
        callee = get_full_name_for_node(node.func)
        if callee and not callee.startswith(("self.", "cls.")) and callee != "super":
            return (f"R:{callee}",)
        return POISON
    return derived_types("P", node, known)


class TypeTable:
    """name -> type alternatives, for every name bound; a name once bound to something untyped
    is poisoned and has no type at all."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.types: dict[str, tuple[str, ...]] = {}
        self.poisoned: set[str] = set()

    def bind(self, name: str, types: tuple[str, ...] | None) -> None:
        self.names.add(name)
        if types is None:
            return  # `x = None` narrows nothing and widens nothing
        if not types:
            self.poisoned.add(name)
            return
        current = self.types.get(name, ())
        self.types[name] = current + tuple(t for t in types if t not in current)

    def typed(self) -> dict[str, tuple[str, ...]]:
        return {name: types for name, types in self.types.items() if name not in self.poisoned}


def _params(function: cst.FunctionDef) -> list[cst.Param]:
    p = function.params
    star = [p.star_arg] if isinstance(p.star_arg, cst.Param) else []
    kwargs = [p.star_kwarg] if p.star_kwarg else []
    return [*p.posonly_params, *p.params, *star, *p.kwonly_params, *kwargs]


def parameter_list(function: cst.FunctionDef) -> tuple[tuple[str, str, bool], ...]:
    """(name, kind, has_default) in upstream's vocabulary (po/pk/va/ko/vk)."""
    p = function.params
    result = [(x.name.value, "po", x.default is not None) for x in p.posonly_params]
    result += [(x.name.value, "pk", x.default is not None) for x in p.params]
    if isinstance(p.star_arg, cst.Param):
        result.append((p.star_arg.name.value, "va", False))
    result += [(x.name.value, "ko", x.default is not None) for x in p.kwonly_params]
    if p.star_kwarg:
        result.append((p.star_kwarg.name.value, "vk", False))
    return tuple(result)


def decorator_names(function: cst.FunctionDef | cst.ClassDef) -> tuple[str, ...]:
    names = []
    for decorator in function.decorators:
        node = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
        names.append((get_full_name_for_node(node) or "").rsplit(".", 1)[-1])
    return tuple(names)


class _Bindings:
    """Every binding in one function body, found by walking its statements only (nested
    functions and classes bind just their name). Expressions are not entered, which keeps the
    walk cheap: comprehension variables stay local to their comprehension anyway, and a name
    bound only by `:=` simply gets no type."""

    def __init__(self, table: TypeTable, attributes: TypeTable | None, receiver: str | None) -> None:
        self.table = table
        self.attributes = attributes  # self.<attr> bindings, when the function is a method
        self.receiver = receiver

    def _target(self, target: cst.BaseExpression, types: tuple[str, ...] | None) -> None:
        if isinstance(target, cst.Name):
            self.table.bind(target.value, types)
        elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
                and target.value.value == self.receiver and self.attributes is not None:
            self.attributes.bind(target.attr.value, types)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._target(element.value, POISON)
        elif isinstance(target, cst.StarredElement):
            self._target(target.value, POISON)

    def walk(self, block: cst.BaseSuite | cst.BaseStatement | None) -> None:
        if block is None:
            return
        for statement in getattr(block, "body", ()):
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    self._small(small)
            elif isinstance(statement, cst.BaseSmallStatement):  # `if x: y = 1` on one line
                self._small(statement)
            else:
                self._compound(statement)

    def _compound(self, node: cst.BaseCompoundStatement) -> None:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            self.table.bind(node.name.value, POISON)
            return
        if isinstance(node, cst.For):
            if isinstance(node.target, cst.Name):
                self._target(node.target, derived_types("E", node.iter, self.table.typed()))
            else:
                self._target(node.target, POISON)
        elif isinstance(node, cst.With):
            for item in node.items:
                if item.asname is not None:
                    self._target(item.asname.name, POISON)
        elif isinstance(node, (cst.Try, cst.TryStar)):
            for handler in node.handlers:
                if handler.name is not None:
                    self._target(handler.name.name, POISON)
                self.walk(handler.body)
            self.walk(node.finalbody.body if node.finalbody else None)
        elif isinstance(node, cst.Match):
            for case in node.cases:
                self.walk(case.body)
            return  # a match statement has cases, no body of its own
        self.walk(node.body)
        orelse = getattr(node, "orelse", None)
        if isinstance(orelse, cst.If):
            self._compound(orelse)
        elif orelse is not None:
            self.walk(orelse.body)

    def _small(self, node: cst.BaseSmallStatement) -> None:
        if isinstance(node, cst.Assign):
            types = value_types(node.value, self.table.typed())
            for target in node.targets:
                self._target(target.target, types if len(node.targets) == 1 else POISON)
        elif isinstance(node, cst.AnnAssign):
            self._target(node.target, annotation_types(node.annotation.annotation) or POISON)
        elif isinstance(node, cst.AugAssign):
            self._target(node.target, POISON)
        elif isinstance(node, (cst.Import, cst.ImportFrom)) and not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                bound = alias.asname.name if alias.asname else alias.name
                if isinstance(bound, cst.Name):
                    self.table.bind(bound.value, POISON)
                elif isinstance(bound, cst.Attribute):  # `import a.b` binds `a`
                    self.table.bind((get_full_name_for_node(bound) or "").split(".")[0], POISON)
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            for item in node.names:
                self.table.bind(item.name.value, POISON)


def receiver_name(function: cst.FunctionDef, in_class: bool) -> str | None:
    """The name a method calls its instance, or None (a function, a static or class method)."""
    if not in_class or {"staticmethod", "classmethod"} & set(decorator_names(function)):
        return None
    params = [*function.params.posonly_params, *function.params.params]
    return params[0].name.value if params else None


def function_types(function: cst.FunctionDef, class_name: str | None,
                   attributes: TypeTable | None = None) -> dict[str, tuple[str, ...]]:
    """The typed names of one function: parameters, then every binding in its body.
    Bindings of `self.<attr>` are added to `attributes` (the class's attribute table)."""
    table = TypeTable()
    receiver = receiver_name(function, class_name is not None)
    for param in _params(function):
        name = param.name.value
        if name == receiver:
            table.bind(name, (f"S:{class_name}",))
        elif param.star or param is function.params.star_arg or param is function.params.star_kwarg:
            table.bind(name, POISON)
        else:
            table.bind(name, annotation_types(param.annotation.annotation if param.annotation else None) or POISON)
    _Bindings(table, attributes, receiver).walk(function.body)
    typed = table.typed()
    if receiver is not None and typed.get(receiver) != (f"S:{class_name}",):
        typed.pop(receiver, None)  # `self` rebound: trust nothing about it
    return typed
