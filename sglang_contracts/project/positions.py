"""Line and column of chosen libcst nodes, at a fraction of PositionProvider's cost.

libcst's PositionProvider records a range for every node of the tree, which costs ten
times the code generation it rides on; a linter needs positions for the few nodes it
reports on. This state tracks line and column during one code generation pass and
records starts only for the requested nodes.
"""

from __future__ import annotations

from typing import Iterable

import libcst as cst
from libcst._nodes.internal import CodegenState

from sglang_contracts.project.facts import Position


class _TargetedPositionState(CodegenState):
    def __init__(self, module: cst.Module, targets: set[int]) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.targets = targets
        self.line = 1
        self.column = 0
        self.starts: dict[int, Position] = {}

    def _advance(self, value: str) -> None:
        newlines = value.count("\n") + value.count("\r") - value.count("\r\n")
        if newlines:
            self.line += newlines
            self.column = len(value) - max(value.rfind("\n"), value.rfind("\r")) - 1
        else:
            self.column += len(value)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.tokens.append(token)
            self._advance(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        self._advance(value)

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.targets:
            # Targets are names and dotted names, which own no leading whitespace, so the
            # whitespace-inclusive start libcst gives here is the syntactic start.
            self.starts[id(node)] = Position(self.line, self.column + 1)


def positions_of(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[int, Position]:
    """Map id(node) -> Position (1-based column) for each node, in one pass over the module."""
    targets = {id(node) for node in nodes}
    if not targets:
        return {}
    state = _TargetedPositionState(module, targets)
    module._codegen(state)
    return state.starts
