"""Migration by upstream example (migrations/): upstream's uses paired across two releases, the
edits generalised, what the findings say, which fixes are safe, and the cache per release pair."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import sglang_contracts.contracts  # noqa: F401  (registers the checks)
from sglang_contracts.check.runner import CheckOptions, run_check
from sglang_contracts.check.fixes import run_fix
from sglang_contracts.infra.cache import RecordCache
from sglang_contracts.migrations import pairing
from sglang_contracts.migrations.learn import Migrations, Question
from sglang_contracts.sources import open_release
from sglang_contracts.upstream.model import UpstreamModel
from tests.helpers import upstream_tree, write_tree

LINEAR_OLD = """
class RowParallelLinear:
    def __init__(self, input_size, output_size, reduce_results=True, tp_rank=None, tp_size=None):
        pass
"""
LINEAR_NEW = """
class RowParallelLinear:
    def __init__(self, input_size, output_size, reduce_results=True, *, parallel_group="tp"):
        pass
"""


def model_file(calls: list[str]) -> str:
    functions = "".join(f"\n\ndef layer_{index}(size, attn_tp_rank, attn_tp_size, rank, world):\n"
                        f"    return RowParallelLinear({call})\n" for index, call in enumerate(calls))
    return "from sglang.srt.layers.linear import RowParallelLinear\n" + functions


def releases(tmp_path: Path, old_calls: list[str], new_calls: list[str]) -> tuple[Path, Path]:
    old = upstream_tree(tmp_path / "old", {"sglang/srt/layers/linear.py": LINEAR_OLD,
                                           "sglang/srt/models/llama.py": model_file(old_calls)}, "0.1.0")
    new = upstream_tree(tmp_path / "new", {"sglang/srt/layers/linear.py": LINEAR_NEW,
                                           "sglang/srt/models/llama.py": model_file(new_calls)}, "0.2.0")
    return old, new


PROJECT = """
from sglang.srt.layers.linear import RowParallelLinear


def proj(size, attn_tp_rank, attn_tp_size):
    return RowParallelLinear(size, size, tp_rank=attn_tp_rank, tp_size=attn_tp_size)
