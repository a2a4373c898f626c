"""Citations of hand-copied upstream code (project/mirrors.py), and the real sglang-omni one."""

from __future__ import annotations

from pathlib import Path

from sglang_contracts.infra.cache import RecordCache
from sglang_contracts.project.index import build_index
from sglang_contracts.project.mirrors import mirror_citations


def cited(tmp_path: Path, source: str) -> list[tuple[str, str]]:
    (tmp_path / "mod.py").write_text(source)
    return [(c.target, c.kind) for c in mirror_citations(build_index(tmp_path, [tmp_path], RecordCache(None)))]


def test_the_three_written_forms_and_the_marker(tmp_path: Path) -> None:
    source = '''
# sglang-contracts: mirrors sglang.srt.layers.sampler.multinomial_with_seed
def a(): ...

def b():
    """Mirrors upstream Scheduler.__init__ (sglang/srt/managers/scheduler.py)."""

def c():
    # Clamp both ends like sglang's multinomial_with_seed: a uniform of exactly 0 ...
    # Ported from sglang.srt.layers.rotary_embedding.apply_rope, minus the cache.
    return 0
'''
    assert cited(tmp_path, source) == [
        ("sglang.srt.layers.sampler.multinomial_with_seed", "path"),
        ("sglang.srt.managers.scheduler.Scheduler.__init__", "path"),
        ("multinomial_with_seed", "name"),
        ("sglang.srt.layers.rotary_embedding.apply_rope", "path"),
    ]


def test_mentions_without_a_copy_word_right_before_them_are_not_citations(tmp_path: Path) -> None:
    source = '''
class Model:
    """Higgs Qwen3 model adapted for sglang.

    Composition over :class:`sglang.srt.models.qwen3.Qwen3ForCausalLM`, unlike a subclass.
    """
    # Unlike sglang's sampler, this never renormalises.
    x = "copied from sglang.srt.layers.sampler.top_k"  # a string, not a comment or docstring
'''
    assert cited(tmp_path, source) == []


def test_many_citations_of_one_object_diff_its_bodies_once(tmp_path: Path, check, monkeypatch) -> None:
    """35,000 comments citing one upstream object took 154 s and 1.4 GB: the body diff ran per
    comment. It runs once per cited object; every comment is still reported."""
    import shutil

    from sglang_contracts.contracts import mirrors
    from tests.helpers import PROJECT

    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    function = "sglang.srt.model_executor.model_runner.ModelRunner.load_model"
    cls = "sglang.srt.model_executor.model_runner.ModelRunner"
    (project / "demo_omni" / "many.py").write_text("".join(
        f"# sglang-contracts: mirrors {function}\ndef f{i}(): ...\n# sglang-contracts: mirrors {cls}\ndef g{i}(): ...\n"
        for i in range(300)))
    diffed: list[tuple[str, str]] = []
    real = mirrors.body_change

    def counted(old_model, old, new_model, new):
        diffed.append((old.owner, new.owner))
        return real(old_model, old, new_model, new)

    monkeypatch.setattr(mirrors, "body_change", counted)
    run = check("--select", "SGC706", "--no-cache", "demo_omni/many.py", cwd=project)
    assert run.status == 1
    assert len(run.lines) == 600 and all(": SGC706 " in line for line in run.lines)
    assert [line.split(":")[1] for line in run.lines] == [str(n) for n in range(1, 1201, 2)]
    assert len(diffed) == 2  # the method and the class, once each
