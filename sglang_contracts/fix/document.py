"""A project file as a fix edits it: decoded exactly, edited as text or as a libcst tree, and
written back atomically, byte for byte as it was wherever no fix applied (BOM, CRLF, encoding)."""

from __future__ import annotations

import io
import os
import stat
import tokenize
from pathlib import Path
from typing import TYPE_CHECKING

from sglang_contracts.infra.display import printable_path
from sglang_contracts.infra.files import MAX_PYTHON_BYTES, MAX_TEXT_BYTES, Unreadable, read_limited, text_encoding
from sglang_contracts.infra.lines import numbered_lines
from sglang_contracts.infra.pysource import is_python_file
from sglang_contracts.infra.temporaries import temporary_beside

if TYPE_CHECKING:
    import libcst
    from libcst.metadata import MetadataWrapper


class NotRewritable(Exception):
    """A file no fix may touch, with the reason in words."""


# The largest file a fix rewrites, of any kind. An edit runs on the statement it edits, but libcst
# parses the whole file first, ~13 kB of memory at its peak per line of short lines (a 1 MB file
# of them took 1.9 GB, and 94 s before edits ran on their statement); a file of another kind
# takes up to MOST_LISTED fixes of a rule, each reading lines of the whole file (a 3.9 MB
# Dockerfile's 1,000 took 54 s, campaign 12 R05). Both bounds are well above what projects hold
# (sglang-omni's largest file: 158 kB; SGLang's largest module: under 400 kB, some 10,000 lines;
# a Dockerfile or requirements file: a few hundred lines) and keep one file within ~300 MB and
# seconds. docs/fixing.md says so.
MAX_FIX_BYTES = 512 * 1024
MAX_FIX_LINES = 20_000


class LeftWhole(NotRewritable):
    """A file a fix leaves as it is for a reason each of its findings says (fix it by hand)."""


class TooLargeToFix(LeftWhole):
    """A file larger than a fix rewrites: each of its findings stays, and says so."""


class ChangedMeanwhile(NotRewritable):
    """The file no longer holds the bytes the fix read (an editor saved it while the run worked):
    its fixed text would drop what was written since."""


class FixNotBuilt(Exception):
    """A fix whose new code cannot be built (a name that is no Python name): it is skipped, with
    the reason in words, and the file is left as it was."""


def _line_count(raw: bytes) -> int:
    """The lines of a file in its bytes, by Python's line ends (\n, \r\n, \r), as numbered_lines
    counts them: no decoding for a file left whole."""
    ends = raw.count(b"\n") + raw.count(b"\r") - raw.count(b"\r\n")
    return ends + (1 if raw and not raw.endswith((b"\n", b"\r")) else 0)


