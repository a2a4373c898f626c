"""Package-index releases: pip download into the cache, read in place, offline reuse, bad input.

These tests serve a wheel built from the fixture upstream through a local find-links folder,
with the machine's pip configuration switched off, so pip itself runs for real.
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest

from sglang_contracts.infra.errors import SourceError
from sglang_contracts.sources import open_release
from sglang_contracts.sources.index import WheelTree, _explain_pip_failure

VERSION = "0.9.0"
PACKAGE_FILES = {
    "sglang/__init__.py": "",
    "sglang/srt/managers/scheduler.py": "class Scheduler:\n    def get_next_batch_to_run(self): ...\n",
}


def build_wheel(folder: Path, version: str = VERSION, extra: dict[str, str] | None = None, record: str = "") -> Path:
    """A minimal, valid sglang wheel (sglang/srt is a namespace package, as upstream)."""
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"sglang-{version}-py3-none-any.whl"
    dist_info = f"sglang-{version}.dist-info"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in PACKAGE_FILES.items():
            archive.writestr(name, text)
        archive.writestr(f"{dist_info}/METADATA", f"Metadata-Version: 2.1\nName: sglang\nVersion: {version}\n")
        archive.writestr(f"{dist_info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        for name, text in (extra or {}).items():
            archive.writestr(name, text)
        archive.writestr(f"{dist_info}/RECORD", record)
    return wheel


@pytest.fixture
def local_index(tmp_path: Path, monkeypatch) -> Path:
    """pip sees only a local find-links folder: no network, no machine-wide configuration."""
    links = tmp_path / "links"
    build_wheel(links)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    return links


def test_download_unpack_then_offline_reuse(tmp_path: Path, local_index: Path) -> None:
    cache = tmp_path / "cache"
    release = open_release(VERSION, sglang_repo=None, cache=cache)
    assert release.version == VERSION
    assert release.tree.read_text("sglang/srt/managers/scheduler.py")
    assert list((cache / "wheels").glob("sglang-0.9.0-*.whl"))
    for wheel in local_index.iterdir():
        wheel.unlink()  # the "index" is gone: the second run must not need it
    again = open_release(VERSION, sglang_repo=None, cache=cache)
    assert again.tree.read_text("sglang/srt/managers/scheduler.py") == release.tree.read_text("sglang/srt/managers/scheduler.py")


@pytest.mark.parametrize("spelled", ["v0.9.0", "0.9.0.0", "V0.9"])  # each the index's 0.9.0
def test_a_release_spelled_as_its_tag_is_the_release_downloaded_and_cached(
        tmp_path: Path, local_index: Path, spelled: str) -> None:
    """`--new v0.5.23` (a git tag's spelling) names the index's 0.5.23: downloaded once, then
    found in the cache by either spelling; it failed with "pip gave no reason" (issue 37)."""
    cache = tmp_path / "cache"
    release = open_release(spelled, sglang_repo=None, cache=cache)
    assert release.version == VERSION and "0.9.0" in release.label
    for wheel in local_index.iterdir():
        wheel.unlink()
    assert open_release(VERSION, sglang_repo=None, cache=cache).version == VERSION


def record_of(files: dict[str, str]) -> str:
    """A RECORD listing each file's SHA-256 as wheels do."""
    import base64
    import hashlib

    return "".join(f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},"
                   f"{len(text)}\n" for name, text in files.items())


SCHEDULER = "sglang/srt/managers/scheduler.py"


@pytest.fixture
def recorded_index(tmp_path: Path, monkeypatch) -> Path:
    """As local_index, serving a wheel whose RECORD lists its files' digests."""
    links = tmp_path / "links"
    build_wheel(links, record=record_of(PACKAGE_FILES))
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    return links / f"sglang-{VERSION}-py3-none-any.whl"


def cached_wheel(cache: Path) -> Path:
    (wheel,) = (cache / "wheels").glob("sglang-*.whl")
    return wheel


def verifications(monkeypatch) -> list[Path]:
    calls: list[Path] = []
    real = WheelTree.verify

    def counted(self) -> bool:
        calls.append(self.wheel)
        return real(self)

    monkeypatch.setattr(WheelTree, "verify", counted)
    return calls


