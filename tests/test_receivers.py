"""Where receiver types come from (project/scopes.py) and the facts' cache round trip."""

from __future__ import annotations

import pytest

import json

from sglang_contracts.project.facts import FileFacts
from sglang_contracts.project.scanner import scan_source

SOURCE = '''
from typing import Optional, TYPE_CHECKING

from sglang.srt.managers.schedule_batch import Req, ScheduleBatch

if TYPE_CHECKING:
    from sglang.srt.model_executor.model_runner import ModelRunner


class Stage:
    runner: "ModelRunner"

    def __init__(self, worker: Optional["ModelRunner"], batch: ScheduleBatch | None) -> None:
        self.worker = worker
        self.batch = batch
        self.count = 0

    def step(self, req: Req | None, other):
        built = ScheduleBatch([req])
        alias = self.batch
        for item in self.batch.reqs:
            item.rid
        reused = Req("a")
        reused = other
        return req.rid, built.reqs, alias.reqs, self.worker.tp_group, reused.rid, other.rid


def free(req: "Req"):
    return req.rid
'''


def receivers(facts: FileFacts) -> dict[str, set[tuple]]:
    found: dict[str, set[tuple]] = {}
    for read in facts.reads:
        found.setdefault(read.attr, set()).add((read.receiver.types, read.receiver.attrs))
    return found


def test_types_come_from_annotations_constructors_chains_and_loops() -> None:
    facts = scan_source("app/stage.py", "app.stage", SOURCE)
    found = receivers(facts)
    assert (("T:Req",), ()) in found["rid"]  # `Req | None` and the string annotation "Req"
    assert (("R:ScheduleBatch",), ()) in found["reqs"]  # built = ScheduleBatch(...)
    assert (("P:S:Stage|batch",), ()) in found["reqs"]  # alias = self.batch
    assert (("E:S:Stage|batch.reqs",), ()) in found["rid"]  # for item in self.batch.reqs
    assert (("S:Stage",), ("worker",)) in found["tp_group"]
    # `reused` is rebound to an untyped value and `other` is never typed: neither is judged.
    assert found["rid"] == {(("T:Req",), ()), (("E:S:Stage|batch.reqs",), ())}
    (stage,) = facts.classes
    attr_types = dict(stage.attr_types)
    assert attr_types["runner"] == ("T:ModelRunner",)
    assert attr_types["worker"] == ("T:ModelRunner",)  # through the annotated parameter
    assert attr_types["batch"] == ("T:ScheduleBatch",)
    assert "count" in stage.provided and "count" not in attr_types


def test_facts_survive_the_cache_round_trip_exactly() -> None:
    facts = scan_source("app/stage.py", "app.stage", SOURCE)
    again = FileFacts.from_json(json.loads(json.dumps(facts.to_json())))
    assert again == facts
    assert isinstance(again.classes[0].provided, tuple) and isinstance(again.reads[0].receiver.types, tuple)


def test_nested_classes_count_as_provided_names() -> None:
    facts = scan_source("app/m.py", "app.m", "class Outer:\n    class Config:\n        pass\n\n    class Meta:\n        pass\n")
    (outer,) = facts.classes
    assert {"Config", "Meta"} <= set(outer.provided)


def test_a_scanner_failure_costs_one_file_not_the_run(monkeypatch) -> None:
    from sglang_contracts.infra.boundary import Problem
    from sglang_contracts.project import scanner

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(scanner, "_ClassSummary", broken)
    source = "import sglang.srt\n\nclass A:\n    pass\n"
    with pytest.raises(RuntimeError, match="boom"):  # debugging (the test suite): the traceback
        scan_source("app/m.py", "app.m", source)
    monkeypatch.delenv("SGLANG_CONTRACTS_DEBUG")
    facts = scan_source("app/m.py", "app.m", source)
    assert facts.problem == Problem("app/m.py", 1, 1, "scanning the file", "RuntimeError: boom", internal=True)
    assert facts.parse_error is None and facts.imports == [] and facts.classes == []


def test_match_statements_and_one_line_bodies_are_walked() -> None:
    source = ("from sglang.srt.managers.schedule_batch import Req\n\n"
              "def f(req: Req, mode):\n"
              "    match mode:\n"
              "        case 1:\n"
              "            other = Req('a')\n"
              "    if mode: alias = req\n"
              "    return other.rid, alias.rid\n")
    found = receivers(scan_source("app/m.py", "app.m", source))
    assert found["rid"] == {(("R:Req",), ()), (("T:Req",), ())}


def test_facts_about_third_party_names_are_not_kept_once_the_project_packages_are_known() -> None:
    source = ("import torch\nfrom torch import nn\n"
              "from sglang.srt.managers.schedule_batch import Req\nfrom app.util import helper\n\n"
              "class Block(nn.Module):\n    def forward(self, x: torch.Tensor):\n        return self.proj(x.shape)\n\n"
              "def f(req: Req):\n    torch.zeros(3)\n    helper(req)\n    return req.rid\n")
    everything = scan_source("app/m.py", "app.m", source)
    project_only = scan_source("app/m.py", "app.m", source, packages=("app",))
    assert {r.attr for r in everything.reads} >= {"proj", "shape", "rid"}
    assert {r.attr for r in project_only.reads} == {"rid"}  # nn.Module's self and torch.Tensor dropped
    assert {c.callee.types[0] for c in everything.calls} >= {"C:torch.zeros", "C:helper"}
    assert {c.callee.types[0] for c in project_only.calls} == {"C:helper"}  # the project's own call stays
