"""Text of the project (a file name, a Dockerfile value, a line of a patch) shown on a terminal
or in a CI log, where the project may be an attacker's pull request.

There it must stay what it is: a newline or a carriage return would start a line of the
attacker's choosing, an escape sequence would redraw the terminal, and GitHub Actions reads a
line that starts with `::` (after spaces) as a workflow command, and `##[` anywhere in a line as
its older form (`::warning title=Approved::LGTM.py`, `##[stop-commands]x`). `printable` is the
one place that undoes all of it, and every output path shows project text through it; JSON
(`json_text`) and a patch (`patch_for`), which must carry the text as it is, are kept inert
around it instead.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import secrets
import stat
from typing import Any, TextIO

from sglang_contracts.infra.gitquote import git_quoted
from sglang_contracts.infra.lines import git_lines, numbered_lines

# The start of a line (the runner splits lines at \r too) that GitHub reads as a command.
_COMMAND_AT_LINE_START = re.compile(r"(?:^|(?<=[\r\n]))([ \t]*):(?=:)")
_LEGACY_COMMAND = "##["


def printable(text: str, keep: str = "") -> str:
    """`text` as one line of visible characters: a control or format character (ESC, a newline,
    C1, a bidi override) shown as its Python escape, a byte that is not UTF-8 (os.fsdecode's
    surrogates) as \\xNN, and never a workflow command: a leading `::` shows as `\\x3a:`, `##[`
    as `#\\x23[`. `keep`: characters left as they are (a tab in a line of code)."""
    # Looked at character by character only when one needs escaping: each finding's path and
    # message come here, and a report of thousands took seconds (ninth campaign, R02).
    shown = text if text.isprintable() else "".join(_shown(char, keep) for char in text)
    return _COMMAND_AT_LINE_START.sub(r"\1\\x3a", shown.replace(_LEGACY_COMMAND, "#\\x23["))


def _shown(char: str, keep: str) -> str:
    if 0xDC80 <= ord(char) <= 0xDCFF:  # a byte os.fsdecode could not decode
        return f"\\x{ord(char) - 0xDC00:02x}"
    if char.isprintable() or char == " " or char in keep:
        return char
    return char.encode("unicode_escape").decode("ascii")


def printable_path(path: str) -> str:
    """A path as `printable` shows text; one that would start a line with `::` shows as the
    same file under `./`, which a reader can still open."""
    if path.lstrip(" ").startswith("::"):
        path = "./" + path
    return printable(path)


def printable_lines(text: str) -> list[str]:
    """The lines of a text of code (a hunk, a conflict), each `printable`, its tabs kept."""
    return [printable(line, keep="\t") for line in numbered_lines(text)]


def json_text(document: Any) -> str:
    """`document` as indented JSON for standard output: the same data, but `##[` in a string
    written `#\\u0023[` (ensure_ascii already escapes every control character)."""
    return json.dumps(document, indent=2).replace(_LEGACY_COMMAND, "#\\u0023[")


def patch_for(stream: TextIO, text: str) -> str:
    """A patch (project text that must stay as it is to apply) as written to `stream`: shown
    printable on a terminal; in a GitHub Actions log, between stop-commands lines whose token
    the patch cannot know, so that the runner reads none of its lines as a command; else as it is."""
    if stream.isatty():
        return "".join(line + "\n" for line in printable_lines(text))
    if os.environ.get("GITHUB_ACTIONS") == "true" and text and not _is_file(stream):
        token = secrets.token_hex(16)
        ending = "" if text.endswith("\n") else "\n"
        return f"::stop-commands::{token}\n{text}{ending}::{token}::\n"
    return text


def _is_file(stream: TextIO) -> bool:
    try:
        return stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):  # a stream without a descriptor (a test's capture)
        return False


def unified_text_diff(relpath: str, before: str | None, after: str | None) -> str:
    """`diff -u` of one file of the project (None: no such file), that `git apply` takes: named as
    git names it, C-quoted when it must be (`"a/t\\tb.py"`: the printable form names another file to
    git), never under ./ (git apply refuses a/./name). `patch_for` keeps it inert where it is shown."""
    lines = difflib.unified_diff(git_lines(before or ""), git_lines(after or ""),
                                 fromfile="/dev/null" if before is None else _diff_name(f"a/{relpath}"),
                                 tofile="/dev/null" if after is None else _diff_name(f"b/{relpath}"))
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def _diff_name(name: str) -> str:
    """A header line's name, never a workflow command: `##[` written `#\\043[` (in quotes), the
    same name to git apply. A header line never starts with `::`; git quotes every control character."""
    return git_quoted(name, octal="#") if _LEGACY_COMMAND in name else git_quoted(name)
