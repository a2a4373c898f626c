"""Static types of a function's names and a class's attributes, as far as the file itself says.

Types come from annotations (`Optional[T]`, `T | None`, unions, string annotations) and from
constructor calls (`x = T(...)`). The inference is flow-insensitive and errs on silence: a
name that is ever bound another way (a loop target, an unknown value) has no type, so a
contract is never judged on a guess.
"""

from __future__ import annotations

import ast
import builtins
import re
import symtable
import warnings
from bisect import bisect_left
from collections import deque
from collections.abc import Callable

from sglang_contracts.infra.lines import numbered_lines
from sglang_contracts.infra.pysource import PLACEHOLDER, SCOPES, branch_nodes, parse_quietly, rendered

UNION_WRAPPERS = {"Optional", "Union"}
CONTAINERS = {"list", "sequence", "iterable", "iterator", "set", "frozenset", "deque", "collection",
              "mutablesequence"}  # their lower-cased names; a `for` loop yields their items
NOT_A_TYPE = {"None", "Any", "typing.Any", "object"}
# Annotations that say a name holds something callable, or a class, and not which, or nothing of
# what it holds (`Final`, `ClassVar`: campaign 16, R08): the value assigned says more.
CALLABLE_OR_CLASS_ANNOTATIONS = frozenset({"Callable", "type", "Type", "Final", "ClassVar"})
POISON: tuple[str, ...] = ()  # "bound to something we cannot type"
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# What a module reads without binding it that no import gives: the builtins, and the globals
# Python sets in every module (`__name__`, `__doc__` and the like are builtins' names too).
PRESET_NAMES = frozenset(dir(builtins)) | {"__file__", "__cached__", "__builtins__", "__path__", "__annotations__"}
Function = ast.FunctionDef | ast.AsyncFunctionDef


def full_name(node: ast.AST | None) -> str | None:
    """`a.b.c` as written; a call or a subscript is named by what it calls or subscripts
    (`a.b(...)` -> "a.b", `Generic[T]` -> "Generic"); None for anything else."""
    attrs: list[str] = []  # a loop, not recursion: a method chain may be thousands of links long
    while True:
        if isinstance(node, ast.Name):
            return ".".join([node.id, *reversed(attrs)])
        if isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return None


def string_value(node: ast.AST | None) -> str | None:
    """The value of a string literal (not an f-string), else None."""
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def literal_getattr(node: ast.Call, called: bool = False) -> ast.Attribute | None:
    """`getattr(A, "x")` (with no default: it raises where A lost x) as the read `A.x` it is,
    placed at the string (attribute_name finds `.x` where the node ends, len(x) back); None for
    any other call. A name or dotted name's getattr only: what it reads is known by its spelling.
    `called`: the getattr is called at once, so a default of None raises too (None is not callable)."""
    if not (isinstance(node.func, ast.Name) and node.func.id == "getattr") or node.keywords \
            or len(node.args) != 2 and not (called and len(node.args) == 3 and _is_none(node.args[2])):
        return None
    subject, literal = node.args[:2]
    name = string_value(literal)
    if not name or not name.isidentifier() or not (isinstance(subject, ast.Name) or dotted_chain(subject)):
        return None
    return ast.Attribute(subject, name, ast.Load(), lineno=subject.lineno, col_offset=subject.col_offset,
                         end_lineno=literal.lineno, end_col_offset=literal.col_offset + len(name.encode()))


def annotation_types(node: ast.AST | None) -> tuple[str, ...]:
    """`T:dotted` for each class an annotation admits; containers admit nothing we follow."""
    if node is None:
        return ()
    if isinstance(node, (ast.Name, ast.Attribute)):
        return _named_types(node)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return tuple(kind for operand in _union_operands(node) for kind in annotation_types(operand))
    if (text := string_value(node)) is not None:
        return _string_annotation_types(text)
    if isinstance(node, ast.Subscript):
        return _subscript_types(node)
    return ()


def _named_types(node: ast.Name | ast.Attribute) -> tuple[str, ...]:
    """annotation_types of a plain or dotted name: the class it names, unless None, Any or object."""
    name = full_name(node)
    return () if not name or name in NOT_A_TYPE else (f"T:{name}",)


def _union_operands(node: ast.BinOp) -> list[ast.AST]:
    """The operands of `A | B | C`, in order: it nests to the left, an operand per level, so they
    are listed in a loop."""
    operands: list[ast.AST] = []
    pending: list[ast.AST] = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, ast.BinOp) and isinstance(current.op, ast.BitOr):
            pending += [current.right, current.left]
        else:
            operands.append(current)
    return operands


def _string_annotation_types(text: str) -> tuple[str, ...]:
    """annotation_types of a string annotation (`"T | None"`)."""
    try:
        return annotation_types(parse_quietly(text.strip(), mode="eval").body)
    except (SyntaxError, ValueError, RecursionError):  # not an expression (a comment-like string), or too deep
        return ()


def _subscript_types(node: ast.Subscript) -> tuple[str, ...]:
    """annotation_types of `Optional[T]`, `Union[A, B]`, or a container of one type (`list[T]`)."""
    wrapper = (full_name(node.value) or "").rsplit(".", 1)[-1]
    members = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if wrapper in UNION_WRAPPERS:
        return tuple(kind for member in members for kind in annotation_types(member))
    if wrapper.lower() in CONTAINERS and len(members) == 1:
        # `L:T`: a container of T. It has no attributes we follow; a loop over it yields T.
        return tuple(f"L:{kind[2:]}" for kind in annotation_types(members[0]) if kind.startswith("T:"))
    return ()


