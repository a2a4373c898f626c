"""GitHub Actions workflow commands: `::error file=...,line=...,col=...,title=SGC102::message`.

Each becomes an annotation on the pull request's diff. Paths are relative to the repository
root (the git work tree holding the project), as annotations need, and name the file as it is
named: GitHub's own escaping carries a newline, a `:` or a `,` in a file name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from sglang_contracts.diagnostics import Diagnostic
from sglang_contracts.infra.display import printable, printable_path
from sglang_contracts.reporters.base import repository_path

if TYPE_CHECKING:
    from sglang_contracts.check.runner import CheckResult

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}
CR_LF = "\r\n"


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def carries(path: str) -> bool:
    """Whether a workflow command can name the file: the runner decodes only `%`, CR, LF, `:`
    and `,`, so any other control character (or a byte that is not UTF-8) would reach the log raw."""
    return all(char.isprintable() or char in " " + CR_LF for char in path)


def format_command(d: Diagnostic, path: str) -> str:
    """`path`: as the file is named, relative to the repository root. A path a command cannot
    carry is left out (an annotation on a file that does not exist helps no one), and shown,
    printable, at the head of the message."""
    # The message's line breaks are the annotation's (escaped below); its other controls shown.
    message = printable(d.message, keep=CR_LF)
    properties: list[tuple[str, object]] = []
    if carries(path):
        properties += [("file", path), ("line", d.line), ("col", d.col)]
        if d.end_line is not None and d.end_col is not None:
            properties += [("endLine", d.end_line), ("endColumn", d.end_col)]
    else:
        message = f"{printable_path(path)}:{d.line}:{d.col}: {message}"
    properties.append(("title", d.code))
    rendered = ",".join(f"{key}={escape_property(str(value))}" for key, value in properties)
    return f"::{COMMANDS.get(d.severity, 'error')} {rendered}::{escape_data(message)}"


def write_github(result: "CheckResult", out: TextIO, quiet: bool = False) -> None:
    for d in result.diagnostics:
        out.write(format_command(d, repository_path(result, d)) + "\n")
