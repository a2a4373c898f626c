"""The on-disk cache: downloaded releases, extracted upstream modules, project facts.

Every entry is written atomically and read defensively: an entry that does not decode,
or was written by another schema version, is treated as absent and rebuilt.

A record must also prove it belongs to its key, since a record that still parses is not
necessarily the one that was written there (a file copied or moved between keys, a digit
flipped on disk). Each record file is one header line, then the data (record_body):

    sglang-contracts-cache/<schema> <key> blake2b=<digest of the data bytes>\n<data>

The header is checked before anything is parsed: the schema and the key must be the ones
asked for, and the digest is taken over the raw data bytes, so a damaged record costs a hash,
not a parse. Anything else reads as missing; the caller rebuilds the data and its put()
overwrites the record.

The data is JSON (record_body): a decoder that reads any bytes in work bounded by their size,
whoever wrote them (a record re-signed by hand is read, and refused by its shape).

The folders of the records an edit adds (BOUNDED_KINDS) are bounded in bytes: a record read is
marked used (its modification time set to now, at most once a minute), and once a folder has
been written a good part of its bound since it was last swept, the records used longest ago are
removed until it holds three quarters of it (evict_over_bounds, at the end of a run). A record
removed while another process reads it is a miss there, as a missing record always is. The
records an earlier schema named otherwise (`<key>.json`), which no run reads again, are removed
by each sweep, and the first run of a schema that writes in a folder sweeps it.
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import json
import os
import re
import stat
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

from sglang_contracts.infra.files import Unreadable, is_below, read_limited, why_unwritable
from sglang_contracts.infra.errors import UsageError, shown
from sglang_contracts.infra.display import printable
from sglang_contracts.infra.gitsafety import ls_files, no_repository
from sglang_contracts.infra.roots import working_folder
from sglang_contracts.infra.shapes import fits
from sglang_contracts.infra.temporaries import private_temporary_folder

# Bump when the shape of any cached record changes: old entries are then ignored.
SCHEMA_VERSION = 4  # 4: JSON again (record_body); 3: marshal's form (a forged record allocated without bound)
RECORD_SUFFIX = ".record"  # a record's file: <folder>/<key[:2]>/<key>.record
# A record's file before schema 3: <folder>/<key[:2]>/<key>.json. No run reads one again: a sweep
# (_records_in) removes them, as it would never count them against a bound.
EARLIER_RECORD_SUFFIX = ".json"
HEADER = "sglang-contracts-cache/{schema} {key} blake2b="
# Far over any record this tool writes (sglang's own tree as the project: 6 MB): a larger one,
# like a FIFO or a link to a device, is not one of its records (read_limited refuses them).
MAX_RECORD_BYTES = 256 * 1024 * 1024

# The bytes each folder of the records an edit adds may hold (every edit of a Python file adds
# a run's findings by its inputs, `runs`, and the file's facts by its content, `project`; an
# edit of any other file, an incremental plan and its memo, `incremental`): past it, the records
# used longest ago are removed. `upstream` too: a directory release (a source tree the user
# edits) adds an edited module's records at each save (campaign 10, R10). Its records are keyed
# by module content, shared by the releases that have a module alike, so a directory's cannot be
# told apart: the whole folder is bounded, at many releases' worth (sglang's own tree checked
# cold from 0.5.22 to 0.5.23 writes 51 MB there, both releases), and a run's own records are never
# swept. The `closure` records and the wheels are added by release, not by edit: not removed.
BOUNDED_KINDS = {"runs": 64 * 1024 * 1024, "project": 256 * 1024 * 1024, "incremental": 64 * 1024 * 1024,
                 "upstream": 512 * 1024 * 1024}
# A folder is swept once this share of its bound was written since its last sweep (counted in
# UNSWEPT, across processes): one listing of it per that many bytes written, not one per run.
# The count is the schema's: a folder this schema has not swept yet (a cache an earlier release
# wrote, whose records no run reads again) is swept at the end of the first run that writes in it.
SWEEP_AFTER = 8
UNSWEPT = f".sglang-unswept-{SCHEMA_VERSION}"
EARLIER_UNSWEPT = re.compile(r"\.sglang-unswept(?:-[0-9]+)?")  # an earlier schema's count: removed by the sweep
# A record read is marked used (its modification time set to now) when last marked longer ago
# than this: one stat per read, a write of its time only once a minute.
USE_RESOLUTION_NS = 60 * 1_000_000_000
# A temporary file of a write older than this was left by a process that died writing it.
LEFTOVER_NS = 3600 * 1_000_000_000


def code_fingerprint(*modules) -> str:
    """A digest of the extractor code itself, so changing an extractor invalidates its entries."""
    digest = hashlib.sha256(str(SCHEMA_VERSION).encode())
    for module in modules:
        digest.update(Path(module.__file__).read_bytes())
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    configured = os.environ.get("SGLANG_CONTRACTS_CACHE")
    if configured:
        return Path(configured).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("sglang-contracts"))


# The Cache Directory Tagging Specification's file (bford.info/cachedir): backup tools skip a folder
# that holds it, and so does every walk of a project below its top (project/index.py
# walk_project): the folders this tool keeps in a cache given inside the project are never read
# as the project's own files.
CACHEDIR_TAG = "CACHEDIR.TAG"
CACHEDIR_TAG_TEXT = ("Signature: 8a477f597d28d172789f06886806bc55\n"
                     "# This file is a cache directory tag created by sglang-contracts.\n"
                     "# For information about cache directory tags, see https://bford.info/cachedir/\n")
RECORD_FOLDERS = ("runs", "upstream", "project", "incremental", "closure")  # what a run keeps for the next, by kind
CACHE_FOLDERS = ("wheels", *RECORD_FOLDERS, "daemons")  # what a cache folder holds
# What those folders hold, made by this tool: records by their key's first two digits, wheels,
# their stamps and downloads, a daemon's socket, log and start mark.
OWN_ENTRY = re.compile(r"[0-9a-f]{2}|\.?sglang-.*|\.download-.*|.*\.(?:sock|log|starting)")


def first_link_in(cache: Path) -> str | None:
    """The first symbolic link at or below a cache folder (the folder, what it keeps, anything
    in those), or None. For a cache inside the project, whose files a pull request may have
    committed: a record folder or a wheel that is a link would have this tool write or read
    outside the project. Entries are told links by the folder listing alone (no call per file)."""
    if os.path.islink(cache):
        return os.fspath(cache)
    pending = [os.fspath(cache)]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:  # not there yet, or not a folder: nothing in it is read or written
            continue
        for entry in entries:
            if entry.is_symlink():
                return entry.path
            if entry.is_dir(follow_symlinks=False):
                pending.append(entry.path)
    return None


def first_link_on_the_way(root: Path, folder: Path) -> str | None:
    """The first symbolic link among the folders below `root` on the way to `folder` (named
    from the working folder), or None. A pull request can commit `.cache` as a link
    out of the project; a cache named `.cache/sglang-contracts` is then written through it,
    though neither it nor what it holds is a link (sixth campaign, M03)."""
    given = Path(working_folder()) / folder  # not normalised: `.cache/../x` goes through `.cache` too
    on_the_way = Path(given.anchor)
    for part in given.parts[1:-1]:
        on_the_way = on_the_way / part
        if is_below(os.fspath(on_the_way), os.fspath(root)) and os.path.islink(on_the_way):
            return os.fspath(on_the_way)
    return None


def pull_request_reason(cache: Path, root: Path) -> tuple[str, str] | None:
    """(what, why) when a cache folder inside the project may be the pull request's: it holds a
    file git tracks (first_tracked_in: a record, a wheel of its own making, a link out of the
    project the pull request committed) or a symbolic link, in it or on the way to it below
    the root (first_link_in, first_link_on_the_way); None for a folder outside the project, or
    one inside it that holds neither."""
    if not is_below(os.path.abspath(cache), os.fspath(root)):
        return None
    found, why = first_link_on_the_way(root, cache), "is reached through a symbolic link"
    if found is None:
        found = first_link_in(cache)
        why = "holds a symbolic link" if found is not None else "holds files the project's repository tracks"
    if found is None and os.path.isdir(cache):
        found = first_tracked_in(cache)
        if found == UNTOLD:  # fail closed: a committed cache would be read as the tool's own (campaign 16, R06)
            return os.fspath(cache), "git cannot tell whether the project's repository tracks its files"
    return (found, why) if found is not None else None


def the_pull_requests(cache: Path, root: Path) -> bool:
    """Whether a cache folder inside the project may be the pull request's (pull_request_reason),
    said in one warning line. A CI job may name a cache inside the project it checks
    (`--cache-dir .cache`, restored between jobs, never committed); what a pull request put
    there is neither read nor written: the run keeps nothing and downloads to a temporary
    folder, as for a cache that cannot be written."""
    reason = pull_request_reason(cache, root)
    if reason is None:
        return False
    found, why = reason
    warn_unwritable_once(Path(os.path.abspath(cache)), f"the cache folder {shown(cache)} is inside the project and "
                                                       f"{why} ({shown(found)}): it is neither read nor written (give "
                                                       "a --cache-dir outside the project)")
    return True


def cache_for_project(cache: Path, root: Path) -> Path:
    """The cache folder a command of the project (`check`, `bump`, `patch rebase`) uses: `cache`,
    or a private temporary folder, nothing kept, when it may be the pull request's
    (the_pull_requests)."""
    if not the_pull_requests(cache, root):
        return cache
    try:
        return private_temporary_folder("sglang-contracts-cache-")
    except OSError as error:
        raise UsageError(f"the cache folder {shown(cache)} cannot be used, nor a temporary folder made "
                         f"({error.strerror or error}); give a --cache-dir outside the project") from None


# first_tracked_in's answer when git cannot tell (no git, one that does not answer, one that
# refuses the repository as another user's).
UNTOLD = "\0untold"


def first_tracked_in(cache: Path) -> str | None:
    """The first file below a cache folder that git tracks (a pull request committed it), None
    when it tracks none (or the folder is in no repository), UNTOLD when git cannot tell. Its
    repository may be the pull request's: git runs with the settings no configuration of it can
    override."""
    listed = ls_files(os.fspath(cache), "-z", "--", ".")
    if listed is not None and listed.returncode != 0 and b"bare repositor" in listed.stderr:
        return os.fspath(cache)  # a folder made to look like a bare repository: refused, as the pull request's
    if listed is None or listed.returncode != 0 and not no_repository(listed):
        return UNTOLD
    first = listed.stdout.split(b"\0", 1)[0] if listed.returncode == 0 else b""
    return os.path.join(os.fspath(cache), os.fsdecode(first)) if first else None


def tag_cache_folders(cache: Path) -> None:
    """The tag in each folder of CACHE_FOLDERS, never in the cache folder itself: a user may give
    any folder as the cache (the project's root, a source folder, their home), but those folders
    hold only what this tool makes (one of those names holding anything else is the user's, and
    left untagged). Made here, before the run walks the project and writes in them, but for the
    daemons' (made private where a daemon starts; tagged once it is there). A cache that cannot
    be written is told of elsewhere, and never fails a run."""
    for name in CACHE_FOLDERS:
        folder = cache / name
        try:
            if foreign_reason(folder) is not None:
                continue  # another user's, in a shared cache: nothing is written through it
            if (folder / CACHEDIR_TAG).is_file():
                continue
            if folder.is_dir():
                if not all(OWN_ENTRY.fullmatch(entry) for entry in os.listdir(folder)):
                    continue
            elif name == "daemons":
                continue
            else:
                make_private_folder(folder)
            atomic_write_bytes(folder / CACHEDIR_TAG, CACHEDIR_TAG_TEXT.encode(), private=True)
        except (OSError, ValueError):
            pass


_MADE_FOLDERS: set[Path] = set()  # folders this process made or found: a record write skips mkdir


def make_private_folder(folder: Path) -> None:
    """`folder` and its missing parents, made readable and writable by this user alone whatever
    the umask: under umask 000 (some CI containers, a shared build box) the cache's folders were
    0777, and another user replaced a run record with one of no findings (campaign 4, D08)."""
    missing = []
    while not folder.is_dir():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    for made in reversed(missing):
        try:
            os.mkdir(made, 0o700)  # the umask only ever takes bits away from 0o700
        except FileExistsError:
            if not made.is_dir():  # a file in its place; a folder is another process's, made meanwhile
                raise
_WRITES = itertools.count()


def atomic_write_bytes(path: Path, data: bytes, private: bool = False) -> None:
    """Write `data` to `path` whole or not at all (a temporary file beside it, renamed over it).
    The temporary name is this process's and a counter's, created exclusively: mkstemp's random
    names cost half as much again, for the thousands of records of a first run. `private`: a
    missing folder is made this user's alone (the cache's: make_private_folder)."""
    folder = path.parent
    make = make_private_folder if private else lambda made: made.mkdir(parents=True, exist_ok=True)
    if folder not in _MADE_FOLDERS:
        make(folder)
        _MADE_FOLDERS.add(folder)
    tmp = folder / f".tmp-{os.getpid()}-{next(_WRITES)}{path.suffix}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileNotFoundError:  # the folder went away since: make it again
        _MADE_FOLDERS.discard(folder)
        make(folder)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:  # left by an earlier process of the same number
        fd, name = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=path.suffix)
        tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def data_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def record_body(data: Any) -> bytes:
    """`data` in a record's stored form: JSON. (marshal's form decoded records two to three times
    faster, but a record re-signed by hand with a list of a billion items declared in its first
    bytes made marshal allocate for it: a decoder that reads hostile bytes in bounded work is
    worth more than the 0.1 s a re-check spent decoding.) TypeError for what JSON cannot hold."""
    return json.dumps(data, separators=(",", ":")).encode()


def record_data(body: bytes) -> Any | None:
    """The data of a record's stored form (record_body), or None when it is not one."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than any record this tool writes
        return None


