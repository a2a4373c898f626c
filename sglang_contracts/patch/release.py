"""A patch against a release tree: where its paths live in the release, how the release's files
are read for `git apply`'s rules, and where a patched file that left the release went."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from typing import TYPE_CHECKING, Iterator

from sglang_contracts.infra.files import Unreadable
from sglang_contracts.infra.lines import numbered_lines
from sglang_contracts.infra.pysource import parse_quietly
from sglang_contracts.patch.gitapply import StackResult, check_stack
from sglang_contracts.patch.patchfile import FilePatch, PatchFile, unsafe_path_reason
from sglang_contracts.sources.base import PACKAGE, Release, ReleaseTree

if TYPE_CHECKING:
    from sglang_contracts.patch.stack import PatchStacks

PYTHON = (".py", ".pyi")  # what every release carries whole


def release_relpath(patch_path: str | None) -> str | None:
    """Where a patch path of SGLang's repository lives in a release tree (the folder holding
    `sglang/`): `python/sglang/srt/x.py` -> `sglang/srt/x.py`; None for paths outside the package,
    and for any path that could leave it (`unsafe_path_reason`)."""
    if patch_path is None or unsafe_path_reason(patch_path):
        return None
    path = patch_path[len("python/"):] if patch_path.startswith("python/") else patch_path
    return path if path.startswith("sglang/") else None


def outside_package_reason(file: FilePatch) -> str:
    """Why a file patch is not judged against the release: one of its paths (both sides, a
    rename's or a copy's too) is unsafe or lies outside the sglang package; or ""."""
    if file.unsafe_reason:
        return file.unsafe_reason
    if any(path is not None and release_relpath(path) is None for path in (file.old_path, file.new_path)):
        return "outside the sglang package"
    return ""


def targets_sglang(patch: PatchFile) -> bool:
    return any(release_relpath(f.old_path) or release_relpath(f.new_path) for f in patch.files)


def stock_tree(release: Release) -> ReleaseTree:
    """The release as published, without the project's patch stack applied."""
    return release.tree.base if isinstance(release.tree, PatchedTree) else release.tree


def tree_reader(tree: ReleaseTree):
    """(read, unchecked) for check_patch: files by their patch path (`python/sglang/...`).
    A file of the release that cannot be read leaves its hunks unchecked, never judged; so does
    a file that is not text, and one a wheel does not ship (the repository's other files)."""

    def read(path: str) -> str | None:
        relpath = release_relpath(path)
        try:
            data = tree.read_member(relpath) if relpath else None
        except Unreadable:
            return None  # only asked of files `unchecked` passed, or whether another file exists
        return None if data is None else data.decode("utf-8", "surrogateescape")

    def unchecked(path: str) -> str:
        relpath = release_relpath(path)
        if relpath is None:
            return "outside the sglang package"
        try:
            data = tree.read_member(relpath)
        except Unreadable as unreadable:
            return f"a file of the release that cannot be read ({unreadable.reason})"
        if data is None and not tree.carries_all_files and not relpath.endswith(PYTHON):
            return "a file the wheel does not ship"
        if data is not None and b"\0" in data:
            return "not a text file in the release"
        return ""

    return read, unchecked


def _significant(lines: list[str]) -> set[str]:
    return {line.strip() for line in lines if len(line.strip()) >= 8}


def _exists(tree: ReleaseTree, relpath: str) -> bool:
    try:
        return tree.read_bytes(relpath) is not None
    except Unreadable:
        return True  # there, though it cannot be read


def member_text(tree: ReleaseTree, relpath: str) -> str | None:
    """A file of the release whatever its kind (a wheel reads its `.cuh` members as empty
    otherwise: read_member), or None when it is not there or cannot be read."""
    try:
        data = tree.read_member(relpath)
    except Unreadable:
        return None
    return None if data is None else data.decode("utf-8", "surrogateescape")


def files_added(new: ReleaseTree, old: ReleaseTree, suffix: str) -> list[str]:
    """The files of the new release the old one lacks, of a kind (`.py`): where code that left a
    file it still has may have gone (0.5.15 moved `HostKVCache` out of `memory_pool_host.py` into
    the new `mem_cache/pool_host/base.py`)."""
    return [path for path in new.iter_files(PACKAGE) if path.endswith(suffix) and not _exists(old, path)]


