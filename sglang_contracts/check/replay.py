"""A run whose every input is unchanged replays its findings instead of recomputing them.

The inputs are this tool's own code and rule catalog, the Python version (its parser), the
file system encoding (the str a file name's bytes make), the options, the two releases, the
files named on the command line, and every file below the project root that any check may read
(the folders every reader skips, like .git and .venv, excepted), by path, size and modification
time. A release is named by its content: a published version by its name, a git ref by its
commit, a directory by its package files' paths, sizes and modification times
(sources.content_identity). Any change to any input, a file merely touched included, makes a
run that is not replayed (incremental.py then recomputes what changed).
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
import stat
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from sglang_contracts.diagnostics import Diagnostic
from sglang_contracts.infra.files import any_unsaved, file_state, unsaved_buffer_items
from sglang_contracts.infra.shapes import ListOf, Row, Table
from sglang_contracts.project.ignored import unread_files
from sglang_contracts.project.index import as_named, project_folders
from sglang_contracts.sources import content_identity
from sglang_contracts.sources.base import Release
from sglang_contracts.closure.delta import ClosureDelta
from sglang_contracts.upstream.delta import UpstreamDelta

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # this tool's code, every module of it
READERS = ("griffe", "packaging")


def _version(distribution: str) -> str:
    """`name==version` of an installed distribution, from its `.dist-info` folder's name on the
    path as an installer writes it (importlib.metadata, and the email parser it loads, were a
    twentieth of a re-check's start); importlib.metadata where no such folder is found."""
    prefix = f"{distribution.replace('-', '_')}-"
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.endswith(".dist-info") and name.lower().startswith(prefix):
                return f"{distribution}=={name[len(prefix):-len('.dist-info')]}"
    import importlib.metadata

    try:
        return f"{distribution}=={importlib.metadata.version(distribution)}"
    except importlib.metadata.PackageNotFoundError:
        return f"{distribution} (unknown)"


# Options that change how a run works, not what it finds; the baseline is applied after a replay.
NOT_INPUTS = {"cache_dir", "use_cache", "replay", "recompute", "workers", "baseline"}


@lru_cache(maxsize=1)
def tool_fingerprint() -> str:
    """A digest of every source file of this package, of the rule catalog it renders, and of
    the versions of the libraries that read SGLang (griffe) and requirements (packaging)."""
    digest = hashlib.sha256(" ".join(_version(name) for name in READERS).encode())
    for folder in (PACKAGE_DIR, PACKAGE_DIR.parent / "rules"):
        for path in sorted(folder.rglob("*")):
            if path.suffix in (".py", ".toml") and "__pycache__" not in path.parts:
                digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def listing(root: Path, named_patches: list[str]) -> list[tuple[str, str]]:
    """(name, inventory row) of every file a check may read below the root, in path order: one
    walk a run's keys share (each filters it by name). Walked on strings, over the folders
    walk_project reads (project_folders): Path objects for every file of a project cost most of
    a re-check's walk. A regular file is listed by its size and modification time, any other
    entry by what it is (_entry_state), and each folder the walk could not read or follow by why:
    a FIFO, a folder and a loop of links at one path are three inputs, each reported otherwise.
    These are named "", so that every key takes them: a key that leaves out the Python files
    (`*.py`: they count by content, incremental.py) would lose the state of a FIFO `m.py`."""
    root = root.resolve()
    top = os.fspath(root)
    unread: list[tuple[str, str]] = []
    found = _walked_files(top, lambda path, reason: unread.append((path, reason)))
    found.update(_named_patch_files(root, named_patches))  # `patch-files` may name files in folders the walk skips
    rows = []
    for parts in sorted(found):
        name, shown = found[parts]
        regular, state = _entry_state(shown if os.path.isabs(shown) else os.path.join(top, shown))
        rows.append((name if regular else "", f"{shown}\0{state}"))
    for path, reason in sorted(unread):
        rows.append(("", f"{path}\0not walked\0{reason}"))
    return rows


def _entry_state(path: str) -> tuple[bool, str]:
    """(whether it is a regular file, what it is) of a listed entry, as far as a check's reading
    of it goes, without opening it (a FIFO opened would wait for a writer): a regular file's size
    and modification time (through links); else its kind (a FIFO, a socket, a device, a folder,
    or why it cannot be followed: ELOOP for a loop of links), and for a link the target it names."""
    try:
        status = os.stat(path)
    except OSError as error:
        kind = errno.errorcode.get(error.errno or 0, type(error).__name__)
    else:
        if stat.S_ISREG(status.st_mode):
            return True, file_state(status)
        kind = _KINDS.get(stat.S_IFMT(status.st_mode), "other")
    try:
        return False, f"{kind}\0link\0{os.readlink(path)}"
    except OSError:  # not a link
        return False, kind


_KINDS = {stat.S_IFDIR: "folder", stat.S_IFIFO: "fifo", stat.S_IFSOCK: "socket", stat.S_IFCHR: "character device",
          stat.S_IFBLK: "block device"}


def _walked_files(top: str, unread: Callable[[str, str], None]) -> dict[tuple[str, ...], tuple[str, str]]:
    """path parts -> (file name, path as the row shows it) of the files walk_project reads below
    `top`; `unread` is told each folder it cannot list or does not follow out of the project."""
    found: dict[tuple[str, ...], tuple[str, str]] = {}
    for folder, files in project_folders(top, unread):
        below = os.path.relpath(folder, top).replace(os.sep, "/")
        for name in files:
            relpath = name if below == "." else f"{below}/{name}"
            found[tuple(relpath.split("/"))] = (name, relpath)
    return found


def _named_patch_files(root: Path, named_patches: list[str]) -> dict[tuple[str, ...], tuple[str, str]]:
    """The same for the files the `patch-files` patterns name (resolved: relative to the root
    where they are below it, else absolute)."""
    found: dict[tuple[str, ...], tuple[str, str]] = {}
    for pattern in named_patches:
        for path in root.glob(pattern):
            if path.is_file():
                path = path.resolve()
                shown = path.relative_to(root).as_posix() if path.is_relative_to(root) else os.fspath(path)
                found[path.relative_to(root).parts if path.is_relative_to(root) else path.parts] = (path.name, shown)
    return found


def inventory(root: Path, named_patches: list[str], accept=lambda name: True,
              listed: list[tuple[str, str]] | None = None) -> list[str]:
    """Path, size and modification time of every file a check may read below the root (whose
    name `accept`s); `listed`: this run's listing, if taken already."""
    return [row for name, row in (listed if listed is not None else listing(root, named_patches)) if accept(name)]


def _file_name_decoding() -> list[str]:
    """How this process reads a file name's bytes (os.fsdecode): a finding names its file by the
    str they make, and the same bytes make another str under another locale ('ü' in UTF-8, two
    surrogates in ASCII). A record made under one is not replayed under another, whose reports
    would name files by strings of another process (campaign 13, R03: a UnicodeEncodeError)."""
    return [sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()]


def run_key(root: Path, paths: list[Path], options: Any, old_spec: str,
            listed: list[tuple[str, str]] | None = None) -> str | None:
    """The key of this run's findings, or None when a release's content cannot be told (no
    such ref or folder: the run says so)."""
    if any_unsaved():  # an editor's unsaved buffer is an input no file's size or time shows
        return None
    return inputs_key(root, paths, options, old_spec, lambda name: True, listed)


def inputs_key(root: Path, paths: list[Path], options: Any, old_spec: str, accept,
               listed: list[tuple[str, str]] | None = None) -> str | None:
    """A digest of the run's inputs but the project files whose name `accept` refuses, or None
    when a release's content cannot be told; `listed`: this run's listing (`listing`)."""
    releases = [content_identity(spec, options.sglang_repo) for spec in (old_spec, options.new)]
    if None in releases:
        return None
    fields = {f.name: getattr(options, f.name) for f in dataclasses.fields(options) if f.name not in NOT_INPUTS}
    root = root.resolve()
    named_patches = list(options.settings.get("patch-files") or ())
    header = json.dumps({
        "tool": tool_fingerprint(), "python": list(sys.version_info[:2]), "releases": releases,
        "options": fields, "root": str(root), "paths": sorted(str(as_named(p, root)) for p in paths),
        "file_names": _file_name_decoding(),
    }, sort_keys=True, default=str)
    digest = hashlib.sha256(header.encode())
    listed = listed if listed is not None else listing(root, named_patches)
    for row in inventory(root, named_patches, accept, listed):
        digest.update(row.encode("utf-8", "surrogateescape") + b"\n")  # any bytes a file name holds
    digest.update(_ignored_state(root, listed).encode("utf-8", "surrogateescape"))
    # An unsaved buffer of an accepted file (a Dockerfile typed in an editor) is an input its
    # file's size and time do not show: by its content.
    for path, data in sorted(unsaved_buffer_items()):
        if accept(os.path.basename(path)):
            digest.update(f"unsaved\0{path}\0{hashlib.sha256(data).hexdigest()}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def _ignored_state(root: Path, listed: list[tuple[str, str]]) -> str:
    """Which of the listed files git ignores, or cannot tell of, and why: what the stack's readers
    leave unread (project/ignored.py) changes with no file of the listing (.git/info/exclude, the
    checkout's owner, git's answer), and a replay reported a file's findings when it was no
    longer ignored, or an empty run once git answered again (campaign 20, R07)."""
    paths = [root / row.partition("\0")[0] for name, row in listed if name and not name.endswith(".py")]
    unread = unread_files(root, paths)
    return json.dumps([sorted(map(str, unread.ignored)), sorted(map(str, unread.untold)), unread.why])


# What a report says of a release (Release's fields but its tree), kept so that a replay need
# not open either release: a wheel's directory or a clone's tree costs more than the replay.
RELEASE_FIELDS = ("label", "version", "ref", "identity", "name")


def record(diagnostics: list[Diagnostic], scanned: int, with_contracts: int, releases: list[Release],
           delta: UpstreamDelta | None, closure: ClosureDelta | None = None) -> dict[str, Any]:
    """What a replay reports: everything a report prints, the upstream and closure deltas included."""
    return {"diagnostics": [d.to_record() for d in diagnostics], "scanned": scanned,
            "with_contracts": with_contracts,
            "releases": [{name: getattr(release, name) for name in RELEASE_FIELDS} for release in releases],
            "upstream_delta": delta.to_json() if delta is not None else None,
            "closure_delta": closure.to_json() if closure is not None else None}


@dataclass
class Replay:
    diagnostics: list[Diagnostic]
    scanned: int
    with_contracts: int
    releases: list[dict[str, str | None]]  # old, new: RELEASE_FIELDS
    upstream_delta: UpstreamDelta | None  # with --sglang-repo and two refs
    closure_delta: ClosureDelta | None  # what moves between the dependency closures


# record's form, as a run's record is read back (replay_of decodes the rest, refusing another shape).
RUN_RECORD = Table(diagnostics=ListOf(dict), scanned=int, with_contracts=int, releases=Row(dict, dict),
                   upstream_delta=(dict, None), closure_delta=(dict, None))


def replay_of(saved: Any) -> Replay | None:
    """The saved findings, or None when the record does not decode (it is then recomputed)."""
    try:
        releases = [{name: _optional_text(fields[name]) for name in RELEASE_FIELDS} for fields in saved["releases"]]
        if len(releases) != 2 or not all(fields["label"] for fields in releases):
            return None
        delta, closure = saved["upstream_delta"], saved["closure_delta"]
        return Replay([Diagnostic.from_record(item) for item in saved["diagnostics"]],
                      int(saved["scanned"]), int(saved["with_contracts"]), releases,
                      UpstreamDelta.from_json(delta) if delta is not None else None,
                      ClosureDelta.from_json(closure) if closure is not None else None)
    except (KeyError, TypeError, ValueError):
        return None


def _optional_text(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError("not a string")
    return value


class OpenedOnUse:
    """A release's tree opened the first time anything reads it (`open_tree()`): a replayed
    report names its releases, and only a caller that reads them (a verbose report, an editor's
    fix) pays for opening them."""

    def __init__(self, open_tree: Callable[[], Any]) -> None:
        self._open_tree = open_tree
        self._tree: Any = None

    def _opened(self) -> Any:
        if self._tree is None:
            self._tree = self._open_tree()
        return self._tree

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._opened(), name)

    def list_dir(self, relpath: str) -> list[str] | None:  # UpstreamModel keeps the method itself
        return self._opened().list_dir(relpath)


def replayed_release(fields: dict[str, str | None], open_release: Callable[[], Release]) -> Release:
    """The release a replay names, its tree opened on use by `open_release()`."""
    return Release(tree=OpenedOnUse(lambda: open_release().tree), **fields)  # type: ignore[arg-type]
