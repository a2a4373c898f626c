"""A released version from the package index: downloaded once with pip, read in place.

pip does the download, so the user's own index configuration (mirrors, credentials,
proxies) is honoured. The wheel stays in the cache, so a second run is offline. It is never
unpacked: a run reads the few hundred modules the project's contracts reach straight from
the archive (unpacking all 4,700 files cost 1.6 s of CPU per release).

A cached wheel is trusted only as it was when last known whole. Next to it, a stamp
(`.<wheel>.verified`) holds the size and modification time it had when pip downloaded it, or
when every file a run may read was last checked against the wheel's RECORD (its SHA-256s)
and the archive's CRCs (0.5 s for a real release, once). A wheel whose stamp is missing or
differs is checked that way; one that fails (truncated, damaged, rewritten) is deleted and
downloaded again, as is one whose directory gives a member sizes the archive cannot hold (a
lying ZIP64 size, which would ask to read 2**62 bytes), whenever it is opened. A member found damaged while reading (the archive's CRC) ends the run
with a one-line error, and the wheel is deleted so that the next run downloads it anew.

A stamped wheel's directory (each member's place and sizes, and RECORD's digests) is kept
beside it too (`.<wheel>.directory`, for the same size and time): a run that re-checks an edit
opens both releases from those, not from the archive's own directory (parsing 5,000 entries
per wheel, and again in the forked copy, was a tenth of such a run's CPU). The entries read
back pass the same checks as the archive's own.

A cache folder that cannot take a download (read-only, a file where the folder should be,
`--cache-dir /dev/null`, a full disk) does not end the run: the wheel goes to a temporary folder, removed
when the process ends, and one warning line on standard error names the folder that could
not be written. Only when no temporary folder can be made either is it an error.
"""

from __future__ import annotations

import errno
import base64
import csv
import hashlib
import io
import os
import re
import struct
import subprocess
import tempfile
import zipfile
import zlib
from functools import cached_property
from pathlib import Path
from typing import Iterator

from sglang_contracts.infra import pipfiles, progress
from sglang_contracts.infra.cache import (NO_SPACE, atomic_write_bytes, foreign_reason, make_private_folder,
                                          record_body, record_data, warn_unwritable_once)
from sglang_contracts.infra.errors import SourceError, shown
from sglang_contracts.infra.files import Unreadable, describe_size, read_limited, why_unwritable
from sglang_contracts.infra.lines import numbered_lines
from sglang_contracts.infra.pythonpath import python_command
from sglang_contracts.infra.shapes import ListOf, Row, Table, TableOf, fits
from sglang_contracts.infra.temporaries import private_temporary_folder
from sglang_contracts.requirements import as_version
from sglang_contracts.sources.base import Release, ReleaseTree, check_is_sglang, read_limit

PUBLISHED = "pypi:sglang=={version}"  # a published release's identity: its content can never change
# Only these are read; every other member (compiled extensions, CUDA sources, data) reads
# as empty, so its name still exists for the model (an extension module is a module).
READ_SUFFIXES = (".py", ".pyi", ".typed", "METADATA", "RECORD", "WHEEL", "entry_points.txt")


# What reading a bad archive raises (OverflowError: a number in it too large for the system).
DAMAGE = (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, OverflowError)
LOCAL_HEADER_BYTES = 30
DEFLATE_MOST = 1032  # deflate's best ratio: no deflated member inflates to more than this many times its size


def _wheel_in(folder: Path, version: str) -> Path | None:
    """The sglang wheel of `version` in the folder, by version, not spelling: `0.5.23`, `v0.5.23`
    (a tag's) and `0.5.23.0` are one release, and its wheel is named for its normal form."""
    wanted = as_version(version)
    try:
        wheels = sorted(folder.glob("sglang-*-*.whl")) if folder.is_dir() else []
    except (OSError, ValueError):  # a name too long to be a folder, say
        return None
    return next((wheel for wheel in wheels if as_version(wheel.name.split("-")[1]) == wanted and _own(wheel)), None)


def _own(wheel: Path) -> bool:
    """A wheel this user's download put there, not one another user left in a folder others
    may write (made under umask 000): it would stand in for the release."""
    try:
        return wheel.stat().st_uid == os.getuid()
    except OSError:
        return False


