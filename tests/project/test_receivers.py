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


# -- receivers no annotation types (issue 33): the scanner's facts, astroid's inference ---------

def test_a_module_level_function_bound_as_a_method_types_its_first_parameter() -> None:
    source = ("import types\nfrom sglang.srt.model_executor.model_runner import ModelRunner\n\n"
              "def forward(self, batch):\n    return self.graph_runner\n\n"
              "def hook(runner):\n    return runner.tp_group\n\n"
              "def free(runner):\n    return runner.tp_group\n\n"
              "class Stage:\n    def __init__(self, runner: ModelRunner):\n        self.runner = runner\n"
              "        self.hook = types.MethodType(hook, self.runner)\n\n"
              "ModelRunner.forward = forward\n")
    found = receivers(scan_source("app/m.py", "app.m", source + "ModelRunner.listener = on_event\n\n"
                                  "def on_event(*, key, **kwargs):\n    return key.name\n"))
    assert found["graph_runner"] == {(("T:ModelRunner",), ())}
    assert found["tp_group"] == {(("P:S:Stage|runner",), ())}  # `free` is bound nowhere: untyped


def test_what_a_call_returns_is_a_receiver_when_the_callee_is_imported_or_the_modules_own() -> None:
    source = ("from sglang.srt.utils import Adapter\n\n"
              "def make():\n    return Adapter()\n\n"
              "def f(x):\n    Adapter.create(x).pause(1)\n    make().region.tag\n    str(x).split()\n    x().pause()\n")
    facts = scan_source("app/m.py", "app.m", source)
    assert receivers(facts) == {"pause": {(("R:Adapter.create",), ())}, "region": {(("R:make",), ())},
                                "tag": {(("R:make",), ("region",))}}
    assert [(c.callee.types, c.callee.attrs, c.position.col) for c in facts.calls if c.callee.attrs] == [
        (("R:Adapter.create",), ("pause",), 23)]


def _inference(tmp_path, release: dict[str, str]):
    from sglang_contracts.analysis.inference import ReleaseInference
    from sglang_contracts.infra.cache import RecordCache
    from sglang_contracts.sources import open_release
    from sglang_contracts.upstream.model import UpstreamModel

    for relpath, text in {"sglang/__init__.py": "", **release}.items():
        (tmp_path / "release" / relpath).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "release" / relpath).write_text(text)
    model = UpstreamModel(open_release(str(tmp_path / "release"), sglang_repo=None, cache=tmp_path), RecordCache(None))
    return ReleaseInference(model)


def test_inference_reads_the_release_as_text_and_imports_nothing(tmp_path, monkeypatch) -> None:
    """An SGLang installed where Python would find it, and a module of the project's, are neither
    imported nor read: the release given is what the receiver is inferred against."""
    import sys
    from sglang_contracts.project.facts import Position

    installed = tmp_path / "site"
    (installed / "sglang" / "srt").mkdir(parents=True)
    (installed / "sglang" / "__init__.py").write_text("raise SystemExit('imported')\n")
    (installed / "sglang" / "srt" / "batch.py").write_text("class Installed:\n    pass\n"
                                                          "class Batch:\n    @classmethod\n    def new(cls):\n"
                                                          "        return Installed()\n")
    (installed / "side_effect_probe.py").write_text("raise SystemExit('imported')\n")
    monkeypatch.syspath_prepend(str(installed))
    inference = _inference(tmp_path, {"sglang/srt/batch.py": "class Batch:\n    @classmethod\n    def new(cls):\n"
                                                             "        batch = cls()\n        return batch\n"})
    text = ("import side_effect_probe\nfrom sglang.srt.batch import Batch\n\n"
            "def f():\n    batch = Batch.new()\n    return batch.run()\n")
    before = set(sys.modules)
    assert inference.classes_at("app.m", "app/m.py", text, Position(6, 18), "run") == ("sglang.srt.batch.Batch",)
    assert not {"sglang", "side_effect_probe"} & set(sys.modules) - before
    # a position with no such read, a file that does not parse: undecided, never an error
    assert inference.classes_at("app.m", "app/m.py", text, Position(6, 5), "run") is None
    assert inference.classes_at("app.m", "app/m.py", "def f(:\n", Position(1, 1), "run") is None


