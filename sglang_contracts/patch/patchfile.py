"""`.patch` files as `git apply` reads them: file patches, hunks, and git's own parse errors.

git decides where a hunk ends from its `@@ -a,b +c,d @@` counts, not from the lines that
follow: a hand-edited count that is too small leaves the remaining lines outside the hunk
(ignored as garbage, or a "patch fragment without header" error when another `@@` follows),
and one that is too large runs into the next header ("corrupt patch"). A parse error makes
git reject the whole patch. This module follows git's `apply.c` (`find_header`,
`parse_git_diff_header`, `parse_fragment`), not GNU patch, which is more lenient.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sglang_contracts.infra.lines import git_lines
from sglang_contracts.infra.gitquote import git_unquoted

HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
GIT_HEADER_LINES = ("--- ", "+++ ", "old mode ", "new mode ", "deleted file mode ", "new file mode ", "copy from ",
                    "copy to ", "rename old ", "rename new ", "rename from ", "rename to ", "similarity index ",
                    "dissimilarity index ", "index ")
PATCH_SUFFIXES = (".patch", ".diff")
DEV_NULL = "/dev/null"


def unsafe_path_reason(patch_path: str) -> str:
    """Why a path a patch names must never be read or written, or "": a patch comes from
    another repository, and `rename to /home/u/.bashrc` or `b/python/sglang/../../.git/config`
    would reach outside the tree it is applied to (git itself refuses these too)."""
    if patch_path.startswith("/"):
        return "an absolute path"
    parts = patch_path.split("/")
    if ".." in parts:
        return "a `..` component"
    if any(part.lower() == ".git" for part in parts):  # case-folding file systems read .GIT as .git
        return "a `.git` component"
    if "" in parts or "." in parts or "\0" in patch_path:
        return "not a normalised path"
    return ""


@dataclass
class Hunk:
    line: int  # 1-based line of its `@@` header in the patch file
    header: str
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    body: list[tuple[str, str]] = field(default_factory=list)  # (" ", "-" or "+", text with its newline, if any)
    leading: int = 0  # context lines before the first change
    trailing: int = 0  # context lines after the last change

    @property
    def preimage(self) -> list[str]:
        return [text for kind, text in self.body if kind != "+"]

    @property
    def postimage(self) -> list[str]:
        return [text for kind, text in self.body if kind != "-"]

    @property
    def added(self) -> list[str]:
        return [text for kind, text in self.body if kind == "+"]

    @property
    def removed(self) -> list[str]:
        return [text for kind, text in self.body if kind == "-"]

    def reversed(self) -> "Hunk":
        """The hunk `git apply -R` applies: the new side becomes the old."""
        swap = {"+": "-", "-": "+", " ": " "}
        return Hunk(self.line, self.header, self.new_start, self.new_count, self.old_start, self.old_count,
                    [(swap[kind], text) for kind, text in self.body], self.leading, self.trailing)


@dataclass
class FilePatch:
    line: int  # 1-based line where its header starts
    old_path: str | None  # after stripping one leading component (git's -p1); None for /dev/null
    new_path: str | None
    is_new: bool = False
    is_delete: bool = False
    is_rename: bool = False
    is_copy: bool = False
    mode_change: bool = False  # an `old/new mode` pair, or a new or deleted file that is no plain file (a link, 100755)
    binary: bool = False
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.new_path if self.is_new or self.old_path is None else self.old_path

    @property
    def unsafe_reason(self) -> str:
        """Why one of its paths (either side, a rename's or a copy's) must not be followed, or ""."""
        for path in (self.old_path, self.new_path):
            if path is not None and (why := unsafe_path_reason(path)):
                return f"{why}: {path!r}"
        return ""


@dataclass
class PatchFile:
    files: list[FilePatch]
    error: tuple[int, str] | None = None  # (line, git's message): git rejects the whole patch


class _PatchError(Exception):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


def _strip_component(name: str) -> str | None:
    """`a/python/sglang/x.py` -> `python/sglang/x.py` (git's default -p1); /dev/null -> None."""
    name = name.rstrip("\n")
    # A C-quoted name holds no raw tab (git writes one as \t): one ends the name (a date follows).
    # Quoted, its escapes are bytes (`\303\251` is one é); one that does not unquote is read as written, as git does.
    name = name.split("\t", 1)[0].rstrip()
    name = git_unquoted(name) or name
    if name == DEV_NULL:
        return None
    return name.split("/", 1)[1] if "/" in name else name


def _git_header_names(line: str) -> tuple[str | None, str | None]:
    """Both names of `diff --git a/X b/Y` (unquoted, the usual form)."""
    rest = line[len("diff --git "):].rstrip("\n")
    if rest.startswith('"'):
        return None, None
    middle = rest.find(" b/")
    if middle < 0:
        return None, None
    return _strip_component(rest[:middle]), _strip_component(rest[middle + 1:])


def _parse_hunk(lines: list[str], start: int) -> tuple[Hunk, int]:
    """The hunk whose header is lines[start]; returns it and the index after it (git's parse_fragment)."""
    match = HUNK_HEADER.match(lines[start])
    if not match:
        raise _PatchError(start + 1, f"corrupt patch at line {start + 1}")
    old_start, old_count, new_start, new_count = (
        int(match.group(1)), int(match.group(2) or 1), int(match.group(3)), int(match.group(4) or 1))
    hunk = Hunk(start + 1, lines[start].rstrip("\n"), old_start, old_count, new_start, new_count)
    old_left, new_left = old_count, new_count
    added = deleted = 0
    index = start + 1
    while index < len(lines):
        if not old_left and not new_left:
            break
        line = lines[index]
        if not line.endswith("\n"):
            raise _PatchError(index + 1, f"corrupt patch at line {index + 1}")
        first = line[0]
        if first in " \n":
            old_left -= 1
            new_left -= 1
            if not added and not deleted:
                hunk.leading += 1
            hunk.trailing += 1
            hunk.body.append((" ", line[1:] if first == " " else "\n"))
        elif first == "-":
            deleted += 1
            old_left -= 1
            hunk.trailing = 0
            hunk.body.append(("-", line[1:]))
        elif first == "+":
            added += 1
            new_left -= 1
            hunk.trailing = 0
            hunk.body.append(("+", line[1:]))
        elif first == "\\":
            if len(line) < 12 or not line.startswith("\\ "):
                raise _PatchError(index + 1, f"corrupt patch at line {index + 1}")
            _drop_newline(hunk)
        else:
            raise _PatchError(index + 1, f"corrupt patch at line {index + 1}")
        index += 1
    if old_left or new_left or (not added and not deleted):
        raise _PatchError(index + 1, f"corrupt patch at line {index + 1}")
    if index < len(lines) and lines[index].startswith("\\ ") and len(lines[index]) > 12:
        _drop_newline(hunk)
        index += 1
    return hunk, index


def _drop_newline(hunk: Hunk) -> None:
    """`\\ No newline at end of file`: the line before it has no newline."""
    if hunk.body:
        kind, text = hunk.body[-1]
        hunk.body[-1] = (kind, text[:-1] if text.endswith("\n") else text)


def _parse_git_header(lines: list[str], start: int) -> tuple[FilePatch, int]:
    old, new = _git_header_names(lines[start])
    patch = FilePatch(start + 1, old, new)
    index = start + 1
    while index < len(lines):
        line = lines[index]
        if line.startswith("--- "):
            patch.old_path = _strip_component(line[4:])
            patch.is_new = patch.old_path is None
        elif line.startswith("+++ "):
            patch.new_path = _strip_component(line[4:])
            patch.is_delete = patch.new_path is None
        elif line.startswith("new file mode "):
            patch.is_new = True
            patch.mode_change |= line.split()[-1] != "100644"
        elif line.startswith("deleted file mode "):
            patch.is_delete = True
            patch.mode_change |= line.split()[-1] != "100644"
        elif line.startswith(("old mode ", "new mode ")):
            patch.mode_change = True
        elif line.startswith(("rename from ", "copy from ")):
            patch.old_path = line.split(" ", 2)[2].rstrip("\n")
        elif line.startswith(("rename to ", "copy to ")):
            patch.new_path = line.split(" ", 2)[2].rstrip("\n")
            patch.is_rename |= line.startswith("rename")
            patch.is_copy |= line.startswith("copy")
        elif not line.startswith(GIT_HEADER_LINES):
            break
        index += 1
    if patch.old_path is None and patch.new_path is None:
        raise _PatchError(start + 1, f"git diff header lacks filename information (line {start + 1})")
    if patch.is_new:
        patch.old_path = None
    if patch.is_delete:
        patch.new_path = None
    return patch, index


def _find_header(lines: list[str], index: int) -> tuple[FilePatch, int] | None:
    """The next file patch header at or after `index` (git's find_header); garbage is skipped."""
    while index < len(lines):
        line = lines[index]
        if line.startswith("@@ -") and HUNK_HEADER.match(line):
            raise _PatchError(index + 1, f"patch fragment without header at line {index + 1}: {line.rstrip()}")
        if line.startswith("diff --git "):
            patch, after = _parse_git_header(lines, index)
            if after > index + 1:  # a bare `diff --git` line with no header after it is skipped, as git does
                return patch, after
        if (line.startswith("--- ") and index + 2 < len(lines) and lines[index + 1].startswith("+++ ")
                and lines[index + 2].startswith("@@ -")):
            old, new = _strip_component(line[4:]), _strip_component(lines[index + 1][4:])
            patch = FilePatch(index + 1, old, new, is_new=old is None, is_delete=new is None)
            return patch, index + 2
        index += 1
    return None


def lf_form(text: str) -> str:
    """A patch whose every line ends in CRLF, as LF: what its committed blob holds when a
    `core.autocrlf` checkout (or an editor on Windows) wrote the CRs, and what GNU `patch -p1`
    applies (it strips them). git apply would compare the CRs and apply no hunk to the
    release's LF files, a verdict of the checkout, not of the bump. A patch with both ends is
    left as it is: its CRs are then content, as git reads them."""
    newlines = text.count("\n")
    return text.replace("\r\n", "\n") if newlines and text.count("\r\n") == newlines else text


def parse_patch(text: str) -> PatchFile:
    """Every file patch of a patch file (judged in its LF form, lf_form), or git's reason for rejecting it whole."""
    lines = git_lines(lf_form(text))
    files: list[FilePatch] = []
    index = 0
    try:
        while True:
            found = _find_header(lines, index)
            if found is None:
                break
            patch, index = found
            files.append(patch)
            while index < len(lines) and lines[index].startswith("@@ -"):
                hunk, index = _parse_hunk(lines, index)
                patch.hunks.append(hunk)
            if not patch.hunks:
                following = lines[index] if index < len(lines) else ""
                patch.binary = following.startswith("GIT binary patch") or following.rstrip("\n").endswith(" differ")
                if patch.binary:
                    index += 1
                elif not (patch.is_rename or patch.is_copy or patch.is_new or patch.is_delete or patch.mode_change):
                    raise _PatchError(index + 1, f"patch with only garbage at line {index + 1}")
    except _PatchError as error:
        return PatchFile(files, (error.line, error.message))
    if not files:
        return PatchFile([], (1, "no valid patches in input"))
    return PatchFile(files)