def _stamp_path(wheel: Path) -> Path:
    return wheel.with_name(f".{wheel.name}.verified")


def _stamp_of(wheel: Path) -> bytes:
    status = wheel.stat()
    return f"{status.st_size} {status.st_mtime_ns}\n".encode()


# The kept directory of a stamped wheel: for its size and time (_stamp_of), each member as
# [name, header offset, compressed size, size, compression, flags, CRC], and RECORD's digests.
DIRECTORY = Table(stamp=str, members=ListOf(Row(str, int, int, int, int, int, int)), recorded=TableOf(str),
                  closed=True)
MAX_DIRECTORY_BYTES = 64 << 20


class _Member:
    """A member as the archive's directory gives it (the fields of zipfile.ZipInfo read here)."""

    __slots__ = ("filename", "header_offset", "compress_size", "file_size", "compress_type", "flag_bits", "CRC",
                 "external_attr")

    def __init__(self, filename: str, header_offset: int, compress_size: int, file_size: int, compress_type: int,
                 flag_bits: int, crc: int) -> None:
        self.filename, self.header_offset, self.compress_size = filename, header_offset, compress_size
        self.file_size, self.compress_type, self.flag_bits, self.CRC = file_size, compress_type, flag_bits, crc
        self.external_attr = 0  # a link member is never kept (WheelTree refuses the wheel)

    def is_dir(self) -> bool:
        return self.filename.endswith("/")


def _directory_path(wheel: Path) -> Path:
    return wheel.with_name(f".{wheel.name}.directory")


def _kept_directory(wheel: Path) -> dict | None:
    """The directory kept for the wheel as it is now (DIRECTORY), or None."""
    try:
        data = record_data(read_limited(_directory_path(wheel), MAX_DIRECTORY_BYTES, owned=True))
        stamp = _stamp_of(wheel).decode()
    except (Unreadable, OSError, ValueError):
        return None
    return data if data is not None and fits(data, DIRECTORY) and data["stamp"] == stamp else None


def _keep_directory(wheel: Path, tree: "WheelTree") -> None:
    """Keep the stamped wheel's directory for the next runs (best effort, as the stamp)."""
    members = [[info.filename, info.header_offset, info.compress_size, info.file_size, info.compress_type,
                info.flag_bits, info.CRC] for info in tree.members.values()]
    data = {"stamp": _stamp_of(wheel).decode(), "members": members, "recorded": tree._recorded}
    try:
        atomic_write_bytes(_directory_path(wheel), record_body(data), private=True)
    except (OSError, ValueError):
        pass


def _stamp(wheel: Path) -> None:
    """Record that `wheel`, as it is now, is known whole (best effort: a read-only cache only
    means checking it again next time)."""
    try:
        atomic_write_bytes(_stamp_path(wheel), _stamp_of(wheel), private=True)
    except OSError:
        pass


def _stamped(wheel: Path) -> bool:
    try:
        return _stamp_path(wheel).read_bytes() == _stamp_of(wheel)
    except OSError:
        return False


def _discard(wheel: Path) -> bool:
    """Delete a damaged cached wheel and its stamp; False when it cannot be deleted."""
    try:
        _stamp_path(wheel).unlink(missing_ok=True)
        _directory_path(wheel).unlink(missing_ok=True)
        wheel.unlink(missing_ok=True)
        return True
    except OSError:
        return False


class _Unwritable(Exception):
    """The folder a download must go to cannot be created or written."""

    def __init__(self, folder: Path, error: OSError) -> None:
        super().__init__(f"{shown(folder)} ({why_unwritable(folder, error)})")
        self.folder = folder


PIP_OS_ERROR = re.compile(r"\[Errno (\d+)\]")
UNREACHABLE_MARKERS = ("NewConnectionError", "Could not fetch URL", "ConnectTimeout", "ReadTimeout",
                       "Name or service not known", "Temporary failure in name resolution",
                       "Connection refused", "Network is unreachable", "ProxyError")


