"""A release's dependency closure on one platform: SGLang's requirements, then, through every
exact pin, the pinned package's own requirements at that version, level by level.

Only exact pins are followed (`torch==2.14.1`): a range (`triton~=3.8.0`) is listed with its
range, since which version it resolves to is the installer's choice on the day. A requirement's
extras are followed into the package's own (`nvidia-cutlass-dsl[cu13]==4.8.0` brings its `cu13`
requirements), and markers are evaluated with `packaging` on the platform's environment. The
walk is bounded (MOST_DEPTH levels, MOST_PACKAGES packages): a closure cut short says so.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from packaging.requirements import Requirement

from sglang_contracts.closure.flavour import (
    CudaBuild, built_extras, built_requirement, is_cuda_library, of_another_build, offered_extras,
)
from sglang_contracts.requirements import exact_version, normalized, parse_specifier

from sglang_contracts.upstream.pins import ReleasePins

if TYPE_CHECKING:
    from sglang_contracts.closure.source import MetadataSource

MOST_DEPTH = 8  # sglang -> torch -> cuda-toolkit -> nvidia-cublas: real chains are 4 deep
MOST_PACKAGES = 600  # sglang 0.5.23 with every extra on Linux reaches about 250
ROOT = "sglang"


def platform_name(environment: dict[str, str]) -> str:
    return f"{environment['sys_platform']}/{environment['platform_machine']}"


@dataclass(frozen=True)
class Need:
    """One requirement in the closure: what it asks of `name`, and the chain that brings it
    (`("sglang", "torch==2.14.1")` for torch's own requirement on NCCL)."""

    name: str  # normalized
    specifier: str  # "==2.30.7", ">=4.10.0", "" (any version)
    extras: tuple[str, ...]
    chain: tuple[str, ...]

    @cached_property
    def version(self) -> str | None:
        """The one version an exact pin names (None for a range)."""
        specifier = parse_specifier(self.specifier) if self.specifier else None
        exact = exact_version(specifier) if specifier is not None else None
        return str(exact) if exact is not None else None

    def spelled(self) -> str:
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        return f"{self.name}{extras}{self.specifier}"

    def path(self) -> str:
        """`sglang -> torch==2.14.1 -> nvidia-nccl-cu13==2.30.7`"""
        return " -> ".join((*self.chain, self.spelled()))


@dataclass
class Closure:
    """Every package the release brings on one platform, with every requirement on each."""

    platform: str
    needs: dict[str, list[Need]] = field(default_factory=dict)  # name -> its requirements, the shortest chain first
    requires_python: dict[str, str] = field(default_factory=dict)  # `name==version` -> its Requires-Python
    unknown: list[str] = field(default_factory=list)  # `name==version` pinned, its metadata not known
    cut_short: bool = False  # the walk met its bounds
    cuda_build: str | None = None  # the CUDA build read (`cu129`), when the project names one
    build_unread: list[str] = field(default_factory=list)  # `torch==2.14.1+cu129`: the build's metadata not known
    # The CUDA libraries the index's build (not the project's) brings, left out of the closure:
    # `sglang -> torch==2.14.1 -> nvidia-nccl-cu13==2.30.7` (SGC714 reads torch's CUDA from them)
    other_build: list[str] = field(default_factory=list)

    def version(self, name: str) -> str | None:
        """The version the closure pins `name` to exactly (the first exact requirement's)."""
        return next((need.version for need in self.needs.get(normalized(name), ()) if need.version), None)

    def first(self, name: str, other: "Closure | None" = None) -> Need | None:
        """The requirement that fixes `name`: its first exact pin, else its first requirement
        with a specifier, else its first. With `other`, the closure it is compared with, one
        whose specifier `other` does not ask of `name` comes first: the requirement that moved
        (torch 2.14.1's `triton~=3.8.0`, not the bare `triton` of a shorter chain beside it)."""
        needs = self.needs.get(normalized(name), [])
        asked = {need.specifier for need in other.needs.get(normalized(name), ())} if other is not None else set()
        moved = [need for need in needs if need.specifier and need.specifier not in asked]
        return _fixing(needs, moved)

    def to_json(self) -> dict[str, Any]:
        return {"platform": self.platform, "requires_python": self.requires_python, "unknown": self.unknown,
                "cut_short": self.cut_short, "cuda_build": self.cuda_build, "build_unread": self.build_unread,
                "other_build": self.other_build,
                "needs": [[n.name, n.specifier, list(n.extras), list(n.chain)] for needs in self.needs.values() for n in needs]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Closure":
        closure = cls(str(data["platform"]), requires_python={str(k): str(v) for k, v in data["requires_python"].items()},
                      unknown=[str(item) for item in data["unknown"]], cut_short=bool(data["cut_short"]),
                      cuda_build=data.get("cuda_build"),
                      build_unread=[str(item) for item in data.get("build_unread", [])],
                      other_build=[str(item) for item in data.get("other_build", [])])
        for name, specifier, extras, chain in data["needs"]:
            closure.needs.setdefault(str(name), []).append(
                Need(str(name), str(specifier), tuple(map(str, extras)), tuple(map(str, chain))))
        return closure


def _fixing(needs: list[Need], moved: list[Need]) -> Need | None:
    """Closure.first's choice: the first exact pin among `moved`, then among `needs`; the first
    of `moved`; the first of `needs` with a specifier; the first of `needs`."""
    return next((need for need in moved if need.version), next((need for need in needs if need.version),
                next(iter(moved), next((need for need in needs if need.specifier), needs[0] if needs else None))))


def _need(requirement: Requirement, chain: tuple[str, ...]) -> Need:
    return Need(normalized(requirement.name), str(requirement.specifier), tuple(sorted(requirement.extras)), chain)


def _of_build(closure: Closure, need: Need, pins: ReleasePins, wanted: frozenset[str], environment: dict[str, str],
              build: CudaBuild, build_source: MetadataSource | None) -> tuple[ReleasePins, frozenset[str]]:
    """The package as the project's CUDA build installs it: its extras of that build, and for
    PyTorch's packages of another build, the build's own metadata (`torch==2.14.1+cu129` from
    PyTorch's index), else the index's without its CUDA libraries (listed as not read)."""
    wanted = built_extras(wanted, offered_extras(pins.requirements), build)
    installed = pins.installed_on(environment, wanted)
    version = need.version or ""
    if not of_another_build(need.name, installed, build) or "+" in version:
        return pins, wanted
    built = build_source.pins(need.name, f"{version}+{build.tag}") if build_source is not None else None
    if built is not None:
        return built, wanted
    _left_out(closure, need, installed, f"{need.name}=={version}+{build.tag}")
    kept = tuple(r for r in pins.requirements if not is_cuda_library(r))
    return ReleasePins(kept, pins.requires_python, pins.name), wanted


def _left_out(closure: Closure, need: Need, installed: list[Requirement], local: str) -> None:
    """A build whose own metadata was not read: named, and the index's CUDA libraries kept aside."""
    if local not in closure.build_unread:
        closure.build_unread.append(local)
        chain = (*need.chain, need.spelled())
        closure.other_build += [_need(r, chain).path() for r in installed if is_cuda_library(r)]


def _spelled_as_built(need: Need, wanted: frozenset[str], build: CudaBuild | None) -> str:
    """The requirement as a chain shows it: with the extras the build asked (`[cu12]`, none)."""
    return need.spelled() if build is None else dataclasses.replace(need, extras=tuple(sorted(wanted))).spelled()


def _as_built(closure: Closure, chain: tuple[str, ...], requirements: list[Requirement],
              build: CudaBuild | None) -> list[Requirement]:
    """The requirements as the project's CUDA build installs them (flavour.built_requirement);
    an exact pin of another major's library is kept aside, as a build not read is."""
    if build is None:
        return requirements
    kept = []
    for requirement in requirements:
        built = built_requirement(requirement, build)
        if built is None:
            closure.other_build.append(_need(requirement, chain).path())
        else:
            kept.append(built)
    return kept


def walk(release: ReleasePins, extras: frozenset[str], environment: dict[str, str], source: MetadataSource,
         most_depth: int = MOST_DEPTH, most_packages: int = MOST_PACKAGES, build: CudaBuild | None = None,
         build_source: MetadataSource | None = None) -> Closure:
    """The release's closure on `environment`; with `build`, the closure of that CUDA build
    (closure/flavour.py), PyTorch's packages of the build read from `build_source`."""
    closure = Closure(platform_name(environment), cuda_build=build.tag if build else None)
    if release.requires_python is not None:
        closure.requires_python[ROOT] = str(release.requires_python)
    level = [_need(r, (ROOT,)) for r in _as_built(closure, (ROOT,), release.installed_on(environment, extras), build)]
    walking = _Walk(closure, source, environment, build, build_source)
    for _ in range(most_depth):
        to_follow = walking.record(level)
        if len(closure.needs) >= most_packages:
            closure.cut_short = bool(to_follow)
            break
        source.prefetch(to_follow)
        level = []
        for (name, version), (need, extras) in to_follow.items():
            level += walking.follow(name, version, need, extras)
        if not level:
            break
    else:
        closure.cut_short = bool(level)
    return closure


def _added_requirements(pins: ReleasePins, environment: dict[str, str], wanted: frozenset[str],
                        previously: frozenset[str] | None, build: CudaBuild | None) -> list[Requirement]:
    """The package's requirements with `wanted` extras; when it was followed before with fewer
    extras, only what the new ones add."""
    found = pins.installed_on(environment, wanted)
    if previously is None:
        return found
    asked = built_extras(previously, offered_extras(pins.requirements), build) if build else previously
    already = set(map(str, pins.installed_on(environment, asked)))
    return [r for r in found if str(r) not in already]


class _Walk:
    """walk's state: the closure so far, and the extras each pinned package was followed with."""

    def __init__(self, closure: Closure, source: MetadataSource, environment: dict[str, str],
                 build: CudaBuild | None = None, build_source: MetadataSource | None = None) -> None:
        self.closure, self.source, self.environment = closure, source, environment
        self.build, self.build_source = build, build_source  # the project's CUDA build (closure/flavour.py)
        self.expanded: dict[tuple[str, str], frozenset[str]] = {}  # (name, version) -> the extras it was followed with

    def record(self, level: list[Need]) -> dict[tuple[str, str], tuple[Need, set[str]]]:
        """Add a level's needs to the closure; return the packages they pin that are to be
        followed (again, when asked with extras not followed yet): the first need that pins
        each, with every extra asked."""
        to_follow: dict[tuple[str, str], tuple[Need, set[str]]] = {}
        for need in level:
            self.closure.needs.setdefault(need.name, []).append(need)
            if need.version is not None:
                to_follow.setdefault((need.name, need.version), (need, set()))[1].update(need.extras)
        expanded = self.expanded
        return {key: (need, extras) for key, (need, extras) in to_follow.items()
                if key not in expanded or not extras <= expanded[key]}

    def follow(self, name: str, version: str, need: Need, extras: set[str]) -> list[Need]:
        """The requirements of `name==version` with `extras`, the next level's needs (only what
        new extras add when it was followed before)."""
        closure = self.closure
        previously = self.expanded.get((name, version))
        wanted = frozenset(extras) | (previously or frozenset())
        self.expanded[name, version] = wanted
        pins = self.source.pins(name, version)
        build = self.build
        if pins is not None and build is not None:
            pins, wanted = _of_build(closure, need, pins, wanted, self.environment, build, self.build_source)
        if pins is None:
            if f"{name}=={version}" not in closure.unknown:
                closure.unknown.append(f"{name}=={version}")
            return []
        if pins.requires_python is not None:
            closure.requires_python[f"{name}=={version}"] = str(pins.requires_python)
        chain = (*need.chain, _spelled_as_built(need, wanted, build))
        found = _added_requirements(pins, self.environment, wanted, previously, build)
        return [_need(r, chain) for r in _as_built(closure, chain, found, build)]
