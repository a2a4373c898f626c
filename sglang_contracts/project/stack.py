"""The stack around the project's code, as facts: declared requirements, the SGLang release named
in Dockerfiles, CI workflows, docs and scripts, and what comments and docstrings say about SGLang.

Everything here is read as text (and Python prose with `tokenize`), never imported or run.
"""

from __future__ import annotations

import ast
import bisect
import io
import re
import sys
import tokenize
import tomllib
from functools import lru_cache
from itertools import islice
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Iterator

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from sglang_contracts.infra.boundary import Problem, note, read_project_text
from sglang_contracts.infra.lines import numbered_lines
from sglang_contracts.project.images import dockerfile_pins, image_name, is_dockerfile
from sglang_contracts.infra.shapes import Exactly, Row, rows_of
from sglang_contracts.project.ignored import Unread, unread_files
from sglang_contracts.project.index import ProjectIndex, mentions, walk_project, within_the_run
from sglang_contracts.infra.pysource import BRANCH_TYPES, child_nodes, parse_quietly, parse_shared
from sglang_contracts.infra.tomltext import parse_toml, table, toml_strings
from sglang_contracts.project.positions import SourcePositions
from sglang_contracts.requirements import as_version, normalized, parse_requirement, parse_specifier, version_in_tag

REQUIREMENT_FILES = ("requirements.txt", "requirements-*.txt", "requirements/*.txt", "constraints.txt", "constraints-*.txt")
# A comment saying the line follows SGLang's own pin: "Match the pinned sglang stack", "sglang pin".
STACK_CUE = re.compile(r"(?i)\b(?:match|mirror|same as|follow)\w*\b")  # then "sglang", before any `#`
SGLANG_WORD = re.compile(r"(?i)\bsglang\b")
SGLANG_PIN = re.compile(r"(?i)\bsglang(?:'s)?\s+(?:pin|stack)\b")

# Where a release is named outside Python code.
STACK_SUFFIXES = (".md", ".mdx", ".rst", ".txt", ".adoc", ".sh", ".bash", ".yml", ".yaml", ".toml", ".cfg",
                  ".ini", ".env", ".json")
STACK_NAMES = ("Makefile", "Justfile")  # and every Dockerfile (images.is_dockerfile)
VERSION = r"v?\d+\.\d+(?:\.\d+)*(?:(?:a|b|rc|\.post|\.dev)\d+)*(?:[-+][\w.]+)?"
MENTIONS = [
    # lmsysorg/sglang:v0.5.22-cu129, registry.example/sglang:0.5.22@sha256:... (FROM, ARG BASE_IMAGE=, image:)
    ("image tag", re.compile(rf"{image_name('sglang')}:(?P<v>{VERSION})")),
    # SGLANG_IMAGE_TAG=v0.5.15.post1-cu129, SGLANG_VERSION: 0.5.22
    ("version variable", re.compile(rf"\bSGLANG_(?:IMAGE_)?(?:TAG|VERSION)\b\s*[:=]\s*[\"']?(?P<v>{VERSION})")),
    # pip install "sglang[all]==0.5.22", sglang.git@v0.5.22
    ("pin", re.compile(rf"\bsglang(?:\[[\w,\s-]*\])?\s*===?\s*(?P<v>{VERSION})")),
    ("git ref", re.compile(rf"\bsglang(?:\.git)?@(?P<v>{VERSION})")),
]
# "SGLang 0.5.22", "sglang v0.5.22", "sglang==0.5.21", "sglang>=0.5.16"
SGLANG_VERSION_IN_PROSE = re.compile(
    # Possessive runs of space: two `\s*` around an optional operator split one long run every way.
    r"(?i)\bsglang\b(?:\s++version)?\s*+(?:(?P<op>[<>~!]=|[<>])|==?|[@:(-])?\s*+v?(?P<v>\d+\.\d+\.\d+(?:\.post\d+|rc\d+)?)\b")
# "compatible with sglang 0.5.3", "for compatibility with SGLang 0.5.3": the releases the code
# below serves, like `sglang>=0.5.3`, not a narration of what one release did
COMPATIBLE_WITH = re.compile(r"(?i)\bcompatib(?:le|ility)\s+(?:with\s+)?$")
# A condition that asks for a change once it holds ("TODO: remove this once we bump to sglang>=0.5.1")
CHANGE_CUE = re.compile(r"(?i)\b(?:todo|fixme|remove|drop|delete|once|bump|upgrade)\b")
REMOVE_WHEN = re.compile(r"(?i)\bremove\s+when\s*:\s*(?P<req>[^\n]+)")
NOT_PACKAGE_DIRS = {"tests", "test", "testing", "docs", "doc", "examples", "benchmarks", "benchmark"}


