"""The upstream model's whole-release searches, and their cache."""

from __future__ import annotations

from pathlib import Path

from sglang_contracts.infra.cache import JsonCache
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


def test_a_changed_search_does_not_read_the_old_search_s_answers(tmp_path: Path, monkeypatch) -> None:
    from sglang_contracts.upstream import model as model_module

    cache = JsonCache(tmp_path / "cache")
    release = release_at(tmp_path / "tree", "pypi:sglang==0.1.0")
    assert UpstreamModel(release, cache).whole_release_search("probe", lambda: ["first"]) == ["first"]
    assert UpstreamModel(release, cache).whole_release_search("probe", lambda: ["second"]) == ["first"]  # cached
    model_module._module_fingerprint.cache_clear()
    monkeypatch.setattr(model_module, "code_fingerprint", lambda *modules: "edited searcher")
    assert UpstreamModel(release, cache).whole_release_search("probe", lambda: ["second"]) == ["second"]
    model_module._module_fingerprint.cache_clear()
