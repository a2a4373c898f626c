"""docs/rules.md is generated from rules/*.toml (scripts/generate_rules_doc.py): the checked-in
file must be what the generator writes now, as pre-commit-hooks' README test holds its README
to its hooks."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import CHECKOUT, load_script

SCRIPT = CHECKOUT / "scripts" / "generate_rules_doc.py"


def _generator():
    return load_script("generate_rules_doc")


def test_the_rule_reference_is_not_stale() -> None:
    generator = _generator()
    assert generator.TARGET.read_text() == generator.render(), (
        f"docs/rules.md is stale: run `{generator.COMMAND}` and commit the result")


def test_the_reference_has_every_rule_in_number_order() -> None:
    from sglang_contracts.diagnostics.catalog import load_catalog

    generator = _generator()
    text = generator.render()
    headings = [line.split(":")[0].removeprefix("### ") for line in text.splitlines() if line.startswith("### SGC")]
    assert sorted(headings) == sorted(load_catalog())
    for members in text.split("\n## ")[1:-1]:  # each group's table is in number order (SGC1101 after SGC105)
        codes = [row.split("]")[0].removeprefix("| [") for row in members.splitlines() if row.startswith("| [SGC")]
        assert codes == sorted(codes, key=generator.code_number)


def test_check_mode_says_how_to_regenerate(tmp_path, capsys) -> None:
    generator = _generator()
    stale = tmp_path / "rules.md"
    stale.write_text("# Rules\n")
    original = generator.TARGET
    generator.TARGET = stale
    try:
        assert generator.main(["--check"]) == 1
        assert f"is stale: run `{generator.COMMAND}`" in capsys.readouterr().err
        assert generator.main([]) == 0 and stale.read_text() == generator.render()
        assert generator.main(["--check"]) == 0
    finally:
        generator.TARGET = original


def test_the_command_runs_as_documented() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--check"], cwd=CHECKOUT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
