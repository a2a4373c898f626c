"""Every rule in rules/ is documented, registered, and its examples hold (fixit's VALID/INVALID style)."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest

import sglang_contracts.contracts  # noqa: F401  (registers the checks)
from sglang_contracts.diagnostics.catalog import Example, Report, load_rule, load_catalog
from sglang_contracts.contracts.base import CHECKS, contract
from sglang_contracts.diagnostics.catalog import SURFACES, surface_for
from sglang_contracts.check.runner import CheckOptions, run_check
from sglang_contracts.diagnostics.suppressions import RUNNER_RULES
from tests.helpers import upstream_tree, write_tree

CATALOG = load_catalog()
EXAMPLES = [(code, example) for code, rule in CATALOG.items() for example in rule.examples]




def run_example(tmp_path: Path, example: Example) -> list[str]:
    old = upstream_tree(tmp_path / "old", example.old, "0.1.0")
    new = old if example.pin_alone else upstream_tree(tmp_path / "new", example.new, "0.2.0")
    project = write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n", **example.project})
    options = CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1, **example.options)
    result = run_check([project], options)
    return [f"{d.path}:{d.line}:{d.col}: {d.code}" for d in result.diagnostics]


def run_example_severities(tmp_path: Path, example: Example) -> list[tuple[str, str]]:
    """(entry, severity) of each finding of the example, as run_example runs it."""
    old = upstream_tree(tmp_path / "old", example.old, "0.1.0")
    new = old if example.pin_alone else upstream_tree(tmp_path / "new", example.new, "0.2.0")
    project = write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n", **example.project})
    options = CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1, **example.options)
    return [(f"{d.path}:{d.line}:{d.col}: {d.code}", d.severity) for d in run_check([project], options).diagnostics]


@pytest.mark.parametrize(("code", "example"), EXAMPLES, ids=[f"{c}-{e.title[:40]}" for c, e in EXAMPLES])
def test_rule_example(tmp_path: Path, code: str, example: Example) -> None:
    found = run_example_severities(tmp_path, example)
    assert [entry for entry, _ in found] == list(example.expect)
    # the severities the example states (a warning that could not be verified, an error that is one)
    assert {entry: severity for entry, severity in found if entry in example.severities} == example.severities


# Rules no input of a correct tool triggers (a bug met at the error boundary): their reporting
# side is tested by injecting faults (test_reliability.py), their valid side by their examples.
FAULT_ONLY = {"SGC001"}


@pytest.mark.parametrize("code", sorted(CATALOG))
def test_rule_has_invalid_and_valid_examples(code: str) -> None:
    rule = CATALOG[code]
    if code not in FAULT_ONLY:
        assert any(any(f": {code}" in e for e in ex.expect) for ex in rule.examples), "no example reports the rule"
    assert any(not ex.expect for ex in rule.examples), "no valid example"
    assert rule.description and rule.summary and "{" in rule.message


def test_every_check_is_documented_and_every_rule_checked() -> None:
    assert set(CHECKS) | RUNNER_RULES == set(CATALOG)
    assert not set(CHECKS) & RUNNER_RULES


def test_code_families_are_prefix_disjoint() -> None:
    """A code belongs to one group, and a code prefix selects one group: no group's family is a
    prefix of another's (imports is SGC10, not SGC1, beside the HTTP API's SGC11), every rule's
    code is in the family of the group its entry names, and no code is a prefix of another
    (a rule SGC110 would be selected by `--select SGC110` with SGC1101-SGC1105)."""
    families = [surface.family for surface in SURFACES.values()]
    for one in families:
        assert [other for other in families if other.startswith(one)] == [one], one
    for code, rule in CATALOG.items():
        assert code.startswith(SURFACES[rule.group].family), (code, rule.group)
        assert surface_for(code) is SURFACES[rule.group]
        assert [other for other in CATALOG if other.startswith(code)] == [code], code


def test_every_check_is_named_after_its_rule_and_declares_its_decisions() -> None:
    """`@contract("SGC102", reads=..., process=...)` on `def imported_name_removed`: a reader
    finds the check from the rule's name, and what it reads and where it runs are declared
    beside it."""
    from sglang_contracts.contracts.base import READS, Process, Reads

    for code, check in CHECKS.items():
        assert check.__name__ == CATALOG[code].name.replace("-", "_"), (code, check.__name__)
    assert set(READS) == set(CHECKS)
    with pytest.raises(TypeError):
        contract("SGC999", reads="whole-project", process=Process.MAIN)  # a string is no declaration
    with pytest.raises(TypeError):
        contract("SGC999", reads=Reads.WHOLE_PROJECT, process=None)


def test_rule_messages_render_with_what_the_checks_provide(tmp_path: Path) -> None:
    """A message names both releases, so a reader knows which upstream change it is about."""
    for code, example in EXAMPLES:
        if not example.expect or surface_for(code).key == "project-files":
            continue  # about the project's own files (a syntax error, a stale noqa), not a release
        old = upstream_tree(tmp_path / code / "old", example.old, "0.1.0")
        new = upstream_tree(tmp_path / code / "new", example.new, "0.2.0")
        project = write_tree(tmp_path / code / "project", {"pyproject.toml": "", **example.project})
        options = CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1, **example.options)
        result = run_check([project], options)
        for diagnostic in result.diagnostics:
            if diagnostic.code == code:
                assert "0.1.0" in diagnostic.message and "0.2.0" in diagnostic.message, diagnostic.message


FIX_EXAMPLES = [(code, example) for code, rule in CATALOG.items() for example in rule.fix_examples]


@pytest.mark.parametrize(("code", "example"), FIX_EXAMPLES, ids=[f"{c}-{e.title[:40]}" for c, e in FIX_EXAMPLES])
def test_fix_example(tmp_path: Path, code: str, example) -> None:
    """`fix` turns the example's project into its `after` (every other file byte-identical),
    and a second run changes nothing."""
    from sglang_contracts.check.fixes import run_fix

    old = upstream_tree(tmp_path / "old", example.old, "0.1.0")
    new = upstream_tree(tmp_path / "new", example.new, "0.2.0")
    before = {"pyproject.toml": "[project]\nname = 'app'\n", **example.before}
    project = write_tree(tmp_path / "project", before)
    options = CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1)
    unsafe = CATALOG[code].fix == "unsafe" if example.unsafe_fixes is None else example.unsafe_fixes
    report = run_fix([project], options, unsafe=unsafe)
    refused = example.after == example.before  # a fix refused: it rewrites nothing, and says why
    assert bool(report.fixed) != refused and not report.errors
    if refused:
        assert any(f" {code} not fixed: " in note for note in report.notes), report.notes
    for relpath, text in before.items():
        assert (project / relpath).read_bytes().decode() == example.after.get(relpath, text), relpath
    # What the fix leaves, it says why it left.
    left = [d for d in report.remaining if d.code == code]
    assert len(left) == sum(f" {code} not fixed: " in note for note in report.notes), (left, report.notes)
    again = run_fix([project], options, unsafe=unsafe)
    assert again.fixed == 0 and not again.changed


@pytest.mark.parametrize("code", sorted(CATALOG))
def test_fix_is_documented_with_examples(code: str) -> None:
    """A rule can fix exactly when a fix is registered, and then it documents it with an example."""
    from sglang_contracts.contracts.base import FIXES

    rule = CATALOG[code]
    assert (code in FIXES) == (rule.fix is not None)
    if rule.fix:
        assert rule.fix_description and rule.fix_examples


@pytest.mark.parametrize("code", sorted(CATALOG))
def test_an_entry_read_without_its_examples_is_the_entry_read_whole(code: str) -> None:
    """A run reads each entry up to its first example (catalog.EXAMPLES_START): a key written
    after the examples (a `[message_defaults]` table at the end) would be lost that way."""
    rule = CATALOG[code]
    whole = tomllib.loads(rule.source.read_text())
    read = dataclasses.asdict(rule)
    for key, value in whole.items():
        if key in ("examples", "fix_examples"):
            assert len(getattr(rule, key)) == len(value)
        elif key == "report":  # what it declares; the rest is as the default
            assert read[key] == {**dataclasses.asdict(Report()), **value}
        else:
            assert read[key] == (value.strip() if key in ("description", "fix_description", "fix_safe_when") else value), key


def test_an_entry_whose_cut_falls_inside_a_string_is_read_whole(tmp_path: Path) -> None:
    text = CATALOG["SGC101"].source.read_text()
    head, _, tail = text.partition("[[examples]]")
    # a description that shows an example table at the start of a line: the cut there is no TOML
    cut = head.replace('description = """\n', 'description = """\n[[examples]]\n', 1) + "[[examples]]" + tail
    path = tmp_path / "SGC101.toml"
    path.write_text(cut)
    rule = load_rule(path)
    assert rule.description.startswith("[[examples]]") and rule.message == CATALOG["SGC101"].message
    assert len(rule.examples) == len(CATALOG["SGC101"].examples)