# record path -> ((size, modification time) of the file when read, its decoded data, the shapes
# it was found of), for a process that runs many checks (the language server): a record unchanged
# on disk since it was read is not read, hashed, decoded or checked again. None: not kept (one run
# reads each record once).
_WARNED: set[Path] = set()  # the caches the user was told cannot be written, once per process
_WARNED_LOCK = threading.Lock()


def warn_unwritable_once(cache: Path, message: str) -> None:
    """One warning line on standard error, the first time this process finds a folder of the
    `cache` folder unwritable: a cache the user gave once is told of once, whatever its parts."""
    with _WARNED_LOCK:
        if cache in _WARNED:
            return
        _WARNED.add(cache)
    print(f"sglang-contracts: warning: {printable(message)}", file=sys.stderr, flush=True)


# What a write meets on a full disk, past the file size limit, or over the user's quota.
NO_SPACE = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})
# record folder -> why a record could not be written there for want of space, in this process
# (a folder that can be written but not filled: unwritable_reason cannot see it beforehand).
_UNKEPT: dict[Path, str] = {}


def unwritable_reason(folder: Path) -> str | None:
    """Why records cannot be written in `folder` (made if missing), or None when they can: it
    cannot be written, or a record written there by this process found no space (told once)."""
    try:
        make_private_folder(folder)
    except OSError as error:
        return why_unwritable(folder, error)
    except ValueError as error:  # a NUL in the name
        return str(error)
    if not os.access(folder, os.W_OK):
        return "read-only"
    return _UNKEPT.pop(folder, None)


