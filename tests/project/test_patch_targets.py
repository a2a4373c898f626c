"""Patch targets the scanner reads (SGC601's input): by literal, by `target=`, and built from the
module's string constants (campaign 9, R13)."""

from __future__ import annotations

from sglang_contracts.project.scanner import scan_source


def targets(source: str) -> list[tuple[str, str, int, int]]:
    """(callee, first-argument text, line, col) of each probe that names a dotted target first."""
    facts = scan_source("tests/test_m.py", "tests.test_m", source)
    return [(probe.function, found[0], found[1].line, found[1].col)
            for probe in facts.probes if (found := probe.string_at(0)) is not None]


def test_a_target_built_from_module_constants_given_by_keyword_or_deleted_is_read() -> None:
    source = ("from unittest import mock\n\n"
              "M = 'sglang.srt.a'\nX: str = f'{M}.x'\n\n"
              "@mock.patch(f'{M}.x')\n"  # 6
              "@mock.patch(M + '.y' + '.z')\n"  # 7
              "@mock.patch(X)\n"  # 8
              "@mock.patch(target='sglang.srt.a.w', new=1)\n"  # 9
              "def test_it(monkeypatch):\n"
              "    monkeypatch.delattr(M + '.v')\n"  # 11
              "    monkeypatch.setattr(f'{M}.u', 1)\n")  # 12
    assert targets(source) == [("mock.patch", "sglang.srt.a.x", 6, 13), ("mock.patch", "sglang.srt.a.y.z", 7, 13),
                               ("mock.patch", "sglang.srt.a.x", 8, 13), ("mock.patch", "sglang.srt.a.w", 9, 20),
                               ("monkeypatch.delattr", "sglang.srt.a.v", 11, 25),
                               ("monkeypatch.setattr", "sglang.srt.a.u", 12, 25)]


def test_a_name_that_may_hold_another_value_is_no_constant() -> None:
    """Rebound at module level or through `global`, shadowed by a parameter or a local, formatted
    with a spec or a conversion, or not a string: the target is not read, never guessed."""
    source = ("from unittest import mock\n\n"
              "A = 'sglang.srt.a'\nA = 'sglang.srt.b'\n"
              "B = 'sglang.srt.a'\n\ndef reset():\n    global B\n    B = 'app'\n\n"
              "C = 'sglang.srt.a'\n\ndef shadow(C):\n    mock.patch(f'{C}.x')\n\n"
              "D = 'sglang.srt.a'\nN = 3\n\n"
              "@mock.patch(f'{A}.x')\n@mock.patch(B + '.x')\n@mock.patch(f'{D!r}.x')\n@mock.patch(f'{D:>9}.x')\n"
              "@mock.patch(f'{N}.x')\n@mock.patch(f'{unknown}.x')\ndef test_it():\n    setattr(D, 'x', 1)\n")
    assert targets(source) == []


def test_each_keyword_of_patch_multiple_and_the_target_of_patch_dict_is_read() -> None:
    """`patch.multiple(target, x=..., y=...)` patches each keyword's attribute (not its own options),
    at the keyword; `patch.dict("a.b.T", ...)` imports its target first (campaign 10, R12)."""
    source = ("from unittest import mock\nfrom unittest.mock import patch\n\nimport sglang.srt.a as A\n\n"
              "M = 'sglang.srt.a'\n\n"
              "@patch.multiple('sglang.srt.a', x=1, y=2, spec=True, create=False)\n"  # 8
              "def test_it(mocker):\n"
              "    mocker.patch.multiple(target=f'{M}.C', z=1)\n"  # 10
              "    mock.patch.dict('sglang.srt.a.T', {'k': 1})\n"  # 11
              "    mock.patch.dict(in_dict=M + '.T', values={})\n"  # 12
              "    patch.multiple(A, w=1)\n")  # 13
    assert targets(source) == [("patch.multiple", "sglang.srt.a.x", 8, 33), ("patch.multiple", "sglang.srt.a.y", 8, 38),
                               ("mocker.patch.multiple", "sglang.srt.a.C.z", 10, 44),
                               ("mock.patch.dict", "sglang.srt.a.T", 11, 21), ("mock.patch.dict", "sglang.srt.a.T", 12, 29)]
    facts = scan_source("tests/test_m.py", "tests.test_m", source)
    assert [(p.subject.types, p.string_at(1)[0], p.string_at(1)[1].line) for p in facts.probes
            if p.function == "patch.multiple" and p.string_at(1)] == [(("C:A",), "w", 13)]


def test_patch_multiple_that_may_create_its_names_patches_none_that_must_exist() -> None:
    """`create=True` (or any value not literally false) makes what is missing; a `**` splat may hold
    `create`; `patch.dict` of a dict object names no dotted target; `dict(...)` is no patcher."""
    source = ("from unittest import mock\n\nflag = True\n\n"
              "def test_it():\n"
              "    mock.patch.multiple('sglang.srt.a', x=1, create=True)\n"
              "    mock.patch.multiple('sglang.srt.a', x=1, create=flag)\n"
              "    mock.patch.multiple('sglang.srt.a', x=1, **{'create': True})\n"
              "    mock.patch.dict(mock.__dict__, {'x': 1})\n"
              "    dict('sglang.srt.a.T')\n")
    facts = scan_source("tests/test_m.py", "tests.test_m", source)
    assert [p for p in facts.probes if p.function.endswith(("multiple", "dict"))] == []


def test_a_patcher_is_known_by_what_its_import_binds_and_patch_object_takes_keywords() -> None:
    """Campaign 11, R05: `patch` imported as P was no probe (its local name is no patcher's), and
    `patch.object(A, attribute="x")` had no attribute string. What the import binds decides: P is
    a patcher, a helper imported as `patch` is not; `target=` and `attribute=` are read as the first
    and second argument are."""
    source = ("from unittest import mock\nfrom unittest.mock import patch as P\nfrom app.util import helper as patch\n"
              "import sglang.srt.a as A\n\n"
              "def test_it():\n"
              "    P('sglang.srt.a.x')\n"  # 7
              "    P(target='sglang.srt.a.y')\n"  # 8
              "    patch('sglang.srt.a.z')\n"  # 9
              "    P.multiple('sglang.srt.a', w=1)\n"  # 10
              "    mock.patch.object(A, attribute='v')\n"  # 11
              "    P.object(target=A, attribute='u')\n")  # 12
    assert targets(source) == [("P", "sglang.srt.a.x", 7, 7), ("P", "sglang.srt.a.y", 8, 14),
                               ("P.multiple", "sglang.srt.a.w", 10, 32)]
    facts = scan_source("tests/test_m.py", "tests.test_m", source)
    assert [(p.function, p.subject.types, p.string_at(1)[0], p.string_at(1)[1].line) for p in facts.probes
            if p.function.endswith("object")] == [("mock.patch.object", ("C:A",), "v", 11),
                                                  ("P.object", ("C:A",), "u", 12)]
