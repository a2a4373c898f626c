"""The decoded text of each project Python file, held for the run in its most compact form.

A `str` with one character past Latin-1 takes two or four bytes for every character: in
sglang's own tree 772 of 4,300 files (a Chinese comment, an arrow, an emoji) made 47 MB of the
texts' 83 MB. A text whose UTF-8 is smaller is kept as those bytes (23 MB there) and decoded
when read (20 ms for all of them), every other as the string it is.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, MutableMapping


class ProjectTexts(MutableMapping):
    """relpath -> text, as a dict of them behaves; only the storage differs."""

    def __init__(self) -> None:
        self._stored: dict[str, str | bytes] = {}

    def __getitem__(self, relpath: str) -> str:
        return as_text(self._stored[relpath])

    def __setitem__(self, relpath: str, text: str) -> None:
        # surrogatepass: decoded text may hold lone surrogates (as the utf-16 codec gives them)
        encoded = None if text.isascii() else text.encode("utf-8", "surrogatepass")
        self._stored[relpath] = encoded if encoded is not None and len(encoded) < sys.getsizeof(text) else text

    def __delitem__(self, relpath: str) -> None:
        del self._stored[relpath]

    def __iter__(self) -> Iterator[str]:
        return iter(self._stored)

    def __len__(self) -> int:
        return len(self._stored)

    def __contains__(self, relpath: object) -> bool:
        return relpath in self._stored


def held(texts: Mapping[str, str], relpath: str) -> str | bytes:
    """A file's text as the mapping holds it (`as_text` gives the string): what a job sent to a
    worker carries, so that a whole project's jobs queued at once do not hold every text decoded."""
    return texts._stored[relpath] if isinstance(texts, ProjectTexts) else texts[relpath]


def as_text(form: str | bytes) -> str:
    return form if isinstance(form, str) else form.decode("utf-8", "surrogatepass")


def mentions_text(texts: Mapping[str, str], relpath: str, word: str) -> bool:
    """Whether a file's text holds `word` (False for a file without text), tested on the form
    the mapping holds it in: no text is decoded for it."""
    if relpath not in texts:
        return False
    form = held(texts, relpath)
    return (word.encode("utf-8") in form) if isinstance(form, bytes) else (word in form)
