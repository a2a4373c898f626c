"""The project's own SGLang pin: the default `--old` release."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

REQUIREMENT_FILES = ("requirements.txt", "requirements-*.txt", "requirements/*.txt", "constraints.txt")


def _exact_sglang(line: str) -> str | None:
    line = line.split("#", 1)[0].strip()
    if not line or line.startswith("-"):
        return None
    try:
        requirement = Requirement(line)
    except InvalidRequirement:
        return None
    if requirement.name.lower().replace("_", "-") != "sglang":
        return None
    exact = [spec.version for spec in requirement.specifier if spec.operator in ("==", "===")]
    return exact[0] if len(exact) == 1 and "*" not in exact[0] else None


def find_sglang_pin(root: Path) -> tuple[str, str] | None:
    """(version, where) of an exact `sglang==X` pin in pyproject.toml or a requirements file."""
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            project = tomllib.loads(pyproject.read_text()).get("project", {})
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            project = {}
        groups = [project.get("dependencies", [])] + list(project.get("optional-dependencies", {}).values())
        for group in groups:
            for line in group if isinstance(group, list) else []:
                version = isinstance(line, str) and _exact_sglang(line)
                if version:
                    return version, "pyproject.toml"
    for pattern in REQUIREMENT_FILES:
        for path in sorted(root.glob(pattern)):
            for line in path.read_text(errors="replace").splitlines():
                version = _exact_sglang(line)
                if version:
                    return version, path.relative_to(root).as_posix()
    return None
