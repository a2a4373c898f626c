"""A JSON list of diagnostics: path, line, col, end_line, end_col (null where not known), code,
severity, surface, message, symbol, old/new (what each release says of the symbol, or null),
fingerprint."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TextIO

from sglang_contracts.reporters.base import display_path

if TYPE_CHECKING:
    from sglang_contracts.runner import CheckResult


def write_json(result: "CheckResult", out: TextIO, quiet: bool = False) -> None:
    root = result.project.root
    records = [{**d.to_json(), "path": display_path(root, d.path)} for d in result.diagnostics]
    json.dump(records, out, indent=2)
    out.write("\n")
