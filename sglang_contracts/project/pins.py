"""The project's own SGLang pin: the default `--old` release.

An exact `sglang==X` requirement wins (pyproject.toml, setup.py, requirement files): the main
files' (`requirements.txt`) over variants' (`requirements-rocm.txt`), as for Dockerfiles. Without
one, the release of the SGLang image the project builds on: the main Dockerfile's (`Dockerfile`,
shallowest first) over its variants (`Dockerfile.rocm`), and those over the tags a build
script passes to variants. When the places disagree, the pin says which was taken and why;
when the image or the SGLang source it installs is a fork's, it says that the stock release
stands in for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sglang_contracts.infra.markdown import code_span
from sglang_contracts.project.images import ImagePin, image_pins, is_main_dockerfile, may_be_build_script
from sglang_contracts.project.stack import declared_requirements, pyproject_extra_of
from sglang_contracts.requirements import exact_version, normalized


@dataclass(frozen=True)
class ProjectPin:
    version: str  # "0.5.16"
    where: str  # the file it is in, relative to the root
    line: int = 1
    written: str = ""  # "sglang==0.5.16", "ARG SGLANG_IMAGE_TAG=v0.5.16"
    reason: str = ""  # why this place was taken over others naming other releases ("" when none disagree)
    others: tuple[ImagePin, ...] = ()  # the places that name another release
    fork_note: str | None = None  # the image or source is a fork's: what the stock release stands in for

    def notes(self, defaulted: bool, from_clone: bool) -> list[str]:
        """What a user should know about the pin (said once on standard error and in the markdown
        report): which place `--old` was defaulted from and why, and that the stock release
        stands in for a fork (moot when the releases are refs of a clone)."""
        found = []
        if defaulted and self.reason:
            found.append(f"--old {self.version} from {self.where}:{self.line} ({code_span(self.written)}): {self.reason}")
        if self.fork_note and not from_clone:
            found.append(f"{self.fork_note}; the stock release {self.version} stands in for the fork. To check "
                         "against the fork itself: --sglang-repo CLONE --old REF --new REF (refs of the fork's clone)")
        return found


def _rank(pin: ImagePin) -> tuple:
    """Main Dockerfiles first (shallowest first), then variants, then build scripts."""
    path = PurePosixPath(pin.path)
    kind = 0 if is_main_dockerfile(pin.path) else 1 if pin.written.startswith(("ARG", "FROM")) else 2
    return kind, len(path.parts), pin.path, pin.line


def _kind_of(pin: ImagePin) -> str:
    if is_main_dockerfile(pin.path):
        return "the main Dockerfile"
    return "a Dockerfile variant" if pin.written.startswith(("ARG", "FROM")) else "a build script"


def _reason(chosen: str, others: list[ImagePin]) -> str:
    """Why one place was taken over the others that name another release (or alone, when none do)."""
    listed = ", ".join(f"{o.path}:{o.line} names {o.version}" for o in others[:4])
    more = f" and {len(others) - 4} more" if len(others) > 4 else ""
    over = f" over {listed}{more}" if others else ""
    return f"taken as {chosen}{over}; give --old or `old` in [tool.sglang-contracts] to choose another"


def pin_may_read(relpath: str) -> bool:
    """Could find_sglang_pin read this project file? Of the Python files, only setup.py at the
    root and build scripts (a resident process reads the pin again only when one of these changed)."""
    return not relpath.endswith(".py") or relpath == "setup.py" or may_be_build_script(relpath)


# The files that declare the project's own requirements; any other requirement file
# (`requirements-rocm.txt`, `requirements/cuda13.txt`) is a variant for one environment.
MAIN_REQUIREMENT_FILES = {"pyproject.toml", "setup.py", "requirements.txt", "constraints.txt"}


def _requirement_rank(pin: ImagePin) -> tuple:
    """The main requirement files first (the shallowest first), then variants, in the order written."""
    path = PurePosixPath(pin.path)
    return path.name not in MAIN_REQUIREMENT_FILES, len(path.parts), pin.path, pin.line


def find_sglang_pin(root: Path) -> ProjectPin | None:
    """The release the project pins SGLang to, and where; None when nothing names one."""
    images = image_pins(root)
    exact = _exact_pins(root)
    if exact:
        return _requirement_pin(root, exact, images)
    if not images:
        return None
    return _image_pin(images)


def _exact_pins(root: Path) -> list[ImagePin]:
    """The project's requirements of one exact SGLang release, as pins."""
    return [ImagePin(str(version), declared.path, declared.line, str(declared.requirement))
            for declared in declared_requirements(root) if normalized(declared.requirement.name) == "sglang"
            and (version := exact_version(declared.requirement.specifier)) is not None]


def _requirement_pin(root: Path, exact: list[ImagePin], images: list[ImagePin]) -> ProjectPin:
    """The pin of the first exact requirement (main files first); the others and the images that
    name another release are said to have been passed over."""
    chosen = min(exact, key=_requirement_rank)
    variants = [pin for pin in exact if pin.version != chosen.version]
    others = variants + [pin for pin in images if pin.version != chosen.version]
    taken = _requirement_taken(chosen, variants)
    # A pin in one optional extra is one environment's (RLinf's `agentic-sglang`): said, so a
    # user whose real release comes from elsewhere (an install script) knows to give --old.
    extra = pyproject_extra_of(root, chosen.written) if chosen.path == "pyproject.toml" else None
    if extra is not None:
        taken += f" of the optional extra `{extra}` (the main dependencies pin no SGLang)"
    reason = _reason(taken, others) if others or extra is not None else ""
    return ProjectPin(chosen.version, chosen.path, chosen.line, chosen.written, reason, tuple(others))


def _requirement_taken(chosen: ImagePin, variants: list[ImagePin]) -> str:
    """Which requirement was taken, where others name other releases."""
    return "the exact SGLang requirement" + (
        "" if not variants else " of the main requirement file" if _requirement_rank(chosen)[0] is False
        else " of the first requirement file")


def _image_pin(images: list[ImagePin]) -> ProjectPin:
    """The pin of the first-ranked image (_rank), with any fork note of its file."""
    chosen = min(images, key=_rank)
    others = [pin for pin in images if pin.version != chosen.version]
    fork = next((pin.fork_note for pin in sorted(images, key=_rank) if pin.path == chosen.path and pin.fork_note), None)
    reason = _reason(_kind_of(chosen), others) if others else f"the image {_kind_of(chosen)} builds on"
    return ProjectPin(chosen.version, chosen.path, chosen.line, chosen.written, reason, tuple(others), fork)
