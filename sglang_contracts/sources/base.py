"""What every source of an SGLang release offers: a read-only tree rooted where `sglang/` lives."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Iterator

from sglang_contracts.errors import SourceError
from sglang_contracts.pysource import decode_source

PACKAGE = "sglang"


class ReleaseTree(ABC):
    """Files of one release. Paths are POSIX, relative to the folder that holds `sglang/`."""

    @abstractmethod
    def read_bytes(self, relpath: str) -> bytes | None:
        """The file's bytes, or None when there is no such file."""

    @abstractmethod
    def list_dir(self, relpath: str) -> list[str] | None:
        """Names directly inside a folder, or None when it is not a folder."""

    @abstractmethod
    def iter_files(self, under: str) -> Iterator[str]:
        """Every file path below a folder, recursively."""

    def content_key(self, relpath: str) -> str:
        """A key that changes whenever the file's content does: its SHA-256, unless the tree
        knows a digest without reading the file."""
        return hashlib.sha256(self.read_bytes(relpath) or b"").hexdigest()

    def read_text(self, relpath: str) -> str | None:
        data = self.read_bytes(relpath)
        return None if data is None else data.decode("utf-8", errors="replace")

    def read_source(self, relpath: str) -> str | None:
        """A Python file's text, decoded as the interpreter would (a byte-order mark, a coding comment)."""
        data = self.read_bytes(relpath)
        return None if data is None else decode_source(data)

    def metadata_text(self) -> str | None:
        """The release's dependency metadata (a wheel's METADATA or the repo's pyproject)."""
        return None


@dataclass
class Release:
    """One SGLang release as the checks see it."""

    label: str  # for messages: "sglang 0.5.22 (package index)"
    version: str | None  # "0.5.22" where known
    tree: ReleaseTree
    ref: str | None = None  # the git ref it was read from (`v0.5.22`), for a release from a clone
    # Names content that can never change (a published version, a commit), so whole-release
    # searches may be cached; None for a directory, which may be edited between runs.
    identity: str | None = None
    name: str | None = None  # how messages name a release without a version (a directory's path)

    @property
    def short(self) -> str:
        """The release in a message's "sglang {short}": its version, else its name or label."""
        return self.version or self.name or self.label


def check_is_sglang(tree: ReleaseTree, label: str) -> None:
    """A tree with no sglang package, or without sglang/srt, would yield an empty model: refuse it."""
    if tree.read_bytes(f"{PACKAGE}/__init__.py") is None:
        raise SourceError(f"{label}: no sglang package found (expected sglang/__init__.py)")
    srt = tree.list_dir(f"{PACKAGE}/srt")
    if not srt:
        raise SourceError(f"{label}: sglang/srt is missing or empty; this does not look like an SGLang release")