_REMEMBERED: dict[Path, tuple[tuple[int, int], Any, set]] | None = None


# (record key, decoder) -> (the remembered record, what the decoder made of it)
_DECODED: dict[tuple[str, Callable[[Any], Any]], tuple[Any, Any]] = {}


def remember_records() -> None:
    """Keep decoded records in memory for the rest of the process (see _REMEMBERED)."""
    global _REMEMBERED
    if _REMEMBERED is None:
        _REMEMBERED = {}


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        status = path.stat()
    except (OSError, ValueError):
        return None
    return status.st_size, status.st_mtime_ns


def foreign_reason(folder: Path) -> str | None:
    """Why a folder of the cache is not this user's to read records from or write them to, or
    None (it is, or it is not there yet): in a cache other users may write (a shared one, /tmp),
    another user may have made it, or a link by its name to a folder of theirs or of ours."""
    try:
        status = os.lstat(folder)
        if stat.S_ISLNK(status.st_mode):
            if status.st_uid != os.getuid():
                return f"a link another user made (uid {status.st_uid})"
            status = os.stat(folder)  # the user's own link (wheels kept on another disk): its folder
    except OSError:
        return None
    if status.st_uid != os.getuid():
        return f"another user's (uid {status.st_uid})"
    return None


def _known_to_fit(fitted: set, shape: Any) -> bool:
    """Whether a remembered record was found of `shape` (by its declaration: infra/shapes.py)."""
    try:
        return shape in fitted
    except TypeError:  # a shape that cannot be hashed is checked each time
        return False


