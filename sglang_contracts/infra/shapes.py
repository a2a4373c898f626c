"""Shapes of JSON data, declared: what a cache record must look like to be read back.

A record whose digest holds may still be of another shape (made by hand, by another version
of a reader, or re-signed by whoever can write the cache): every reader of a record declares
the shape it reads (RecordCache.get), and a record of another is absent, computed again. A shape
is plain data:

    object               anything
    None                 null
    str, int, float, bool
                         that JSON type (an int is no bool; a float may be written as an int)
    (shape, shape, ...)  any one of them
    ListOf(shape)        a list, each item of the shape
    Row(shape, ...)      a list of exactly these items, in order
    TableOf(shape)       a table, each value of the shape
    Exactly(value)       that very value (the tag that tells a table's kinds of rows apart)
    Table(name=shape, ..., optional={name: shape}, closed=False)
                         a table with these keys (and others unless closed), each of its shape

A per-file analysis declares the shape of each row it returns (`rows_of`), so that a table of
its results read back is checked against it (project/index.py each_file): no reader of such a
table takes rows of a shape nobody declared.

Checking walks the data as deep as the shape goes, never deeper: linear in what it reads,
and a record nested deeper than its shape costs nothing more.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

Check = Callable[[Any], bool]


def _plain_types(shape: Any) -> frozenset | None:
    """The JSON types a shape of types alone (`str`, `(str, None)`) admits, else None: such a
    shape is checked by the value's type alone (a module's thousands of entries)."""
    alternatives = shape if isinstance(shape, tuple) else (shape,)
    if not all(alternative is None or isinstance(alternative, type) and alternative is not object
               for alternative in alternatives):
        return None
    types = {type(None) if alternative is None else alternative for alternative in alternatives}
    return frozenset(types | {int} if float in types else types)


_CHECKERS: dict[Any, Check] = {}  # shape -> its test: each shape is compiled once per process
# Nesting of loops and tests in one compiled function (Python allows 20 nested blocks): a shape
# deeper than this is tested by a function of its own, called.
MOST_NESTED = 8


def checker(shape: Any) -> Check:
    """The test of `shape` (see the module's docstring), made once per shape: compiled into one
    function of plain loops and type tests (the interpreted walk of nested tests was most of
    reading a record back)."""
    made = _CHECKERS.get(shape)
    if made is None:
        made = _CHECKERS[shape] = _Compiler().compiled(shape)
    return made


class _Compiler:
    """Writes the test of a shape as Python source: each part of the shape a few lines that
    return False when the value at hand is not of it."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.constants: dict[str, Any] = {}
        self.names = 0

    def compiled(self, shape: Any) -> Check:
        self._part(shape, "data", 1, 0)
        source = "def check(data):\n" + "\n".join(self.lines) + "\n    return True\n"
        namespace = dict(self.constants)
        exec(compile(source, "<shape>", "exec"), namespace)  # source written here from the shape alone
        return namespace["check"]

    def _name(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names}"

    def _constant(self, value: Any) -> str:
        name = self._name("c")
        self.constants[name] = value
        return name

    def _say(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)

    def _part(self, shape: Any, value: str, depth: int, nested: int) -> None:
        """Lines that return False unless `value` is of `shape`, at indentation `depth`."""
        if shape is object:
            return
        plain = _plain_types(shape)
        if plain is not None:
            if len(plain) == 1:
                (only,) = plain
                self._say(depth, f"if type({value}) is not {self._constant(only)}: return False")
            else:
                self._say(depth, f"if type({value}) not in {self._constant(plain)}: return False")
            return
        if isinstance(shape, tuple) or nested >= MOST_NESTED:  # tested by functions of their own
            alternatives = shape if isinstance(shape, tuple) else (shape,)
            tests = " or ".join(f"{self._constant(checker(alternative))}({value})" for alternative in alternatives)
            self._say(depth, f"if not ({tests}): return False")
            return
        if isinstance(shape, ListOf):
            self._container(list, shape.item, value, value, depth, nested)
        elif isinstance(shape, TableOf):
            self._container(dict, shape.value, value, f"{value}.values()", depth, nested)
        elif isinstance(shape, Row):
            self._row(shape, value, depth, nested)
        elif isinstance(shape, Table):
            self._table(shape, value, depth, nested)
        elif isinstance(shape, Exactly):
            self._say(depth, f"if type({value}) is not {self._constant(type(shape.value))} "
                             f"or {value} != {self._constant(shape.value)}: return False")
        else:
            raise TypeError(f"not a shape: {shape!r}")

    def _container(self, kind: type, item: Any, value: str, items: str, depth: int, nested: int) -> None:
        self._say(depth, f"if type({value}) is not {self._constant(kind)}: return False")
        if item is object:
            return
        each = self._name("v")
        self._say(depth, f"for {each} in {items}:")
        self._part(item, each, depth + 1, nested + 1)

    def _row(self, row: "Row", value: str, depth: int, nested: int) -> None:
        self._say(depth, f"if type({value}) is not list or len({value}) != {len(row.fields)}: return False")
        for position, field in enumerate(row.fields):
            if field is not object:
                item = self._name("v")
                self._say(depth, f"{item} = {value}[{position}]")
                self._part(field, item, depth, nested + 1)

    def _table(self, table: "Table", value: str, depth: int, nested: int) -> None:
        self._say(depth, f"if type({value}) is not dict: return False")
        for name, field in table.required.items():
            self._say(depth, f"if {name!r} not in {value}: return False")
            if field is not object:
                item = self._name("v")
                self._say(depth, f"{item} = {value}[{name!r}]")
                self._part(field, item, depth, nested + 1)
        for name, field in table.optional.items():
            if field is not object:
                item = self._name("v")
                self._say(depth, f"{item} = {value}.get({name!r}, {self._constant(_ABSENT)})")
                self._say(depth, f"if {item} is not {self._constant(_ABSENT)}:")
                self._part(field, item, depth + 1, nested + 1)
                self._say(depth + 1, "pass")
        if table.closed:
            self._say(depth, f"if not {self._constant(frozenset(table.required) | frozenset(table.optional))}"
                             f".issuperset({value}): return False")


_ABSENT = object()  # an optional key not given


class _Shape:
    """A composite shape: equal to (and hashed as) any other of the same declaration, so that a
    shape a reader writes inline at each call is compiled once (checker)."""

    def __init__(self, *key: Any) -> None:
        self._key = (type(self).__name__, *key)
        self._hash = hash(self._key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Shape) and self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"{self._key[0]}{self._key[1:]!r}"


class ListOf(_Shape):
    def __init__(self, item: Any) -> None:
        self.item = item
        super().__init__(item)


class Row(_Shape):
    def __init__(self, *fields: Any) -> None:
        self.fields = fields
        super().__init__(*fields)


class TableOf(_Shape):
    def __init__(self, value: Any) -> None:
        self.value = value
        super().__init__(value)


class Table(_Shape):
    def __init__(self, optional: dict[str, Any] | None = None, closed: bool = False, **required: Any) -> None:
        self.required = required
        self.optional = optional or {}
        self.closed = closed  # no key but these (the table is given as keyword arguments)
        if not all(isinstance(name, str) for name in self.optional):
            raise TypeError(f"a table's keys are texts: {sorted(map(repr, self.optional))}")
        super().__init__(tuple(required.items()), tuple(self.optional.items()), closed)


class Exactly(_Shape):
    def __init__(self, value: str | int | bool | None) -> None:
        self.value = value
        super().__init__(type(value), value)


def rows_of(shape: Any) -> Callable[[Callable], Callable]:
    """Declares the shape of each row a per-file analysis returns (it returns a list of them):
    the shape its table's records are read back by (project/index.py each_file)."""
    def declared(analyse: Callable) -> Callable:
        analyse.row_shape = shape  # type: ignore[attr-defined]
        return analyse
    return declared


def row_shape(analyse: Callable) -> Any:
    """The row shape an analysis declares (rows_of), through a functools.partial of it; a
    TypeError for one that declares none: its table could not be read back safely."""
    function = analyse.func if isinstance(analyse, partial) else analyse
    try:
        return function.row_shape  # type: ignore[attr-defined]
    except AttributeError:
        raise TypeError(f"{function!r} declares no shape of its rows (infra/shapes.py rows_of)") from None


def fits(data: Any, shape: Any) -> bool:
    """Whether `data` (as json.loads made it) is of `shape` (see the module's docstring)."""
    return checker(shape)(data)