def admits_none(node: ast.AST | None) -> bool:
    """Does an annotation admit None: `Optional[T]`, `T | None`, `Union[T, None]`, `"T | None"`?"""
    pending = [node]
    while pending:
        current = pending.pop()
        if current is not None and _part_admits_none(current, pending):
            return True
    return False


def _part_admits_none(part: ast.AST, pending: list[ast.AST | None]) -> bool:
    """Does this part of an annotation admit None itself? The parts it is made of go to `pending`."""
    if isinstance(part, ast.Constant):
        return _constant_admits_none(part, pending)
    if isinstance(part, ast.Name):
        return part.id == "None"
    if isinstance(part, ast.BinOp) and isinstance(part.op, ast.BitOr):
        pending += [part.left, part.right]
    elif isinstance(part, ast.Subscript):
        return _subscript_admits_none(part, pending)
    return False


def _constant_admits_none(constant: ast.Constant, pending: list[ast.AST | None]) -> bool:
    """`None` does; a string annotation's expression goes to `pending`."""
    if constant.value is None:
        return True
    if isinstance(constant.value, str):
        try:
            pending.append(parse_quietly(constant.value.strip(), mode="eval").body)
        except (SyntaxError, ValueError, RecursionError):
            pass
    return False


def _subscript_admits_none(subscript: ast.Subscript, pending: list[ast.AST | None]) -> bool:
    """`Optional[T]` does; the members of `Union[...]` go to `pending`."""
    wrapper = (full_name(subscript.value) or "").rsplit(".", 1)[-1]
    if wrapper == "Optional":
        return True
    if wrapper == "Union":
        pending += subscript.slice.elts if isinstance(subscript.slice, ast.Tuple) else [subscript.slice]
    return False


class TypedNames(dict):
    """A function's typed names (name -> type alternatives), and which of them may be None:
    annotated `Optional[T]`/`T | None`, a parameter defaulting to None, or bound to None. Also
    the names its body binds itself (`local`: parameters and assignments, not those declared
    global or nonlocal), and those of them no import binds (`rebound`): in the body such a
    name is not the module or object an import of the same name gives (`def k(sglang)`)."""

    nullable: frozenset[str] = frozenset()
    local: frozenset[str] = frozenset()
    rebound: frozenset[str] = frozenset()


def dotted_chain(node: ast.AST) -> tuple[str, list[ast.Attribute]] | None:
    """`a.b.c` -> ("a", [the Attribute nodes of .b and .c]); None unless it starts at a plain name."""
    attributes: list[ast.Attribute] = []
    while isinstance(node, ast.Attribute):
        attributes.append(node)
        node = node.value
    return (node.id, attributes[::-1]) if isinstance(node, ast.Name) else None


