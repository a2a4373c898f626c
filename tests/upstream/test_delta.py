"""The upstream delta with --sglang-repo: first-parent commits behind the contracts, and must-read modules."""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest

from tests.helpers import AUTHOR, PROJECT, UPSTREAM, commit_release
from sglang_contracts.check.runner import CheckOptions, run_check


def _commit(repo: git.Repo, message: str, changes: dict[str, str]) -> None:
    for relpath, text in changes.items():
        path = Path(repo.working_tree_dir) / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    repo.git.add("--all")
    repo.index.commit(message, author=AUTHOR, committer=AUTHOR)


@pytest.fixture
def history(tmp_path) -> Path:
    """v0.9.0, then: a scheduler change, an unrelated file, a side branch merged with a merge
    commit (server_args), the 0.9.1 tree, and a mem_cache file outside the contracts (tagged v0.9.1)."""
    path = tmp_path / "sglang"
    repo = git.Repo.init(path, initial_branch="main")
    commit_release(repo, UPSTREAM / "old", "0.9.0")
    scheduler = path / "python/sglang/srt/managers/scheduler.py"
    _commit(repo, "Scheduler: document the port args", {str(scheduler): scheduler.read_text() + "# ports\n"})
    _commit(repo, "Docs only", {"docs/index.md": "hello\n"})
    repo.git.checkout("-b", "side")
    server_args = path / "python/sglang/srt/server_args.py"
    _commit(repo, "side: server args tweak", {str(server_args): server_args.read_text() + "# tweak\n"})
    repo.git.checkout("main")
    repo.git.merge("--no-ff", "-m", "Merge branch side", "side", env={"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b",
                                                                     "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b"})
    commit_release(repo, UPSTREAM / "new", "0.9.1")
    _commit(repo, "Radix cache rewrite", {"python/sglang/srt/mem_cache/radix_cache.py": "class RadixCache: ...\n"})
    repo.create_tag("v0.9.1", force=True)  # the release is cut after it
    return path


def test_delta_lists_first_parent_commits_behind_the_contracts(history, tmp_path) -> None:
    options = CheckOptions(old="v0.9.0", new="v0.9.1", sglang_repo=history, cache_dir=tmp_path / "cache")
    delta = run_check([PROJECT], options).upstream_delta
    assert (delta.old_ref, delta.new_ref) == ("v0.9.0", "v0.9.1")
    # first-parent only (not "side: server args tweak"), and only commits touching the contract files
    assert [c.summary for c in delta.commits] == ["Release 0.9.1", "Merge branch side", "Scheduler: document the port args"]
    merge = delta.commits[1]
    assert merge.files == ("sglang/srt/server_args.py",)
    assert "sglang/srt/managers/tp_worker_overlap_thread.py" in delta.commits[0].files  # removed by the release
    must_read = {m.path: m for m in delta.must_read}
    assert set(must_read) == {"sglang/srt/managers/scheduler.py", "sglang/srt/server_args.py", "sglang/srt/mem_cache/",
                              "sglang/srt/managers/schedule_batch.py", "sglang/srt/model_executor/model_runner.py"}
    assert must_read["sglang/srt/mem_cache/"].files == 1 and must_read["sglang/srt/mem_cache/"].added == 1
    record = json.loads(json.dumps(delta.to_json()))
    assert record["commits"][0]["summary"] == "Release 0.9.1" and record["must_read"]


def test_no_delta_without_a_clone_or_for_directory_releases(history, tmp_path) -> None:
    plain = run_check([PROJECT], CheckOptions(old=str(UPSTREAM / "old"), new=str(UPSTREAM / "new"), cache_dir=tmp_path))
    assert plain.upstream_delta is None
    mixed = CheckOptions(old=str(UPSTREAM / "old"), new="v0.9.1", sglang_repo=history, cache_dir=tmp_path)
    assert run_check([PROJECT], mixed).upstream_delta is None


def test_markdown_report_carries_the_delta(history, tmp_path) -> None:
    import io

    from sglang_contracts.reporters.markdown import write_markdown

    options = CheckOptions(old="v0.9.0", new="v0.9.1", sglang_repo=history, cache_dir=tmp_path / "cache")
    out = io.StringIO()
    write_markdown(run_check([PROJECT], options), out)
    section = out.getvalue().split("### Upstream delta", 1)[1].split("###", 1)[0]
    assert "3 first-parent commits in `v0.9.0..v0.9.1`" in section
    assert "Scheduler: document the port args" in section and "side: server args tweak" not in section
    assert "- [ ] `sglang/srt/mem_cache/`" in section