def test_inference_stops_at_its_budget_of_modules(tmp_path) -> None:
    from sglang_contracts.analysis.inference import MODULES_PER_SITE
    from sglang_contracts.project.facts import Position

    def chain(length: int) -> dict[str, str]:
        files = {f"sglang/srt/m{i}.py": f"from sglang.srt.m{i + 1} import make\n" for i in range(length)}
        files[f"sglang/srt/m{length}.py"] = "class Batch:\n    pass\n\ndef make():\n    return Batch()\n"
        return files

    text = "from sglang.srt.m0 import make\n\ndef f():\n    return make().run()\n"
    short = _inference(tmp_path / "short", chain(MODULES_PER_SITE - 2))
    assert short.classes_at("app.m", "app/m.py", text, Position(4, 19), "run") == (
        f"sglang.srt.m{MODULES_PER_SITE - 2}.Batch",)
    long = _inference(tmp_path / "long", chain(MODULES_PER_SITE + 5))
    assert long.classes_at("app.m", "app/m.py", text, Position(4, 19), "run") is None


def test_a_factorys_return_annotation_types_its_result() -> None:
    source = ("from typing import Optional\nfrom sglang.srt.model_executor.model_runner import ModelRunner\n\n"
              "def build(cfg) -> Optional[ModelRunner]:\n    return REGISTRY[cfg]\n\n"
              "class Stage:\n    @classmethod\n    def runner(cls) -> 'ModelRunner':\n        return REGISTRY[0]\n\n"
              "    def go(self):\n        r = Stage.runner()\n        return r.tp_rank, build(1).tp_size\n\n"
              "def unannotated():\n    return REGISTRY[0]\n\n"
              "def bare() -> ModelRunner:\n    return ModelRunner.__new__(ModelRunner)\n\n"
              "def f():\n    return unannotated().graph, bare().forward\n")
    found = receivers(scan_source("app/m.py", "app.m", source))
    assert found["tp_rank"] == found["tp_size"] == {(("T:ModelRunner",), ())}
    assert found["graph"] == {(("R:unannotated",), ())}  # astroid's to infer, where the bump changed `graph`
    assert found["forward"] == {(("R:bare",), ())}  # a bare build: SGC315 follows it by its builder


def test_a_file_of_many_sites_is_built_and_indexed_once_and_inferred_within_its_budget(tmp_path, monkeypatch) -> None:
    """Issue 38 D04: every `make().m` read of a member the bump removed was one inference that
    read the whole file's positions again (CPU per read grew with the file: 5,000 reads of a
    160 kB file, over 120 s). The file is indexed once, and past its budget a site is left
    undecided without inference, as a site astroid cannot decide is."""
    from sglang_contracts.analysis import inference as inference_module
    from sglang_contracts.project.facts import Position

    scans = []

    class CountedPositions(inference_module.SourcePositions):
        def __init__(self, text: str) -> None:
            scans.append(1)
            super().__init__(text)

    monkeypatch.setattr(inference_module, "SourcePositions", CountedPositions)
    budget = inference_module.SITES_PER_FILE
    inference = _inference(tmp_path, {"sglang/srt/a.py": "class C:\n    pass\n"})
    sites = budget + 20
    text = "from sglang.srt.a import C\n\ndef make():\n    return C()\n" + "".join(
        f"\ndef g{i}():\n    return make().m\n" for i in range(sites))
    found = [inference.classes_at("app.m", "app/m.py", text, Position(7 + 3 * i, 19), "m") for i in range(sites)]
    assert found == [("sglang.srt.a.C",)] * budget + [None] * 20
    assert len(scans) == 1 and inference.sites == budget and inference.over_budget == 20
    # another file has its own budget, and the run's bounds them all
    assert inference.classes_at("app.n", "app/n.py", text, Position(7, 19), "m") == ("sglang.srt.a.C",)
    monkeypatch.setattr(inference_module, "SITES_PER_RUN", inference.sites)
    assert inference.classes_at("app.o", "app/o.py", text, Position(7, 19), "m") is None


