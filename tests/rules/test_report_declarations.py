"""How reports treat a rule's findings is declared in its catalog entry (`report = { ... }`,
catalog.Report) and nowhere else: each declaration is read by the machinery that acts on it
(the bump's filter in check/runner.py, the markdown report), and an entry that misspells a key
or gives one a value of the wrong type is refused by the loader with a message naming both."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from sglang_contracts.check.runner import CheckOptions, bump_noise_filtered, bump_touched, run_check
from sglang_contracts.diagnostics import Diagnostic, finding_at
from sglang_contracts.diagnostics.catalog import BUMP_ROLES, Report, load_catalog, load_rule, report_of
from sglang_contracts.infra.errors import ContractsError
from sglang_contracts.reporters.markdown import write_markdown
from tests.helpers import markdown_sections, upstream_tree, write_tree

PATCH = "docker/patch/latest/sglang.patch"


@pytest.fixture(scope="module")
def empty_result(tmp_path_factory):
    """A bump's result on a small project, to which each test gives its own findings."""
    root = tmp_path_factory.mktemp("declarations")
    old = upstream_tree(root / "old", {"sglang/srt/x.py": "def f(): ...\n"}, "0.1.0")
    new = upstream_tree(root / "new", {"sglang/srt/x.py": "def f(): ...\n"}, "0.2.0")
    project = write_tree(root / "project", {"pyproject.toml": "[project]\nname = 'app'\n",
                                            "app/use.py": "from sglang.srt.x import f\n"})
    return run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1))


def hunks(count: int) -> list[Diagnostic]:
    return [finding_at("SGC901", PATCH, n, 1, "python/sglang/srt/x.py", what=f"hunk #{n} of python/sglang/srt/x.py",
                       reason="its context changed", old="0.1.0", new="0.2.0") for n in range(1, count + 1)]


def markdown(result, diagnostics: list[Diagnostic]) -> str:
    class Out(list):
        write = list.append

    out = Out()
    write_markdown(dataclasses.replace(result, diagnostics=diagnostics), out, fixes=(0, []))
    return "".join(out)


def declare(monkeypatch, code: str, **report) -> None:
    """The catalog of this process with `code`'s entry declaring `report` instead of what it does."""
    entry = load_catalog()[code]
    monkeypatch.setitem(load_catalog(), code, dataclasses.replace(entry, report=Report(**report)))


def test_the_bump_s_filter_treats_each_code_as_its_entry_declares() -> None:
    """The codes whose findings mark a file as one the bump touches, and those reported only in
    such files, are those whose entries declare so: every code of the catalog, one file each."""
    catalog = load_catalog()
    found = [Diagnostic(path=f"{code}.py", line=1, col=1, code=code, severity="warning", message="", symbol="")
             for code in catalog]
    assert {path.removesuffix(".py") for path in bump_touched(found)} == \
        {code for code, entry in catalog.items() if entry.report.bump == "of-the-bump"}
    assert {d.code for d in found} - {d.code for d in bump_noise_filtered(found, touched={})} == \
        {code for code, entry in catalog.items() if entry.report.bump == "shown-where-the-bump-touches"}
    assert {entry.report.bump for entry in catalog.values()} == set(BUMP_ROLES)  # each role is some rule's


@pytest.mark.parametrize("role", BUMP_ROLES)
def test_the_bump_role_a_rule_declares_is_the_one_the_run_applies(monkeypatch, role: str) -> None:
    found = hunks(1)
    declare(monkeypatch, "SGC901", bump=role, hunk_wording=report_of("SGC901").hunk_wording)
    assert bool(bump_touched(found)) == (role == "of-the-bump")
    assert bool(bump_noise_filtered(found, touched={})) == (role != "shown-where-the-bump-touches")
    assert bump_noise_filtered(found, touched={PATCH: {"SGC101"}}) == found  # where the bump touches, always


def test_the_hunk_wording_an_entry_declares_is_the_report_s(monkeypatch, empty_result) -> None:
    declare(monkeypatch, "SGC901", hunk_wording={"one": "is stale", "many": "are stale"})
    assert f"`{PATCH}`: 3 hunks are stale (SGC901)" in markdown(empty_result, hunks(3))
    assert f"`{PATCH}`: 1 hunk is stale (SGC901)" in markdown(empty_result, hunks(1))


def test_a_rule_without_a_hunk_wording_is_listed_not_counted(monkeypatch, empty_result) -> None:
    declared = markdown(empty_result, hunks(2))
    declare(monkeypatch, "SGC901")
    undeclared = markdown(empty_result, hunks(2))
    assert "2 hunks no longer apply (SGC901)" in declared and "hunks no longer apply" not in undeclared
    assert "- **error** SGC901:" in undeclared and "- **error** SGC901:" not in declared


def test_an_inherited_rule_has_the_section_of_its_own(monkeypatch, empty_result) -> None:
    assert not any(heading.startswith("Inherited") for heading in markdown_sections(markdown(empty_result, hunks(2))))
    declare(monkeypatch, "SGC901", inherited=True)
    sections = markdown_sections(markdown(empty_result, hunks(2)))
    assert "Inherited upstream behaviour: 2 methods" in sections
    assert not any(heading.startswith("Patch files") for heading in sections)


def test_guards_of_what_both_define_are_counted_apart_in_the_headline(monkeypatch, empty_result) -> None:
    assert "defensive code" not in markdown(empty_result, hunks(3))
    declare(monkeypatch, "SGC901", guards_what_both_define=True, hunk_wording=report_of("SGC901").hunk_wording)
    assert "; 3 of them are defensive code guarding what both releases define" in markdown(empty_result, hunks(3))


HEAD = 'code = "SGC101"\nname = "x"\nseverity = "error"\ngroup = "imports"\nsummary = "s"\ndescription = "d"\nmessage = "m"\n'


@pytest.mark.parametrize(("line", "said"), [
    ('report = { inherted = true }', "unknown key report.inherted"),
    ('reprot = { inherited = true }', "unknown key reprot"),
    ('report = { inherited = "yes" }', "report.inherited must be a boolean (true or false), not 'yes'"),
    ('report = { guards_what_both_define = 1 }', "report.guards_what_both_define must be a boolean"),
    ('report = "inherited"', "report must be a table, not 'inherited'"),
    ('report = { bump = true }', "report.bump must be a string, not True"),
    ('report = { bump = "sometimes" }', "report.bump must be one of 'of-the-bump', "),
    ('report = { hunk_wording = ["applies", "apply"] }', "report.hunk_wording must be a table"),
    ('report = { hunk_wording = { one = "applies" } }', "report.hunk_wording must be a table of two strings"),
    ('report = { hunk_wording = { one = "applies", many = 2 } }', "report.hunk_wording must be a table of two strings"),
    ('fix_description = 3', "fix_description must be a string, not 3"),
])
def test_an_entry_with_an_unknown_key_or_a_wrong_type_is_refused(tmp_path: Path, line: str, said: str) -> None:
    path = tmp_path / "SGC101.toml"
    path.write_text(HEAD + line + "\n")
    with pytest.raises(ContractsError) as refused:
        load_rule(path)
    assert str(refused.value).startswith(f"{path}: ") and said in str(refused.value)


def test_an_entry_that_declares_nothing_is_a_break_of_the_bump(tmp_path: Path) -> None:
    path = tmp_path / "SGC101.toml"
    path.write_text(HEAD)
    assert load_rule(path).report == Report(bump="of-the-bump", inherited=False, guards_what_both_define=False,
                                            hunk_wording={})
    assert report_of("SGC9999") == Report()  # a code no entry has (a newer tool's, in a baseline)
