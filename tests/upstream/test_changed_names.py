"""Which member names the bump changed on an upstream class (analysis/inference.py ChangedNames):
the answers of two releases whose content never changes are kept for the next process."""

from __future__ import annotations

from pathlib import Path

from sglang_contracts.analysis.inference import ChangedNames
from sglang_contracts.infra.cache import RecordCache
from sglang_contracts.sources.base import Release
from sglang_contracts.sources.directory import DirectoryTree
from sglang_contracts.upstream.model import UpstreamModel

OLD = """\
class Base:
    def pause(self):
        pass

class Worker(Base):
    def run(self, batch):
        pass

    def stop(self):
        pass
"""
NEW = """\
class Base:
    def pause(self, tag):
        pass

class Worker(Base):
    def run(self, batch):
        pass
"""


def release(root: Path, version: str, text: str, identity: str | None) -> Release:
    """The release at `root`, written there with `text` the first time."""
    for relpath, body in {"sglang/__init__.py": "", "sglang/srt/worker.py": text}.items():
        if not (root / relpath).exists():
            (root / relpath).parent.mkdir(parents=True, exist_ok=True)
            (root / relpath).write_text(body)
    return Release(f"sglang {version}", version, DirectoryTree(root), identity=identity)


def names_of(tmp_path: Path, cache: RecordCache, identities: tuple[str | None, str | None]) -> ChangedNames:
    old = release(tmp_path / "old", "0.1.0", OLD, identities[0])
    new = release(tmp_path / "new", "0.2.0", NEW, identities[1])
    return ChangedNames(UpstreamModel(old, cache), UpstreamModel(new, cache))


def answers(names: ChangedNames) -> tuple:
    origin = names.origin("sglang.srt.worker.Worker")
    return (origin, names.origin("sglang.srt.worker.absent"), names.changed(origin, "stop"),
            names.changed(origin, "pause"), names.changed(origin, "run"))


def test_published_releases_answers_are_kept_and_read_back_without_their_modules(tmp_path: Path) -> None:
    cache = RecordCache(tmp_path / "cache")
    first = names_of(tmp_path, cache, ("pypi:sglang==0.1.0", "pypi:sglang==0.2.0"))
    expected = ("sglang.srt.worker.Worker", None, True, True, False)
    assert answers(first) == expected
    first.keep()
    # Both releases' text changed under the same identities: only a kept answer can say the old things.
    (tmp_path / "old/sglang/srt/worker.py").write_text("class Worker:\n    pass\n")
    (tmp_path / "new/sglang/srt/worker.py").write_text("class Worker:\n    pass\n")
    again = names_of(tmp_path, RecordCache(tmp_path / "cache"), ("pypi:sglang==0.1.0", "pypi:sglang==0.2.0"))
    assert answers(again) == expected
    assert again.old._modules == {} and again.new._modules == {}  # nothing of either release was read


def test_a_directory_release_s_answers_are_never_kept(tmp_path: Path) -> None:
    cache = RecordCache(tmp_path / "cache")
    first = names_of(tmp_path, cache, (None, "pypi:sglang==0.2.0"))
    assert answers(first) == ("sglang.srt.worker.Worker", None, True, True, False)
    first.keep()
    (tmp_path / "old/sglang/srt/worker.py").write_text("class Worker:\n    def run(self, batch):\n        pass\n")
    again = names_of(tmp_path, cache, (None, "pypi:sglang==0.2.0"))
    assert answers(again)[2:] == (False, False, False)  # read from the edited directory


def test_two_processes_answers_are_merged_not_overwritten(tmp_path: Path) -> None:
    cache = RecordCache(tmp_path / "cache")
    identities = ("pypi:sglang==0.1.0", "pypi:sglang==0.2.0")
    one, other = names_of(tmp_path, cache, identities), names_of(tmp_path, cache, identities)
    origin = one.origin("sglang.srt.worker.Worker")
    assert one.changed(origin, "stop") and other.parameters_changed(other.origin("sglang.srt.worker.Base"), "pause")
    one.keep()
    other.keep()
    for relpath in ("old/sglang/srt/worker.py", "new/sglang/srt/worker.py"):
        (tmp_path / relpath).write_text("")
    third = names_of(tmp_path, cache, identities)
    assert third.lost("sglang.srt.worker.Worker") == frozenset({"stop"})
    assert third.parameters_changed("sglang.srt.worker.Base", "pause")
