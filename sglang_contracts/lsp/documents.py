"""The editor's open documents, as its incremental edits leave them.

pygls applies each edit of a didChange by writing every line of the document again: one message
of 5,000 edits (a replace-all) on a 100,000-line document kept the server busy for 100 s, and
its `shutdown` unanswered (campaign 20, R06). Here the lines are kept between edits, and an edit
replaces the lines it spans; the text is joined again when it is read. The result is pygls's,
edit for edit, odd ranges included (tests/lsp/test_documents.py holds them side by side).
"""

from __future__ import annotations

import re
from typing import Any

from lsprotocol import types
from pygls.workspace import TextDocument, Workspace
from pygls.workspace.position_codec import ServerTextPosition, Utf16, Utf32

from sglang_contracts.infra.lines import ends_a_pygls_line, pygls_lines


class EditedDocument(TextDocument):
    """A TextDocument whose incremental edits splice a kept list of its lines."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._kept: list[str] | None = None  # the lines, where edits have been applied to them
        self._joined = True  # whether _source holds the kept lines' text

    @property
    def source(self) -> str:
        if not self._joined:
            self._source = "".join(self._kept or ())
            self._joined = True
        return super().source

    @property
    def lines(self) -> list[str]:  # type: ignore[override]
        if self._kept is None:
            self._kept = pygls_lines(self.source)
        return self._kept

    def _apply_full_change(self, change: types.TextDocumentContentChangeEvent) -> None:
        super()._apply_full_change(change)
        self._kept, self._joined = None, True

    def _apply_incremental_change(self, change: types.TextDocumentContentChangePartial) -> None:
        lines = self.lines
        begins = self._server_position(lines, change.range.start)
        ends = self._server_position(lines, change.range.end)
        start, end, count = begins.line, ends.line, len(lines)
        if start > count or (start < count and end < start):
            return  # pygls writes the document as it was
        if start == count:  # at the very end: appended
            new = pygls_lines(change.text)
            lines[count:] = new
        else:  # what the range spans, from its first line's start to its last line's end
            tail = lines[end][ends.character:] if end < count else ""
            new = pygls_lines(lines[start][:begins.character] + change.text + tail)
            lines[start:min(end, count - 1) + 1] = new
        self._joined = False
        if not (_two_lines(lines, start - 1) and _two_lines(lines, start + len(new) - 1)):
            self._kept = pygls_lines(self.source)  # a line break was joined to the next line: read them again

    def _server_position(self, lines: list[str], position: types.Position) -> ServerTextPosition:
        """pygls's position_from_client_units, without its walk over the line's characters where
        each is one unit of the client's encoding: 5,000 edits on one line of 5,000 characters
        took 4 s. Its clamping as it does it."""
        if not 0 <= position.line < len(lines) or not self._one_unit_each(lines[position.line]):
            return self._position_codec.position_from_client_units(lines, position)
        line = lines[position.line]
        length = len(line) - line.count("\r\n")  # pygls reads a `\r\n` as one
        if length == 0:
            return ServerTextPosition(position.line, 0)
        if position.character > length:
            position.character = length - 1
        return ServerTextPosition(position.line, position.character)

    def _one_unit_each(self, line: str) -> bool:
        """Whether each character of the line is one code unit of the client's position encoding."""
        units = self._position_codec.impl
        return line.isascii() or isinstance(units, Utf32) or (isinstance(units, Utf16) and not ASTRAL.search(line))


# A character beyond the Basic Multilingual Plane: two UTF-16 units.
ASTRAL = re.compile("[\U00010000-\U0010FFFF]")


def _two_lines(lines: list[str], index: int) -> bool:
    """Whether the kept line at `index` and the next are two lines of the text (or either is none):
    the first ends with a line break, not a `\r` that a `\n` beginning the next makes one with."""
    if index < 0 or index + 1 >= len(lines):
        return True
    line = lines[index]
    return ends_a_pygls_line(line) and not (line.endswith("\r") and lines[index + 1][:1] == "\n")


class EditingWorkspace(Workspace):
    """pygls's workspace, whose documents are EditedDocuments."""

    def _create_text_document(self, doc_uri: str, source: str | None = None, version: int | None = None,
                              language_id: str | None = None) -> TextDocument:
        return EditedDocument(doc_uri, source=source, version=version, language_id=language_id,
                              sync_kind=self._sync_kind, position_codec=self._position_codec)