"""


def checked(tmp_path: Path, old: Path, new: Path, project_text: str = PROJECT):
    project = write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n", "app/layers.py": project_text})
    options = CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1)
    return project, options, run_check([project], options).diagnostics


def test_the_message_counts_upstreams_calls_of_the_same_shape_and_names_one(tmp_path: Path) -> None:
    old, new = releases(tmp_path, ["size, size, tp_rank=attn_tp_rank, tp_size=attn_tp_size"] * 3,
                        ['size, size, parallel_group="attn_tp"'] * 3)
    _, _, found = checked(tmp_path, old, new)
    assert [d.code for d in found] == ["SGC201", "SGC201"]
    assert found[0].message.endswith('; upstream migrated 3 calls: tp_rank=attn_tp_rank, tp_size=attn_tp_size'
                                      ' -> parallel_group="attn_tp" (e.g. sglang/srt/models/llama.py:5)')
    assert found[0].data["fix_safety"] == "safe"


def test_a_keyword_both_signatures_take_is_no_part_of_the_learned_edit(tmp_path: Path) -> None:
    """Some of upstream's calls also began passing `reduce_results=False`, which the old
    signature took as well: a choice of those calls, not the migration, so the examples agree."""
    old, new = releases(tmp_path, ["size, size, tp_rank=attn_tp_rank, tp_size=attn_tp_size"] * 2,
                        ['size, size, parallel_group="attn_tp"', 'size, size, reduce_results=False, parallel_group="attn_tp"'])
    _, _, found = checked(tmp_path, old, new)
    assert "upstream migrated 2 calls: tp_rank=attn_tp_rank, tp_size=attn_tp_size -> parallel_group=" in found[0].message


def test_examples_that_disagree_are_listed_and_nothing_is_written_even_with_unsafe_fixes(tmp_path: Path) -> None:
    old, new = releases(tmp_path, ["size, size, tp_rank=attn_tp_rank, tp_size=attn_tp_size"] * 3,
                        ['size, size, parallel_group="attn_tp"', 'size, size, parallel_group="attn_tp"',
                         'size, size, parallel_group="tp"'])
    project, options, found = checked(tmp_path, old, new)
    assert "upstream rewrote 3 calls in 2 ways, so no edit is certain: " in found[0].message
    assert '-> parallel_group="attn_tp" (2, e.g. ' in found[0].message and '-> parallel_group="tp" (1, e.g. ' in found[0].message
    report = run_fix([project], options, unsafe=True)
    assert not report.fixed and (project / "app/layers.py").read_text() == PROJECT
    assert any("upstream's examples of this shape disagree" in note for note in report.notes)


def test_a_call_whose_arguments_differ_from_upstreams_is_rewritten_only_with_unsafe_fixes(tmp_path: Path) -> None:
    old, new = releases(tmp_path, ["size, size, tp_rank=attn_tp_rank, tp_size=attn_tp_size"],
                        ['size, size, parallel_group="attn_tp"'])
    other = PROJECT.replace("tp_rank=attn_tp_rank, tp_size=attn_tp_size", "tp_rank=rank_here, tp_size=attn_tp_size")
    project, options, found = checked(tmp_path, old, new, other)
    assert found[0].data["fix_safety"] == "unsafe"
    assert not run_fix([project], options).fixed  # safe fixes only
    report = run_fix([project], options, unsafe=True)
    assert report.fixed == 2  # both findings of the call, by one rewrite
    assert 'RowParallelLinear(size, size, parallel_group="attn_tp")' in (project / "app/layers.py").read_text()


def test_a_local_name_holding_something_else_than_upstreams_is_another_shape(tmp_path: Path) -> None:
    """grok's `attn_tp_rank` held the tensor-parallel rank; its call dropped the keywords."""
    old, new = releases(tmp_path, ["size, size, tp_rank=attn_tp_rank, tp_size=attn_tp_size"],
                        ['size, size, parallel_group="attn_tp"'])
    shadowed = PROJECT.replace("    return RowParallelLinear(", "    attn_tp_rank = 0\n    return RowParallelLinear(")
    _, _, found = checked(tmp_path, old, new, shadowed)
    assert found[0].data["fix_safety"] == "unsafe"  # the examples agree, the project's name differs


def test_new_arguments_naming_upstreams_own_function_are_never_written(tmp_path: Path) -> None:
    old, new = releases(tmp_path, ["size, size, tp_rank=rank, tp_size=world"], ["size, size, parallel_group=group"])
    other = PROJECT.replace("attn_tp_rank", "rank").replace("attn_tp_size", "world")
    project, options, found = checked(tmp_path, old, new, other)
    assert "-> parallel_group=group" in found[0].message and "fix_safety" not in found[0].data
    assert "group, of its own function" in found[0].data["unmigrated"]


def test_statements_pair_by_what_they_assign_within_a_changed_run() -> None:
    old = pairing.scoped_statements(ast.parse("def f():\n    a = g()\n    b = h(1)\n    c = k()\n    return c\n"))["f"]
    new = pairing.scoped_statements(ast.parse("def f():\n    b = h(2)\n    c = k(3)\n    return c\n"))["f"]
    assert pairing.aligned(old, new) == {1: 0, 2: 1, 3: 2}


def test_what_a_local_name_holds_is_its_one_plain_assignment_before_the_use() -> None:
    statements = pairing.scoped_statements(ast.parse(
        "def f(p):\n    a = g()\n    b, c = 0, 1\n    for d in x:\n        pass\n    a2 = 1\n    a2 = 2\n    use()\n"))["f"]
    use = len(statements) - 1
    assert pairing.definition(statements, use, "a") == "g()"
    assert pairing.definition(statements, use, "c") == "1"
    assert pairing.definition(statements, use, "d") == pairing.REASSIGNED
    assert pairing.definition(statements, use, "a2") == pairing.REASSIGNED
    assert pairing.definition(statements, use, "p") == pairing.UNASSIGNED