@dataclass(frozen=True)
class Located:
    path: str  # relative to the project root, POSIX
    line: int
    col: int  # 1-based


@dataclass(frozen=True)
class DeclaredRequirement(Located):
    """One requirement the project declares, where it is written."""

    requirement: Requirement
    comment: str  # the line's trailing comment, if any
    # The variable when the line only names a version (`ENV FLASHINFER_VERSION=0.6.15.post1`,
    # a marker a base image exports for its users) and installs nothing; "" for a requirement
    marker: str = ""

    @property
    def name(self) -> str:
        return normalized(self.requirement.name)

    @property
    def matches_stack(self) -> bool:
        return says_it_matches_stack(self.comment)


@dataclass(frozen=True)
class ReleaseMention(Located):
    """A release of SGLang named where a version lives (an image tag, a pin in docs, a variable)."""

    kind: str
    version: str  # the tag or version, e.g. "v0.5.22-cu129"
    written: str  # the whole mention, e.g. "lmsysorg/sglang:v0.5.22-cu129"


@dataclass(frozen=True)
class ProseNote(Located):
    """Something a comment or docstring in project Python code says about SGLang."""

    where: str  # "comment" or "docstring"
    text: str  # the version named, or the removal requirement as written
    in_package: bool  # package code, not tests, docs or examples


def says_it_matches_stack(comment: str) -> bool:
    """Whether a requirement's comment says the line follows SGLang's pin: a cue word and, after
    it in the same `#`-part, "sglang"; or "sglang('s) pin/stack". "sglang" is looked for once,
    after the part's first cue: one pattern (`cue[^#]*sglang`) read the rest of the part again
    from every cue word, 40 s and more on a comment of `"match " * 20000`."""
    for part in comment.split("#"):
        cue = STACK_CUE.search(part)
        if cue is not None and SGLANG_WORD.search(part, cue.end()) is not None:
            return True
    return SGLANG_PIN.search(comment) is not None


# -- declared requirements ------------------------------------------------------------------

def _strings(group: Any) -> list[str]:
    return [item for item in group if isinstance(item, str)] if isinstance(group, list) else []


def _read_strings(group: Any) -> Iterable[str]:
    """The requirement texts of a group that are read: the first MOST_REQUIREMENTS_READ, each once."""
    return dict.fromkeys(_strings(group)[:MOST_REQUIREMENTS_READ])


def _brings_sglang(group: Any) -> bool:
    return any((r := parse_requirement(item)) is not None and normalized(r.name) == "sglang"
               for item in _read_strings(group))


def _apart_from_sglang(data: dict[str, Any], choices: dict[tuple[str, str], Any]) -> set[tuple[str, str]]:
    """The extras and dependency groups (("extra"|"group", name)) that `[tool.uv] conflicts`
    keeps apart from every one that brings SGLang: uv never installs them beside it, so what
    they pin is not held against SGLang's requirements. None when SGLang comes with the
    project's own dependencies (every extra may join it) or with no extra or group."""
    if _brings_sglang(table(data, "project").get("dependencies")):
        return set()
    bringing = {key for key, group in choices.items() if _brings_sglang(group)}
    sets = table(data, "tool", "uv").get("conflicts")
    if not bringing or not isinstance(sets, list):
        return set()
    apart = _kept_apart(sets)
    return {key for key in choices if key not in bringing and bringing <= apart.get(key, set())}


def _kept_apart(sets: list) -> dict[tuple[str, str], set[tuple[str, str]]]:
    """Each extra or group of `[tool.uv] conflicts` -> those it is never installed with."""
    apart: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for conflict in sets:  # each a list of {extra = "x"} / {group = "y"}: no two of them together
        members = _conflict_members(conflict)
        for member in members:
            apart.setdefault(member, set()).update(members - {member})
    return apart


def _conflict_members(conflict: Any) -> set[tuple[str, str]]:
    """The ("extra"|"group", name) members of one conflict set."""
    return {(kind, item[kind]) for item in conflict if isinstance(item, dict) for kind in ("extra", "group")
            if isinstance(item.get(kind), str)} if isinstance(conflict, list) else set()


@dataclass(frozen=True)
class SglangExtras:
    """How the project's own pyproject.toml installs SGLang: with its dependencies (`base`, so
    `uv sync` or `pip install .` brings it), or with these extras (`uv sync --extra serve`)."""

    base: bool = False
    extras: frozenset[str] = frozenset()


