"""flake8-style positions (1-based line, 1-based character column) of `ast` nodes.

`ast` counts columns in UTF-8 bytes and places `def`/`class` nodes at their keyword and
`from` imports at `from`; a diagnostic points at the name itself, in characters.
"""

from __future__ import annotations

import ast
import re

from sglang_contracts.infra.lines import LINE_BREAK
from sglang_contracts.project.facts import Position

DEFINITION_KEYWORD = re.compile(r"(?:async\s+)?(?:def|class)\s+")
FROM_KEYWORD = re.compile(r"from\s+[.\s]*")


class SourcePositions:
    def __init__(self, text: str) -> None:
        self.lines = LINE_BREAK.split(text)
        self.ascii = text.isascii()  # every column is then its byte offset, on every line

    def _line(self, line: int) -> str:
        return self.lines[line - 1] if 0 < line <= len(self.lines) else ""

    def _chars(self, line: int, byte_col: int) -> int:
        """The character column of a byte offset on a line (they differ after non-ASCII text)."""
        if self.ascii:
            return byte_col
        text = self._line(line)
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def start(self, node: ast.AST) -> Position:
        if self.ascii:  # a scan asks for hundreds of thousands of positions
            return Position(node.lineno, node.col_offset + 1)
        return Position(node.lineno, self._chars(node.lineno, node.col_offset) + 1)

    def end(self, node: ast.AST) -> Position:
        """Where a node ends (the column of its last character)."""
        return Position(node.end_lineno, self._chars(node.end_lineno, node.end_col_offset))

    def attribute_name(self, node: ast.Attribute) -> Position:
        """Where `.attr` of `value.attr` is spelled: the name ends the node."""
        if self.ascii:
            return Position(node.end_lineno, node.end_col_offset - len(node.attr) + 1)
        byte_col = node.end_col_offset - len(node.attr.encode("utf-8"))
        return Position(node.end_lineno, self._chars(node.end_lineno, byte_col) + 1)

    def _after(self, pattern: re.Pattern, node: ast.stmt) -> Position:
        column = self._chars(node.lineno, node.col_offset)
        match = pattern.match(self._line(node.lineno), column)
        return Position(node.lineno, (match.end() if match else column) + 1)

    def definition_name(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> Position:
        return self._after(DEFINITION_KEYWORD, node)

    def imported_module(self, node: ast.ImportFrom) -> Position:
        """The module of `from module import ...`; the statement itself for `from . import x`."""
        return self._after(FROM_KEYWORD, node) if node.module else self.start(node)
