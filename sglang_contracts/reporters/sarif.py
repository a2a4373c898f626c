"""SARIF 2.1.0 for GitHub code scanning (and any SARIF viewer).

One run; the tool's rules are the catalog (help text, default level, the surface as a tag),
results point at paths relative to the repository root (`%SRCROOT%`), and each carries the
finding's line-independent fingerprint so code scanning tracks it across commits.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote

from sglang_contracts import __version__
from sglang_contracts.infra.display import json_text
from sglang_contracts.diagnostics.catalog import Rule, load_catalog, surface_for
from sglang_contracts.reporters.base import repository_path, repository_root

if TYPE_CHECKING:
    from sglang_contracts.check.runner import CheckResult

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}
FINGERPRINT_KEY = "sglangContracts/v1"


def _rule_descriptor(code: str, rule: Rule | None) -> dict[str, Any]:
    surface = surface_for(code)
    if rule is None:  # a code this catalog does not know (should not happen; never drop a result)
        return {"id": code, "shortDescription": {"text": code}, "properties": {"tags": [surface.key]}}
    descriptor: dict[str, Any] = {
        "id": code,
        "name": "".join(part.capitalize() for part in rule.name.split("-")),
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.description},
        "help": {"text": rule.description, "markdown": f"**{code} {rule.name}**\n\n{rule.description}"},
        "defaultConfiguration": {"level": LEVELS[rule.severity]},
        "properties": {"tags": ["sglang", surface.key], "precision": "high"},
    }
    if rule.reference.startswith(("http://", "https://")):
        descriptor["helpUri"] = rule.reference
    return descriptor


def artifact_uri(path: str) -> str:
    """A relative path as a URI reference (RFC 3986) to the file's bytes: every byte but the
    unreserved characters and `/` percent-encoded, a newline, a `:` (which a first segment may
    not hold) and a byte that is not UTF-8 (os.fsdecode's surrogate) included."""
    return quote(_name_bytes(path), safe="/")


def _name_bytes(name: str) -> bytes:
    """The bytes a file name stands for (os.fsencode), for any str: a character this process's
    file system encoding has no byte for (past ASCII under LC_ALL=C, in a name this process did
    not read) and a lone surrogate that stands for no byte, as UTF-8 (surrogatepass). The
    report names the file and never fails at its name (campaign 13, R03: a UnicodeEncodeError)."""
    try:
        return os.fsencode(name)
    except UnicodeEncodeError:
        try:
            return name.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            return name.encode("utf-8", "surrogatepass")


def build_sarif(result: "CheckResult") -> dict[str, Any]:
    catalog = load_catalog()
    codes = sorted(set(catalog) | {d.code for d in result.diagnostics})
    index = {code: position for position, code in enumerate(codes)}
    results = []
    for d in result.diagnostics:
        region: dict[str, Any] = {"startLine": max(d.line, 1), "startColumn": max(d.col, 1)}
        if d.end_line is not None and d.end_col is not None:
            region.update(endLine=d.end_line, endColumn=max(d.end_col, region["startColumn"]))
        entry: dict[str, Any] = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": LEVELS.get(d.severity, "error"),
            "message": {"text": d.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": artifact_uri(repository_path(result, d)), "uriBaseId": "%SRCROOT%"},
                "region": region,
            }}],
            "partialFingerprints": {FINGERPRINT_KEY: d.fingerprint},
        }
        if d.symbol:
            entry["properties"] = {"symbol": d.symbol}
        results.append(entry)
    root_uri = repository_root(result.project.root).resolve().as_uri().rstrip("/") + "/"
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "sglang-contracts",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": [_rule_descriptor(code, catalog.get(code)) for code in codes],
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": root_uri}},
            "columnKind": "unicodeCodePoints",
            "properties": {"oldRelease": result.old.release.label, "newRelease": result.new.release.label},
            "results": results,
        }],
    }


def write_sarif(result: "CheckResult", out: TextIO, quiet: bool = False) -> None:
    out.write(json_text(build_sarif(result)) + "\n")