def find_moved(file: FilePatch, new: ReleaseTree, old: ReleaseTree | None) -> str | None:
    """The likely new home of a patched file the new release no longer has: the file added by the
    bump (or any file, without an old release) with the old release's content unchanged, else
    the one holding most of the patch's preimage lines (the same name first, on a tie)."""
    wanted = _significant([line for hunk in file.hunks for line in hunk.preimage])
    relpath = release_relpath(file.old_path)
    if not wanted or relpath is None:
        return None
    suffix = relpath.rsplit(".", 1)[-1]
    name = relpath.rsplit("/", 1)[-1]
    candidates = [p for p in new.iter_files(PACKAGE) if p.endswith("." + suffix)]
    was = None
    if old is not None:
        candidates = [p for p in candidates if not _exists(old, p)]
        was = member_text(old, relpath)
    best, best_score = None, (0, False)
    for candidate in candidates:
        text = member_text(new, candidate) or ""
        if was is not None and text == was:
            return candidate
        score = (len(wanted & _significant(numbered_lines(text))), candidate.rsplit("/", 1)[-1] == name)
        if score > best_score:
            best, best_score = candidate, score
    return best if best is not None and best_score[0] * 2 >= len(wanted) else None


class PatchedTree(ReleaseTree):
    """A release as the project's image has it: the stock tree with what the patch stack left
    in the files it patched (what applied of it), so the upstream model of the pin knows the
    names the stack adds (slime's `DeltaEncoding` in `io_struct`) and that of the target what
    the stack still adds there. It keeps the stacks and their verdicts, for the patch rules."""

    def __init__(self, base: ReleaseTree, patched: dict[str, bytes | None], stacks: PatchStacks,
                 results: list[StackResult]) -> None:
        self.base = base
        self.patched = patched  # release relpath -> content, or None where the stack deleted it
        self.stacks = stacks
        self.results = results  # per stack of `stacks`, on the stock tree
        self.given_up: dict[str, bytes] = {}  # what the stack left of modules served as released (as_released)
        self.carries_all_files = base.carries_all_files
        self.added: dict[str, set[str]] = {}
        for relpath, data in patched.items():
            if data is not None:
                parts = relpath.split("/")
                for depth in range(1, len(parts)):
                    self.added.setdefault("/".join(parts[:depth]), set()).add(parts[depth])

    def read_bytes(self, relpath: str) -> bytes | None:
        return self.patched[relpath] if relpath in self.patched else self.base.read_bytes(relpath)

    def in_forked_copy(self) -> None:
        self.base.in_forked_copy()

    def as_released(self, relpath: str) -> bool:
        if self.patched.get(relpath) is None or _stock_bytes(self.base, relpath) is None:
            return False
        self.given_up[relpath] = self.patched.pop(relpath)
        return True

    def breaking_patches(self, relpath: str) -> list[tuple[str, int]]:
        """Where to blame the stacks for leaving the release's `relpath` unparsable: in each stack
        whose version of it does not parse, the last patch after which it went from parsing to
        not (applied as the image applies the stack: a break a later patch repaired is not the
        one left), at the line of its first file patch of it. A file that parses after every
        patch of every stack (griffe, not Python, refused it) blames every patch of it in the
        stack it was read from."""
        read, unchecked = tree_reader(self.base)
        found: list[tuple[str, int]] = []
        read_from: list[tuple[str, int]] = []  # the first stack that patches it: its version was read
        for stack in self.stacks.stacks:
            patches = [self.stacks.patches[path] for path in stack.patches]
            touching = [(index, line) for index, patch in enumerate(patches)
                        if (line := _first_line_patching(patch, relpath)) is not None]
            if not touching:
                continue
            if not read_from:
                read_from = [(stack.patches[index], line) for index, line in touching]
            broke, parsed = None, True  # the release's own version parses (UpstreamModel._readable)
            for index, line in touching:  # rare (a broken stack): each prefix applied anew
                text = _text_of(check_stack(patches[:index + 1], read, unchecked).patched, relpath)
                parses = text is None or _parses(text)  # None: deleted, or untouched where it failed
                if parsed and not parses:
                    broke = (stack.patches[index], line)
                parsed = parses
            if not parsed and broke is not None:
                found.append(broke)
        return list(dict.fromkeys(found)) or read_from  # stacks may share a patch

    def read_member(self, relpath: str) -> bytes | None:
        return self.patched[relpath] if relpath in self.patched else self.base.read_member(relpath)

    def list_dir(self, relpath: str) -> list[str] | None:
        names = self.base.list_dir(relpath)
        extra = self.added.get(relpath.rstrip("/"), set())
        if names is None and not extra:
            return None
        gone = {p.rsplit("/", 1)[-1] for p, data in self.patched.items()
                if data is None and p.rsplit("/", 1)[0] == relpath.rstrip("/")}
        return sorted((set(names or ()) | extra) - gone)

    def iter_files(self, under: str) -> Iterator[str]:
        seen = set()
        for relpath in self.base.iter_files(under):
            seen.add(relpath)
            if self.patched.get(relpath, b"") is not None:
                yield relpath
        prefix = under.rstrip("/") + "/"
        yield from sorted(p for p, data in self.patched.items()
                          if data is not None and p not in seen and p.startswith(prefix))

    def unlisted(self, relpath: str) -> str | None:
        return self.base.unlisted(relpath)

    def content_key(self, relpath: str) -> str:
        if relpath in self.patched:
            return hashlib.sha256(self.patched[relpath] or b"").hexdigest()
        return self.base.content_key(relpath)

    def metadata_text(self) -> str | None:
        return self.base.metadata_text()


