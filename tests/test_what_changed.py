"""Messages that say what changed (issue 33): run catalog examples and read their messages,
not only their positions (tests/test_catalog.py checks those)."""

from __future__ import annotations

from pathlib import Path

from sglang_contracts.check.runner import CheckOptions, run_check
from sglang_contracts.diagnostics.catalog import load_catalog
from test_catalog import upstream_tree, write_tree


def messages(tmp_path: Path, code: str, title_start: str) -> dict[str, list[str]]:
    """"path:line:col: CODE" -> the messages found there, for the catalog example of `code`
    whose title starts with `title_start`."""
    (example,) = [e for e in load_catalog()[code].examples if e.title.startswith(title_start)]
    old = upstream_tree(tmp_path / "old", example.old, "0.1.0")
    new = upstream_tree(tmp_path / "new", example.new, "0.2.0")
    project = write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n", **example.project})
    found: dict[str, list[str]] = {}
    for d in run_check([project], CheckOptions(old=str(old), new=str(new), use_cache=False, workers=1)).diagnostics:
        found.setdefault(f"{d.path}:{d.line}:{d.col}: {d.code}", []).append(d.message)
    return found


def test_a_missing_argument_says_what_changed_upstream(tmp_path: Path) -> None:
    """A new first positional parameter is named as such; a parameter that lost its default says
    which new parameters were put before it, not that it was 'optional before'."""
    found = messages(tmp_path, "SGC202", "a new first positional parameter")
    assert sorted(found["app/affinity.py:4:5: SGC202"]) == [
        "set_gpu_proc_affinity() requires argument gpu_id in sglang 0.2.0 (it had a default in 0.1.0; the new "
        "parameter pp_size now comes before it), and this call does not pass it",
        "set_gpu_proc_affinity() requires argument pp_size in sglang 0.2.0 (a new first positional parameter, "
        "absent in 0.1.0), and this call does not pass it",
    ]


def test_a_lost_patch_target_is_called_renamed_only_when_the_same_definition(tmp_path: Path) -> None:
    """_post_load_weights -> post_load_weights, the same body: a rename, said so. forward_cuda
    beside a new forward_cuda_graph with other parameters: named alike, another definition."""
    renamed = messages(tmp_path / "renamed", "SGC401", "a patched loader hook was renamed")
    assert renamed["app/patches.py:6:8: SGC401"][0].endswith(
        "; renamed to post_load_weights (the same definition): patch it there")
    other = messages(tmp_path / "other", "SGC401", "a patched method is gone, and the new release has a method named")
    (message,) = other["app/patches.py:6:9: SGC401"]
    assert "forward_cuda_graph" not in message and "renamed" not in message


def test_a_binding_moved_inside_a_function_names_the_function_and_the_module_to_patch(tmp_path: Path) -> None:
    found = messages(tmp_path, "SGC404", "the patched module binding moved inside the function")
    (message,) = found["app/patches.py:6:18: SGC404"]
    assert "Scheduler.__init__ imports it from sglang.srt.utils.common when it runs" in message
    assert message.endswith("patch sglang.srt.utils.common.get_bool_env")
