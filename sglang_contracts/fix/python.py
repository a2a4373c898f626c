"""libcst edits the Python fixes share: find the node a finding points at, by its position,
and replace it, leaving every other byte of the file as it was."""

from __future__ import annotations

from typing import Callable, Sequence

import libcst
from libcst.metadata import MetadataWrapper, PositionProvider

from sglang_contracts.fix.document import Document

Edit = Callable[[libcst.CSTNode], libcst.CSTNode | libcst.FlattenSentinel | libcst.RemovalSentinel]


class _AtPosition(libcst.CSTTransformer):
    """Applies `edit` to the first node of `kinds` that starts at (line, column)."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, line: int, column: int, kinds: tuple[type, ...], edit: Edit) -> None:
        super().__init__()
        self.line, self.column, self.kinds, self.edit = line, column, kinds, edit
        self.done = False

    def on_leave(self, original, updated):
        if not self.done and isinstance(original, self.kinds):
            start = self.get_metadata(PositionProvider, original).start
            if (start.line, start.column) == (self.line, self.column):
                self.done = True
                return self.edit(updated)
        return updated


def edit_at(document: Document, line: int, col: int, kinds: tuple[type, ...], edit: Edit) -> bool:
    """Edit the node of one of `kinds` at a finding's 1-based (line, col); whether one was there
    and the file changed."""
    transformer = _AtPosition(line, col - 1, kinds, edit)
    module = MetadataWrapper(document.module).visit(transformer)
    if not transformer.done or module.code == document.text:
        return False
    document.module = module
    return True


def nodes_at(document: Document, line: int, col: int, kinds: tuple[type, ...]) -> list[libcst.CSTNode]:
    """The nodes of `kinds` that start at a 1-based (line, col), outermost first."""
    wrapper = MetadataWrapper(document.module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    return [node for node, where in positions.items()
            if isinstance(node, kinds) and (where.start.line, where.start.column) == (line, col - 1)]


def dotted(name: str) -> libcst.Attribute | libcst.Name:
    """`a.b.c` as an expression node."""
    return libcst.parse_expression(name)  # type: ignore[return-value]


def dotted_text(node: libcst.CSTNode) -> str:
    return libcst.Module([]).code_for_node(node)


def without(names: Sequence[libcst.ImportAlias], index: int) -> list[libcst.ImportAlias]:
    """The aliases of an import without the one at `index`, the last one's comma as before."""
    kept = [alias for i, alias in enumerate(names) if i != index]
    if index == len(names) - 1 and kept:
        kept[-1] = kept[-1].with_changes(comma=names[-1].comma)
    return kept
