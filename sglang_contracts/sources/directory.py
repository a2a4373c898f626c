"""A release already on disk: an unpacked wheel, a site-packages, or a source checkout."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from sglang_contracts.errors import SourceError, shown
from sglang_contracts.sources.base import PACKAGE, Release, ReleaseTree, check_is_sglang


class DirectoryTree(ReleaseTree):
    def __init__(self, root: Path) -> None:
        self.root = root

    def read_bytes(self, relpath: str) -> bytes | None:
        try:
            return (self.root / relpath).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def list_dir(self, relpath: str) -> list[str] | None:
        try:
            return sorted(os.listdir(self.root / relpath))
        except (FileNotFoundError, NotADirectoryError):
            return None

    def iter_files(self, under: str) -> Iterator[str]:
        base = self.root / under
        for folder, dirs, files in os.walk(base):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            rel = Path(folder).relative_to(self.root).as_posix()
            for name in sorted(files):
                yield f"{rel}/{name}"

    def metadata_text(self) -> str | None:
        for dist_info in sorted(self.root.glob("sglang-*.dist-info")):
            metadata = dist_info / "METADATA"
            if metadata.is_file():
                return metadata.read_text(errors="replace")
        pyproject = self.root / "pyproject.toml"
        return pyproject.read_text(errors="replace") if pyproject.is_file() else None


def find_package_root(path: Path) -> Path:
    """Accept the folder holding sglang/, sglang/ itself, or a source checkout (python/sglang)."""
    for candidate in (path, path / "python", path.parent):
        if (candidate / PACKAGE / "__init__.py").is_file():
            return candidate
    raise SourceError(f"{shown(path)}: no sglang package found here (looked for sglang/__init__.py and python/sglang/)")


def version_from_tree(tree: ReleaseTree) -> str | None:
    """The release's version from its metadata, or a literal `__version__` in the package."""
    import re

    metadata = tree.metadata_text() or ""
    match = re.search(r"^Version:\s*(\S+)", metadata, re.M)
    if match:
        return match.group(1)
    for module in ("_version.py", "version.py"):
        text = tree.read_text(f"{PACKAGE}/{module}") or ""
        match = re.search(r"""^__version__\s*(?::\s*str\s*)?=\s*(?:version\s*=\s*)?["']([^"']+)["']""", text, re.M)
        if match:
            return match.group(1)
    return None


def directory_release(path: Path) -> Release:
    try:
        if not path.is_dir():
            raise SourceError(f"{shown(path)}: not a directory")
        root = find_package_root(path.resolve())
    except (OSError, ValueError) as error:  # a name too long for the system, a NUL in it
        raise SourceError(f"{shown(path)}: cannot be read ({getattr(error, 'strerror', None) or error})") from None
    tree = DirectoryTree(root)
    label = f"sglang at {path}"
    check_is_sglang(tree, label)
    # Messages say "sglang {version}", or "sglang {path}" when the tree does not tell its version.
    return Release(label=label, version=version_from_tree(tree), tree=tree, name=str(path))
