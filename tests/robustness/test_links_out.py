"""A link out of the project or the release is never read (issue 38, D24): a pull request's
`docs/env.md -> /proc/self/environ`, or a requirements file linked to one outside, is one SGC000
saying so, and nothing of what it points to reaches a finding, in any format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sglang_contracts.cli import main

SECRET = "s3cr3t-" + "token"


def release(root: Path, version: str, files: dict[str, str]) -> Path:
    for relpath, text in {"sglang/__init__.py": "from sglang.version import __version__\n",
                          "sglang/version.py": f'__version__ = "{version}"\n', **files}.items():
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_text(text)
    return root


@pytest.fixture
def releases(tmp_path: Path) -> tuple[Path, Path]:
    old = release(tmp_path / "1.0.0", "1.0.0", {"sglang/srt/a.py": "x = 1\n", "sglang/srt/b.py": "def f(a, b):\n    pass\n"})
    new = release(tmp_path / "1.0.1", "1.0.1", {"sglang/srt/a.py": "x = 1\n"})
    outside = tmp_path / "outside.py"  # a file of the machine's, beside the release
    outside.write_text(f'def f(a):\n    return "{SECRET}"\n')
    (new / "sglang" / "srt" / "b.py").symlink_to(outside)
    return old, new


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project whose pull request added links to files of the CI machine outside it."""
    root = tmp_path / "p"
    (root / "docs").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "p"\n')
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "env.md").write_text(f"TOKEN={SECRET} pip install sglang==1.0.0 lmsysorg/sglang:v1.0.0-{SECRET}\n")
    (secrets / "requirements.txt").write_text(f"sglang==1.0.0  # {SECRET}\n")
    (secrets / "Dockerfile").write_text(f"FROM lmsysorg/sglang:v1.0.0-{SECRET}\n")
    (secrets / "mod.py").write_text(f'from sglang.srt.a import x\nTOKEN = "{SECRET}"\n')
    (root / "docs" / "env.md").symlink_to(secrets / "env.md")
    (root / "requirements.txt").symlink_to(secrets / "requirements.txt")
    (root / "Dockerfile").symlink_to(secrets / "Dockerfile")
    (root / "linked.py").symlink_to(secrets / "mod.py")
    (root / "via_folder").symlink_to(secrets, target_is_directory=True)
    (root / "inside.py").write_text("from sglang.srt.b import f\nf(1, 2)\n")
    (root / "alias.py").symlink_to(root / "inside.py")  # a link within the project is read
    return root


@pytest.mark.parametrize("form", ["text", "json", "github", "sarif", "markdown"])
def test_a_link_out_is_one_sgc000_and_never_read(form: str, project: Path, releases, tmp_path: Path, capsys) -> None:
    old, new = releases
    status = main(["check", str(project), "--old", str(old), "--new", str(new), "--format", form,
                   "--cache-dir", str(tmp_path / "cache")])
    out, err = capsys.readouterr()
    assert status == 1
    assert SECRET not in out + err
    if form != "text":
        return
    sgc000 = [line for line in out.splitlines() if " SGC000 " in line]
    links_out = sorted(line.split(":")[0].removeprefix(str(project) + "/") for line in sgc000
                       if "a link out of the project" in line)
    assert links_out == ["Dockerfile", "docs/env.md", "linked.py", "requirements.txt", "via_folder"]
    release_links = [line for line in sgc000 if "a link out of the release" in line]
    assert len(release_links) == 2 and all("sglang.srt.b" in line for line in release_links)  # inside.py, alias.py


def test_the_sgc000_of_a_link_out_is_in_json_at_its_path(project: Path, releases, tmp_path: Path, capsys) -> None:
    old, new = releases
    main(["check", str(project), "--old", str(old), "--new", str(new), "--format", "json",
          "--cache-dir", str(tmp_path / "cache")])
    findings = json.loads(capsys.readouterr().out)
    linked = [f for f in findings if f["code"] == "SGC000" and "a link out of the project" in f["message"]]
    assert {Path(f["path"]).name for f in linked} == {"Dockerfile", "env.md", "linked.py", "requirements.txt", "via_folder"}