def test_the_trees_astroid_built_for_earlier_sites_are_freed(tmp_path) -> None:
    """sglang's own tree as the project grew by 330 MB while inferring: every module and
    project file astroid built stayed alive to the run's end, kept by astroid's memos keyed by
    nodes (its memo of guards is not bounded at all). A release keeps MODULES_KEPT modules
    built, and what it no longer keeps is freed, whatever astroid memoised of it."""
    import gc
    import weakref

    from sglang_contracts.analysis import inference as inference_module
    from sglang_contracts.project.facts import Position

    count = inference_module.MODULES_KEPT + 12
    inference = _inference(tmp_path, {f"sglang/srt/m{i}.py": (
        "class Batch:\n    def run(self, x):\n        if x is None:\n            return self\n        return x\n\n"
        "def make():\n    batch = Batch()\n    assert batch is not None\n    return batch\n") for i in range(count)})
    built = []
    for i in range(count):
        text = f"from sglang.srt.m{i} import make\n\ndef f():\n    return make().run\n"
        assert inference.classes_at(f"app.m{i}", f"app/m{i}.py", text, Position(4, 19), "run") == (
            f"sglang.srt.m{i}.Batch",)
        built.append(weakref.ref(inference.module(f"sglang.srt.m{i}")))
    gc.collect()
    alive = [i for i, tree in enumerate(built) if tree() is not None]
    assert alive == list(range(count - inference_module.MODULES_KEPT, count))


def _class_chain(length: int, sites: int = 1) -> str:
    """A project file: a chain of classes over an SGLang class, and reads of `deep().m`."""
    lines = ["from sglang.srt.a import C", "class K0(C):", "    pass"]
    for i in range(1, length):
        lines += [f"class K{i}(K{i - 1}):", "    pass"]
    lines += ["def deep():", f"    return K{length - 1}()"]
    for j in range(sites):
        lines += [f"def g{j}():", "    return deep().m"]
    return "\n".join(lines) + "\n"


def test_one_inference_is_stopped_inside_astroid_past_its_steps_or_its_time(tmp_path, monkeypatch) -> None:
    """Issue 38 D09: astroid's cost grows with the cube of a class chain (400 classes: 12 s a
    read), and the time limit was looked at only when a new module was reached, so it never
    stopped one. The limits are checked at every node astroid infers; a stopped site is undecided."""
    from sglang_contracts.analysis import inference as inference_module
    from sglang_contracts.project.facts import Position

    inference = _inference(tmp_path, {"sglang/srt/a.py": "class C:\n    def m(self):\n        pass\n"})
    short = _class_chain(3)
    assert inference.classes_at("app.m", "app/m.py", short, Position(11, 19), "m") == ("app.m.K2",)
    assert inference.stopped == 0 and 0 < inference.steps < 200

    monkeypatch.setattr(inference_module, "STEPS_PER_SITE", 2_000)
    chain = _class_chain(100)  # 10,600 steps unbounded
    before = inference.steps
    assert inference.classes_at("app.m", "app/m.py", chain, Position(205, 19), "m") is None
    assert inference.stopped == 1 and inference.steps - before <= 2_001

    monkeypatch.setattr(inference_module, "SECONDS_PER_SITE", 0.0)  # the time is up at once: stopped within 64 steps
    before = inference.steps
    assert inference.classes_at("app.n", "app/n.py", chain, Position(205, 19), "m") is None
    assert inference.stopped == 2 and inference.steps - before <= 64


