"""A release already on disk: an unpacked wheel, a site-packages, or a source checkout."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Iterator

from sglang_contracts.infra.errors import SourceError, shown
from sglang_contracts.infra.files import MAX_TEXT_BYTES, Unreadable, file_state, os_reason, read_limited, resolved
from sglang_contracts.sources.base import PACKAGE, Release, ReleaseTree, check_is_sglang, read_limit


NAME_MAX, PATH_MAX = 255, 4096  # Linux's, macOS's and the common file systems' limits


def _impossible(path: Path) -> bool:
    """A name no file can have (a NUL byte, a component longer than the system allows): a
    project's `from sglang.<300 characters> import y` asks for one. No such file, not an error."""
    text = os.fspath(path)
    if "\0" in text:
        return True
    return any(len(os.fsencode(part)) > NAME_MAX for part in Path(text).parts) or len(os.fsencode(text)) >= PATH_MAX


class DirectoryTree(ReleaseTree):
    """A release on disk. Only regular files are read (a link is followed to one), each under
    its bound and never blocking: a FIFO named `x.py`, a link to /dev/zero or a file nobody may
    read raises Unreadable. A folder that cannot be listed is recorded (`unlisted`), not absent:
    its modules are reported as unreadable, not as gone from the release."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._unlisted: dict[str, str] = {}  # relpath -> why it could not be listed
        # What its files must lie in: the package where it really is (a Nix-style site-packages
        # links each package's folder into a store), never a file a link leads out of it to.
        self._package = os.path.realpath(root / PACKAGE)

    def read_bytes(self, relpath: str) -> bytes | None:
        path = self.root / relpath
        if _impossible(path):
            return None
        try:
            info = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            if os.path.islink(path):
                raise Unreadable("a dangling symbolic link") from None
            return None
        except OSError as error:  # a folder on the way that may not be searched, a link loop
            raise Unreadable(os_reason(error)) from None
        if stat.S_ISDIR(info.st_mode):
            return None
        within = self._package if relpath.startswith(PACKAGE + "/") else self.root
        return read_limited(path, read_limit(relpath), within=within, within_what="the release")

    def list_dir(self, relpath: str) -> list[str] | None:
        if _impossible(self.root / relpath):
            return None
        try:
            return sorted(os.listdir(self.root / relpath))
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as error:
            self._unlisted[relpath.strip("/")] = os_reason(error)
            return None

    def unlisted(self, relpath: str) -> str | None:
        return self._unlisted.get(relpath.strip("/"))

    def iter_files(self, under: str) -> Iterator[str]:
        """os.walk, which does not follow links to folders: a cycle of links cannot loop."""
        base = self.root / under

        def skipped(error: OSError) -> None:
            if not isinstance(error, (FileNotFoundError, NotADirectoryError)) and error.filename is not None:
                folder = Path(os.fsdecode(error.filename))
                try:
                    self._unlisted[folder.relative_to(self.root).as_posix()] = os_reason(error)
                except ValueError:
                    pass

        for folder, dirs, files in os.walk(base, onerror=skipped):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            rel = Path(folder).relative_to(self.root).as_posix()
            for name in sorted(files):
                yield f"{rel}/{name}"

    def metadata_text(self) -> str | None:
        candidates = [dist_info / "METADATA" for dist_info in sorted(self.root.glob("sglang-*.dist-info"))]
        for path in [*candidates, self.root / "pyproject.toml"]:
            try:
                return read_limited(path, MAX_TEXT_BYTES, within=self.root, within_what="the release").decode("utf-8", "replace")
            except Unreadable:
                continue  # missing, a folder, or unreadable: the version comes from the package then
        return None


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
        text = tree.readable_text(f"{PACKAGE}/{module}") or ""
        match = re.search(r"""^__version__\s*(?::\s*str\s*)?=\s*(?:version\s*=\s*)?["']([^"']+)["']""", text, re.M)
        if match:
            return match.group(1)
    return None


def directory_identity(path: Path) -> str | None:
    """The package files of a release on disk (path and file_state) and its
    metadata, as one digest: any edit below sglang/ changes it. None for no release there."""
    try:
        root = find_package_root(resolved(path))
    except (SourceError, OSError, ValueError):
        return None
    digest = hashlib.sha256(os.fsencode(root))
    for folder, dirs, files in os.walk(root / PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            try:
                status = os.stat(os.path.join(folder, name))
            except OSError:
                continue
            digest.update(os.fsencode(os.path.join(folder, name)) + f"\0{file_state(status)}\n".encode())
    for metadata in [*sorted(root.glob("sglang-*.dist-info/METADATA")), root / "pyproject.toml"]:
        try:
            digest.update(read_limited(metadata, MAX_TEXT_BYTES))
        except Unreadable:
            continue
    return f"dir:{digest.hexdigest()}"


def directory_release(path: Path) -> Release:
    try:
        if not path.is_dir():
            raise SourceError(f"{shown(path)}: not a directory")
        root = find_package_root(resolved(path))
    except (OSError, ValueError) as error:  # a name too long for the system, a NUL in it
        raise SourceError(f"{shown(path)}: cannot be read ({getattr(error, 'strerror', None) or error})") from None
    tree = DirectoryTree(root)
    label = f"sglang at {path}"
    check_is_sglang(tree, label)
    # Messages say "sglang {version}", or "sglang {path}" when the tree does not tell its version.
    return Release(label=label, version=version_from_tree(tree), tree=tree, name=str(path))
