"""A released version from the package index: downloaded once with pip, unpacked into the cache.

pip does the download, so the user's own index configuration (mirrors, credentials,
proxies) is honoured. The wheel and its unpacked tree stay in the cache; a second run
is offline.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from packaging.version import InvalidVersion, Version

from sglang_contracts import progress
from sglang_contracts.errors import SourceError
from sglang_contracts.sources.base import Release, check_is_sglang
from sglang_contracts.sources.directory import DirectoryTree

COMPLETE_MARKER = ".complete"
# Only these are read; every other member (compiled extensions, CUDA sources, data) is
# unpacked as an empty file, so its name still exists for the model (an extension module
# is a module) without writing ~50 MB of binaries per release.
READ_SUFFIXES = (".py", ".pyi", ".typed", "METADATA", "RECORD", "WHEEL", "entry_points.txt")


def _wheel_in(folder: Path, version: str) -> Path | None:
    wheels = sorted(folder.glob(f"sglang-{version}-*.whl")) if folder.is_dir() else []
    return wheels[0] if wheels else None


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
    lines = [line.strip() for line in stderr.splitlines() if line.strip() and not line.startswith("WARNING")]
    detail = lines[-1] if lines else "pip gave no reason"
    if any("No matching distribution" in line or "Could not find a version" in line for line in lines):
        if any("Could not fetch" in l or "connection" in l.lower() or "NewConnectionError" in l for l in lines):
            return f"sglang {version}: the package index could not be reached and no cached copy exists ({detail})"
        return f"sglang {version}: no such release on the package index ({detail})"
    return f"sglang {version}: download failed ({detail})"


def _safe_member(name: str) -> bool:
    path = PurePosixPath(name.replace("\\", "/"))
    return not path.is_absolute() and ".." not in path.parts and not (path.parts and ":" in path.parts[0])


def unpack_wheel(wheel: Path, target: Path) -> None:
    """Unpack into `target`, refusing members that would land outside it."""
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".unpack-"))
    try:
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                if not _safe_member(info.filename):
                    raise SourceError(f"{wheel.name}: refusing unsafe archive member {info.filename!r}")
                is_symlink = (info.external_attr >> 16) & 0o170000 == 0o120000
                if is_symlink:
                    raise SourceError(f"{wheel.name}: refusing symbolic link member {info.filename!r}")
            for info in archive.infolist():
                if info.is_dir():
                    continue
                if info.filename.endswith(READ_SUFFIXES):
                    archive.extract(info, staging)
                else:
                    placeholder = staging / info.filename
                    placeholder.parent.mkdir(parents=True, exist_ok=True)
                    placeholder.touch()
        (staging / COMPLETE_MARKER).write_text(hashlib.sha256(wheel.read_bytes()).hexdigest())
        shutil.rmtree(target, ignore_errors=True)
        staging.replace(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def index_release(version: str, cache: Path) -> Release:
    try:
        Version(version)
    except InvalidVersion:
        raise SourceError(f"{version!r} is not a version, a directory, or (with --sglang-repo) a git ref") from None
    wheels = cache / "wheels"
    unpacked = cache / "releases" / f"sglang-{version}"
    if not (unpacked / COMPLETE_MARKER).is_file():
        unpacked.parent.mkdir(parents=True, exist_ok=True)
        wheel = _wheel_in(wheels, version)
        if wheel is None:
            with progress.task(f"Downloading sglang {version}"):
                wheel = _pip_download(version, wheels)
        try:
            with progress.task(f"Unpacking sglang {version}"):
                unpack_wheel(wheel, unpacked)
        except (zipfile.BadZipFile, OSError, EOFError):
            # A truncated or corrupt cached wheel: fetch it again once rather than trust it.
            wheel.unlink(missing_ok=True)
            try:
                unpack_wheel(_pip_download(version, wheels), unpacked)
            except (zipfile.BadZipFile, EOFError) as error:
                raise SourceError(f"sglang {version}: the downloaded wheel is unreadable ({error})") from None
    tree = DirectoryTree(unpacked)
    label = f"sglang {version} (package index)"
    check_is_sglang(tree, label)
    return Release(label=label, version=version, tree=tree, identity=f"pypi:sglang=={version}")
