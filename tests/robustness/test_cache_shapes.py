"""Every reader of a cache record declares the shape it reads (infra/shapes.py, RecordCache.get):
a record whose header and digest hold but whose data is of another shape (re-signed by hand, or
by whoever can write the cache) is absent and computed again. Sixth campaign: such records made
every later run an internal error (M04: `[]`) or dropped error findings silently (M05: `{}`)."""

from __future__ import annotations

import difflib
import inspect
import json
from pathlib import Path
from typing import Any, Callable

import pytest

from sglang_contracts.cli import main
from sglang_contracts.infra.cache import RecordCache, record_data
from sglang_contracts.infra.shapes import ListOf, Row, Table, TableOf, fits

KINDS = ("runs", "upstream", "project", "incremental", "closure")


def swapped(data: Any) -> Any:
    """`data` with every list a table and every table a list, at every depth."""
    if isinstance(data, dict):
        return [swapped(value) for value in data.values()]
    if isinstance(data, list):
        return {str(index): swapped(item) for index, item in enumerate(data)}
    return data


# A key of each record that is a table of named fields (its reader reads them): the empty table is
# another shape for these. For a table of results by name, it is a value (no name found).
KEYED = {"diagnostics", "path", "classes", "opaque", "old", "packages", "digests", "metadata", "routes", "aliases",
         "options"}
# Each of another shape than the record's data (an empty list where a list was is a value, not a
# shape: a definition whose body is a docstring reads no lines).
WRONG_SHAPES: dict[str, Callable[[Any], Any]] = {
    "an empty list for a table (M04)": lambda data: data if isinstance(data, list) else [],
    "an empty table (M05)": lambda data: {} if not isinstance(data, dict) or data.keys() & KEYED else data,
    "a text": lambda data: data if isinstance(data, str) else "x",
    "a number": lambda data: 7,
    "lists and tables swapped": swapped}


def run(capsys, project: Path, cache: Path) -> tuple[int, list[str], str]:
    status = main(["check", str(project), "--old", "0.9.0", "--new", "0.9.1", "--cache-dir", str(cache), "-q"])
    out, err = capsys.readouterr()
    return status, out.splitlines(), err


def assert_same(got: tuple[int, list[str], str], clean: tuple[int, list[str], str], what: str) -> None:
    """The run's (status, findings, errors) are the clean run's; else what differs, line by line."""
    difference = "\n".join(difflib.unified_diff(clean[1], got[1], lineterm="", n=0))
    assert got == clean, f"{what}: status {got[0]}, errors {got[2]!r}\n{difference}"


def resign(cache: Path, kinds: tuple[str, ...], wrong: Callable[[Any], Any]) -> int:
    """Every record of `kinds` rewritten, header and digest valid, with `wrong` of its data: the count."""
    count = 0
    for kind in kinds:
        store = RecordCache(cache / kind)
        for path in sorted((cache / kind).rglob("*.record")):
            store.put(path.stem, wrong(record_data(path.read_bytes().partition(b"\n")[2])))
            count += 1
    return count


@pytest.mark.parametrize("wrong", list(WRONG_SHAPES.values()), ids=list(WRONG_SHAPES))
def test_records_re_signed_with_another_shape_are_computed_again(published, capsys, wrong) -> None:
    """Every kind of record at once (each reader meets one of another shape), then each kind
    alone, the records that would spare reading it removed: the findings are a clean run's,
    never an internal error, never one finding fewer."""
    project, options = published
    cache = options.cache_dir
    clean = run(capsys, project, cache)
    assert clean[0] == 1 and len(clean[1]) > 40
    assert resign(cache, KINDS, wrong) >= len(KINDS)
    assert_same(run(capsys, project, cache), clean, "every kind")
    for kind in KINDS:
        assert resign(cache, (kind,), wrong)
        if kind != "runs":  # else the findings are replayed, and no other record is read
            for path in (cache / "runs").rglob("*.record"):
                path.unlink()
        if kind in ("upstream", "project", "closure"):  # else the unchanged files' findings are reused
            for path in (cache / "incremental").rglob("*.record"):
                path.unlink()
        assert_same(run(capsys, project, cache), clean, kind)


