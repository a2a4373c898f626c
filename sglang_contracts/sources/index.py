"""A released version from the package index: downloaded once with pip, read in place.

pip does the download, so the user's own index configuration (mirrors, credentials,
proxies) is honoured. The wheel stays in the cache, so a second run is offline. It is never
unpacked: a run reads the few hundred modules the project's contracts reach straight from
the archive (unpacking all 4,700 files cost 1.6 s of CPU per release).
"""

from __future__ import annotations

import base64
import csv
import io
import subprocess
import sys
import tempfile
import zipfile
import zlib
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Iterator

from packaging.version import InvalidVersion, Version

from sglang_contracts import progress
from sglang_contracts.errors import SourceError
from sglang_contracts.infra.files import Unreadable, describe_size
from sglang_contracts.sources.base import Release, ReleaseTree, check_is_sglang, read_limit

PUBLISHED = "pypi:sglang=={version}"  # a published release's identity: its content can never change
# Only these are read; every other member (compiled extensions, CUDA sources, data) reads
# as empty, so its name still exists for the model (an extension module is a module).
READ_SUFFIXES = (".py", ".pyi", ".typed", "METADATA", "RECORD", "WHEEL", "entry_points.txt")


def _wheel_in(folder: Path, version: str) -> Path | None:
    wheels = sorted(folder.glob(f"sglang-{version}-*.whl")) if folder.is_dir() else []
    return wheels[0] if wheels else None


UNREACHABLE_MARKERS = ("NewConnectionError", "Could not fetch URL", "ConnectTimeout", "ReadTimeout",
                       "Name or service not known", "Temporary failure in name resolution",
                       "Connection refused", "Network is unreachable", "ProxyError")


def _pip_download(version: str, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest, prefix=".download-") as tmp:
        command = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--disable-pip-version-check", "--quiet", "--dest", tmp, f"sglang=={version}",
        ]
        result = subprocess.run(command, capture_output=True, text=True)
        wheel = _wheel_in(Path(tmp), version)
        if result.returncode != 0 or wheel is None:
            raise SourceError(_explain_pip_failure(version, result.stderr))
        final = dest / wheel.name
        wheel.replace(final)
        return final


def _explain_pip_failure(version: str, stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if not line.startswith("WARNING")]
    detail = errors[-1] if errors else "pip gave no reason"
    # pip names connection failures only in its retry warnings, and not at all with no retries.
    unreachable = any(marker in line for line in lines for marker in UNREACHABLE_MARKERS)
    if any("No matching distribution" in line or "Could not find a version" in line for line in errors):
        if unreachable or any("(from versions: none)" in line for line in errors):
            return (f"sglang {version}: the package index could not be reached (or lists no sglang release) "
                    f"and no cached copy exists ({detail})")
        return f"sglang {version}: no such release on the package index ({detail})"
    if unreachable:
        return f"sglang {version}: the package index could not be reached and no cached copy exists ({detail})"
    return f"sglang {version}: download failed ({detail})"


def _safe_member(name: str) -> bool:
    path = PurePosixPath(name.replace("\\", "/"))
    return not path.is_absolute() and ".." not in path.parts and not (path.parts and ":" in path.parts[0])


class WheelTree(ReleaseTree):
    """The files of a wheel, read from the archive itself."""

    def __init__(self, wheel: Path) -> None:
        self.archive = zipfile.ZipFile(wheel)  # BadZipFile for a truncated or corrupt download
        self.members: dict[str, zipfile.ZipInfo] = {}
        self.folders: dict[str, set[str]] = {}
        for info in self.archive.infolist():
            if not _safe_member(info.filename):
                raise SourceError(f"{wheel.name}: refusing unsafe archive member {info.filename!r}")
            if (info.external_attr >> 16) & 0o170000 == 0o120000:
                raise SourceError(f"{wheel.name}: refusing symbolic link member {info.filename!r}")
            if info.is_dir():
                continue
            self.members[info.filename] = info
            parts = info.filename.split("/")
            for depth in range(len(parts)):
                self.folders.setdefault("/".join(parts[:depth]), set()).add(parts[depth])
        self.wheel = wheel

    def read_bytes(self, relpath: str) -> bytes | None:
        info = self.members.get(relpath)
        if info is None:
            return None
        if not relpath.endswith(READ_SUFFIXES):
            return b""
        limit = read_limit(relpath)
        if info.file_size > limit:  # a zip bomb is refused before a byte of it is inflated
            raise Unreadable(f"{describe_size(info.file_size)} uncompressed, over the {describe_size(limit)} "
                             "this tool reads")
        try:
            with self.archive.open(info) as member:
                data = member.read(limit + 1)  # the sizes in the archive's directory can lie
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError) as error:
            raise SourceError(f"{self.wheel}: {relpath} cannot be read from it ({error}); the file is damaged: "
                              "delete it and run again to download it anew") from None
        if len(data) > limit:
            raise Unreadable(f"over the {describe_size(limit)} this tool reads")
        return data

    def list_dir(self, relpath: str) -> list[str] | None:
        names = self.folders.get(relpath.strip("/"))
        return sorted(names) if names is not None else None

    def iter_files(self, under: str) -> Iterator[str]:
        """Depth first, each folder's files before its subfolders, in name order (as os.walk)."""
        folder = under.strip("/")
        names = sorted(self.folders.get(folder, ()))
        paths = [f"{folder}/{name}" if folder else name for name in names]
        yield from (path for path in paths if path in self.members)
        for path in paths:
            if path in self.folders:
                yield from self.iter_files(path)

    def content_key(self, relpath: str) -> str:
        """The SHA-256 the wheel's RECORD lists for the file (what reading and hashing it gives,
        without decompressing it); read and hashed where RECORD says nothing usable."""
        encoded = self._recorded.get(relpath)
        if encoded is not None:
            try:
                digest = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
            except ValueError:  # binascii.Error
                digest = b""
            if len(digest) == 32:  # anything else is a malformed entry
                return digest.hex()
        return super().content_key(relpath)

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


def index_release(version: str, cache: Path) -> Release:
    try:
        Version(version)
    except InvalidVersion:
        raise SourceError(f"{version!r} is not a version, a directory, or (with --sglang-repo) a git ref") from None
    wheels = cache / "wheels"
    wheel = _wheel_in(wheels, version)
    if wheel is None:
        with progress.task(f"Downloading sglang {version}"):
            wheel = _pip_download(version, wheels)
    try:
        tree = WheelTree(wheel)
    except (zipfile.BadZipFile, OSError, EOFError):
        # A truncated or corrupt cached wheel: fetch it again once rather than trust it.
        wheel.unlink(missing_ok=True)
        try:
            tree = WheelTree(_pip_download(version, wheels))
        except (zipfile.BadZipFile, EOFError) as error:
            raise SourceError(f"sglang {version}: the downloaded wheel is unreadable ({error})") from None
    label = f"sglang {version} (package index)"
    check_is_sglang(tree, label)
    return Release(label=label, version=version, tree=tree, identity=PUBLISHED.format(version=version))
