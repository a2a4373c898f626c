"""The tool runs in the project's folder (the pre-commit hook, a CI step, the editor), and the
project may be a pull request's files: no Python process of the tool imports from the folder it
was started in (campaign 12, R07: a committed `griffe.py` ran in the multiprocessing
forkserver, `pip/__main__.py` instead of pip, `sglang_contracts/__main__.py` as the daemon)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sglang_contracts.infra.pythonpath import absolute_path_folders
from tests.helpers import CHECKOUT, checkout_env, upstream_tree, write_tree

PACKAGE = CHECKOUT / "sglang_contracts"


def _planted(folder: Path, marks: Path) -> None:
    """Modules a pull request could commit, each leaving a mark when imported."""
    payload = (f"import os, sys\nopen({str(marks)!r} + '/' + __name__ + '-' + str(os.getpid()), 'w')"
               ".write(' '.join(sys.argv))\n")
    write_tree(folder, {"griffe.py": payload, "pip/__init__.py": "", "pip/__main__.py": payload,
                        "sglang_contracts/__init__.py": payload, "sglang_contracts/__main__.py": payload})


def _run(code: str, cwd: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *flags, "-c", code], cwd=cwd, env=checkout_env(), capture_output=True,
                          text=True, timeout=120)


def test_the_worker_pool_s_server_never_imports_the_working_folder(tmp_path) -> None:
    """The server is `python -c`, flags as this process's: this one is started without `-P`,
    as the command line is, and imports nothing the folder holds (the server preloads griffe)."""
    marks = tmp_path / "marks"
    marks.mkdir()
    write_tree(tmp_path / "project", {"griffe.py": f"open({str(marks)!r} + '/griffe', 'w')\n"})
    done = _run("import os\nfrom sglang_contracts.infra import parallel\n"
                "pool = parallel._new_pool(1)\nprint(pool.submit(os.getpid).result() != os.getpid())\n"
                "pool.shutdown()\n", tmp_path / "project")
    assert done.stdout.strip() == "True", done.stderr
    assert sorted(path.name.split("-")[0] for path in marks.iterdir()) == []


def test_pip_is_the_installed_one_not_the_working_folder_s(tmp_path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    _planted(tmp_path / "project", marks)
    # -P: this test's own process reads nothing from the folder; only what it starts could
    done = _run("from sglang_contracts.closure import index\nprint(type(index._pip_config()).__name__)\n",
                tmp_path / "project", "-P")
    assert done.stdout.strip() == "dict", done.stderr
    assert sorted(path.name.split("-")[0] for path in marks.iterdir()) == []


def test_python_m_in_the_project_folder_checks_it_without_importing_from_it(tmp_path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    old = upstream_tree(tmp_path / "old", {"sglang/srt/a.py": "x = 1\n"}, "0.1.0")
    new = upstream_tree(tmp_path / "new", {"sglang/srt/a.py": "y = 1\n"}, "0.2.0")
    project = tmp_path / "project"
    write_tree(project, {"pyproject.toml": "[project]\nname = 'p'\n", "m.py": "from sglang.srt.a import x\n"})
    for name in ("griffe", "typing", "__future__", "re", "dataclasses"):  # imported first by the tool's own modules
        (project / f"{name}.py").write_text(f"open({str(marks)!r} + '/{name}', 'w')\n")
    done = subprocess.run([sys.executable, "-m", "sglang_contracts", "check", "--old", str(old), "--new", str(new),
                           "--cache-dir", str(tmp_path / "cache")], cwd=project,
                          env=checkout_env(SGLANG_CONTRACTS_PACKAGE_INDEX="none"), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1 and "m.py:1:" in done.stdout and "SGC102" in done.stdout, done.stderr
    assert list(marks.iterdir()) == []


def test_every_python_process_the_tool_starts_leaves_the_working_folder_out() -> None:
    """`sys.executable` is named by infra/pythonpath.py alone (python_command: `-P`)."""
    naming = [str(path.relative_to(CHECKOUT)) for path in sorted(PACKAGE.rglob("*.py"))
              if any(isinstance(node, ast.Attribute) and node.attr == "executable"
                     and isinstance(node.value, ast.Name) and node.value.id == "sys"
                     for node in ast.walk(ast.parse(path.read_text())))]
    assert naming == ["sglang_contracts/infra/pythonpath.py"]


def test_a_removed_working_folder_is_one_error_line(tmp_path) -> None:
    """A shell still in a folder removed under it (campaign 13, R04: a traceback from `python -m`,
    an internal error from the console script); `rules` needs no folder."""
    gone = tmp_path / "gone"
    gone.mkdir()
    project = write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'p'\n", "m.py": "x = 1\n"})
    for command in (["check", str(project)], ["fix", str(project)], ["rules"]):
        done = subprocess.run(["sh", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "sh", str(gone),
                               sys.executable, "-m", "sglang_contracts", *command],
                              env=checkout_env(), capture_output=True, text=True, timeout=120)
        gone.mkdir()
        if command == ["rules"]:
            assert done.returncode == 0 and "SGC001" in done.stdout, done.stderr
            continue
        assert (done.returncode, done.stdout) == (2, ""), done.stderr
        assert done.stderr == ("sglang-contracts: error: the working folder cannot be read "
                               "(No such file or directory): run from an existing folder\n")


@pytest.mark.parametrize("report", ["text", "sarif"])
def test_a_working_folder_removed_during_the_run_leaves_the_report_whole(tmp_path, monkeypatch, capsys,
                                                                        report) -> None:
    """Removed after the run began (the project named by an absolute path): an internal error, or
    a false "cannot write standard output" and no report (campaign 20, R09). The run goes on from
    the folder it began in; the report names files from the project's root."""
    from sglang_contracts.cli import main
    from sglang_contracts.infra import roots
    from tests.helpers import NEW, OLD

    monkeypatch.delenv("SGLANG_CONTRACTS_DEBUG")
    project = write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'p'\n",
                                                "m.py": "from sglang.srt.managers.scheduler import Scheduler\n"
                                                        "Scheduler.get_num_allocatable_reqs\n"})
    (tmp_path / "gone").mkdir()
    monkeypatch.chdir(tmp_path / "gone")  # and back where the test began, once it is done
    remember = roots.remember_working_folder
    for kept in ("_AT_START", "_REMOVED"):  # this process's, put back once the test is done
        monkeypatch.setattr(roots, kept, [])

    def then_removed() -> str:
        folder = remember()
        os.rmdir(folder)  # as a shell's `rm -r` of the folder it is in: getcwd fails from now on
        return folder

    monkeypatch.setattr("sglang_contracts.cli.remember_working_folder", then_removed)
    status = main(["check", str(project), "--old", str(OLD), "--new", str(NEW), "--no-cache", "--format", report])
    out, err = capsys.readouterr()
    assert (status, err) == (1, "")
    assert ("m.py:2" in out) if report == "text" else '"uri": "m.py"' in out