def _pip_download(version: str, dest: Path) -> Path:
    try:
        make_private_folder(dest)
        if (foreign := foreign_reason(dest)) is not None:  # never downloaded into another user's folder
            raise PermissionError(errno.EPERM, f"the folder is {foreign}")
        staging = tempfile.TemporaryDirectory(dir=dest, prefix=".download-")
    except OSError as error:
        raise _Unwritable(dest, error) from None
    if (why := pipfiles.blocking_configuration()) is not None:
        raise SourceError(f"sglang {version}: not downloaded: pip would wait for ever reading its configuration "
                          f"({shown(why)})")
    # its cache a FIFO (XDG_CACHE_HOME naming one): pip waited on it for ever (campaign 18, R06)
    uncached = ["--no-cache-dir"] if pipfiles.blocking(pipfiles.cache_folder()) is not None else []
    with staging as tmp:
        command = python_command("-m", "pip", "download", "--no-deps", "--only-binary=:all:", *uncached,
                                 "--disable-pip-version-check", "--quiet", "--dest", tmp, f"sglang=={version}")
        result = subprocess.run(command, capture_output=True, text=True)
        wheel = _wheel_in(Path(tmp), version)
        if result.returncode != 0 or wheel is None:
            raise _download_failure(version, dest, result, Path(tmp))
        final = dest / wheel.name
        try:
            wheel.replace(final)
        except OSError as error:
            raise _Unwritable(dest, error) from None
        _stamp(final)  # just downloaded by pip, which checks the index's hashes
        return final


def _download_failure(version: str, dest: Path, result: subprocess.CompletedProcess, tmp: Path) -> Exception:
    """What to raise when pip failed, or downloaded no wheel of the release into `tmp`."""
    full = _no_space(result.stderr)
    if full is not None:  # the cache's disk is full: as a cache that cannot be written
        return _Unwritable(dest, full)
    if result.returncode == 0:  # pip says it downloaded something, and it is not this wheel
        got = ", ".join(sorted(path.name for path in tmp.iterdir())) or "nothing"
        return SourceError(f"sglang {version}: pip downloaded no sglang {version} wheel (it downloaded: "
                           f"{shown(got)})")
    return SourceError(_explain_pip_failure(version, result.stderr))


def _no_space(stderr: str) -> OSError | None:
    """The error pip met writing the download, when it is one of a full disk, a file size limit
    or a quota (pip says `[Errno 28] No space left on device`)."""
    for number in map(int, PIP_OS_ERROR.findall(stderr)):
        if number in NO_SPACE:
            return OSError(number, os.strerror(number))
    return None


def _scratch_folder(unwritable: _Unwritable) -> Path:
    """A new temporary folder for one download, removed when the process ends; the user is
    told, once per cache folder, that the cache could not take it."""
    try:
        folder = private_temporary_folder("sglang-contracts-wheels-")
    except OSError as error:
        raise SourceError(f"cannot write the cache folder {unwritable}, nor make a temporary folder "
                          f"({error.strerror or error}); give a writable --cache-dir") from None
    warn_unwritable_once(unwritable.folder.parent, f"cannot write the cache folder {unwritable}; releases are "
                         "downloaded to a temporary folder for this run only (give a writable --cache-dir)")
    return folder


def _download(version: str, wheels: Path) -> Path:
    with progress.task(f"Downloading sglang {version}"):
        try:
            return _pip_download(version, wheels)
        except _Unwritable as unwritable:
            first = unwritable
        try:
            return _pip_download(version, _scratch_folder(first))
        except _Unwritable as unwritable:
            raise SourceError(f"cannot write the cache folder {first}, nor the temporary folder {unwritable}; "
                              "give a writable --cache-dir") from None


def _pip_output(stderr: str) -> tuple[list[str], list[str]]:
    """pip's non-blank lines, stripped, and those of them that are not warnings."""
    lines = [line.strip() for line in numbered_lines(stderr) if line.strip()]
    return lines, [line for line in lines if not line.startswith("WARNING")]


def _mentions_unreachable(lines: list[str]) -> bool:
    """Whether pip's output says the index could not be reached: pip names connection failures
    only in its retry warnings, and not at all with no retries."""
    return any(marker in line for line in lines for marker in UNREACHABLE_MARKERS)


def _says_not_found(errors: list[str]) -> bool:
    """Whether pip's errors say it found no such version."""
    return any("No matching distribution" in line or "Could not find a version" in line for line in errors)