def _forge_entries(cache: Path, text: str) -> int:
    """Every class, method and function entry of every module record (each kept as a JSON text
    of its own: upstream/model.py stored_form) rewritten as `text`, and its definitions table
    (a text too, or places outside the module), the records re-signed: the entries' count."""
    count = 0
    store = RecordCache(cache / "upstream")
    for path in sorted((cache / "upstream").rglob("*.record")):
        data = record_data(path.read_bytes().partition(b"\n")[2])
        if not isinstance(data, dict) or not data.get("classes") and not data.get("functions"):
            continue
        tables = [data["classes"], data["functions"], *data["methods"].values()]
        for table in tables:
            for name in table:
                table[name] = text
                count += 1
        if data.get("definitions") is not None:  # where the module's definitions are (a JSON text too)
            data["definitions"] = text if text.startswith(("{", "[", "n")) else '{"": {"f": [[0, 99999, -1, 7]]}}'
        store.put(path.stem, data)
    return count


@pytest.mark.parametrize("text", ["{}", "[]", "not json", '{"line": "x"}', "[" * 5000,
                                  # a class's field named `true` (eighth campaign, Q06: SGC204 dropped)
                                  '{"line": 1, "bases": [], "fields": [[true, false, false, true]], "attributes": {}}'])
def test_module_records_whose_entries_are_of_another_shape_are_extracted_again(published, capsys, text) -> None:
    """An entry of a module record (a class, a method, a function: a JSON text decoded when first
    read) of another shape is extracted again from the release's source, and the record in the
    cache is replaced: the findings are a clean run's, never an internal error, in this run and
    the next (campaign 6's leftover: such an entry was an SGC001 at every run)."""
    project, options = published
    cache = options.cache_dir
    clean = run(capsys, project, cache)
    forged = _forge_entries(cache, text)
    assert forged > 20
    for kind in ("runs", "incremental"):  # else the findings are replayed and no entry is read
        for path in (cache / kind).rglob("*.record"):
            path.unlink()
    assert_same(run(capsys, project, cache), clean, f"entries {text[:12]!r}")
    for kind in ("runs", "incremental"):
        for path in (cache / kind).rglob("*.record"):
            path.unlink()
    assert_same(run(capsys, project, cache), clean, "the run after")
    assert _still_forged(cache, text) < forged  # the records of the modules read were put back whole


def _still_forged(cache: Path, text: str) -> int:
    count = 0
    for path in (cache / "upstream").rglob("*.record"):
        data = record_data(path.read_bytes().partition(b"\n")[2])
        if isinstance(data, dict) and "classes" in data:
            for table in [data["classes"], data["functions"], *data["methods"].values()]:
                count += sum(entry == text for entry in table.values())
    return count


def test_a_record_is_read_only_with_the_shape_its_reader_declares(tmp_path: Path) -> None:
    """No reader can take a record without saying its shape (the class, not one reader)."""
    store = RecordCache(tmp_path)
    assert list(inspect.signature(store.get).parameters) == ["key", "shape"]
    assert list(inspect.signature(store.get_decoded).parameters) == ["key", "shape", "decode"]
    store.put("ab" * 32, {"path": "m.py", "rows": [[1, 2]]})
    shape = Table(path=str, rows=ListOf(Row(int, int)))
    assert store.get("ab" * 32, shape) == {"path": "m.py", "rows": [[1, 2]]}
    assert store.get("ab" * 32, Table(path=str, rows=ListOf(Row(int, int, int)))) is None
    assert store.get("ab" * 32, TableOf(str)) is None
    assert store.get("ab" * 32, ListOf(object)) is None

    def decode(data: Any) -> Any:
        return data["rows"][5]  # a decoder that meets a shape its declared one did not say: absent

    assert store.get_decoded("ab" * 32, shape, decode) is None


@pytest.mark.parametrize("data, shape, expected", [
    (1, int, True), (True, int, False), (1, float, True), (1.5, int, False), (None, None, True),
    ("x", (int, str), True), ({"a": 1}, Table(a=int), True), ({"a": 1, "b": 2}, Table(a=int), True),
    ({"a": 1, "b": 2}, Table(a=int, closed=True), False), ({}, Table(a=int), False),
    ({"a": "x"}, Table(optional={"a": int}), False), ({}, Table(optional={"a": int}), True),
    ([[1, "x"]], ListOf(Row(int, str)), True), ([[1]], ListOf(Row(int, str)), False), ([], TableOf(int), False),
    ({"k": [1]}, TableOf(ListOf(int)), True), ({"k": [[1]]}, TableOf(ListOf(int)), False)])
def test_fits(data, shape, expected: bool) -> None:
    assert fits(data, shape) is expected


