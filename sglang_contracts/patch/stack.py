"""The project's patch stack: which patch files against SGLang the image applies, in what order.

slime's Dockerfile copies `docker/patch/${PATCH_VERSION}/sglang*.patch` into the SGLang tree and
applies them in a `for patch in sglang.patch sglang-top_p.patch ...; do git apply "$patch"`
loop, each on top of the ones before. The order is read from the project's Dockerfiles and
shell scripts: `git apply` and `patch -p1` commands, `for` loops over words or globs,
variables from `ARG`/`ENV` defaults and shell assignments (`${V:-default}` takes the
default; a variable nothing sets matches any path segment), `COPY`/`ADD` from the build
context to where the commands find the files. A plain `Dockerfile` builds the image; variants
(`Dockerfile.rocm`, `Dockerfile.gb10`) build images on other SGLang builds than the pin, so
they count only where no plain one applies a patch. The `patch-files` setting replaces what
is read: its files, in the order given, one stack per folder. A patch file that nothing
applies is not judged (the folders of past releases that slime keeps). Without any command
that applies one, every patch file is judged, one stack per folder in name order.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from sglang_contracts.infra.boundary import read_project_text
from sglang_contracts.infra.errors import UsageError
from sglang_contracts.infra.shell import SHELL_SUFFIXES, UNSET, expand as _expand, logical_lines, words as _words
from sglang_contracts.infra.shell import commands as _commands
from sglang_contracts.patch.patchfile import PATCH_SUFFIXES, PatchFile, parse_patch
from sglang_contracts.patch.release import targets_sglang
from sglang_contracts.project.images import is_dockerfile
from sglang_contracts.project.index import walk_project

MAX_ITERATIONS = 1000  # of nested loops around one command
MAX_GLOB_PARTS = 256  # path segments of a command's target looked for among the project's files
MAX_DISK_GLOBS = 256  # targets with a wildcard looked for among the project's files, a project's stacks
MAX_PATH_MATCHES = 1_000_000  # patch paths matched against targets with a wildcard, a project's stacks


@dataclass
class Stack:
    """Patch files applied one on top of the other to one SGLang tree, in order."""

    source: str  # where the order comes from: `docker/Dockerfile:138`, `patch-files`, `name order`
    patches: list[str] = field(default_factory=list)  # project-relative paths
    three_way: bool = False  # applied with `git apply --3way` (slime's Dockerfile before 0.5.15.post1)


# The source of a stack nothing applies: the patch files of a folder, in name order (judged, but
# no build is known to put them under a release)
NAME_ORDER = "name order"


@dataclass
class PatchStacks:
    patches: dict[str, PatchFile]  # every patch file against SGLang in the project, by path
    stacks: list[Stack]
    unapplied: list[str]  # patch files no stack applies: not judged
    # (a stack, the earlier one with the same patches that is judged in its place): slime's
    # `v0.5.15.post1/` that build_conda.sh applies, a copy of the Dockerfile's `latest/`
    duplicates: list[tuple[Stack, Stack]] = field(default_factory=list)
    # nothing applies any patch, and they are in several folders: each is taken as a stack, in name order
    guessed: bool = False


def sglang_patch_files(root: Path) -> dict[str, PatchFile]:
    """The project's patch files against SGLang, parsed, by relative path: every `.patch`/`.diff`
    that patches SGLang's package (or that git rejects but names `python/sglang/`)."""
    root = root.resolve()
    found = {}
    for path in walk_project([root], lambda name: name.endswith(PATCH_SUFFIXES)):
        text = read_project_text(path, root, errors="surrogateescape")
        if text is None or "sglang/" not in text:
            continue
        patch = parse_patch(text)
        if targets_sglang(patch) or (patch.error and "python/sglang/" in text):
            found[path.relative_to(root).as_posix()] = patch
    return found


