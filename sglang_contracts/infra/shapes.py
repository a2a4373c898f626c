"""Shapes of JSON data, declared: what a cache record must look like to be read back.

A record whose digest holds may still be of another shape (made by hand, by another version
of a reader, or re-signed by whoever can write the cache): every reader of a record declares
the shape it reads (JsonCache.get), and a record of another is absent, computed again. A shape
is plain data:

    object               anything
    None                 null
    str, int, float, bool
                         that JSON type (an int is no bool; a float may be written as an int)
    (shape, shape, ...)  any one of them
    ListOf(shape)        a list, each item of the shape
    Row(shape, ...)      a list of exactly these items, in order
    TableOf(shape)       a table, each value of the shape
    Table(name=shape, ..., optional={name: shape}, closed=False)
                         a table with these keys (and others unless closed), each of its shape

Checking walks the data as deep as the shape goes, never deeper: linear in what it reads,
and a record nested deeper than its shape costs nothing more.
"""

from __future__ import annotations

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


def checker(shape: Any) -> Check:
    """The test of `shape` (see the module's docstring), made once per shape."""
    if shape is object:
        return lambda data: True
    plain = _plain_types(shape)
    if plain is not None:
        return lambda data: type(data) in plain
    if isinstance(shape, tuple):
        checks = [checker(alternative) for alternative in shape]
        return lambda data: any(check(data) for check in checks)
    if isinstance(shape, (ListOf, Row, TableOf, Table)):
        return shape.check
    raise TypeError(f"not a shape: {shape!r}")


def _each_of(container: type, items: Callable[[Any], Any], shape: Any) -> Check:
    """The test of a `container` whose `items(data)` are each of `shape`."""
    if shape is object:
        return lambda data: type(data) is container
    item_fits = checker(shape)
    return lambda data: type(data) is container and all(map(item_fits, items(data)))


class ListOf:
    def __init__(self, item: Any) -> None:
        self.item = item
        self.check = _each_of(list, lambda data: data, item)


class Row:
    def __init__(self, *fields: Any) -> None:
        self.fields = fields
        checks = [checker(field) for field in fields]
        self.check: Check = lambda data: type(data) is list and len(data) == len(checks) \
            and all(check(item) for check, item in zip(checks, data))


class TableOf:
    def __init__(self, value: Any) -> None:
        self.value = value
        self.check = _each_of(dict, dict.values, value)


class Table:
    def __init__(self, optional: dict[str, Any] | None = None, closed: bool = False, **required: Any) -> None:
        self.required = required
        self.optional = optional or {}
        self.closed = closed  # no key but these (the table is given as keyword arguments)
        self._required = [(name, checker(field)) for name, field in required.items()]
        self._optional = [(name, checker(field)) for name, field in self.optional.items()]
        self._known = frozenset(required) | frozenset(self.optional)

    def check(self, data: Any) -> bool:
        if type(data) is not dict:
            return False
        for name, check in self._required:
            if name not in data or not check(data[name]):
                return False
        for name, check in self._optional:
            if name in data and not check(data[name]):
                return False
        return not self.closed or self._known.issuperset(data)


def fits(data: Any, shape: Any) -> bool:
    """Whether `data` (as json.loads made it) is of `shape` (see the module's docstring)."""
    return checker(shape)(data)
