"""Reporters: diagnostics rendered for a terminal, a CI log, or a machine."""

from __future__ import annotations

from typing import Callable, TextIO

from sglang_contracts.diagnostics import Diagnostic
from sglang_contracts.reporters.json import write_json
from sglang_contracts.reporters.text import write_text

Reporter = Callable[[list[Diagnostic], TextIO], None]
REPORTERS: dict[str, Reporter] = {"text": write_text, "json": write_json}