def test_a_downloaded_wheel_is_stamped_and_only_an_unstamped_one_is_checked(
        tmp_path: Path, recorded_index: Path, monkeypatch) -> None:
    cache = tmp_path / "cache"
    calls = verifications(monkeypatch)
    open_release(VERSION, sglang_repo=None, cache=cache)
    wheel = cached_wheel(cache)
    stamp = wheel.with_name(f".{wheel.name}.verified")
    assert stamp.is_file() and calls == []  # pip's own download is trusted
    open_release(VERSION, sglang_repo=None, cache=cache)
    assert calls == []  # as stamped: not read again
    stamp.unlink()  # a wheel cached before stamps existed, say
    open_release(VERSION, sglang_repo=None, cache=cache)
    assert calls == [wheel] and stamp.is_file()
    open_release(VERSION, sglang_repo=None, cache=cache)
    assert calls == [wheel]


def test_a_rewritten_cached_wheel_is_not_trusted_but_fetched_again(tmp_path: Path, recorded_index: Path) -> None:
    cache = tmp_path / "cache"
    open_release(VERSION, sglang_repo=None, cache=cache)
    wheel = cached_wheel(cache)
    # Still a valid archive, but its scheduler.py is not what its RECORD says.
    with zipfile.ZipFile(wheel) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    members[SCHEDULER] = b"class Scheduler:\n    pass\n"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    release = open_release(VERSION, sglang_repo=None, cache=cache)
    assert release.tree.read_text(SCHEDULER) == PACKAGE_FILES[SCHEDULER]
    assert cached_wheel(cache).read_bytes() == recorded_index.read_bytes()


def damage_in_place(wheel: Path) -> None:
    """Change the stored (uncompressed) scheduler.py inside the archive: its CRC no longer holds."""
    data = bytearray(wheel.read_bytes())
    at = bytes(data).index(PACKAGE_FILES[SCHEDULER].encode())
    data[at:at + 5] = b"XXXXX"
    wheel.write_bytes(bytes(data))


def test_a_damaged_cached_wheel_is_not_trusted_but_fetched_again(tmp_path: Path, local_index: Path) -> None:
    cache = tmp_path / "cache"
    open_release(VERSION, sglang_repo=None, cache=cache)
    damage_in_place(cached_wheel(cache))
    release = open_release(VERSION, sglang_repo=None, cache=cache)
    assert release.tree.read_text(SCHEDULER) == PACKAGE_FILES[SCHEDULER]


def test_damage_found_while_reading_deletes_the_wheel_so_the_next_run_fetches_it(
        tmp_path: Path, local_index: Path) -> None:
    cache = tmp_path / "cache"
    open_release(VERSION, sglang_repo=None, cache=cache)
    wheel = cached_wheel(cache)
    stamp = wheel.with_name(f".{wheel.name}.verified")
    damage_in_place(wheel)
    status = wheel.stat()
    stamp.write_text(f"{status.st_size} {status.st_mtime_ns}\n")  # damage the stamp cannot see
    release = open_release(VERSION, sglang_repo=None, cache=cache)
    with pytest.raises(SourceError, match="damaged: it was deleted from the cache: run again") as error:
        release.tree.read_bytes(SCHEDULER)
    assert str(wheel) in str(error.value) and "\n" not in str(error.value)
    assert not wheel.exists() and not stamp.exists()
    again = open_release(VERSION, sglang_repo=None, cache=cache)
    assert again.tree.read_text(SCHEDULER) == PACKAGE_FILES[SCHEDULER]