def test_the_reader_refuses_what_leads_out_whatever_the_way(tmp_path: Path) -> None:
    from sglang_contracts.infra.files import Unreadable, read_limited

    root = tmp_path / "p"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "own.txt").write_text("own\n")
    (root / "environ").symlink_to("/proc/self/environ")
    (root / "up").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "other.txt").write_text(SECRET)
    for name in ("environ", "up/other.txt", "up/p/../other.txt"):
        with pytest.raises(Unreadable, match="a link out of the project"):
            read_limited(root / name, within=root)
    assert read_limited(root / "up" / "p" / "sub" / "own.txt", within=root) == b"own\n"  # out and back in
    assert read_limited(root / "sub" / "own.txt", within=root / "up" / "p") == b"own\n"  # a root named via a link


def small_releases(tmp_path: Path) -> tuple[Path, Path]:
    return (release(tmp_path / "r0", "1.0.0", {"sglang/srt/a.py": "x = 1\n"}),
            release(tmp_path / "r1", "1.0.1", {"sglang/srt/a.py": "y = 1\n"}))


def project_using(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(the project's root, the old release, the new) for a project whose one file imports a name
    both releases have."""
    old, new = small_releases(tmp_path)
    root = tmp_path / "p"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (root / "use.py").write_text("from sglang.srt.a import x\n")
    return root, old, new


def commit_all(root: Path, message: str) -> None:
    """The project's files committed in a new repository, as a pull request's checkout has them."""
    import subprocess

    for args in (("init", "-q"), ("add", "-A"), ("commit", "-q", "-m", message)):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                       capture_output=True)


def test_a_link_out_named_as_the_path_checked_does_not_move_the_root(tmp_path: Path, monkeypatch, capsys) -> None:
    """`check docs` or config `paths = ["docs"]` with docs a link out: the root stayed the link's
    target, so its files were read and `fix` rewrote them."""
    old, new = small_releases(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "notes.md").write_text("pip install sglang==1.0.0\n")
    (victim / "v.py").write_text("from sglang.srt.a import x\n")
    project = tmp_path / "p"
    project.mkdir()
    (project / "pyproject.toml").write_text(f'[project]\nname = "p"\n[tool.sglang-contracts]\npaths = ["docs"]\n'
                                            f'old = "{old}"\nnew = "{new}"\n')
    (project / "docs").symlink_to(victim, target_is_directory=True)
    (project / "link.py").symlink_to(victim / "v.py")
    monkeypatch.chdir(project)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    for argv in (["check"], ["check", "docs"], ["check", "docs/v.py"], ["fix", "--unsafe-fixes"], ["fix", "docs/notes.md"]):
        main([*argv, *cache])
        out = capsys.readouterr().out
        assert "victim" not in out and "SGC102" not in out, argv
    assert (victim / "notes.md").read_text() == "pip install sglang==1.0.0\n"
    assert main(["check", "link.py", *cache]) == 1
    assert "link.py:1:1: SGC000 cannot read this file (a link out of the project, not read)" in capsys.readouterr().out


@pytest.mark.parametrize("setting", ['paths = ["../victim"]', 'paths = ["/etc"]', 'patch-files = ["../../*"]',
                                     'patch-files = ["/root/*"]'])
def test_configured_paths_that_leave_the_project_are_refused(setting: str, tmp_path: Path, capsys) -> None:
    old, new = small_releases(tmp_path)
    project = tmp_path / "p"
    project.mkdir()
    (project / "pyproject.toml").write_text(f'[project]\nname = "p"\n[tool.sglang-contracts]\n{setting}\n')
    assert main(["check", str(project), "--old", str(old), "--new", str(new), "--cache-dir", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ("leaves the project" in err or "is absolute" in err)


def test_a_configuration_or_baseline_that_links_out_is_not_read(tmp_path: Path, capsys) -> None:
    old, new = small_releases(tmp_path)
    outside = tmp_path / "outside.toml"
    outside.write_text(f'[tool.sglang-contracts]\nSECRET_{SECRET.replace("-", "_")} = "v"\n')
    project = tmp_path / "p"
    project.mkdir()
    (project / "pyproject.toml").symlink_to(outside)
    argv = ["check", str(project), "--old", str(old), "--new", str(new), "--cache-dir", str(tmp_path / "c")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "a link out of the project" in err and "SECRET" not in err
    (project / "pyproject.toml").unlink()
    (project / "pyproject.toml").write_text('[project]\nname = "p"\n[tool.sglang-contracts]\nbaseline = "b.json"\n')
    (project / "b.json").symlink_to("/proc/self/environ")
    assert main(argv) == 2
    assert "a link out of the project, not read as the baseline" in capsys.readouterr().err


def test_a_release_whose_package_folder_is_a_link_is_read(tmp_path: Path, capsys) -> None:
    """A Nix-style site-packages links each package's folder into a store: not a link out."""
    old, new = small_releases(tmp_path)
    linked = tmp_path / "site-packages"
    linked.mkdir()
    (linked / "sglang").symlink_to(new / "sglang", target_is_directory=True)
    project = tmp_path / "p"
    project.mkdir()
    (project / "m.py").write_text("from sglang.srt.a import x\n")
    assert main(["check", str(project), "--old", str(old), "--new", str(linked), "--cache-dir", str(tmp_path / "c")]) == 1
    assert "m.py:1:26: SGC102" in capsys.readouterr().out


@pytest.mark.parametrize("linked", ["project", "wheels", "project/ab", "."])
def test_a_cache_inside_the_project_that_holds_a_link_is_neither_read_nor_written(
        linked: str, tmp_path: Path, monkeypatch, capsys) -> None:
    """A CI job names a cache inside the project (`--cache-dir .sgc-cache`), and the pull
    request commits it with a record folder that is a link out: the run wrote its records there,
    outside the project (second campaign). Such a cache is not used: one warning line, nothing
    written through the link, and the findings as ever."""
    root, old, new = project_using(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    cache = root / ".sgc-cache"
    if linked == ".":
        cache.symlink_to(victim)
    else:
        (cache / linked).parent.mkdir(parents=True, exist_ok=True)
        (cache / linked).symlink_to(victim)
    monkeypatch.chdir(root)
    status = main(["check", "--old", str(old), "--new", str(new), "--cache-dir", ".sgc-cache"])
    out, err = capsys.readouterr()
    assert status == 1 and "use.py:1:" in out
    assert err.count("is inside the project and holds a symbolic link") == 1
    assert list(victim.iterdir()) == []


def test_a_cache_inside_the_project_that_its_repository_tracks_is_neither_read_nor_written(
        tmp_path: Path, monkeypatch, capsys) -> None:
    """A pull request commits the cache folder a CI job names (a record of its own making, a
    wheel taken for the release): what the repository tracks there is the pull request's, and
    the cache is not used (second campaign). An untracked cache inside the project (restored
    between jobs, or a developer's) is used as ever."""
    root, old, new = project_using(tmp_path)
    monkeypatch.chdir(root)
    command = ["check", "--old", str(old), "--new", str(new), "--cache-dir", ".sgc-cache"]
    assert main(command) == 1  # untracked: used, records kept
    assert "neither read nor written" not in capsys.readouterr().err
    kept = sorted(path.relative_to(root) for path in (root / ".sgc-cache").rglob("*") if path.is_file())
    assert any(part == "runs" for path in kept for part in path.parts)

    from sglang_contracts.infra.cache import RecordCache

    runs = RecordCache(root / ".sgc-cache" / "runs")
    for path in (root / ".sgc-cache" / "runs").rglob("*.record"):  # a replay of no finding, well formed
        runs.put(path.stem, {**runs.get(path.stem, object), "diagnostics": []})
    commit_all(root, "a pull request that commits the cache")
    assert main(command) == 1  # what it committed is not believed
    out, err = capsys.readouterr()
    assert "use.py:1:" in out and "SGC102" in out
    assert err.count("holds files the project's repository tracks") == 1
    after = sorted(path.relative_to(root) for path in (root / ".sgc-cache").rglob("*") if path.is_file())
    assert after == kept  # nothing written there either


def test_a_committed_cache_made_to_look_like_a_bare_repository_is_not_used(tmp_path: Path, monkeypatch, capsys) -> None:
    """HEAD, objects/ and refs/ added to a committed cache folder: git took it for an empty bare
    repository, listed nothing tracked, and the pull request's records were read (third
    campaign D08)."""
    root, old, new = project_using(tmp_path)
    monkeypatch.chdir(root)
    command = ["check", "--old", str(old), "--new", str(new), "--cache-dir", ".sgc-cache"]
    assert main(command) == 1
    capsys.readouterr()
    cache = root / ".sgc-cache"
    (cache / "HEAD").write_text("ref: refs/heads/main\n")
    for name in ("objects", "refs"):
        (cache / name).mkdir()
        (cache / name / ".keep").write_text("")

    commit_all(root, "a pull request that commits a cache dressed as a repository")
    assert main(command) == 1
    out, err = capsys.readouterr()
    assert "use.py:1:" in out and err.count("holds files the project's repository tracks") == 1


@pytest.mark.parametrize("git_says", [None, (128, b"fatal: detected dubious ownership in repository at '/p'\n")],
                         ids=["no-answer", "refused"])
def test_a_cache_in_the_project_git_cannot_vouch_for_is_not_used(git_says, tmp_path: Path, monkeypatch,
                                                                   capsys) -> None:
    """With no git to ask (a slim image), one that does not answer, or one that refuses the
    repository as another user's, a committed cache in the project was read as the tool's own: a
    forged wheel of the target release dropped its findings (campaign 16, R06). It is not used."""
    import subprocess

    from sglang_contracts.infra import cache as cache_module

    root, old, new = project_using(tmp_path)
    monkeypatch.chdir(root)
    command = ["check", "--old", str(old), "--new", str(new), "--cache-dir", ".sgc-cache"]
    assert main(command) == 1
    capsys.readouterr()
    answer = None if git_says is None else subprocess.CompletedProcess([], git_says[0], b"", git_says[1])
    monkeypatch.setattr(cache_module, "ls_files", lambda *argv: answer)
    assert main(command) == 1
    out, err = capsys.readouterr()
    assert "use.py:1:" in out and err.count("git cannot tell whether the project's repository tracks") == 1


def test_a_pin_read_from_the_project_is_never_a_folder_of_it(tmp_path: Path, releases, monkeypatch, capsys) -> None:
    """Campaign 4's D01: `sglang==0.5.22` in requirements.txt, and a pull request's folder
    `0.5.22/sglang/` beside it (or a link out named so), run from the project's root as CI does:
    the pin names the published release, never that folder, which would stand in for it."""
    _, new = releases
    root = tmp_path / "p"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (root / "requirements.txt").write_text("sglang==0.5.22\n")
    (root / "m.py").write_text("from sglang.srt.b import f\nf(1, 2)\n")
    release(root / "0.5.22", "0.5.22", {"sglang/srt/b.py": "def f(a, b):\n    pass\n"})
    # Nothing cached and no index to read from: the published release cannot be had here.
    monkeypatch.setenv("SGLANG_CONTRACTS_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.chdir(root)
    status = main(["check", "--new", str(new), "--format", "json"])
    captured = capsys.readouterr()
    assert status == 2, captured.out  # the folder was not read as the release
    assert "0.5.22" in captured.err and "1.0.0" not in captured.out + captured.err
    assert "SGC201" not in captured.out


def _index_folder(folder: Path, versions: list[str]) -> Path:
    """A simple index of `leakpkg` (PEP 658 metadata files beside empty wheels), each version
    requiring a package whose name says it was read."""
    (folder / "leakpkg").mkdir(parents=True)
    links = []
    for version in versions:
        wheel = f"leakpkg-{version}-py3-none-any.whl"
        (folder / "leakpkg" / wheel).write_bytes(b"")
        (folder / "leakpkg" / f"{wheel}.metadata").write_text(
            f"Metadata-Version: 2.1\nName: leakpkg\nVersion: {version}\nRequires-Dist: {SECRET}-{version.replace('.', '-')}\n")
        links.append(f'<a href="{wheel}" data-dist-info-metadata="true">{wheel}</a>')
    (folder / "leakpkg" / "index.html").write_text("".join(links))
    return folder


def _wheel_releases(tmp_path: Path) -> tuple[Path, Path]:
    """Two releases whose metadata requires leakpkg at their own version."""
    found = []
    for version in ("1.0.0", "1.0.1"):
        root = release(tmp_path / version, version, {"sglang/srt/a.py": "x = 1\n"})
        info = root / f"sglang-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n"
                                       f"Requires-Dist: leakpkg=={version}\n")
        found.append(root)
    return found[0], found[1]


@pytest.mark.parametrize("setting", ["package-index", "cuda-build-index"])
@pytest.mark.parametrize("named", ["idx", "/outside-index", "../outside-index", "file:///outside-index"])
def test_an_index_folder_the_configuration_names_out_of_the_project_is_never_read(
        tmp_path: Path, capsys, monkeypatch, setting: str, named: str) -> None:
    """The configuration is a pull request's text: its `package-index` naming a folder out of the
    project (a link, an absolute path, `..`, a file: URL) had that folder's metadata read and its
    requirements' names printed in the report (campaign 9, R19). A link is an SGC000 and the
    cache only; the others are a one-line configuration error."""
    monkeypatch.delenv("SGLANG_CONTRACTS_PACKAGE_INDEX", raising=False)
    monkeypatch.setenv("SGLANG_CONTRACTS_CACHE", str(tmp_path / "cache"))
    old, new = _wheel_releases(tmp_path)
    outside = _index_folder(tmp_path / "outside-index", ["1.0.0", "1.0.1"])
    root = tmp_path / "p"
    root.mkdir()
    (root / "m.py").write_text("from sglang.srt.a import x\n")
    (root / "requirements.txt").write_text("leakpkg==1.0.0\n")
    (root / "idx").symlink_to(outside)
    value = named.replace("/outside-index", str(outside)) if named.startswith(("/", "file:")) else named
    (root / "pyproject.toml").write_text(f'[project]\nname = "p"\n[tool.sglang-contracts]\n{setting} = "{value}"\n')
    status = main(["check", str(root), "--old", str(old), "--new", str(new), "--format", "json"])
    out, err = capsys.readouterr()
    assert SECRET not in out + err
    if named == "idx":
        assert status in (0, 1)
        if setting == "package-index":
            records = json.loads(out)
            records = records["diagnostics"] if isinstance(records, dict) else records
            assert any(r["code"] == "SGC000" and r["path"].endswith("idx") and "link out of the project" in r["message"]
                       for r in records)
    else:
        assert status == 2 and len(err.strip().splitlines()) == 1 and setting in err


def test_an_index_folder_within_the_project_is_read(tmp_path: Path, capsys, monkeypatch) -> None:
    """The confinement keeps what is the project's: its own index folder is read."""
    monkeypatch.delenv("SGLANG_CONTRACTS_PACKAGE_INDEX", raising=False)
    monkeypatch.setenv("SGLANG_CONTRACTS_CACHE", str(tmp_path / "cache"))
    old, new = _wheel_releases(tmp_path)
    root = tmp_path / "p"
    _index_folder(root / "idx", ["1.0.0", "1.0.1"])
    (root / "m.py").write_text("from sglang.srt.a import x\n")
    (root / "requirements.txt").write_text("leakpkg==1.0.0\n")
    (root / "pyproject.toml").write_text('[project]\nname = "p"\n[tool.sglang-contracts]\npackage-index = "idx"\n')
    main(["check", str(root), "--old", str(old), "--new", str(new), "--format", "json"])
    assert f"{SECRET}-1-0-1".lower() in capsys.readouterr().out.lower()


def _replaced(path: Path, by: str) -> None:
    path.unlink()
    if by == "a folder":
        path.mkdir()


@pytest.mark.parametrize("by", ["a folder", "nothing"])
def test_a_link_out_replaced_takes_its_sgc000_with_it_run_after_run(by: str, tmp_path: Path, capsys) -> None:
    """Campaign 11, R06: the last run's SGC000 at a link out of the project was kept by the
    incremental run once the link was an empty folder or gone (no digest of it, and the salt
    leaves Python files to theirs): exit 1 run after run, where a run without the cache said
    nothing of it."""
    root, old, new = project_using(tmp_path)
    (tmp_path / "outside.py").write_text("y = 1\n")
    (root / "m.py").symlink_to(tmp_path / "outside.py")
    argv = ["check", str(root), "--old", str(old), "--new", str(new), "--cache-dir", str(tmp_path / "cache")]
    main(argv)
    assert "m.py:1:1: SGC000 cannot read this file (a link out of the project" in capsys.readouterr().out
    _replaced(root / "m.py", by)
    uncached = main([*argv, "--no-cache"]), capsys.readouterr().out
    assert "SGC000" not in uncached[1]
    for _ in range(2):  # the second from this run's own records
        assert (main(argv), capsys.readouterr().out) == uncached


def test_a_link_out_replaced_by_a_folder_takes_its_sgc000_with_it_on_the_resident_engine(tmp_path: Path) -> None:
    """The same through the daemon's engine, which plans against the records it keeps."""
    from sglang_contracts.check.runner import CheckOptions
    from sglang_contracts.resident.engine import ResidentEngine

    root, old, new = project_using(tmp_path)
    (tmp_path / "outside.py").write_text("y = 1\n")
    (root / "m.py").symlink_to(tmp_path / "outside.py")
    options = CheckOptions(old=str(old), new=str(new), cache_dir=tmp_path / "cache", replay=True)
    engine = ResidentEngine()
    assert "m.py" in {d.path for d in engine.check([root], options).diagnostics if d.code == "SGC000"}
    _replaced(root / "m.py", "a folder")
    for _ in range(2):
        assert not [d for d in engine.check([root], options).diagnostics if d.code == "SGC000"]


def test_a_file_named_through_a_folder_that_links_out_is_one_sgc000(tmp_path: Path, monkeypatch, capsys) -> None:
    """`check sub/o.py` (or `paths = ["sub/o.py"]`) with `sub` a link out of the project: the
    folder's SGC000, as `check sub` has it, not an exit 0 without a word (campaign 13, R06)."""
    old, new = small_releases(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "o.py").write_text("from sglang.srt.a import x\n")
    project = tmp_path / "p"
    project.mkdir()
    (project / "pyproject.toml").write_text(f'[project]\nname = "p"\n[tool.sglang-contracts]\nold = "{old}"\n'
                                            f'new = "{new}"\n')
    (project / "sub").symlink_to(elsewhere, target_is_directory=True)
    monkeypatch.chdir(project)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    for argv in (["check", "sub"], ["check", "sub/o.py"], ["check", "--files", "sub/o.py"]):
        assert main([*argv, *cache]) == 1, argv
        out = capsys.readouterr().out
        assert out.count("SGC000") == 1 and "sub:1:1: SGC000 cannot list this folder (a link out of the project" in out
        assert "SGC102" not in out
    with (project / "pyproject.toml").open("a") as pyproject:
        pyproject.write('paths = ["sub/o.py"]\n')
    assert main(["check", *cache]) == 1
    assert "sub:1:1: SGC000 cannot list this folder (a link out of the project" in capsys.readouterr().out


def test_a_link_into_the_projects_git_folder_is_neither_read_nor_written(tmp_path: Path, capsys) -> None:
    """Campaign 14, R04: `build.sh -> .git/config` (and `docs/install.md -> ../.git/config`, a
    name in `.GIT` on a case-folding system's terms) was a project file: `fix --diff` printed the
    lines of .git/config around a pin (the remote's token) and `fix` wrote the pin's change into it."""
    root, old, new = project_using(tmp_path)
    commit_all(root, "start")
    config = root / ".git" / "config"
    config.write_text(config.read_text() + f'[remote "origin"]\n\turl = https://x:{SECRET}@example.com/r\n'
                      "# pip install sglang==1.0.0\n")
    before = config.read_bytes()
    (root / "docs").mkdir()
    (root / "build.sh").symlink_to(".git/config")
    (root / "docs" / "install.md").symlink_to("../.git/config")
    (root / "nested").mkdir()
    (root / "nested" / "setup.sh").symlink_to("../.git/./config")
    for command in (["check"], ["fix", "--diff"], ["fix"]):
        main([*command, str(root), "--old", str(old), "--new", str(new), "--cache-dir", str(tmp_path / "cache")])
        out, err = capsys.readouterr()
        assert SECRET not in out + err, command
    assert config.read_bytes() == before
    main(["check", str(root), "--old", str(old), "--new", str(new), "--cache-dir", str(tmp_path / "cache")])
    sgc000 = sorted(line.split(":")[0].removeprefix(str(root) + "/") for line in capsys.readouterr().out.splitlines()
                    if " SGC000 " in line and "version control folder" in line)
    assert sgc000 == ["build.sh", "docs/install.md", "nested/setup.sh"]


def test_a_baseline_is_never_written_through_a_folder_link_of_the_project(tmp_path: Path, capsys) -> None:
    """Campaign 14, R05: `--write-baseline bl/x.json` with a committed `bl -> ../outside` (or a link
    to .git/hooks) wrote out of the project, where --plan and -o refuse the same name."""
    root, old, new = project_using(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "bl").symlink_to("../outside", target_is_directory=True)
    status = main(["check", str(root), "--old", str(old), "--new", str(new), "--cache-dir", str(tmp_path / "cache"),
                   "--write-baseline", str(root / "bl" / "baseline.json")])
    err = capsys.readouterr().err
    assert status == 2 and "bl is not a folder of the tree" in err and len(err.splitlines()) == 1
    assert list(outside.iterdir()) == []
    # a baseline in a real folder of the project, or outside it where the user names it, is written
    for path in (root / "baseline.json", tmp_path / "elsewhere.json"):
        assert main(["check", str(root), "--old", str(old), "--new", str(new), "--cache-dir", str(tmp_path / "cache"),
                     "--write-baseline", str(path)]) == 0
        assert path.is_file()


def test_an_environment_file_git_ignores_is_never_read(tmp_path: Path) -> None:
    """A `.env` git ignores holds the tokens of the developer's machine: it was read as a stack
    file, and `fix --diff` printed its lines about an SGLANG_VERSION (campaign 18, R02); so was
    any other file git ignores, and the ignored `.env` through a committed link to it (campaign
    19). Only the `.env` files the project commits are read (outside a repository, none), and no
    file git ignores, nor a link to one."""
    import subprocess

    from sglang_contracts.project.stack import release_mentions

    root = tmp_path / "p"
    (root / "deploy").mkdir(parents=True)
    (root / ".gitignore").write_text(".env\ndocker-compose.override.yml\n")
    (root / ".env").write_text("SGLANG_VERSION=v0.5.22\nOPENAI_API_KEY=sk-secret\n")
    (root / "config.env").symlink_to(".env")  # committed, naming the ignored file (campaign 19)
    (root / "docker-compose.override.yml").write_text("image: lmsysorg/sglang:v0.5.22\ntoken: hf_secret\n")
    (root / "deploy" / "prod.env").write_text("SGLANG_VERSION=v0.5.22\n")
    # no repository: git cannot say which `.env` are committed, and nothing is ignored
    assert [m.path for m in release_mentions(root)] == ["docker-compose.override.yml"]
    git = lambda *args: subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "x")
    assert [(m.path, m.line, m.version) for m in release_mentions(root)] == [("deploy/prod.env", 1, "v0.5.22")]
    # a submodule holding a stack file made git refuse a question of each path, and nothing was
    # taken as ignored (campaign 19, R10)
    other = tmp_path / "other"
    (other / "ci").mkdir(parents=True)
    (other / "ci" / "build.yml").write_text("image: lmsysorg/sglang:v0.5.22\n")
    subprocess.run(["git", "init", "-q"], cwd=other, check=True)
    subprocess.run(["git", "add", "-A"], cwd=other, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "x"], cwd=other,
                   check=True)
    git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(other), "vendored")
    assert [m.path for m in release_mentions(root)] == ["deploy/prod.env", "vendored/ci/build.yml"]


