"""A linear next-sibling lookup for griffe's visitor, while this tool's extraction visits a tree.

griffe's Visitor looks for an attribute's docstring in the statement after each assignment
(`ast_next`), found by walking the parent's children from the first: a module of n top-level
assignments costs n²/2 steps (12,000 `vN = N` lines, a patch stack can add them: 24 s of CPU).
While `indexed_next_sibling()` is entered, the visitor's module is given an `ast_next` that
answers from a table of each parent's children, built once per parent and kept on it (as
griffe keeps `parent` on each node): the same answer, the same errors, linear. griffe is not
forked; the replacement is installed only while an extraction visits (counted, for threads)
and griffe's own function is put back after.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# The table of a parent's children, each one's id to the child after it, kept on the parent.
_TABLE = "sglang_contracts_next_sibling"

_installed = threading.Lock()
_visits = 0
_walking_next: Any = None  # griffe's own ast_next, while the indexed one stands in for it


def _next_by_table(node: Any) -> Any:
    """griffe's `ast_next`: the child of `node.parent` after `node`, LastNodeError if none
    (AttributeError without a parent, as griffe's own raises)."""
    import griffe

    parent = node.parent
    table = getattr(parent, _TABLE, None)
    if table is None:
        children = list(griffe.ast_children(parent))  # sets each child's parent, as griffe's walk does
        table = {id(child): following for child, following in zip(children, children[1:])}
        setattr(parent, _TABLE, table)
    following = table.get(id(node))
    if following is None:
        raise griffe.LastNodeError("there is no next node")
    return following


@contextmanager
def indexed_next_sibling() -> Iterator[None]:
    """griffe's visitor finds next siblings by table inside this block (any thread's)."""
    global _visits, _walking_next
    import griffe

    visitor_module = inspect.getmodule(griffe.Visitor)
    with _installed:
        if _visits == 0:
            _walking_next = visitor_module.ast_next
            visitor_module.ast_next = _next_by_table
        _visits += 1
    try:
        yield
    finally:
        with _installed:
            _visits -= 1
            if _visits == 0:
                visitor_module.ast_next = _walking_next
                _walking_next = None
