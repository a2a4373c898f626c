"""Where an SGLang release comes from: the package index, a git ref of a clone, or a directory."""

from __future__ import annotations

from pathlib import Path

from sglang_contracts.infra.errors import SourceError, UsageError
from sglang_contracts.sources.base import Release, ReleaseTree
from sglang_contracts.sources.directory import directory_identity, directory_release
from sglang_contracts.sources.git import git_commit_identity, git_release
from sglang_contracts.sources.index import PUBLISHED, index_release

__all__ = ["Release", "ReleaseTree", "SourceError", "open_release", "pinned_release_spec"]


def _kind(spec: str, sglang_repo: Path | None) -> tuple[str, str]:
    """("dir" | "git" | "pypi", the spec without its prefix)."""
    kind, _, rest = spec.partition(":")
    if kind in {"dir", "git", "pypi"} and rest:
        return kind, rest
    try:
        is_dir = Path(spec).expanduser().is_dir()
    except (OSError, ValueError, RuntimeError):  # too long for a path, a NUL in it, ~nobody
        is_dir = False
    if is_dir:
        return "dir", spec
    return ("git" if sglang_repo is not None else "pypi"), spec


def pinned_release_spec(version: str, sglang_repo: Path | None) -> str:
    """The release a pin read from the project's files names: a published version (a ref of
    the clone with --sglang-repo), never a folder. Read as a path, a pull request could add a
    folder `0.5.22/sglang/` (or a link out of the project) and have it taken for the release."""
    return f"{'git' if sglang_repo is not None else 'pypi'}:{version}"


def open_release(spec: str, *, sglang_repo: Path | None, cache: Path) -> Release:
    """Turn `--old`/`--new` into a release.

    `dir:PATH` or an existing directory is read in place; `git:REF`, or any ref when
    `--sglang-repo` is given, is read from that clone; anything else is a version on the
    package index (`pypi:0.5.22` says so explicitly). An empty one is refused: read as a path
    it would be the current directory.
    """
    if not spec.strip():
        raise UsageError("the SGLang release is empty: give a version, a git ref with --sglang-repo, or a directory")
    kind, spec = _kind(spec, sglang_repo)
    if kind == "dir":
        return directory_release(Path(spec).expanduser())
    if kind == "git":
        if sglang_repo is None:
            raise SourceError(f"{spec}: a git ref needs --sglang-repo DIR")
        return git_release(sglang_repo, spec)
    return index_release(spec, cache)


def content_identity(spec: str, sglang_repo: Path | None) -> str | None:
    """What a release's content is, known without reading it: a published version's name, a
    git ref's commit, a directory's package files by path, size and modification time. None
    when it cannot be told (no such ref or folder): the run then opens the release and says why."""
    kind, rest = _kind(spec, sglang_repo)
    if kind == "pypi" and sglang_repo is None:
        return PUBLISHED.format(version=rest)
    if kind == "git" and sglang_repo is not None:
        return git_commit_identity(sglang_repo.expanduser(), rest)
    if kind == "dir":
        return directory_identity(Path(rest).expanduser())
    return None
