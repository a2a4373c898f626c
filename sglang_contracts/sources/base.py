"""What every source of an SGLang release offers: a read-only tree rooted where `sglang/` lives."""

from __future__ import annotations

import hashlib
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cached_property
from typing import Iterator

from sglang_contracts.infra.errors import SourceError
from sglang_contracts.infra.files import MAX_PYTHON_BYTES, MAX_TEXT_BYTES, Unreadable
from sglang_contracts.infra.pysource import decode_source

PACKAGE = "sglang"


def read_limit(relpath: str) -> int:
    """The most bytes read of one file of a release: a module's bound, or a text file's."""
    return MAX_PYTHON_BYTES if relpath.endswith((".py", ".pyi")) else MAX_TEXT_BYTES


# Decoded module texts are kept, for trees whose files cannot change while a run reads them (a
# wheel, a commit): the searches over the whole release read each module several times (26,000
# reads of 4,800 modules in one real run, half of its upstream reading). A budget per tree
# bounds what is kept (a real release's modules are 68M characters); kept texts are never
# evicted, so a pass over more than the budget hits the part kept instead of evicting what the
# next pass needs. They go with the tree. A large project's own texts and facts already fill the
# process (sglang's tree as a project: 750 MB without them), so the budget yields to them
# (`yield_kept_sources`): there the kept texts cost 200 MB and saved nothing measurable.
KEPT_SOURCE_BUDGET = 72 * 2**20  # characters


