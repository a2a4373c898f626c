"""SGC312's severity and message, on its catalog examples (tests/rules/test_catalog.py checks only places)."""

from __future__ import annotations

from pathlib import Path

from sglang_contracts.diagnostics.catalog import load_catalog
from sglang_contracts.check.runner import CheckOptions, run_check
from tests.helpers import upstream_tree, write_tree


def _run(tmp_path: Path, title: str):
    catalog = load_catalog()
    rules = catalog.values() if isinstance(catalog, dict) else catalog
    (example,) = [e for rule in rules if rule.code == "SGC312" for e in rule.examples if e.title.startswith(title)]
    old = upstream_tree(tmp_path / "old", example.old, "0.1.0")
    new = upstream_tree(tmp_path / "new", example.new, "0.2.0")
    project = write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n", **example.project})
    result = run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1))
    return [d for d in result.diagnostics if d.code == "SGC312"]


def test_a_path_that_already_raised_on_the_pinned_release_is_a_warning(tmp_path: Path) -> None:
    (found,) = _run(tmp_path, "a path that already read an attribute")
    assert found.severity == "warning"
    assert found.message.endswith("(in sglang 0.1.0 Scheduler.send_kv_chunk already read "
                                  "self.disagg_prefill_bootstrap_queue, which OmniScheduler never sets: "
                                  "this path could not run before either)")


def test_a_new_read_is_an_error_naming_the_upstream_setter(tmp_path: Path) -> None:
    (found,) = _run(tmp_path, "the same read, and the project does not call the new setter")
    assert found.severity == "error"
    assert found.message == (
        "OmniScheduler never sets self.load_publisher, which borrowed code reads in sglang 0.2.0 (not in 0.1.0): "
        "OmniScheduler.step -> Scheduler.process_batch_result -> reads self.load_publisher; "
        "upstream Scheduler.init_load_publisher sets load_publisher = object()")
