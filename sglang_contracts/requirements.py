"""Requirement strings as pip understands them (`packaging`), and the platforms markers are read on.

Shared by both sides: SGLang's own pins (a wheel's `Requires-Dist`, a tag's
`python/pyproject.toml`) and the project's (its pyproject, requirements and constraints files).
"""

from __future__ import annotations

import re
import sys
from functools import lru_cache

from packaging.markers import Marker, UndefinedComparison, UndefinedEnvironmentName, default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

# Markers are evaluated on these platforms (GPU servers, ARM servers, Apple laptops); two
# requirements are compared where both apply on at least one of them.
PLATFORMS = (
    {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix"},
    {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "aarch64", "os_name": "posix"},
    {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64", "os_name": "posix"},
)


@lru_cache(maxsize=1)
def environments() -> tuple[dict[str, str], ...]:
    base = default_environment()
    return tuple({**base, **platform} for platform in PLATFORMS)


DIGIT_RUN = re.compile(r"\d+")


def _holds_too_long_a_number(text: str) -> bool:
    """A number longer than Python converts to an int (4,300 digits): packaging compares the
    versions of a specifier or a marker lazily, and meets it as a ValueError deep inside a
    comparison, so such a text is no requirement or specifier at all."""
    limit = sys.get_int_max_str_digits()
    return bool(limit) and any(len(run) > limit for run in DIGIT_RUN.findall(text))  # `\d{4301}` tried at each digit


def parse_requirement(text: str) -> Requirement | None:
    text = text.strip()
    if not text or text.startswith("-") or _holds_too_long_a_number(text):
        return None
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None


SPECIFIER_STARTS = "<>=!~"  # what a specifier starts with, and no version does


def parse_specifier(text: str | None) -> SpecifierSet | None:
    """A version specifier (`>=3.10,<3.13`; "" admits every version), or None when there is
    none or it does not parse."""
    try:
        return SpecifierSet(text) if text is not None and not _holds_too_long_a_number(text) else None
    except InvalidSpecifier:
        return None


def admits_some_version(specifier: SpecifierSet) -> bool:
    """Whether any version satisfies every clause of `specifier` (`>=2,<1` admits none). A set
    of intervals, if it admits a version, admits one at or just past one of its bounds: each
    bound, the bound with a component added (`1.0` -> `1.0.1`) and the next one (`1.1`), and
    the extremes are tried (pre-releases admitted: this asks whether the set is empty, not
    whether a release matches)."""
    candidates = {Version("0"), Version("99999")}
    for clause in specifier:
        bound = as_version(clause.version.removesuffix(".*"))
        if bound is None:
            return True  # `===` of an arbitrary string: not judged
        release = bound.release
        candidates |= {bound, Version(".".join(map(str, (*release, 1)))),
                       Version(".".join(map(str, (*release[:-1], release[-1] + 1))))}
    return any(specifier.contains(version, prereleases=True) for version in candidates)


def without_marker(requirement: Requirement) -> str:
    """`flashinfer_python[cu13]==0.7.1`: the requirement as a reader compares it, markers left out."""
    extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
    return f"{requirement.name}{extras}{requirement.specifier}"


@lru_cache(maxsize=4096)  # a release's pins are matched by name once per project pin and platform
def normalized(name: str) -> str:
    return canonicalize_name(name)


def applies(marker: Marker | None, environment: dict[str, str], extras: frozenset[str] = frozenset()) -> bool:
    """Whether a requirement with this marker is installed on `environment` with `extras` requested.
    A marker that parses and cannot be evaluated (`"x" == "x"`: no environment names it) installs
    nothing: pip fails on it too (campaign 15, R09: a package index's metadata held one)."""
    if marker is None:
        return True
    try:
        return any(marker.evaluate({**environment, "extra": extra}) for extra in {"", *extras})
    except (UndefinedEnvironmentName, UndefinedComparison):
        return False


def exact_version(specifier: SpecifierSet) -> Version | None:
    """The one version an `==X` (no wildcard) or `===X` specifier allows, else None."""
    exact = [spec for spec in specifier if spec.operator in ("==", "===") and "*" not in spec.version]
    if len(exact) != 1 or len(specifier) != 1:
        return None
    return as_version(exact[0].version)


def as_version(text: str) -> Version | None:
    """`text` as a version, or None: the one parse of a version every reader goes through."""
    try:
        return Version(text)
    except ValueError:  # InvalidVersion, or a release number too long for an int (`1.` and 5,000 digits)
        return None


VERSION_IN_TAG = re.compile(r"v?(\d+(?:\.\d+){1,3}(?:(?:a|b|rc|\.post|\.dev)\d+)*)")


def version_in_tag(tag: str) -> Version | None:
    """`v0.5.15.post1-cu129` -> 0.5.15.post1: the release a Docker tag or git tag names."""
    match = VERSION_IN_TAG.match(tag)
    return as_version(match.group(1)) if match else None


def names_release(named: Version, release: Version) -> bool:
    """A tag of the same base release names it too (`v0.5.22.post1` is a build of 0.5.22)."""
    return named == release or named.base_version == release.base_version
