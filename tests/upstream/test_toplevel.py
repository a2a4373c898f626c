"""What a module's top level makes at import time (upstream/toplevel.py): a computed `__all__`."""

from __future__ import annotations

import ast

import pytest

from sglang_contracts.upstream.toplevel import evaluated_exports, holds, literal_containers


def exported(code: str, names: list[str]) -> dict[str, bool | None]:
    """name -> exported (True), not (False), or not known (None), as the model reads the rule."""
    rule = evaluated_exports(ast.parse(code))
    assert rule is not None
    answer: dict[str, bool | None] = {}
    for name in names:
        if name in rule["names"] or (rule["globals"] is not None and holds(rule["globals"], name)):
            answer[name] = True
        else:
            answer[name] = None if rule["unknown"] else False
    return answer


def test_a_comprehension_over_globals_keeps_the_public_names_its_table_does_not_exclude() -> None:
    code = (
        "_EXCLUDED = {'get_world_group': 'world'}\n"
        "_EXCLUDED['get_tp_size'] = 'tp'\n"
        "__all__ = [n for n in list(globals()) if not n.startswith('_') and n not in _EXCLUDED]\n"
    )
    assert exported(code, ["init", "get_world_group", "get_tp_size", "_private"]) == {
        "init": True, "get_world_group": False, "get_tp_size": False, "_private": False}


def test_a_key_added_to_the_table_after_all_is_built_does_not_change_it() -> None:
    code = ("_X = set()\n__all__ = [n for n in globals() if n not in _X]\n_X.add('late')\n")
    assert exported(code, ["late"]) == {"late": True}


@pytest.mark.parametrize("condition", ["callable(globals()[n])", "n not in _MADE", "n.isupper()"])
def test_a_condition_that_cannot_be_read_leaves_the_globals_unknown(condition: str) -> None:
    code = f"_MADE = make()\n__all__ = [n for n in dir() if {condition}]\n"
    assert exported(code, ["anything"]) == {"anything": None}


def test_literal_lists_are_left_to_griffe_and_shapes_it_reads_as_empty_are_not() -> None:
    assert evaluated_exports(ast.parse("__all__ = ['a']\n__all__ += ['b']\n")) is None
    assert evaluated_exports(ast.parse("x = 1\n")) is None
    assert exported("__all__ = ['a'] + ['b']\nif X:\n    __all__.append('c')\n", ["a", "b", "c"]) == {
        "a": True, "b": True, "c": None}
    assert exported("__all__ = names()\n", ["a"]) == {"a": None}
    assert exported("__all__ = ['a']\n__all__.extend(more)\n", ["a", "b"]) == {"a": True, "b": None}


def test_all_grown_by_its_methods_is_evaluated_griffe_reading_assignments_only() -> None:
    """Campaign 11, R08: `__all__ = [...]` with literal `.extend`/`.append` was left to griffe,
    which reads only assignments to `__all__`: the names the calls add were taken as never
    exported. They are evaluated as `+=` is (`.insert(i, x)` adds x); a call not evaluated
    (`.remove`, an unknown list) leaves the other globals unknown, never missing."""
    code = ("__all__ = ['a']\n__all__ += ['b']\n__all__.extend(['c', 'd'])\n__all__.append('e')\n"
            "__all__.insert(0, 'f')\n")
    assert exported(code, ["a", "b", "c", "d", "e", "f", "g"]) == {
        "a": True, "b": True, "c": True, "d": True, "e": True, "f": True, "g": False}
    assert exported("__all__ = ['a']\n__all__.append('b')\n__all__.remove('a')\n", ["b", "c"]) == {
        "b": True, "c": None}


def test_a_table_changed_in_a_way_that_is_not_read_is_unknown() -> None:
    tree = ast.parse("A = {'x': 1}\nA.pop('x')\nB = ['y']\nB.append('z')\nC = frozenset({'w'})\nif X:\n    C = set()\n")
    assert literal_containers(tree.body) == {"A": None, "B": ["y", "z"], "C": None}


