"""A star import of an SGLang module binds what the module exported on the old release: each name
the file reads and binds nowhere itself is judged as `from m import name` would be (campaign 9, R12)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import upstream_tree, write_tree
from sglang_contracts.check.runner import CheckOptions, run_check

A = "sglang/srt/a.py"


def _diagnostics(tmp_path: Path, old: dict[str, str], new: dict[str, str], files: dict[str, str], **options) -> list:
    """The findings of `files` from `old` to `new`."""
    project = write_tree(tmp_path / "p", {"pyproject.toml": '[project]\nname = "p"\n', **files})
    result = run_check([project], CheckOptions(old=str(upstream_tree(tmp_path / "old", old, "1.0.0")),
                                               new=str(upstream_tree(tmp_path / "new", new, "1.0.1")),
                                               cache_dir=tmp_path / "cache", workers=1, **options))
    return result.diagnostics


def _check(tmp_path: Path, old: dict[str, str], new: dict[str, str], files: dict[str, str],
           **options) -> list[tuple[str, int, int, str, str]]:
    """(path, line, col, code, severity) of each finding of `files` from `old` to `new`."""
    return [(d.path, d.line, d.col, d.code, d.severity) for d in _diagnostics(tmp_path, old, new, files, **options)]


def _codes(found: list[tuple[str, int, int, str, str]]) -> list[tuple[str, int, str]]:
    return [(path, line, code) for path, line, _, code, _ in found]


R12_OLD = {A: "x = 1\n\n\ndef f(a, b=1):\n    return a\n"}
R12_NEW = {A: "def f(a):\n    return a\n"}


@pytest.mark.parametrize("star", ["import *", "import*"])
def test_a_star_import_s_lost_name_and_lost_parameter_are_reported_as_for_an_explicit_import(tmp_path, star) -> None:
    """R12: the lost name at the star import (where an explicit import reports it), the call at the call."""
    star = _check(tmp_path / "star", R12_OLD, R12_NEW, {"star.py": f"from sglang.srt.a {star}\nprint(x)\nf(1, b=2)\n"})
    plain = _check(tmp_path / "plain", R12_OLD, R12_NEW,
                   {"star.py": "from sglang.srt.a import x, f\nprint(x)\nf(1, b=2)\n"})
    assert _codes(star) == [("star.py", 1, "SGC102"), ("star.py", 3, "SGC201")]
    assert _codes(star) == _codes(plain)


def test_names_the_file_binds_itself_and_builtins_are_not_the_star_import_s(tmp_path) -> None:
    """`x` assigned in the module, `len` a builtin, `f` a parameter where it is called there: none
    is upstream's, though the module lost `x` and `len`; the module-level call of `f` is."""
    old = {A: "x = 1\nlen = 2\n\n\ndef f(a, b=1):\n    return a\n"}
    new = {A: "def f(a):\n    return a\n"}
    found = _check(tmp_path, old, new, {"m.py": "from sglang.srt.a import *\n\nx = 2\nprint(x, len([]))\n\n\n"
                                                "def g(f):\n    return f(1, b=2)\n\n\nf(1, b=2)\n"})
    assert _codes(found) == [("m.py", 11, "SGC201")]


def test_all_limits_the_names_a_star_import_binds(tmp_path) -> None:
    """`__all__` leaves `x` out: the file's `x` is not the module's, and its loss is no contract; `f`'s is."""
    old = {A: "__all__ = ['f']\nx = 1\n\n\ndef f(a, b=1):\n    return a\n"}
    new = {A: "__all__ = ['f']\n\n\ndef f(a):\n    return a\n"}
    found = _check(tmp_path, old, new, {"m.py": "from sglang.srt.a import *\nprint(x)\nf(1, b=2)\n"})
    assert _codes(found) == [("m.py", 3, "SGC201")]


def test_a_name_only_the_new_release_gives_is_no_contract(tmp_path) -> None:
    """`g` came with the new release: the project did not get it from the star import it was
    written against (its call is not judged), while `f`, which the old release gave, is."""
    old = {A: "def f(a, b=1):\n    return a\n"}
    new = {A: "def f(a):\n    return a\n\n\ndef g(a):\n    return a\n"}
    found = _check(tmp_path, old, new, {"m.py": "from sglang.srt.a import *\ng(1, b=2)\nf(1, b=2)\n"})
    assert _codes(found) == [("m.py", 3, "SGC201")]


