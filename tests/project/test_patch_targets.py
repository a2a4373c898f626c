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