def test_a_files_stopped_sites_spend_its_budget_of_steps_once(tmp_path, monkeypatch) -> None:
    from sglang_contracts.analysis import inference as inference_module
    from sglang_contracts.project.facts import Position

    monkeypatch.setattr(inference_module, "STEPS_PER_SITE", 2_000)
    monkeypatch.setattr(inference_module, "STEPS_PER_FILE", 5_000)
    inference = _inference(tmp_path, {"sglang/srt/a.py": "class C:\n    def m(self):\n        pass\n"})
    chain = _class_chain(100, sites=5)
    found = [inference.classes_at("app.m", "app/m.py", chain, Position(205 + 2 * j, 19), "m") for j in range(5)]
    assert found == [None] * 5 and inference.steps <= 5_003 and inference.sites == 3 and inference.over_budget == 2


def test_astroid_that_cannot_be_imported_is_said_once_not_silently_dropped(tmp_path, monkeypatch, capsys) -> None:
    """Issue 38: with astroid missing from the environment, every inference returned None
    (its ImportError was caught with astroid's own errors), and the breaks behind unannotated
    receivers went unreported with no word."""
    import sys
    from sglang_contracts.analysis import inference as inference_module
    from sglang_contracts.project.facts import Position

    monkeypatch.setattr(inference_module, "_UNUSABLE", [])
    inference = _inference(tmp_path, {"sglang/srt/a.py": "class C:\n    pass\n"})
    text = "from sglang.srt.a import C\n\ndef make():\n    return C()\n\ndef g():\n    return make().m\n"
    for name in [name for name in sys.modules if name == "astroid" or name.startswith("astroid.")]:
        monkeypatch.setitem(sys.modules, name, None)  # what an import finds when it cannot be imported
    assert inference.classes_at("app.m", "app/m.py", text, Position(7, 19), "m") is None
    assert inference.classes_at("app.m", "app/m.py", text, Position(7, 19), "m") is None
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sglang-contracts: note: astroid cannot be imported"), lines


def test_a_run_without_astroid_says_so_in_its_notes(tmp_path, monkeypatch) -> None:
    import importlib.util
    from pathlib import Path
    from sglang_contracts.check.runner import CheckOptions, run_check

    fixtures = Path(__file__).parents[2] / "fixtures"
    options = CheckOptions(old=str(fixtures / "upstream" / "old"), new=str(fixtures / "upstream" / "new"),
                           use_cache=False, workers=1)
    assert not [note for note in run_check([fixtures / "project"], options).notes if "astroid" in note]
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *rest: None if name == "astroid" else find_spec(name, *rest))
    (note,) = [note for note in run_check([fixtures / "project"], options).notes if "astroid" in note]
    assert note.startswith("astroid is not installed: receivers no annotation types are not inferred")


REBOUND = '''
import sglang.srt.a
from sglang.srt.b import helper

try:
    import sglang.srt.c as c
except ImportError:
    c = None


def given(sglang, helper):
    return sglang.srt.a.g, helper(1)


def made(build):
    sglang = build()
    return sglang.srt.a.g


def default(x=sglang.srt.a.d):
    return x


def nested(sglang):
    def inner():
        return sglang.srt.a.g
    return inner


pick = lambda sglang: sglang.srt.a.g
picks = [sglang.srt.a.g for sglang in ()]
keys = {sglang: sglang.srt.a.k for sglang in ()}


def read():
    return sglang.srt.a.r, helper(2), c.x


def case(value):
    match value:
        case sglang:
            return sglang.srt.a.g
'''


def test_a_name_a_scope_binds_itself_is_not_the_import_of_the_same_name() -> None:
    """A parameter, a local, a closure's variable, a lambda's parameter or a comprehension's
    target named like an import is not the imported module (campaign 9, R07): only chains and
    calls that reach the import are facts; a default is read outside the function, and an
    import with a fallback assignment stays the import's."""
    facts = scan_source("app/m.py", "app.m", REBOUND)
    chains = sorted(".".join((chain.root, *chain.attrs)) for chain in facts.attributes)
    assert chains == ["c.x", "sglang.srt.a.d", "sglang.srt.a.r"]
    assert [call.callee.types for call in facts.calls] == [("C:helper",)]
    assert ["helper(2)" in REBOUND.splitlines()[call.position.line - 1] for call in facts.calls] == [True]