def test_what_is_learned_is_kept_per_release_pair(tmp_path: Path, monkeypatch) -> None:
    """A published release pair's migrations are learned once: a second run reads them."""
    old, new = releases(tmp_path, ["size, size, tp_rank=attn_tp_rank, tp_size=attn_tp_size"],
                        ['size, size, parallel_group="attn_tp"'])
    cache = RecordCache(tmp_path / "cache")
    owner = "sglang.srt.layers.linear.RowParallelLinear.__init__"

    def pair() -> Migrations:
        models = UpstreamModel.pair(open_release(str(old), sglang_repo=None, cache=tmp_path),
                                    open_release(str(new), sglang_repo=None, cache=tmp_path), cache)
        for model, identity in zip(models, ("old-identity", "new-identity")):
            monkeypatch.setattr(model.release, "identity", identity, raising=False)
        return Migrations(*models)

    first = pair()
    learned = first.calls(owner, owner).variants
    assert learned and learned[0].count == 1 and first.files_read == 2  # linear.py and llama.py
    second = pair()
    assert second.calls(owner, owner).variants == learned and second.files_read == 0


def test_every_question_a_run_expects_is_learned_in_one_pass_and_one_record(tmp_path: Path, monkeypatch) -> None:
    """The questions of a run are learned together: each file that names any of them is read
    once, and the record of the release pair holds them all (a second learner reads them back)."""
    old, new = releases(tmp_path, ["size, size, tp_rank=attn_tp_rank, tp_size=attn_tp_size"] * 2,
                        ['size, size, parallel_group="attn_tp"'] * 2)
    cache = RecordCache(tmp_path / "cache")
    owner = "sglang.srt.layers.linear.RowParallelLinear.__init__"
    questions = [Question("calls", (owner, owner)), Question("imports", ("sglang.srt.layers.linear",)),
                 Question("reads", ("sglang.srt.layers.linear.RowParallelLinear", "tp_size"))]
    models = UpstreamModel.pair(open_release(str(old), sglang_repo=None, cache=tmp_path),
                                open_release(str(new), sglang_repo=None, cache=tmp_path), cache)
    for model, identity in zip(models, ("old-identity", "new-identity")):
        monkeypatch.setattr(model.release, "identity", identity, raising=False)
    migrations = Migrations(*models)
    migrations.expect(questions)
    assert migrations.calls(owner, owner).variants[0].count == 2
    read = migrations.files_read
    assert read == 2  # llama.py and linear.py, each read once for the three questions
    assert [migrations.answer(question).unlearned for question in questions] == ["", "", ""]
    assert migrations.files_read == read
    again = Migrations(*models)
    assert [again.answer(q).variants for q in questions] == [migrations.answer(q).variants for q in questions]
    assert again.files_read == 0


def test_a_question_whose_files_exceed_the_budget_says_not_learned_budget(tmp_path: Path) -> None:
    """The budget is the number of the old release's files a pass reads: a question that does
    not fit is answered "not learned: budget", in the finding's message and its fix's note."""
    old, new = releases(tmp_path, ["size, size, tp_rank=attn_tp_rank, tp_size=attn_tp_size"] * 3,
                        ['size, size, parallel_group="attn_tp"'] * 3)
    monkeypatch_budget = pytest.MonkeyPatch()
    monkeypatch_budget.setattr("sglang_contracts.migrations.learn.FILE_BUDGET", 0)
    try:
        project, options, found = checked(tmp_path, old, new)
        assert [d.code for d in found] == ["SGC201", "SGC201"]
        assert found[0].message.endswith("; upstream's migration not learned: budget (upstream uses it in 2 changed "
                                         "files; a run reads at most 0, 0 of them taken by narrower questions)")
        report = run_fix([project], options, unsafe=True)
    finally:
        monkeypatch_budget.undo()
    assert not report.fixed and any("not learned: budget" in note for note in report.notes)