def derived_types(prefix: str, node: ast.AST, known: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """Types reached from a typed name: `P:<type>|a.b` (the value of `x.a.b`) or `E:<type>|a.b`
    (an item of it, for loops). Nothing when the chain does not start at a typed name."""
    chain = dotted_chain(node)
    if chain is None or chain[0] not in known:
        return POISON
    root, attributes = chain
    if prefix == "P" and not attributes:
        return known[root]
    path = ".".join(a.attr for a in attributes)
    return tuple(f"{prefix}:{kind}|{path}" for kind in known[root])


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def kept_object(kind: str) -> str | None:
    """The dotted name of the object a name kept by `h = f`, `K = m.C` stands for (its type
    `P:C:<name>|`, _Bindings._alias); None for a type of another kind."""
    return kind[4:-1] if kind.startswith("P:C:") and kind.endswith("|") else None


def kept_objects(types: tuple[str, ...]) -> tuple[str, ...]:
    """kept_object of each type, () unless each is one."""
    names = tuple(name for kind in types if (name := kept_object(kind)) is not None)
    return names if len(names) == len(types) else ()


def call_types(node: ast.Call, returns: dict[str, tuple[str, ...]] | None = None,
               known: dict[str, tuple[str, ...]] | None = None) -> tuple[str, ...]:
    """The type of a call's result as far as the call says: `T(...)` -> R:T (a constructor, or
    a function whose return annotation tells), `object.__new__(T)` -> B:T (an instance built
    bare); nothing for calls through self or super(). `returns`: what the module's own
    functions' return annotations say they return (module_returns). `known`: the types of the
    name the callee starts at; one that keeps a class (`K = C`) is that class: `K()` is `C()`."""
    callee = full_name(node.func)
    root, dot, rest = (callee or "").partition(".")
    if known and isinstance(node.func, (ast.Name, ast.Attribute)) and (objects := kept_objects(known.get(root, ()))):
        kept = [name + dot + rest for name in objects]
        return tuple(dict.fromkeys(kind for name in kept for kind in (returns or {}).get(name, (f"R:{name}",))))
    if returns and callee in returns and isinstance(node.func, (ast.Name, ast.Attribute)):
        return returns[callee]
    if not callee:
        return POISON
    bare = _bare_instance(node, callee)
    if bare is not None:
        return bare
    if not callee.startswith(("self.", "cls.")) and callee != "super":
        return (f"R:{callee}",)
    return POISON


def _bare_instance(node: ast.Call, callee: str) -> tuple[str, ...] | None:
    """`object.__new__(C)` / `C.__new__(C)`: B:C, an instance of C whose `__init__` never ran
    (nothing for a class reached through self or cls); None for any other call."""
    if not (callee.endswith(".__new__") and node.args):
        return None
    built = full_name(node.args[0])
    if not built:
        return None
    return (f"B:{built}",) if not built.startswith(("self.", "cls.")) else POISON


class TypeTable:
    """name -> type alternatives, for every name bound; a name once bound to something untyped
    is poisoned and has no type at all."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.types: dict[str, tuple[str, ...]] = {}
        self.poisoned: set[str] = set()
        self.nullable: set[str] = set()  # annotated as admitting None, defaulting to or bound to None

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


def parameter_list(function: Function) -> tuple[tuple[str, str, bool], ...]:
    """(name, kind, has_default) in upstream's vocabulary (po/pk/va/ko/vk)."""
    a = function.args
    positional = [*a.posonlyargs, *a.args]
    first_default = len(positional) - len(a.defaults)  # defaults belong to the last positionals
    result = [(p.arg, "po" if i < len(a.posonlyargs) else "pk", i >= first_default) for i, p in enumerate(positional)]
    if a.vararg:
        result.append((a.vararg.arg, "va", False))
    result += [(p.arg, "ko", default is not None) for p, default in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        result.append((a.kwarg.arg, "vk", False))
    return tuple(result)


def decorator_names(function: Function | ast.ClassDef) -> tuple[str, ...]:
    return tuple((full_name(d.func if isinstance(d, ast.Call) else d) or "").rsplit(".", 1)[-1]
                 for d in function.decorator_list)


class _Bindings:
    """Every binding in one function body, found by walking its statements (nested functions
    and classes bind just their name) and, for `:=`, the expressions in them (a comprehension's
    `:=` binds in the body too; a lambda's, in the lambda)."""

    def __init__(self, table: TypeTable, receiver: str | None, poisoned: set[str],
                 returns: dict[str, tuple[str, ...]] | None = None, walrus: tuple[int, ...] | None = None,
                 rebound: frozenset[str] = frozenset()) -> None:
        self.table = table
        self.walrus = walrus  # walrus_lines, None for "any line may": only their statements' expressions are walked
        self.returns = returns
        self.receiver = receiver
        self.poisoned = poisoned  # names known to be bound to something untyped somewhere
        self.rebound = rebound  # names known to be bound by something but an import somewhere (own_names)
        self.derived = False  # did a binding take its type from another name's?
        self.aliased: set[str] = set()  # the roots of the names the walk took for aliases (_alias)
        self.imported: set[str] = set()  # names an import binds
        self.declared: set[str] = set()  # names declared global or nonlocal
        self.attribute_bindings: list[tuple[str, tuple[str, ...] | None]] = []  # self.<attr> = ...

    def _derived(self, prefix: str, node: ast.AST) -> tuple[str, ...]:
        """Types reached from a name's types as bound so far, unless the name is poisoned,
        even further down the function."""
        chain = dotted_chain(node)
        if chain is None or chain[0] in self.poisoned:
            return POISON
        self.derived = True
        root, table = chain[0], self.table
        # the root's types alone: the whole typed table, built at each binding, made a long body quadratic
        known = {root: table.types[root]} if root in table.types and root not in table.poisoned else {}
        return derived_types(prefix, node, known)

    def _target(self, target: ast.AST, types: tuple[str, ...] | None) -> None:
        """Bind an assignment target; what a tuple or list target unpacks is untyped (its
        elements are taken in order with a stack, however deep the nesting)."""
        pending: list[tuple[ast.AST, tuple[str, ...] | None]] = [(target, types)]
        while pending:
            target, types = pending.pop()
            if isinstance(target, ast.Name):
                self.table.bind(target.id, types)
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                    and target.value.id == self.receiver:
                self.attribute_bindings.append((target.attr, types))
            elif isinstance(target, (ast.Tuple, ast.List)):
                pending.extend((element, POISON) for element in reversed(target.elts))
            elif isinstance(target, ast.Starred):
                pending.append((target.value, POISON))

    def _bind_value(self, target: ast.AST, value: ast.AST | None) -> None:
        """Bind a target to what a value expression is: a tuple or list target takes the items
        of a tuple or list value one by one (a starred target the rest, untyped), however deep
        the nesting; `None` for a value not known (an item no plain value gives) is untyped."""
        pending: list[tuple[ast.AST, ast.AST | None]] = [(target, value)]
        while pending:
            target, value = pending.pop()
            if isinstance(target, (ast.Tuple, ast.List)) and (pairs := _paired(target.elts, value)) is not None:
                pending.extend(reversed(pairs))
            elif value is None:
                self._target(target, POISON)
            else:
                types, nullable = self._value_types(value)
                if nullable and isinstance(target, ast.Name):
                    self.table.nullable.add(target.id)
                self._target(target, types)

    def _value_types(self, node: ast.AST) -> tuple[tuple[str, ...] | None, bool]:
        """(the types a value may have, None when it is only None; whether it may be None):
        a constructor or an annotated factory's call, a typed name's chain, either branch of
        `a if c else b` and any operand of `a or b` (a loop: they chain as long as the code
        spells them), what a `:=` inside binds."""
        found: list[str] = []
        nullable = False
        pending = [node]
        while pending:
            current = pending.pop()
            if isinstance(current, ast.IfExp):
                pending += [current.orelse, current.body]
            elif isinstance(current, ast.BoolOp):  # `C() or None`, `cached or C()`: any operand may be the value
                pending += reversed(current.values)
            elif isinstance(current, ast.NamedExpr):
                pending.append(current.value)
            elif _is_none(current):
                nullable = True
            else:
                if isinstance(current, ast.Call) and "getattr" not in self.table.names \
                        and (read := literal_getattr(current)) is not None:
                    current = read  # `g = getattr(A, "f")` keeps A.f (campaign 16, R08)
                types = self._call_types(current) if isinstance(current, ast.Call) \
                    else self._derived("P", current) or self._of_call_result(current) or self._alias(current)
                if not types:
                    return POISON, nullable
                found += [kind for kind in types if kind not in found]
        return (tuple(found) if found else None), nullable

    def _of_call_result(self, node: ast.AST) -> tuple[str, ...]:
        """`C().a.b`: the value at the end of a walk from what a call returns (`P:R:C|a.b`; a
        bound method kept in a name, `e = C().m`, which a call of `e` then calls)."""
        attributes: list[str] = []
        while isinstance(node, ast.Attribute):
            attributes.append(node.attr)
            node = node.value
        if not attributes or not isinstance(node, ast.Call):
            return POISON
        path = ".".join(reversed(attributes))
        return tuple(f"P:{kind}|{path}" for kind in self._call_types(node))

    def _call_types(self, node: ast.Call) -> tuple[str, ...]:
        """call_types; a callee kept in a name (`K = C; K()`: _alias) is the class it keeps, unless
        the name is poisoned, even further down the function (campaign 15, R04)."""
        chain = dotted_chain(node.func)
        root = chain[0] if chain is not None else ""
        poisoned = root in self.poisoned or root in self.table.poisoned
        types = () if poisoned else self.table.types.get(root, ())
        if not kept_objects(types):
            return call_types(node, self.returns)
        self.derived = True  # the walk is done again should the name be poisoned further down
        return call_types(node, self.returns, {root: types})

    def _alias(self, node: ast.AST) -> tuple[str, ...]:
        """`h = f`, `h = m.f`, its root untyped: `P:C:f|`, the object the name stands for in the
        file (an empty walk from it), which a call of `h` then calls as a call of `f` (audit 13,
        R12). Only where the root is no other binding of this body (a parameter, a local): an
        import's name, or a module's name read from a function."""
        chain = dotted_chain(node)
        if chain is None:
            return POISON
        root = chain[0]
        if root in self.rebound or root in self.table.names and root not in self.imported:
            return POISON
        self.aliased.add(root)
        return (f"P:C:{full_name(node)}|",)

    def _may_spell_walrus(self, node: ast.stmt) -> bool:
        """Is one of the statement's lines among walrus_lines (a compound statement's span holds its blocks')?"""
        if self.walrus is None:
            return True
        index = bisect_left(self.walrus, node.lineno)
        return index < len(self.walrus) and self.walrus[index] <= (node.end_lineno or node.lineno)

    def _named_expressions(self, statement: ast.stmt) -> None:
        """Bind what each `:=` in a statement's own expressions binds (not in the blocks it
        holds, walked as statements; not in a lambda's body, its own scope), in source order."""
        pending: list[ast.AST] = [child for child in ast.iter_child_nodes(statement) if not isinstance(child, ast.stmt)]
        pending.reverse()
        while pending:  # a stack, not recursion: expressions nest as deep as the code does
            node = pending.pop()
            if isinstance(node, ast.NamedExpr):
                self._bind_value(node.target, node.value)
                pending.append(node.value)  # `(a := (b := C()))` binds b too
                continue
            children = [node.args] if isinstance(node, ast.Lambda) else ast.iter_child_nodes(node)
            pending.extend(reversed([child for child in children if not isinstance(child, ast.stmt)]))

    def walk(self, statements: list[ast.stmt]) -> None:
        """Statements and the blocks in them: recursive, but blocks nest no deeper than the
        tokenizer's 100 indentation levels."""
        for statement in statements:
            self._statement(statement)

    def _statement(self, node: ast.stmt) -> None:
        if self._may_spell_walrus(node):
            self._named_expressions(node)
        binder = _STATEMENT_BINDERS.get(type(node))
        if binder is not None:
            binder(self, node)

    def _assign(self, node: ast.Assign) -> None:
        for target in node.targets:  # `a = b = C()`: each is the one value
            self._bind_value(target, node.value)

    def _annotated(self, node: ast.AnnAssign) -> None:
        """`x: C = ...` is a C. An annotation that names no class (`object`, `Any`), only a
        callable (`h: Callable = f`) or only a class (`K: type = C`) says less than the value: the
        name is what the value is, as for `h = f` (campaign 15, R04)."""
        if isinstance(node.target, ast.Name) and (admits_none(node.annotation) or _is_none(node.value)):
            self.table.nullable.add(node.target.id)
        types = annotation_types(node.annotation)
        if node.value is not None and all(kind.rpartition(".")[2].removeprefix("T:") in CALLABLE_OR_CLASS_ANNOTATIONS
                                          for kind in types):
            self._bind_value(node.target, node.value)
        else:
            self._target(node.target, types or POISON)

    def _augmented(self, node: ast.AugAssign) -> None:
        self._target(node.target, POISON)

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            if alias.name != "*":  # `import a.b` binds `a`
                name = alias.asname or alias.name.split(".")[0]
                self.table.bind(name, POISON)
                self.imported.add(name)

    def _declared(self, node: ast.Global | ast.Nonlocal) -> None:
        for name in node.names:
            self.table.bind(name, POISON)
        self.declared.update(node.names)

    def own_names(self) -> tuple[frozenset[str], frozenset[str]]:
        """(the names the walked body binds in its own scope, those of them no import binds)."""
        local = frozenset(self.table.names - self.declared)
        return local, local - self.imported

    def _definition(self, node: Function | ast.ClassDef) -> None:
        self.table.bind(node.name, POISON)

    def _for(self, node: ast.For | ast.AsyncFor) -> None:
        if isinstance(node.target, ast.Name) and isinstance(node.iter, (ast.Tuple, ast.List, ast.Set)) \
                and not any(isinstance(item, ast.Starred) for item in node.iter.elts):
            for item in node.iter.elts:  # `for c in (C(), D()):` takes each item's type in turn
                self._bind_value(node.target, item)
        elif isinstance(node.target, ast.Name):
            self._target(node.target, self._derived("E", node.iter))
        else:
            self._target(node.target, POISON)
        self.walk(node.body)
        self.walk(node.orelse)

    def _with(self, node: ast.With | ast.AsyncWith) -> None:
        """`with C() as c`: c is what C's `__enter__` returns, `W:<C's type>`, which the resolver
        takes as the instance only where `__enter__` is `return self` (campaign 12, R01); an
        `async with` (`__aenter__`), a tuple target or an untyped manager binds no type."""
        for item in node.items:
            if item.optional_vars is not None:
                types = self._value_types(item.context_expr)[0] if isinstance(node, ast.With) \
                    and isinstance(item.optional_vars, ast.Name) else POISON
                self._target(item.optional_vars, tuple(f"W:{kind}" for kind in types or ()))
        self.walk(node.body)

    def _try(self, node: ast.Try | ast.TryStar) -> None:
        self.walk(node.body)
        for handler in node.handlers:
            if handler.name is not None:
                self.table.bind(handler.name, POISON)
            self.walk(handler.body)
        self.walk(node.orelse)
        self.walk(node.finalbody)

    def _match(self, node: ast.Match) -> None:
        for case in node.cases:
            for name, types in _capture_types(case.pattern).items():
                self.table.bind(name, types)
            self.walk(case.body)

    def _branches(self, node: ast.If | ast.While) -> None:
        self.walk(node.body)
        self.walk(node.orelse)


# What binds names in each kind of statement; plain functions, not methods bound to an instance.
_STATEMENT_BINDERS = {
    ast.Assign: _Bindings._assign, ast.AnnAssign: _Bindings._annotated, ast.AugAssign: _Bindings._augmented,
    ast.Import: _Bindings._import, ast.ImportFrom: _Bindings._import,
    ast.Global: _Bindings._declared, ast.Nonlocal: _Bindings._declared,
    ast.FunctionDef: _Bindings._definition, ast.AsyncFunctionDef: _Bindings._definition,
    ast.ClassDef: _Bindings._definition, ast.For: _Bindings._for, ast.AsyncFor: _Bindings._for,
    ast.With: _Bindings._with, ast.AsyncWith: _Bindings._with, ast.Try: _Bindings._try, ast.TryStar: _Bindings._try,
    ast.Match: _Bindings._match, ast.If: _Bindings._branches, ast.While: _Bindings._branches,
}


def _capture_types(pattern: ast.pattern) -> dict[str, tuple[str, ...]]:
    """name -> its type, for each name a case pattern captures: the class a class pattern's
    capture is an instance of (`case C() as c:`), untyped for any other capture (`case x:`,
    `case [*rest]`, `case {**rest}`). Only an or-pattern's alternatives bind a name twice: one
    class in every one of them types it, two (`(C() as c) | (D() as c)`) leave it untyped."""
    matched = _matched_classes(pattern)
    classes: dict[str, set[str | None]] = {}
    for node in ast.walk(pattern):
        captured = getattr(node, "rest" if isinstance(node, ast.MatchMapping) else "name", None)
        if captured is not None:
            inner = node.pattern if isinstance(node, ast.MatchAs) else None
            classes.setdefault(captured, set()).add(matched[id(inner)] if inner is not None else None)
    return {name: POISON if len(found) > 1 or None in found else (f"T:{found.pop()}",)
            for name, found in classes.items()}


def _matched_classes(pattern: ast.pattern) -> dict[int, str | None]:
    """id of each node of a pattern -> the class whose instances alone it matches, as written:
    `C(...)`, `C() as c`, an or-pattern whose alternatives all match that class (`C(x=1) | C(y=2)`);
    None for any other. Each node once, its parts first (ast.walk's order, reversed): an
    or-pattern under many `as` captures is not walked again for each."""
    matched: dict[int, str | None] = {}
    for node in reversed(list(ast.walk(pattern))):
        if isinstance(node, ast.MatchClass):
            matched[id(node)] = full_name(node.cls)
        elif isinstance(node, ast.MatchAs) and node.pattern is not None:
            matched[id(node)] = matched[id(node.pattern)]
        elif isinstance(node, ast.MatchOr):
            alternatives = {matched[id(alternative)] for alternative in node.patterns}
            matched[id(node)] = alternatives.pop() if len(alternatives) == 1 else None
        else:
            matched[id(node)] = None
    return matched


def _paired(targets: list[ast.expr], value: ast.AST | None) -> list[tuple[ast.AST, ast.AST | None]] | None:
    """(target, the item it takes) of a tuple or list target unpacking a tuple or list of plain
    items (a starred target takes the items the others leave, untyped: None); None when the
    value is not such a literal or the counts cannot match."""
    if not isinstance(value, (ast.Tuple, ast.List)) or any(isinstance(item, ast.Starred) for item in value.elts):
        return None
    items = value.elts
    stars = [index for index, target in enumerate(targets) if isinstance(target, ast.Starred)]
    if not stars:
        return list(zip(targets, items)) if len(targets) == len(items) else None
    star, after = stars[0], len(targets) - stars[0] - 1
    if len(stars) > 1 or len(items) < len(targets) - 1:
        return None
    return [*zip(targets[:star], items), (targets[star], None),
            *zip(targets[star + 1:], items[len(items) - after:])]


def walrus_lines(text: str) -> tuple[int, ...]:
    """The numbers of the lines that spell `:=` (in a string too: a statement there is walked for nothing), in order."""
    if ":=" not in text:
        return ()
    return tuple(number for number, line in enumerate(numbered_lines(text), 1) if ":=" in line)


def receiver_name(function: Function, in_class: bool) -> str | None:
    """The name a method calls its instance, or None (a function, a static or class method)."""
    if not in_class or {"staticmethod", "classmethod"} & set(decorator_names(function)):
        return None
    positional = [*function.args.posonlyargs, *function.args.args]
    return positional[0].arg if positional else None


def _parameter_types(function: Function, receiver: str | None, class_name: str | None,
                     bound_as: tuple[str, ...] = ()) -> TypeTable:
    table = TypeTable()
    a = function.args
    positional = [*a.posonlyargs, *a.args]
    defaults = _parameter_defaults(a, positional)
    for param in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
        if admits_none(param.annotation) or _is_none(defaults.get(param.arg)):
            table.nullable.add(param.arg)
        table.bind(param.arg, _parameter_kinds(param, receiver, class_name, bound_as, positional))
    for star in (a.vararg, a.kwarg):
        if star is not None:
            table.bind(star.arg, POISON)
    return table


def _parameter_defaults(a: ast.arguments, positional: list[ast.arg]) -> dict[str, ast.expr]:
    """Parameter name -> its default (defaults belong to the last positionals)."""
    defaults = dict(zip([p.arg for p in positional][::-1], a.defaults[::-1]))
    defaults.update((p.arg, d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None)
    return defaults


def _parameter_kinds(param: ast.arg, receiver: str | None, class_name: str | None, bound_as: tuple[str, ...],
                     positional: list[ast.arg]) -> tuple[str, ...]:
    """The types a parameter is bound to: the class for the receiver, `bound_as` for the first
    parameter of a function the module binds as a method of these classes, else its annotation's."""
    if param.arg == receiver:
        return (f"S:{class_name}",)
    if bound_as and positional and param is positional[0] and param.annotation is None:
        return bound_as
    return annotation_types(param.annotation) or POISON


def function_types(function: Function, class_name: str | None, attributes: TypeTable | None = None,
                   bound_as: tuple[str, ...] = (), returns: dict[str, tuple[str, ...]] | None = None,
                   walrus: tuple[int, ...] | None = None) -> dict[str, tuple[str, ...]]:
    """The typed names of one function: parameters, then every binding in its body.
    Bindings of `self.<attr>` are added to `attributes` (the class's attribute table).
    `bound_as`: the types of the instance a plain function's first parameter receives, where
    the module binds it as a method (bound_methods). `returns`: as for call_types. `walrus`:
    the module's walrus_lines (None: any line may spell `:=`), which spare a walk of every expression."""
    receiver = receiver_name(function, class_name is not None)
    table, bindings = _settled(function.body, lambda: _parameter_types(function, receiver, class_name, bound_as),
                               receiver, returns, walrus)
    typed = _typed_names(table, bindings)
    if attributes is not None:
        for name, types in bindings.attribute_bindings:
            attributes.bind(name, types)
    if receiver is not None and typed.get(receiver) != (f"S:{class_name}",):
        typed.pop(receiver, None)  # `self` rebound: trust nothing about it
    return typed


def module_rebound(module: ast.Module, walrus: tuple[int, ...] | None = None) -> frozenset[str]:
    """The names a module binds at its top level (its functions' bodies aside) and no import
    there binds: in a function that does not bind it, such a name is not the import of a
    function elsewhere (an import and an assignment both, `except ImportError: sglang = None`,
    leave the name the import's). `walrus`: as for function_types."""
    bindings = _Bindings(TypeTable(), None, set(), walrus=walrus)
    bindings.walk(module.body)
    return bindings.own_names()[1]


def _settled(statements: list[ast.stmt], start: Callable[[], TypeTable], receiver: str | None,
             returns: dict[str, tuple[str, ...]] | None, walrus: tuple[int, ...] | None
             ) -> tuple[TypeTable, _Bindings]:
    """The table of a body's bindings, from the table `start` gives (its parameters): `y = x.a`
    took x's types as bound so far, and x may be rebound to something untyped further down, so
    the body is walked again knowing every poisoned name, until no more are; and `h = f` took f
    for an import's name or a global, and f may be a local bound further down, so again knowing
    the body's own names."""
    poisoned: set[str] = set()
    rebound: frozenset[str] = frozenset()
    while True:
        table = start()
        bindings = _Bindings(table, receiver, poisoned, returns, walrus, rebound)
        bindings.walk(statements)
        own = bindings.own_names()[1]
        if (not bindings.derived or table.poisoned <= poisoned) and not bindings.aliased & (own - rebound):
            return table, bindings
        poisoned, rebound = poisoned | table.poisoned, rebound | own


def _typed_names(table: TypeTable, bindings: _Bindings) -> TypedNames:
    typed = TypedNames(table.typed())
    typed.nullable = frozenset(table.nullable)
    typed.local, typed.rebound = bindings.own_names()
    return typed


def body_types(body: list[ast.stmt], module: ast.Module | None, text: str,
               returns: dict[str, tuple[str, ...]] | None = None,
               walrus: tuple[int, ...] | None = None) -> TypedNames:
    """The typed names of a module's body or a class's body (`module` None), bound as a
    function's are: a script's `c = C()` under `if __name__ == "__main__":` types `c` as a
    function's would. A module's names are globals: one a function or class declares `global`
    may be rebound to anything, and has no type. `walrus`: as for function_types."""
    rebound = _declared_global(module, text) if module is not None else set()

    def start() -> TypeTable:
        table = TypeTable()
        for name in rebound:
            table.bind(name, POISON)
        return table

    return _typed_names(*_settled(body, start, None, returns, walrus))


_GLOBAL_STATEMENT = re.compile(r"^[ \t]*global\b", re.M)


def _declared_global(module: ast.Module, text: str) -> set[str]:
    """The names `global` statements anywhere in the module declare (read only where the text shows one)."""
    if not _GLOBAL_STATEMENT.search(text):
        return set()
    return {name for node in ast.walk(module) if isinstance(node, ast.Global) for name in node.names}


def module_strings(module: ast.Module) -> dict[str, str]:
    """The module's string constants: names a module-level statement assigns a string (a literal,
    or an f-string or sum of literals and constants assigned before) and nothing else binds,
    anywhere in the module (a function's parameter or local of the same name included)."""
    bindings: dict[str, int] = {}
    for node in ast.walk(module):
        for name in _bound_by(node):
            bindings[name] = bindings.get(name, 0) + 1
    strings: dict[str, str] = {}
    for statement in module.body:
        target = statement.targets[0] if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
            else statement.target if isinstance(statement, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and bindings.get(target.id) == 1 \
                and (text := rendered(statement.value, strings)) is not None and PLACEHOLDER not in text:
            strings[target.id] = text
    return strings


def _bound_by(node: ast.AST) -> list[str]:
    """The names a node binds: a stored or deleted name, a parameter, an import, a definition,
    an `except ... as`, a match capture."""
    if isinstance(node, ast.Name):
        return [node.id] if not isinstance(node.ctx, ast.Load) else []
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.alias):
        return [node.asname or node.name.split(".")[0]]
    if isinstance(node, (*FUNCTIONS, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return [node.name] if node.name else []
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    return []


METHOD_BINDERS = {"MethodType", "types.MethodType"}


def bound_methods(module: ast.Module, text: str) -> dict[str, tuple[str, ...]]:
    """Module-level functions the module binds as methods, and the types of the instance their
    first parameter then receives: `Owner.name = func` and `setattr(Owner, "name", func)` give
    `T:Owner`; `types.MethodType(func, self.x)` in a method of a module-level class gives what
    `self.x` is there. Read only in files whose text shows such a binding."""
    if "MethodType" not in text and not _ASSIGNED_NAME.search(text):
        return {}
    functions = {statement.name for statement in module.body if isinstance(statement, FUNCTIONS)}
    found: dict[str, list[str]] = {}
    for name, kind in _method_bindings(module):
        if name in functions:
            kinds = found.setdefault(name, [])
            if kind not in kinds:
                kinds.append(kind)
    return {name: tuple(kinds) for name, kinds in found.items()}


def _method_bindings(module: ast.Module) -> list[tuple[str, str]]:
    """Every (name, kind) binding of a bare name as a method in the module, in order (_method_binding)."""
    bindings: list[tuple[str, str]] = []
    for statement in module.body:
        owner = statement.name if isinstance(statement, ast.ClassDef) else None
        pending = deque([statement])  # ast.walk's order, over the nodes that may hold others
        while pending:
            node = pending.popleft()
            binding = _method_binding(node, owner) if isinstance(node, (ast.Assign, ast.Call)) else None
            if binding is not None:
                bindings.append(binding)
            pending.extend(branch_nodes(node))
    return bindings


def _method_binding(node: ast.AST, owner: str | None) -> tuple[str, str] | None:
    """(name, kind of the instance its first parameter receives) where `node` binds a bare name
    as a method (see bound_methods; `owner`, the module-level class the node is in); else None."""
    if isinstance(node, ast.Assign):
        return _assigned_method(node)
    if isinstance(node, ast.Call) and len(node.args) in (2, 3) \
            and isinstance(node.args[-1 if len(node.args) == 3 else 0], ast.Name):
        return _method_bound_by_call(node, owner)
    return None


def _class_target(node: ast.AST) -> str | None:
    """A dotted name a method may be set on, as written: not one reached through self or cls."""
    target = full_name(node)
    return target if target and target.split(".")[0] not in ("self", "cls") else None


def _assigned_method(node: ast.Assign) -> tuple[str, str] | None:
    """`Owner.name = func`."""
    if len(node.targets) != 1 or not isinstance(node.value, ast.Name) or not isinstance(node.targets[0], ast.Attribute):
        return None
    target = _class_target(node.targets[0].value)
    return (node.value.id, f"T:{target}") if target else None


def _method_bound_by_call(node: ast.Call, owner: str | None) -> tuple[str, str] | None:
    """`setattr(Owner, "name", func)`, or `types.MethodType(func, self.x)` in a method of `owner`."""
    callee = full_name(node.func)
    if callee == "setattr" and len(node.args) == 3 and string_value(node.args[1]) is not None:
        target = _class_target(node.args[0])
        return (node.args[2].id, f"T:{target}") if target else None
    if callee in METHOD_BINDERS and len(node.args) == 2 and owner is not None:
        return _method_type_binding(node, owner)
    return None


def _method_type_binding(node: ast.Call, owner: str) -> tuple[str, str] | None:
    """`types.MethodType(func, self.x)` in a method of `owner`: func receives what `self.x` is there."""
    chain = dotted_chain(node.args[1]) if isinstance(node.args[1], (ast.Name, ast.Attribute)) else None
    if chain is not None and chain[0] == "self":
        path = ".".join(a.attr for a in chain[1])
        return node.args[0].id, f"P:S:{owner}|{path}" if path else f"S:{owner}"
    return None


# `Owner.name = func` (or `setattr(..., func)`): an attribute assigned a bare name, on one line.
_ASSIGNED_NAME = re.compile(r"^[ \t]*(?!self\.|cls\.)[A-Za-z_][\w.]*\.\w+[ \t]*=[ \t]*[A-Za-z_]\w*[ \t]*(?:#.*)?$|setattr\(", re.M)


def module_returns(module: ast.Module, text: str) -> dict[str, tuple[str, ...]]:
    """What the module's own functions, and its classes' methods, say they return, by the name a
    call spells (`make`, `Runner.create`): an unannotated factory's result is astroid's to
    infer where it matters (analysis/inference.py), an annotated one's is known here. A
    function that builds an object bare (`C.__new__(C)`) is left out: its result's kind is
    `R:<function>`, which SGC315 follows to what its callers set and call."""
    lines = numbered_lines(text) if "__new__" in text else None
    found: dict[str, tuple[str, ...]] = {}
    for name, function in _module_functions(module):
        if (types := annotation_types(function.returns)) and not _builds_bare(function, lines):
            found[name] = types
    return found


def _module_functions(module: ast.Module) -> list[tuple[str, Function]]:
    """(the name a call spells, definition) of the module's functions and its classes' methods, in order."""
    functions: list[tuple[str, Function]] = []
    for statement in module.body:
        if isinstance(statement, FUNCTIONS):
            functions.append((statement.name, statement))
        elif isinstance(statement, ast.ClassDef):
            functions += [(f"{statement.name}.{method.name}", method) for method in statement.body
                          if isinstance(method, FUNCTIONS)]
    return functions


def _builds_bare(function: Function, lines: list[str] | None) -> bool:
    """Does the function's text spell `__new__` (`lines`: the module's, None when it spells none)?"""
    return lines is not None and any("__new__" in line for line in lines[function.lineno - 1:function.end_lineno])


def module_names(text: str, path: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the names a module reads and binds nowhere itself, those it binds at its top level),
    each sorted. The first: not bound at its top level (an assignment, a definition, an import,
    a function's `global` one), nor in the function, class or comprehension that reads them,
    and no builtin; what a `from m import *` may give it. The second: what a star import of the
    module gives as the module's own, never as a name its own star imports give. Python's own
    scope analysis (symtable) decides; a module it cannot analyse, which Python could not
    compile either, has none."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # compiling's warnings are the code's linters' business
        try:
            top = symtable.symtable(text, path, "exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return (), ()
    read: set[str] = set()
    bound: set[str] = set()
    pending = [top]
    while pending:  # a stack, not recursion: scopes nest as deep as the code does
        table = pending.pop()
        pending.extend(table.get_children())
        for symbol in table.get_symbols():
            if (table is top or symbol.is_declared_global()) and (symbol.is_assigned() or symbol.is_imported()):
                bound.add(symbol.get_name())
            elif symbol.is_referenced() and (table is top or symbol.is_global()):
                read.add(symbol.get_name())
    return tuple(sorted(read - bound - PRESET_NAMES)), tuple(sorted(bound))


def stars_before_bindings(module: ast.Module, names: tuple[str, ...]) -> tuple[list[ast.ImportFrom], dict[str, int]]:
    """(the module's star imports outside its functions and classes, in order; name -> how many
    of them come before the last statement there that binds it, those that binding overrides).
    A name bound only in a function (`global`) counts them all: it is bound when the function
    runs, after the imports. A binding in a comprehension counts (its variable's or a walrus's):
    a later binding makes a name the module's own, which no contract is judged of."""
    stars: list[ast.ImportFrom] = []
    last: dict[str, tuple[int, int]] = {}
    pending: list[ast.AST] = list(reversed(module.body))
    while pending:  # a stack, in source order: statements nest as deep as the code does
        node = pending.pop()
        for name in _bound_here(node):
            last[name] = max(last.get(name, (0, 0)), (node.lineno, node.col_offset))
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            stars.append(node)
        if not isinstance(node, SCOPES):
            pending.extend(reversed(list(ast.iter_child_nodes(node))))
    at = [(star.lineno, star.col_offset) for star in stars]  # in source order: searched, not counted per name
    return stars, {name: bisect_left(at, last[name]) if name in last else len(stars) for name in names}


def _bound_here(node: ast.AST) -> list[str]:
    """The names a node binds in the scope it is in (a definition's, an import's, a target's)."""
    if isinstance(node, ast.Name):
        return [node.id] if not isinstance(node.ctx, ast.Load) else []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [alias.asname or alias.name.split(".")[0] for alias in node.names if alias.name != "*"]
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return [node.name] if node.name else []
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    return []