def interpreted_fits(data: Any, shape: Any) -> bool:
    """The shape language read as the module's docstring states it, walked: the oracle of the
    compiled tests."""
    if shape is object:
        return True
    if shape is None:
        return data is None
    if isinstance(shape, tuple):
        return any(interpreted_fits(data, alternative) for alternative in shape)
    if isinstance(shape, type):
        return type(data) is shape or (shape is float and type(data) is int)
    if isinstance(shape, ListOf):
        return type(data) is list and all(interpreted_fits(item, shape.item) for item in data)
    if isinstance(shape, Row):
        return type(data) is list and len(data) == len(shape.fields) and all(
            interpreted_fits(item, field) for item, field in zip(data, shape.fields))
    if isinstance(shape, TableOf):
        return type(data) is dict and all(interpreted_fits(value, shape.value) for value in data.values())
    assert isinstance(shape, Table)
    return (type(data) is dict
            and all(name in data and interpreted_fits(data[name], field) for name, field in shape.required.items())
            and all(interpreted_fits(data[name], field) for name, field in shape.optional.items() if name in data)
            and (not shape.closed or set(data) <= set(shape.required) | set(shape.optional)))


def _shapes():
    from hypothesis import strategies as st

    leaves = st.sampled_from([object, None, str, int, float, bool, list, dict, (str, None), (int, float)])
    names = st.sampled_from(["a", "b", "line", "kind"])
    return st.recursive(leaves, lambda inner: st.one_of(
        st.builds(ListOf, inner), st.builds(TableOf, inner), st.lists(inner, max_size=3).map(lambda f: Row(*f)),
        st.tuples(st.dictionaries(names, inner, max_size=2), st.dictionaries(names, inner, max_size=2),
                  st.booleans()).map(lambda t: Table(optional={k: v for k, v in t[1].items() if k not in t[0]},
                                                     closed=t[2], **t[0])),
        st.lists(inner, min_size=2, max_size=3).map(tuple)), max_leaves=12)


def _json():
    from hypothesis import strategies as st

    scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False, width=16),
                        st.sampled_from(["a", "b", "x"]))
    return st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(["a", "b", "line", "kind", "z"]), inner,
                                                       max_size=4)), max_leaves=20)


def test_the_compiled_tests_decide_as_the_shape_language_reads():
    """Each shape's compiled test (infra/shapes.checker) agrees with the walk of the language
    on data of every kind, fixed seed; and a shape declared again (inline, at each call) is the
    same shape, compiled once."""
    from hypothesis import given, seed, settings

    @seed(20261206)
    @settings(max_examples=400, deadline=None, database=None)
    @given(_shapes(), _json())
    def agrees(shape, data) -> None:
        assert fits(data, shape) is interpreted_fits(data, shape), (shape, data)

    agrees()
    assert ListOf(Row(str, int)) == ListOf(Row(str, int)) and hash(Table(a=int)) == hash(Table(a=int))
    assert Table(a=int) != Table(a=int, closed=True) and ListOf(int) != TableOf(int)


def test_a_record_nested_deeper_than_its_shape_costs_no_more_than_its_shape(tmp_path: Path) -> None:
    """Checking stops where the shape does: a list nested 3,000 deep where a list is expected
    is not walked (and no recursion limit is met)."""
    deep: list = []
    for _ in range(3000):
        deep = [deep]
    assert fits(deep, ListOf(object)) and fits(deep, ListOf(list)) and not fits(deep, ListOf(ListOf(int)))


def test_a_language_server_checks_a_remembered_record_s_shape_once(tmp_path: Path, monkeypatch) -> None:
    """In a process that keeps records, a record found of a shape is given again unchecked while
    it is unchanged on disk; asked with another shape, it is still absent."""
    from sglang_contracts.infra import cache as cache_module

    monkeypatch.setattr(cache_module, "_REMEMBERED", {})
    monkeypatch.setattr(cache_module, "_DECODED", {})
    checked = []
    monkeypatch.setattr(cache_module, "fits", lambda data, shape: checked.append(shape) or fits(data, shape))
    store = cache_module.RecordCache(tmp_path / "records")
    store.put("cd" * 32, [1, 2])
    assert store.get("cd" * 32, ListOf(int)) == [1, 2] and store.get("cd" * 32, ListOf(int)) == [1, 2]
    shape = ListOf(int)
    assert store.get("cd" * 32, shape) == [1, 2] and store.get("cd" * 32, shape) == [1, 2]
    assert len(checked) == 1  # once: a shape declared again on the spot is the same shape
    assert store.get("cd" * 32, TableOf(int)) is None and store.get("cd" * 32, TableOf(int)) is None


def _each_file_tables(cache: Path) -> list[Path]:
    """The project records that are each_file tables: {path: [the file's digest, its rows]}."""
    found = []
    for path in sorted((cache / "project").rglob("*.record")):
        data = record_data(path.read_bytes().partition(b"\n")[2])
        if isinstance(data, dict) and data and all(
                isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str) and len(entry[0]) == 64
                and isinstance(entry[1], list) for entry in data.values()):
            found.append(path)
    return found


