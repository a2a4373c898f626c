"""The links of a PEP 503 simple-index page (closure/index.py), read with html.parser: a module
of its own, imported only where a page is read."""

from __future__ import annotations

from html.parser import HTMLParser


class Anchors(HTMLParser):
    """The links of a PEP 503 page, with their PEP 658/714 metadata attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str, bool]] = []
        self._open: tuple[str, bool] | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            values = dict(attrs)
            offered = any(values.get(key) not in (None, "false")
                          for key in ("data-core-metadata", "data-dist-info-metadata") if key in values)
            self._open = (values.get("href") or "", offered)
            self._text = ""

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open is not None:
            self.links.append((self._text.strip(), *self._open))
            self._open = None
