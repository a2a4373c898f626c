"""Real downstream releases from the package index, cached between runs (tests and benchmarks)."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

def download_sdist(name: str, version: str, cache: Path) -> Path:
    """A downstream project's release sdist, unpacked (cached; a second run is offline)."""
    target = cache / "test-projects" / f"{name}-{version}"
    marker = target / ".complete"
    if marker.is_file():
        return Path(marker.read_text())
    downloads = cache / "test-sdists"
    downloads.mkdir(parents=True, exist_ok=True)
    archives = sorted(downloads.glob(f"{name.replace('-', '_')}-{version}.tar.gz"))
    if not archives:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--quiet",
             "--disable-pip-version-check", "--dest", str(downloads), f"{name}=={version}"],
            check=True,
        )
        archives = sorted(downloads.glob(f"{name.replace('-', '_')}-{version}.tar.gz"))
    with tarfile.open(archives[0]) as archive:
        archive.extractall(target, filter="data")
    (root,) = [p for p in target.iterdir() if p.is_dir()]
    marker.write_text(str(root))
    return root
