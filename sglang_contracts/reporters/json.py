"""A JSON list of diagnostics: path, line, col, code, severity, message, symbol."""

from __future__ import annotations

import json
from typing import TextIO

from sglang_contracts.diagnostics import Diagnostic


def write_json(diagnostics: list[Diagnostic], out: TextIO) -> None:
    json.dump([d.to_json() for d in diagnostics], out, indent=2)
    out.write("\n")
