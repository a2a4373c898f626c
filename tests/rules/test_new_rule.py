"""scripts/new_rule.py, the scaffold CONTRIBUTING.md tells a contributor to start a rule with: run
into a copy of the checkout, what it writes is picked up by the catalog's registry tests (the
rule documented, registered, named after its rule, in its group's code family, with a reported
and a valid example, in the regenerated docs/rules.md), and its reported example fails until
the check is written."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import CHECKOUT

COPIED = ["sglang_contracts", "rules", "scripts", "docs", "pyproject.toml", "tests/__init__.py", "tests/conftest.py",
          "tests/helpers.py", "tests/rules/__init__.py", "tests/rules/test_catalog.py", "tests/rules/test_rules_doc.py"]


def _copy(root: Path) -> Path:
    for name in COPIED:
        source, target = CHECKOUT / name, root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)  # with its bytecode, still valid (copy2 keeps mtimes)
        else:
            shutil.copy2(source, target)
    return root


def _run(copy: Path, *argv: str) -> subprocess.CompletedProcess:
    # The copy's package, not the installed one: `python -m` puts the working folder first.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run([sys.executable, *argv], cwd=copy, env=env, capture_output=True, text=True)


def test_a_scaffolded_rule_is_picked_up_by_the_registry_tests(tmp_path: Path) -> None:
    copy = _copy(tmp_path / "checkout")
    made = _run(copy, "scripts/new_rule.py", "SGC1106", "http-response-key-gone")
    assert made.returncode == 0, made.stderr
    made = _run(copy, "scripts/new_rule.py", "SGC709", "stack-example-gone", "--module", "scaffolded",
                "--reads", "whole-project", "--process", "copy", "--severity", "warning")
    assert made.returncode == 0, made.stderr
    assert 'group = "http"' in (copy / "rules/SGC1106.toml").read_text()
    assert '@contract("SGC1106", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)\ndef http_response_key_gone(' \
        in (copy / "sglang_contracts/contracts/http.py").read_text()
    assert " scaffolded," in (copy / "sglang_contracts/contracts/__init__.py").read_text()

    selected = ["tests/rules/test_catalog.py::test_every_check_is_documented_and_every_rule_checked",
                "tests/rules/test_catalog.py::test_code_families_are_prefix_disjoint",
                "tests/rules/test_catalog.py::test_every_check_is_named_after_its_rule_and_declares_its_decisions",
                "tests/rules/test_rules_doc.py::test_the_rule_reference_is_not_stale"]
    for code in ("SGC1106", "SGC709"):
        selected += [f"tests/rules/test_catalog.py::test_rule_has_invalid_and_valid_examples[{code}]",
                     f"tests/rules/test_catalog.py::test_fix_is_documented_with_examples[{code}]"]
    # One process: two workers would each start and collect the catalog for these few tests.
    tests = _run(copy, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "-n", "0", *selected,
                 "tests/rules/test_catalog.py::test_rule_example", "-k", "not test_rule_example or SGC1106 or SGC709")
    outcomes = {line.split(" ", 1)[1].split(" - ")[0]: line.split(" ", 1)[0]
                for line in tests.stdout.splitlines() if line.startswith(("PASSED ", "FAILED ", "ERROR "))}
    for test in selected:
        assert outcomes.get(test) == "PASSED", (test, tests.stdout[-3000:])
    examples = {test: outcome for test, outcome in outcomes.items() if "test_rule_example[" in test}
    # Per rule: the valid example holds; the reported one fails until the check finds it.
    assert sorted(examples.values()) == ["FAILED", "FAILED", "PASSED", "PASSED"], examples
    assert all((outcome == "PASSED") == ("valid" in test) for test, outcome in examples.items()), examples