def sglang_extras_of(root: Path) -> SglangExtras:
    path = root / "pyproject.toml"
    text = read_project_text(path, root) if path.is_file() else None
    try:
        data = parse_toml(text) if text is not None else {}
    except tomllib.TOMLDecodeError:  # said where the requirements are read (_pyproject_requirements)
        return SglangExtras()
    project = table(data, "project")
    extras = frozenset(name for name, group in table(project, "optional-dependencies").items() if _brings_sglang(group))
    return SglangExtras(_brings_sglang(project.get("dependencies")), extras)


def _pyproject_requirement_strings(data: dict[str, Any]) -> list[str]:
    """The requirements of pyproject.toml that may be installed beside SGLang (_apart_from_sglang)."""
    project = table(data, "project")
    choices = {("extra", name): group for name, group in table(project, "optional-dependencies").items()}
    choices.update((("group", name), group) for name, group in table(data, "dependency-groups").items())
    apart = _apart_from_sglang(data, choices)
    uv = table(data, "tool", "uv")
    groups: list[Any] = [project.get("dependencies"), uv.get("override-dependencies"), uv.get("constraint-dependencies")]
    groups += [group for key, group in choices.items() if key not in apart]
    return [item for group in groups for item in _strings(group)]


def _pyproject_requirements(root: Path) -> list[DeclaredRequirement]:
    path = root / "pyproject.toml"
    text = read_project_text(path, root) if path.exists() else None
    try:
        # By value: a string also written in an extra kept apart from SGLang's is read where it
        # stands too (its position is not told apart), the rare side to err on.
        wanted = set(_pyproject_requirement_strings(parse_toml(text))) if text is not None else set()
    except tomllib.TOMLDecodeError as error:  # its requirements are not checked: said, never silently
        note(Problem("pyproject.toml", 1, 1, "analysing the file", f"not valid TOML: {error}", internal=False))
        return []
    if not wanted:
        return []
    return _read_at_most("pyproject.toml", _pyproject_strings_read(text, wanted))[0]


def _pyproject_strings_read(text: str, wanted: set[str]) -> Iterator[DeclaredRequirement | None]:
    """Each requirement text tried, in order: its requirement, or None for one that is none."""
    parsed: dict[str, Requirement | None] = {}  # one parse of each text, however often it is written
    for value, line, quote_col, comment in toml_strings(text):
        if value not in wanted:
            continue
        if value not in parsed:
            parsed[value] = parse_requirement(value)
        requirement = parsed[value]
        yield DeclaredRequirement("pyproject.toml", line, quote_col + 1, requirement, comment) if requirement else None


# A declaration file's requirements read, at most (a project's longest lists hold a few hundred):
# 290,000 in one pyproject.toml took 51 s, each parsed and judged (campaign 18, R01).
MOST_REQUIREMENTS_READ = 2_000


def _read_at_most(relpath: str, tried: Iterator[DeclaredRequirement | None]) -> tuple[list[DeclaredRequirement], int]:
    """The requirements of a file's first MOST_REQUIREMENTS_READ texts tried (a million lines
    that are no requirement were each parsed: campaign 19), and how many texts were tried; that
    there are more is said."""
    found = list(islice(tried, MOST_REQUIREMENTS_READ + 1))
    if len(found) > MOST_REQUIREMENTS_READ:
        note(Problem(relpath, 1, 1, "reading its requirements", f"it holds more than the {MOST_REQUIREMENTS_READ:,} "
                     "this tool reads in one file", internal=False,
                     unchecked=f"those after the first {MOST_REQUIREMENTS_READ:,} are not checked"))
        del found[MOST_REQUIREMENTS_READ:]
    return [requirement for requirement in found if requirement is not None], len(found)


# The requirement texts read in all the project's files, requirements or not (150 files of 2,000
# requirements took 39 s, 500 of 2,000 lines that are none 44 s: campaign 19).
MOST_PROJECT_REQUIREMENTS = 20_000


def _files_read_at_most(root: Path, paths: list[Path], found: list[DeclaredRequirement]) -> list[DeclaredRequirement]:
    """`found` and the requirements of `paths`, file by file, until MOST_PROJECT_REQUIREMENTS
    texts are tried; the first file left unread is said."""
    found, tried = list(found), len(found)
    for path in paths:
        if tried >= MOST_PROJECT_REQUIREMENTS:
            note(Problem(path.relative_to(root).as_posix(), 1, 1, "reading its requirements",
                         f"the project's files hold more than the {MOST_PROJECT_REQUIREMENTS:,} requirements this tool "
                         "reads", internal=False, unchecked="this file's and the later files' are not checked"))
            break
        read, texts = _file_requirements(root, path)
        found.extend(read)  # not `found + read`: a copy of all found so far for each file
        tried += texts
    return found