class ReleaseTree(ABC):
    """Files of one release. Paths are POSIX, relative to the folder that holds `sglang/`.

    A damaged release never hangs or ends the run: a file that is there but cannot be read
    (not a regular file, permission denied, over `read_limit`) raises `Unreadable` from
    `read_bytes`, and the model reports the module as SGC000 where the project imports it; a
    folder that is there but cannot be listed is None to `list_dir`, skipped by `iter_files`,
    and `unlisted` says why, so the model reports its modules alike instead of calling them gone.
    """

    carries_all_files = True  # every file of the release's package folder, Python or not
    keeps_sources = False  # read_source keeps what it decoded: the tree's files cannot change

    @abstractmethod
    def read_bytes(self, relpath: str) -> bytes | None:
        """The file's bytes, or None when there is no such file. Raises Unreadable when there
        is one that cannot be read, and never reads more than `read_limit(relpath)` bytes."""

    @abstractmethod
    def list_dir(self, relpath: str) -> list[str] | None:
        """Names directly inside a folder, or None when it is not a folder or cannot be listed."""

    @abstractmethod
    def iter_files(self, under: str) -> Iterator[str]:
        """Every file path below a folder, recursively, skipping folders that cannot be listed
        and never following a link to a folder (a link cycle cannot loop)."""

    def as_released(self, relpath: str) -> bool:
        """Serve the file as the release has it from now on, where this tree holds another
        version of it (a patch stack's that leaves a module unanalysable); False when it holds
        none, or the release has no such file."""
        return False

    def read_member(self, relpath: str) -> bytes | None:
        """The file's bytes whatever its kind, for a patch against it (`read_bytes` may read a
        wheel's members other than modules and metadata as empty). Raises as `read_bytes` does."""
        return self.read_bytes(relpath)

    def unlisted(self, relpath: str) -> str | None:
        """Why a folder that is there could not be listed ("permission denied"), if it could not."""
        return None

    def content_key(self, relpath: str) -> str:
        """A key that changes whenever the file's content does: its SHA-256, unless the tree
        knows a digest without reading the file. Raises Unreadable as `read_bytes` does."""
        return hashlib.sha256(self.read_bytes(relpath) or b"").hexdigest()

    def read_text(self, relpath: str) -> str | None:
        data = self.read_bytes(relpath)
        return None if data is None else data.decode("utf-8", errors="replace")

    def read_source(self, relpath: str) -> str | None:
        """A Python file's text, decoded as the interpreter would (a byte-order mark, a coding comment)."""
        kept = self._kept_sources.get(relpath) if self.keeps_sources else None
        if kept is not None:
            return kept
        data = self.read_bytes(relpath)
        if data is None:
            return None
        text = decode_source(data)
        if self.keeps_sources and self._kept_characters + len(text) <= self._kept_budget:
            # The other release's text of a module unchanged between them: one copy for both
            # (it counts in both budgets, which bound how much each keeps, not the memory).
            same = self._sibling._kept_sources.get(relpath) if self._sibling is not None else None
            text = same if same is not None and same == text else text
            self._kept_characters += len(text)  # a race between threads costs a text more or less
            self._kept_sources[relpath] = text
        return text

    def share_kept_sources(self, other: "ReleaseTree") -> None:
        """Keep a module's text once for both trees where the other release's is the same (most
        modules of a bump: sglang's tree as a project kept 34 MB of texts, half of them twice)."""
        if other is not self:
            self._sibling, other._sibling = other, self

    @cached_property
    def _kept_sources(self) -> dict[str, str]:
        return {}

    _kept_characters = 0
    _kept_budget = KEPT_SOURCE_BUDGET
    _sibling: "ReleaseTree | None" = None  # the other release's tree (share_kept_sources)

    def yield_kept_sources(self, project_characters: int) -> None:
        """Keep no more texts than the budget less the project's own Python text (what is kept
        stays)."""
        self._kept_budget = max(0, KEPT_SOURCE_BUDGET - project_characters)

    def readable_source(self, relpath: str) -> str | None:
        """`read_source`, or None for a file that cannot be read: for the searches over the
        whole release and the probes of one module's text, which do without it (a module the
        project imports is reported where it is imported, by the model)."""
        try:
            return self.read_source(relpath)
        except Unreadable:
            return None

    def readable_text(self, relpath: str) -> str | None:
        """`read_text`, or None for a file that cannot be read."""
        try:
            return self.read_text(relpath)
        except Unreadable:
            return None

    def metadata_text(self) -> str | None:
        """The release's dependency metadata (a wheel's METADATA or the repo's pyproject)."""
        return None

    def in_forked_copy(self) -> None:
        """Called in a forked copy of the process (contracts/base.py run_checks_in_two) before it
        reads the tree: what it shares with the first process (a file's offset, a pipe to a
        helper process) is replaced by its own, so that neither reads what the other asked for."""


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

    @property
    def in_file_name(self) -> str:
        """`short` as one part of a file's or folder's name (`{new}` in `pr-body`, the conflicts'
        folder, the stack's new folder): the version is the release's own text (a pull request's
        `__version__`, a directory's path), and `/tmp/x`, `..` or a NUL in a path built from it
        would write outside the project."""
        return file_name_part(self.short)


def file_name_part(text: str) -> str:
    """`text` as one safe part of a path: what is not a letter, a digit, `.`, `_`, `+` or `-`
    becomes `_`, and a leading dot too (never `.` or `..`, never a hidden name)."""
    part = re.sub(r"[^A-Za-z0-9._+-]", "_", text)
    return "_" + part[1:] if part.startswith(".") else part or "_"


def check_is_sglang(tree: ReleaseTree, label: str) -> None:
    """A tree with no sglang package, or without sglang/srt, would yield an empty model: refuse it."""
    try:
        init = tree.read_bytes(f"{PACKAGE}/__init__.py")
    except Unreadable as unreadable:
        raise SourceError(f"{label}: sglang/__init__.py cannot be read ({unreadable.reason})") from None
    if init is None:
        raise SourceError(f"{label}: no sglang package found (expected sglang/__init__.py)")
    srt = tree.list_dir(f"{PACKAGE}/srt")
    why = tree.unlisted(f"{PACKAGE}/srt") if srt is None else None
    if why:
        raise SourceError(f"{label}: sglang/srt cannot be listed ({why})")
    if not srt:
        raise SourceError(f"{label}: sglang/srt is missing or empty; this does not look like an SGLang release")
