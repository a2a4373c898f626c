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

from typing import Any


class ListOf:
    def __init__(self, item: Any) -> None:
        self.item = item


class Row:
    def __init__(self, *fields: Any) -> None:
        self.fields = fields


class TableOf:
    def __init__(self, value: Any) -> None:
        self.value = value


class Table:
    def __init__(self, optional: dict[str, Any] | None = None, closed: bool = False, **required: Any) -> None:
        self.required = required
        self.optional = optional or {}
        self.closed = closed  # no key but these (the table is given as keyword arguments)


def fits(data: Any, shape: Any) -> bool:
    """Whether `data` (as json.loads made it) is of `shape` (see the module's docstring)."""
    if shape is object:
        return True
    if shape is None:
        return data is None
    if isinstance(shape, tuple):
        return any(fits(data, alternative) for alternative in shape)
    if isinstance(shape, type):
        return type(data) is shape or (shape is float and type(data) is int)
    if isinstance(shape, ListOf):
        return type(data) is list and (shape.item is object or all(fits(item, shape.item) for item in data))
    if isinstance(shape, Row):
        return type(data) is list and len(data) == len(shape.fields) \
            and all(fits(item, field) for item, field in zip(data, shape.fields))
    if isinstance(shape, TableOf):
        return type(data) is dict and (shape.value is object or all(fits(value, shape.value) for value in data.values()))
    if isinstance(shape, Table):
        return type(data) is dict \
            and all(name in data and fits(data[name], field) for name, field in shape.required.items()) \
            and all(fits(data[name], field) for name, field in shape.optional.items() if name in data) \
            and (not shape.closed or all(name in shape.required or name in shape.optional for name in data))
    raise TypeError(f"not a shape: {shape!r}")
