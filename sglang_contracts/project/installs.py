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
from typing import Iterator

from sglang_contracts.infra.boundary import read_project_text
from sglang_contracts.infra.lines import comment_start, find_from
from sglang_contracts.infra.shell import SHELL_SUFFIXES, UNSET, commands, expand, logical_lines, words
from sglang_contracts.project.images import is_dockerfile, is_main_dockerfile
from sglang_contracts.project.index import walk_project
from sglang_contracts.project.stack import DeclaredRequirement
from sglang_contracts.requirements import parse_requirement

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
    at = 0
    while at < len(command) and ASSIGNMENT.fullmatch(command[at]):
        at += 1
    program = PurePosixPath(command[at]).name if at < len(command) else ""
    if PIP.fullmatch(program):
        at += 1
    elif PYTHON.fullmatch(program) and command[at + 1:at + 3] == ["-m", "pip"]:
        at += 3
    elif program == "uv" and command[at + 1:at + 2] == ["pip"]:
        at += 2
    else:
        return None
    while at < len(command) and command[at].startswith("-"):  # `pip -v install`
        at += 1
    return command[at + 1:] if command[at:at + 1] == ["install"] else None


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


def _script_commands(text: str, docker: bool) -> Iterator[tuple[int, list[str], dict[str, str]]]:
    """(first line, words, variables set so far) of each simple command a shell script or a
    Dockerfile's RUN lines run."""
    env: dict[str, str] = {}
    for number, line in logical_lines(text):
        cut = comment_start(line, spaced=True)
        line = line[:cut] if cut is not None else line
        if docker:
            instruction, _, line = line.strip().partition(" ")
            if instruction.upper() in ("ARG", "ENV"):
                for name, value in re.findall(r"\b(\w+)=(\S*)", line):  # from a word's start only
                    env[name] = expand(value.strip("\"'"), env)
            if instruction.upper() != "RUN":
                continue
        for command in commands(words(line)):
            spoken = command[1:] if command[0] in ("export", "local", "readonly", "declare") else command
            assignment = ASSIGNMENT.fullmatch(spoken[0]) if len(spoken) == 1 else None
            if assignment:
                env[assignment.group(1)] = expand(assignment.group(2), env)
                continue
            yield number, command, env


def file_installs(relpath: str, text: str, docker: bool) -> list[DeclaredRequirement]:
    """The requirements one script's or Dockerfile's pip install lines name, where each is written."""
    lines = text.splitlines()
    found = []
    for number, command, env in _script_commands(text, docker):
        arguments = install_arguments(command)
        if arguments is None:
            continue
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
    lines = text.splitlines()
    found = []
    for number, line in logical_lines(text):
        instruction, _, rest = line.strip().partition(" ")
        if instruction.upper() not in ("ARG", "ENV"):
            continue
        for variable, value in re.findall(r"\b(\w+)=(\S+)", rest):
            named = VERSION_VARIABLE.fullmatch(variable)
            version = value.strip("\"'").removeprefix("v")
            if named is None or re.search(rf"\$\{{?{variable}\b", text) or not re.fullmatch(r"\d+(\.\w+)*", version):
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
    found = []
    for path in walk_project([root], _is_install_script):
        relpath = path.relative_to(root).as_posix()
        docker = is_dockerfile(path.name)
        if docker and not is_main_dockerfile(relpath):
            continue
        text = read_project_text(path, root)
        if text is not None and "install" in text:
            found += file_installs(relpath, text, docker)
    return found