def test_attributes_set_by_name_are_known_from_literals_and_unknown_otherwise() -> None:
    from sglang_contracts.upstream.toplevel import MODULE, dynamic_setters

    code = (
        "import sys\n"
        "class Registry:\n"
        "    @classmethod\n"
        "    def register(cls, name):\n"
        "        setattr(cls, name.upper(), cls())\n"
        "class Config:\n"
        "    def __init__(self, **kwargs):\n"
        "        for key, value in kwargs.items():\n"
        "            setattr(self, key, value)\n"
        "class Batch:\n"
        "    def filter(self):\n"
        "        for item in ('temperatures', 'top_ps'):\n"
        "            setattr(self, item, None)\n"
        "        for f in fields(self):\n"
        "            setattr(self, f.name, None)\n"
        "        setattr(self, 'extra', 1)\n"
        "_TABLE = {'get_group': 1}\n"
        "for _name in _TABLE:\n"
        "    globals()[_name] = None\n"
    )
    literal, dynamic = dynamic_setters(ast.parse(code))
    assert set(dynamic) == {"Registry", "Config"}
    assert dynamic["Registry"] == "setattr(cls, name.upper(), ...) in Registry.register"
    assert set(literal["Batch"]) == {"temperatures", "top_ps", "extra"}
    assert set(literal[MODULE]) == {"get_group"}
    _, dynamic = dynamic_setters(ast.parse("for n in load():\n    setattr(sys.modules[__name__], n, 1)\n"))
    assert dynamic == {MODULE: "setattr(sys.modules[__name__], n, ...) in the module's top level"}


def test_a_member_of_a_class_that_sets_names_at_run_time_is_not_a_missing_target(tmp_path) -> None:
    """What SGC401 and SGC601 patch: `Registry.NONE` may be there; `Plain.NONE` is not."""
    from sglang_contracts.infra.cache import RecordCache
    from sglang_contracts.sources.base import Release
    from sglang_contracts.sources.directory import DirectoryTree
    from sglang_contracts.upstream.model import UpstreamModel
    from sglang_contracts.upstream.targets import resolve_target

    files = {"sglang/__init__.py": "", "sglang/srt/registry.py": (
        "class Registry:\n    @classmethod\n    def register(cls, name):\n        setattr(cls, name, cls())\n"
        "Registry.register('NONE')\n\nclass Plain:\n    pass\n")}
    for relpath, text in files.items():
        (tmp_path / relpath).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relpath).write_text(text)
    model = UpstreamModel(Release("sglang (test)", "0.1.0", DirectoryTree(tmp_path)), RecordCache(None))
    assert resolve_target(model, "sglang.srt.registry.Registry.NONE").status == "unknown"
    assert resolve_target(model, "sglang.srt.registry.Plain.NONE").status == "missing"


def _statements_read(monkeypatch) -> list[int]:
    """A counter of the top-level statements toplevel.py reads, however many passes it makes."""
    from sglang_contracts.upstream import toplevel

    count = [0]
    original = toplevel._top_statements

    def counted(body, conditional=False):
        for item in original(body, conditional):
            count[0] += 1
            yield item

    monkeypatch.setattr(toplevel, "_top_statements", counted)
    return count


def test_loops_over_a_table_read_the_top_level_once_however_many_there_are(monkeypatch) -> None:
    """Issue 38 D01/D03: each `for n in T: globals()[n] = 1` read the whole top level again
    (3,000 loops: 55 s); the names they set are still the table's, as of each loop."""
    from sglang_contracts.upstream.toplevel import MODULE, dynamic_setters

    loops = 400
    code = "T = ['a']\n" + "for n in T:\n    globals()[n] = 1\nT.append('b')\n" * loops + "x = 1\n"
    count = _statements_read(monkeypatch)
    literal, dynamic = dynamic_setters(ast.parse(code))
    statements = 2 + 3 * loops
    assert count[0] <= 2 * statements  # quadratic before: about loops * statements / 2
    assert list(literal[MODULE]) == ["a", "b"] and literal[MODULE]["b"] == (6, "attribute") and not dynamic


def test_all_extended_by_calls_reads_the_top_level_once(monkeypatch) -> None:
    """Issue 38 D02: each `__all__ += f()` read the whole top level again (4,000 lines: 40 s)."""
    lines = 400
    code = "x = ['x']\n__all__ = []\n" + "__all__ += f()\n__all__ += ['a']\n" * lines
    count = _statements_read(monkeypatch)
    assert evaluated_exports(ast.parse(code)) == {"names": ["a"] * lines, "globals": None, "unknown": True}
    assert count[0] <= 2 * (2 + 2 * lines)


def test_a_rebuilt_all_keeps_the_table_as_of_its_last_comprehension() -> None:
    code = ("_X = {'a'}\n__all__ = [n for n in globals() if n not in _X]\n_X.add('b')\n"
            "__all__ = [n for n in globals() if n not in _X]\n_X.add('c')\n")
    assert exported(code, ["a", "b", "c"]) == {"a": False, "b": False, "c": True}
