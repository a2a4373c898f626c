"""After an edit only the files it can change are checked again (incremental.py), and the
findings are those of a full run: on the fixture project, and on real sglang-omni."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from tests.helpers import NEW, OLD, PROJECT, REAL_EDITS, collect_garbage
from tests.downloads import download_sdist
from sglang_contracts.check import incremental, runner
from sglang_contracts.diagnostics.catalog import load_catalog
from sglang_contracts.project.facts import FACT_LISTS
from sglang_contracts.check.runner import CheckOptions, run_check


@pytest.fixture
def plans(monkeypatch) -> list[incremental.Plan]:
    """Every plan the runs make, to tell which files were recomputed."""
    made: list[incremental.Plan] = []
    plan = incremental.plan

    def recording(*args, **kwargs):
        made.append(plan(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(incremental, "plan", recording)
    return made


def findings(result) -> list[dict]:
    return [d.to_json() for d in result.diagnostics]


def same_as_a_full_run(project: Path, options: CheckOptions):
    """The incremental result, asserted equal to a run that recomputes everything."""
    result = run_check([project], options)
    assert result.replayed_files_with_contracts is None
    assert findings(result) == findings(run_check([project], dataclasses.replace(options, replay=False)))
    return result


@pytest.fixture
def fixture_project(tmp_path: Path) -> tuple[Path, CheckOptions]:
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    return project, CheckOptions(old=str(OLD), new=str(NEW), cache_dir=tmp_path / "cache", replay=True)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_an_edit_recomputes_that_file_and_its_importers(fixture_project, plans) -> None:
    project, options = fixture_project
    first = run_check([project], options)
    assert plans[-1].full
    # A comment above the broken import (line 5): the findings from there on move down a line.
    edit(project / "demo_omni" / "layers.py", "from sglang.srt.layers.quantization import",
         "# quantization helpers\nfrom sglang.srt.layers.quantization import")
    after = same_as_a_full_run(project, options)
    assert plans[-1].recomputed == {"demo_omni/layers.py"}
    assert findings(after) != findings(first)
    assert [d.line for d in after.diagnostics if d.path == "demo_omni/layers.py"] == [
        d.line + (d.line >= 5) for d in first.diagnostics if d.path == "demo_omni/layers.py"]


def _padded(path: Path, size: int) -> None:
    """`path` made `size` bytes longer by a comment at its end: its facts stay as they were."""
    path.write_text(path.read_text() + "".join(f"# padding line {i:06d}\n" for i in range(size // 22 + 1)))


@pytest.mark.parametrize("copy", ["scans", "gives nothing"])
def test_a_large_edited_file_is_scanned_beside_the_records_decoded_with_a_full_runs_findings(
        fixture_project, plans, monkeypatch, copy) -> None:
    """A process of its own re-checking an edit scans the edited file in a forked copy while it
    decodes the other files' records (project/index.py _scanning_beside); a copy that gives
    nothing (it failed, or was stopped) leaves the file to be scanned here. Either way, the
    findings are a full run's."""
    from sglang_contracts.project import index

    project, options = fixture_project
    layers = project / "demo_omni" / "layers.py"
    _padded(layers, index.SCAN_BESIDE_MIN_BYTES)
    first = run_check([project], options)
    forked: list[int] = []
    real = index.start_forked

    def forking(function):
        forked.append(1)
        return real(function) if copy == "scans" else (lambda patience=None: None)

    monkeypatch.setattr(index, "start_forked", forking)
    edit(layers, "from sglang.srt.layers.quantization import",
         "# quantization helpers\nfrom sglang.srt.layers.quantization import")
    after = run_check([project], options)
    assert forked == [1]
    assert plans[-1].recomputed == {"demo_omni/layers.py"}
    assert findings(after) == findings(run_check([project], dataclasses.replace(options, replay=False)))
    assert [d.line for d in after.diagnostics if d.path == "demo_omni/layers.py"] == [
        d.line + (d.line >= 5) for d in first.diagnostics if d.path == "demo_omni/layers.py"]


def test_a_small_edited_file_is_scanned_here(fixture_project, plans, monkeypatch) -> None:
    """A copy costs more than the scan of a small file: none is made."""
    from sglang_contracts.project import index

    project, options = fixture_project
    run_check([project], options)
    monkeypatch.setattr(index, "start_forked", lambda function: pytest.fail("a copy for a small file"))
    edit(project / "demo_omni" / "layers.py", "from sglang.srt.layers.quantization import",
         "# quantization helpers\nfrom sglang.srt.layers.quantization import")
    same_as_a_full_run(project, options)
    assert plans[-1].recomputed == {"demo_omni/layers.py"}


def test_a_process_of_its_own_freezes_what_a_re_check_read_and_no_other_run_does(fixture_project, plans,
                                                                                 monkeypatch) -> None:
    """The collector never walks a re-check's inputs again in a process that ends with its run
    (infra/collector.kept_to_the_end); a full run, and a process that runs check after check,
    leave their objects to it."""
    import gc

    from sglang_contracts.infra import collector

    project, options = fixture_project
    frozen: list[int] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(len(plans)))
    layers = project / "demo_omni" / "layers.py"
    collector.one_run_process()
    run_check([project], options)
    assert plans[-1].full and frozen == []
    edit(layers, "from sglang.srt.layers.quantization import", "# one\nfrom sglang.srt.layers.quantization import")
    run_check([project], options)
    assert not plans[-1].full and frozen == [2]
    collector._ONE_RUN[0] = False
    collector.resident_process()
    edit(layers, "# one\n", "# one\n# two\n")
    run_check([project], options)
    assert not plans[-1].full and frozen == [2]


def test_runs_that_name_other_files_reuse_each_others_findings(fixture_project, plans) -> None:
    """A pre-commit run names the staged files: the record holds every file's findings, so the
    next run, whichever files it names, recomputes only what changed."""
    project, options = fixture_project
    run_check([project / "demo_omni" / "layers.py"], options)
    assert plans[-1].full
    edit(project / "demo_omni" / "layers.py", "from sglang.srt.layers.quantization import",
         "# quantization helpers\nfrom sglang.srt.layers.quantization import")
    named = [project / "demo_omni" / "layers.py", project / "demo_omni" / "model_patch.py"]
    result = run_check(named, options)
    assert plans[-1].recomputed == {"demo_omni/layers.py"}
    assert findings(result) == findings(run_check(named, dataclasses.replace(options, replay=False)))
    assert {d.path for d in result.diagnostics} == {"demo_omni/layers.py", "demo_omni/model_patch.py"}


def test_a_reexport_module_rechecks_its_importers(fixture_project, plans) -> None:
    project, options = fixture_project
    run_check([project], options)
    core = project / "demo_omni" / "vendor" / "sglang" / "core.py"
    core.write_text(core.read_text() + "\nDEFAULT_ARGS = server_args.ServerArgs  # a read of SGLang: a new fact\n")
    same_as_a_full_run(project, options)
    recomputed = plans[-1].recomputed
    assert "demo_omni/vendor/sglang/core.py" in recomputed and "demo_omni/engine.py" in recomputed
    assert "demo_omni/model_runner.py" not in recomputed  # it imports nothing of the project's