def patch_stacks(root: Path, named: list[str] | tuple[str, ...] = ()) -> PatchStacks:
    """The stacks to judge: `named` (the `patch-files` setting: paths or globs relative to the
    root, checked whatever their name or content) if given, else what the Dockerfiles and
    scripts apply, else every patch file, folder by folder in name order."""
    root = root.resolve()
    patches = sglang_patch_files(root)
    if named:
        stacks: dict[str, Stack] = {}
        stacked: set[str] = set()  # what the stacks hold already: globs that overlap match the same files
        for pattern in named:
            matches = sorted(p for p in root.glob(pattern) if not p.is_dir())
            if not matches:
                raise UsageError(f"patch-files: {pattern} matches no file under {root}")
            for path in matches:
                relpath = path.relative_to(root).as_posix()
                if relpath in stacked:
                    continue
                if relpath not in patches:
                    text = read_project_text(path, root, errors="surrogateescape")
                    if text is None:
                        continue
                    patches[relpath] = parse_patch(text)
                stacked.add(relpath)
                stacks.setdefault(str(PurePosixPath(relpath).parent), Stack("patch-files")).patches.append(relpath)
        chosen = list(stacks.values())
    else:
        chosen = applied_stacks(root, set(patches)) if patches else []
        if not chosen:
            by_folder: dict[str, Stack] = {}
            for relpath in sorted(patches):
                by_folder.setdefault(str(PurePosixPath(relpath).parent), Stack(NAME_ORDER)).patches.append(relpath)
            return PatchStacks(patches, list(by_folder.values()), [], guessed=len(by_folder) > 1)
    applied = {path for stack in chosen for path in stack.patches}
    kept: dict[tuple[int, ...], Stack] = {}  # the same patches in the same order: the first stack of them
    duplicates: list[tuple[Stack, Stack]] = []
    numbers = content_numbers(patches)
    for stack in chosen:
        twin = kept.setdefault(tuple(numbers.get(path, -1) for path in stack.patches), stack)
        if twin is not stack:
            duplicates.append((stack, twin))
    return PatchStacks(patches, list(kept.values()), sorted(set(patches) - applied), duplicates)


def content_numbers(patches: dict[str, PatchFile]) -> dict[str, int]:
    """A number for each patch file, the same for equal ones (by what they change, wherever they
    are kept): stacks and their prefixes are compared as tuples of these, by a dict, not each
    with every other (sixth campaign M07: cubic in a stack's length)."""
    numbers: dict[str, int] = {}
    # A PatchFile holds plain values only (str, int, bool, None, lists and tuples of them): equal
    # ones have equal reprs.
    return {path: numbers.setdefault(repr(patch), len(numbers)) for path, patch in patches.items()}


def applied_stacks(root: Path, patch_paths: set[str]) -> list[Stack]:
    """One stack per Dockerfile or script that applies any of `patch_paths`, in its order."""
    dockerfiles = walk_project([root], is_dockerfile)
    scripts = walk_project([root], lambda name: name.endswith(SHELL_SUFFIXES))
    plain, variants, shells = [], [], []
    lookup = _PatchPaths(patch_paths, _ProjectFiles(root))
    for path in [*dockerfiles, *scripts]:
        text = read_project_text(path, root, errors="surrogateescape")
        if text is None:
            continue
        stack = _stack_of(path, text, root, lookup, is_docker=path in dockerfiles)
        if stack.patches:
            (shells if path not in dockerfiles else plain if path.name in ("Dockerfile", "Containerfile")
             else variants).append(stack)
    return [*(plain or variants), *shells]


def stack_may_read(name: str) -> bool:
    """Could patch_stacks read a file of this name, without the `patch-files` setting (a resident
    process reads the stacks again only when one of these changed)? Patch files, Dockerfiles
    and their variants, shell scripts."""
    return name.endswith(PATCH_SUFFIXES) or name.endswith(SHELL_SUFFIXES) or is_dockerfile(name)


def _apply_targets(command: list[str]) -> list[str] | None:
    """The patch files a `git apply`/`patch` command applies (not a `--check` or `-R` one)."""
    if command[:2] == ["git", "apply"]:
        args = command[2:]
        if any(a in ("--check", "-R", "--reverse", "--stat", "--numstat", "--summary") for a in args):
            return []
        return [a for a in args if not a.startswith("-")]
    if command and command[0] == "patch":
        args, targets = command[1:], []
        for index, arg in enumerate(args):
            if arg in ("-i", "--input") and index + 1 < len(args):
                targets.append(args[index + 1])
            elif arg.startswith("--input="):
                targets.append(arg.split("=", 1)[1])
            elif arg == "<" and index + 1 < len(args):
                targets.append(args[index + 1])
            elif arg.startswith("<") and len(arg) > 1:
                targets.append(arg[1:])
        if any(a in ("-R", "--reverse", "--dry-run") for a in args):
            return []
        return targets
    return None