def test_names_given_through_upstream_s_own_star_imports_are_judged(tmp_path) -> None:
    """The package re-exports its submodule with a star import of its own; the private name is not given."""
    old = {"sglang/srt/__init__.py": "from sglang.srt.a import *\n", **R12_OLD}
    new = {"sglang/srt/__init__.py": "from sglang.srt.a import *\n", **R12_NEW}
    found = _check(tmp_path, old, new, {"m.py": "from sglang.srt import *\nprint(x)\nf(1, b=2)\n"})
    assert _codes(found) == [("m.py", 1, "SGC102"), ("m.py", 3, "SGC201")]


def test_of_two_star_imports_that_give_a_name_the_last_binds_it(tmp_path) -> None:
    """`f` of sglang.srt.b, imported last, still takes `b`; sglang.srt.a's lost it."""
    old = {**R12_OLD, "sglang/srt/b.py": "def f(a, b=1):\n    return a\n"}
    new = {**R12_NEW, "sglang/srt/b.py": "def f(a, b=1):\n    return a\n"}
    last_b = _check(tmp_path / "b", old, new, {"m.py": "from sglang.srt.a import *\nfrom sglang.srt.b import *\n"
                                                       "f(1, b=2)\n"})
    last_a = _check(tmp_path / "a", old, new, {"m.py": "from sglang.srt.b import *\nfrom sglang.srt.a import *\n"
                                                       "f(1, b=2)\n"})
    assert last_b == []
    assert _codes(last_a) == [("m.py", 3, "SGC201")]


def test_a_guarded_star_import_does_not_fall_back_for_a_lost_name(tmp_path) -> None:
    """`from m import *` does not fail when m lost a name (its use does): SGC102, not SGC104."""
    found = _check(tmp_path, R12_OLD, R12_NEW, {"m.py": "try:\n    from sglang.srt.a import *\nexcept ImportError:\n"
                                                        "    pass\nprint(x)\n"})
    assert _codes(found) == [("m.py", 2, "SGC102")]


def test_a_star_import_whose_names_cannot_be_told_says_they_are_not_checked(tmp_path) -> None:
    """An `__all__` computed in a way not evaluated: one warning at the import, the names it leaves unjudged."""
    computed = "def f(a, b=1):\n    return a\n\n\n__all__ = [n for n, v in list(globals().items()) if callable(v)]\n"
    found = _check(tmp_path, {A: computed}, {A: computed}, {"m.py": "from sglang.srt.a import *\nf(1)\nf(2)\n"})
    assert found == [("m.py", 1, 26, "SGC000", "warning")]


def test_fix_leaves_a_star_import_of_a_moved_module_as_it_is(tmp_path, capsys) -> None:
    """The module moved, with every name the file reads: the star import is not rewritten to
    the new one (what its `*` binds there beyond those names is not verified), and fix says so."""
    from sglang_contracts.cli import main

    old = upstream_tree(tmp_path / "old", R12_OLD, "1.0.0")
    new = upstream_tree(tmp_path / "new", {"sglang/srt/b.py": R12_OLD[A]}, "1.0.1")
    written = "from sglang.srt.a import *\nprint(x)\nf(1, b=2)\n"
    project = write_tree(tmp_path / "p", {"pyproject.toml": '[project]\nname = "p"\n', "m.py": written})
    main(["fix", str(project), "--old", str(old), "--new", str(new), "--cache-dir", str(tmp_path / "cache")])
    assert (project / "m.py").read_text() == written
    assert "SGC101 not fixed: a star import is not rewritten" in capsys.readouterr().err


def test_fix_does_not_move_a_name_a_star_import_gave_to_its_verified_home(tmp_path, capsys) -> None:
    """`g` is defined, the same, in sglang.srt.b now: reported with its home, but no statement
    imports it by name, and the star import is left as it is."""
    from sglang_contracts.cli import main

    helper = "def g(a):\n    return a + 1\n"
    old = upstream_tree(tmp_path / "old", {A: helper}, "1.0.0")
    new = upstream_tree(tmp_path / "new", {A: "", "sglang/srt/b.py": helper}, "1.0.1")
    written = "from sglang.srt.a import *\nprint(g(1))\n"
    project = write_tree(tmp_path / "p", {"pyproject.toml": '[project]\nname = "p"\n', "m.py": written})
    main(["fix", str(project), "--old", str(old), "--new", str(new), "--cache-dir", str(tmp_path / "cache")])
    assert (project / "m.py").read_text() == written
    assert "m.py:1:26: SGC102 g is no longer importable" in capsys.readouterr().out


# A project module that star-imports the SGLang module, and gives its names by a star import of its own.
BASE = {"pk/__init__.py": "", "pk/base.py": "from sglang.srt.a import *\n"}
USES = "print(x)\nf(1, b=2)\n"