def test_an_edit_that_only_moves_code_leaves_the_importers_out_in_a_process_of_its_own(fixture_project,
                                                                                     plans) -> None:
    """The last run's records of the edited file (its facts and line digests by its old
    content, the per-file tables as that run left them) tell a run that has not the index
    before the edit what a resident process's moved_only tells: code moved, no fact changed."""
    project, options = fixture_project
    run_check([project], options)
    core = project / "demo_omni" / "vendor" / "sglang" / "core.py"
    core.write_text("# a comment above: every fact a line lower\n\n" + core.read_text())
    same_as_a_full_run(project, options)
    assert plans[-1].recomputed == {"demo_omni/vendor/sglang/core.py"}
    core.write_text(core.read_text() + "\nDEFAULT_ARGS = server_args.ServerArgs\n")  # and now a fact
    same_as_a_full_run(project, options)
    assert "demo_omni/engine.py" in plans[-1].recomputed


def test_an_edit_of_a_class_s_members_alone_rechecks_its_file_its_importers_and_the_rules_reading_members_anywhere(
        fixture_project, plans) -> None:
    from sglang_contracts.contracts.base import MEMBERS_ANYWHERE, WHOLE_PROJECT

    project, options = fixture_project
    run_check([project], options)
    # The scheduler now sets an attribute borrowed code reads: a class's provided names change.
    edit(project / "demo_omni" / "omni_scheduler.py", "        self.max_running_requests = 4\n",
         "        self.max_running_requests = 4\n        self.mm_receiver = None\n")
    same_as_a_full_run(project, options)
    assert not plans[-1].full and plans[-1].members_edited and not plans[-1].imports_edited
    assert "demo_omni/omni_scheduler.py" in plans[-1].recomputed
    assert "demo_omni/model_runner.py" not in plans[-1].recomputed  # it imports nothing of the project's
    assert "SGC322" in WHOLE_PROJECT | MEMBERS_ANYWHERE  # which attributes any project class provides


# A class's __getattr__ that hands out SGLang's Scheduler methods as its own (sglang-omni's way).
BORROWING_GETATTR = "    def __getattr__(self, name):\n        return types.MethodType(getattr(_Upstream, name), self)\n"


def _borrowing_base_project(tmp_path: Path, files: dict[str, str]) -> tuple[Path, CheckOptions]:
    """A project whose `app/base.py` Base borrows Scheduler's methods and hands itself to
    `flush_cache`, which in the new release also calls `self.queue.pending()`; with `files`
    (the subclass, and what builds its `queue`)."""
    from tests.helpers import upstream_tree, write_tree

    scheduler = "sglang/srt/managers/scheduler.py"
    noop = "    def noop(self):\n        return None\n\n"
    old = upstream_tree(tmp_path / "old", {scheduler: f"class Scheduler:\n{noop}    def flush_cache(self):\n"
                                                      "        return not self.queue.items\n"}, "0.1.0")
    new = upstream_tree(tmp_path / "new", {scheduler: f"class Scheduler:\n{noop}    def flush_cache(self):\n"
                                                      "        return not self.queue.items and not self.queue.pending()\n"},
                        "0.2.0")
    project = write_tree(tmp_path / "project", {
        "pyproject.toml": "[project]\nname = 'app'\n",
        "app/base.py": "import types\n\nfrom sglang.srt.managers.scheduler import Scheduler as _Upstream\n\n\n"
                       f"class Base:\n    def flush(self):\n        return self.flush_cache()\n\n{BORROWING_GETATTR}",
        **files,
    })
    return project, CheckOptions(old=str(old), new=str(new), cache_dir=tmp_path / "cache", replay=True, workers=1)


def _but_the_body_change(result) -> list[tuple[str, str]]:
    """(path, code) of the findings but SGC313 (flush_cache's body changed, at the base)."""
    return [(d.path, d.code) for d in result.diagnostics if d.code != "SGC313"]


def test_an_edit_of_a_subclass_s_members_rechecks_its_bases_files_where_their_roots_report(tmp_path, plans) -> None:
    """A base's methods that hand the object to borrowed code run with the subclass's members
    (SGC314 at the base's call, for the subclass's stand-in): an edit of the subclass's
    members alone checks the files of its project bases again, though they do not import it."""
    project, options = _borrowing_base_project(tmp_path, {
        # its own root reaches nothing new: the stand-in's finding is at the base's root
        "app/decode.py": "import types\n\nfrom sglang.srt.managers.scheduler import Scheduler as _Upstream\n\n"
                         "from app.base import Base\n\n\nclass Decode(Base):\n    def __init__(self):\n"
                         "        self.queue = types.SimpleNamespace(items=[])\n\n"
                         f"    def idle(self):\n        return self.noop()\n\n{BORROWING_GETATTR}",
    })
    assert _but_the_body_change(run_check([project], options)) == [("app/base.py", "SGC314")]
    edit(project / "app" / "decode.py", "SimpleNamespace(items=[])", "SimpleNamespace(items=[], pending=lambda: False)")
    assert _but_the_body_change(same_as_a_full_run(project, options)) == []
    assert not plans[-1].full and plans[-1].members_edited
    assert plans[-1].recomputed == {"app/decode.py", "app/base.py"}


def test_a_record_whose_file_entries_have_another_shape_plans_a_full_run(fixture_project) -> None:
    """A record of the plan with entries of another length (another version's, or damaged but
    still JSON) is no record: every file is recomputed, and nothing raises."""
    from sglang_contracts.infra.cache import RecordCache

    project, options = fixture_project
    result = run_check([project], dataclasses.replace(options, replay=False))
    index = result.project
    store = RecordCache(options.cache_dir / "incremental-test")
    first = incremental.plan(store, "salt", index)
    assert first.full and all(len(entry) == len(incremental.FILE_ENTRY) for entry in first.files.values())
    incremental.save(store, first, result.diagnostics, {})
    assert not incremental.plan(store, "salt", index).full  # the record as saved is used
    for shape in (lambda entry: entry[:5], lambda entry: [*entry, None], lambda entry: None):
        incremental.save(store, dataclasses.replace(first, files={rel: shape(entry) for rel, entry in first.files.items()}),
                         result.diagnostics, {})
        assert incremental.plan(store, "salt", index).full


# A subclass whose stand-in is a class of a third file its base's file does not import, and the
# edit that gives that class the member borrowed code now calls.
STAND_IN_FROM_A_THIRD_FILE = {
    "app/queue.py": "class FakeQueue:\n    def __init__(self):\n        self.items = []\n",
    "app/decode.py": "import types\n\nfrom sglang.srt.managers.scheduler import Scheduler as _Upstream\n\n"
                     "from app.base import Base\nfrom app.queue import FakeQueue\n\n\nclass Decode(Base):\n"
                     "    def __init__(self):\n        self.queue = FakeQueue()\n\n"
                     f"    def idle(self):\n        return self.noop()\n\n{BORROWING_GETATTR}",
}


def _give_the_stand_in_pending(project: Path) -> None:
    edit(project / "app" / "queue.py", "        self.items = []\n",
         "        self.items = []\n\n    def pending(self):\n        return False\n")


