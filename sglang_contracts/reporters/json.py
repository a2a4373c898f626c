"""A JSON list of diagnostics: path, line, col, end_line, end_col (null where not known), code,
severity, surface, message, symbol, old/new (what each release says of the symbol, or null),
fingerprint; and `grouped_under`, the `path:line:col` of the SGC106 a finding in code for the old
release only is listed under (check/served.py), where it is."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from sglang_contracts.infra.display import json_text
from sglang_contracts.reporters.base import display_path

if TYPE_CHECKING:
    from sglang_contracts.check.runner import CheckResult


def write_json(result: "CheckResult", out: TextIO, quiet: bool = False) -> None:
    """The list of diagnostics; where a git clone gave the upstream delta between the two tags,
    or the dependency closures moved, an object holding that list (`diagnostics`), the delta
    (`upstream_delta`) and the closure's moves (`closure_delta`: each package's old and new
    version, the chain that brings it, its platforms)."""
    root = result.project.root
    records = [{**d.to_json(), "path": display_path(root, d.path)} for d in result.diagnostics]
    for record in records:  # the finding a record is grouped under, named as the records name their paths
        if "grouped_under" in record:
            path, line, col = record["grouped_under"].rsplit(":", 2)
            record["grouped_under"] = f"{display_path(root, path)}:{line}:{col}"
    document: object = records
    closure = result.closure_delta if result.closure_delta is not None and result.closure_delta.reported else None
    if result.upstream_delta is not None or closure is not None:
        document = {"diagnostics": records,
                    "upstream_delta": result.upstream_delta.to_json() if result.upstream_delta is not None else None,
                    "closure_delta": closure.to_json() if closure is not None else None}
    out.write(json_text(document) + "\n")
