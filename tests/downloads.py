"""Real downstream releases from the package index, cached between runs (tests and benchmarks)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path


def download_sdist(name: str, version: str, cache: Path) -> Path:
    """A downstream project's release sdist, unpacked (cached; a second run is offline).

    Several processes may ask at once (the test session's workers share its cache): the archive
    is downloaded, and the tree unpacked, into a folder of the asking process's own, and each is
    moved into place whole; a process that finds the other's already there uses it."""
    target = cache / "test-projects" / f"{name}-{version}"
    marker = target / ".complete"
    if marker.is_file():
        return Path(marker.read_text())
    downloads = cache / "test-sdists"
    downloads.mkdir(parents=True, exist_ok=True)
    pattern = f"{name.replace('-', '_')}-{version}.tar.gz"
    archives = sorted(downloads.glob(pattern))
    if not archives:
        with tempfile.TemporaryDirectory(dir=downloads, prefix=".download-") as scratch:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--quiet",
                 "--disable-pip-version-check", "--dest", scratch, f"{name}=={version}"],
                check=True,
            )
            for archive in Path(scratch).glob(pattern):
                os.replace(archive, downloads / archive.name)
        archives = sorted(downloads.glob(pattern))
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-"))
    try:
        with tarfile.open(archives[0]) as archive:
            archive.extractall(scratch, filter="data")
        (root,) = [p for p in scratch.iterdir() if p.is_dir()]
        (scratch / ".complete").write_text(str(target / root.name))
        for attempt in range(2):
            try:
                os.rename(scratch, target)
                break
            except OSError:
                if marker.is_file():  # another process's, moved in first
                    break
                if attempt:
                    raise
                shutil.rmtree(target)  # left half unpacked by a process that unpacked in place
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return Path(marker.read_text())