REQ_OLD = "class Req:\n    def __init__(self):\n        self.prefix_indices = []\n"
REQ_NEW = "class Req:\n    def __init__(self):\n        self.prefix_len = 0\n"


def scheduler(bodies: list[str]) -> str:
    functions = "".join(f"\n\ndef step_{index}(req: Req, joint_len):\n    {body}\n    return n\n"
                        for index, body in enumerate(bodies))
    return "from sglang.srt.managers.schedule_batch import Req\n" + functions


def test_a_read_upstream_rewrote_with_the_call_around_it_is_learned_whole_and_a_value_of_its_own_is_set_aside(
        tmp_path: Path) -> None:
    """0.5.22 rewrote `len(req.prefix_indices)` as `req.prefix_len` (23 times) and once as a
    local of its own function (`joint_len`): the read is learned with the call it is the one
    argument of, the local's example is set aside (an unsafe rewrite, since not every example
    agrees), and `--unsafe-fixes` writes the call as upstream's others."""
    old = upstream_tree(tmp_path / "old", {"sglang/srt/managers/schedule_batch.py": REQ_OLD,
                                           "sglang/srt/managers/scheduler.py": scheduler(["n = len(req.prefix_indices)"] * 3)},
                        "0.1.0")
    new = upstream_tree(tmp_path / "new", {"sglang/srt/managers/schedule_batch.py": REQ_NEW,
                                           "sglang/srt/managers/scheduler.py": scheduler(["n = req.prefix_len"] * 2 + ["n = joint_len"])},
                        "0.2.0")
    text = "from sglang.srt.managers.schedule_batch import Req\n\n\ndef cached(req: Req) -> int:\n    return len(req.prefix_indices)\n"
    project, options, found = checked(tmp_path, old, new, text)
    (finding,) = [d for d in found if d.code == "SGC321"]
    assert finding.message.endswith("; upstream migrated 2 reads: len(req.prefix_indices) -> req.prefix_len (e.g. "
                                    "sglang/srt/managers/scheduler.py:5); 1 read used a value of its own function "
                                    "instead (len(req.prefix_indices) -> joint_len, e.g. sglang/srt/managers/scheduler.py:15)")
    assert finding.data["fix_safety"] == "unsafe"
    assert not run_fix([project], options, unsafe=False).fixed
    run_fix([project], options, unsafe=True)
    assert (project / "app" / "layers.py").read_text().splitlines()[-1] == "    return req.prefix_len"


def scheduler_releases(tmp_path: Path, req: tuple[str, str], bodies: tuple[list[str], list[str]]) -> tuple[Path, Path]:
    """Two releases of `Req` (old, new text) and of a scheduler whose functions' bodies upstream
    rewrote (old, new bodies)."""
    return tuple(upstream_tree(tmp_path / side, {"sglang/srt/managers/schedule_batch.py": text,
                                                 "sglang/srt/managers/scheduler.py": scheduler(body)}, version)
                 for side, text, body, version in zip(("old", "new"), req, bodies, ("0.1.0", "0.2.0")))


RANGE_OLD = ("class Range:\n    def __init__(self, start, end):\n        self.start, self.end = start, end\n\n\n"
             "class Req:\n    def __init__(self):\n        self.extend_range = Range(0, 0)\n")
RANGE_NEW = "class Req:\n    def __init__(self):\n        self.extend_end = 0\n"


