"""The resident engine (resident/engine.py): runs on the state earlier runs of the process kept
give the findings of a fresh full run, and reopen nothing that did not change."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import NEW, OLD, PROJECT, collect_garbage, upstream_tree, write_tree
from tests.downloads import download_sdist
from sglang_contracts.check import runner
from sglang_contracts.infra.files import unsaved_buffers
from sglang_contracts.resident.engine import ResidentEngine
from sglang_contracts.check.runner import CheckOptions, run_check


def findings(result) -> list[dict]:
    return [d.to_json() for d in result.diagnostics]


def fresh_findings(project: Path, options: CheckOptions, cache: Path) -> list[dict]:
    """A full run in a process state of its own: nothing replayed or reused, its own cache."""
    return findings(run_check([project], dataclasses.replace(options, replay=False, cache_dir=cache)))


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.fixture
def opened(monkeypatch) -> list[str]:
    """The releases every run opens."""
    calls: list[str] = []
    real = runner.open_release
    monkeypatch.setattr(runner, "open_release", lambda spec, **kwargs: calls.append(spec) or real(spec, **kwargs))
    return calls


FIXTURE_EDITS = [
    # a statement in a method body (only that file and its importers are recomputed)
    ("demo_omni/omni_scheduler.py", "        self.max_running_requests = 4\n",
     "        self.max_running_requests = 4\n        traced = False\n"),
    # an import fixed: a project-wide fact
    ("demo_omni/layers.py", "from sglang.srt.layers.quantization import",
     "# quantization helpers\nfrom sglang.srt.layers.quantization import"),
    # an outline edit: a class now provides an attribute borrowed code reads
    ("demo_omni/omni_scheduler.py", "        self.max_running_requests = 4\n",
     "        self.max_running_requests = 4\n        self.mm_receiver = None\n"),
    # a file that is not Python
    ("docs/install.md", None, "Install sglang==0.9.0 first.\n"),
    # a new file, indexed only for a name it imports through a re-export module
    ("demo_omni/reuses_compat.py", None,
     "from demo_omni.compat import TpModelWorkerClient\n\n\ndef step(worker: TpModelWorkerClient):\n"
     "    return worker.forward_batch_generation()\n"),
    # the re-export gone: what every module binds to SGLang changes, and that file is no longer indexed
    ("demo_omni/compat.py", "from sglang.srt.managers.tp_worker_overlap_thread import TpModelWorkerClient  # noqa\n",
     "TpModelWorkerClient = object\n"),
]


def test_resident_runs_give_the_findings_of_fresh_runs_and_open_each_release_once(tmp_path, opened) -> None:
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    options = CheckOptions(old=str(OLD), new=str(NEW), cache_dir=tmp_path / "cache", replay=True)
    engine = ResidentEngine()
    first = engine.check([project], options)
    assert first.replayed_files_with_contracts is None and len(opened) == 2
    assert findings(first) == fresh_findings(project, options, tmp_path / "fresh0")
    for step, (relpath, old, new) in enumerate(FIXTURE_EDITS, 1):
        if old is None:
            (project / relpath).write_text(new)
        else:
            edit(project / relpath, old, new)
        before = len(opened)
        resident = engine.check([project], options)
        assert len(opened) == before, "an unchanged release is not opened again"
        assert findings(resident) == fresh_findings(project, options, tmp_path / f"fresh{step}"), relpath
        if relpath == "demo_omni/reuses_compat.py":  # indexed through the re-export, while it stands
            assert relpath in resident.project.files
        elif relpath == "demo_omni/compat.py":
            assert "demo_omni/reuses_compat.py" not in resident.project.files
    assert engine.runs == 1 + len(FIXTURE_EDITS)
    # A file removed takes its findings.
    (project / "demo_omni" / "compat.py").unlink()
    resident = engine.check([project], options)
    assert not [d for d in resident.diagnostics if d.path == "demo_omni/compat.py"]
    assert findings(resident) == fresh_findings(project, options, tmp_path / "fresh-removed")


def test_an_unsaved_buffer_is_read_and_then_the_file_again(tmp_path) -> None:
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    options = CheckOptions(old=str(OLD), new=str(NEW), cache_dir=tmp_path / "cache", replay=True)
    engine = ResidentEngine()
    on_disk = findings(engine.check([project], options))
    layers = project / "demo_omni" / "layers.py"
    buffer = layers.read_bytes().replace(b"from sglang.srt.layers.quantization import",
                                         b"# a comment\n\nfrom sglang.srt.layers.quantization import")
    with unsaved_buffers({str(layers.resolve()): buffer}):
        typed = findings(engine.check([project], options))
        expected = fresh_findings(project, options, tmp_path / "fresh")
    assert typed == expected and typed != on_disk
    assert findings(engine.check([project], options)) == on_disk  # the buffer closed: the file counts


def test_each_over_bound_buffer_is_reported_with_its_own_size(tmp_path) -> None:
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    options = CheckOptions(old=str(OLD), new=str(NEW), cache_dir=tmp_path / "cache", replay=True)
    engine = ResidentEngine()
    layers = project / "demo_omni" / "layers.py"
    reasons = []
    for megabytes in (5, 9, 12):
        with unsaved_buffers({str(layers.resolve()): b"#" * (megabytes * 1024 * 1024)}):
            result = engine.check([project], options)
        reasons += [d.message for d in result.diagnostics if d.code == "SGC000" and d.path == "demo_omni/layers.py"]
    assert reasons == [f"cannot read this file ({size}, over the 4.0 MB this tool reads); its SGLang contracts are not checked"
                       for size in ("5.0 MB", "9.0 MB", "12.0 MB")]


def test_a_release_whose_content_changed_is_opened_again(tmp_path, opened) -> None:
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    new = tmp_path / "new"
    shutil.copytree(NEW, new)
    options = CheckOptions(old=str(OLD), new=str(new), cache_dir=tmp_path / "cache", replay=True)
    engine = ResidentEngine()
    before = findings(engine.check([project], options))
    assert len(opened) == 2
    # The new release's quantization module gets back the name it had lost: a directory
    # release is known by its files' sizes and times, so it is opened and read again.
    (module,) = [path for path in new.rglob("quantization/__init__.py")]
    module.write_text(module.read_text() + "\ndef get_quantization_config():\n    pass\n")
    resident = engine.check([project], options)
    assert len(opened) == 3 and opened[-1] == str(new)
    assert findings(resident) == fresh_findings(project, options, tmp_path / "fresh") != before


def test_the_language_server_checks_on_the_resident_engine(tmp_path, opened, monkeypatch) -> None:
    from sglang_contracts.lsp.server import ContractsServer

    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    monkeypatch.chdir(project)  # as the server's initialize does
    server = ContractsServer()
    server.settings = {"old": str(OLD), "new": str(NEW), "cache-dir": str(tmp_path / "cache")}
    assert isinstance(server._run({}), dict)
    assert len(opened) == 2
    edit(project / "demo_omni" / "layers.py", "from sglang.srt.layers.quantization import",
         "# quantization helpers\nfrom sglang.srt.layers.quantization import")
    assert isinstance(server._run({}), dict)
    assert len(opened) == 2, "the second check runs on the releases the first opened"
    server.collect()  # as the server does once it has published
    _, options, _ = server.last_run  # the workspace's configuration, as `check` reads it
    assert findings(server.last_result) == fresh_findings(project, options, tmp_path / "fresh")


# Edits the resident engine tells apart (incremental.moved_only), beside test_incremental's REAL_EDITS.
RESIDENT_EDITS = [
    # an attribute read added in a method body: a fact (its importers are checked again)
    ("sglang_omni/scheduling/omni_scheduler.py", "    def __init__(self", None,
     lambda text, at: text[:text.index(":\n", at) + 2] + "        seen = self.running_batch\n" + text[text.index(":\n", at) + 2:]),
    # a statement that binds a local: only moves the code below it (that file alone)
    ("sglang_omni/scheduling/omni_scheduler.py", "        seen = self.running_batch\n", None,
     lambda text, at: text[:at] + "        traced = False\n" + text[at:]),
]


@pytest.mark.network
def test_real_omni_edits_on_the_resident_engine_give_the_findings_of_a_cold_run(
        real_cache, tmp_path, opened, monkeypatch, full_run_findings) -> None:
    """sglang-omni 0.1.9 on 0.5.22 -> 0.5.23, edited as a developer edits it (a method body,
    the real SGC102 import fixed, lines added at the top, a method added to a class others
    subclass, an import added, a call added in a method and taken out), each run on the
    resident engine compared with a full run in a cache of its own (full_run_findings: cold for
    the first, only the wheels in it; test_incremental's edits of 0.1.9 reach the same states
    and compare with the same runs). A statement that only moves the code below it re-checks
    its file alone."""
    from sglang_contracts.check import incremental
    from tests.helpers import REAL_EDITS

    plans: list = []
    plan = incremental.plan
    monkeypatch.setattr(incremental, "plan", lambda *args, **kwargs: plans.append(plan(*args, **kwargs)) or plans[-1])

    project = tmp_path / "omni"
    shutil.copytree(download_sdist("sglang-omni", "0.1.9", real_cache), project)
    options = CheckOptions(old="0.5.22", new="0.5.23", cache_dir=real_cache, replay=True)
    engine = ResidentEngine()
    engine.check([project], dataclasses.replace(options, replay=False))
    opened_by_engine = len(opened)
    assert opened_by_engine == 2
    compared = []
    alone = []
    for relpath, anchor, replacement, transform in [*REAL_EDITS, *RESIDENT_EDITS]:
        path = project / relpath
        text = path.read_text()
        assert anchor in text
        path.write_text(transform(text, text.index(anchor)) if transform else text.replace(anchor, replacement, 1))
        resident = engine.check([project], options)
        alone.append(plans[-1].recomputed == {relpath})
        assert resident.replayed_files_with_contracts is None
        assert len(opened) == opened_by_engine, "the engine opened no release again"
        expected = full_run_findings(project, options)
        opened_by_engine = len(opened)
        assert findings(resident) == expected, relpath
        compared.append(findings(resident))
        collect_garbage()
    # The edits changed findings (the import fix takes its SGC102): the comparison could fail.
    assert len({str(found) for found in compared}) > 1
    # After a resident run, the statement re-checks its file alone; the read, a fact, does not.
    assert alone[-2:] == [False, True]


def test_the_pin_is_read_again_only_when_a_file_below_the_root_changed(tmp_path, monkeypatch) -> None:
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    pyproject = project / "pyproject.toml"
    reads: list[Path] = []
    real = runner.find_sglang_pin
    monkeypatch.setattr(runner, "find_sglang_pin", lambda root: reads.append(root) or real(root))
    options = CheckOptions(old=str(OLD), new=str(NEW), cache_dir=tmp_path / "cache", replay=True)
    engine = ResidentEngine()
    assert engine.check([project], options).pin.version == "0.9.0" and len(reads) == 1
    edit(project / "demo_omni" / "omni_scheduler.py", "        self.max_running_requests = 4\n",
         "        self.max_running_requests = 4\n        traced = False\n")
    assert engine.check([project], options).pin.version == "0.9.0"
    assert len(reads) == 1, "no pin file changed: the pin is not read again"
    # An editor's unsaved module (the language server checks one after every pause in typing)
    # is no pin file either; an unsaved setup.py is one.
    module = project / "demo_omni" / "layers.py"
    with unsaved_buffers({str(module.resolve()): module.read_bytes() + b"\n# typed\n"}):
        engine.check([project], options)
    assert len(reads) == 1, "an unsaved module is no pin file: the pin is not read again"
    with unsaved_buffers({str((project / "setup.py").resolve()): b"from setuptools import setup\nsetup()\n"}):
        engine.check([project], options)
    assert len(reads) == 2, "an unsaved setup.py may hold the pin: it is read again"
    engine.check([project], options)
    reads.clear()
    edit(pyproject, "sglang==0.9.0", "sglang==0.9.1")
    resident = engine.check([project], options)
    assert len(reads) == 1 and resident.pin.version == "0.9.1"
    fresh = run_check([project], dataclasses.replace(options, replay=False, cache_dir=tmp_path / "fresh"))
    assert (resident.pin, resident.notes) == (fresh.pin, fresh.notes)
    assert findings(resident) == findings(fresh)


def test_the_patch_stacks_are_read_again_only_when_a_file_their_readers_read_changed(tmp_path, monkeypatch) -> None:
    """The Dockerfiles, shell scripts and patch files (patch/stack.py stack_may_read): a typed
    module reads no stack again; an edited Dockerfile, script or patch does, and the findings are
    those of a fresh run."""
    from sglang_contracts.patch import stack as stack_module

    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    reads: list[Path] = []
    real = stack_module.patch_stacks
    monkeypatch.setattr(stack_module, "patch_stacks", lambda root, named=(): reads.append(root) or real(root, named))
    options = CheckOptions(old=str(OLD), new=str(NEW), cache_dir=tmp_path / "cache", replay=True)
    engine = ResidentEngine()
    engine.check([project], options)
    assert len(reads) == 1
    edit(project / "demo_omni" / "omni_scheduler.py", "        self.max_running_requests = 4\n",
         "        self.max_running_requests = 4\n        traced = False\n")
    module = project / "demo_omni" / "layers.py"
    with unsaved_buffers({str(module.resolve()): module.read_bytes() + b"\n# typed\n"}):
        engine.check([project], options)
    engine.check([project], options)
    assert len(reads) == 1, "no file the stack readers read changed: the stacks are not read again"
    script = project / "docker" / "apply.sh"
    script.write_text("cd /sgl-workspace/sglang && git apply docker/patch/v0.9.0/sglang.patch\n")
    resident = engine.check([project], options)
    assert len(reads) == 2, "a new shell script may apply patches: the stacks are read again"
    assert findings(resident) == fresh_findings(project, options, tmp_path / "fresh-script")  # reads them too
    patch = project / "docker" / "patch" / "v0.9.0" / "sglang.patch"
    patch.write_text(patch.read_text() + "\n")
    before = len(reads)
    resident = engine.check([project], options)
    assert len(reads) == before + 1, "an edited patch file: the stacks are read again"
    assert findings(resident) == fresh_findings(project, options, tmp_path / "fresh-patch")


# Rules whose findings come from what a resident engine keeps between runs: each_file's tables
# (HTTP requests, mirror citations, names read in files), the tree of an edited module shared
# by two analyses, and what is derived from the releases alone (their import graphs and pins,
# the source texts that probes search).
MEMOIZED = ["SGC1101", "SGC706", "SGC322", "SGC705", "SGC603"]


@pytest.mark.parametrize("code", MEMOIZED)
def test_a_memoized_analysis_follows_an_edit_that_changes_it(tmp_path, code) -> None:
    """The rule's catalog example, its Python files first empty, then as the example has them
    (the finding appears), then empty again (it goes): each resident run gives the findings
    of a fresh full run, so no kept table, tree or upstream analysis answers for the text before."""
    from sglang_contracts.diagnostics.catalog import load_catalog
    example = next(e for e in load_catalog()[code].examples if e.expect)
    old = upstream_tree(tmp_path / "old", example.old, "0.1.0")
    new = upstream_tree(tmp_path / "new", example.new, "0.2.0")
    reported = {line.split(":")[0] for line in example.expect}
    project = write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n", **example.project,
                                                **{relpath: "# not written yet\n" for relpath in reported}})
    options = CheckOptions(old=str(old), new=str(new), cache_dir=tmp_path / "cache", replay=True, **example.options)
    engine = ResidentEngine()
    seen = []
    for step, texts in enumerate([{}, {rel: example.project[rel] for rel in reported}, {rel: "" for rel in reported}]):
        write_tree(project, texts)
        resident = engine.check([project], options)
        assert findings(resident) == fresh_findings(project, options, tmp_path / f"fresh-{step}"), step
        seen.append(sorted(f"{d.path}:{d.line}:{d.col}: {d.code}" for d in resident.diagnostics if d.code == code))
    assert seen == [[], sorted(example.expect), []]
    assert engine.runs == 3


def _index_state(index) -> dict:
    return {"files": {rel: facts.to_json() for rel, facts in index.files.items()}, "order": list(index.files),
            "exports": index.exports, "digests": index.digests, "packages": index.packages, "scanned": index.scanned,
            "texts": dict(index.texts)}


def test_an_index_made_from_the_last_one_is_the_one_a_fresh_build_makes(tmp_path) -> None:
    """updated_index (what the resident engine builds after an edit) against build_index from
    nothing: the same files scanned, facts, re-export table and order, and None (built again)
    exactly where an edit may change which files are scanned or what a name resolves to."""
    from sglang_contracts.infra.cache import RecordCache
    from sglang_contracts.project.index import IndexMemo, build_index, read_python, updated_index
    from tests.helpers import write_tree

    root = write_tree(tmp_path / "project", {
        "pyproject.toml": "[project]\nname = 'app'\n",
        "app/__init__.py": "",
        "app/compat.py": "from sglang.srt.layers import rmsnorm\n",
        "app/user.py": "from app.compat import rmsnorm\n\n\ndef f(x):\n    return rmsnorm(x)\n",
        "app/plain.py": "def g():\n    return 1\n",
        "app/model.py": "import sglang.srt.models\n\n\nclass M:\n    def forward(self):\n        return 1\n",
    })
    cache = RecordCache(tmp_path / "facts")
    memo = IndexMemo()
    last = build_index(root, [root], cache, memo=memo)
    assert set(last.files) == {"app/compat.py", "app/user.py", "app/model.py"}
    edits = [  # (file, old, new, whether the last index can be updated)
        ("app/model.py", "        return 1\n", "        x = 2\n        return x\n", True),  # a method body
        ("app/compat.py", "sglang.srt.layers import", "sglang.srt.layers.norm import", True),  # an import fixed
        ("app/plain.py", "return 1", "return 2", True),  # a file no contract is in
        ("app/user.py", "return rmsnorm(x)", "return rmsnorm(x + 1)", True),  # a re-export's importer
        ("app/plain.py", "def g", "from app.compat import rmsnorm\n\n\ndef g", False),  # now imports a re-export
        ("app/compat.py", "from sglang.srt.layers.norm import rmsnorm\n",
         "import sglang\nfrom app.plain import g as rmsnorm\n", False),  # the name now the project's own
        ("app/model.py", "import sglang.srt.models\n", "", False),  # no longer names SGLang
    ]
    for relpath, old, new, updatable in edits:
        edit(root / relpath, old, new)
        updated = updated_index(last, root, [root], cache, None, None, read_python, memo)
        assert (updated is not None) == updatable, relpath
        last = updated if updated is not None else build_index(root, [root], cache, memo=memo)
        fresh, state = _index_state(build_index(root, [root], RecordCache(None))), _index_state(last)
        if not updatable:  # build_index on a kept memo may scan a round's files in another order
            del fresh["order"], state["order"]
        assert state == fresh, (relpath, old)
    assert set(last.files) == {"app/compat.py"}, "the edits changed which files are scanned"


def test_a_star_import_of_sglang_added_to_a_module_that_names_it_builds_the_index_again(tmp_path) -> None:
    """app/base.py names SGLang (in a comment), binds none of its names and star-imports nothing:
    app/m.py's `from app.base import *` gives it no SGLang name, and m.py is not scanned. An edit that adds a star import of SGLang
    to base.py, its top-level bindings as they were, makes m.py an importer of SGLang's names:
    the last index cannot be updated, and the one built again scans m.py."""
    from sglang_contracts.infra.cache import RecordCache
    from sglang_contracts.project.index import IndexMemo, build_index, read_python, updated_index
    from tests.helpers import write_tree

    root = write_tree(tmp_path / "project", {
        "pyproject.toml": "[project]\nname = 'app'\n", "app/__init__.py": "",
        "app/base.py": "# as sglang.srt.a\n", "app/m.py": "from app.base import *\n\nprint(x)\n",
    })
    cache = RecordCache(tmp_path / "facts")
    memo = IndexMemo()
    last = build_index(root, [root], cache, memo=memo)
    assert set(last.files) == {"app/base.py"}
    edit(root / "app" / "base.py", "\n", "\nfrom sglang.srt.a import *\n")
    assert updated_index(last, root, [root], cache, None, None, read_python, memo) is None
    assert set(build_index(root, [root], cache, memo=memo).files) == {"app/base.py", "app/m.py"}


def test_an_edit_that_only_moves_code_rechecks_that_file_alone(tmp_path, monkeypatch) -> None:
    """After an edit that changes nothing other files read of a file but where its code sits
    (incremental.moved_only), the resident engine checks that file alone; an edit of a fact or
    of what a text analysis reads (a citation in a comment) checks its importers too. Each run
    gives the findings of a fresh full run."""
    from sglang_contracts.check import incremental

    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    (project / "tests" / "test_doubles.py").unlink()  # test doubles make every edit a full run
    plans: list = []
    plan = incremental.plan
    monkeypatch.setattr(incremental, "plan", lambda *args, **kwargs: plans.append(plan(*args, **kwargs)) or plans[-1])
    options = CheckOptions(old=str(OLD), new=str(NEW), cache_dir=tmp_path / "cache", replay=True)
    engine = ResidentEngine()
    engine.check([project], options)
    seam = "demo_omni/vendor/sglang/server_args.py"  # demo_omni/serving.py imports it
    edits = [  # (old, new, whether only the file itself is checked again)
        ('"""The one seam for ServerArgs mutation."""\n', '"""The one seam for ServerArgs mutation."""\n\n# one by one\n', True),
        ("        setattr(server_args, name, value)\n", "        setattr(server_args, name, value)\n        server_args.check_server_args()\n",
         False),  # a call: a fact
        ("# one by one\n", "# copied from sglang.srt.server_args.ServerArgs.__post_init__\n", False),  # a citation
        ("        server_args.check_server_args()\n", "        server_args.check_server_args()\n\n", True),
    ]
    for step, (old, new, alone) in enumerate(edits):
        edit(project / seam, old, new)
        resident = engine.check([project], options)
        assert findings(resident) == fresh_findings(project, options, tmp_path / f"fresh-{step}"), step
        recomputed = plans[-1].recomputed
        assert recomputed is not None, step
        assert (recomputed == {seam}) == alone and (seam in recomputed), (step, recomputed)
        if not alone:
            assert "demo_omni/serving.py" in recomputed


def test_an_edit_after_a_computed_warm_up_is_planned_against_the_warm_up(tmp_path, monkeypatch) -> None:
    """A process that starts on a replayed check computes it again (ResidentEngine.computed, the
    daemon's and the language server's warm-up) and records it: the first edit is planned
    against the files as the warm-up read them, not against the last run recorded before (here
    of another state of the edited file), so an edit that only moves code checks that file alone."""
    from sglang_contracts.check import incremental

    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    (project / "tests" / "test_doubles.py").unlink()  # test doubles make every edit a full run
    options = CheckOptions(old=str(OLD), new=str(NEW), cache_dir=tmp_path / "cache", replay=True)
    # A file put back as it was keeps its change time and inode new: the listing of the first run
    # is met again only where a file is told by size and time alone (this test is of the plan).
    from sglang_contracts.check import replay
    monkeypatch.setattr(replay, "file_state", lambda status: f"{status.st_size}\0{status.st_mtime_ns}")
    seam = project / "demo_omni/vendor/sglang/server_args.py"
    original, stamp = seam.read_text(), seam.stat()
    run_check([project], options)  # the run the warm-up replays
    edit(seam, "        setattr(server_args, name, value)\n", "        setattr(server_args, name, value)\n        x = 1\n")
    run_check([project], options)  # the last run recorded: another state of the file
    seam.write_text(original)
    os.utime(seam, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # the files as the first run listed them

    plans: list = []
    plan = incremental.plan
    monkeypatch.setattr(incremental, "plan", lambda *args, **kwargs: plans.append(plan(*args, **kwargs)) or plans[-1])
    engine = ResidentEngine()
    replayed = engine.check([project], options)
    assert replayed.replayed_files_with_contracts is not None
    warm = engine.computed([project], options, replayed)
    assert warm.replayed_files_with_contracts is None and findings(warm) == findings(replayed)
    assert plans[-1].full

    edit(seam, '"""The one seam for ServerArgs mutation."""\n', '"""The one seam for ServerArgs mutation."""\n\n# one by one\n')
    resident = engine.check([project], options)
    assert findings(resident) == fresh_findings(project, options, tmp_path / "fresh")
    assert plans[-1].recomputed == {"demo_omni/vendor/sglang/server_args.py"}


# The whole-project analyses a resident engine keeps while edits only move code (CheckContext.
# of_placeless_project): (rule, module, function, edited file, steps). A step is (old, new,
# the rule's findings, whether the analysis is computed again): an edit that moves code, one
# that changes what the analysis reads, and back.
PLACELESS = [
    ("SGC302", "sglang_contracts.analysis.callers", "_reach", "app/scheduler.py", [
        (None, None, ["app/scheduler.py:4:9"], True),
        ("class OmniScheduler", "# moved down a line\nclass OmniScheduler", ["app/scheduler.py:5:9"], False),
        ("        return self.run_step(batch)\n", "        return None\n", [], True),  # the caller no longer runs
        ("        return None\n", "        return self.run_step(batch)\n", ["app/scheduler.py:5:9"], True),
        ("# moved down a line\n", "", ["app/scheduler.py:4:9"], False),
    ]),
    ("SGC322", "sglang_contracts.contracts.attributes", "_suspects", "app/runner.py", [
        (None, None, ["app/prefix.py:3:25", "app/runner.py:4:17"], True),
        ("def lengths", "# moved down a line\ndef lengths", ["app/prefix.py:3:25", "app/runner.py:5:17"], False),
        ("from sglang.srt.managers.schedule_batch import Req\n", "", [], True),  # no file imports Req by name
        ("# moved down a line\n", "from sglang.srt.managers.schedule_batch import Req\n",
         ["app/prefix.py:3:25", "app/runner.py:4:17"], True),
    ]),
]


@pytest.mark.parametrize("code, module, function, edited, steps", PLACELESS, ids=[row[0] for row in PLACELESS])
def test_a_whole_project_analysis_is_kept_while_edits_only_move_code(tmp_path, monkeypatch, code, module, function,
                                                                     edited, steps) -> None:
    """The rule's catalog example edited step by step: the analysis, which reads every file,
    is computed again after an edit that changes what it reads and kept after one that only
    moves code; each run gives the findings of a fresh full run."""
    import importlib

    from sglang_contracts.diagnostics.catalog import load_catalog
    example = next(e for e in load_catalog()[code].examples if e.expect)
    old = upstream_tree(tmp_path / "old", example.old, "0.1.0")
    new = upstream_tree(tmp_path / "new", example.new, "0.2.0")
    project = write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n", **example.project})
    computed: list[int] = []
    owner = importlib.import_module(module)
    real = getattr(owner, function)
    monkeypatch.setattr(owner, function, lambda *args: computed.append(1) or real(*args))
    options = CheckOptions(old=str(old), new=str(new), cache_dir=tmp_path / "cache", replay=True)
    engine = ResidentEngine()
    for step, (was, now, expected, again) in enumerate(steps):
        if was is not None:
            edit(project / edited, was, now)
        computed.clear()
        resident = engine.check([project], options)
        assert bool(computed) == again and len(computed) <= 1, step  # once a run at most
        assert findings(resident) == fresh_findings(project, options, tmp_path / f"fresh-{step}"), step
        assert sorted(f"{d.path}:{d.line}:{d.col}" for d in resident.diagnostics if d.code == code) == expected, step


def test_a_server_engine_collects_garbage_between_runs_and_a_plain_one_as_always(tmp_path) -> None:
    """collect_between (the daemon's, the language server's): the collector is off from a run's
    start until `collect`, which the server calls once the answer is out, or the next run's
    start; an engine without it leaves the collector as it found it."""
    import gc

    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    options = CheckOptions(old=str(OLD), new=str(NEW), cache_dir=tmp_path / "cache", replay=False)
    gc.enable()
    ResidentEngine().check([project], options)
    assert gc.isenabled()
    engine = ResidentEngine(collect_between=True)
    try:
        first = engine.check([project], options)
        assert not gc.isenabled(), "collected after the answer, not during the run"
        assert findings(engine.check([project], options)) == findings(first)
        assert not gc.isenabled()
        engine.collect()
        assert gc.isenabled()
    finally:
        gc.enable()


def test_what_the_checks_read_of_files_that_are_not_python_is_kept_until_one_changes(tmp_path, monkeypatch) -> None:
    """The requirements declared (pyproject.toml, requirement files), read once while only
    Python files change; read again once another file or setup.py changes; a requirement file
    that cannot be read is reported by every run, the runs that reuse the reading too. (A first
    run's early walk of the closures reads them once more, on a thread of its own, for itself:
    runner._EarlyClosureWalk.)"""
    import os
    import threading

    from sglang_contracts.contracts import stack

    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    os.mkfifo(project / "requirements-dev.txt")  # listed, and not a file it can read
    reads: list[Path] = []
    walked: list[Path] = []
    real = stack.declared_requirements

    def declared(root: Path):
        (walked if threading.current_thread().name == "closure walk" else reads).append(root)
        return real(root)

    monkeypatch.setattr(stack, "declared_requirements", declared)
    options = CheckOptions(old=str(OLD), new=str(NEW), cache_dir=tmp_path / "cache", replay=True)
    engine = ResidentEngine()

    def unreadable(result) -> list[str]:
        return [d.path for d in result.diagnostics if d.code == "SGC000" and d.path == "requirements-dev.txt"]

    first = engine.check([project], options)
    assert len(reads) == 1 and unreadable(first) == ["requirements-dev.txt"]
    assert len(walked) <= 1
    edit(project / "demo_omni" / "omni_scheduler.py", "        self.max_running_requests = 4\n",
         "        self.max_running_requests = 4\n        traced = False\n")
    typed = engine.check([project], options)
    assert len(reads) == 1, "only a Python file changed: the requirements are not read again"
    assert unreadable(typed) == ["requirements-dev.txt"]
    assert findings(typed) == fresh_findings(project, options, tmp_path / "fresh-1")
    reads.clear()
    edit(project / "pyproject.toml", '    "numpy",\n', '    "numpy",\n    "xgrammar",\n')
    declared = engine.check([project], options)
    assert len(reads) == 1, "pyproject.toml changed: read again"
    assert findings(declared) == fresh_findings(project, options, tmp_path / "fresh-2")
    reads.clear()  # the fresh run read them too, in this process (the closure is computed before its fork)
    with unsaved_buffers({str((project / "setup.py").resolve()): b"from setuptools import setup\nsetup()\n"}):
        engine.check([project], options)
    assert len(reads) == 1, "an unsaved setup.py declares requirements: read again"


def test_an_unsaved_buffer_of_a_file_that_is_not_python_is_checked_as_its_content(tmp_path) -> None:
    """The incremental plan's key covers the files that are not Python by path, size and time,
    and their unsaved buffers by content (helper-44's audit: a Dockerfile buffer kept the last
    run's findings): the resident run after such a buffer equals a fresh run on the saved file."""
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    options = CheckOptions(old=str(OLD), new=str(NEW), cache_dir=tmp_path / "cache", replay=True)
    engine = ResidentEngine()
    engine.check([project], options)
    dockerfile = project / "docker" / "Dockerfile"
    text = dockerfile.read_text()
    assert "sglang:v0.9.0-cu129" in text
    changed = text.replace("sglang:v0.9.0-cu129", "sglang:v0.9.1-cu129")  # the image's SGLang is another release
    with unsaved_buffers({str(dockerfile.resolve()): changed.encode()}):
        resident = engine.check([project], options)
    saved = tmp_path / "saved"
    shutil.copytree(project, saved)
    (saved / "docker" / "Dockerfile").write_text(changed)
    fresh = run_check([saved], dataclasses.replace(options, replay=False, cache_dir=tmp_path / "fresh"))
    assert findings(resident) == findings(fresh)
    assert findings(resident) != findings(engine.check([project], options))  # the buffer mattered


def test_the_records_of_a_re_check_are_written_after_it_as_a_fresh_run_writes_them(tmp_path) -> None:
    """A resident engine writes the edited file's facts and the per-file tables it changed
    once the answer is out (collect): then the cache holds what a run in its own process would
    have written, and such a run on it gives the same findings."""
    from sglang_contracts.project.index import _facts_key
    from sglang_contracts.project.scanner import scan_source

    project = tmp_path / "project"
    shutil.copytree(PROJECT, project)
    options = CheckOptions(old=str(OLD), new=str(NEW), cache_dir=tmp_path / "cache", replay=True)
    engine = ResidentEngine(collect_between=True)
    engine.check([project], options)
    engine.collect()
    seam = "demo_omni/vendor/sglang/server_args.py"
    edit(project / seam, "        setattr(server_args, name, value)\n",
         "        setattr(server_args, name, value)\n        server_args.check_server_args()\n")
    result = engine.check([project], options)
    index = result.project
    key = _facts_key(seam, index.files[seam].module, index.digests[seam], index.packages)
    assert engine._index_memo.unwritten  # not yet: the answer is not out
    engine.collect()
    assert not engine._index_memo.unwritten
    scanned = scan_source(seam, index.files[seam].module, (project / seam).read_text(), index.packages)
    assert index.cache.get(key, object) == json.loads(json.dumps(scanned.to_record()))  # as a fresh run writes it
    own = run_check([project], dataclasses.replace(options, replay=False))
    assert findings(own) == findings(result) == fresh_findings(project, options, tmp_path / "fresh")


def test_a_fake_mapped_since_the_last_run_is_read_though_its_module_names_no_sglang(tmp_path) -> None:
    """The configured objects decide which files the index scans (campaign 9, R05): a run with a
    fake mapped after a run without is no edit of the files to apply to the last index."""
    removed = "class K:\n    def keep(self): ...\n    def gone(self): ...\n"
    old = upstream_tree(tmp_path / "old", {"sglang/srt/k.py": removed}, "3.0.0")
    new = upstream_tree(tmp_path / "new", {"sglang/srt/k.py": "class K:\n    def keep(self): ...\n"}, "3.0.1")
    project = write_tree(tmp_path / "project", {
        "app/main.py": "from sglang.srt.k import K\n",
        "tests/fakes.py": "import os\n\n\nclass Thing:\n    def keep(self): ...\n    def gone(self): ...\n"})
    options = CheckOptions(old=str(old), new=str(new), cache_dir=tmp_path / "cache", replay=True)
    engine = ResidentEngine()
    assert not [d for d in engine.check([project], options).diagnostics if d.code == "SGC602"]
    mapped = dataclasses.replace(options, settings={"fakes": {"tests.fakes.Thing": "sglang.srt.k.K"}})
    resident = engine.check([project], mapped)
    assert [(d.path, d.code) for d in resident.diagnostics if d.code == "SGC602"] == [("tests/fakes.py", "SGC602")]
    assert findings(resident) == fresh_findings(project, mapped, tmp_path / "fresh")