def test_an_edit_of_a_stand_in_s_class_rechecks_the_bases_of_the_classes_that_use_it(tmp_path, plans) -> None:
    """The subclass builds its stand-in from a class of a third file that its base's file does
    not import (helper-43's audit, slime's EmptyPreallocQueue): an edit of that class's members
    checks the base's file again, where the subclass's SGC314 is reported."""
    project, options = _borrowing_base_project(tmp_path, STAND_IN_FROM_A_THIRD_FILE)
    assert _but_the_body_change(run_check([project], options)) == [("app/base.py", "SGC314")]
    _give_the_stand_in_pending(project)
    assert _but_the_body_change(same_as_a_full_run(project, options)) == []
    assert not plans[-1].full and "app/base.py" in plans[-1].recomputed


def test_a_stand_in_s_class_reached_as_an_attribute_of_an_imported_package_is_a_dependency(tmp_path, plans) -> None:
    """The subclass's file imports the package and builds the stand-in as `app.queue.FakeQueue()`
    (helper-45's audit): no import names app.queue, yet an edit of FakeQueue's members checks
    the subclass's file and its base's again."""
    decode = STAND_IN_FROM_A_THIRD_FILE["app/decode.py"].replace("from app.queue import FakeQueue\n", "import app\n")
    project, options = _borrowing_base_project(tmp_path, {
        **STAND_IN_FROM_A_THIRD_FILE,
        "app/__init__.py": "from app import queue  # noqa: F401\n",
        "app/decode.py": decode.replace("self.queue = FakeQueue()", "self.queue = app.queue.FakeQueue()"),
    })
    assert _but_the_body_change(run_check([project], options)) == [("app/base.py", "SGC314")]
    _give_the_stand_in_pending(project)
    assert _but_the_body_change(same_as_a_full_run(project, options)) == []
    assert not plans[-1].full and {"app/decode.py", "app/base.py"} <= plans[-1].recomputed


def test_a_module_reached_as_an_attribute_before_it_existed_is_a_dependency_once_it_does(tmp_path, plans) -> None:
    """The subclass's file names `app.queue.FakeQueue()` before app/queue.py is written (helper-46's
    audit): once the module exists, an edit of FakeQueue's members checks that file again,
    though its content, and so its record, did not change."""
    decode = STAND_IN_FROM_A_THIRD_FILE["app/decode.py"].replace("from app.queue import FakeQueue\n", "import app\n")
    project, options = _borrowing_base_project(tmp_path, {
        "app/__init__.py": "import importlib\n",
        "app/decode.py": decode.replace("self.queue = FakeQueue()", "self.queue = app.queue.FakeQueue()"),
    })
    run_check([project], options)
    (project / "app" / "__init__.py").write_text("from app import queue  # noqa: F401\n")
    (project / "app" / "queue.py").write_text(STAND_IN_FROM_A_THIRD_FILE["app/queue.py"])
    assert _but_the_body_change(same_as_a_full_run(project, options)) == [("app/base.py", "SGC314")]
    _give_the_stand_in_pending(project)
    assert _but_the_body_change(same_as_a_full_run(project, options)) == []
    assert not plans[-1].full and "app/decode.py" in plans[-1].recomputed


def test_modules_reached_as_attributes_of_a_bound_module_are_found_by_text() -> None:
    modules = {"app", "app.queue", "app.sub", "app.sub.deep"}
    text = "import app\nx = app.queue.FakeQueue()\ny = app . sub.deep.thing\nz = notapp.sub\nw = other.app.sub\n"
    assert incremental._modules_reached_as_attributes(text, {"app": "app"}, modules) == {
        "app.queue", "app.sub", "app.sub.deep"}
    assert incremental._modules_reached_as_attributes("from app import sub\nsub.deep.f()\n", {"sub": "app.sub"},
                                                     modules) == {"app.sub.deep"}


def test_an_edit_of_a_stand_in_s_class_keeps_the_base_s_findings_for_its_other_subclasses(tmp_path, plans) -> None:
    """The base's file checked again after a stand-in's class changed (the test above) reports
    for every subclass: a sibling in a file that neither the edited file nor its importers
    reach is read in full, and its SGC314 at the base (one per call and stand-in's member, the
    first subclass's) comes up once the edited one no longer lacks the member."""
    project, options = _borrowing_base_project(tmp_path, {
        **STAND_IN_FROM_A_THIRD_FILE,
        "app/prefill.py": "import types\n\nfrom sglang.srt.managers.scheduler import Scheduler as _Upstream\n\n"
                          "from app.base import Base\n\n\nclass Prefill(Base):\n    def __init__(self):\n"
                          "        self.queue = types.SimpleNamespace(items=[])\n\n"
                          f"    def idle(self):\n        return self.noop()\n\n{BORROWING_GETATTR}",
    })
    before = [d.message for d in run_check([project], options).diagnostics if d.code == "SGC314"]
    assert len(before) == 1 and before[0].startswith("Decode.queue")
    _give_the_stand_in_pending(project)
    after = same_as_a_full_run(project, options)
    assert [(d.path, d.message.split(" ")[0]) for d in after.diagnostics if d.code == "SGC314"] == [
        ("app/base.py", "Prefill.queue")]
    assert not plans[-1].full and "app/prefill.py" not in plans[-1].recomputed


def test_a_project_wide_fact_that_changes_recomputes_everything(fixture_project, plans) -> None:
    project, options = fixture_project
    run_check([project], options)
    # The scheduler now subclasses SGLang's: every class's ancestry may change.
    edit(project / "demo_omni" / "omni_scheduler.py", "class OmniScheduler:", "class OmniScheduler(_Upstream):")
    same_as_a_full_run(project, options)
    assert plans[-1].full



def test_an_edit_of_imports_alone_rechecks_the_file_its_importers_and_the_rules_reading_imports_anywhere(
        fixture_project, plans) -> None:
    from sglang_contracts.contracts.base import IMPORTS_ANYWHERE

    project, options = fixture_project
    run_check([project], options)
    # The broken import fixed to where the name lives now: only the imports' digest changes.
    edit(project / "demo_omni" / "layers.py", "from sglang.srt.layers.layernorm import RMSNorm\n",
         "from sglang.srt.layers.layernorm import RMSNorm\nfrom sglang.srt.layers.linear import RowParallelLinear\n")
    same_as_a_full_run(project, options)
    assert not plans[-1].full and plans[-1].imports_edited
    assert "demo_omni/layers.py" in plans[-1].recomputed and len(plans[-1].recomputed) < 10
    assert {"SGC404", "SGC601", "SGC705"} <= IMPORTS_ANYWHERE


def test_an_edit_that_changes_whether_any_file_imports_server_args_recomputes_everything(
        fixture_project, plans) -> None:
    project, options = fixture_project
    run_check([project], options)
    # demo_omni/broken.py's import of ServerArgs is one of several: an outline part changes anyway.
    edit(project / "demo_omni" / "broken.py", "from sglang.srt.server_args import ServerArgs\n", "")
    same_as_a_full_run(project, options)
    assert plans[-1].full


def test_a_removed_file_takes_its_findings_and_rechecks_its_importers(fixture_project, plans) -> None:
    project, options = fixture_project
    run_check([project], options)
    (project / "demo_omni" / "compat.py").unlink()
    after = same_as_a_full_run(project, options)
    assert not [d for d in after.diagnostics if d.path == "demo_omni/compat.py"]