# -- receivers typed outside functions (campaign 9, R11) ----------------------------------------

def _method_calls(facts: FileFacts) -> set[tuple[tuple[str, ...], tuple[str, ...], int]]:
    return {(c.callee.types, c.callee.attrs, c.position.line) for c in facts.calls if c.callee.attrs}


def test_a_receiver_built_or_annotated_at_module_level_is_typed_as_in_a_function() -> None:
    """A script's `__main__` block, an annotated module name, a module-level for and with body, and a
    class body type their receivers as a function body does."""
    source = ("from sglang.srt.a import C, D\n\n"
              "if __name__ == '__main__':\n    c = C()\n    c.m(q=1)\n"  # 5
              "annotated: D = make()\nannotated.m(q=1)\n"  # 7
              "for i in range(3):\n    looped = C()\n    looped.m(q=i)\n"  # 10
              "with open('f') as f:\n    held = C()\n    held.m(q=f)\n"  # 13
              "class K:\n    inner = C()\n    inner.m(q=1)\n    print(held.x)\n")  # 16, 17
    facts = scan_source("app/m.py", "app.m", source)
    assert _method_calls(facts) == {(("R:C",), ("m",), 5), (("T:D",), ("m",), 7), (("R:C",), ("m",), 10),
                                    (("R:C",), ("m",), 13), (("R:C",), ("m",), 16)}
    assert receivers(facts)["x"] == {(("R:C",), ())}  # a class body reads the module's names


def test_a_module_name_rebound_anywhere_to_something_untyped_has_no_type() -> None:
    """Poisoned as in a function: rebound at module level, rebound by a function through `global`,
    or bound untyped in the class body that reads it (the module's `c` is not what it reads)."""
    source = ("from sglang.srt.a import C\n\n"
              "c = C()\nc = c[0]\nc.m(q=1)\n"  # 5: rebound to an item of itself, untyped
              "g = C()\n\ndef reset():\n    global g\n    g = None\n\ng.m(q=1)\n"  # 12
              "h = C()\nclass K:\n    h = other()[0]\n    h.m(q=1)\n"  # 16
              "def f():\n    h.m(q=1)\n")  # 18: a function's global is not typed (left conservative)
    assert _method_calls(scan_source("app/m.py", "app.m", source)) == set()


# -- receivers bound by `:=`, unpacking, a conditional or a loop over a literal (campaign 10, R11) ----

def test_a_receiver_bound_by_walrus_unpacking_or_a_conditional_is_typed_in_every_body() -> None:
    """`:=` (in a condition, a comprehension), a tuple unpacked item by item (starred, nested),
    `a = b = C()`, `C() if x else D()` (either), a loop over a literal of constructor calls:
    typed as `c = C()` is, in a function, at module level and in a class body."""
    source = ("from sglang.srt.a import C, D\n\n"
              "def f(x, xs):\n"
              "    if (w := C()) is not None:\n        w.m(q=1)\n"  # 5
              "    a, (t, u), *rest, last = 1, (C(), 2), 3, 4, D()\n    t.m(q=1)\n    last.m(q=1)\n"  # 7, 8
              "    e = k = C() if x else D()\n    e.m(q=1)\n    k.m(q=1)\n"  # 10, 11
              "    n = C() if x else None\n    n.m(q=1)\n"  # 13
              "    for each in (C(), D()):\n        each.m(q=1)\n"  # 15
              "    [y for y in xs if (z := D())]\n    z.m(q=1)\n"  # 17
              "if (top := C()):\n    top.m(q=1)\n"  # 19
              "class K:\n    one, two = C(), D()\n    two.m(q=1)\n")  # 22
    facts = scan_source("app/m.py", "app.m", source)
    both = ("R:C", "R:D")
    assert _method_calls(facts) == {(("R:C",), ("m",), 5), (("R:C",), ("m",), 7), (("R:D",), ("m",), 8),
                                    (both, ("m",), 10), (both, ("m",), 11), (("R:C",), ("m",), 13),
                                    (both, ("m",), 15), (("R:D",), ("m",), 17), (("R:C",), ("m",), 19),
                                    (("R:D",), ("m",), 22)}
    n_read = next(read for read in scan_source("app/m.py", "app.m", source + "def g(x):\n    n = C() if x else None\n"
                                                "    return n.v\n").reads if read.attr == "v")
    assert n_read.nullable  # `C() if x else None` may be None, as `n = None` elsewhere says