def pyproject_extra_of(root: Path, written: str) -> str | None:
    """The optional extra (`agentic-sglang`) or dependency group of pyproject.toml whose list
    holds the requirement `written` (as `str(Requirement)` spells it), when the main
    dependencies do not: where a pin read from the file is only one environment's."""
    path = root / "pyproject.toml"
    text = read_project_text(path, root) if path.exists() else None
    try:
        data = parse_toml(text) if text is not None else {}
    except tomllib.TOMLDecodeError:
        return None
    project = table(data, "project")

    def holds(group: Any) -> bool:
        return any((found := parse_requirement(item)) is not None and str(found) == written
                   for item in _read_strings(group))

    if holds(project.get("dependencies", [])):
        return None
    named = [*table(project, "optional-dependencies").items(), *table(data, "dependency-groups").items()]
    return next((str(name) for name, group in named if holds(group)), None)


@dataclass(frozen=True)
class DeclaredPython:
    """The project's `requires-python`, and where pyproject.toml spells it."""

    specifier: SpecifierSet
    spelled: str
    line: int
    col: int

    def floor(self) -> tuple[int, int] | None:
        """The lowest Python (major, minor) it admits, when it sets one."""
        floors = []
        for spec in self.specifier:
            if spec.operator in (">=", ">", "~=", "=="):
                release = Version(spec.version.removesuffix(".*")).release
                floors.append((release[0], release[1] if len(release) > 1 else 0))
        return max(floors, default=None)


def declared_python(root: Path) -> DeclaredPython | None:
    path = root / "pyproject.toml"
    text = read_project_text(path, root) if path.exists() else None
    try:
        value = table(parse_toml(text), "project").get("requires-python") if text is not None else None
    except tomllib.TOMLDecodeError:
        return None
    specifier = parse_specifier(value) if isinstance(value, str) else None
    if specifier is None:
        return None
    lines = numbered_lines(text)
    line, col = next(((number, quote_col + 1) for string, number, quote_col, _ in toml_strings(text)
                      if string == value and "requires-python" in lines[number - 1]), (1, 1))
    return DeclaredPython(specifier, value, line, col)


def python_floor(root: Path) -> tuple[int, int] | None:
    """The lowest Python (major, minor) the project's `requires-python` admits, if it sets one."""
    declared = declared_python(root)
    return declared.floor() if declared is not None else None


def requirement_files(root: Path) -> list[Path]:
    # A FIFO or a device named like one is listed too: reading it is what says it cannot be read.
    return _not_ignored(root, sorted({path for pattern in REQUIREMENT_FILES for path in root.glob(pattern)
                                      if not path.is_dir() and within_the_run(path)}))


def _not_ignored(root: Path, paths: list[Path]) -> list[Path]:
    """The requirement files but those git ignores (a requirements-local.txt holding a private
    index's credentials: campaign 20, R05). Where git cannot tell, they are read: the project's
    pin is in them, and without them no check can start."""
    ignored = unread_files(root, paths).ignored if paths else frozenset()
    return [path for path in paths if path not in ignored]


# Where a requirement line's per-requirement options begin (`--hash=sha256:...`, which
# pip-compile --generate-hashes writes on every line, `--config-settings`, `-C`): pip reads the
# requirement before them.
REQUIREMENT_OPTIONS = re.compile(r"(?<!\s)\s+--?[A-Za-z]")  # from a run's first space only: linear


def _file_requirements(root: Path, path: Path) -> tuple[list[DeclaredRequirement], int]:
    relpath = path.relative_to(root).as_posix()
    return _read_at_most(relpath, _requirement_lines_read(relpath, read_project_text(path, root) or ""))