def test_a_non_python_file_recomputes_everything(fixture_project, plans) -> None:
    project, options = fixture_project
    run_check([project], options)
    (project / "docs" / "install.md").write_text("Install sglang==0.9.0 first.\n")
    same_as_a_full_run(project, options)
    assert plans[-1].full


def test_a_test_double_is_checked_again_when_a_file_that_reads_its_class_changes(tmp_path, plans) -> None:
    """SGC602 reports at a fake what any file reads of the class it stands for, with the
    reader's position: an edit of the reader (the fake's file untouched, not importing it)
    changes the fake's findings, so the rule is checked over the whole project (WHOLE_PROJECT)
    while the other rules recompute the edited file alone."""
    from tests.helpers import upstream_tree, write_tree

    example = next(e for e in load_catalog()["SGC602"].examples if e.expect)
    old = upstream_tree(tmp_path / "old", example.old, "0.1.0")
    new = upstream_tree(tmp_path / "new", example.new, "0.2.0")
    reader = example.project["app/chunks.py"]
    assert "req.rid, req.chunk_range" in reader
    project = write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n", **example.project,
                                                "app/chunks.py": reader.replace("req.rid, req.chunk_range", "req.rid")})
    options = CheckOptions(old=str(old), new=str(new), cache_dir=tmp_path / "cache", replay=True)
    before = run_check([project], options)
    write_tree(project, {"app/chunks.py": reader})  # now reads the attribute the fake lacks
    after = same_as_a_full_run(project, options)
    assert plans[-1].recomputed == {"app/chunks.py"}
    lacks = [d for d in after.diagnostics if "app/chunks.py:4 reads" in d.message]
    assert [d.path for d in lacks] == ["tests/fakes.py"] and findings(after) != findings(before)


def test_a_probe_is_shown_where_a_finding_checked_whole_makes_its_file_touched_by_the_bump(tmp_path, plans) -> None:
    """SGC801 is shown in a bump run only in files the bump touches. A skip-list edit in the
    wrapper (no import between them) takes away, and then brings back, the SGC505 of a command
    line in a test file, which is checked whole while the test file keeps its last findings:
    its SGC801 must go and come back with it (slime's audit: kept stale, then lost)."""
    from tests.helpers import upstream_tree, write_tree

    example = next(e for e in load_catalog()["SGC505"].examples if "skip list" in e.title)
    old = upstream_tree(tmp_path / "old", example.old, "0.1.0")
    new = upstream_tree(tmp_path / "new", example.new, "0.2.0")
    project = write_tree(tmp_path / "project", {
        "pyproject.toml": "[project]\nname = 'app'\n",
        "app/arguments.py": example.project["app/arguments.py"],
        "tests/test_launch.py": "from sglang.srt.server_args import ServerArgs\n\n"
                                "COMMAND = \"python train.py --sglang-tp-size 2\"\n\n\n"
                                "def probe(server_args: ServerArgs):\n"
                                "    return getattr(server_args, \"load_format\", None)\n",
    })
    options = CheckOptions(old=str(old), new=str(new), cache_dir=tmp_path / "cache", replay=True, workers=1)

    def codes(result) -> list[str]:
        return sorted(d.code for d in result.diagnostics if d.path == "tests/test_launch.py")

    assert codes(run_check([project], options)) == ["SGC505", "SGC801"]
    arguments = project / "app" / "arguments.py"
    edit(arguments, 'SKIPPED = ["model_path", "tp_size"]', 'SKIPPED = ["model_path"]')  # --sglang-tp-size accepted again
    assert codes(same_as_a_full_run(project, options)) == []
    assert plans[-1].recomputed == {"app/arguments.py"}
    edit(arguments, 'SKIPPED = ["model_path"]', 'SKIPPED = ["model_path", "tp_size"]')
    assert codes(same_as_a_full_run(project, options)) == ["SGC505", "SGC801"]
    assert plans[-1].recomputed == {"app/arguments.py"}


# -- real sglang-omni: edits as a developer makes them, each compared with a full run -------------



@pytest.mark.network
@pytest.mark.parametrize("version", ["0.1.8", "0.1.9"])
def test_real_omni_edits_give_the_findings_of_a_full_run(version, real_cache, tmp_path, plans,
                                                         full_run_findings) -> None:
    """Each edit's incremental run gives the findings of a full run of the edited project, in a
    cache of its own (full_run_findings: the resident engine's test reaches the same states of
    0.1.9 and compares with the same runs)."""
    project = tmp_path / "omni"
    shutil.copytree(download_sdist("sglang-omni", version, real_cache), project)
    options = CheckOptions(old="0.5.22", new="0.5.23", cache_dir=real_cache, replay=True)
    # A cache of its own for the findings, the shared one for the releases and the facts.
    run_check([project], options)
    partial = 0
    members_edits = []  # whether each edit of a class's members alone was a partial run
    for relpath, anchor, replacement, transform in REAL_EDITS:
        path = project / relpath
        text = path.read_text()
        if anchor not in text:
            continue
        path.write_text(transform(text, text.index(anchor)) if transform else text.replace(anchor, replacement, 1))
        result = run_check([project], options)
        assert result.replayed_files_with_contracts is None
        assert findings(result) == full_run_findings(project, options), relpath
        collect_garbage()
        partial += not plans[-1].full
        if anchor.startswith("class OmniScheduler"):
            members_edits.append(not plans[-1].full and plans[-1].members_edited)
    assert partial >= 4
    assert members_edits == [True, True]  # a method added, an attribute given: its dependants, not every file