def test_a_read_through_a_chain_receiver_matches_the_pattern_its_attributes_make(tmp_path: Path) -> None:
    """`data.req.extend_range.end` is upstream's `req.extend_range.end` read on another receiver:
    trying the pattern at the chain's first level (`data.req.extend_range`, which binds the
    receiver to `data` before it fails) must leave nothing bound for the level that matches."""
    old, new = scheduler_releases(tmp_path, (RANGE_OLD, RANGE_NEW),
                                  (["n = req.extend_range.end"] * 2, ["n = req.extend_end"] * 2))
    text = ("from sglang.srt.managers.schedule_batch import Req\n\n\nclass Data:\n    req: Req\n\n\n"
            "def end(data: Data) -> int:\n    return data.req.extend_range.end\n")
    project, options, found = checked(tmp_path, old, new, text)
    (finding,) = [d for d in found if d.code == "SGC321"]
    assert finding.message.endswith("; upstream migrated 2 reads: req.extend_range.end -> req.extend_end "
                                    "(e.g. sglang/srt/managers/scheduler.py:5)")
    assert finding.data["fix_safety"] == "safe"
    run_fix([project], options)
    assert (project / "app" / "layers.py").read_text().splitlines()[-1] == "    return data.req.extend_end"


def test_an_untyped_read_named_like_the_class_gets_upstreams_rewrite_as_an_unsafe_fix(tmp_path: Path) -> None:
    """SGC322: `data.req.prefix_indices` on an untyped `req` is the read upstream rewrote in all
    its examples; the message says so, and the rewrite is written with --unsafe-fixes only,
    since the receiver's type is read from its name."""
    old, new = scheduler_releases(tmp_path, (REQ_OLD, REQ_NEW),
                                  (["n = len(req.prefix_indices)"] * 3, ["n = req.prefix_len"] * 3))
    text = "from sglang.srt.managers.schedule_batch import Req\n\n\ndef cached(data):\n    return len(data.req.prefix_indices)\n"
    project, options, found = checked(tmp_path, old, new, text)
    (finding,) = [d for d in found if d.code == "SGC322"]
    assert finding.message.endswith("; upstream migrated 3 reads: len(req.prefix_indices) -> req.prefix_len "
                                    "(e.g. sglang/srt/managers/scheduler.py:5)")
    assert finding.data["fix_safety"] == "unsafe"
    assert not run_fix([project], options).fixed
    assert (project / "app" / "layers.py").read_text() == text
    assert run_fix([project], options, unsafe=True).fixed == 1
    assert (project / "app" / "layers.py").read_text().splitlines()[-1] == "    return data.req.prefix_len"


LENGTH_OLD = ("class Range:\n    def __init__(self, start, end):\n        self.start, self.end = start, end\n\n"
              "    @property\n    def length(self) -> int:\n        return self.end - self.start\n\n\n"
              "class Req:\n    def __init__(self):\n        self.extend_range = Range(0, 0)\n")
LENGTH_NEW = ("class Req:\n    def __init__(self):\n        self.prefix_len = 0\n        self.extend_end = 0\n\n"
              "    @property\n    def extend_len(self) -> int:\n        return self.extend_end - self.prefix_len\n")


@pytest.mark.parametrize(("declared", "written"), [("int", "    return req.extend_len"),
                                                   ("float", "    return int(req.extend_len)")])
def test_a_conversion_to_the_type_the_new_release_declares_is_dropped_with_the_read(
        tmp_path: Path, declared: str, written: str) -> None:
    """`int(req.extend_range.length)` -> `req.extend_len` where 0.2.0 declares `extend_len` an
    int, as upstream reads it (unsafe: the declaration is upstream's word); the conversion stays
    where the declared type is another."""
    old, new = scheduler_releases(tmp_path, (LENGTH_OLD, LENGTH_NEW.replace("-> int", f"-> {declared}")),
                                  (["n = req.extend_range.length"] * 2, ["n = req.extend_len"] * 2))
    text = "from sglang.srt.managers.schedule_batch import Req\n\n\ndef extent(req: Req) -> int:\n    return int(req.extend_range.length)\n"
    project, options, found = checked(tmp_path, old, new, text)
    (finding,) = [d for d in found if d.code == "SGC321"]
    dropped = declared == "int"
    assert finding.message.endswith("sglang 0.2.0 declares extend_len int") == dropped
    assert finding.data["fix_safety"] == ("unsafe" if dropped else "safe")
    run_fix([project], options, unsafe=True)
    assert (project / "app" / "layers.py").read_text().splitlines()[-1] == written