def _requirement_lines_read(relpath: str, text: str) -> Iterator[DeclaredRequirement | None]:
    """Each line that may hold a requirement, in order: its requirement, or None for one that is none."""
    for number, line in _logical_lines(text):
        body, _, comment = line.partition(" #") if " #" in line else line.partition("#")
        if not body.strip():
            continue
        requirement = parse_requirement(REQUIREMENT_OPTIONS.split(body, maxsplit=1)[0])
        yield (DeclaredRequirement(relpath, number, len(line) - len(line.lstrip()) + 1, requirement, comment.strip())
               if requirement is not None else None)


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(number of its first line, text) of each line of a requirements file as pip reads it: a
    line ending in a backslash goes on on the next (`sglang==0.5.23 \\` then `--hash=...`)."""
    pending: list[str] = []
    start = 1
    for number, line in enumerate(numbered_lines(text), start=1):
        if not pending:
            start = number
        if line.endswith("\\") and not line.lstrip().startswith("#"):
            pending.append(line[:-1])
            continue
        pending.append(line)
        yield start, " ".join(pending)
        pending = []
    if pending:
        yield start, " ".join(pending)


def _requirement_strings(node: ast.AST | None, assigned: dict[str, ast.AST]) -> list[ast.Constant]:
    """The string literals of a requirement list (or of a dict of them), a module-level name
    followed to its assignment; anything computed (`_fetch_requirements(...)`) gives none.
    Walked by a stack, in order: a chain of 5,000 names each adding to the next
    (`r0 = r1 + [...]`) went deeper than recursion may (third campaign D11)."""
    found: list[ast.Constant] = []
    pending: list[ast.AST | None] = [node]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name) and node.id in assigned:
            node = assigned.pop(node.id)  # popped: a name assigned to itself is followed once
        if isinstance(node, ast.Dict):
            pending.extend(reversed(node.values))
        elif isinstance(node, (ast.List, ast.Tuple)):
            found += [item for item in node.elts if _is_string_constant(item)]
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            pending += [node.right, node.left]
    return found


def _is_string_constant(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _setup_py_requirements(root: Path) -> list[DeclaredRequirement]:
    """`install_requires` and `extras_require` of setup.py's `setup(...)` call, read with `ast`
    (never run): literal lists, and module-level names assigned one."""
    parsed = _parsed_setup_py(root)
    if parsed is None:
        return []
    text, tree = parsed
    assigned = {target.id: node.value for node in tree.body if isinstance(node, ast.Assign)
                for target in node.targets if isinstance(target, ast.Name)}
    positions = SourcePositions(text)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "setup":
            found += _setup_call_requirements(node, assigned, positions)
    return found


def _parsed_setup_py(root: Path) -> tuple[str, ast.Module] | None:
    """setup.py's text and syntax tree; None without one that parses and names `setup`."""
    path = root / "setup.py"
    text = read_project_text(path, root) if path.is_file() else None
    if text is None or "setup" not in text:
        return None
    try:
        return text, parse_quietly(text)
    except (SyntaxError, ValueError):
        return None


def _setup_call_requirements(node: ast.Call, assigned: dict[str, ast.AST], positions: SourcePositions
                             ) -> list[DeclaredRequirement]:
    """The requirements the keywords of one `setup(...)` call list."""
    found = []
    for keyword in node.keywords:
        if keyword.arg not in ("install_requires", "extras_require", "tests_require", "setup_requires"):
            continue
        for constant in _requirement_strings(keyword.value, dict(assigned)):
            requirement = parse_requirement(constant.value)
            if requirement is not None:
                at = positions.start(constant)
                found.append(DeclaredRequirement("setup.py", at.line, at.col + 1, requirement, ""))
    return found


def declared_requirements(root: Path) -> list[DeclaredRequirement]:
    """Every requirement in pyproject.toml (dependencies, extras, groups, uv overrides and
    constraints), setup.py, requirements*.txt, requirements/*.txt and constraints*.txt."""
    declared = _pyproject_requirements(root) + _setup_py_requirements(root)
    return _files_read_at_most(root, requirement_files(root), declared)


def nested_requirement_files(root: Path) -> list[Path]:
    """Requirement files anywhere below the root (`tests/ci/requirements-ci-cpu.txt`), besides
    those declared_requirements reads: what some environment of the project installs."""
    top = set(requirement_files(root))
    return _not_ignored(root, [path for path in walk_project([root], _is_requirement_file_name) if path not in top])


def _is_requirement_file_name(name: str) -> bool:
    return name.endswith(".txt") and name.startswith(("requirements", "constraints"))


def requirements_below(root: Path) -> list[DeclaredRequirement]:
    """The requirements of every nested requirement file (see nested_requirement_files)."""
    root = root.resolve()
    return _files_read_at_most(root, nested_requirement_files(root), [])


# -- release mentions in the stack ----------------------------------------------------------

def _is_stack_file(name: str) -> bool:
    title = name[:1].upper() + name[1:]  # `justfile`, `dockerfile` as well
    # one reading of what a Dockerfile is: `x.containerfile` was read by the image rules, never here (campaign 17, R05)
    return name.endswith(STACK_SUFFIXES) or is_dockerfile(name) or title.startswith(STACK_NAMES) \
        or name.endswith(STACK_NAMES)


