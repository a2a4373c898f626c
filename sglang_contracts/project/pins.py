"""The project's own SGLang pin: the default `--old` release."""

from __future__ import annotations

from pathlib import Path

from sglang_contracts.project.stack import declared_requirements
from sglang_contracts.requirements import exact_version, normalized


def find_sglang_pin(root: Path) -> tuple[str, str] | None:
    """(version, where) of an exact `sglang==X` pin in pyproject.toml or a requirements file."""
    for declared in declared_requirements(root):
        if normalized(declared.requirement.name) != "sglang":
            continue
        version = exact_version(declared.requirement.specifier)
        if version is not None:
            return str(version), declared.path
    return None