def _explain_pip_failure(version: str, stderr: str) -> str:
    lines, errors = _pip_output(stderr)
    # pip's last words: its error, else its last warnings (a failure it only warned about)
    detail = errors[-1] if errors else " / ".join(lines[-2:]) if lines else "pip gave no reason"
    unreachable = _mentions_unreachable(lines)
    if _says_not_found(errors):
        if unreachable or any("(from versions: none)" in line for line in errors):
            return (f"sglang {version}: the package index could not be reached (or lists no sglang release) "
                    f"and no cached copy exists ({detail})")
        return f"sglang {version}: no such release on the package index ({detail})"
    if unreachable:
        return f"sglang {version}: the package index could not be reached and no cached copy exists ({detail})"
    return f"sglang {version}: download failed ({detail})"


def _sizes_fit(info: zipfile.ZipInfo, archive_size: int) -> bool:
    """Whether the sizes the archive's directory gives a member are ones the archive can hold:
    its compressed bytes inside the file, as many uncompressed bytes as they can make. A lying
    directory (a ZIP64 size of 2**62) would otherwise ask to read that much."""
    if info.header_offset + LOCAL_HEADER_BYTES + info.compress_size > archive_size:
        return False
    if info.flag_bits & 0x1:  # encrypted: the sizes include its header
        return True
    if info.compress_type == zipfile.ZIP_STORED:
        return info.file_size == info.compress_size
    return info.compress_type != zipfile.ZIP_DEFLATED or info.file_size <= info.compress_size * DEFLATE_MOST


def _safe_member(name: str) -> bool:
    """Neither absolute nor climbing out (`..`) nor naming a drive (`C:`), read as PurePosixPath
    reads it (empty and `.` parts dropped), on the string: a path per member was a third of
    opening a wheel, at every run."""
    name = name.replace("\\", "/")
    if name.startswith("/"):
        return False
    parts = [part for part in name.split("/") if part not in ("", ".")]
    return ".." not in parts and not (parts and ":" in parts[0])


def _decoded(encoded: str) -> bytes | None:
    """A RECORD entry's urlsafe base64 SHA-256 as bytes; None for a malformed entry."""
    try:
        digest = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except ValueError:  # binascii.Error
        return None
    return digest if len(digest) == 32 else None