def _marking_program(path: Path, marks: Path) -> None:
    """An executable at `path` that leaves a mark in `marks` when run, and fails."""
    path.write_text(f"#!/bin/sh\necho \"$*\" > {marks}/ran-$$\nexit 1\n")
    path.chmod(0o755)


@pytest.mark.parametrize("entry", ["", "."], ids=["empty-entry", "dot"])
def test_a_program_the_project_commits_never_runs_whatever_path_holds(tmp_path, entry) -> None:
    """A PATH with an empty entry (`export PATH=$EXTRA:$PATH`, EXTRA unset) or `.` ran the `git`
    a pull request committed: a check runs `git ls-files` when it meets an old fix temporary
    (campaign 15, R01). PATH's relative entries are left out of every program's search."""
    marks = tmp_path / "marks"
    marks.mkdir()
    old = upstream_tree(tmp_path / "old", {"sglang/srt/a.py": "x = 1\n"}, "0.1.0")
    new = upstream_tree(tmp_path / "new", {"sglang/srt/a.py": "y = 1\n"}, "0.2.0")
    project = write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'p'\n",
                                                "m.py": "from sglang.srt.a import x\n"})
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    _marking_program(project / "git", marks)
    stale = project / ".m.py.sglang-contracts-999999-abc.tmp"  # a fix's temporary whose writer is gone
    stale.write_text("x")
    os.utime(stale, (0, 0))
    done = subprocess.run([sys.executable, "-P", "-m", "sglang_contracts", "check", "--old", str(old), "--new", str(new),
                           "--cache-dir", str(tmp_path / "cache")], cwd=project,
                          env=checkout_env(SGLANG_CONTRACTS_PACKAGE_INDEX="none", PATH=f"{entry}:{os.environ['PATH']}"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "m.py:1:" in done.stdout, done.stderr
    assert list(marks.iterdir()) == []


def test_only_absolute_folders_of_path_are_searched() -> None:
    assert absolute_path_folders(":/usr/bin:.:bin:/bin:") == "/usr/bin:/bin"
    assert absolute_path_folders("") == absolute_path_folders(".:x") == os.defpath


def test_another_user_s_marker_in_a_folder_anyone_writes_is_no_project_root_nor_configuration(tmp_path,
                                                                                          monkeypatch) -> None:
    """In /tmp another user's pyproject.toml above a scratch file was its project's root and its
    configuration: its `sglang-repo` was that user's clone (campaign 15, R05). A marker another
    user made in a folder anyone may write to is neither; in a folder of mode 777 the user's own
    marker still is (a container's volume)."""
    from sglang_contracts.config import find_config
    from sglang_contracts.infra.roots import project_root_for

    shared = write_tree(tmp_path / "shared", {"pyproject.toml": "[tool.sglang-contracts]\nnew = 'v1'\n",
                                              "mine/scratch.py": "x = 1\n"})
    shared.chmod(0o1777)
    scratch = shared / "mine" / "scratch.py"
    assert project_root_for([scratch]) == shared  # the user's own marker
    assert find_config(shared, None).values == {"new": "v1"}
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(shared / "pyproject.toml").st_uid + 1)  # now another user's
    assert project_root_for([scratch]) == shared / "mine"
    assert find_config(shared, None).values == {}
    shared.chmod(0o755)  # a folder only its owner writes: the owner's project, whoever runs
    assert project_root_for([scratch]) == shared


def test_an_empty_pythonpath_entry_imports_nothing_from_the_project(tmp_path) -> None:
    """`export PYTHONPATH=$PYTHONPATH:/opt/x` with none set gives an empty entry, which Python
    reads as the working folder, before the installed packages: a committed
    `packaging/__init__.py` ran in the tool's own process (campaign 16, R02)."""
    marks = tmp_path / "marks"
    marks.mkdir()
    old = upstream_tree(tmp_path / "old", {"sglang/srt/a.py": "x = 1\n"}, "0.1.0")
    new = upstream_tree(tmp_path / "new", {"sglang/srt/a.py": "y = 1\n"}, "0.2.0")
    project = write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'p'\n",
                                                "m.py": "from sglang.srt.a import x\n",
                                                "packaging/__init__.py": f"open({str(marks)!r} + '/packaging', 'w')\n"})
    entry = ("import sys\nsys.argv = ['sglang-contracts', *sys.argv[1:]]\n"
             "from sglang_contracts.cli import entry\nentry()\n")
    env = checkout_env(SGLANG_CONTRACTS_PACKAGE_INDEX="none")
    env["PYTHONPATH"] = os.pathsep + env["PYTHONPATH"]
    done = subprocess.run([sys.executable, "-P", "-c", entry, "check", "--old", str(old), "--new", str(new),
                           "--cache-dir", str(tmp_path / "cache")], cwd=project, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 1 and "m.py:1:" in done.stdout, done.stderr
    assert list(marks.iterdir()) == []


def test_a_file_of_no_project_in_a_folder_anyone_writes_is_one_error_not_a_walk_of_it(tmp_path, monkeypatch) -> None:
    """`check /tmp/scratch.py` took /tmp for the project and read and parsed every Python file
    below it, other users' too, for minutes (campaign 18, R10). A file of no project is checked
    with its folder for the project unless that folder is one anyone writes to, the home folder
    or the file system's root: then one line says so."""
    from sglang_contracts.infra.errors import UsageError
    from sglang_contracts.infra.roots import project_root_for

    shared = write_tree(tmp_path / "shared", {"scratch.py": "x = 1\n", "mine/other.py": "x = 2\n"})
    assert project_root_for([shared / "scratch.py"]) == shared  # a folder of the user's own
    shared.chmod(0o1777)
    with pytest.raises(UsageError, match="is in no project .* it is a folder anyone may write to"):
        project_root_for([shared / "scratch.py"])
    assert project_root_for([shared / "mine" / "other.py"]) == shared / "mine"  # a folder of its own below it
    monkeypatch.setenv("HOME", str(shared / "mine"))
    with pytest.raises(UsageError, match="it is the home folder"):
        project_root_for([shared / "mine" / "other.py"])


def test_a_file_of_no_project_is_read_alone_not_with_its_folder(tmp_path, monkeypatch) -> None:
    """A scratch file in a folder of the user's own that holds no project (no marker at or above
    it) is checked with its folder for the project, and every Python file beside it was read and
    parsed: 40,000 of them took 93 s (campaign 19). The named files are read, the others not;
    a folder named is read whole."""
    from sglang_contracts.check.runner import CheckOptions, Fresh, run_check
    from sglang_contracts.project.index import read_python
    from tests.helpers import NEW, OLD

    folder = write_tree(tmp_path / "scratch", {"one.py": "from sglang.srt.server_args import ServerArgs\n",
                                               **{f"other{n}.py": "import os\n" for n in range(30)}})
    read = []
    monkeypatch.setattr(Fresh, "read_python", lambda self, path, root=None: read.append(path.name) or
                        read_python(path, root))
    options = CheckOptions(old=str(OLD), new=str(NEW), use_cache=False, workers=1)
    run_check([folder / "one.py"], options)
    assert read == ["one.py"]
    read.clear()
    run_check([folder], options)
    assert len(read) == 31


def test_a_file_of_no_project_is_read_alone_by_the_stack_readers_too(tmp_path, monkeypatch) -> None:
    """The lone file's folder was still walked and read for release mentions, requirements,
    Dockerfiles, scripts and patches: `check ~/Downloads/one.md` beside 40,000 other files took
    48 s (campaign 19, R12). Only the named files are read; a folder named is read whole."""
    from sglang_contracts.check.runner import CheckOptions, run_check
    from sglang_contracts.infra.boundary import read_project_text
    from tests.helpers import NEW, OLD

    pin = "pip install sglang==0.9.0\n"
    folder = write_tree(tmp_path / "Downloads", {
        "one.md": pin, "other.md": pin, "requirements.txt": "sglang==0.9.0\n",
        "old/requirements-ci.txt": "sglang==0.9.0\n", "Dockerfile": "FROM lmsysorg/sglang:v0.9.0\n",
        "build/install.sh": pin, "fix.patch": "--- a/python/sglang/x.py\n+++ b/python/sglang/x.py\n"})
    read: set[str] = set()

    def recorded(path, root, *args, **kwargs):
        read.add(Path(path).relative_to(folder).as_posix())
        return read_project_text(path, root, *args, **kwargs)

    for module in [m for name, m in sys.modules.items() if name.startswith("sglang_contracts.")]:
        if getattr(module, "read_project_text", None) is read_project_text:
            monkeypatch.setattr(module, "read_project_text", recorded)
    options = CheckOptions(old=str(OLD), new=str(NEW), use_cache=False, workers=1)
    found = run_check([folder / "one.md"], options).diagnostics
    assert {(d.path, d.code) for d in found} == {("one.md", "SGC702")}
    assert read == {"one.md"}
    run_check([folder / "one.md", folder / "other.md"], options)
    assert read == {"one.md", "other.md"}
    read.clear()  # a file and a folder: the folder is read whole, the other files not (campaign 20, R03)
    found = run_check([folder / "one.md", folder / "old"], options).diagnostics
    assert read == {"one.md", "old/requirements-ci.txt"}
    assert {d.path for d in found} == {"one.md", "old/requirements-ci.txt"}
    read.clear()  # a link named is read where it leads (campaign 20, R08: nothing was read, nothing said)
    (folder / "link.md").symlink_to("old/requirements-ci.txt")
    found = run_check([folder / "link.md"], options).diagnostics
    assert {d.path for d in found} == {"old/requirements-ci.txt"}
    assert "old/requirements-ci.txt" in read <= {"link.md", "old/requirements-ci.txt"}
    (folder / "link.md").unlink()
    read.clear()
    run_check([folder], options)
    assert len(read) == 7


def test_paths_named_in_several_projects_are_one_run_or_one_error_never_a_dropped_file(tmp_path) -> None:
    """pre-commit names the staged files of a monorepo's every package: the run took the first
    path's project and dropped the others' files without a word (campaign 20, R11). A project
    that holds the others (a repository's top above a package's pyproject.toml) is the run's;
    projects none of which holds the others are one usage error; files of no project in two
    folders are read from the folder that holds them both."""
    from sglang_contracts.check.runner import CheckOptions, run_check
    from sglang_contracts.infra.errors import UsageError
    from tests.helpers import NEW, OLD

    call = "from sglang.srt.managers.scheduler import Scheduler\nScheduler.get_num_allocatable_reqs\n"
    options = CheckOptions(old=str(OLD), new=str(NEW), use_cache=False, workers=1)
    mono = write_tree(tmp_path / "mono", {"pa/pyproject.toml": "[project]\nname = 'a'\n", "pa/m.py": call,
                                          "pb/pyproject.toml": "[project]\nname = 'b'\n", "pb/m.py": call})
    for named in ([mono / "pa/m.py", mono / "pb/m.py"], [mono / "pb/m.py", mono / "pa/m.py"]):
        with pytest.raises(UsageError, match=r"the paths named are in 2 projects \(.*pa, .*pb\)"):
            run_check(named, options)
    (mono / ".git").mkdir()  # the repository's top holds both packages: its project is the run's
    (mono / "Dockerfile").write_text("FROM lmsysorg/sglang:v0.9.0\n")
    found = run_check([mono / "pb/m.py", mono / "Dockerfile", mono / "pa/m.py"], options).diagnostics
    assert {d.path for d in found} == {"pa/m.py", "pb/m.py", "Dockerfile"}
    loose = write_tree(tmp_path / "Downloads", {"x/a.md": "pip install sglang==0.9.0\n",
                                               "y/z/b.md": "pip install sglang==0.9.0\n", "y/c.md": "sglang==0.9.0\n"})
    found = run_check([loose / "x/a.md", loose / "y/z/b.md"], options).diagnostics
    assert {d.path for d in found} == {"x/a.md", "y/z/b.md"}
