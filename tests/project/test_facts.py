"""project/facts.py: decoded facts share equal values, and decode to what was encoded."""

import json

from sglang_contracts.project.facts import FileFacts
from sglang_contracts.project.scanner import scan_source

SOURCE = '''
from sglang.srt.managers.scheduler import Scheduler
from sglang.srt.server_args import ServerArgs

class Mine(Scheduler):
    def run(self, batch, *, flag: bool = False):
        self.tp_worker.model_runner.forward(batch)
        return self.tp_worker.model_runner.forward(batch)

    def step(self, batch, *, flag: bool = False):
        self.tp_worker.model_runner.forward(batch)

args = ServerArgs(model_path="m")
x = Scheduler.tp_worker.model_runner
'''


def test_equal_tuples_of_plain_values_are_one_object_across_files_and_facts_round_trip() -> None:
    first = scan_source("a.py", "a", SOURCE)
    second = scan_source("b.py", "b", SOURCE)
    decoded = [FileFacts.from_json(json.loads(json.dumps(facts.to_json()))) for facts in (first, second)]
    assert decoded == [first, second]
    assert [facts.to_json() for facts in decoded] == [first.to_json(), second.to_json()]
    a, b = decoded
    run, step = a.classes[0].methods
    assert run.params == step.params and run.params is step.params  # one parameter list, shared
    assert a.classes[0].methods[0].params is b.classes[0].methods[0].params  # and across files
    assert a.attributes[0].attrs == b.attributes[0].attrs and a.attributes[0].attrs is b.attributes[0].attrs
    assert a.classes[0].bases is b.classes[0].bases


def test_a_record_of_another_shape_is_refused_and_the_index_scans_the_file_again(tmp_path) -> None:
    """A fact list one field short (or long) does not decode to a fact with a default filled in:
    the record is refused (ValueError) and the scan reads the file again."""
    import hashlib

    import pytest

    from sglang_contracts.infra.cache import RecordCache
    from sglang_contracts.project.index import _facts_key, build_index

    facts = scan_source("m.py", "m", SOURCE, ("m",))
    for damaged in ("short", "long"):
        data = json.loads(json.dumps(facts.to_json()))
        row = data["reads"][0]
        data["reads"][0] = row[:-1] if damaged == "short" else [*row, 0]
        with pytest.raises(ValueError):
            FileFacts.from_json(data)

        (tmp_path / "m.py").write_text(SOURCE)
        cache = RecordCache(tmp_path / f"cache-{damaged}")
        digest = hashlib.sha256(SOURCE.encode()).hexdigest()
        cache.put(_facts_key("m.py", "m", digest, ("m",)), data)
        index = build_index(tmp_path, [tmp_path], cache, workers=1)
        assert index.parsed == 1 and index.files["m.py"] == facts


def test_an_index_read_from_records_decodes_no_list_until_it_is_read(tmp_path) -> None:
    """A re-check reads the reads and calls of the files it checks, not of every file: the
    index built from records leaves them undecoded, and a list read later is the one scanned."""
    from sglang_contracts.infra.cache import RecordCache
    from sglang_contracts.project.index import build_index

    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "__init__.py").write_text(SOURCE)
    cache = RecordCache(tmp_path / "cache")
    scanned = build_index(tmp_path, [tmp_path], cache, workers=1).files["m/__init__.py"]
    read = build_index(tmp_path, [tmp_path], cache, workers=1)
    facts = read.files["m/__init__.py"]
    assert read.parsed == 0
    assert "reads" not in vars(facts) and "calls" not in vars(facts)
    assert facts.reads == scanned.reads and facts.calls == scanned.calls and facts.reads
    assert facts.class_names == scanned.class_names == ["Scheduler"]  # a base, as the file names it


def test_the_placeless_digest_is_the_facts_but_their_positions_and_rides_in_the_record() -> None:
    text = "from sglang.srt.managers.scheduler import Scheduler\n\n\nclass S(Scheduler):\n    def f(self):\n" \
           "        return self.step()\n"
    facts = scan_source("m.py", "m", text)
    moved = scan_source("m.py", "m", "# a line above\n" + text)
    changed = scan_source("m.py", "m", text.replace("self.step()", "self.run()"))
    assert facts.to_json() != moved.to_json() and facts.placeless_digest() == moved.placeless_digest()
    assert changed.placeless_digest() != facts.placeless_digest()
    record = facts.to_record()
    assert record["placeless"] == facts.placeless_digest()
    assert FileFacts.from_json(record).placeless_digest() == facts.placeless_digest()