def test_a_receiver_bound_by_a_boolean_operator_is_typed_by_its_operands() -> None:
    """Campaign 11, R04: `c = C() or None` and `c = cached or D()` were untyped (calls on them not
    judged) while `C() if x else None` was. Any operand may be the value: their types, None
    making it nullable; one operand of no known type leaves none."""
    source = ("from sglang.srt.a import C, D\n\n"
              "def f(x):\n"
              "    c = C() or None\n    c.m(q=1)\n"  # 5
              "    cached = C()\n    d = cached or D()\n    d.m(q=1)\n"  # 8
              "    e = x and C()\n    e.m(q=1)\n")  # 10
    assert _method_calls(scan_source("app/m.py", "app.m", source)) == {(("R:C",), ("m",), 5),
                                                                        (("R:C", "R:D"), ("m",), 8)}


def test_a_match_capture_of_a_class_pattern_is_typed_by_its_class() -> None:
    """Campaign 11, R04: `case C() as c:` left c untyped, so `c.m(q=1)` was not judged. The class
    pattern matches only C's instances: c is one, as if annotated `c: C`; so is a capture of an
    or-pattern whose alternatives all match C. Two classes (`(C() as h) | (D() as h)`), a bare
    capture, a capture of an attribute, or a name the body binds from an unknown value stay untyped."""
    source = ("from sglang.srt import a\nfrom sglang.srt.a import C, D\n\n"
              "def f(x):\n    match x:\n"
              "        case C() as c:\n            c.m(q=1)\n"  # 7
              "        case a.C(q=1) as d:\n            d.m(q=1)\n"  # 9
              "        case (C(q=1) | C(q=2)) as e:\n            e.m(q=1)\n"  # 11
              "        case [C(q=1) as g] | [C(q=2) as g]:\n            g.m(q=1)\n"  # 13
              "        case (C() as h) | (D() as h):\n            h.m(q=1)\n"  # 15
              "        case (C() | D()) as i:\n            i.m(q=1)\n"  # 17
              "        case C(q=j):\n            j.m(q=1)\n"  # 19
              "        case C():\n            k = x\n            k.m(q=1)\n"  # 22
              "        case l:\n            l.m(q=1)\n")  # 24
    assert _method_calls(scan_source("app/m.py", "app.m", source)) == {
        (("T:C",), ("m",), 7), (("T:a.C",), ("m",), 9), (("T:C",), ("m",), 11), (("T:C",), ("m",), 13)}


def test_a_match_capture_bound_untyped_in_another_case_has_no_type() -> None:
    """The rule stays: `case C() as c:` in one case and `case c:` in another leave c untyped."""
    source = ("from sglang.srt.a import C\n\n"
              "def f(x):\n    match x:\n"
              "        case C() as c:\n            c.m(q=1)\n"
              "        case c:\n            c.m(q=2)\n")
    assert _method_calls(scan_source("app/m.py", "app.m", source)) == set()


