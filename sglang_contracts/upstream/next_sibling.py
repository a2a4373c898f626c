"""A linear next-sibling lookup for griffe's visitor, while this tool's extraction visits a tree.

griffe's Visitor looks for an attribute's docstring in the statement after each assignment
(`ast_next`), found by walking the parent's children from the first: a module of n top-level
assignments costs n²/2 steps (12,000 `vN = N` lines, a patch stack can add them: 24 s of CPU).
griffe is not forked: its visitor's module is given an `ast_next` that, inside
`indexed_next_sibling()` (in the thread that entered it), answers from a table of each
parent's children, built once per parent and kept on it (as griffe keeps `parent` on each
node): the same answer, the same errors, linear. Outside the block, in any thread, it is
griffe's own. No lock: installing is idempotent, and a process forked mid-extraction (the
pool's workers) inherits no lock held by another thread.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# The table of a parent's children, each one's id to the child after it, kept on the parent.
_TABLE = "sglang_contracts_next_sibling"

_walking_next: Any = None  # griffe's own ast_next, which the indexed one stands in front of
_visiting = threading.local()  # .depth: how many indexed_next_sibling blocks this thread is in


def _next_sibling(node: Any) -> Any:
    """griffe's `ast_next`, by table inside an extraction's visit, griffe's own elsewhere."""
    if not getattr(_visiting, "depth", 0):
        return _walking_next(node)
    return _next_by_table(node)


def _next_by_table(node: Any) -> Any:
    """The child of `node.parent` after `node`, LastNodeError if none (AttributeError without a
    parent), as griffe's own answers."""
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
    """griffe's visitor finds next siblings by table inside this block (in this thread)."""
    global _walking_next
    import griffe

    visitor_module = inspect.getmodule(griffe.Visitor)
    if visitor_module.ast_next is not _next_sibling:
        _walking_next = visitor_module.ast_next
        visitor_module.ast_next = _next_sibling
    _visiting.depth = getattr(_visiting, "depth", 0) + 1
    try:
        yield
    finally:
        _visiting.depth -= 1
