"""What a directed graph reaches: the one walk the project's module graphs share."""

from __future__ import annotations

from typing import Hashable, Iterable, Mapping, TypeVar

Node = TypeVar("Node", bound=Hashable)


def reachable(starts: Iterable[Node], edges: Mapping[Node, Iterable[Node]]) -> set[Node]:
    """`starts` and every node their edges lead to, each followed once (cycles end), with a
    stack, not recursion (chains thousands of links long)."""
    found: set[Node] = set()
    pending = list(starts)
    while pending:
        node = pending.pop()
        if node not in found:
            found.add(node)
            pending.extend(edges.get(node, ()))
    return found