def _stack_of(path: Path, text: str, root: Path, patch_paths: _PatchPaths, is_docker: bool) -> Stack:
    relpath = path.relative_to(root).as_posix()
    env: dict[str, str] = {}
    copies = _Copies()
    loops: list[tuple[str, list[str]]] = []  # the `for` loops open here: (variable, words)
    stack = Stack(relpath)
    listed: set[str] = set()  # stack.patches, looked up once per file each line applies
    for number, line in logical_lines(text):
        shell = line
        if is_docker:
            match = re.match(r"\s*(\w+)\s+(.*)", line)
            if not match:
                continue
            instruction, rest = match.group(1).upper(), match.group(2)
            if instruction in ("ARG", "ENV"):
                for name, value in re.findall(r"\b(\w+)=(\S*)", rest):  # from a word's start only
                    env[name] = _expand(value.strip("\"'"), env)
                continue
            if instruction in ("COPY", "ADD") and "--from=" not in rest:
                words = [w for w in _words(rest) if not w.startswith("--")]
                if len(words) >= 2:
                    copies.add([_expand(w, env) for w in words[:-1]], _expand(words[-1], env))
                continue
            if instruction != "RUN":
                continue
            shell, loops = rest, []
        for command in _commands(_words(shell)):
            if command[0] == "for" and len(command) >= 3 and command[2] == "in":
                loops.append((command[1], [_expand(w, env, frozenset(v for v, _ in loops)) for w in command[3:]]))
                continue
            if command[0] == "done":
                loops = loops[:-1]
                continue
            words = command[1:] if command[0] in ("export", "local", "readonly") else command
            assignment = re.fullmatch(r"(\w+)=(.*)", words[0]) if len(words) == 1 else None
            if assignment:
                env[assignment.group(1)] = _expand(assignment.group(2), env, frozenset(v for v, _ in loops))
                continue
            for target in _apply_targets(command) or ():
                for concrete in _iterations(target, loops, env):
                    for found in _resolve(concrete, copies, path, root, patch_paths):
                        if found not in listed:
                            if not stack.patches:
                                stack.source = f"{relpath}:{number}"
                            stack.patches.append(found)
                            listed.add(found)
                            stack.three_way |= command[:2] == ["git", "apply"] and bool({"--3way", "-3"} & set(command))
    return stack


def _iterations(target: str, loops: list[tuple[str, list[str]]], env: dict[str, str]) -> list[str]:
    """The target for each iteration of the loops around it, in order."""
    bindings: list[dict[str, str]] = [{}]
    for name, words in loops:
        bindings = [{**b, name: w} for b in bindings for w in words or [UNSET]][:MAX_ITERATIONS]
    return [_expand(target, {**env, **b}) for b in bindings]


def _pattern(path: str) -> str:
    return path.replace(UNSET, "*")