def test_a_star_import_of_a_project_module_gives_what_its_star_import_of_sglang_gives(tmp_path) -> None:
    """pk/m.py reads `x` and calls `f`, which `from pk.base import *` gives from sglang.srt.a: as if
    m.py imported them from there, the lost name at m.py's star import, naming the SGLang module and
    the project module it came through; the call at the call. pk/base.py uses neither."""
    found = _diagnostics(tmp_path, R12_OLD, R12_NEW, {**BASE, "pk/m.py": "from pk.base import *\n" + USES})
    direct = _diagnostics(tmp_path / "direct", R12_OLD, R12_NEW, {"pk/m.py": "from sglang.srt.a import *\n" + USES})
    assert [(d.path, d.line, d.code) for d in found] == [("pk/m.py", 1, "SGC102"), ("pk/m.py", 3, "SGC201")]
    assert found[0].col == len("from pk.base import ") + 1  # at the `*`, as the direct star import's at its own
    assert found[1].message == direct[1].message
    assert "x is no longer importable from sglang.srt.a (star-imported through pk.base) in sglang 1.0.1" \
        in found[0].message


def test_a_chain_of_project_star_imports_gives_sglang_s_names_through_each(tmp_path) -> None:
    """pk/c.py star-imports pk.m (relatively), which star-imports pk.base, which star-imports sglang.srt.a."""
    files = {**BASE, "pk/m.py": "from pk.base import *\n", "pk/c.py": "from .m import *\n" + USES}
    found = _diagnostics(tmp_path, R12_OLD, R12_NEW, files)
    assert [(d.path, d.line, d.code) for d in found] == [("pk/c.py", 1, "SGC102"), ("pk/c.py", 3, "SGC201")]
    assert "from sglang.srt.a (star-imported through pk.m then pk.base)" in found[0].message


def test_a_name_the_project_module_binds_itself_is_its_own_not_sglang_s(tmp_path) -> None:
    """pk/base.py assigns `x` after its star import: m.py's `x` is the project's, its loss upstream
    no contract; `f` is still sglang.srt.a's. So where m.py star-imports sglang.srt.a first and
    pk.base after, whose `x` binds last."""
    base = {"pk/__init__.py": "", "pk/base.py": "from sglang.srt.a import *\n\nx = 2\n"}
    found = _check(tmp_path / "m", R12_OLD, R12_NEW, {**base, "pk/m.py": "from pk.base import *\n" + USES})
    after = _check(tmp_path / "after", R12_OLD, R12_NEW,
                   {**base, "pk/m.py": "from sglang.srt.a import *\nfrom pk.base import *\nprint(x)\n"})
    assert _codes(found) == [("pk/m.py", 3, "SGC201")]
    assert after == []


def test_a_name_the_project_module_binds_before_its_star_import_is_the_star_s(tmp_path) -> None:
    """pk/base.py defines `f` before its star import, which binds sglang.srt.a's `f` over it as
    Python runs them (and `x` in a function, run later: its own): m.py's call of `f` is judged."""
    base = {"pk/__init__.py": "", "pk/base.py": "def f(a, b=1):\n    return a\n\n\nfrom sglang.srt.a import *\n\n\n"
                                                "def init():\n    global x\n    x = 2\n"}
    found = _check(tmp_path, R12_OLD, R12_NEW, {**base, "pk/m.py": "from pk.base import *\n" + USES})
    assert _codes(found) == [("pk/m.py", 3, "SGC201")]


def test_the_project_module_s_all_limits_what_its_star_import_gives(tmp_path) -> None:
    """pk/base.py's `__all__` lists `f` only: m.py's `x` was never given by that star import, so
    sglang.srt.a's loss of it is no contract of m.py's; `f`'s call is."""
    base = {"pk/__init__.py": "", "pk/base.py": "from sglang.srt.a import *\n\n__all__ = ['f']\n"}
    found = _check(tmp_path, R12_OLD, R12_NEW, {**base, "pk/m.py": "from pk.base import *\n" + USES})
    assert _codes(found) == [("pk/m.py", 3, "SGC201")]


# pk/base.py star-imports pk/inner.py, which star-imports sglang.srt.a: each form names what the star gives
NAMED = {"from pk.base import x, f\nprint(x)\nf(1, b=2)\n": "pk.base",
         "import pk.base\nprint(pk.base.x)\npk.base.f(1, b=2)\n": "pk",
         "from pk import base\nprint(base.x)\nbase.f(1, b=2)\n": "base"}