# Rows of another shape than their analysis's (P01, P08): each row cut to its first item (a tag
# kept, the rest gone), lengthened by one, emptied, a number, a table; a file with no rows given one.
WRONG_ROWS: dict[str, Callable[[list], list]] = {
    "each row cut to its tag": lambda rows: [row[:1] if isinstance(row, list) else [row] for row in rows] or [["x"]],
    "each row one item longer": lambda rows: [[*row, "x"] if isinstance(row, list) else [row, 1] for row in rows]
                                              or [["x", 1]],
    "an empty row (P01)": lambda rows: [[]],
    "a number": lambda rows: [7],
    "a table": lambda rows: [{"0": "x"}]}


@pytest.mark.parametrize("wrong", list(WRONG_ROWS.values()), ids=list(WRONG_ROWS))
def test_each_file_tables_whose_rows_are_of_another_shape_are_computed_again(published, capsys, wrong) -> None:
    """Every per-file table (ProjectIndex.each_file) re-signed with rows of another shape than
    its analysis declares is computed again: the findings are a clean run's, in this run and the
    next, never an internal error or an SGC001 (P01: the imports table's `[[]]` ended every run
    in an internal error; P08: each table's rows reached the rules and the index unchecked)."""
    project, options = published
    cache = options.cache_dir
    clean = run(capsys, project, cache)
    tables = _each_file_tables(cache)
    assert len(tables) >= 8  # the build's two, and the rules' analyses
    store = RecordCache(cache / "project")
    for path in tables:
        data = record_data(path.read_bytes().partition(b"\n")[2])
        store.put(path.stem, {relpath: [digest, wrong(rows)] for relpath, (digest, rows) in data.items()})
    for attempt in ("this run", "the next"):
        for kind in ("runs", "incremental"):  # else the findings are replayed and no table is read
            for path in (cache / kind).rglob("*.record"):
                path.unlink()
        assert_same(run(capsys, project, cache), clean, attempt)


def test_a_per_file_analysis_without_a_declared_row_shape_is_refused(tmp_path: Path) -> None:
    """No table of a per-file analysis is read without the shape of its rows (the class): each_file
    refuses an analysis that declares none, and reads its table with the declared one."""
    from sglang_contracts.infra.shapes import rows_of
    from sglang_contracts.project.index import ProjectIndex, each_file_table

    index = ProjectIndex(root=tmp_path, cache=RecordCache(tmp_path / "cache"), digests={"m.py": "d" * 64})
    index.texts["m.py"] = "x = 1\n"

    def undeclared(relpath: str, text: str) -> list:
        return [[relpath, len(text)]]

    with pytest.raises(TypeError, match="declares no shape"):
        index.each_file("undeclared", undeclared, lambda text: True)
    declared = rows_of(Row(str, int))(undeclared)
    assert index.each_file("declared", declared, lambda text: True) == [["m.py", 6]]
    assert fits({"m.py": ["d" * 64, [["m.py", 6]]]}, each_file_table(Row(str, int)))
    assert not fits({"m.py": ["d" * 64, [["m.py"]]]}, each_file_table(Row(str, int)))


def test_a_re_check_reads_the_per_file_tables_with_their_row_shapes(published, capsys, tmp_path: Path,
                                                                    monkeypatch) -> None:
    """The plan of a re-check reads the last run's tables to tell which edits only moved code
    (incremental.moved_since_recorded), before the checks do: with their rows of another shape,
    an edit that moves every file's code is checked as a fresh cache checks it."""
    from sglang_contracts.check import incremental

    compared: list[str] = []
    real_moved_since_recorded = incremental.moved_since_recorded

    def counted(now: Any, asked: Any) -> Any:
        moved = real_moved_since_recorded(now, asked)
        return None if moved is None else lambda relpath, digest: compared.append(relpath) or moved(relpath, digest)

    monkeypatch.setattr(incremental, "moved_since_recorded", counted)
    project, options = published
    cache = options.cache_dir
    run(capsys, project, cache)
    store = RecordCache(cache / "project")
    for path in _each_file_tables(cache):
        data = record_data(path.read_bytes().partition(b"\n")[2])
        store.put(path.stem, {relpath: [digest, [[]]] for relpath, (digest, _) in data.items()})
    for path in sorted(project.rglob("*.py")):
        path.write_text("\n" + path.read_text())  # every line one lower: code moved, nothing else
    for path in (cache / "runs").rglob("*.record"):
        path.unlink()
    assert_same(run(capsys, project, cache), run(capsys, project, tmp_path / "fresh"), "moved")
    assert compared  # the edited files were compared with the tables' rows