class WheelTree(ReleaseTree):
    """The files of a wheel, read from the archive itself."""

    carries_all_files = False  # the package's modules and data, not every file of the source tree
    keeps_sources = True

    def __init__(self, wheel: Path, cached: bool = False, directory: dict | None = None) -> None:
        """`cached`: the wheel is the cache's own copy, deleted when found damaged; `directory`:
        its directory as kept (_kept_directory), read in place of the archive's."""
        self.cached = cached
        self.wheel = wheel
        self._archive: zipfile.ZipFile | None = None
        if directory is None:
            infos: list = self.archive.infolist()  # BadZipFile for a truncated or corrupt download
        else:
            infos = [_Member(*row) for row in directory["members"]]
            self._recorded = directory["recorded"]  # what the cached property would read from RECORD
        self.members: dict[str, zipfile.ZipInfo | _Member] = {}
        self.folders: dict[str, set[str]] = {}
        archive_size = os.path.getsize(wheel)
        for info in infos:
            if not _sizes_fit(info, archive_size):
                raise zipfile.BadZipFile(f"the archive's directory gives {info.filename} sizes it cannot hold")
            if not _safe_member(info.filename):
                raise SourceError(f"{wheel.name}: refusing unsafe archive member {info.filename!r}")
            if (info.external_attr >> 16) & 0o170000 == 0o120000:
                raise SourceError(f"{wheel.name}: refusing symbolic link member {info.filename!r}")
            if info.is_dir():
                continue
            self.members[info.filename] = info
            # The member in its folder, and each folder in its parent up to one already listed.
            folder, _, entry = info.filename.rpartition("/")
            while (entries := self.folders.get(folder)) is None:
                self.folders[folder] = {entry}
                if not folder:
                    break
                folder, _, entry = folder.rpartition("/")
            else:
                entries.add(entry)
        self._fd = os.open(wheel, os.O_RDONLY)  # members are read by position, from any thread

    @property
    def archive(self) -> zipfile.ZipFile:
        """zipfile's reading of the archive, opened when first needed: for its directory when
        none is kept, and for the unusual members (_member_bytes)."""
        if self._archive is None:
            self._archive = zipfile.ZipFile(self.wheel)
        return self._archive

    def close(self) -> None:
        archive, self._archive = getattr(self, "_archive", None), None  # none when it could not be opened
        if archive is not None:
            archive.close()
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            os.close(fd)

    __del__ = close

    def in_forked_copy(self) -> None:
        # zipfile reads (the unusual members) seek the archive's file, whose offset the two
        # processes share; positional reads of `_fd` share nothing. Opened again when needed.
        self._archive = None

    def read_bytes(self, relpath: str) -> bytes | None:
        info = self.members.get(relpath)
        if info is None:
            return None
        if not relpath.endswith(READ_SUFFIXES):
            return b""
        return self._inflate(relpath, info)

    def read_member(self, relpath: str) -> bytes | None:
        info = self.members.get(relpath)
        return None if info is None else self._inflate(relpath, info)

    def _inflate(self, relpath: str, info: zipfile.ZipInfo) -> bytes:
        limit = read_limit(relpath)
        if info.file_size > limit:  # a zip bomb is refused before a byte of it is inflated
            raise Unreadable(f"{describe_size(info.file_size)} uncompressed, over the {describe_size(limit)} "
                             "this tool reads")
        try:
            data = self._member_bytes(info, limit + 1)  # the sizes in the archive's directory can lie
        except DAMAGE as error:
            if self.cached and _discard(self.wheel):
                advice = "it was deleted from the cache: run again to download it anew"
            else:
                advice = "delete it and run again to download it anew"
            raise SourceError(f"{self.wheel}: {relpath} cannot be read from it ({error}); the file is damaged: "
                              f"{advice}") from None
        if len(data) > limit:
            raise Unreadable(f"over the {describe_size(limit)} this tool reads")
        return data

    def _member_bytes(self, info: zipfile.ZipInfo, most: int) -> bytes:
        """At most `most` bytes of a member, inflated straight from the archive file and checked
        against its CRC when whole: half the cost of zipfile's reader, which was most of what a
        search over the whole release cost. Raises one of DAMAGE for a damaged member."""
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED) or info.flag_bits & 0x1:
            with self.archive.open(info.filename) as member:  # what zipfile reads (or refuses) itself
                return member.read(most)
        stored = self._stored_bytes(info)
        wanted = min(most, info.file_size)  # as zipfile, never past the size the directory gives
        if info.compress_type == zipfile.ZIP_STORED:
            data = stored[:wanted]
        else:
            inflater = zlib.decompressobj(-zlib.MAX_WBITS)
            data = inflater.decompress(stored, wanted)
            if len(data) < wanted and not inflater.eof:
                raise zlib.error(f"{info.filename} ends before its compressed data does")
        if len(data) < most and zlib.crc32(data) != info.CRC:
            raise zipfile.BadZipFile(f"Bad CRC-32 for file {info.filename!r}")
        return data

    def _stored_bytes(self, info: zipfile.ZipInfo) -> bytes:
        """A member's stored (compressed) bytes, read past its local header."""
        header = os.pread(self._fd, LOCAL_HEADER_BYTES, info.header_offset)
        if len(header) < LOCAL_HEADER_BYTES or header[:4] != b"PK\x03\x04":
            raise zipfile.BadZipFile(f"bad local header of {info.filename}")
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        start = info.header_offset + LOCAL_HEADER_BYTES + name_length + extra_length
        stored = os.pread(self._fd, info.compress_size, start)
        if len(stored) < info.compress_size:
            raise EOFError(f"{info.filename} is truncated")
        return stored

    def verify(self) -> bool:
        """Every file a run may read decompresses (its CRC holds) to the SHA-256 RECORD lists."""
        for relpath, info in self.members.items():
            if not relpath.endswith(READ_SUFFIXES) or info.file_size > read_limit(relpath):
                continue  # a member over the bound is never inflated (reading it says so)
            try:
                data = self._member_bytes(info, info.file_size + 1)
            except DAMAGE:
                return False
            if len(data) != info.file_size:
                return False
            encoded = self._recorded.get(relpath)
            if encoded is not None and hashlib.sha256(data).digest() != _decoded(encoded):
                return False
        return True

    def list_dir(self, relpath: str) -> list[str] | None:
        names = self.folders.get(relpath.strip("/"))
        return sorted(names) if names is not None else None

    def iter_files(self, under: str) -> Iterator[str]:
        """Depth first, each folder's files before its subfolders, in name order (as os.walk);
        folders are taken from a stack, not by recursion."""
        pending = [under.strip("/")]
        while pending:
            folder = pending.pop()
            names = sorted(self.folders.get(folder, ()))
            paths = [f"{folder}/{name}" if folder else name for name in names]
            yield from (path for path in paths if path in self.members)
            pending.extend(reversed([path for path in paths if path in self.folders]))

    def content_key(self, relpath: str) -> str:
        """The SHA-256 the wheel's RECORD lists for the file (what reading and hashing it gives,
        without decompressing it); read and hashed where RECORD says nothing usable."""
        encoded = self._recorded.get(relpath)
        digest = _decoded(encoded) if encoded is not None else None
        return digest.hex() if digest is not None else super().content_key(relpath)

    def _dist_info(self, name: str) -> str | None:
        """The text of a file in the wheel's sglang-*.dist-info folder, if there is one."""
        for folder in sorted(self.folders.get("", ())):
            if folder.startswith("sglang-") and folder.endswith(".dist-info"):
                return self.readable_text(f"{folder}/{name}")
        return None

    @cached_property
    def _recorded(self) -> dict[str, str]:
        """relpath -> urlsafe base64 SHA-256, from RECORD lines `path,sha256=<digest>,size`."""
        return {row[0]: row[1][len("sha256="):] for row in csv.reader(io.StringIO(self._dist_info("RECORD") or ""))
                if len(row) >= 2 and row[1].startswith("sha256=")}

    def metadata_text(self) -> str | None:
        return self._dist_info("METADATA")