def lie_in_the_directory(wheel: Path, member: str, field: str, value: int) -> None:
    """Give `member` a ZIP64 `field` ("file_size" or "compress_size") of `value` in the archive's
    central directory; the rest of the archive stays as it was."""
    data = wheel.read_bytes()
    end = data.rindex(b"PK\x05\x06")
    size, start = struct.unpack("<II", data[end + 12:end + 20])
    directory, entries, at = data[start:start + size], b"", 0
    while at < len(directory):
        fixed = bytearray(directory[at:at + 46])
        name_length, extra_length, comment_length = struct.unpack("<HHH", fixed[28:34])
        name = directory[at + 46:at + 46 + name_length]
        rest = directory[at + 46 + name_length:at + 46 + name_length + extra_length + comment_length]
        if name == member.encode():
            compressed, uncompressed = struct.unpack("<II", fixed[20:28])
            sizes = {"file_size": uncompressed, "compress_size": compressed, field: value}
            fixed[20:28] = struct.pack("<II", 0xFFFFFFFF, 0xFFFFFFFF)  # "see the ZIP64 extra"
            fixed[30:32] = struct.pack("<H", extra_length + 20)
            rest = struct.pack("<HHQQ", 1, 16, sizes["file_size"], sizes["compress_size"]) + rest
        entries += bytes(fixed) + name + rest
        at += 46 + name_length + extra_length + comment_length
    tail = bytearray(data[end:])
    tail[12:16] = struct.pack("<I", len(entries))
    wheel.write_bytes(data[:start] + entries + bytes(tail))


@pytest.mark.parametrize("field, value", [("compress_size", 2**62), ("compress_size", 2**64 - 1), ("file_size", 2**62)])
def test_a_cached_wheel_whose_directory_lies_about_a_size_is_fetched_again(
        tmp_path: Path, local_index: Path, field: str, value: int) -> None:
    cache = tmp_path / "cache"
    open_release(VERSION, sglang_repo=None, cache=cache)
    wheel = cached_wheel(cache)
    lie_in_the_directory(wheel, SCHEDULER, field, value)
    status = wheel.stat()
    wheel.with_name(f".{wheel.name}.verified").write_text(f"{status.st_size} {status.st_mtime_ns}\n")  # unseen by the stamp
    release = open_release(VERSION, sglang_repo=None, cache=cache)
    assert release.tree.read_text(SCHEDULER) == PACKAGE_FILES[SCHEDULER]


def test_version_that_does_not_exist(tmp_path: Path, local_index: Path) -> None:
    with pytest.raises(SourceError, match=r"sglang 9\.9\.9: no such release on the package index") as error:
        open_release("9.9.9", sglang_repo=None, cache=tmp_path / "cache")
    assert "\n" not in str(error.value)


