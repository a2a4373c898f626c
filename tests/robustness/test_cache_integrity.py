"""Cache records must prove they belong to their key (cache.py): a record moved to another key,
or damaged while it still parses, is rebuilt and overwritten, never trusted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sglang_contracts.infra.cache import HEADER, SCHEMA_VERSION, RecordCache, data_digest
from sglang_contracts.cli import main


def records(cache: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in sorted(cache.rglob("*.record"))}


def valid(path: Path) -> bool:
    """The record at `path` reads back under the key its file name says."""
    return RecordCache(path.parent.parent).get(path.stem, object) is not None


def run(capsys, project: Path, cache: Path) -> tuple[int, str, str]:
    status = main(["check", str(project), "--old", "0.9.0", "--new", "0.9.1", "--cache-dir", str(cache), "-q"])
    out, err = capsys.readouterr()
    return status, out, err


def test_a_record_reads_back_only_under_its_own_key_and_intact(tmp_path: Path) -> None:
    cache = RecordCache(tmp_path)
    cache.put("aa11", {"version": "0.5.22", "lines": [1, 2]})
    cache.put("bb22", {"version": "0.5.21", "lines": [3]})
    assert cache.get("aa11", object) == {"version": "0.5.22", "lines": [1, 2]}
    first, second = cache._path("aa11"), cache._path("bb22")
    first.write_bytes(second.read_bytes())  # a valid record, of another key
    assert cache.get("aa11", object) is None and cache.get("bb22", object) == {"version": "0.5.21", "lines": [3]}
    second.write_bytes(second.read_bytes().replace(b"0.5.21", b"0.6.21"))  # still parses
    assert cache.get("bb22", object) is None
    second.write_bytes(second.read_bytes()[:-3])  # truncated
    assert cache.get("bb22", object) is None
    # The form of schema 1, which checked nothing but the schema number.
    first.write_text('{"schema": %d, "data": {"version": "0.5.22"}}' % SCHEMA_VERSION)
    assert cache.get("aa11", object) is None
    cache.put("aa11", [1])  # a miss is rebuilt and overwritten
    assert cache.get("aa11", object) == [1]


def test_a_record_nested_too_deeply_to_decode_is_a_miss(tmp_path: Path) -> None:
    cache = RecordCache(tmp_path)
    body = b"[" * 100_000 + b"]" * 100_000  # its digest holds: only decoding it fails
    path = cache._path("cc33")
    path.parent.mkdir(parents=True)
    path.write_bytes(f"{HEADER.format(schema=SCHEMA_VERSION, key='cc33')}{data_digest(body)}\n".encode() + body)
    assert cache.get("cc33", object) is None
    cache.put("cc33", [1])
    assert cache.get("cc33", object) == [1]


def test_swapped_records_are_rebuilt_and_the_findings_equal_a_clean_run(published, capsys) -> None:
    project, options = published
    cache = options.cache_dir
    clean = run(capsys, project, cache)
    assert clean[0] == 1 and clean[1].count("\n") > 40
    written = records(cache)
    kinds = {path.relative_to(cache).parts[0] for path in written}
    assert kinds == {"runs", "upstream", "project", "incremental", "closure"}
    paths = list(written)
    for path, other in zip(paths, paths[1:] + paths[:1]):  # every record now holds another's data
        path.write_bytes(written[other])
    assert not any(valid(path) for path in paths)
    assert run(capsys, project, cache) == clean
    assert all(valid(path) for path in paths)  # each one rebuilt and overwritten
    assert records(cache) == written
    assert run(capsys, project, cache) == clean  # and now replayed


@pytest.mark.parametrize("kind", ["runs", "upstream", "project", "incremental", "closure"])
def test_one_flipped_digit_is_rebuilt_and_the_findings_equal_a_clean_run(published, capsys, kind: str) -> None:
    project, options = published
    cache = options.cache_dir
    clean = run(capsys, project, cache)
    written = records(cache)
    damaged = 0
    for path, data in written.items():
        header, _, body = data.partition(b"\n")
        match = re.search(rb"\d\.\d\.\d|\d+", body)
        if path.relative_to(cache).parts[0] == kind and match:
            digit = match.end() - 1
            flipped = b"7" if body[digit:digit + 1] != b"7" else b"3"
            path.write_bytes(header + b"\n" + body[:digit] + flipped + body[digit + 1:])
            damaged += 1
    assert damaged
    if kind != "runs":  # else the findings are replayed, and no other record is read
        for path in (cache / "runs").rglob("*.record"):
            path.unlink()
    if kind in ("upstream", "project", "closure"):  # else the unchanged files' findings are reused (incremental.py)
        for path in (cache / "incremental").rglob("*.record"):
            path.unlink()
    assert run(capsys, project, cache) == clean
    rebuilt = records(cache)
    # Every damaged record was rebuilt as it was. A run that reuses the unchanged files' findings
    # (kind "runs": the incremental record is intact) checks their outlines, and may ask the
    # release a question the full run did not (SGC322's search for a setter): a record more.
    assert {path: rebuilt.get(path) for path in written} == written
    extra = {path.relative_to(cache).parts[0] for path in rebuilt.keys() - written.keys()}
    assert extra <= ({"upstream"} if kind == "runs" else set())


def test_two_runs_at_once_share_one_fresh_cache(published, capsys) -> None:
    """Both download, write and read the same records at the same time; both report the same
    findings, and every record they leave reads back under its key."""
    import subprocess
    import sys

    from tests.helpers import checkout_env

    project, options = published
    command = [sys.executable, "-m", "sglang_contracts", "check", str(project), "--old", "0.9.0", "--new", "0.9.1",
               "--cache-dir", str(options.cache_dir), "-q"]
    started = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=checkout_env()) for _ in range(2)]
    outputs = [process.communicate() for process in started]  # both run meanwhile
    results = [(process.returncode, out, err) for process, (out, err) in zip(started, outputs)]
    assert results[0] == results[1] and results[0][0] == 1 and results[0][2] == ""
    assert all(valid(path) for path in records(options.cache_dir))
    assert len(list((options.cache_dir / "wheels").glob("sglang-*.whl"))) == 2
    assert run(capsys, project, options.cache_dir)[1] == results[0][1]


def test_a_language_server_decodes_an_unchanged_record_once(tmp_path, monkeypatch) -> None:
    """In a process that keeps records, get_decoded gives the object it decoded while the record
    is unchanged on disk, and decodes the new one once the record is rewritten."""
    from sglang_contracts.infra import cache as cache_module

    monkeypatch.setattr(cache_module, "_REMEMBERED", {})
    monkeypatch.setattr(cache_module, "_DECODED", {})
    store = cache_module.RecordCache(tmp_path / "records")
    store.put("k" * 64, {"n": 1})
    decoded = []

    def decode(data):
        decoded.append(data)
        return dict(data)

    first = store.get_decoded("k" * 64, object, decode)
    assert store.get_decoded("k" * 64, object, decode) is first and len(decoded) == 1
    store.put("k" * 64, {"n": 22})  # another size: the remembered record is stale
    assert store.get_decoded("k" * 64, object, decode) == {"n": 22} and len(decoded) == 2
    assert store.get_decoded("missing" + "0" * 57, object, decode) is None


def _crafted(cache: Path, kind: str, change) -> int:
    """Rewrite each record of `kind` that `change` alters (it returns True), digest and all, as
    one made by hand would be: the count."""
    store, count = RecordCache(cache / kind), 0
    for path in sorted((cache / kind).rglob("*.record")):
        data = store.get(path.stem, object)
        if isinstance(data, dict) and change(data):
            store.put(path.stem, data)
            count += 1
    return count


def _first_finding(data) -> bool:
    if data.get("diagnostics"):
        data["diagnostics"][0]["message"] = 123
        return True
    return False


def _first_entry(data) -> bool:
    if data.get("files"):
        next(iter(data["files"].values()))[1] = 5
        return True
    return False


def _first_class(data) -> bool:
    if data.get("classes"):
        data["classes"][next(iter(data["classes"]))] = 1.5
        return True
    return False


def _first_import(data) -> bool:
    if data.get("imports"):
        data["imports"][0][2] = 123
        return True
    return False


def _calls_text(data) -> bool:
    if isinstance(data.get("calls"), str) and data["calls"] != "[]":
        data["calls"] = "not json"
        return True
    return False


@pytest.mark.parametrize("kind, change", [("runs", _first_finding), ("incremental", _first_entry),
                                          ("upstream", _first_class), ("project", _first_import),
                                          ("project", _calls_text)],
                         ids=["a finding's message a number", "a file's imports a number", "a class a number",
                              "an import's module a number", "a file's calls not JSON"])
def test_a_record_made_by_hand_of_another_shape_is_computed_again_never_an_internal_error(
        published, capsys, kind: str, change) -> None:
    """A record whose digest holds and whose content is of another shape (made by hand: the
    cache is the user's) stopped the run with an internal error (second campaign). It is
    computed again, findings as a clean run's; a file's calls, read only where they are
    checked, cost that file's contracts that read them, said as an SGC000."""
    project, options = published
    cache = options.cache_dir
    clean = run(capsys, project, cache)
    assert _crafted(cache, kind, change)
    if kind != "runs":  # else the findings are replayed, and no other record is read
        for path in (cache / "runs").rglob("*.record"):
            path.unlink()
    if kind in ("upstream", "project"):
        for path in (cache / "incremental").rglob("*.record"):
            path.unlink()
    status, out, err = run(capsys, project, cache)
    assert "internal error" not in err and "SGC001" not in out
    if change is _calls_text:
        assert status == 1 and "damaged" in out and "SGC000" in out
    else:
        assert (status, out, err) == clean


@pytest.mark.parametrize("kind", ["fifo", "link to a device", "too large"])
def test_a_record_that_is_no_regular_file_of_a_record_s_size_is_absent(tmp_path: Path, kind: str, monkeypatch) -> None:
    """A FIFO blocked the run forever, a link to /dev/zero read until memory ran out (third
    campaign D10): records are read as every other file is, regular and bounded."""
    import os

    from sglang_contracts.infra import cache as cache_module
    from sglang_contracts.infra.cache import RecordCache

    store = RecordCache(tmp_path / "records")
    store.put("ab" * 32, {"kept": True})
    assert store.get("ab" * 32, object) == {"kept": True}
    path = tmp_path / "records" / "ab" / f"{'ab' * 32}.record"
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link to a device":
        path.symlink_to("/dev/zero")
    else:
        path.write_bytes(b"x" * 1024)
        monkeypatch.setattr(cache_module, "MAX_RECORD_BYTES", 100)
    assert store.get("ab" * 32, object) is None
    monkeypatch.setattr(cache_module, "MAX_RECORD_BYTES", 1 << 20)
    store.put("ab" * 32, {"kept": "again"})  # computed again, written in its place
    assert store.get("ab" * 32, object) == {"kept": "again"}


def test_cache_folders_are_the_users_alone_whatever_the_umask(tmp_path: Path) -> None:
    """Campaign 4's D08: under umask 000 the cache's folders were 0777, and another user
    replaced a run record with one of no findings."""
    import os
    import stat

    previous = os.umask(0)
    try:
        RecordCache(tmp_path / "cache" / "runs").put("ab" * 32, {"diagnostics": []})
    finally:
        os.umask(previous)
    for folder in (tmp_path / "cache", tmp_path / "cache" / "runs", tmp_path / "cache" / "runs" / "ab"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_a_record_another_user_owns_is_never_read(tmp_path: Path, monkeypatch) -> None:
    """A record file another user put in a folder others could write (made before D08's fix, or
    by another tool) is not this user's record, however well it is formed."""
    import os

    from sglang_contracts.infra import files

    cache = RecordCache(tmp_path / "runs")
    cache.put("cd" * 32, {"diagnostics": []})
    assert cache.get("cd" * 32, object) == {"diagnostics": []}
    monkeypatch.setattr(files.os, "getuid", lambda: os.geteuid() + 1)  # as another user sees it
    assert cache.get("cd" * 32, object) is None


def test_a_record_reads_back_as_json_would_give_it_and_damage_reads_as_absent(tmp_path: Path) -> None:
    """What a reader gets back is what a JSON round trip gives (tuples as lists, keys as
    strings), and a body that is not one (truncated, not JSON, damaged under a re-signed header)
    reads as absent, never an exception."""
    import json

    from hypothesis import given, seed, settings
    from hypothesis import strategies as st

    from sglang_contracts.infra.cache import record_body, record_data

    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=60))
    keys = st.one_of(st.text(max_size=8), st.integers(-5, 5), st.booleans(), st.none())
    values = st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(keys, inner, max_size=4)), max_leaves=25)

    @seed(20261207)
    @settings(max_examples=300, deadline=None, database=None)
    @given(values)
    def round_trips(value) -> None:
        assert record_data(record_body(value)) == json.loads(json.dumps(value))

    round_trips()
    with pytest.raises(TypeError):
        record_body({"a": {1, 2}})
    body = record_body({"kind": "module", "lines": list(range(50))})
    for damaged in (body[:-7], b"\x00\xff", b"", b"[" * 100_000):
        assert record_data(damaged) is None
    cache = RecordCache(tmp_path)
    cache.put("cc33", {"kind": "module"})
    path = cache._path("cc33")
    header = HEADER.format(schema=SCHEMA_VERSION, key="cc33") + data_digest(body[:-7])
    path.write_bytes(header.encode() + b"\n" + body[:-7])  # its digest holds: the body is still no record
    assert cache.get("cc33", object) is None
