"""The upstream model's whole-release searches, and their cache."""

from __future__ import annotations

from pathlib import Path

from sglang_contracts.cache import JsonCache
from sglang_contracts.sources.base import Release
from sglang_contracts.sources.directory import DirectoryTree
from sglang_contracts.upstream.model import UpstreamModel


def release_at(root: Path, identity: str | None) -> Release:
    for relpath, text in {"sglang/__init__.py": "", "sglang/srt/layers/norm.py": "def rmsnorm(x):\n    return x\n"}.items():
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_text(text)
    return Release("sglang (test)", "0.1.0", DirectoryTree(root), identity=identity)


def test_definitions_are_cached_only_for_releases_that_cannot_change(tmp_path: Path) -> None:
    cache = JsonCache(tmp_path / "cache")
    for identity, survives in (("pypi:sglang==0.1.0", True), (None, False)):
        root = tmp_path / str(identity).replace(":", "_")
        release = release_at(root, identity)
        assert UpstreamModel(release, cache).find_definitions({"rmsnorm"}) == {"rmsnorm": ["sglang.srt.layers.norm"]}
        (root / "sglang/srt/layers/norm.py").write_text("def other(x):\n    return x\n")
        again = UpstreamModel(release, cache).find_definitions({"rmsnorm"})
        assert (again == {"rmsnorm": ["sglang.srt.layers.norm"]}) == survives
