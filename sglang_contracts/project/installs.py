"""Requirements the project installs from its Dockerfiles and shell scripts: `pip install` lines.

slime's build_conda.sh force-reinstalls `sglang-kernel==0.4.2.post2 sgl-deep-gemm==0.1.0`, its
Dockerfile `RUN pip install "numpy==1.26.4"`: pins that mirror SGLang's as surely as a
requirements file's, written where no requirement reader looks. The lines are read as a shell
reads them (infra/shell.py: continuations joined, quotes removed, `${VAR}` followed to its `ARG`,
`ENV` or assignment earlier in the file), never run; each requirement word goes through the one
requirement parser (requirements.py). Options and their values (`--index-url URL`, `-e PATH`,
`-r FILE`) are skipped, and so are words that are not requirements (URLs, paths, `.`).
Dockerfile variants (`Dockerfile.rocm`) build on other SGLang builds than the pin, so only
main Dockerfiles count.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any, Iterator

from sglang_contracts.infra.boundary import read_project_text
from sglang_contracts.infra.lines import comment_start, find_from, numbered_lines
from sglang_contracts.infra.shell import SHELL_SUFFIXES, UNSET, expand, logical_lines, split_commands, words
from sglang_contracts.project.images import is_dockerfile, is_main_dockerfile
from sglang_contracts.project.index import walk_project
from sglang_contracts.project.stack import DeclaredRequirement, SglangExtras, sglang_extras_of
from sglang_contracts.requirements import normalized, parse_requirement

# Options of `pip install` and `uv pip install` whose value is the next word.
VALUE_OPTIONS = frozenset({
    "-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-t", "--target", "--platform",
    "--python-version", "--implementation", "--abi", "--root", "--prefix", "--src", "--upgrade-strategy",
    "-C", "--config-settings", "--config-setting", "--global-option", "-i", "--index-url", "--extra-index-url",
    "-f", "--find-links", "--trusted-host", "--log", "--proxy", "--retries", "--timeout", "--exists-action",
    "--cert", "--client-cert", "--cache-dir", "--progress-bar", "--only-binary", "--no-binary", "--report",
    "--python", "-p", "--keyring-provider", "--root-user-action", "--use-feature", "--use-deprecated",
    "--group", "--build-constraint", "--index", "--default-index", "--index-strategy", "--torch-backend",
    "--resolution", "--prerelease", "--link-mode", "--reinstall-package", "--upgrade-package", "-P",
    "--overrides", "--override", "--extra", "--exclude-newer", "--no-binary-package", "--no-build-package",
})
ASSIGNMENT = re.compile(r"(\w+)=(.*)", re.S)
PIP = re.compile(r"pip(?:3(?:\.\d+)?)?")
PYTHON = re.compile(r"python(?:3(?:\.\d+)?)?")


def install_arguments(command: list[str]) -> list[str] | None:
    """The arguments of a `pip install`, `python -m pip install` or `uv pip install` command
    (after any `VAR=value` prefixes and pip's own options); None for any other command."""
    at = _after_assignments(command)
    program = PurePosixPath(command[at]).name if at < len(command) else ""
    length = _pip_length(program, command[at + 1:at + 3])
    if length is None:
        return None
    at += length
    while at < len(command) and command[at].startswith("-"):  # `pip -v install`
        at += 1
    return command[at + 1:] if command[at:at + 1] == ["install"] else None


def _after_assignments(command: list[str]) -> int:
    """Where a command's words start after its `VAR=value` prefixes."""
    at = 0
    while at < len(command) and ASSIGNMENT.fullmatch(command[at]):
        at += 1
    return at


def _pip_length(program: str, following: list[str]) -> int | None:
    """How many words `pip`, `python -m pip` or `uv pip` take at a command's start (`following`:
    the two words after the program); None for another program."""
    if PIP.fullmatch(program):
        return 1
    if PYTHON.fullmatch(program) and following[:2] == ["-m", "pip"]:
        return 3
    if program == "uv" and following[:1] == ["pip"]:
        return 2
    return None


def requirement_words(arguments: list[str]) -> Iterator[str]:
    """The words of an install's arguments that name packages, options and their values left out."""
    skip = False
    for word in arguments:
        if skip:
            skip = False
        elif word.startswith("-"):
            skip = word in VALUE_OPTIONS
        else:
            yield word


# -- which environment a script's install line serves ---------------------------------------

FUNCTION_NAME = re.compile(r"[A-Za-z_][\w.:-]*")
HEREDOC = re.compile(r"<<-?(\w*)")  # quotes already removed by words()
CASE_ENDS = frozenset({";;", ";&", ";;&"})
PACKAGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
SGLANG = "sglang"
PATH_EXTRAS = re.compile(r"[^\[\]]*\[([^\[\]]*)\]")


class ScriptStructure:
    """The functions and `case` branches of a shell script, what each runs (installs, calls
    of the script's functions, `case` statements), and from that which of them may run in
    the environment that installs SGLang.

    RLinf's install.sh builds one environment per target: `install_agentic` runs `uv sync
    --extra agentic-sglang`, the `genesis)` branch `uv sync --extra embodied` then
    `install_genesis_env`, whose `transformers==4.57.6` never meets SGLang. A region (a
    function, a branch, the script's top) may run beside SGLang when something it runs may
    install SGLang, or when it is entered (called, or its branch taken) from a region that
    may, or where something else runs that may: another `case` of the same region, never a
    sibling branch of its own (those exclude each other). Read from the words as the shell
    splits them; `if`/loops are not told apart (their body runs with their region), a call
    through a variable (`install_${ENV}_env`) is not followed, and a here-document's body
    is no structure."""

    def __init__(self) -> None:
        self.branch_of: dict[int, int] = {}  # branch region -> its `case` element
        self.functions: dict[str, list[int]] = {}  # name -> the regions of its definitions
        # (region, kind, value): kind "install" (value: does it install SGLang), "call" (the
        # name), "case" (its branch regions)
        self.elements: list[tuple[int, str, Any]] = []
        self._regions = 1  # region 0: the script's top
        # ["body", region] (a function's, or the enclosing one for a `{ ...; }` group);
        # ["case", element, branch | None, the enclosing region]: each frame knows its region,
        # never looked for below it (a run of unclosed `{` is as deep as it is long)
        self._stack: list[list[Any]] = []
        self._pending: str | None = None  # a function's name, its `{` still to come
        self._heredoc: str | None = None  # the word that ends the here-document being read

    def region(self) -> int:
        if not self._stack:
            return 0
        top = self._stack[-1]
        return top[1] if top[0] == "body" else top[3] if top[2] is None else top[2]

    def line(self, line: str) -> Iterator[tuple[list[str], int]]:
        """Each simple command of one logical line with the region it runs in."""
        in_heredoc = self._heredoc is not None
        if in_heredoc and line.strip() == self._heredoc:
            self._heredoc = None
        for command, separator in split_commands(words(line)):
            region = self.region()
            if not in_heredoc:  # its lines are still read for installs, as before, not for structure
                self._structure(command, separator, region)
            if command:
                yield command, region

    def installs_sglang(self, region: int) -> None:
        self.elements.append((region, "install", True))

    def _new_region(self) -> int:
        self._regions += 1
        return self._regions - 1

    def _structure(self, command: list[str], separator: str, region: int) -> None:
        top = self._stack[-1] if self._stack else None
        self._note_heredoc(command)
        if top is not None and top[0] == "case" and top[2] is None:  # a pattern: `nvidia)`, `*)`
            self._case_pattern(top, command, separator)
            return
        self._command_structure(command, separator, region)
        self._block_edge(separator, top, region)

    def _note_heredoc(self, command: list[str]) -> None:
        """`<<EOF` (or `<< EOF`): the word that ends the here-document starting after this line."""
        for word in command:
            heredoc = HEREDOC.fullmatch(word) if word.startswith("<<") else None
            if heredoc is not None:
                following = command[command.index(word) + 1:]
                self._heredoc = heredoc.group(1) or (following[0] if following else None)
                break

    def _case_pattern(self, top: list[Any], command: list[str], separator: str) -> None:
        """In a `case` between branches: `esac` ends it, a pattern opens a branch."""
        if command[:1] == ["esac"]:
            self._stack.pop()
        elif separator == ")":
            top[2] = self._new_region()
            self.branch_of[top[2]] = top[1]
            self.elements[top[1]][2].append(top[2])

    def _command_structure(self, command: list[str], separator: str, region: int) -> None:
        """What a command opens, closes or calls: `case`, `esac`, a function's definition, a call."""
        if command[:1] == ["esac"]:
            self._close("case")
        elif command[:1] == ["case"] and command[-1:] == ["in"]:
            self.elements.append((region, "case", []))
            self._stack.append(["case", len(self.elements) - 1, None, region])
        elif (name := _defined_function(command, separator)) is not None:
            self._pending = name
        elif command:
            self._pending = None
            if FUNCTION_NAME.fullmatch(command[0]):
                self.elements.append((region, "call", command[0]))

    def _block_edge(self, separator: str, top: list[Any] | None, region: int) -> None:
        """`{` opens a body (a function's, if one is being defined), `}` closes it, `;;` ends a branch."""
        if separator == "{":
            name, self._pending = self._pending, None
            self._stack.append(["body", region if name is None else self._new_region()])
            if name is not None:
                self.functions.setdefault(name, []).append(self._stack[-1][1])
        elif separator == "}":
            self._close("body")
        elif separator in CASE_ENDS and top is not None and top[0] == "case":
            top[2] = None

    def _close(self, kind: str) -> None:
        """Close the innermost frame of `kind` ("case" or "body"), and every frame opened inside it."""
        while self._stack and self._stack[-1][0] != kind:
            self._stack.pop()
        if self._stack:
            self._stack.pop()

    def beside_sglang(self) -> set[int] | None:
        """The regions whose installs may run in the environment that installs SGLang; None
        when nothing in the script installs it (it comes from elsewhere: a base image)."""
        if not any(kind == "install" and value for _, kind, value in self.elements):
            return None
        entered_by, enters = self._entries()
        may = self._may_install(entered_by)
        count = [0] * self._regions  # elements of each region that may install SGLang
        for index, (region, _, _) in enumerate(self.elements):
            count[region] += may[index]
        beside = self._entered_beside(entered_by, enters, may, count)
        return beside | {region for region in range(self._regions) if count[region]}

    def _entries(self) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
        """(region -> the elements that enter it, region -> the regions its elements enter)."""
        entered_by: dict[int, list[int]] = {}
        enters: dict[int, list[int]] = {}
        for index, (region, kind, value) in enumerate(self.elements):
            for target in (self.functions.get(value, ()) if kind == "call" else value if kind == "case" else ()):
                entered_by.setdefault(target, []).append(index)
                enters.setdefault(region, []).append(target)
        return entered_by, enters

    def _may_install(self, entered_by: dict[int, list[int]]) -> list[bool]:
        """Which elements may install SGLang: from the installs up to what runs them."""
        may = [kind == "install" and value for _, kind, value in self.elements]
        pending = [index for index, flag in enumerate(may) if flag]
        may_region: set[int] = set()
        while pending:
            region = self.elements[pending.pop()][0]
            if region in may_region:
                continue
            may_region.add(region)
            for index in entered_by.get(region, ()):
                if not may[index]:
                    may[index] = True
                    pending.append(index)
        return may

    def _entered_beside(self, entered_by: dict[int, list[int]], enters: dict[int, list[int]], may: list[bool],
                        count: list[int]) -> set[int]:
        """A region entered from one that may meet SGLang elsewhere (not through this entry), or
        from one already beside it, is beside it."""
        beside = {region for region, entries in entered_by.items()
                  if any(count[self.elements[index][0]] - may[index] > 0 for index in entries)}
        pending = list(beside)
        while pending:
            for target in enters.get(pending.pop(), ()):
                if target not in beside:
                    beside.add(target)
                    pending.append(target)
        return beside


def _defined_function(command: list[str], separator: str) -> str | None:
    """The name of the function a command starts defining (`function name`, `name()`), else None."""
    if command[:1] == ["function"] and len(command) == 2:
        return command[1]
    if len(command) == 1 and separator == "()" and FUNCTION_NAME.fullmatch(command[0]):
        return command[0]
    return None


def _script_commands(text: str, docker: bool, structure: ScriptStructure | None = None
                     ) -> Iterator[tuple[int, list[str], dict[str, str], int]]:
    """(first line, words, variables set so far, region) of each simple command a shell script
    or a Dockerfile's RUN lines run; the region, the function or `case` branch it runs in, as
    `structure` reads it (0 without one)."""
    structure = structure or ScriptStructure()
    env: dict[str, str] = {}
    for number, line in logical_lines(text):
        cut = comment_start(line, spaced=True)
        line = line[:cut] if cut is not None else line
        if docker:
            line = _run_line(line, env)
            if line is None:
                continue
        for command, region in structure.line(line):
            if not _assigns(command, env):
                yield number, command, env, region


def _run_line(line: str, env: dict[str, str]) -> str | None:
    """A Dockerfile line: the commands of a `RUN`, None for any other instruction (an `ARG` or
    `ENV` sets its variables in `env`)."""
    instruction, _, line = line.strip().partition(" ")
    if instruction.upper() in ("ARG", "ENV"):
        for name, value in re.findall(r"\b(\w+)=(\S*)", line):  # from a word's start only
            env[name] = expand(value.strip("\"'"), env)
    return line if instruction.upper() == "RUN" else None


def _assigns(command: list[str], env: dict[str, str]) -> bool:
    """Is the command a variable's assignment (`V=x`, `export V=x`)? It is then made in `env`."""
    spoken = command[1:] if command[0] in ("export", "local", "readonly", "declare") else command
    assignment = ASSIGNMENT.fullmatch(spoken[0]) if len(spoken) == 1 else None
    if assignment:
        env[assignment.group(1)] = expand(assignment.group(2), env)
    return bool(assignment)


def installs_sglang(command: list[str], env: dict[str, str], project: SglangExtras) -> bool:
    """Does the command install SGLang: `pip install "sglang[all]==${V}"`, `pip install -e
    .[serve]` or `uv sync --extra serve` of an extra of the project's that brings it, `uv sync`
    or `pip install .` of a project whose own dependencies do?"""
    at = _after_assignments(command)
    if command[at:at + 2] == ["uv", "sync"]:
        return _syncs_sglang(command[at + 2:], env, project)
    arguments = install_arguments(command)
    return any(_names_sglang(expand(word, env), project) for word in arguments or ())


def _syncs_sglang(options: list[str], env: dict[str, str], project: SglangExtras) -> bool:
    """Does `uv sync <options>` install SGLang: the project's own dependencies, or an extra that brings it?"""
    chosen = [expand(word, env) for word in options]
    extras = {word.partition("=")[2] for word in chosen if word.startswith("--extra=")}
    extras |= {value for option, value in zip(chosen, chosen[1:]) if option == "--extra"}
    return project.base or bool(project.extras & extras) or ("--all-extras" in chosen and bool(project.extras))


def _names_sglang(value: str, project: SglangExtras) -> bool:
    """Does an install's word (expanded) install SGLang: `sglang[...]`, or the project itself with
    an extra that brings it (`.[serve]`), or the project whose own dependencies do (`.`)?"""
    name = PACKAGE_NAME.match(value)
    if name is not None and normalized(name.group()) == SGLANG:  # `sglang-router` is another name
        return True
    extras = PATH_EXTRAS.fullmatch(value) if value[:1] in "./" or "/" in value else None
    if extras is not None and project.extras & {e.strip() for e in extras.group(1).split(",")}:
        return True
    return value in (".", "./") and bool(project.base)


def file_installs(relpath: str, text: str, docker: bool, project: SglangExtras = SglangExtras()) -> list[DeclaredRequirement]:
    """The requirements one script's or Dockerfile's pip install lines name, where each is
    written; a script's only where they may run beside SGLang (ScriptStructure)."""
    lines = numbered_lines(text)
    found: list[tuple[int, DeclaredRequirement]] = []
    structure = ScriptStructure()
    for number, command, env, region in _script_commands(text, docker, structure):
        if not docker and installs_sglang(command, env, project):
            structure.installs_sglang(region)
        arguments = install_arguments(command)
        if arguments is not None:
            found += [(region, declared) for declared in _installed(relpath, lines, number, arguments, env)]
    beside = None if docker else structure.beside_sglang()
    return [declared for region, declared in found if beside is None or region in beside]


def _installed(relpath: str, lines: list[str], number: int, arguments: list[str], env: dict[str, str]
               ) -> list[DeclaredRequirement]:
    """The requirements an install command (its first line `number`) names, where each is written."""
    found = []
    cursor = (number - 1, 0)
    for word in requirement_words(arguments):
        # Where the word is written: the next occurrence from the last one, on the lines the command spans.
        written = find_from(lines, word, *cursor)
        if written is None:
            continue
        row, col = written
        cursor = (row, col + len(word))
        value = expand(word, env)
        requirement = parse_requirement(value) if UNSET not in value else None
        if requirement is not None and requirement.url is None:
            found.append(DeclaredRequirement(relpath, row + 1, col + 1, requirement, ""))
    return found


# `FLASHINFER_VERSION=0.6.15.post1`: a variable that names a package's version.
VERSION_VARIABLE = re.compile(r"([A-Za-z][A-Za-z0-9_]*?)_VERSION")


def file_version_markers(relpath: str, text: str) -> list[DeclaredRequirement]:
    """The `ENV`/`ARG NAME_VERSION=<version>` lines of a Dockerfile that nothing in it reads:
    markers the image exports for its users (miles keeps flashinfer's in step with what it
    force-installs), as `name==version` requirements with the variable kept. A variable the
    file reads (`pip install torch==${TORCH_VERSION}`) is judged where it is read."""
    lines = numbered_lines(text)
    found = []
    for number, line in logical_lines(text):
        instruction, _, rest = line.strip().partition(" ")
        if instruction.upper() not in ("ARG", "ENV"):
            continue
        for variable, value in re.findall(r"\b(\w+)=(\S+)", rest):
            named = VERSION_VARIABLE.fullmatch(variable)
            version = value.strip("\"'").removeprefix("v")
            read = f"${variable}" in text or f"${{{variable}" in text  # `$X_VERSION_SUFFIX` too: then not judged
            if named is None or read or not re.fullmatch(r"\d+(\.\w+)*", version):
                continue
            requirement = parse_requirement(f"{named.group(1).lower().replace('_', '-')}=={version}")
            written = find_from(lines, f"{variable}=", number - 1, 0)
            if requirement is not None and written is not None:
                found.append(DeclaredRequirement(relpath, written[0] + 1, written[1] + 1, requirement, "", marker=variable))
    return found


def version_markers(root: Path) -> list[DeclaredRequirement]:
    """Every version marker (file_version_markers) of the project's main Dockerfiles."""
    root = root.resolve()
    found = []
    for path in walk_project([root], is_dockerfile):
        relpath = path.relative_to(root).as_posix()
        text = read_project_text(path, root) if is_main_dockerfile(relpath) else None
        if text is not None and "_VERSION=" in text:
            found += file_version_markers(relpath, text)
    return found


def _is_install_script(name: str) -> bool:
    return name.endswith(SHELL_SUFFIXES) or is_dockerfile(name)


def installed_requirements(root: Path) -> list[DeclaredRequirement]:
    """Every requirement the project's shell scripts and main Dockerfiles pip install."""
    root = root.resolve()
    project = sglang_extras_of(root)
    found = []
    for path in walk_project([root], _is_install_script):
        relpath = path.relative_to(root).as_posix()
        docker = is_dockerfile(path.name)
        if docker and not is_main_dockerfile(relpath):
            continue
        text = read_project_text(path, root)
        if text is not None and "install" in text:
            found += file_installs(relpath, text, docker, project)
    return found