def test_json_report_carries_the_delta_next_to_the_diagnostics(history, tmp_path, capsys, monkeypatch) -> None:
    from sglang_contracts.cli import main

    monkeypatch.setenv("SGLANG_CONTRACTS_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(PROJECT)
    main(["check", "--format", "json", "--sglang-repo", str(history), "--old", "v0.9.0", "--new", "v0.9.1"])
    document = json.loads(capsys.readouterr().out)
    assert document["diagnostics"] and all("code" in record for record in document["diagnostics"])
    assert [c["summary"] for c in document["upstream_delta"]["commits"]][0] == "Release 0.9.1"


@pytest.mark.parametrize("form", ["json", "markdown"])
def test_a_replayed_run_prints_the_delta_the_computed_run_printed(history, tmp_path, capsys, monkeypatch,
                                                                  form) -> None:
    from sglang_contracts.check import runner
    from sglang_contracts.cli import main

    monkeypatch.setenv("SGLANG_CONTRACTS_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(PROJECT)
    command = ["check", "--format", form, "--sglang-repo", str(history), "--old", "v0.9.0", "--new", "v0.9.1"]
    main(command)
    computed = capsys.readouterr()

    def not_replayed(*args, **kwargs):
        raise AssertionError("the second run was computed, not replayed")

    monkeypatch.setattr(runner, "_computed", not_replayed)
    main(command)
    replayed = capsys.readouterr()
    assert replayed.out == computed.out
    assert {"json": '"upstream_delta"', "markdown": "### Upstream delta"}[form] in computed.out


def test_delta_reads_any_byte_git_keeps_in_a_message_a_name_or_a_path(tmp_path) -> None:
    """git keeps 0x1e and 0x1f in a subject and an author name (the old separators split one
    commit in two: every check with --sglang-repo stopped), and tabs, newlines and quotes in
    paths, which git quotes in output that is not NUL-separated."""
    from sglang_contracts.upstream.delta import upstream_delta

    path = tmp_path / "sglang"
    repo = git.Repo.init(path, initial_branch="main")
    scheduler, kept = "python/sglang/srt/managers/scheduler.py", "python/sglang/srt/mem_cache/a.py"
    _commit(repo, "init", {scheduler: "x = 1\n", kept: "class A: ...\n"})
    repo.create_tag("v1")
    odd = [f"python/sglang/srt/mem_cache/{name}" for name in ("t\tb.py", "n\nl.py", 'q"[*].py')]
    for relpath in [scheduler, *odd]:
        (path / relpath).write_text("y = 2\n")
    repo.git.add("--all")
    odd_author = git.Actor("A\x1fB\x1eC", "a@b.invalid")
    repo.index.commit("refactor \x1e a \x1f b", author=odd_author, committer=odd_author)
    repo.git.mv(kept, "python/sglang/srt/mem_cache/c.py")
    repo.index.commit("rename", author=AUTHOR, committer=AUTHOR)
    repo.create_tag("v2")
    watched = ["sglang/srt/managers/scheduler.py", "sglang/srt/mem_cache/t\tb.py", 'sglang/srt/mem_cache/q"[*].py']
    delta = upstream_delta(path, "v1", "v2", watched)
    assert [(c.summary, c.author, c.files) for c in delta.commits] == [
        ("refactor \x1e a \x1f b", "A\x1fB\x1eC", ("sglang/srt/managers/scheduler.py", 'sglang/srt/mem_cache/q"[*].py',
                                                   "sglang/srt/mem_cache/t\tb.py"))]
    must_read = {m.path: (m.added, m.removed, m.files) for m in delta.must_read}
    assert must_read == {"sglang/srt/managers/scheduler.py": (1, 1, 1), "sglang/srt/mem_cache/": (3, 0, 4)}


def test_a_log_record_of_another_shape_is_passed_over() -> None:
    from sglang_contracts.upstream.delta import _logged_commits

    sha = "a" * 40
    log = f"junk\0{sha}\0{'2026-01-01T00:00:00+00:00'}\0A\0s\0\npython/sglang/m.py\0not a hash\0"
    assert [(c.sha, c.files) for c in _logged_commits(log)] == [(sha, ("sglang/m.py",))]
    assert _logged_commits("") == [] and _logged_commits("\0\0\0") == []
