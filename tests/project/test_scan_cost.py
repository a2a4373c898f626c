"""What keeps a cold scan cheap, in CPU and in the main process's memory: a file's syntax tree is
freed as its scan returns (no reference cycle left for a collection to find), the scan job
writes its own cache record, and decoded facts share one object per recurring value."""

from __future__ import annotations

import gc
import json
from pathlib import Path

from sglang_contracts.infra.cache import RecordCache
from sglang_contracts.project.facts import FileFacts
from sglang_contracts.project.index import _facts_key, _scan_job, build_index
from sglang_contracts.project.scanner import scan_source

SOURCE = '''
from types import SimpleNamespace
from sglang.srt.managers.scheduler import Scheduler
from sglang.srt.managers.schedule_batch import Req


class Omni(Scheduler):
    def __init__(self, req: Req):
        super().__init__()
        self.req = req
        self.waiting = []
        self.ns = SimpleNamespace(a=1, b=2)
        self.flag = None

    def step(self, req: Req):
        self.waiting.append(req)
        req.finished()
        req.finished()
        if self.req.rid:
            return self.req.rid, 1
        return None, 2


def helper(req: Req):
    return req.output_ids
'''


def test_a_scan_leaves_no_reference_cycle_behind() -> None:
    gc.collect()
    gc.disable()
    try:
        facts = scan_source("m.py", "m", SOURCE, ("m",))
        assert facts.classes and facts.reads  # the file was read
        del facts
        assert gc.collect(0) == 0  # everything was freed by reference counting
    finally:
        gc.enable()


def test_the_scan_job_writes_the_record_the_main_process_reads(tmp_path: Path) -> None:
    cache = RecordCache(tmp_path / "cache")
    key = _facts_key("m.py", "m", "digest", ("m",))
    result, _ = _scan_job(("m.py", "m", SOURCE, ("m",), cache, key))
    assert cache.get(key, object) == json.loads(json.dumps(result))
    assert FileFacts.from_json(cache.get(key, object)) == scan_source("m.py", "m", SOURCE, ("m",))


def test_decoded_facts_share_equal_positions_and_receivers(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.py").write_text(SOURCE)
    (project / "b.py").write_text(SOURCE)
    first = build_index(project, [project], RecordCache(tmp_path / "cache"))
    again = build_index(project, [project], RecordCache(tmp_path / "cache"))  # decoded from the records
    assert again.parsed == 0 and again.files == first.files
    a, b = again.files["a.py"], again.files["b.py"]
    calls = [call for call in a.calls if call.callee.attrs == ("finished",)]
    assert len(calls) == 2 and calls[0].callee is calls[1].callee  # one Receiver for equal ones
    assert a.classes[0].position is b.classes[0].position  # one Position for equal ones, across files



def test_a_fresh_scan_keeps_one_receiver_for_the_calls_of_one_name() -> None:
    # As decoded facts do: a module of 380,000 calls of `f` kept as many equal receivers (campaign 12, R04).
    facts = scan_source("m.py", "m", "from sglang.srt.a import f, g\nf(1)\nf(2, b=3)\ng()\n", ("m",))
    f1, f2, g = (call.callee for call in facts.calls)
    assert f1 == f2 != g and f1 is f2

ASKS_A_SERVER = """import requests
import sglang

def ask(prompt):
    return requests.post("http://localhost:30000/generate", json={"text": prompt, "sampling_params": {"max_new_tokens": 8}})

SGLANG_VERSION = "0.5.22"
"""

COPIES_A_HELPER = """

def clamp(value, low, high):
    # Copied from sglang.srt.utils.clamp
    return max(low, min(value, high))
"""


def test_the_scan_jobs_run_the_analyses_of_the_same_tree_and_each_file_takes_them(tmp_path: Path, monkeypatch) -> None:
    """http-requests, release-mentions and mirror-citations are read from the tree the scan
    parsed: each_file does not run them again for a scanned file, and finds what they would
    have found."""
    import importlib

    from sglang_contracts.infra.shapes import row_shape, rows_of
    from sglang_contracts.project.index import ON_THE_SCANNED_TREE

    project = tmp_path / "project"
    project.mkdir()
    (project / "client.py").write_text(ASKS_A_SERVER + COPIES_A_HELPER)
    index = build_index(project, [project], RecordCache(None))
    assert set(index.on_the_scanned_tree) == set(ON_THE_SCANNED_TREE) == {
        "http-requests", "release-mentions", "mirror-citations"}
    analyses = {kind: (importlib.import_module(module), name, test)
                for kind, (module, name, test) in ON_THE_SCANNED_TREE.items()}
    expected = {kind: getattr(module, name)("client.py", ASKS_A_SERVER + COPIES_A_HELPER)
                for kind, (module, name, _) in analyses.items()}
    assert all(expected.values())
    ran: list[str] = []
    for module, name, _ in analyses.values():
        original = getattr(module, name)

        def counted(relpath: str, text: str, original=original) -> list:
            ran.append(relpath)
            return original(relpath, text)

        counted.__module__, counted.__name__ = original.__module__, original.__name__
        rows_of(row_shape(original))(counted)  # its rows are the analysis's
        monkeypatch.setattr(module, name, counted)

    def each_file(kind: str) -> list:
        module, name, test = analyses[kind]
        return index.each_file(kind, getattr(module, name), getattr(module, test), module)

    assert {kind: each_file(kind) for kind in analyses} == expected
    assert ran == []
    index.on_the_scanned_tree.clear()  # a file the scan did not read: analysed where asked
    index.read_tables.clear()  # (and no table of this run holds it yet)
    assert each_file("http-requests") == expected["http-requests"]
    assert ran == ["client.py"]