def test_a_check_run_does_not_import_the_fix_libraries() -> None:
    """libcst (and GitPython) cost a large part of a one-file run's start; only `fix` and
    clones need them. Every rule module is imported as a check run imports them."""
    import subprocess
    import sys

    code = ("import sys, sglang_contracts.check.runner, sglang_contracts.cli, sglang_contracts.contracts, "
            "sglang_contracts.reporters.markdown, sglang_contracts.reporters.json; "
            "print(sorted({'libcst', 'git'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_class_defined_in_a_file_that_names_no_sglang_is_seen_by_every_file(tmp_path, plans) -> None:
    """SGC322 leaves `attention_backend.x` alone when the project defines its own
    `AttentionBackend`, wherever (its files are read as text, not scanned): a file that defines
    one is a project-wide fact, though it imports nothing and nothing imports it."""
    from tests.helpers import upstream_tree, write_tree

    backend = "sglang/srt/layers/attention/base_attn_backend.py"
    old = upstream_tree(tmp_path / "old", {backend: "class AttentionBackend:\n    def snapshot(self):\n        return None\n"}, "0.1.0")
    new = upstream_tree(tmp_path / "new", {backend: "class AttentionBackend:\n    pass\n"}, "0.2.0")
    project = write_tree(tmp_path / "project", {
        "pyproject.toml": "[project]\nname = 'app'\n",
        "app/runner.py": "from sglang.srt.layers.attention.base_attn_backend import AttentionBackend\n\n\n"
                         "def snapshot(attention_backend):\n    attention_backend.snapshot()\n",
        "app/other.py": "VALUE = 1\n",
    })
    options = CheckOptions(old=str(old), new=str(new), cache_dir=tmp_path / "cache", replay=True, workers=1)
    first = run_check([project], options)
    assert [d.code for d in first.diagnostics] == ["SGC322"]
    (project / "app" / "other.py").write_text("class AttentionBackend:\n    def snapshot(self):\n        return 1\n")
    after = same_as_a_full_run(project, options)
    assert after.diagnostics == []


# -- which rules read other files beyond their outline (contracts/base.py WHOLE_PROJECT) ----------

def _checked_context(project: Path, options: CheckOptions, monkeypatch):
    """The context and rule codes a full run checks `project` with."""
    from sglang_contracts.contracts import base

    seen = []
    real = base.run_checks

    def recording(context, codes, problems):
        codes = list(codes)
        seen.append((context, codes))
        return real(context, codes, problems)

    with monkeypatch.context() as patched:
        patched.setattr(base, "run_checks", recording)
        # Every rule in this process: a forked copy's half (run_checks_in_two) is not recorded here.
        patched.setattr(runner.Fresh, "checks_in_two", False)
        run_check([project], dataclasses.replace(options, replay=False))
    (context, codes), = seen
    assert {"SGC101", "SGC201", "SGC705"} <= set(codes)
    return context, codes


def _locality_violations(context, codes) -> list[tuple[str, str, str]]:
    """(rule, file reduced, finding) for each finding of a rule not in WHOLE_PROJECT that a partial
    run would get wrong: one outside a file's importers that changes when that file is reduced to
    its outline (its facts, and its text to the lines that define classes or ignore unknown
    flags, which the outline digest reads), or one inside them that changes when the files they
    do not import are reduced to their outlines."""
    from sglang_contracts.contracts.base import WHOLE_PROJECT, run_checks
    from sglang_contracts.analysis.resolve import project_view
    from sglang_contracts.project.index import module_name_for

    project = context.project

    def checked(index, only: set[str] | None = None) -> set:
        """As run_checks finds them on `index`; `only`: the files a partial run keeps findings of."""
        only = frozenset(only) if only is not None else None
        return set(run_checks(dataclasses.replace(context, project=index, memo={}, checked=only), codes, []))

    full = checked(project)
    modules = {module_name_for(rel): rel for rel in project.files}
    named = incremental.project_modules(project)
    imports = {rel: {modules[m] for m in incremental.imported_project_modules(project, rel, named) if m in modules}
               for rel in project.files}
    importers: dict[str, set[str]] = {}
    for rel, imported in imports.items():
        for other in imported:
            importers.setdefault(other, set()).add(rel)
    found = []
    for reduced in sorted(project.digests):
        closure = incremental._closure({reduced}, importers)
        kept = "\n".join(line for line in project.texts[reduced].split("\n") if "class " in line or "ignore_unknown" in line)
        outlined = dataclasses.replace(
            project, files={rel: incremental._outline(f) if rel == reduced else f for rel, f in project.files.items()},
            texts={rel: kept if rel == reduced else project.texts[rel] for rel in project.texts},
            digests={**project.digests, reduced: "reduced"}, tables=None,
            on_the_scanned_tree={kind: {rel: rows for rel, rows in table.items() if rel != reduced}
                                 for kind, table in project.on_the_scanned_tree.items()})
        found += [(d.code, reduced, f"{d.path}:{d.line}: {d.message}") for d in checked(outlined) ^ full
                  if d.path not in closure and d.code not in WHOLE_PROJECT]
        in_full = closure | project_view(context).ancestor_files(closure)  # as runner._computed has it
        partial = incremental.checked_project(project, in_full)
        found += [(d.code, reduced, f"{d.path}:{d.line}: {d.message}") for d in checked(partial, closure) ^ full
                  if d.path in closure and d.code not in WHOLE_PROJECT]
    return found


def _example_context(example, tmp_path: Path, monkeypatch):
    """The context and rule codes a full run checks a rule example's project with."""
    from tests.helpers import upstream_tree, write_tree

    old = upstream_tree(tmp_path / "old", example.old, "0.1.0")
    new = old if example.pin_alone else upstream_tree(tmp_path / "new", example.new, "0.2.0")
    project = write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n", **example.project})
    options = CheckOptions(old=str(old), new=str(new), cache_dir=tmp_path / "cache", workers=1, **example.options)
    return _checked_context(project, options, monkeypatch)


def _fixture_context(tmp_path: Path, monkeypatch):
    """The context and rule codes a full run checks a copy of the fixture project with."""
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    options = CheckOptions(old=str(OLD), new=str(NEW), cache_dir=tmp_path / "cache", workers=1)
    return _checked_context(project, options, monkeypatch)


def _multi_file_examples():
    return [pytest.param(example, id=f"{code}-{index}") for code, rule in sorted(load_catalog().items())
            for index, example in enumerate(rule.examples) if len(example.project) >= 2]


@pytest.mark.parametrize("example", _multi_file_examples())
def test_rules_not_checked_whole_read_other_files_only_through_their_outlines(example, tmp_path, monkeypatch) -> None:
    """Every rule's multi-file examples: a rule that reads more of another file than its outline
    is in WHOLE_PROJECT, or a partial run would keep its stale findings (SGC509's once: a flag
    set in a launch script, its finding at the wrapper)."""
    context, codes = _example_context(example, tmp_path, monkeypatch)
    assert _locality_violations(context, codes) == []


def test_rules_not_checked_whole_read_the_fixture_projects_other_files_only_through_their_outlines(
        tmp_path, monkeypatch) -> None:
    context, codes = _fixture_context(tmp_path, monkeypatch)
    assert len(context.project.files) >= 10
    assert _locality_violations(context, codes) == []


# -- which rules read other files' imports beyond their importers (contracts/base.py IMPORTS_ANYWHERE) --

def _import_edit_violations(context, codes) -> list[tuple[str, str, str]]:
    """(rule, file edited, finding) for each finding a partial run after an edit of a file's
    imports alone would get wrong, for a rule checked on the recomputed files (in neither
    WHOLE_PROJECT nor IMPORTS_ANYWHERE): one outside the file's importers that changes when the
    file loses its imports (all of them, or one at a time), or one inside them that a run on
    those files (the others reduced to their outlines) gives otherwise than a full run."""
    from sglang_contracts.contracts.base import IMPORTS_ANYWHERE, WHOLE_PROJECT
    from sglang_contracts.project.index import _link, module_name_for

    project = context.project
    checked = _checker(context, codes, WHOLE_PROJECT | IMPORTS_ANYWHERE)
    full = checked(project)
    found = []
    for edited in sorted(project.files):
        imports = project.files[edited].imports
        for kept in [[]] + [imports[:at] + imports[at + 1:] for at in range(len(imports))] if imports else []:
            files = {**project.files, edited: dataclasses.replace(project.files[edited], imports=kept)}
            variant = dataclasses.replace(project, files=files, exports={})
            _link(variant)
            modules = {module_name_for(rel): rel for rel in files}
            importers: dict[str, set[str]] = {}
            for index in (project, variant):  # the edges before and after, as incremental.plan has them
                named = incremental.project_modules(index)
                for rel in index.files:
                    for module in incremental.imported_project_modules(index, rel, named):
                        if module in modules:
                            importers.setdefault(modules[module], set()).add(rel)
            found += _partial_run_errors(context, variant, edited, incremental._closure({edited}, importers), checked, full)
    return sorted(set(found))


def _checker(context, codes, whole: set[str]):
    """`checked(index, only)`: the findings of the rules not in `whole` (those a partial run
    checks on the recomputed files) on `index`; `only`: the files a partial run keeps findings of."""
    from sglang_contracts.contracts.base import run_checks

    def checked(index, only: set[str] | None = None) -> set:
        only = frozenset(only) if only is not None else None
        return {d for d in run_checks(dataclasses.replace(context, project=index, memo={}, checked=only), codes, [])
                if d.code not in whole}

    return checked


def _partial_run_errors(context, variant, edited: str, closure: set[str], checked, full: set,
                        also_in_full: frozenset[str] = frozenset()) -> list[tuple[str, str, str]]:
    """(rule, file edited, finding) for what a partial run on `closure` (the other files reduced
    to their outlines but `also_in_full`) gets wrong once `edited` made the project `variant`: a
    finding outside the closure that changed (kept from the last run, it is stale), or one
    inside it that the partial run gives otherwise than a full run. `checked(index, only)`: the
    findings compared."""
    from sglang_contracts.analysis.resolve import project_view

    now = checked(variant)
    in_full = closure | also_in_full | project_view(dataclasses.replace(context, project=variant, memo={})).ancestor_files(closure)
    partial = checked(incremental.checked_project(variant, in_full), closure)
    return [*((d.code, edited, f"{d.path}:{d.line}: {d.message}") for d in now ^ full if d.path not in closure),
            *((d.code, edited, f"{d.path}:{d.line}: {d.message}") for d in now ^ partial if d.path in closure)]


@pytest.mark.parametrize("example", _multi_file_examples())
def test_rules_checked_on_the_recomputed_files_read_other_files_imports_only_in_their_importers(
        example, tmp_path, monkeypatch) -> None:
    """Every rule's multi-file examples: a rule whose finding rests on imports anywhere in the
    project (is ServerArgs imported at all, the first import that reaches a package) is in
    IMPORTS_ANYWHERE, checked whole after an edit of imports, or a partial run would keep its
    stale findings."""
    context, codes = _example_context(example, tmp_path, monkeypatch)
    assert _import_edit_violations(context, codes) == []


def test_rules_checked_on_the_recomputed_files_read_the_fixture_projects_imports_only_in_their_importers(
        tmp_path, monkeypatch) -> None:
    context, codes = _fixture_context(tmp_path, monkeypatch)
    assert sum(len(facts.imports) for facts in context.project.files.values()) >= 20
    assert _import_edit_violations(context, codes) == []


# -- which rules read the members of classes beyond their files' importers (contracts/base.py MEMBERS_ANYWHERE) --

# A ClassFact's members (what incremental.members_digest reads beyond CLASS_OUTLINE), emptied.
NO_MEMBERS = {"methods": (), "provided": (), "attr_types": (), "getattr_sources": (), "getattr_names": (),
              "init_calls_base": None, "none_only": (), "falsy_only": (), "values": (), "returns": (), "namespaces": (),
              "decorated": False}


def _members_edit_violations(context, codes) -> list[tuple[str, str, str]]:
    """(rule, file edited, finding) for each finding a partial run after an edit of class
    members alone would get wrong, for a rule checked on the recomputed files (in none of
    WHOLE_PROJECT, MEMBERS_ANYWHERE): one outside the file's importers that changes when one of
    its classes loses its members (or gains one: `provided` grows by an attribute some file
    reads), or one inside them that a run on those files (the others reduced to their
    outlines) gives otherwise than a full run."""
    from sglang_contracts.contracts.base import MEMBERS_ANYWHERE, WHOLE_PROJECT
    from sglang_contracts.analysis.resolve import project_view
    from sglang_contracts.project.index import module_name_for

    project = context.project
    assert set(NO_MEMBERS) | set(incremental.CLASS_OUTLINE) | {"position"} == {
        f.name for f in dataclasses.fields(FACT_LISTS["classes"])}
    checked = _checker(context, codes, WHOLE_PROJECT | MEMBERS_ANYWHERE)
    full = checked(project)
    modules = {module_name_for(rel): rel for rel in project.files}
    importers: dict[str, set[str]] = {}
    named = incremental.project_modules(project)
    for rel in project.files:
        for module in incremental.imported_project_modules(project, rel, named):
            if module in modules:
                importers.setdefault(modules[module], set()).add(rel)
    read_names = sorted({read.attr for facts in project.files.values() for read in facts.reads})
    found = []
    for edited in sorted(project.files):
        classes = project.files[edited].classes
        variants = [[*classes[:at], dataclasses.replace(cls, **NO_MEMBERS), *classes[at + 1:]] for at, cls in enumerate(classes)]
        variants += [[*classes[:at], dataclasses.replace(cls, provided=(*cls.provided, *read_names)), *classes[at + 1:]]
                     for at, cls in enumerate(classes)]
        for kept in variants:
            variant = dataclasses.replace(project, files={**project.files, edited: dataclasses.replace(
                project.files[edited], classes=kept)})
            view = project_view(dataclasses.replace(context, project=variant, memo={}))
            # as runner._computed has it: the file and its importers, and the project bases' files
            # of every class among them, whose other subclasses are read in full
            closure = incremental._closure({edited}, importers)
            bases = view.ancestor_files(closure)
            found += _partial_run_errors(context, variant, edited, closure | bases, checked, full,
                                         frozenset(view.descendant_files(bases)))
    return sorted(set(found))


@pytest.mark.parametrize("example", _multi_file_examples())
def test_rules_checked_on_the_recomputed_files_read_other_files_class_members_only_in_their_importers(
        example, tmp_path, monkeypatch) -> None:
    """Every rule's multi-file examples: a rule whose finding rests on the members of a class in
    a file that the finding's file does not import (which attributes any project class
    provides) is in MEMBERS_ANYWHERE, checked whole after an edit of members, or a partial run
    would keep its stale findings."""
    context, codes = _example_context(example, tmp_path, monkeypatch)
    assert _members_edit_violations(context, codes) == []


def test_rules_checked_on_the_recomputed_files_read_the_fixture_projects_class_members_only_in_their_importers(
        tmp_path, monkeypatch) -> None:
    context, codes = _fixture_context(tmp_path, monkeypatch)
    assert sum(len(facts.classes) for facts in context.project.files.values()) >= 5
    assert _members_edit_violations(context, codes) == []


def test_an_edit_of_setup_py_recomputes_everything(fixture_project, plans) -> None:
    """setup.py declares the project's requirements, read by the pin and stack rules for findings
    in other files (SGC701 at a Dockerfile's pin, SGC705 at an import): like a file that is not
    Python, an edit of it checks everything."""
    project, options = fixture_project
    (project / "setup.py").write_text("from setuptools import setup\n\nsetup(name='demo', install_requires=['torch'])\n")
    run_check([project], options)
    edit(project / "setup.py", "['torch']", "['torch', 'sglang==0.9.0']")
    same_as_a_full_run(project, options)
    assert plans[-1].full


def test_the_rows_of_flag_uses_move_with_their_function_so_a_typed_line_only_moves_code() -> None:
    """The command-line analysis names each use's function with its line (a list the line
    shifting of incremental.moved_only moves, not `name@line` text): a line typed above the
    function leaves the rows as they were, lines moved, and the file's importers are not checked
    again for it (slime's and miles' sglang_engine.py)."""
    from sglang_contracts.project.commandline import _scope, _use_rows

    text = "import os\n\n\ndef launch(args):\n    if args.sglang_dp_size > 1:\n        return args.sglang_tp_size\n"
    typed = text.replace("import os\n", "import os\ntraced = False\n")
    before, after = (_use_rows("app/launch.py", source, "--sglang-", "sglang_") for source in (text, typed))
    assert [row[2] for row in before] == ["sglang_dp_size", "sglang_tp_size"]
    assert {_scope(row[-1]) for row in before} == {"launch@4"} and {_scope(row[-1]) for row in after} == {"launch@5"}
    moved = incremental._lines_moved(before, incremental._moved_lines(text.split("\n"), typed.split("\n")))
    assert incremental._as_json(moved) == incremental._as_json(after)



def test_a_process_of_its_own_reads_what_the_last_run_derived_of_the_whole_project_while_edits_only_move_code(
        fixture_project, plans, monkeypatch) -> None:
    """SGC302's reach of upstream code and SGC322's suspects (CheckContext.of_placeless_project
    with a codec) are kept in the records with every file's digest: read again while every file
    changed since only moved code (what a resident process keeps in memory), computed again after
    an edit of a fact, and never read over a changed file whose text computing them read."""
    from sglang_contracts.analysis import callers
    from sglang_contracts.contracts import attributes

    computed: list[str] = []
    for module, name in ((callers, "_reach"), (attributes, "_suspects")):
        original = getattr(module, name)

        def counting(*args, original=original, name=name):
            computed.append(name)
            return original(*args)

        monkeypatch.setattr(module, name, counting)
    monkeypatch.setattr(runner.Fresh, "checks_in_two", False)  # the counts of this process
    project, options = fixture_project

    def checked() -> list[str]:
        """What the incremental run computed (then compared with a full run's findings)."""
        computed.clear()
        result = run_check([project], options)
        ran = list(computed)
        assert findings(result) == findings(run_check([project], dataclasses.replace(options, replay=False)))
        assert result.diagnostics
        return ran

    assert {"_reach", "_suspects"} <= set(checked())
    core = project / "demo_omni" / "vendor" / "sglang" / "core.py"
    core.write_text("# a line above: the code moves\n" + core.read_text())
    assert checked() == [] and plans[-1].moved == {"demo_omni/vendor/sglang/core.py"}
    # and again: the value read back is kept for the files as they are now (it was read, not
    # recorded again, so the next moving edit found it recorded for the files two edits back)
    core.write_text("# another line above\n" + core.read_text())
    assert checked() == [] and plans[-1].moved == {"demo_omni/vendor/sglang/core.py"}
    core.write_text(core.read_text() + "\nDEFAULT_ARGS = server_args.ServerArgs\n")  # a fact: computed again
    assert {"_reach", "_suspects"} <= set(checked())


def test_a_kept_value_whose_computation_read_the_text_of_a_file_edited_since_is_computed_again(
        fixture_project, plans, monkeypatch) -> None:
    from sglang_contracts.analysis import callers

    computed: list[str] = []
    original = callers._reach

    def reading(ctx, resolver):
        computed.append("_reach")
        ctx.texts_read.add("demo_omni/vendor/sglang/core.py")  # as astroid's inference at a site there would
        return original(ctx, resolver)

    monkeypatch.setattr(callers, "_reach", reading)
    monkeypatch.setattr(runner.Fresh, "checks_in_two", False)
    project, options = fixture_project
    run_check([project], options)
    core = project / "demo_omni" / "vendor" / "sglang" / "core.py"
    computed.clear()
    core.write_text("# a line above: the code moves\n" + core.read_text())
    run_check([project], options)
    assert plans[-1].moved == {"demo_omni/vendor/sglang/core.py"} and "_reach" in computed


@pytest.mark.parametrize("damage", ["placeless", "asked"])
def test_kept_records_of_another_shape_are_not_used(fixture_project, plans, damage) -> None:
    """The kept whole-project values and the last run's named analyses, re-signed by hand with
    another shape or naming a function outside this tool (the cache is the user's), are computed
    again or not used: the findings are a full run's."""
    from sglang_contracts.infra.cache import RecordCache

    project, options = fixture_project
    run_check([project], options)
    store = RecordCache(options.cache_dir / "incremental")
    key = plans[-1].key
    saved = store.get(key, object)
    if damage == "asked":
        saved["asked"] = {name: ["prose", ["os", "system", {}], ["builtins", "print", {}]] for name in saved["asked"]}
        store.put(key, saved)
    else:
        for path in (options.cache_dir / "incremental").rglob("*.record"):
            record = store.get(path.stem, object)
            if isinstance(record, dict) and "texts_read" in record:
                store.put(path.stem, {**record, "value": [[["not", "a"], "member"]]})
    core = project / "demo_omni" / "vendor" / "sglang" / "core.py"
    core.write_text("# a line above: the code moves\n" + core.read_text())
    same_as_a_full_run(project, options)
    if damage == "asked":
        assert "demo_omni/engine.py" in plans[-1].recomputed  # nothing to compare by: the importers again


def test_a_re_check_of_files_whose_imports_reach_no_new_package_keeps_the_first_import_s_finding(
        tmp_path, plans, monkeypatch) -> None:
    """SGC705 reports a package at the first import anywhere that now reaches it, with how many
    others do: a re-check of a file whose imports reach none follows no other file's imports,
    and one of a file that holds the first import still counts them all."""
    from sglang_contracts.analysis.importgraph import ImportGraph
    from tests.helpers import upstream_tree, write_tree

    grammar, tokens = "sglang/srt/constrained/grammar.py", "sglang/srt/constrained/tokens.py"
    old = upstream_tree(tmp_path / "old", {grammar: "import os\n\ndef compile_grammar(text): ...\n", tokens: ""},
                        "0.1.0")
    new = upstream_tree(tmp_path / "new", {grammar: "import os\nimport xgrammar\n\ndef compile_grammar(text): ...\n",
                                           tokens: ""}, "0.2.0")
    importing = "from sglang.srt.constrained.grammar import compile_grammar\n"
    project = write_tree(tmp_path / "project", {
        "pyproject.toml": "[project]\nname = 'app'\n", "app/a_grammar.py": importing, "app/b_tools.py": importing,
        "app/c_other.py": "from sglang.srt.constrained import tokens\n\nVALUE = 1\n"})
    options = CheckOptions(old=str(old), new=str(new), cache_dir=tmp_path / "cache", replay=True, workers=1)
    first = run_check([project], options)
    (reported,) = [d for d in first.diagnostics if d.code == "SGC705"]
    assert reported.path == "app/a_grammar.py" and "also reached from 1 other imports in 1 other files" in reported.message
    followed: list[str] = []
    reached = ImportGraph.packages_reached
    monkeypatch.setattr(ImportGraph, "packages_reached", lambda graph, module: followed.append(module) or
                        reached(graph, module))
    for relpath in ("app/c_other.py", "app/b_tools.py", "app/a_grammar.py"):
        followed.clear()
        edit(project / relpath, "\n", "\n\ndef added():\n    return None\n")
        result = same_as_a_full_run(project, options)
        assert not plans[-1].full and plans[-1].recomputed == {relpath}
        if relpath == "app/c_other.py":  # the re-check's own (the full run's follow in the forked copy)
            assert set(followed[:2]) == {"sglang.srt.constrained.tokens"}, followed
        assert [d.message for d in result.diagnostics if d.code == "SGC705"] == [reported.message]


def test_an_edit_that_starts_using_a_name_a_star_import_gives_is_judged_in_the_re_check(tmp_path, plans) -> None:
    """The names a file reads for a star import to give (FileFacts.free_names): an edit that
    starts calling one is judged in the re-check, the other file's finding kept from the record."""
    from tests.helpers import upstream_tree, write_tree

    old = upstream_tree(tmp_path / "old", {"sglang/srt/a.py": "x = 1\n\n\ndef f(a, b=1):\n    return a\n"}, "0.1.0")
    new = upstream_tree(tmp_path / "new", {"sglang/srt/a.py": "def f(a):\n    return a\n"}, "0.2.0")
    project = write_tree(tmp_path / "project", {
        "pyproject.toml": "[project]\nname = 'app'\n",
        "app/m.py": "from sglang.srt.a import *\n\nprint(1)\n",
        "app/other.py": "from sglang.srt.a import *\n\nprint(x)\n",
    })
    options = CheckOptions(old=str(old), new=str(new), cache_dir=tmp_path / "cache", replay=True, workers=1)
    assert [(d.path, d.code) for d in run_check([project], options).diagnostics] == [("app/other.py", "SGC102")]
    edit(project / "app" / "m.py", "print(1)", "print(f(1, b=2))")
    after = same_as_a_full_run(project, options)
    assert not plans[-1].full and "app/other.py" not in plans[-1].recomputed
    assert [(d.path, d.code) for d in after.diagnostics] == [("app/m.py", "SGC201"), ("app/other.py", "SGC102")]


def test_an_edit_of_a_project_module_re_judges_the_names_its_star_importers_read_through_it(tmp_path, plans) -> None:
    """pk/m.py reads `x` through `from pk.base import *`, pk/c.py through pk.m: an edit of pk/base.py
    that binds `x` itself (the project's own now) re-checks both and drops their findings, and
    one that takes it out again brings them back, each as a full run finds them. A star import of
    SGLang added to pk/other.py, which had none, makes its star importer pk/d.py scanned and judged."""
    from tests.helpers import upstream_tree, write_tree

    old = upstream_tree(tmp_path / "old", {"sglang/srt/a.py": "x = 1\n"}, "0.1.0")
    new = upstream_tree(tmp_path / "new", {"sglang/srt/a.py": "y = 1\n"}, "0.2.0")
    project = write_tree(tmp_path / "project", {
        "pyproject.toml": "[project]\nname = 'pk'\n", "pk/__init__.py": "",
        "pk/base.py": "from sglang.srt.a import *\n", "pk/m.py": "from pk.base import *\n\nprint(x)\n",
        "pk/c.py": "from pk.m import *\n\nprint(x)\n", "pk/other.py": "# as sglang.srt.a\n",
        "pk/d.py": "from pk.other import *\n\nprint(x)\n",
    })
    options = CheckOptions(old=str(old), new=str(new), cache_dir=tmp_path / "cache", replay=True, workers=1)
    reported = [("pk/c.py", "SGC102"), ("pk/m.py", "SGC102")]
    assert [(d.path, d.code) for d in run_check([project], options).diagnostics] == reported
    edit(project / "pk" / "base.py", "import *\n", "import *\n\nx = 2\n")
    assert same_as_a_full_run(project, options).diagnostics == []
    assert not plans[-1].full and {"pk/m.py", "pk/c.py"} <= plans[-1].recomputed
    edit(project / "pk" / "base.py", "\nx = 2\n", "")
    assert [(d.path, d.code) for d in same_as_a_full_run(project, options).diagnostics] == reported
    assert not plans[-1].full and {"pk/m.py", "pk/c.py"} <= plans[-1].recomputed
    edit(project / "pk" / "other.py", "\n", "\nfrom sglang.srt.a import *\n")
    after = same_as_a_full_run(project, options)
    assert [(d.path, d.code) for d in after.diagnostics] == sorted([*reported, ("pk/d.py", "SGC102")])


def test_a_star_import_added_to_or_taken_from_a_project_module_re_judges_its_importers_by_name(tmp_path, plans) -> None:
    """pk/m.py imports `f` from pk.base by name, pk/a.py reads it as pk.base.f, pk/c.py as base.f,
    while pk/base.py star-imports the project's pk/own.py: its star import of sglang.srt.a instead
    makes each a call of sglang.srt.a's `f`, judged in the re-check of the edited file and its
    importers, and the star import of pk.own back leaves them the project's, each as a full run
    finds them."""
    from tests.helpers import upstream_tree, write_tree

    old = upstream_tree(tmp_path / "old", {"sglang/srt/a.py": "def f(a, b=1):\n    return a\n"}, "0.1.0")
    new = upstream_tree(tmp_path / "new", {"sglang/srt/a.py": "def f(a):\n    return a\n"}, "0.2.0")
    project = write_tree(tmp_path / "project", {
        "pyproject.toml": "[project]\nname = 'pk'\n", "pk/__init__.py": "",
        "pk/base.py": "from pk.own import *  # or sglang.srt.a\n", "pk/own.py": "def f(a, b=1):\n    return a\n",
        "pk/m.py": "from pk.base import f\n\nf(1, b=2)  # sglang.srt.a's\n",
        "pk/a.py": "import pk.base\n\npk.base.f(1, b=2)  # sglang.srt.a's\n",
        "pk/c.py": "from pk import base\n\nbase.f(1, b=2)  # sglang.srt.a's\n",
    })
    options = CheckOptions(old=str(old), new=str(new), cache_dir=tmp_path / "cache", replay=True, workers=1)
    assert run_check([project], options).diagnostics == []
    edit(project / "pk" / "base.py", "pk.own import *  # or sglang.srt.a", "sglang.srt.a import *  # or pk.own")
    reported = [("pk/a.py", "SGC201"), ("pk/c.py", "SGC201"), ("pk/m.py", "SGC201")]
    assert [(d.path, d.code) for d in same_as_a_full_run(project, options).diagnostics] == reported
    assert not plans[-1].full and {"pk/m.py", "pk/a.py", "pk/c.py"} <= plans[-1].recomputed
    edit(project / "pk" / "base.py", "sglang.srt.a import *  # or pk.own", "pk.own import *  # or sglang.srt.a")
    assert same_as_a_full_run(project, options).diagnostics == []
    assert not plans[-1].full and {"pk/m.py", "pk/a.py", "pk/c.py"} <= plans[-1].recomputed
