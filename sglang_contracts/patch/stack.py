"""The project's patch files against SGLang: which there are, found in the project tree."""

from __future__ import annotations

from pathlib import Path

from sglang_contracts.infra.boundary import read_project_text
from sglang_contracts.infra.errors import UsageError
from sglang_contracts.patch.patchfile import PATCH_SUFFIXES, PatchFile, parse_patch
from sglang_contracts.patch.release import targets_sglang
from sglang_contracts.project.index import walk_project


def sglang_patch_files(root: Path, named: list[str] | tuple[str, ...] = ()) -> dict[str, PatchFile]:
    """The project's patch files against SGLang, parsed, by relative path: every `.patch`/`.diff`
    that patches SGLang's package, and every file `named` (paths or globs relative to the root,
    from the `patch-files` setting), which is checked whatever its name or content."""
    root = root.resolve()
    found = {}
    for path in walk_project([root], lambda name: name.endswith(PATCH_SUFFIXES)):
        text = read_project_text(path, root, errors="surrogateescape")
        if text is None or "sglang/" not in text:
            continue
        patch = parse_patch(text)
        if targets_sglang(patch) or (patch.error and "python/sglang/" in text):
            found[path.relative_to(root).as_posix()] = patch
    for pattern in named:
        matches = sorted(p for p in root.glob(pattern) if not p.is_dir())
        if not matches:
            raise UsageError(f"patch-files: {pattern} matches no file under {root}")
        for path in matches:
            text = read_project_text(path, root, errors="surrogateescape")
            if text is not None:
                found[path.relative_to(root).as_posix()] = parse_patch(text)
    return found