def _committed(folder: Path) -> None:
    import subprocess

    for command in (["init", "-q"], ["add", "-A"],
                    ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "x"]):
        subprocess.run(["git", *command], cwd=folder, check=True, capture_output=True)


def test_what_a_submodule_or_a_nested_repository_ignores_is_never_read(tmp_path: Path) -> None:
    """A submodule's and a nested repository's own .gitignore (and a submodule's info/exclude),
    which the project's repository does not read: their ignored files were read and `fix --diff`
    printed their token lines (campaign 20, R01). So an ignored requirement file, which held a
    private index's credentials (campaign 20, R05)."""
    import subprocess

    from sglang_contracts.project.stack import declared_requirements, release_mentions

    other = tmp_path / "other"
    other.mkdir()
    (other / ".gitignore").write_text("local.yml\n")
    (other / "build.yml").write_text("image: lmsysorg/sglang:v0.5.22\n")
    _committed(other)
    root = tmp_path / "p"
    (root / "inner").mkdir(parents=True)
    (root / ".gitignore").write_text("requirements-local.txt\n")
    (root / "requirements.txt").write_text("sglang==0.5.22\n")
    (root / "requirements-local.txt").write_text("--extra-index-url https://u:TOKEN@example.invalid\nsglang==0.5.22\n")
    _committed(root)
    subprocess.run(["git", "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(other), "vendored"],
                   cwd=root, check=True, capture_output=True)
    (root / "vendored" / "local.yml").write_text("image: lmsysorg/sglang:v0.5.22\ntoken: hf_secret\n")
    (root / "inner" / ".gitignore").write_text("secrets.toml\n")
    (root / "inner" / "deploy.yml").write_text("image: lmsysorg/sglang:v0.5.22\n")
    _committed(root / "inner")
    (root / "inner" / "secrets.toml").write_text('sglang = "v0.5.22"\ntoken = "hf_secret"\n')
    assert [m.path for m in release_mentions(root)] == ["inner/deploy.yml", "vendored/build.yml"]
    assert [r.path for r in declared_requirements(root)] == ["requirements.txt"]


def test_a_checkout_of_another_user_is_asked_what_it_ignores_and_a_git_that_cannot_tell_is_said(
        tmp_path: Path, monkeypatch) -> None:
    """A CI job run as root in a container, on the runner's checkout: git refuses a repository of
    another owner ("dubious ownership"), and every stack file was left unread without a word
    (campaign 20, R02). The repository is asked with safe.directory naming it; where git cannot
    tell all the same (a corrupt index), the files are unread and one SGC000 says why."""
    import os

    from sglang_contracts.infra.boundary import collecting_problems
    from sglang_contracts.project import ignored
    from sglang_contracts.project.stack import release_mentions

    root = tmp_path / "p"
    (root / "docs").mkdir(parents=True)
    (root / "Dockerfile").write_text("FROM lmsysorg/sglang:v0.5.22\n")
    (root / "docs" / "install.md").write_text("pip install sglang==0.5.22\n")
    _committed(root)
    if os.geteuid() == 0:  # git refuses it for real
        for folder, _, files in os.walk(root):
            for name in [folder, *(os.path.join(folder, file) for file in files)]:
                os.lchown(name, 4321, 4321)
    else:  # as git answers a repository of another owner, unless safe.directory names it
        asked = ignored.ls_files

        def as_another_owners(folder, *arguments, settings=()):
            if f"safe.directory={root}" not in settings:
                return subprocess.CompletedProcess([], 128, b"", b"fatal: detected dubious ownership in repository")
            return asked(folder, *arguments, settings=settings)

        import subprocess
        monkeypatch.setattr(ignored, "ls_files", as_another_owners)
    with collecting_problems() as noted:
        assert [m.path for m in release_mentions(root)] == ["Dockerfile", "docs/install.md"]
    assert noted == []
    (root / ".git" / "index").write_bytes(b"DIRC")  # git cannot read it
    with collecting_problems() as noted:
        assert release_mentions(root) == []
    (problem,) = noted
    assert (problem.path, problem.line) == ("Dockerfile", 1)
    assert "git could not tell whether it ignores the file" in problem.error and "index" in problem.error
    assert "1 other files of the project's stack" in problem.error
