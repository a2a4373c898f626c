"""A run whose every input is unchanged replays its findings (replay.py); any change recomputes."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import NEW, OLD, PROJECT
from sglang_contracts.check.runner import CheckOptions, run_check


def findings(result) -> list[dict]:
    return [d.to_json() for d in result.diagnostics]


def test_an_unchanged_run_is_replayed_with_the_same_findings(published) -> None:
    project, options = published
    first = run_check([project], options)
    assert first.replayed_files_with_contracts is None and first.diagnostics
    again = run_check([project], options)
    assert again.replayed_files_with_contracts == len(first.project.files)
    assert findings(again) == findings(first)
    assert again.old.release.label == first.old.release.label


def test_a_replay_opens_neither_release_until_one_is_read(published, monkeypatch) -> None:
    """Opening a wheel (its directory) or a clone's tree costs more than the replay itself."""
    from sglang_contracts.check import runner

    project, options = published
    first = run_check([project], options)
    opened = []
    real_open = runner.open_release
    monkeypatch.setattr(runner, "open_release", lambda *args, **kwargs: opened.append(args) or real_open(*args, **kwargs))
    again = run_check([project], options)
    assert again.replayed_files_with_contracts is not None and findings(again) == findings(first)
    assert [again.old.release.short, again.new.release.short] == [first.old.release.short, first.new.release.short]
    assert opened == []
    # What a caller reads of a tree still answers, from the release opened then.
    assert again.new.tree.list_dir("sglang") == first.new.tree.list_dir("sglang")
    assert len(opened) == 1


def test_an_edited_python_file_is_read_again(published) -> None:
    project, options = published
    first = run_check([project], options)
    path, line = next((d.path, d.line) for d in first.diagnostics if d.path.endswith(".py"))
    edited = project / path
    edited.write_text("# a new first line\n" + edited.read_text())
    after = run_check([project], options)
    assert after.replayed_files_with_contracts is None
    moved = [d for d in after.diagnostics if d.path == path]
    assert [d.line for d in moved] == [d.line + 1 for d in first.diagnostics if d.path == path]
    assert any(d.line == line + 1 for d in moved)


def test_any_other_file_of_the_project_counts(published) -> None:
    project, options = published
    run_check([project], options)
    (project / "docs" / "install.md").write_text("Nothing about releases any more.\n")
    assert run_check([project], options).replayed_files_with_contracts is None
    assert run_check([project], options).replayed_files_with_contracts is not None


def test_what_git_ignores_counts_though_no_file_of_the_listing_shows_it(published) -> None:
    """.git/info/exclude is no file of the project's listing: a file it kept out and then let in
    was replayed as unread, exit 0 (campaign 20, R07)."""
    import subprocess

    project, options = published
    subprocess.run(["git", "init", "-q"], cwd=project, check=True, capture_output=True)
    exclude = project / ".git" / "info" / "exclude"
    exclude.write_text("install.md\n")
    first = run_check([project], options)
    assert first.diagnostics and "docs/install.md" not in {d.path for d in first.diagnostics}
    assert run_check([project], options).replayed_files_with_contracts is not None
    exclude.write_text("")
    after = run_check([project], options)
    assert after.replayed_files_with_contracts is None
    assert "docs/install.md" in {d.path for d in after.diagnostics}


def test_other_options_are_another_run(published) -> None:
    project, options = published
    run_check([project], options)
    options.select = ["SGC1"]
    narrower = run_check([project], options)
    assert narrower.replayed_files_with_contracts is None
    assert {d.code[:4] for d in narrower.diagnostics} == {"SGC1"}


def test_library_callers_get_the_project_facts_unless_they_ask_for_replay(published) -> None:
    """A replayed result holds no project facts; a caller that reads them must get a full run."""
    project, options = published
    first = run_check([project], options)
    computed = run_check([project], dataclasses.replace(options, replay=False))
    assert computed.replayed_files_with_contracts is None
    assert computed.project.files and len(computed.project.files) == len(first.project.files)
    assert findings(computed) == findings(first)