class _ProjectFiles:
    """The project's files as its walk lists them (no tool's, environment's or build's folder),
    looked up by a path pattern relative to a folder of it, as pathlib's glob reads one. Globbed on
    disk, each pattern walked what the walk skips: 300 `git apply **/z{i}*.patch` lines beside a
    node_modules of 100,000 files took 66 s (campaign 20, R04)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._by_name: dict[str, list[tuple[str, ...]]] | None = None

    def names_a_file(self, folder: Path, pattern: str) -> bool:
        """Whether `pattern` (a path or glob, relative) names a file below `folder` (never above it)."""
        parts = PurePosixPath(pattern).parts
        # `git apply .` has no parts; a `**` more than once, a `..`, an absolute pattern name nothing
        if not parts or len(parts) > MAX_GLOB_PARTS or ".." in parts or parts.count("**") > 1 \
                or parts[0] == "/" or parts[-1] == "**":
            return False
        try:
            prefix = folder.relative_to(self.root).parts
        except ValueError:
            return False
        by_name = self._files_by_name()
        names = fnmatch.filter(by_name, parts[-1]) if _is_glob(parts[-1]) else [parts[-1]] * (parts[-1] in by_name)
        return any(_parts_match(path[len(prefix):], parts) for name in names for path in by_name[name]
                   if path[:len(prefix)] == prefix)

    def _files_by_name(self) -> dict[str, list[tuple[str, ...]]]:
        if self._by_name is None:
            self._by_name = {}
            for path in walk_project([self.root], lambda name: True):
                parts = path.relative_to(self.root).parts
                self._by_name.setdefault(parts[-1], []).append(parts)
        return self._by_name


def _parts_match(parts: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    """Whether a path's parts match a pattern's, part by part, a `**` standing for any parts."""
    if "**" not in pattern:
        return len(parts) == len(pattern) and all(map(fnmatch.fnmatchcase, parts, pattern))
    at = pattern.index("**")
    head, tail = pattern[:at], pattern[at + 1:]
    return len(parts) >= len(head) + len(tail) and all(map(fnmatch.fnmatchcase, parts[:len(head)], head)) \
        and all(map(fnmatch.fnmatchcase, parts[len(parts) - len(tail):], tail))


def _is_glob(name: str) -> bool:
    return any(character in name for character in "*?[")


class _Folder:
    """A folder of the image a COPY put files in (by path segment), with the last such COPY."""

    def __init__(self) -> None:
        self.below: dict[str, _Folder] = {}
        self.copy: tuple[int, list[str], str] | None = None  # (its order, sources, destination)


class _Copies:
    """The COPY/ADD instructions read so far, by destination: each `git apply` line looked for
    its file through every COPY before it, a time quadratic in a Dockerfile's length (sixth
    campaign M08: 8,000 of each, 420 kB, 82 s)."""

    def __init__(self) -> None:
        self.root = _Folder()
        self.last: tuple[int, list[str], str] | None = None
        self.count = 0

    def add(self, sources: list[str], destination: str) -> None:
        self.count += 1
        self.last = (self.count, sources, destination)
        folder = self.root
        for segment in destination.rstrip("/").split("/"):
            folder = folder.below.setdefault(segment, _Folder())
        folder.copy = self.last

    def finding(self, target: str) -> tuple[list[str], str] | None:
        """(sources, destination) of the last COPY a command finds `target` through: one into
        the target's path or a folder above it; any, for a bare file name."""
        if "/" not in target:
            return self.last[1:] if self.last else None
        found, folder = None, self.root
        for segment in target.split("/"):
            next_folder = folder.below.get(segment)
            if next_folder is None:
                break
            folder = next_folder
            if folder.copy is not None and (found is None or folder.copy[0] > found[0]):
                found = folder.copy
        return found[1:] if found else None


class _PatchPaths:
    """The project's patch files, looked up by a pattern: a name without a wildcard by the name,
    not by a match against each (a `git apply` line each, a time the product of both counts)."""

    def __init__(self, paths: set[str], files: _ProjectFiles) -> None:
        self.paths = paths
        self.files = files
        self.deepest = max((path.count("/") for path in paths), default=0)
        self._by_tail: dict[str, list[str]] | None = None
        self._on_disk: dict[tuple[Path, str], bool] = {}
        self._globbed = 0
        self._scans: dict[tuple[str, str | None], list[str]] = {}
        self._matched = 0

    def names_files(self, folder: Path, pattern: str) -> bool:
        """_ProjectFiles.names_a_file, once a pattern. Past MAX_DISK_GLOBS patterns with a wildcard,
        one names no file: each goes over the project's file names (4,000 lines of
        `*/*/x{i}*.patch` over a folder of 3,000 files took 18 s when each was globbed on disk), and
        no real build applies more than a few."""
        key = (folder, pattern)
        if key not in self._on_disk:
            if _is_glob(pattern):
                if self._globbed >= MAX_DISK_GLOBS:
                    return False
                self._globbed += 1
            self._on_disk[key] = self.files.names_a_file(folder, pattern)
        return self._on_disk[key]

    def _scanned(self, pattern: str, also: str | None = None) -> list[str]:
        """The paths `pattern` (or `also`, exactly) matches, each pattern matched once. Past
        MAX_PATH_MATCHES paths matched in all, a new pattern matches none: 4,000 lines of
        `git apply /q/patches/z{i}*.patch` beside 3,000 patch files took 27 s (M08's class)."""
        key = (pattern, also)
        if key not in self._scans:
            if self._matched + len(self.paths) > MAX_PATH_MATCHES:
                return []
            self._matched += len(self.paths)
            self._scans[key] = sorted(p for p in self.paths if fnmatch.fnmatchcase(p, pattern) or p == also)
        return self._scans[key]

    def matching(self, pattern: str) -> list[str]:
        if not _is_glob(pattern):
            return [pattern] if pattern in self.paths else []
        return self._scanned(pattern)

    def ending_with(self, tail: str) -> list[str]:
        """Those whose path is `tail` or ends with `/tail`."""
        if _is_glob(tail):
            return self._scanned(f"*/{tail}", tail)
        if self._by_tail is None:
            self._by_tail = {}
            for path in sorted(self.paths):
                pieces = path.split("/")
                for start in range(len(pieces)):
                    self._by_tail.setdefault("/".join(pieces[start:]), []).append(path)
        return self._by_tail.get(tail, [])