def _remember_fit(fitted: set, shape: Any) -> None:
    try:
        fitted.add(shape)
    except TypeError:
        pass


# What a decoder raises for a record of another shape than it reads (RecordCache.get_decoded).
WRONG_SHAPE = (KeyError, TypeError, ValueError, AttributeError, IndexError)


class RecordCache:
    """A folder of records (JSON, record_body) addressed by key; corrupt, stale or
    misplaced records read as missing (see the module's docstring for the format), and so does a record of another shape
    than its reader declares (infra/shapes.py): a reader is never given one. Callers never change
    the data they get. A folder that is not this user's (foreign_reason) is neither read nor written."""

    def __init__(self, folder: Path | None) -> None:
        if folder is not None and (why := foreign_reason(folder)) is not None:
            warn_unwritable_once(folder.parent, f"the cache folder {shown(folder)} is {why}: its records are "
                                                "neither read nor written (give a --cache-dir of your own)")
            folder = None
        self.folder = folder
        self.bounded = folder is not None and folder.name in BOUNDED_KINDS  # evict_over_bounds sweeps it

    def _path(self, key: str) -> Path:
        assert self.folder is not None
        return self.folder / key[:2] / f"{key}{RECORD_SUFFIX}"

    def holds(self, key: str) -> bool:
        """Whether a record is kept under the key (not whether it reads back: `get` tells)."""
        return self.folder is not None and os.path.isfile(self._path(key))

    def get(self, key: str, shape: Any) -> Any | None:
        """The record under the key when it is of `shape` (infra/shapes.py), else None: absent,
        damaged and of another shape alike, which the caller computes again and puts."""
        data, fitted = self._remembered(key)
        if data is None or (fitted is not None and _known_to_fit(fitted, shape)):
            return data
        if not fits(data, shape):
            return None
        if fitted is not None:
            _remember_fit(fitted, shape)
        return data

    def _remembered(self, key: str) -> tuple[Any | None, set | None]:
        """(the record's data or None, in a process that keeps records the shapes it was found of)."""
        if self.folder is None:
            return None, None
        if _REMEMBERED is None:
            data = self._read(key)
            if data is not None and self.bounded:
                self._used(key, _stamp(self._path(key)))
            return data, None
        try:
            path = self._path(key)
        except ValueError:
            return None, None
        stamp, kept = _stamp(path), _REMEMBERED.get(path)
        if stamp is not None and kept is not None and kept[0] == stamp:
            if self.bounded and (used := self._used(key, stamp)) != stamp:  # marked used: its time is now
                _REMEMBERED[path] = (used, kept[1], kept[2])
            return kept[1], kept[2]
        data = self._read(key)
        if data is None or stamp is None:
            return data, None
        _REMEMBERED[path] = (self._used(key, stamp) if self.bounded else stamp, data, set())
        return data, _REMEMBERED[path][2]

    def _used(self, key: str, stamp: tuple[int, int] | None) -> tuple[int, int] | None:
        """A record read, marked used: kept by this process's sweep (evict_over_bounds), and its
        modification time set to now when last set over USE_RESOLUTION_NS ago, for the others'.
        The record's (size, time) as it now is."""
        assert self.folder is not None
        _USED.setdefault(self.folder, set()).add(key)
        if stamp is None or time.time_ns() - stamp[1] <= USE_RESOLUTION_NS:
            return stamp
        path = self._path(key)
        try:
            os.utime(path)
        except OSError:  # removed meanwhile, or not ours to touch: the next sweep may remove it
            return stamp
        return _stamp(path)

    def get_decoded(self, key: str, shape: Any, decode: Callable[[Any], Any]) -> Any | None:
        """`decode(get(key, shape))`, or None when absent, or when `decode` finds it of another
        shape still (raises one of WRONG_SHAPE): the shape may say less than the decoder reads.
        In a process that keeps records (the language server), the decoded object is kept with
        its record and given again while the record is unchanged on disk: callers never change
        it either."""
        data = self.get(key, shape)
        if data is None:
            return None
        kept = _DECODED.get((key, decode)) if _REMEMBERED is not None else None
        if kept is not None and kept[0] is data:  # the very record get() remembered
            return kept[1]
        try:
            decoded = decode(data)
        except WRONG_SHAPE:
            return None
        if _REMEMBERED is not None:
            _DECODED[(key, decode)] = (data, decoded)
        return decoded

    def _read(self, key: str) -> Any | None:
        try:
            raw = read_limited(self._path(key), MAX_RECORD_BYTES, owned=True)  # never a record another user put there
        except (Unreadable, OSError, ValueError):  # ValueError: a key no file name can hold
            return None
        header, newline, body = raw.partition(b"\n")
        expected = HEADER.format(schema=SCHEMA_VERSION, key=key).encode()
        if not newline or not header.startswith(expected) or header[len(expected):] != data_digest(body).encode():
            return None  # another schema, another key's record, or damaged data
        return record_data(body)

    def put(self, key: str, data: Any) -> None:
        if self.folder is None:
            return
        body = record_body(data)
        header = HEADER.format(schema=SCHEMA_VERSION, key=key) + data_digest(body)
        try:
            atomic_write_bytes(self._path(key), header.encode() + b"\n" + body, private=True)
            if self.bounded:
                _written(self.folder, key, len(header) + 1 + len(body))
        except OSError as error:  # a read-only or full cache slows the next run down; it must not fail this one
            if error.errno in NO_SPACE:
                _UNKEPT.setdefault(self.folder, error.strerror or os.strerror(error.errno))
        except ValueError:  # a key no file name can hold
            pass