def with_stack_applied(release: Release, stacks: PatchStacks) -> Release:
    """The release with the live patch stacks applied (each judged on the stock tree with the
    earlier patches of its stack applied); the stock release itself when there is no stack."""
    if not stacks.stacks:
        return release
    read, unchecked = tree_reader(release.tree)
    results = [check_stack([stacks.patches[p] for p in stack.patches], read, unchecked) for stack in stacks.stacks]
    patched: dict[str, bytes | None] = {}
    for result in results:  # a file two stacks patch is taken from the first
        for path, text in result.patched.items():
            relpath = release_relpath(path)
            if relpath and relpath not in patched:
                patched[relpath] = None if text is None else text.encode("utf-8", "surrogateescape")
    changed = {p: data for p, data in patched.items() if data != _stock_bytes(release.tree, p)}
    tree = PatchedTree(release.tree, changed, stacks, results)
    if not changed:
        return dataclasses.replace(release, tree=tree)
    digest = hashlib.sha256(b"".join(p.encode() + b"\0" + (d or b"\1") + b"\0" for p, d in sorted(changed.items())))
    identity = f"{release.identity}+stack:{digest.hexdigest()[:16]}" if release.identity else None
    return dataclasses.replace(release, tree=tree, identity=identity)


def _first_line_patching(patch: PatchFile, relpath: str) -> int | None:
    return next((file.line for file in patch.files if release_relpath(file.path) == relpath), None)


def _text_of(patched: dict[str, str | None], relpath: str) -> str | None:
    """The text a stack's result holds for the release's `relpath` (its keys are patch paths)."""
    return next((text for path, text in patched.items() if release_relpath(path) == relpath), None)


def _parses(text: str) -> bool:
    try:
        parse_quietly(text)
    except (SyntaxError, ValueError):  # ValueError: a NUL byte, or nested too deeply
        return False
    return True


def _stock_bytes(tree: ReleaseTree, relpath: str) -> bytes | None:
    try:
        return tree.read_member(relpath)
    except Unreadable:
        return None



# What a patch's added line defines: a function, a class, a field (annotated, or `self.x =`),
# a module's variable, a flag, a route; a local variable is none of these
DEFINED = re.compile(r"^\s*(?:async\s+def|def|class)\s+(\w+)|^\s*(?:self\.)(\w+)\s*=(?!=)|^(\w+)\s*=(?!=)"
                     r"|^\s*(\w+)\s*:\s*\S|[\"']--([\w-]+)[\"']|[\"']/(\w+)[\"']")
WORD = re.compile(r"\w+")


def _a_program_name(name: str) -> bool:
    """snake_case or CamelCase, long enough not to be a word of prose (`release`, `device`)."""
    return len(name) >= 8 and ("_" in name.strip("_") or any(c.isupper() for c in name[1:]))


def defined_names(text: str) -> set[str]:
    """The names the lines of `text` define (flags as fields are named: `--a-b` is `a_b`)."""
    found = set()
    for line in numbered_lines(text):
        for match in DEFINED.finditer(line):
            found.update(name for group in match.groups() if group and _a_program_name(name := group.replace("-", "_")))
    return found


def names_the_stack_adds(stacks: PatchStacks, stock: ReleaseTree) -> dict[str, str]:
    """The names the live patch `stacks` define in the release (a function, a field, a flag, a
    route) that the `stock` file each patches never mentions: name -> the patch. A finding
    about one is the stack's, not upstream's (slime's `router_gemm_batch_invariant`, which
    `sglang-deterministic.patch` adds, was reported as a name 0.5.23 removed)."""
    added: dict[str, str] = {}
    for stack in stacks.stacks:
        for patch_path in stack.patches:
            for file in stacks.patches[patch_path].files:
                relpath = release_relpath(file.new_path or file.old_path)
                if relpath is None:
                    continue
                mentioned = set(WORD.findall(member_text(stock, relpath) or ""))
                for name in defined_names("".join(line for hunk in file.hunks for line in hunk.added)) - mentioned:
                    added.setdefault(name, patch_path)
    return added