def release_mentions(root: Path) -> list[ReleaseMention]:
    """SGLang releases named in Dockerfiles, CI workflows, docs, scripts and other config.

    Requirement files (pyproject.toml, requirements, constraints) are left to the requirement
    facts, which read the SGLang pin with its full specifier.
    """
    root = root.resolve()
    skip = {root / "pyproject.toml", *requirement_files(root)}
    found = []
    paths = walk_project([root], _is_stack_file)
    unread = unread_files(root, paths)
    if unread.untold:
        _note_untold(root, unread)
    for path in paths:
        if path in skip or path in unread.ignored or path in unread.untold:
            continue
        text = read_project_text(path, root)
        if text is None or "sglang" not in text.lower():
            continue
        if path.suffix in (".json", ".sarif") and '"sglang-contracts"' in text:
            continue  # this tool's own baseline or SARIF log: it quotes findings, it pins nothing
        relpath = path.relative_to(root).as_posix()
        found += _file_mentions(relpath, text)
        if is_dockerfile(path.name):
            found += _tag_arguments(relpath, text, {mention.line for mention in found if mention.path == relpath})
    return found


def _note_untold(root: Path, unread: Unread) -> None:
    """One line for the stack's files left unread because git could not tell which it ignores."""
    first, *others = sorted(unread.untold)
    more = f"; nor are {len(others):,} other files of the project's stack" if others else ""
    note(Problem(first.relative_to(root).as_posix(), 1, 1, "reading the file",
                 f"git could not tell whether it ignores the file, which may then hold secrets ({unread.why}){more}",
                 internal=False))


def _tag_arguments(relpath: str, text: str, mentioned: set[int]) -> list[ReleaseMention]:
    """Where a Dockerfile sets the tag of an SGLang image a FROM starts from, on a line that names
    no SGLang itself (`ARG V=v0.5.22` then `FROM lmsysorg/sglang:${V}-cu129`; `ARG TAG=...` beside
    `ARG BASE=lmsysorg/sglang`; a default, `FROM lmsysorg/sglang:${V:-v0.5.22}`): read as the
    pin, but never held to the bump, so the image stayed on the old release (campaign 18, R08)."""
    lines = numbered_lines(text)
    found = []
    for pin in dockerfile_pins(relpath, text):
        if pin.line in mentioned or not 0 < pin.line <= len(lines):
            continue
        release = as_version(pin.version)
        setting = next((match for match in TAG_SETTING.finditer(lines[pin.line - 1])
                        if release is not None and version_in_tag(match.group("v")) == release), None)
        if setting is not None:
            mentioned.add(pin.line)
            found.append(ReleaseMention(relpath, pin.line, setting.start("v") + 1, "image tag", setting.group("v"),
                                        re.sub(r"[\"']", "", setting.group(0))))
    return found


# A tag's value where a Dockerfile sets it: `NAME=v0.5.22` (an ARG), `:-v0.5.22` (a default).
TAG_SETTING = re.compile(r"""(?:\b[A-Za-z_]\w*=|:-)["']?(?P<v>v?\d+(?:\.\d+)+[\w.+-]*)""")


def _file_mentions(relpath: str, text: str) -> list[ReleaseMention]:
    """The releases one file names, on the lines that name SGLang (one mention per place)."""
    found = []
    for number, line in enumerate(numbered_lines(text), start=1):
        if "sglang" not in line.lower():
            continue
        taken: set[int] = set()
        for kind, pattern in MENTIONS:
            for match in pattern.finditer(line):
                if match.start("v") not in taken:
                    taken.add(match.start("v"))
                    found.append(ReleaseMention(relpath, number, match.start("v") + 1, kind, match.group("v"),
                                                re.sub(r"[\"']", "", match.group(0))))
    return found


# -- prose in Python code ---------------------------------------------------------------------

@lru_cache(maxsize=2**16)  # asked of every file by several analyses, run after run
def is_package_code(relpath: str) -> bool:
    folders, _, name = relpath.rpartition("/")
    if name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py":
        return False
    return not NOT_PACKAGE_DIRS.intersection(folders.split("/"))


# Where statements nest: a class or function is a statement, found only in these lists.
STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


