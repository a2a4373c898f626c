"""Reporters: a check's result rendered for a terminal, a CI log, code scanning or a pull request.

A reporter takes the whole `CheckResult` (diagnostics with project-relative paths, both
releases, the project's pin) and writes to `out`; `--format` picks one by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, TextIO

from sglang_contracts.reporters.github import write_github
from sglang_contracts.reporters.json import write_json
from sglang_contracts.reporters.markdown import write_markdown
from sglang_contracts.reporters.sarif import write_sarif
from sglang_contracts.reporters.text import write_text

if TYPE_CHECKING:
    from sglang_contracts.check.runner import CheckResult

Reporter = Callable[["CheckResult", TextIO, bool], None]  # (result, out, quiet)
REPORTERS: dict[str, Reporter] = {
    "text": write_text,
    "json": write_json,
    "sarif": write_sarif,
    "github": write_github,
    "markdown": write_markdown,
}
