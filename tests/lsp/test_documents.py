"""The editor's documents as their incremental edits leave them: pygls's text, edit for edit, in
time linear in the edits (lsp/documents.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lsprotocol import types
from pygls.workspace import PositionCodec, TextDocument

from sglang_contracts.lsp.documents import EditedDocument
from tests.robustness.test_fuzz import fuzz_seed, fuzz_settings

URI = "file:///p/m.py"
# Line breaks of every kind Python's splitlines knows (pygls reads the document's lines by it),
# characters of two UTF-16 units, and plain text.
PIECES = st.sampled_from(["a", "bc", "\n", "\r\n", "\r", "\x0c", "\u2028", "\U0001F600", "é", " ", ""])
TEXTS = st.lists(PIECES, max_size=12).map("".join)
EDITS = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 5), st.integers(0, 6), st.integers(0, 5), TEXTS),
                 max_size=8)


def _change(start_line: int, start_character: int, end_line: int, end_character: int,
            text: str) -> types.TextDocumentContentChangePartial:
    return types.TextDocumentContentChangePartial(
        range=types.Range(types.Position(start_line, start_character), types.Position(end_line, end_character)),
        text=text)


@fuzz_seed
@fuzz_settings(1500)
@given(TEXTS, EDITS, st.sampled_from(list(types.PositionEncodingKind)))
def test_edits_leave_the_text_pygls_leaves(source: str, edits: list, encoding: types.PositionEncodingKind) -> None:
    """Any range (past the end, reversed, inside a character of two units, on a `\\r\\n`), any
    text, any position encoding: the same document as pygls's own, after each edit, read as text
    and as lines."""
    ours, theirs = (kind(URI, source, position_codec=PositionCodec(encoding)) for kind in (EditedDocument, TextDocument))
    for edit in edits:
        change = _change(*edit)
        ours.apply_change(change)
        theirs.apply_change(change)
        assert ours.source == theirs.source
        assert tuple(ours.lines) == tuple(theirs.lines)
    full = types.TextDocumentContentChangeWholeDocument(text="x\r\ny")
    ours.apply_change(full)
    ours.apply_change(_change(1, 0, 1, 0, "z"))
    assert ours.source == "x\r\nzy"


def test_thousands_of_edits_in_a_long_document_cost_each_its_lines_not_the_whole(monkeypatch) -> None:
    """5,000 edits of one didChange on a 100,000-line document kept the server busy 100 s: each
    rewrote every line (campaign 20, R06). Counted, not timed: no edit reads the whole text again."""
    read = [0]
    source = EditedDocument.source

    def counted(self):
        read[0] += 1
        return source.fget(self)

    document = EditedDocument(URI, "x = 1\n" * 99_999 + "é" * 5_000 + "\n")
    assert len(document.lines) == 100_000
    monkeypatch.setattr(EditedDocument, "source", property(counted))
    # nor walks a line's characters to place a position, each one UTF-16 unit
    monkeypatch.setattr(PositionCodec, "position_from_client_units", lambda *args: pytest.fail("walked a line"))
    for line in range(0, 100_000, 20):
        document.apply_change(_change(line, 0, line, 1, "y"))
    for _ in range(5_000):  # a line of characters of one UTF-16 unit each, not ASCII
        document.apply_change(_change(99_999, 4_000, 99_999, 4_000, "ü"))
    assert read[0] == 0
    assert document.source == "".join(("y" if n % 20 == 0 else "x") + " = 1\n" for n in range(99_999)) \
        + "é" * 4_000 + "ü" * 5_000 + "é" * 1_000 + "\n"