def _docstring_starts(tree: ast.AST) -> set[tuple[int, int]]:
    """(line, col) of every module, class and function docstring: the statements are walked,
    not the expressions (a tenth of the nodes of a large module)."""
    starts = set()
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                starts.add((first.lineno, first.col_offset))
        for name in STATEMENT_LISTS:
            children = getattr(node, name, None)
            if isinstance(children, list):
                pending.extend(children)
    return starts


def sglang_mentions(lower: str) -> Iterator[int]:
    """Offsets of every "sglang" in a lower-cased text (cheaper than a case-insensitive pattern)."""
    return mentions(lower, "sglang")


def prose_pieces(text: str) -> Iterator[tuple[str, int, int, str]]:
    """(where, line, col, raw text) for every comment and docstring of a Python source."""
    return iter(_prose_pieces(text))


@lru_cache(maxsize=16)  # two analyses read the prose of each file a run re-reads (an edited one)
def _prose_pieces(text: str) -> tuple[tuple[str, int, int, str], ...]:
    try:
        tree = parse_shared(text)
        docstrings = _docstring_starts(tree)
        if "\r" in text or "\f" in text or "\\\n" in text:  # line ends and joins the tokenizer counts its own way
            return _prose_of_tokens(tokenize.generate_tokens(io.StringIO(text).readline), docstrings)
        try:
            return _prose_of_lines(text, tree, docstrings)
        except _NotPlain:
            return _prose_of_tokens(tokenize.generate_tokens(io.StringIO(text).readline), docstrings)
    except (SyntaxError, tokenize.TokenError, ValueError, RecursionError):  # RecursionError: nested too deep to parse
        return ()


def _prose_of_tokens(tokens: Iterator[tokenize.TokenInfo], docstrings: set[tuple[int, int]],
                     first_line: int = 1) -> tuple[tuple[str, int, int, str], ...]:
    found = []
    for token in tokens:
        line = token.start[0] + first_line - 1
        if token.type == tokenize.COMMENT:
            found.append(("comment", line, token.start[1], token.string))
        elif token.type == tokenize.STRING and (line, token.start[1]) in docstrings:
            found.append(("docstring", line, token.start[1], token.string))
    return tuple(found)


class _NotPlain(Exception):
    """A stretch of lines the tokenizer does not read on their own as it reads them in the file."""


def _prose_of_lines(text: str, tree: ast.AST, docstrings: set[tuple[int, int]]) -> tuple[tuple[str, int, int, str], ...]:
    """What tokenizing the whole file finds, from only the lines that can hold it: those with a
    `#` and the docstrings' first lines, each tokenized alone, or with the rest of the string
    literals spanning it (a line starts the tokenizer afresh unless a string is open across it;
    an open bracket only changes which newline tokens it emits). Tokenizing a 160 KB module
    whole cost 0.15 s of an edited file's re-check."""
    lines = text.split("\n")
    stretches = _stretches(lines, _merged_spans(tree), docstrings)
    found: list[tuple[str, int, int, str]] = []
    for first, last in sorted(stretches.items()):
        stretch = "\n".join(lines[first - 1:last]) + "\n"
        tokens = tokenize.generate_tokens(io.StringIO(stretch).readline)
        try:
            found.extend(_prose_of_tokens(_until_open_bracket_ends(tokens), docstrings, first))
        except (tokenize.TokenError, IndentationError) as error:
            raise _NotPlain from error
    return tuple(found)


def _merged_spans(tree: ast.AST) -> list[list[int]]:
    """The [first, last] lines of the multi-line string literals, overlapping ones merged, in order."""
    merged: list[list[int]] = []
    for first, last in sorted(_multi_line_strings(tree)):
        if merged and first <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], last)
        else:
            merged.append([first, last])
    return merged


def _stretches(lines: list[str], merged: list[list[int]], docstrings: set[tuple[int, int]]) -> dict[int, int]:
    """first line -> last line of each stretch to tokenize: a line with a `#` or a docstring's
    first line, with the rest of a multi-line string spanning it."""
    wanted = {number for number, line in enumerate(lines, 1) if "#" in line} | {line for line, _ in docstrings}
    firsts = [first for first, _ in merged]
    stretches: dict[int, int] = {}
    for number in wanted:
        at = bisect.bisect_right(firsts, number) - 1
        first, last = merged[at] if at >= 0 and merged[at][1] >= number else (number, number)
        stretches[first] = last
    return stretches