def test_no_network_and_empty_cache(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # nothing listens there
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    with pytest.raises(SourceError, match=r"sglang 0\.9\.0: the package index could not be reached") as error:
        open_release(VERSION, sglang_repo=None, cache=tmp_path / "cache")
    assert "\n" not in str(error.value)


def test_not_a_version(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="is not a version, a directory"):
        open_release("latest-and-greatest", sglang_repo=None, cache=tmp_path)


def test_corrupt_cached_wheel_is_fetched_again(tmp_path: Path, local_index: Path) -> None:
    cache = tmp_path / "cache"
    (cache / "wheels").mkdir(parents=True)
    (cache / "wheels" / f"sglang-{VERSION}-py3-none-any.whl").write_bytes(b"not a zip file")
    release = open_release(VERSION, sglang_repo=None, cache=cache)
    assert release.tree.read_text("sglang/srt/managers/scheduler.py")


def test_the_wheel_is_read_in_place(tmp_path: Path, local_index: Path) -> None:
    cache = tmp_path / "cache"
    release = open_release(VERSION, sglang_repo=None, cache=cache)
    assert release.tree.list_dir("sglang/srt") == ["managers"]
    assert list(release.tree.iter_files("sglang")) == ["sglang/__init__.py", "sglang/srt/managers/scheduler.py"]
    assert release.tree.read_bytes("sglang/srt/managers/missing.py") is None
    assert "Version: 0.9.0" in (release.tree.metadata_text() or "")
    assert sorted(path.name for path in cache.iterdir()) == ["wheels"]  # nothing unpacked


@pytest.mark.parametrize("member", ["../escape.py", "/etc/evil.py", "sglang/../../escape.py", "C:/evil.py", "./C:/evil.py",
                                    "sglang\\..\\..\\escape.py", "//etc/evil.py", "sglang/./../../escape.py"])
def test_unsafe_wheel_members_are_refused(tmp_path: Path, member: str) -> None:
    wheel = build_wheel(tmp_path / "bad", extra={member: "x = 1\n"})
    with pytest.raises(SourceError, match="refusing unsafe archive member"):
        WheelTree(wheel)


def test_symlink_member_is_refused(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path / "bad")
    with zipfile.ZipFile(wheel, "a") as archive:
        link = zipfile.ZipInfo("sglang/link.py")
        link.external_attr = (0o120777 << 16)
        archive.writestr(link, "/etc/passwd")
    with pytest.raises(SourceError, match="symbolic link"):
        WheelTree(wheel)


def test_release_without_srt_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "site-packages"
    (root / "sglang").mkdir(parents=True)
    (root / "sglang" / "__init__.py").write_text("")
    with pytest.raises(SourceError, match="sglang/srt is missing"):
        open_release(str(root), sglang_repo=None, cache=tmp_path)


def test_content_keys_come_from_record_without_reading_and_match_the_content(tmp_path: Path) -> None:
    import base64
    import hashlib

    listed = "sglang/srt/managers/scheduler.py"
    digest = base64.urlsafe_b64encode(hashlib.sha256(PACKAGE_FILES[listed].encode()).digest()).rstrip(b"=").decode()
    malformed = "sglang/__init__.py"
    record = f"{listed},sha256={digest},{len(PACKAGE_FILES[listed])}\n{malformed},sha256=!!!,0\n"
    tree = WheelTree(build_wheel(tmp_path / "w", record=record))
    assert tree._recorded == {listed: digest, malformed: "!!!"}
    for relpath, text in PACKAGE_FILES.items():  # listed, and malformed (read and hashed)
        assert tree.content_key(relpath) == hashlib.sha256(text.encode()).hexdigest()


def test_a_damaged_member_is_a_one_line_error_naming_the_wheel(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path / "w")
    member = "sglang/srt/managers/scheduler.py"
    data = bytearray(wheel.read_bytes())
    at = bytes(data).index(PACKAGE_FILES[member].encode())  # stored, not compressed
    data[at:at + 5] = b"XXXXX"
    wheel.write_bytes(bytes(data))
    tree = WheelTree(wheel)  # the archive's directory is intact
    with pytest.raises(SourceError, match="damaged: delete it") as error:
        tree.read_bytes(member)
    assert str(wheel) in str(error.value) and "\n" not in str(error.value)



def test_deflated_members_read_as_zipfile_reads_them_and_damage_in_them_is_found(tmp_path: Path) -> None:
    """Members are inflated from the archive file directly (not through zipfile's reader): what
    they give is what zipfile gives, and damaged compressed bytes or a cut stream are errors."""
    wheel = tmp_path / f"sglang-{VERSION}-py3-none-any.whl"
    big = "".join(f"def f{n}(x):\n    return x + {n}\n" for n in range(3000))
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, text in {**PACKAGE_FILES, "sglang/big.py": big}.items():
            archive.writestr(name, text)
        archive.writestr(f"sglang-{VERSION}.dist-info/RECORD", "")
    tree = WheelTree(wheel)
    with zipfile.ZipFile(wheel) as archive:
        for name in [*PACKAGE_FILES, "sglang/big.py"]:
            assert tree.read_bytes(name) == archive.read(name)
    assert tree.verify()
    info = tree.members["sglang/big.py"]
    data = bytearray(wheel.read_bytes())
    middle = info.header_offset + 30 + len(info.filename) + info.compress_size // 2
    data[middle:middle + 8] = bytes(255 - b for b in data[middle:middle + 8])
    damaged = tmp_path / "damaged" / wheel.name
    damaged.parent.mkdir()
    damaged.write_bytes(bytes(data))
    tree = WheelTree(damaged)
    assert not tree.verify()
    with pytest.raises(SourceError, match="damaged: delete it") as error:
        tree.read_bytes("sglang/big.py")
    assert "\n" not in str(error.value)
    assert tree.read_bytes(SCHEDULER) == PACKAGE_FILES[SCHEDULER].encode()  # the other members are whole

RETRIED = (
    "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection "
    "broken by 'NewConnectionError('<HTTPConnection object>: Failed to establish a new connection: "
    "[Errno 111] Connection refused')': /simple/sglang/\n"
    "ERROR: Could not find a version that satisfies the requirement sglang==0.5.22 (from versions: none)\n"
    "ERROR: No matching distribution found for sglang==0.5.22\n")
ABSENT = ("ERROR: Could not find a version that satisfies the requirement sglang==0.5.99 "
          "(from versions: 0.5.21, 0.5.22)\nERROR: No matching distribution found for sglang==0.5.99\n")


@pytest.mark.parametrize(("stderr", "said"), [
    (RETRIED, "the package index could not be reached"),  # named only in pip's retry warnings
    (RETRIED.split("\n", 1)[1], "the package index could not be reached"),  # no retries: nothing listed
    (ABSENT, "no such release on the package index"),
    ("ERROR: THESE PACKAGES DO NOT MATCH THE HASHES\n", "download failed"),
    ("WARNING: one\nWARNING: Skipping page https://x/simple/sglang/ because of Content-Type: text/plain\n",
     "download failed (WARNING: one / WARNING: Skipping page https://x/simple/sglang/"),
    ("", "download failed (pip gave no reason)"),
])
def test_pip_failures_are_told_apart(stderr: str, said: str) -> None:
    message = _explain_pip_failure("0.5.22", stderr)
    assert message.startswith(f"sglang 0.5.22: {said}") and "\n" not in message


def test_module_texts_are_kept_for_the_run_within_a_budget_that_yields_to_the_project(tmp_path: Path) -> None:
    from sglang_contracts.sources import base

    tree = WheelTree(build_wheel(tmp_path / "w"))
    assert tree.read_source(SCHEDULER) == PACKAGE_FILES[SCHEDULER]
    assert tree._kept_sources == {SCHEDULER: PACKAGE_FILES[SCHEDULER]}  # read once, kept
    tree.yield_kept_sources(base.KEPT_SOURCE_BUDGET)  # a project as large as the budget
    other = next(name for name in PACKAGE_FILES if name != SCHEDULER and name.endswith(".py"))
    assert tree.read_source(other) == PACKAGE_FILES[other]
    assert other not in tree._kept_sources and SCHEDULER in tree._kept_sources  # what is kept stays


def test_a_module_the_two_releases_have_alike_is_kept_once(tmp_path: Path, monkeypatch) -> None:
    changed = next(name for name in PACKAGE_FILES if name != SCHEDULER and name.endswith(".py"))
    old = WheelTree(build_wheel(tmp_path / "old"))
    monkeypatch.setitem(PACKAGE_FILES, changed, PACKAGE_FILES[changed] + "\nX = 1\n")
    new = WheelTree(build_wheel(tmp_path / "new", "0.2.0"))
    monkeypatch.undo()
    old.share_kept_sources(new)
    for tree in (old, new):
        tree.read_source(SCHEDULER)
        tree.read_source(changed)
    assert new._kept_sources[SCHEDULER] is old._kept_sources[SCHEDULER]  # the same text, one object
    assert new._kept_sources[changed] == PACKAGE_FILES[changed] + "\nX = 1\n" != old._kept_sources[changed]
    assert new._kept_characters == sum(map(len, new._kept_sources.values()))  # both count in its budget


def archive_openings(monkeypatch) -> list[str]:
    """The wheels whose archive directory zipfile parses, in order."""
    opened: list[str] = []
    real = zipfile.ZipFile.__init__

    def counted(self, file, *args, **kwargs) -> None:
        opened.append(Path(file).name)
        real(self, file, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "__init__", counted)
    return opened


def test_a_stamped_wheel_opens_from_its_kept_directory_and_reads_alike(
        tmp_path: Path, recorded_index: Path, monkeypatch) -> None:
    cache = tmp_path / "cache"
    first = open_release(VERSION, sglang_repo=None, cache=cache)
    wheel = cached_wheel(cache)
    kept = wheel.with_name(f".{wheel.name}.directory")
    assert kept.is_file()
    opened = archive_openings(monkeypatch)
    again = open_release(VERSION, sglang_repo=None, cache=cache)
    assert opened == []  # neither the directory nor anything else parsed by zipfile
    assert again.tree.members.keys() == first.tree.members.keys()
    for relpath in first.tree.members:
        assert again.tree.read_member(relpath) == first.tree.read_member(relpath)
        assert again.tree.content_key(relpath) == first.tree.content_key(relpath)
    assert again.tree.list_dir("sglang") == first.tree.list_dir("sglang")


@pytest.mark.parametrize("forged", [
    lambda data: data["members"].__setitem__(0, [data["members"][0][0], 0, 1 << 62, 1 << 62, 8, 0, 0]),  # sizes it cannot hold
    lambda data: data["members"].append(["../../outside.py", 0, 0, 0, 0, 0, 0]),  # climbing out
    lambda data: data.__setitem__("members", "not a list"),  # of another shape
    lambda data: data.__setitem__("stamp", "1 2\n"),  # of another content of the wheel
])
def test_a_forged_or_stale_kept_directory_is_not_read_and_the_wheel_is_kept(
        tmp_path: Path, recorded_index: Path, monkeypatch, forged) -> None:
    import json

    cache = tmp_path / "cache"
    first = open_release(VERSION, sglang_repo=None, cache=cache)
    wheel = cached_wheel(cache)
    kept = wheel.with_name(f".{wheel.name}.directory")
    data = json.loads(kept.read_text())
    forged(data)
    kept.write_text(json.dumps(data))
    opened = archive_openings(monkeypatch)
    again = open_release(VERSION, sglang_repo=None, cache=cache)
    assert opened == [wheel.name]  # the archive's own directory, read instead
    assert wheel.is_file() and again.tree.members.keys() == first.tree.members.keys()
    assert "../../outside.py" not in again.tree.members
    assert json.loads(kept.read_text()) != data  # kept anew, as the archive has it
    assert json.loads(kept.read_text())["stamp"] == _stamp_text(wheel)


def test_a_damaged_wheel_is_discarded_with_its_kept_directory(tmp_path: Path, recorded_index: Path) -> None:
    cache = tmp_path / "cache"
    open_release(VERSION, sglang_repo=None, cache=cache)
    wheel = cached_wheel(cache)
    kept = wheel.with_name(f".{wheel.name}.directory")
    assert kept.is_file()
    wheel.write_bytes(wheel.read_bytes()[:-200])  # truncated: its size, so its stamp, changes
    open_release(VERSION, sglang_repo=None, cache=cache)  # found damaged, fetched again
    assert json_stamp(kept) == _stamp_text(cached_wheel(cache))


def json_stamp(kept: Path) -> str:
    import json

    return json.loads(kept.read_text())["stamp"]


def _stamp_text(wheel: Path) -> str:
    status = wheel.stat()
    return f"{status.st_size} {status.st_mtime_ns}\n"


def test_a_pip_cache_that_is_a_fifo_is_not_waited_on(tmp_path: Path, local_index: Path, monkeypatch) -> None:
    """XDG_CACHE_HOME naming a FIFO: pip opened it and waited for ever (campaign 18, R06). The
    download goes on without pip's cache (pip reading a local folder opens none: the command is
    what tells)."""
    import os
    import subprocess

    from sglang_contracts.sources import index

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    commands, run = [], subprocess.run
    monkeypatch.setattr(index.subprocess, "run", lambda command, **k: commands.append(command) or run(command, **k))
    monkeypatch.delenv("PIP_CACHE_DIR", raising=False)
    for cache, xdg in (("first", tmp_path), ("second", fifo)):
        monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
        assert open_release(VERSION, sglang_repo=None, cache=tmp_path / cache).version == VERSION
    assert [("--no-cache-dir" in command) for command in commands if "download" in command] == [False, True]


def test_a_pip_configuration_file_that_is_a_fifo_is_one_error_not_a_wait(tmp_path: Path, local_index: Path,
                                                                        monkeypatch) -> None:
    """pip reads its configuration files before anything else, with no timeout: one that is a
    FIFO is said, and pip is not started (campaign 18, R06's class)."""
    import os

    fifo = tmp_path / "pip.conf"
    os.mkfifo(fifo)
    monkeypatch.setenv("PIP_CONFIG_FILE", str(fifo))
    with pytest.raises(SourceError, match=f"pip would wait for ever reading its configuration \\({fifo} is a FIFO\\)"):
        open_release(VERSION, sglang_repo=None, cache=tmp_path / "cache")