def test_releases_read_from_directories_replay_until_their_files_change(tmp_path: Path) -> None:
    project, old, new = tmp_path / "project", tmp_path / "old", tmp_path / "new"
    for source, target in ((PROJECT, project), (OLD, old), (NEW, new)):
        shutil.copytree(source, target)
    options = CheckOptions(old=str(old), new=str(new), cache_dir=tmp_path / "cache", replay=True)
    first = run_check([project], options)
    assert run_check([project], options).replayed_files_with_contracts is not None
    # The new release gets `prepare_server_args` back: its SGC102 and SGC105 go.
    server_args = new / "sglang" / "srt" / "server_args.py"
    server_args.write_text(server_args.read_text() + "\n\ndef prepare_server_args(argv):\n    return argv\n")
    after = run_check([project], options)
    assert after.replayed_files_with_contracts is None
    gone = {d.symbol for d in first.diagnostics} - {d.symbol for d in after.diagnostics}
    assert any(symbol.endswith("prepare_server_args") for symbol in gone)
    assert findings(after) == findings(run_check([project], dataclasses.replace(options, replay=False)))


def test_a_damaged_record_is_recomputed(published) -> None:
    project, options = published
    first = run_check([project], options)
    for record in (options.cache_dir / "runs").rglob("*.record"):
        record.write_text('{"schema": 1, "data": {"diagnostics": [{"path": 3}]}}')
    again = run_check([project], options)
    assert again.replayed_files_with_contracts is None
    assert findings(again) == findings(first)


@pytest.mark.parametrize("inside", [".cache", ".", "demo_omni"])
def test_a_cache_folder_inside_the_project_is_no_file_of_it(published, inside: str) -> None:
    """`--cache-dir .cache` in the project (helper-3's audit): the folders the cache keeps are
    tagged (CACHEDIR.TAG) and no walk reads them, so its records are no files of the project (they
    grew the findings run after run, SGC702 on the runs' records, and no run was ever replayed).
    The cache folder itself is never tagged: given as the project's root or a source folder, it
    is still read (helper-4's audit: a tag there hid the whole project)."""
    project, options = published
    outside = findings(run_check([project], options))
    given = dataclasses.replace(options, cache_dir=project / inside)
    first = run_check([project], given)
    assert (project / inside / "runs" / "CACHEDIR.TAG").read_text().startswith(
        "Signature: 8a477f597d28d172789f06886806bc55")
    assert not (project / inside / "CACHEDIR.TAG").exists()
    again = run_check([project], given)
    assert again.replayed_files_with_contracts == len(first.project.files)
    assert findings(again) == findings(first) == outside


def _make_state(path: Path, state: str) -> None:
    """`path` replaced by an entry that is no regular file."""
    if path.is_symlink() or path.is_file() or path.exists() and not path.is_dir():
        path.unlink()
    elif path.is_dir():
        path.rmdir()
    if state == "a folder":
        path.mkdir()
    elif state == "a loop of links":
        path.symlink_to(path.name)
    elif state == "a FIFO":
        os.mkfifo(path)
    elif state == "a link to nothing":
        path.symlink_to("missing.py")
    elif state == "a link to a folder out of the project":
        (path.parent.parent / "outside").mkdir(exist_ok=True)
        path.symlink_to(path.parent.parent / "outside")
    elif state == "a link to a folder inside it":
        (path.parent / "inside").mkdir(exist_ok=True)
        path.symlink_to("inside")
    else:
        assert state == "a link to a FIFO"
        if not (path.parent / "pipe").exists():
            os.mkfifo(path.parent / "pipe")
        path.symlink_to("pipe")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX's")