# Of each bounded folder (BOUNDED_KINDS), since this process last swept: the keys of the records
# it read or wrote (what its run used, never removed by its own sweep), and the bytes it wrote.
_USED: dict[Path, set[str]] = {}
_WRITTEN: dict[Path, int] = {}
_WRITTEN_LOCK = threading.Lock()


def _written(folder: Path, key: str, size: int) -> None:
    with _WRITTEN_LOCK:
        _USED.setdefault(folder, set()).add(key)
        _WRITTEN[folder] = _WRITTEN.get(folder, 0) + size


def evict_over_bounds(held: Callable[[Path], set[str]] | None = None) -> None:
    """Once a run's records are written: each bounded folder this process wrote to counts the
    bytes in UNSWEPT, and one written over 1/SWEEP_AFTER of its bound since its last sweep is
    swept (_swept), but the records this process used since it last swept and those `held(folder)`
    names (a resident process's index holds the unchanged files' facts, never asking for them
    again). Records the scan's worker processes write are not counted (a first run's facts): the
    next sweep finds them. A cache that cannot be written or listed is left as it is."""
    with _WRITTEN_LOCK:
        written, used = dict(_WRITTEN), dict(_USED)
        _WRITTEN.clear()
        _USED.clear()
    for folder, size in written.items():
        bound = BOUNDED_KINDS.get(folder.name)
        if bound is None:  # bounds given otherwise meanwhile (a test's)
            continue
        counted = _unswept(folder)
        unswept = size + (counted or 0)
        try:
            if counted is None or unswept >= bound // SWEEP_AFTER:
                _swept(folder, bound, used.get(folder, set()) | (held(folder) if held is not None else set()))
                unswept = 0
            atomic_write_bytes(folder / UNSWEPT, str(unswept).encode(), private=True)
        except OSError:
            continue


