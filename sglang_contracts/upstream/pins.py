"""SGLang's own dependency pins at one release: a wheel's `Requires-Dist`, or a tag's pyproject."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from email.parser import HeaderParser

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from sglang_contracts.requirements import (
    applies, environments, exact_version, normalized, parse_requirement, parse_specifier,
)
from sglang_contracts.sources.base import ReleaseTree
from sglang_contracts.infra.tomltext import parse_toml, table


@dataclass(frozen=True)
class ReleasePins:
    requirements: tuple[Requirement, ...]  # extras appear in markers (`extra == "test"`)
    requires_python: SpecifierSet | None = None  # the Pythons the release installs on, when it says
    name: str = "sglang"  # the distribution whose requirements these are (its own extras name it)
    # (environment, extras asked) -> closed_extras: asked once per project pin and platform
    _closed: dict = field(default_factory=dict, compare=False, repr=False)
    # normalized name -> its requirements, in order: asked for every declared requirement and platform
    _by_name: dict = field(default_factory=dict, compare=False, repr=False)

    def _named(self, key: str) -> list[Requirement]:
        if not self._by_name and self.requirements:
            for requirement in self.requirements:
                self._by_name.setdefault(normalized(requirement.name), []).append(requirement)
        return self._by_name.get(key, [])

    def matching(self, name: str, environment: dict[str, str], extras: frozenset[str] = frozenset()) -> list[Requirement]:
        """The release's requirements on distribution `name` installed on `environment` with
        `extras` requested, and the extras they pull in (`all` -> `srt` -> `runtime_common`)."""
        extras = self.closed_extras(environment, extras)
        return [r for r in self._named(normalized(name)) if applies(r.marker, environment, extras)]

    def closed_extras(self, environment: dict[str, str], extras: frozenset[str]) -> frozenset[str]:
        """`extras` with every extra that a requested one brings in through the release's own
        `sglang[x]` requirements (the distribution's own), to any depth (a set that only grows: it ends)."""
        key = (tuple(sorted(environment.items())), extras)
        if key not in self._closed:
            self._closed[key] = self._closed_extras(environment, extras)
        return self._closed[key]

    def _closed_extras(self, environment: dict[str, str], extras: frozenset[str]) -> frozenset[str]:
        closed = set(extras)
        while True:
            more = {extra for r in self.requirements if normalized(r.name) == normalized(self.name)
                    and applies(r.marker, environment, frozenset(closed)) for extra in r.extras} - closed
            if not more:
                return frozenset(closed)
            closed |= more

    def installed_on(self, environment: dict[str, str], extras: frozenset[str] = frozenset()) -> list[Requirement]:
        """Every requirement installed on `environment` with `extras` asked; the distribution's
        requirements on its own extras (`sglang[srt]`) are followed, not listed."""
        closed = self.closed_extras(environment, extras)
        own = normalized(self.name)
        return [r for r in self.requirements if normalized(r.name) != own and applies(r.marker, environment, closed)]

    def names(self) -> set[str]:
        self._named("")
        return set(self._by_name)

    def exact_pin(self, name: str, extras: frozenset[str] = frozenset()) -> Version | None:
        """The version the release pins `name` to on the first platform that has a pin (None if none)."""
        for environment in environments():
            for requirement in self.matching(name, environment, extras):
                version = exact_version(requirement.specifier)
                if version is not None:
                    return version
        return None


def _from_metadata(text: str) -> tuple[list[str], str | None]:
    # The headers end at the first empty line; the description after it (often most of the
    # text) is not fed to the parser, which cost a tenth of a second per run on the closure.
    head = re.split(r"\r?\n\r?\n", text, maxsplit=1)[0]
    headers = HeaderParser().parsestr(head)
    return headers.get_all("Requires-Dist") or [], headers.get("Requires-Python")


def _from_pyproject(text: str) -> tuple[list[str], str | None]:
    try:
        project = table(parse_toml(text), "project")
    except tomllib.TOMLDecodeError:
        return [], None
    dependencies = project.get("dependencies", [])
    lines = [line for line in dependencies if isinstance(line, str)] if isinstance(dependencies, list) else []
    for extra, group in table(project, "optional-dependencies").items():
        lines += _extra_lines(extra, group)
    python = project.get("requires-python")
    return lines, python if isinstance(python, str) else None


def _extra_lines(extra: str, group: object) -> list[str]:
    """An optional-dependencies group's requirements as metadata lines, each marked with its extra."""
    lines = []
    for line in group if isinstance(group, list) else []:
        requirement = isinstance(line, str) and parse_requirement(line)
        if requirement:
            marker = f"({requirement.marker}) and " if requirement.marker else ""
            requirement.marker = None
            lines.append(f'{requirement}; {marker}extra == "{extra}"')
    return lines


def release_pins(tree: ReleaseTree) -> ReleasePins | None:
    """The pins of the release, or None when it carries no dependency metadata."""
    text = tree.metadata_text()
    if text is None:
        return None
    is_metadata = text.lstrip().startswith("Metadata-Version") or "\nRequires-Dist:" in text
    return metadata_pins(text) if is_metadata else _pins_of(*_from_pyproject(text))


def metadata_pins(text: str, name: str = "sglang") -> ReleasePins:
    """The requirements a distribution's core metadata (`METADATA`, PEP 658's `.metadata`) states."""
    return _pins_of(*_from_metadata(text), name=name)


def _pins_of(lines: list[str], python: str | None, name: str = "sglang") -> ReleasePins:
    parsed = (parse_requirement(line) for line in lines)
    return ReleasePins(tuple(r for r in parsed if r is not None), parse_specifier(python or None), name)  # an empty header says nothing
