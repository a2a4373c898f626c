"""The CUDA build a project installs, and what it changes in a release's closure.

SGLang's wheel on the package index is one CUDA build (0.5.23: `flashinfer_python[cu13]`,
`nvidia-cutlass-dsl[cu13]`, and PyPI's torch, whose CUDA libraries are `nvidia-*-cu13`). A
project that builds on a `-cu129` image installs the CUDA 12 build of the same versions: the
extras of CUDA 12 (`flashinfer_python[cu12]`, where the package offers one, else none), and
torch, torchvision and torchaudio from PyTorch's own index of that build (`+cu129` wheels,
whose CUDA libraries are `nvidia-*-cu12`). The closure is read for the build the project
installs (closure/walk.py): a requirement of the other build is never reported as a move the
project will see. Where the build's own metadata cannot be read (PyTorch's index unreachable,
or not cached offline), its CUDA libraries are left out of the closure and a note says so.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Iterable

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from sglang_contracts.requirements import exact_version, normalized

BUILD_EXTRA = re.compile(r"cu(\d{2,3})")  # `cu13`, `cu12`: the extra that picks a CUDA build
BUILD_SUFFIX = re.compile(r"-cu(\d{2,3})$")  # `nvidia-nccl-cu13`: a library of one CUDA major
BUILD_TAG = re.compile(r"(?:^|[-+])cu(\d{2,3})(?![\d.])")  # `v0.5.22-cu129`, `2.9.1+cu129`
# Packages whose CUDA builds PyTorch's index serves under a local version (`2.14.1+cu129`)
PYTORCH_BUILDS = frozenset({"torch", "torchvision", "torchaudio"})
PYTORCH_INDEX = "https://download.pytorch.org/whl/{cuda}"
EXTRA_TEST = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
# CUDA's own Python packages, whose major is CUDA's: the cu12 images ask `cuda-python>=12,<13`
# where the wheel asks `cuda-python>=13.0`
CUDA_MAJOR_PACKAGES = frozenset({"cuda-python", "cuda-bindings"})


def cuda_major(digits: str) -> int:
    """`129` -> 12, `13` -> 13, `130` -> 13."""
    return int(digits[:2] if len(digits) == 3 else digits)


@dataclass(frozen=True)
class CudaBuild:
    """The CUDA build the project installs (`cu129`), and where the project says so."""

    tag: str  # "cu129"
    where: str  # "docker/Dockerfile:1"

    @property
    def major(self) -> int:
        return cuda_major(self.tag[2:])

    def index_url(self, template: str) -> str:
        return template.replace("{cuda}", self.tag)


def build_of(text: str) -> str | None:
    """The CUDA build a tag or a local version names (`v0.5.22-cu129` -> `cu129`), or None."""
    match = BUILD_TAG.search(text)
    return f"cu{match.group(1)}" if match else None


def offered_extras(requirements: Iterable[Requirement]) -> set[str]:
    """The extras a distribution's requirements are conditional on (its `Provides-Extra`, as
    far as its requirements show them)."""
    return {extra for requirement in requirements if requirement.marker is not None
            for extra in EXTRA_TEST.findall(str(requirement.marker))}


def built_extras(wanted: frozenset[str], offered: set[str], build: CudaBuild) -> frozenset[str]:
    """The extras asked, with an extra of another CUDA major (`cu13`) replaced by the build's
    (`cu12`) where the distribution offers it, and left out where it does not (cutlass-dsl's
    base requirements are its CUDA 12 build)."""
    kept = set()
    for extra in wanted:
        match = BUILD_EXTRA.fullmatch(extra)
        if match is None or cuda_major(match.group(1)) == build.major:
            kept.add(extra)
        else:  # the build's own extra (`cu129`) first, then its major's (`cu12`)
            kept.update([name for name in (build.tag, f"cu{build.major}") if name in offered][:1])
    return frozenset(kept)


def built_requirement(requirement: Requirement, build: CudaBuild) -> Requirement | None:
    """A requirement as the build installs it: a library of another CUDA major by name
    (`nvshmem4py-cu13`) as the build's (`nvshmem4py-cu12`), CUDA's own Python packages held to
    the build's major (`cuda-python>=13.0` -> `>=12,<13`); None for an exact pin of another
    major's library, whose version the build may not have."""
    name = normalized(requirement.name)
    match = BUILD_SUFFIX.search(name)
    if match and cuda_major(match.group(1)) != build.major:
        if exact_version(requirement.specifier) is not None:
            return None
        built = copy.copy(requirement)
        built.name = f"{name[:match.start()]}-cu{build.major}"
        return built
    if name in CUDA_MAJOR_PACKAGES and not any(requirement.specifier.contains(Version(f"{build.major}.{minor}"))
                                               for minor in range(10)):
        built = copy.copy(requirement)
        built.specifier = SpecifierSet(f">={build.major},<{build.major + 1}")
        return built
    return requirement


def is_cuda_library(requirement: Requirement) -> bool:
    """A requirement on CUDA itself, which differs between the CUDA builds of one version
    (`nvidia-nccl-cu13`, `cuda-toolkit[...]==13.0.3`, `cuda-bindings>=13`)."""
    name = normalized(requirement.name)
    return name.startswith(("nvidia-", "cuda-"))


def of_another_build(name: str, requirements: Iterable[Requirement], build: CudaBuild) -> bool:
    """Is this metadata (read from the package index) another CUDA build than the project's?
    PyTorch's packages whose CUDA libraries name another major are."""
    if normalized(name) not in PYTORCH_BUILDS:
        return False
    for requirement in requirements:
        match = BUILD_SUFFIX.search(normalized(requirement.name))
        if match and cuda_major(match.group(1)) != build.major:
            return True
    return False