def _unswept(folder: Path) -> int | None:
    """The bytes written in a bounded folder since this schema last swept it (UNSWEPT); None when
    it never did: records of an earlier schema may be there."""
    path = folder / UNSWEPT
    try:
        return int(read_limited(path, 64, owned=True))
    except (Unreadable, OSError, ValueError):  # not a count: from this run on
        return None if not os.path.lexists(path) else 0


def _swept(folder: Path, bound: int, used: set[str]) -> None:
    """The records of `folder` over `bound` bytes removed, those used longest ago first (by
    modification time: RecordCache._used), down to three quarters of it, but the records of `used`
    (what the next run reads first).
    Another process may remove a record first, or be reading it: either way, a miss."""
    entries = list(os.scandir(folder))
    for entry in entries:
        if entry.name != UNSWEPT and EARLIER_UNSWEPT.fullmatch(entry.name):
            _remove(entry.path)
    records = [record for subfolder in entries for record in _records_in(subfolder)]
    total = sum(size for _, size, _, _ in records)
    if total <= bound:
        return
    for _, size, key, path in sorted(records):
        if total <= bound * 3 // 4:
            break
        if key not in used:
            _remove(path)
            total -= size


def _records_in(subfolder: os.DirEntry) -> list[tuple[int, int, str, str]]:
    """(modification time, size, key, path) of each record in a folder of records (one named by
    its keys' first two digits, not a link), of this user's; the temporary files of writes that
    died long ago, and the records of earlier schemas (EARLIER_RECORD_SUFFIX), removed."""
    if not (subfolder.is_dir(follow_symlinks=False) and OWN_ENTRY.fullmatch(subfolder.name)):
        return []
    found, now = [], time.time_ns()
    try:
        entries = list(os.scandir(subfolder.path))
    except OSError:
        return []
    for entry in entries:
        try:
            status = entry.stat(follow_symlinks=False)
        except OSError:  # removed meanwhile
            continue
        if not stat.S_ISREG(status.st_mode) or status.st_uid != os.getuid():
            continue
        if entry.name.endswith(RECORD_SUFFIX):
            found.append((status.st_mtime_ns, status.st_size, entry.name[:-len(RECORD_SUFFIX)], entry.path))
        elif _left_over(entry.name, subfolder.name, now - status.st_mtime_ns):
            _remove(entry.path)
    return found


def _left_over(name: str, subfolder: str, age_ns: int) -> bool:
    """Whether a file of a folder of records, not one of this schema's, is left over: a write's
    temporary file long after its writer died, or a record of an earlier schema (it too is
    named by its key, which the folder's name begins)."""
    if name.startswith(".tmp-"):
        return age_ns > LEFTOVER_NS
    return name.endswith(EARLIER_RECORD_SUFFIX) and name.startswith(subfolder)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:  # removed by another process's sweep meanwhile
        pass