@pytest.mark.parametrize("uses", NAMED, ids=NAMED.values())
def test_a_name_a_project_module_s_star_import_gives_is_sglang_s_however_it_is_imported(tmp_path, uses) -> None:
    """`from pk.base import f`, `pk.base.f`, `base.f`: the same rules, severities and messages as
    the same reads of sglang.srt.a itself, the lost `x` where each form reads it; the import by
    name's message names the project modules it came through, as a star import's does."""
    chain = {"pk/__init__.py": "", "pk/base.py": "from pk.inner import *\n", "pk/inner.py": "from sglang.srt.a import *\n"}
    direct = uses.replace("pk.base", "sglang.srt.a").replace("from pk import base", "from sglang.srt import a as base")
    found = _diagnostics(tmp_path / "shim", R12_OLD, R12_NEW, {**chain, "m.py": uses})
    plain = _diagnostics(tmp_path / "plain", R12_OLD, R12_NEW, {"m.py": direct})
    assert [(d.line, d.code, d.severity) for d in found] == [(d.line, d.code, d.severity) for d in plain]
    assert [d.code for d in found] == ["SGC102" if uses.startswith("from pk.base") else "SGC105", "SGC201"]
    assert found[1].message == plain[1].message
    through = " (star-imported through pk.base then pk.inner)" if uses.startswith("from pk.base") else ""
    assert found[0].message == plain[0].message.replace("sglang.srt.a in", f"sglang.srt.a{through} in")


def test_a_name_a_project_module_binds_after_its_star_import_is_its_own_before_it_the_star_s(tmp_path) -> None:
    """pk/base.py defines `f` after its star import (its own: no contract) and `g` before it
    (the star import binds sglang.srt.a's over it, as Python runs them): only `g`'s call is judged."""
    old = {A: "def f(a, b=1):\n    return a\n\n\ndef g(a, b=1):\n    return a\n"}
    new = {A: "def f(a):\n    return a\n\n\ndef g(a):\n    return a\n"}
    base = {"pk/__init__.py": "", "pk/base.py": "def g(a, b=1):\n    return a\n\n\nfrom sglang.srt.a import *\n\n\n"
                                                "def f(a, b=1):\n    return a\n"}
    uses = "import pk.base\nfrom pk.base import f, g\n\nf(1, b=2)\ng(1, b=2)\npk.base.f(1, b=2)\npk.base.g(1, b=2)\n"
    assert _codes(_check(tmp_path, old, new, {**base, "m.py": uses})) == [("m.py", 5, "SGC201"), ("m.py", 7, "SGC201")]


def test_the_project_module_s_all_limits_its_star_import_not_an_import_of_it_by_name(tmp_path) -> None:
    """pk/base.py's `__all__` lists `x` only: `from pk.base import *` gives no `f`, but pk.base
    holds sglang.srt.a's `f` all the same, which `from pk.base import f` and `pk.base.f` get."""
    base = {"pk/__init__.py": "", "pk/base.py": "from sglang.srt.a import *\n\n__all__ = ['x']\n"}
    uses = "import pk.base\nfrom pk.base import f\n\nf(1, b=2)\npk.base.f(1, b=2)\n"
    found = _check(tmp_path, R12_OLD, R12_NEW, {**base, "m.py": uses})
    assert _codes(found) == [("m.py", 4, "SGC201"), ("m.py", 5, "SGC201")]


@pytest.mark.parametrize("imports, uses", [("from sglang.srt.a import x, f\n", USES),
                                           ("from sglang.srt import a\n", "print(a.x)\na.f(1, b=2)\n")],
                         ids=["names", "module"])
def test_a_star_import_of_a_project_module_gives_what_it_imports_from_sglang_by_name(tmp_path, imports, uses) -> None:
    """pk/base.py imports sglang.srt.a's `x` and `f` by name (or the module `a`), no star import of
    its own: `from pk.base import *` binds them as SGLang's all the same, as `from pk.base import f`
    does; the call through the star import was never judged, exit 0 (campaign 19, R06). Judged as
    the same reads of an import from pk.base by name."""
    base = {"pk/__init__.py": "", "pk/base.py": imports}
    found = _diagnostics(tmp_path / "star", R12_OLD, R12_NEW, {**base, "pk/m.py": "from pk.base import *\n" + uses})
    bound = imports.split(" import ")[1].strip()
    named = _diagnostics(tmp_path / "named", R12_OLD, R12_NEW,
                         {**base, "pk/m.py": f"from pk.base import {bound}\n" + uses})
    assert [(d.line, d.code) for d in found] == [(d.line, d.code) for d in named]
    assert [d.code for d in found][-1] == "SGC201" and found[-1].message == named[-1].message