def test_a_name_rebound_by_walrus_unpacking_or_a_conditional_to_something_untyped_has_no_type() -> None:
    """The rule stays: one binding anywhere to something untyped (a `:=` of an unknown value, an
    item of an unknown tuple or a starred rest, a branch that is no constructor) leaves no type;
    a lambda's `:=` binds in the lambda, not the body around it."""
    source = ("from sglang.srt.a import C\n\n"
              "def f(x, pair):\n"
              "    w = C()\n    if (w := pair[0]):\n        w.m(q=1)\n"  # 6
              "    a, b = C(), C()\n    a, b = pair\n    a.m(q=1)\n"  # 9
              "    first, *rest = C(), C(), C()\n    rest.m(q=1)\n"  # 11
              "    e = C() if x else pair[1]\n    e.m(q=1)\n"  # 13
              "    for each in (C(), pair):\n        each.m(q=1)\n"  # 15
              "    kept = C()\n    again = lambda: (kept := pair)\n    kept.m(q=1)\n")  # 18
    assert _method_calls(scan_source("app/m.py", "app.m", source)) == {(("R:C",), ("m",), 18)}


# -- receivers bound by `with ... as` (campaign 12, R01) -----------------------------------------

def test_a_with_target_is_typed_as_what_the_managers_enter_returns() -> None:
    """`with C() as c:` bound c to nothing typed, so `c.m(q=1)` was never judged. c is what C's
    `__enter__` returns (`W:`), which the resolver takes only where that is the instance. An
    `async with`, a tuple target, a manager of no known type, or c bound untyped elsewhere
    leave none."""
    source = ("from sglang.srt.a import C\n\n"
              "async def f(x):\n"
              "    with C() as c, x as y:\n        c.m(q=1)\n        y.m(q=1)\n"  # 5, 6
              "    async with C() as a:\n        a.m(q=1)\n"  # 8
              "    with C() as (t, u):\n        t.m(q=1)\n"  # 10
              "    with C() as k:\n        k = x\n        k.m(q=1)\n")  # 13
    assert _method_calls(scan_source("app/m.py", "app.m", source)) == {(("W:R:C",), ("m",), 5)}


ENTERED_OLD = ("class C:\n    def m(self, q):\n        return q\n    def __enter__(self):\n        return self\n"
               "    def __exit__(self, *a):\n        pass\n\n"
               "class D(C):\n    def __enter__(self):\n        return self.m(1)\n")


@pytest.mark.parametrize("line, judged", [
    ("with C() as c:\n    c.m(q=1)\n", True),  # upstream's `__enter__` is `return self`
    ("with Mine() as c:\n    c.m(q=1)\n", True),  # the project's own is
    ("with D() as c:\n    c.m(q=1)\n", False),  # upstream's returns something else
    ("with Other() as c:\n    c.m(q=1)\n", False),  # the project's own returns something else
    # a bound method kept in a name, then called
    ("e = C().m\ne(q=1)\n", True),
    ("d = C()\ne = d.m\ne(q=1)\n", True),
    ("e = C().m\ne = print\ne(q=1)\n", False),  # bound to something else too: untyped
])
def test_a_with_target_or_a_kept_method_is_judged_where_certain(tmp_path, line: str, judged: bool) -> None:
    from sglang_contracts.check.runner import CheckOptions, run_check
    from tests.helpers import upstream_tree, write_tree

    old = upstream_tree(tmp_path / "old", {"sglang/srt/a.py": ENTERED_OLD}, "1.0.0")
    new = upstream_tree(tmp_path / "new", {"sglang/srt/a.py": ENTERED_OLD.replace("def m(self, q):\n        return q",
                                                                                 "def m(self):\n        return 1")}, "1.0.1")
    header = ("from sglang.srt.a import C, D\n\n"
              "class Mine(C):\n    def __enter__(self):\n        return self\n\n"
              "class Other(C):\n    def __enter__(self):\n        return registry()\n\n")
    project = write_tree(tmp_path / "p", {"pyproject.toml": "[project]\nname = 'p'\n", "m.py": header + line})
    result = run_check([project], CheckOptions(old=str(old), new=str(new), cache_dir=tmp_path / "c", workers=1))
    found = [f"{d.path}:{d.line} {d.code}" for d in result.diagnostics]
    assert found == ([f"m.py:{(header + line).count(chr(10))} SGC201"] if judged else [])