def test_an_entry_that_is_no_regular_file_is_an_input_by_what_it_is(published) -> None:
    """A FIFO, a folder, a loop of links, a link to nothing, a link to a folder out of the
    project at one path are different inputs (each reported otherwise, or not at all): a change
    from one to another is no replay of the last run's findings (P02: left out of the listing
    whatever they were, they were one input state).
    Unchanged, each is replayed, and nothing is opened (a FIFO opened would wait for a writer)."""
    project, options = published
    probe = project / "probe.py"
    for state in ("a folder", "a loop of links", "a FIFO", "a folder", "a link to nothing", "a loop of links",
                  "a link to a FIFO", "a FIFO", "a link to a folder out of the project",
                  "a link to a folder inside it"):
        _make_state(probe, state)
        first = run_check([project], options)
        assert findings(first) == findings(run_check([project], dataclasses.replace(options, replay=False))), state
        again = run_check([project], options)
        assert again.replayed_files_with_contracts is not None and findings(again) == findings(first), state


def test_an_input_changed_under_its_old_size_and_time_is_read_again(published, tmp_path: Path) -> None:
    """`touch -r`, `cp -p`, `rsync -a` and mtime-normalised trees keep a file's size and time:
    a changed pin was replayed stale (campaign 9, R03). The change time and inode, which no
    user sets back, count too, in the project and in a release read from a directory."""
    project, options = published
    docs = project / "docs" / "install.md"
    run_check([project], options)
    before = os.stat(docs)
    text = docs.read_text()
    changed = text.replace("0.9.0", "0.9.1") if "0.9.0" in text else text.upper()
    assert len(changed) == len(text) and changed != text
    docs.write_text(changed)
    os.utime(docs, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert run_check([project], options).replayed_files_with_contracts is None

    old, new = tmp_path / "old", tmp_path / "new"
    shutil.copytree(OLD, old)
    shutil.copytree(NEW, new)
    options = CheckOptions(old=str(old), new=str(new), cache_dir=tmp_path / "cache2", replay=True)
    run_check([project], options)
    module = new / "sglang" / "srt" / "server_args.py"
    status = os.stat(module)
    source = module.read_text()
    assert source.endswith("\n")
    module.write_text(source[:-1] + "#")  # the last line ends in an empty comment: the same size
    os.utime(module, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert os.stat(module).st_size == status.st_size
    assert run_check([project], options).replayed_files_with_contracts is None


def test_a_run_under_another_file_name_encoding_is_another_run(tmp_path: Path) -> None:
    """A file name's bytes make another str under another locale ('ü' in UTF-8, two surrogates
    under LC_ALL=C): a run in an ASCII locale replayed the findings a UTF-8 run had recorded, their
    paths strings this process cannot encode, and SARIF and markdown failed with an internal
    error (campaign 13, R03). The run is recomputed, and reports as a run with no cache does."""
    import subprocess
    import sys

    from tests.helpers import checkout_env
    from tests.helpers import write_tree as write

    release = {"sglang/__init__.py": "", "sglang/version.py": '__version__ = "1.0.0"\n', "sglang/srt/__init__.py": "",
               "sglang/srt/a.py": "def gone(): ...\n"}
    old = write(tmp_path / "old", release)
    new = write(tmp_path / "new", {**release, "sglang/version.py": '__version__ = "1.0.1"\n', "sglang/srt/a.py": ""})
    project = write(tmp_path / "p", {"pyproject.toml": '[project]\nname = "p"\n',
                                     "\u00fc-\u00e9.py": "from sglang.srt.a import gone\n"})
    utf8, ascii_ = checkout_env(PYTHONUTF8="1"), checkout_env(LC_ALL="C", PYTHONUTF8="0")

    def check(env: dict[str, str], *options: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "sglang_contracts", "check", "--old", str(old), "--new", str(new),
                               "--cache-dir", str(tmp_path / "cache"), *options], cwd=project, env=env,
                              capture_output=True, text=True, errors="surrogateescape")

    encoding = [sys.executable, "-c", "import sys; print(sys.getfilesystemencoding())"]
    assert subprocess.run(encoding, env=ascii_, capture_output=True, text=True).stdout.strip() == "ascii"
    assert check(utf8, "--format", "json").returncode == 1  # recorded under UTF-8
    for format in ("sarif", "markdown"):
        done = check(ascii_, "--format", format)
        assert (done.returncode, done.stderr) == (1, ""), done.stderr
    assert check(ascii_, "--format", "json").stdout == check(ascii_, "--format", "json", "--no-cache").stdout
