"""The SGLang image a project builds on, as its Dockerfiles and build scripts name it.

slime, miles and Relax pin SGLang by Docker image tag, not by `sglang==X`:
`ARG SGLANG_IMAGE_TAG=v0.5.16` then `FROM lmsysorg/sglang:${SGLANG_IMAGE_TAG}`, `ARG
BASE_IMAGE=lmsysorg/sglang:v0.5.x`, and build scripts that pass other tags to variants
(miles' docker/build.py: `"SGLANG_IMAGE_TAG": "v0.5.15-cu129"`). Dockerfiles are read as
instructions (continued lines joined, `${VAR}` followed to its `ARG`), build scripts with `ast`;
neither is run.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from sglang_contracts.infra.boundary import read_project_text
from sglang_contracts.infra.lines import numbered_lines
from sglang_contracts.infra.markdown import code_span
from sglang_contracts.infra.pysource import parse_shared
from sglang_contracts.infra.shapes import Row, rows_of
from sglang_contracts.project.index import names_sglang, walk_project
from sglang_contracts.project.positions import SourcePositions
from sglang_contracts.requirements import version_in_tag

MAIN_DOCKERFILES = ("Dockerfile", "Containerfile")
# `${NAME}`, `${NAME:-default}`, `$NAME`; and an unclosed `${NAME:-...`, read once to the end as a
# variable with no value (tried from each `${` of a long unclosed run, the first alternative read
# the rest again each time: 52 s on a 200 kB FROM line).
VARIABLE = re.compile(r"\$(?:\{(?P<braced>\w+)(?::?[-+](?P<default>[^}]*+))?\}|(?P<bare>\w+)|\{\w+:?[-+][^}]*+\Z)")
# A name that says it holds SGLang's image or version: SGLANG_IMAGE_TAG, sglang_version, SGLANG_BASE_IMAGE.
# A word is tried from its start only: its first "sglang" (or "tag", "version", "image"), taken
# atomically, then the other after it; tried from each "sglang" of a long name, it read the rest
# of the name again each time.
SGLANG_RELEASE_NAME = re.compile(r"(?i)(?<!\w)(?>\w*?sglang)\w*?(?:tag|version|image)"
                                 r"|(?<!\w)(?>\w*?(?:tag|version|image))\w*?sglang")
BOUND_NAME = re.compile(r"(?i)min|max|least|lowest|oldest|compat|since|until|supported")  # a bound, not a setting


# The last part of an image's name that is one of SGLang's tools, not its engine: a word
# `router` or `gateway` in it (`sglang-router`, `sgl-model-gateway`), looked at once per name.
NOT_A_TOOL_IMAGE = r"(?![\w\-]*?(?<![^\W_])(?:router|gateway)(?![^\W_]))"


def image_name(word: str) -> str:
    """The pattern of an image's name whose last part (after its last `/` or `.`) has `word` at
    the start of a word: `lmsysorg/sglang`, `rocm/sgl-dev`, `registry.example/sglang-fork`.
    A name is tried only where a run of name characters starts, and what is read of it is not
    given back to be split another way (possessive, atomic): written plainly, the pattern was
    tried from every character of a run and backtracked over the rest, minutes on a string of
    `"sglang-" * 800` (time cubic in the run's length). SGLang's router and gateway images
    (`lmsysorg/sglang-router`) are released and tagged on their own: never an SGLang release
    (campaign 9, R15: the router's tag was taken for the pin, and a fix moved it)."""
    return rf"(?<![\w.\-/])(?:[\w\-]*+[./])*+{NOT_A_TOOL_IMAGE}(?>[\w\-]*?\b{word})[\w\-]*+"


IMAGE_REFERENCE = re.compile(rf"(?P<repo>{image_name('sgl')}):(?P<tag>[\w.\-]+)")
# Image repositories that publish stock SGLang builds; an image of another owner is a fork's.
STOCK_REPOSITORIES = ("lmsysorg/sglang", "rocm/sgl-dev")
# Branches of an SGLang clone that are stock: a release tag or the default branch.
STOCK_BRANCH = re.compile(r"v?\d+\.\d+.*|main|master|")


@dataclass(frozen=True)
class ImagePin:
    """A release of SGLang named as the image (or version) a build starts from."""

    version: str  # the release the tag names: "0.5.15.post1"
    path: str  # relative to the project root, POSIX
    line: int
    written: str  # "ARG SGLANG_IMAGE_TAG=v0.5.16", "FROM slimerl/sglang:v0.5.15.post1-cu129"
    repository: str | None = None  # the image's repository, when a FROM names it
    fork_note: str | None = None  # why the image or the source it installs is a fork's


def is_dockerfile(name: str) -> bool:
    lower = name.lower()
    return lower.startswith(("dockerfile", "containerfile")) or lower.endswith((".dockerfile", ".containerfile"))


def is_main_dockerfile(relpath: str) -> bool:
    """`Dockerfile` itself, not a variant such as `Dockerfile.rocm` or `rocm.Dockerfile`."""
    return PurePosixPath(relpath).name in MAIN_DOCKERFILES


def _instructions(text: str) -> list[tuple[int, str, str]]:
    """(first line, keyword, arguments) of each instruction; comments dropped, continuations joined."""
    found, pending, start = [], "", 0
    for number, raw in enumerate(numbered_lines(text), start=1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = (pending + stripped).strip()
        pending = ""
        keyword, _, rest = whole.partition(" ")
        found.append((start, keyword.upper(), rest.strip()))
    return found


def _arg_defaults(arguments: str) -> dict[str, str]:
    """`ARG A=1 B="x"` -> {A: 1, B: x}; an ARG without a default sets nothing."""
    values = {}
    for item in arguments.split():
        name, equals, value = item.partition("=")
        if equals:
            values[name] = value.strip("\"'")
    return values


def _substitute(text: str, values: dict[str, str]) -> str | None:
    """`lmsysorg/sglang:${TAG}` with TAG's value; None when a variable has no value to take."""
    missing = False

    def value_of(match: re.Match) -> str:
        nonlocal missing
        name = match.group("braced") or match.group("bare")
        if name in values:
            return values[name]
        if match.group("default") is not None:
            return match.group("default")
        missing = True
        return ""

    result = VARIABLE.sub(value_of, text)
    return None if missing else result


def dockerfile_pins(relpath: str, text: str) -> list[ImagePin]:
    """Every SGLang image a Dockerfile's FROM lines start from, with the ARG that set its tag."""
    settings = _Settings()
    for line, keyword, arguments in _instructions(text):
        if keyword == "ARG":
            settings.read_arg(line, arguments)
        elif keyword == "FROM":
            words = [w for w in arguments.split() if not w.startswith("--")]
            if words:
                settings.froms.append((line, words[0], f"FROM {words[0]}"))
    found = []
    for line, image, written in settings.froms:
        pin = settings.image_pin(relpath, line, image, written)
        if pin is not None:
            found.append(pin)
    return found


class _Settings:
    """What a Dockerfile's ARG and FROM lines set, in order."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.set_at: dict[str, tuple[int, str]] = {}  # variable -> (line, the ARG as written)
        self.froms: list[tuple[int, str, str]] = []
        self.branch: tuple[int, str, str] | None = None  # (line, variable, value) of a fork branch or repository

    def read_arg(self, line: int, arguments: str) -> None:
        for name, value in _arg_defaults(arguments).items():
            self.values[name] = value
            self.set_at[name] = (line, f"ARG {name}={value}")
            if self.branch is None and _names_fork(name, value):
                self.branch = (line, name, value)

    def image_pin(self, relpath: str, line: int, image: str, written: str) -> ImagePin | None:
        """The release an SGLang image a FROM line names is tagged with; None for another image or tag."""
        resolved = _substitute(image, self.values)
        match = IMAGE_REFERENCE.fullmatch(resolved or "")
        if match is None:
            return None
        version = version_in_tag(match.group("tag"))
        if version is None:
            return None  # `latest`, `nightly-dev-20260103-24c91001`: no release to check against
        # Where the tag was set: the ARG a ${VAR} in the tag names, else the FROM line itself.
        used = [m.group("braced") or m.group("bare") for m in VARIABLE.finditer(image)]
        origin = next((self.set_at[name] for name in reversed(used) if name in self.set_at), (line, written))
        repository = match.group("repo")
        where_written = origin[1] if origin[1].startswith("FROM") else f"{origin[1]} ({written})"
        return ImagePin(str(version), relpath, origin[0], where_written, repository,
                        self._fork_note(relpath, repository))

    def _fork_note(self, relpath: str, repository: str) -> str | None:
        """Why the image may not be a stock SGLang build: another repository, or a fork's branch installed."""
        if repository not in STOCK_REPOSITORIES:
            return f"{relpath} starts from the image {code_span(repository)}, not a stock SGLang build"
        if self.branch is not None:
            return (f"{relpath} installs SGLang from the branch {code_span(self.branch[2])} ({self.branch[1]}, "
                    f"line {self.branch[0]}), not a stock release")
        return None


def _names_fork(name: str, value: str) -> bool:
    """`ARG SGLANG_BRANCH=my-fix`: a branch or repository of SGLang other than the stock ones."""
    return bool(re.fullmatch(r"(?i)sglang_(?:branch|repo)\w*", name) and value
                and not STOCK_BRANCH.fullmatch(value) and "sgl-project/sglang" not in value)


def _key_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        return _key_name(node.slice)
    return None


def _named_strings(tree: ast.AST) -> list[tuple[str, ast.Constant]]:
    """(name, string) for each string given a name: a dict entry, an assignment, a keyword."""
    found = []
    for node in ast.walk(tree):
        for key, value in _named_values(node):
            name = key if isinstance(key, str) else _key_name(key) if key is not None else None
            if name and isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.append((name, value))
    return found


def _named_values(node: ast.AST) -> list[tuple[ast.AST | str | None, ast.AST]]:
    """(name, value) of what a node names: a dict's entries, an assignment's targets, a keyword."""
    if isinstance(node, ast.Dict):
        return [(key, value) for key, value in zip(node.keys, node.values) if key is not None]
    if isinstance(node, ast.Assign):
        return [(target, node.value) for target in node.targets]
    if isinstance(node, ast.AnnAssign) and node.value is not None:
        return [(node.target, node.value)]
    if isinstance(node, ast.keyword) and node.arg:
        return [(node.arg, node.value)]
    return []


def may_name_release(text: str) -> bool:
    """A cheap test before parsing a Python file: it says sglang and something like a version."""
    return names_sglang(text) and re.search(r"\d\.\d+\.\d", text) is not None


@rows_of(Row(str, int, int, str, str, str))  # ReleaseMention's fields
def script_mentions(relpath: str, text: str) -> list[list]:
    """[path, line, col, kind, tag, written] of each SGLang release a Python build script names
    as data: `"SGLANG_IMAGE_TAG": "v0.5.15-cu129"`, `SGLANG_VERSION = "0.5.15"`,
    `build(sglang_image_tag="v0.5.15")`, or a string that is an SGLang image reference."""
    try:
        tree = parse_shared(text)  # the scan's tree, when the scan has just read the file
    except (SyntaxError, ValueError):  # the scan of the file reports it (SGC000)
        return []
    positions = SourcePositions(text)
    lines = numbered_lines(text)
    found = []
    for name, constant in _named_strings(tree):
        value = constant.value
        image = IMAGE_REFERENCE.search(value)
        if SGLANG_RELEASE_NAME.search(name) and not BOUND_NAME.search(name) and version_in_tag(value.strip()):
            kind, tag, written = "build setting", value.strip(), f"{name}: {value}"
        elif image is not None and version_in_tag(image.group("tag")) is not None:
            kind, tag, written = "image tag", image.group("tag"), image.group(0)
        else:
            continue
        start = positions.start(constant)
        line_text = lines[start.line - 1] if start.line <= len(lines) else ""
        at = line_text.find(tag, start.col - 1)
        found.append([relpath, start.line, at + 1 if at >= 0 else start.col, kind, tag, written])
    return sorted(found)


def script_pins(relpath: str, text: str) -> list[ImagePin]:
    """The releases a Python build script names for an SGLang image, as pins."""
    return [ImagePin(str(version_in_tag(tag)), path, line, written)
            for path, line, _, _, tag, written in script_mentions(relpath, text)]


def may_be_build_script(relpath: str) -> bool:
    """A Python file image_pins reads: a build script lives by its Dockerfiles or says what it does."""
    return "docker" in relpath.lower() or PurePosixPath(relpath).name.startswith("build")


def image_pins(root: Path) -> list[ImagePin]:
    """SGLang images named by the project's Dockerfiles, then by its Python build scripts under docker/."""
    root = root.resolve()
    found: list[ImagePin] = []
    for path in walk_project([root], is_dockerfile):
        text = read_project_text(path, root)
        if text is not None and "sgl" in text.lower():
            found += dockerfile_pins(path.relative_to(root).as_posix(), text)
    for path in walk_project([root], lambda name: name.endswith(".py")):
        relpath = path.relative_to(root).as_posix()
        if not may_be_build_script(relpath):
            continue
        text = read_project_text(path, root)
        if text is not None and may_name_release(text):
            found += script_pins(relpath, text)
    return found