class Document:
    def __init__(self, relpath: str, raw: bytes, *, python: bool) -> None:
        self.relpath = relpath
        self.original = raw
        self.python = python
        self.notes: list[str] = []
        # `import x` statements the edits need, added once the round's edits are done (a line
        # added at the top would move every place a later fix points at).
        self.imports_needed: set[str] = set()
        # (module, name) of `from module import name` statements the edits need, added likewise.
        self.names_needed: set[tuple[str, str]] = set()
        # Python as the interpreter reads it (a BOM is `utf-8-sig`, stripped as the check's
        # positions assume); other files as their byte-order mark says, the mark put back on write.
        if len(raw) > MAX_FIX_BYTES or _line_count(raw) > MAX_FIX_LINES:
            raise TooLargeToFix(f"{printable_path(relpath)} is larger than a fix rewrites ({MAX_FIX_BYTES // 1024} kB "
                                f"or {MAX_FIX_LINES:,} lines, docs/fixing.md): fix it by hand")
        self.encoding, self.mark = (_python_encoding(raw), b"") if python else text_encoding(raw)
        try:
            # strict: a byte that does not decode is not ours to drop
            self._text = raw[len(self.mark):].decode(self.encoding)
        except (UnicodeDecodeError, LookupError) as error:
            raise NotRewritable(f"not {self.encoding} text ({error})") from None
        # The text's lines (numbered_lines', with their ends), split once and edited in place by
        # `replace`; the text is joined from them again only when read. Split at each `line` and
        # `replace`, a file's fixes (up to MOST_LISTED of a rule) cost fixes x lines (R05).
        self._lines: list[str] | None = None
        self._bare: list[str] | None = None  # the same without their ends, when asked for
        self._text_stale = False
        self._read_text = self._text
        if not self._encodes_back(raw):  # unicode_escape: every line end written back as `\n` (campaign 12, R08)
            raise LeftWhole(f"its {self.encoding} text does not encode back to the bytes read: fix it by hand")
        self._module: libcst.Module | None = None
        self._metadata: MetadataWrapper | None = None
        self.original_module: libcst.Module | None = None  # the tree as read, for what the edits changed
        if python:
            self.original_module = self.module  # never rewrite a file that does not parse

    @classmethod
    def read(cls, path: Path, relpath: str) -> "Document":
        python = is_python_file(os.fspath(path))
        try:
            raw = read_limited(path, MAX_PYTHON_BYTES if python else MAX_TEXT_BYTES)
        except Unreadable as error:
            raise NotRewritable(f"cannot read this file ({error.reason})") from None
        return cls(relpath, raw, python=python)

    @property
    def text(self) -> str:
        if self._text_stale:
            self._text, self._text_stale = "".join(self.lines()), False
        return self._text

    @text.setter
    def text(self, value: str) -> None:
        if value != self.text:
            self._text, self._module, self._lines, self._bare = value, None, None, None

    @property
    def original_text(self) -> str:
        """The text as read (without its byte-order mark, as `text` is)."""
        return self._read_text

    @property
    def module(self) -> libcst.Module:
        if self._module is None:
            import libcst  # only a fix that edits a tree pays its import: a check run never does

            try:
                self._module = libcst.parse_module(self.text)
            except (libcst.ParserSyntaxError, RecursionError) as error:
                raise NotRewritable(f"cannot parse this file ({numbered_lines(str(error))[0]})") from None
        return self._module

    @module.setter
    def module(self, value: libcst.Module) -> None:
        self.edited(value, value.code)

    def edited(self, module: libcst.Module, code: str) -> None:
        """The tree an edit made, with its code (`module.code`) when the edit has it already."""
        self._text, self._module, self._lines, self._bare, self._text_stale = code, module, None, None, False

    @property
    def metadata(self) -> MetadataWrapper:
        """The tree's metadata (positions, scopes), resolved once for each version of the tree
        and shared by every edit that reads it. Not copied first, as libcst would by default:
        the parser and the edits' transforms never put one node in a tree twice."""
        module = self.module
        if self._metadata is None or self._metadata.module is not module:
            from libcst.metadata import MetadataWrapper

            self._metadata = MetadataWrapper(module, unsafe_skip_copy=True)
        return self._metadata

    def lines(self) -> list[str]:
        """The lines as the check numbered them (infra/lines.py numbered_lines), each with its line
        ending: the document's own list, split once per text, not to be changed by the caller."""
        if self._lines is None:
            self._lines = numbered_lines(self.text, keepends=True)
        return self._lines

    def bare_lines(self) -> list[str]:
        """`lines()` without their line ends (numbered_lines' default), kept as they are."""
        if self._bare is None:
            self._bare = [line.rstrip("\r\n") for line in self.lines()]
        return self._bare

    def line(self, number: int) -> str | None:
        lines = self.bare_lines()
        return lines[number - 1] if 0 < number <= len(lines) else None

    def replace(self, number: int, start: int, end: int, new: str) -> bool:
        """Replace characters [start, end) of line `number` (0-based columns)."""
        lines = self.lines()
        if not 0 < number <= len(lines):
            return False
        line = lines[number - 1]
        edited = line[:start] + new + line[end:]
        if edited == line:
            return False
        lines[number - 1] = edited
        self._module, self._text_stale = None, True
        if "\r" in new or "\n" in new or len(line.rstrip("\r\n")) < end:  # lines added or joined: split again
            self._text, self._text_stale, self._lines, self._bare = "".join(lines), False, None, None
        elif self._bare is not None:
            self._bare[number - 1] = edited.rstrip("\r\n")
        return True

    def note(self, line: int, col: int, code: str, why: str) -> None:
        self.notes.append(not_fixed(self.relpath, line, col, code, why))

    def encoded(self) -> bytes:
        return self.mark + self.text.encode(self.encoding)

    def _encodes_back(self, raw: bytes) -> bool:
        """Whether the text as read, encoded as it would be written, is `raw`: else a fix would
        rewrite every line it did not edit too."""
        try:
            return self.encoded() == raw
        except (UnicodeError, LookupError):
            return False

    @property
    def changed(self) -> bool:
        """Whether an edit changed the text: a file no fix edited is never written."""
        return self.text != self._read_text


def not_fixed(relpath: str, line: int, col: int, code: str, why: str) -> str:
    """The note a finding left unfixed gets: where it is, and why."""
    return f"{printable_path(relpath)}:{line}:{col}: {code} not fixed: {why}"


def _python_encoding(raw: bytes) -> str:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except (SyntaxError, LookupError) as error:
        raise NotRewritable(f"unknown source encoding ({error})") from None
    return encoding


def read_only(path: Path) -> bool:
    """Whether the file says it must not be written: no write bit for its owner, or no access
    for us (as root, `os.access` says yes to everything, so the mode decides)."""
    mode = path.stat().st_mode
    return not mode & stat.S_IWUSR or not os.access(path, os.W_OK)


def holds(path: Path, data: bytes) -> bool:
    """Whether the file at `path` holds exactly `data` (a file grown past it, or gone, does not)."""
    try:
        return read_limited(path, len(data)) == data
    except Unreadable:
        return False


def _keep_owner(temporary: str, status: os.stat_result) -> None:
    """The rewritten file keeps its owner and group where this process may give them (root in a
    CI container over another user's checkout made the file root's, and its owner could no longer
    read it: campaign 16, R04); a user's own file needs nothing."""
    if (status.st_uid, status.st_gid) == (os.geteuid(), os.getegid()):
        return
    try:
        os.chown(temporary, status.st_uid, status.st_gid)
    except OSError:  # not this process's to give: the file becomes its, as any editor's save makes it
        pass


def write_atomically(path: Path, data: bytes, read: bytes | None = None) -> None:
    """Write through a temporary file beside `path`, then rename over it, keeping its mode and owner: a
    reader (or a crash) sees the old file or the new one, never half of one. With `read`, the
    bytes the new text was made from: ChangedMeanwhile, and nothing written, when the file no
    longer holds them (lines an editor appended while `fix` ran were lost: campaign 12, R09)."""
    status = path.stat()
    descriptor, temporary = temporary_beside(path)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        _keep_owner(temporary, status)
        os.chmod(temporary, stat.S_IMODE(status.st_mode))
        if read is not None and not holds(path, read):  # checked last, the closest to the rename
            raise ChangedMeanwhile("the file changed while this run worked on it: left as it is")
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