def _opened_from_kept_directory(wheel: Path) -> WheelTree | None:
    """The stamped wheel's tree from its kept directory; None when none is kept for it as it
    is, or the one kept does not pass the archive's checks (the archive's own is read then)."""
    directory = _kept_directory(wheel)
    if directory is None:
        return None
    try:
        return WheelTree(wheel, cached=True, directory=directory)
    except (*DAMAGE, SourceError):
        return None


def _cached_tree(wheel: Path) -> WheelTree | None:
    """The cached wheel's tree, or None when it is damaged (it is then deleted)."""
    stamped = _stamped(wheel)
    if stamped and (tree := _opened_from_kept_directory(wheel)) is not None:
        return tree
    try:
        tree = WheelTree(wheel, cached=True)
        if stamped:
            _keep_directory(wheel, tree)
            return tree
        whole = tree.verify()
    except DAMAGE:
        tree, whole = None, False
    if whole:
        _stamp(wheel)
        _keep_directory(wheel, tree)
        return tree
    if tree is not None:
        tree.close()
    _discard(wheel)  # a read-only cache keeps it; the download then goes to a temporary folder
    return None


def index_release(version: str, cache: Path) -> Release:
    parsed = as_version(version)
    if parsed is None:
        raise SourceError(f"{shown(repr(version))} is not a version, a directory, or (with --sglang-repo) "
                          "a git ref")
    version = str(parsed)  # `v0.5.23`, a tag's spelling, as the index spells it
    wheels = cache / "wheels"
    wheel = _wheel_in(wheels, version) if foreign_reason(wheels) is None else None  # nor read from one
    tree = _cached_tree(wheel) if wheel is not None else None
    if tree is None:  # none cached, or a damaged one (now deleted): fetched again rather than trusted
        wheel = _download(version, wheels)
        try:
            tree = WheelTree(wheel, cached=True)
        except DAMAGE as error:
            raise SourceError(f"sglang {version}: the downloaded wheel {shown(wheel)} is unreadable ({error})") from None
        if _stamped(wheel):  # as downloaded into the cache, not to a temporary folder
            _keep_directory(wheel, tree)
    version = wheel.name.split("-")[1]  # as the release spells itself (`0.9` asked, 0.9.0 found)
    label = f"sglang {version} (package index)"
    check_is_sglang(tree, label)
    return Release(label=label, version=version, tree=tree, identity=PUBLISHED.format(version=version))