def _resolve(target: str, copies: _Copies, file: Path, root: Path, patch_paths: _PatchPaths) -> list[str]:
    """Project patch files a target names, in name order: through the COPY that put it where
    the command finds it, else by the longest tail of its path that names project files."""
    candidates: list[str] = []
    copy = copies.finding(target)
    if copy is not None:
        sources, destination = copy
        dest = destination.rstrip("/")
        if target in (destination, dest):
            candidates = list(sources)
        else:
            rest = target[len(dest) + 1:] if target.startswith(dest + "/") else target
            for source in sources:  # a file (or glob) copied into the folder, or a folder copied
                if fnmatch.fnmatchcase(PurePosixPath(rest).name, PurePosixPath(_pattern(source)).name):
                    candidates.append(str(PurePosixPath(source).parent / rest))
                candidates.append(f"{source.rstrip('/')}/{rest}")
    # A COPY's source is a path of the build context: one that names no file there is a patch the
    # tree lacks, not one of the same name in another folder (miles' Dockerfile.rocm_MI300 COPYs
    # amd_patch/sglv0.5.7/sglang.patch, which is not in the tree).
    copied = bool(candidates)
    folder = file.parent.relative_to(root).as_posix()
    parts = [] if folder == "." else folder.split("/")
    contexts = ["", *("/".join(parts[:i]) for i in range(1, len(parts) + 1))]  # where a build may run
    found: list[str] = []
    listed: set[str] = set()
    for candidate in candidates or [target]:
        pattern = _pattern(candidate).lstrip("/")
        while pattern.startswith(("./", "../")):
            pattern = pattern.split("/", 1)[1]
        matches: list[str] = []
        for context in contexts:
            matches = patch_paths.matching(f"{context}/{pattern}" if context else pattern)
            if matches:
                break
        pieces = pattern.split("/")
        # Files of the project it names (miles' TransformerEngine patches, COPY'd beside SGLang's
        # folder): the command applies those, so no tail of its path stands for an SGLang patch.
        resolved = copied or (not matches and any(patch_paths.names_files(root / context, pattern)
                                                  for context in contexts))
        # A tail of more `/` than any patch path names none (`*` and `?` add to a match, each `/`
        # needs one): its tails are not tried (a line of thousands of segments, each tail a pattern).
        first = 1 if "[" in pattern else max(1, len(pieces) - 1 - patch_paths.deepest)
        for start in range(first, len(pieces)):  # an absolute or unknown prefix: the longest tail that names files
            if matches or resolved:
                break
            tail = "/".join(pieces[start:])
            if set(pieces[start:]) <= {"*"} or (start == len(pieces) - 1 and _is_glob(tail)):
                break  # a bare glob (`*.patch`) says nothing of which files
            matches = patch_paths.ending_with(tail)
            if start == len(pieces) - 1 and len({str(PurePosixPath(p).parent) for p in matches}) > 1:
                matches = []  # a bare name found in several folders says nothing of which
        found += [p for p in matches if p not in listed]
        listed.update(matches)
    return found