def _multi_line_strings(tree: ast.AST) -> list[tuple[int, int]]:
    """(first, last line) of each string literal spanning lines: a walk of the branches that
    looks at their literals (ast.walk visits every name and literal as a node: twice the time)."""
    spans = []
    pending = [tree]
    while pending:
        for child in child_nodes(pending.pop()):
            kind = type(child)
            if (kind is ast.Constant or kind is ast.JoinedStr) and child.end_lineno is not None \
                    and child.end_lineno > child.lineno:
                spans.append((child.lineno, child.end_lineno))
            if kind in BRANCH_TYPES:
                pending.append(child)
    return spans


def _until_open_bracket_ends(tokens: Iterator[tokenize.TokenInfo]) -> Iterator[tokenize.TokenInfo]:
    """A stretch's tokens; one that ends inside a bracket opened in it (or before) is read to its end."""
    try:
        yield from tokens
    except tokenize.TokenError as error:
        if "multi-line statement" not in str(error):
            raise


def offset_position(line: int, col: int, raw: str, offset: int) -> tuple[int, int]:
    """1-based (line, col) of `offset` within a token that starts at (line, 0-based col)."""
    before = raw[:offset]
    newlines = before.count("\n")
    if newlines:
        return line + newlines, offset - before.rfind("\n")
    return line, col + offset + 1


def _may_note(text: str) -> bool:
    """Does the file say something of interest somewhere (tokenizing it is the cost)? Both
    patterns are tried only where their first word stands, and on the lower-cased text (they
    ignore case), so that offsets found in it are offsets in what is matched."""
    lower = text.lower()
    return any(SGLANG_VERSION_IN_PROSE.match(lower, at) for at in sglang_mentions(lower)) \
        or any(REMOVE_WHEN.match(lower, at) for at in mentions(lower, "remove"))


@rows_of(Row((Exactly("version"), Exactly("removal")), str, int, int, str, str, bool))  # the bucket, ProseNote's fields
def _file_notes(relpath: str, text: str) -> list[list]:
    """("version" or "removal", ProseNote fields...) for what one file's prose says."""
    package = is_package_code(relpath)
    found: list[list] = []
    for where, line, col, raw in prose_pieces(text):
        removal_spans = []
        for match in REMOVE_WHEN.finditer(raw):
            removal_spans.append(match.span())
            at = offset_position(line, col, raw, match.start("req"))
            found.append(["removal", relpath, *at, where, match.group("req"), package])
        for match in SGLANG_VERSION_IN_PROSE.finditer(raw):
            if any(start <= match.start() < end for start, end in removal_spans):
                continue
            if _states_a_condition(raw, match):
                continue
            at = offset_position(line, col, raw, match.start("v"))
            found.append(["version", relpath, *at, where, match.group("v"), package])
    return found


def _states_a_condition(raw: str, match: re.Match) -> bool:
    """Does the prose give the version as a condition on the release (`supported in sglang>=0.5.3`,
    `for sglang < 0.5.0`, `compatible with sglang 0.5.3`)? That says which releases the code it
    sits on serves, as true after a bump as before (the code that keeps serving them is what
    the contracts judge); unless it asks for a change once it holds (`remove this once we bump
    to sglang>=0.5.1`), which a bump may have made due."""
    if not (match.group("op") or COMPATIBLE_WITH.search(raw, max(0, match.start() - 40), match.start())):
        return False
    return CHANGE_CUE.search(raw) is None


def prose_notes(project: ProjectIndex) -> tuple[list[ProseNote], list[ProseNote]]:
    """(SGLang versions named, `Remove when:` conditions) in comments and docstrings of the
    project's Python files. A removal condition is the convention for naming a version, so it
    is not also counted as a version named."""
    versions: list[ProseNote] = []
    removals: list[ProseNote] = []
    for bucket, *fields in project.each_file("prose-notes", _file_notes, _may_note, sys.modules[__name__]):
        (versions if bucket == "version" else removals).append(ProseNote(*fields))
    return versions, removals


# Where a removal condition's requirement ends: closing quotes and spaces, then the end, a full
# stop, two spaces, a dash or a bracket, or a joining word. Tried only where a run of quotes and
# spaces starts: from each character of a long run it backtracked over the rest (quadratic).
REQUIREMENT_END = re.compile(r"(?<![\s`'\"])[\s`'\"]*(?:$|[.;)](?:\s|$)|\s{2,}|\s+[-(]|\s+(?:and|or|once|because)\b)")


def removal_requirement(text: str) -> Requirement | None:
    """The requirement a `Remove when:` condition states: `transformers>=5.20`, `` `sglang>=0.5.23`. ``"""
    text = text.strip().strip("`'\"")
    end = REQUIREMENT_END.search(text)
    candidate = text[: end.start()] if end else text
    return parse_requirement(candidate.strip("`'\" "))
