"""The dependency closure (closure/) against small package indexes written here: a `file://`
simple index with PEP 658 `.metadata` files, and a local HTTP index that serves some wheels'
metadata and, for the others, only the wheel by ranges."""

from __future__ import annotations

import io
import shutil
import threading
import time
import zipfile
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest

from sglang_contracts.check.runner import CheckOptions, run_check
from sglang_contracts.closure import index as index_module
from sglang_contracts.closure import source as source_module
from sglang_contracts.closure.delta import closure_delta
from sglang_contracts.closure.index import IndexSettings, IndexUnreachable, PackageIndex, configured_index
from sglang_contracts.closure.source import ABSENCE_LIFE, NO_INDEX, MetadataSource
from sglang_contracts.closure.walk import walk
from sglang_contracts.infra.cache import RecordCache
from sglang_contracts.requirements import environments
from sglang_contracts.upstream.pins import metadata_pins
from tests.helpers import upstream_tree, write_tree

X86, ARM = environments()[0], environments()[1]
UNREACHABLE = "http://127.0.0.1:9/simple/"  # the discard port: nothing listens there


def metadata(name: str, version: str, *requirements: str, python: str | None = None) -> str:
    lines = ["Metadata-Version: 2.4", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Python: {python}"] if python else []
    return "\n".join(lines + [f"Requires-Dist: {r}" for r in requirements]) + "\n"


SGLANG_OLD = metadata("sglang", "0.1.0", "torch==2.9.1", "nvidia-cutlass-dsl==4.6.0", "transformers==5.19.0",
                      python=">=3.10")
SGLANG_NEW = metadata("sglang", "0.2.0", "torch==2.14.1", "nvidia-cutlass-dsl[cu13]==4.8.0", "transformers==5.19.0",
                      'torchcodec==0.17.0; platform_machine != "aarch64"', "triton>=3.8", python=">=3.11")
PACKAGES = {
    ("torch", "2.9.1"): metadata("torch", "2.9.1", 'nvidia-nccl-cu12==2.27.5; platform_system == "Linux"'),
    ("torch", "2.14.1"): metadata("torch", "2.14.1", 'nvidia-nccl-cu13==2.30.7; platform_system == "Linux"',
                                  'optree>=0.13; extra == "optree"', "filelock"),
    ("nvidia-cutlass-dsl", "4.6.0"): metadata("nvidia-cutlass-dsl", "4.6.0", "nvidia-cutlass-dsl-libs-base==4.6.0"),
    ("nvidia-cutlass-dsl", "4.8.0"): metadata("nvidia-cutlass-dsl", "4.8.0", "nvidia-cutlass-dsl-libs-base==4.8.0",
                                              'nvidia-cutlass-dsl-libs-cu13==4.8.0; extra == "cu13"'),
    ("transformers", "5.19.0"): metadata("transformers", "5.19.0", "huggingface-hub>=1.0"),
    ("nvidia-nccl-cu13", "2.30.7"): metadata("nvidia-nccl-cu13", "2.30.7"),
    ("torchvision", "0.24.1"): metadata("torchvision", "0.24.1", "torch==2.9.1", "numpy"),
}


def wheel_name(name: str, version: str) -> str:
    return f"{name.replace('-', '_')}-{version}-py3-none-any.whl"


def write_index(root: Path, packages: dict[tuple[str, str], str], metadata_files: bool = True,
                offered: bool = False) -> Path:
    """A PEP 503 index: one page per project; beside each wheel its `.metadata` file (PEP 658)
    when `metadata_files`, else the wheel itself, whose METADATA member is the only way in."""
    pages: dict[str, list[str]] = {}
    for (name, version), text in packages.items():
        wheel = wheel_name(name, version)
        attribute = ' data-core-metadata="true"' if offered else ""
        pages.setdefault(name, []).append(f'<a href="{wheel}"{attribute}>{wheel}</a>')
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        if metadata_files:
            (folder / f"{wheel}.metadata").write_text(text)
        else:
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
                archive.writestr(f"{name}/__init__.py", "# " + "x" * 200_000)  # the tail read at first misses METADATA
                archive.writestr(f"{name.replace('-', '_')}-{version}.dist-info/METADATA", text)
            (folder / wheel).write_bytes(buffer.getvalue())
        (folder / "index.html").write_text("<html><body>\n" + "\n".join(pages[name]) + "\n</body></html>\n")
    return root


def source_for(tmp_path: Path, setting: str | None, name: str = "cache") -> MetadataSource:
    return MetadataSource(RecordCache(tmp_path / name), setting)


@pytest.fixture
def file_index(tmp_path: Path) -> str:
    return write_index(tmp_path / "index", PACKAGES).as_uri()


def test_the_walk_follows_exact_pins_their_extras_and_the_platforms_markers(tmp_path: Path, file_index: str) -> None:
    source = source_for(tmp_path, file_index)
    closure = walk(metadata_pins(SGLANG_NEW), frozenset(), X86, source)
    assert closure.first("nvidia-nccl-cu13").path() == "sglang -> torch==2.14.1 -> nvidia-nccl-cu13==2.30.7"
    # the `[cu13]` asked of cutlass-dsl brings its cu13 libraries; torch's `optree` extra was not asked
    assert closure.version("nvidia-cutlass-dsl-libs-cu13") == "4.8.0"
    assert closure.first("nvidia-cutlass-dsl-libs-cu13").chain == ("sglang", "nvidia-cutlass-dsl[cu13]==4.8.0")
    assert "optree" not in closure.needs
    assert closure.version("triton") is None and closure.first("triton").specifier == ">=3.8"  # a range is not followed
    assert closure.version("torchcodec") == "0.17.0"
    assert sorted(closure.unknown) == ["nvidia-cutlass-dsl-libs-base==4.8.0", "nvidia-cutlass-dsl-libs-cu13==4.8.0",
                                       "torchcodec==0.17.0"]  # pinned, and not on this index
    assert closure.requires_python["sglang"] == ">=3.11"
    on_arm = walk(metadata_pins(SGLANG_NEW), frozenset(), ARM, source)
    assert "torchcodec" not in on_arm.needs and on_arm.version("nvidia-nccl-cu13") == "2.30.7"


def test_the_delta_names_each_move_and_the_chain_that_brings_it(tmp_path: Path, file_index: str) -> None:
    source = source_for(tmp_path, file_index)
    old = {"linux/x86_64": walk(metadata_pins(SGLANG_OLD), frozenset(), X86, source)}
    new = {"linux/x86_64": walk(metadata_pins(SGLANG_NEW), frozenset(), X86, source)}
    delta = closure_delta(old, new, "0.1.0", "0.2.0")
    moves = {move.name: move for move in delta.moves}
    assert (moves["torch"].old, moves["torch"].new, moves["torch"].chain) == ("2.9.1", "2.14.1", "sglang -> torch==2.14.1")
    assert moves["nvidia-nccl-cu13"].chain == "sglang -> torch==2.14.1 -> nvidia-nccl-cu13==2.30.7"
    assert (moves["nvidia-nccl-cu12"].old, moves["nvidia-nccl-cu12"].new) == ("2.27.5", None)
    assert moves["nvidia-nccl-cu12"].chain == "sglang -> torch==2.9.1 -> nvidia-nccl-cu12==2.27.5"  # gone: the old chain
    assert "transformers" not in moves and "huggingface-hub" not in moves  # the same on both
    assert moves["torch"].key and not moves["filelock"].key
    assert delta.python == ("3.10 and later", "3.11 and later (sglang)")  # only what drops 3.10 is named
    assert [move.name for move in delta.moves][:2] == ["nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-base"]  # key first


def test_the_chain_names_the_requirement_that_moved_not_the_first_path(tmp_path: Path) -> None:
    # humming-kernels asks for any triton and any cuda-bindings, first in the walk; torch pins
    # triton's minor, and cutlass's libraries add a floor on cuda-bindings in the new release
    packages = {
        ("humming-kernels", "0.1.12"): metadata("humming-kernels", "0.1.12", "triton", "cuda-bindings"),
        ("torch", "2.13.0"): metadata("torch", "2.13.0", "triton~=3.7.1", "cuda-bindings<14,>=13.0.3"),
        ("torch", "2.14.1"): metadata("torch", "2.14.1", "triton~=3.8.0", "cuda-bindings<14,>=13.0.3"),
        ("nvidia-cutlass-dsl-libs-base", "4.8.0"): metadata("nvidia-cutlass-dsl-libs-base", "4.8.0", "cuda-bindings>=12.8"),
    }
    source = source_for(tmp_path, write_index(tmp_path / "index", packages).as_uri())
    old_sglang = metadata("sglang", "0.1.0", "humming-kernels==0.1.12", "torch==2.13.0")
    new_sglang = metadata("sglang", "0.2.0", "humming-kernels==0.1.12", "torch==2.14.1", "nvidia-cutlass-dsl-libs-base==4.8.0")
    old = {"linux/x86_64": walk(metadata_pins(old_sglang), frozenset(), X86, source)}
    new = {"linux/x86_64": walk(metadata_pins(new_sglang), frozenset(), X86, source)}
    moves = {move.name: move for move in closure_delta(old, new, "0.1.0", "0.2.0").moves}
    assert (moves["triton"].new, moves["triton"].chain) == ("~=3.8.0", "sglang -> torch==2.14.1 -> triton~=3.8.0")
    assert moves["cuda-bindings"].chain == "sglang -> nvidia-cutlass-dsl-libs-base==4.8.0 -> cuda-bindings>=12.8"
    assert new["linux/x86_64"].first("triton").chain == ("sglang", "torch==2.14.1")  # a version asked over none


def test_the_walk_is_bounded(tmp_path: Path, file_index: str) -> None:
    shallow = walk(metadata_pins(SGLANG_NEW), frozenset(), X86, source_for(tmp_path, file_index), most_depth=1)
    assert shallow.cut_short and "nvidia-nccl-cu13" not in shallow.needs
    few = walk(metadata_pins(SGLANG_NEW), frozenset(), X86, source_for(tmp_path, file_index), most_packages=3)
    assert few.cut_short and len(few.needs) < 8


def test_what_was_read_once_is_read_offline(tmp_path: Path, file_index: str) -> None:
    first = walk(metadata_pins(SGLANG_NEW), frozenset(), X86, source_for(tmp_path, file_index))
    shutil.rmtree(tmp_path / "index")  # the index gone: the cache alone answers
    offline = source_for(tmp_path, file_index)
    again = walk(metadata_pins(SGLANG_NEW), frozenset(), X86, offline)
    assert again.to_json() == first.to_json()
    assert offline.fetched == 0 and offline.unreachable is None  # every package version cached, the missing one too


def test_an_unreachable_index_leaves_the_closure_at_what_is_known(tmp_path: Path) -> None:
    source = source_for(tmp_path, UNREACHABLE)
    closure = walk(metadata_pins(SGLANG_NEW), frozenset(), X86, source)
    assert source.unreachable and "127.0.0.1:9" in source.unreachable
    assert closure.version("torch") == "2.14.1" and "nvidia-nccl-cu13" not in closure.needs
    assert source_for(tmp_path, UNREACHABLE).pins("torch", "2.14.1") is None  # nothing was cached as known


def test_no_index_reads_nothing_but_the_cache(tmp_path: Path, file_index: str) -> None:
    """`none` reads the records of pip's configured index, which a run with no setting keeps;
    not another index's (campaign 12, R02: a pull request's index named in its configuration)."""
    source_for(tmp_path, file_index).pins("transformers", "5.19.0")
    pips = MetadataSource(RecordCache(tmp_path / "cache"), None, make_index=lambda _: IndexSettings((file_index,)))
    assert pips.pins("torch", "2.14.1") is not None
    cached_only = source_for(tmp_path, NO_INDEX)
    assert cached_only.pins("torch", "2.14.1") is not None
    assert cached_only.pins("torch", "2.9.1") is None and cached_only.fetched == 0
    assert cached_only.pins("transformers", "5.19.0") is None  # cached from the other index only


def test_malformed_pages_and_metadata_are_unknown_packages_not_failures(tmp_path: Path) -> None:
    root = write_index(tmp_path / "index", {("torch", "2.14.1"): "Requires-Dist: ((( not a requirement\n\x00\xff",
                                             ("transformers", "5.19.0"): "x"})
    (root / "nvidia-cutlass-dsl").mkdir()
    (root / "nvidia-cutlass-dsl" / "index.html").write_text('<a href="nvidia_cutlass_dsl-4.8.0-py3-none-any.whl">'
                                                             '<<<</a><a href=nvidia_cutlass_dsl-4.8.0.whl>no wheel')
    closure = walk(metadata_pins(SGLANG_NEW), frozenset(), X86, source_for(tmp_path, root.as_uri()))
    assert closure.version("torch") == "2.14.1" and "nvidia-nccl-cu13" not in closure.needs
    assert "nvidia-cutlass-dsl==4.8.0" in closure.unknown


def test_a_marker_that_parses_and_cannot_be_evaluated_installs_nothing(tmp_path: Path) -> None:
    """A dependency's metadata with `; "x" == "x"` (two literals: no environment names them)
    failed rule SGC712 with an internal error, exit 3, on every run (campaign 15, R09): pip
    cannot evaluate it either; the requirement is not followed, and the walk goes on."""
    packages = {**PACKAGES, ("torch", "2.14.1"): metadata("torch", "2.14.1", 'nvidia-x==1; "x" == "x"',
                                                          'filelock; os_name == os_name', "nvidia-nccl-cu13==2.30.7")}
    root = write_index(tmp_path / "index", packages)
    closure = walk(metadata_pins(SGLANG_NEW), frozenset(), X86, source_for(tmp_path, root.as_uri()))
    assert "nvidia-x" not in closure.needs and "filelock" not in closure.needs
    assert closure.version("nvidia-nccl-cu13") == "2.30.7"


class RangeHandler(SimpleHTTPRequestHandler):
    """A simple index over HTTP that honours `Range: bytes=a-b` and `bytes=-n`, and logs what it served."""

    served: list[tuple[str, str | None]]

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self.served.append((self.path, self.headers.get("Range")))
        wanted = self.headers.get("Range")
        path = Path(self.translate_path(self.path))
        if not wanted or not path.is_file():
            return super().do_GET()
        data = path.read_bytes()
        first, _, last = wanted.removeprefix("bytes=").partition("-")
        start, end = (len(data) - int(last), len(data) - 1) if not first else (int(first), min(int(last), len(data) - 1))
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        self.send_header("Content-Length", str(end - start + 1))
        self.end_headers()
        self.wfile.write(data[start:end + 1])


@pytest.fixture
def http_index(tmp_path: Path):
    served: list[tuple[str, str | None]] = []
    handler = type("Handler", (RangeHandler,), {"served": served})
    root = tmp_path / "www"
    write_index(root / "simple", {k: v for k, v in PACKAGES.items() if k[0] == "torch"}, offered=True)
    write_index(root / "simple", {k: v for k, v in PACKAGES.items() if k[0] != "torch"}, metadata_files=False)
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple/", served
    server.shutdown()
    server.server_close()


def test_an_http_index_is_read_by_its_metadata_files_or_by_ranges_of_the_wheel(tmp_path: Path, http_index) -> None:
    url, served = http_index
    index = PackageIndex(IndexSettings((url,), timeout=10))
    assert "nvidia-nccl-cu13==2.30.7" in index.metadata_text("torch", "2.14.1")  # PEP 658, offered on the page
    assert "nvidia-cutlass-dsl-libs-base==4.8.0" in index.metadata_text("nvidia-cutlass-dsl", "4.8.0")  # by ranges
    wheels = [(path, ranged) for path, ranged in served if path.endswith(".whl")]
    assert wheels and all(ranged for _, ranged in wheels)  # no wheel was read whole
    assert index.metadata_text("torch", "9.9.9") is None  # no such version
    assert index.metadata_text("no-such-package", "1.0") is None


def test_an_index_s_host_is_looked_up_once_for_all_its_requests(tmp_path: Path, http_index, monkeypatch) -> None:
    """Each request opened a connection and asked the resolver for the host again: hundreds of
    lookups a first run, and a resolver that answers a burst slowly (a container's) held the
    walk 5 s at each level of the closure and failed some lookups, leaving the closure unread
    (closure/connections.py). The addresses are asked once and kept for the index's life."""
    import socket

    url, served = http_index
    asked: list[str] = []
    lookup = socket.getaddrinfo
    monkeypatch.setattr(socket, "getaddrinfo",
                        lambda host, *rest, **named: asked.append(host) or lookup(host, *rest, **named))
    index = PackageIndex(IndexSettings((url,), timeout=10))
    assert "nvidia-nccl-cu13==2.30.7" in index.metadata_text("torch", "2.14.1")
    assert "nvidia-cutlass-dsl-libs-base==4.8.0" in index.metadata_text("nvidia-cutlass-dsl", "4.8.0")  # by ranges
    assert index.metadata_text("no-such-package", "1.0") is None
    assert len(served) == 5  # three pages, a metadata file, a range of a wheel
    assert asked == ["127.0.0.1"] and index.addresses.lookups == 1


def test_requests_that_start_together_wait_for_one_lookup_of_their_host(tmp_path: Path, http_index,
                                                                         monkeypatch) -> None:
    """The walk's first requests start together, eight at once: each looked the host up while
    none had an answer yet, the burst that the resolver answered slowly."""
    import socket
    from concurrent.futures import ThreadPoolExecutor

    url, _ = http_index
    asked: list[str] = []
    lookup = socket.getaddrinfo

    def slow_lookup(host, *rest, **named):
        asked.append(host)
        time.sleep(0.2)
        return lookup(host, *rest, **named)

    monkeypatch.setattr(socket, "getaddrinfo", slow_lookup)
    index = PackageIndex(IndexSettings((url,), timeout=10))
    names = ["torch", "nvidia-cutlass-dsl", "no-such-package", "filelock"] * 2
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda name: index.files(name, "1.0"), names))
    assert asked == ["127.0.0.1"]


def test_an_index_url_s_credentials_are_sent_to_its_host_and_shown_nowhere(tmp_path: Path, http_index,
                                                                           monkeypatch) -> None:
    """Tenth campaign, R07: `https://user:token@host/simple` (pip's usual form for a private
    index, in PIP_INDEX_URL) was printed when the index could not be read, on standard error,
    in the JSON report and in the markdown one (a pull request's body); and urllib, taking
    `user:token@host` for the host, never reached such an index. The credentials go, as pip
    sends them, with every request to the index's host, and no message shows them."""
    import base64

    url, served = http_index
    seen: list[str | None] = []
    original = RangeHandler.do_GET

    def recording(self) -> None:
        seen.append(self.headers.get("Authorization"))
        original(self)

    monkeypatch.setattr(RangeHandler, "do_GET", recording)
    with_token = url.replace("http://", "http://al%40ice:S3CR3T:x@")
    index = PackageIndex(IndexSettings((with_token,), timeout=10))
    assert "nvidia-nccl-cu13==2.30.7" in index.metadata_text("torch", "2.14.1")
    assert "nvidia-cutlass-dsl-libs-base==4.8.0" in index.metadata_text("nvidia-cutlass-dsl", "4.8.0")  # by ranges
    assert seen and set(seen) == {"Basic " + base64.b64encode(b"al@ice:S3CR3T:x").decode()}

    unreachable = UNREACHABLE.replace("http://", "https://alice:S3CR3T@")
    with pytest.raises(IndexUnreachable) as raised:
        PackageIndex(IndexSettings((unreachable,), timeout=5)).metadata_text("torch", "2.14.1")
    assert "S3CR3T" not in str(raised.value) and "alice" not in str(raised.value) and "127.0.0.1:9" in str(raised.value)
    assert str(IndexUnreachable("unknown url type: 'https://bob:T0KEN@host/x'")) == "unknown url type: 'https://host/x'"


@pytest.mark.parametrize("url", ["https://[::1/simple", "http://[zz]/", "file://[zz/simple"])
def test_an_index_url_no_parser_takes_is_an_unreadable_index_not_a_lost_closure(tmp_path: Path, url: str) -> None:
    """Campaign 11, R02: `https://[::1/simple` (a bracket left open) raised ValueError out of the
    index, and the closure's rules were dropped for the run with a warning naming the exception.
    It is an index that cannot be read: one note, the run goes on; a page's link no parser takes
    is a link skipped."""
    with pytest.raises(IndexUnreachable, match="not a URL"):
        PackageIndex(IndexSettings((url,), timeout=5)).metadata_text("torch", "2.14.1")
    found, result = _bump(tmp_path, MILES_SHAPED, {"package-index": url})
    assert found == ["docker/Dockerfile:3:35: SGC711 error"]
    (note,) = [note for note in result.notes if "closure" in note]
    assert "could not be read" in note and "not a URL" in note
    assert index_module._ranked_wheels([("torch-2.14.1-py3-none-any.whl", "http://[zz/torch.whl", False)],
                                       index_module.as_version("2.14.1"), "https://h/simple/torch/") == []


def test_an_unreachable_index_s_credentials_reach_no_report(tmp_path: Path) -> None:
    from sglang_contracts.reporters.json import write_json
    from sglang_contracts.reporters.markdown import write_markdown

    _, result = _bump(tmp_path, MILES_SHAPED, {"package-index": UNREACHABLE.replace("http://", "http://alice:S3CR3T@")})
    (note,) = [note for note in result.notes if "closure" in note]
    assert "127.0.0.1:9" in note and "S3CR3T" not in note and "alice" not in note
    for write in (write_json, write_markdown):
        out = io.StringIO()
        write(result, out)
        assert "S3CR3T" not in out.getvalue() and "alice" not in out.getvalue()


def test_pip_settings_are_read_as_pip_reads_them(monkeypatch) -> None:
    config = {"global.index-url": "https://global.example/simple", "install.index-url": "https://install.example/simple",
              "global.extra-index-url": "file:///opt/a/simple file:///opt/b/simple", "global.timeout": "7"}
    monkeypatch.setattr(index_module, "_pip_config", lambda: dict(config))
    assert configured_index().urls == ("https://install.example/simple", "file:///opt/a/simple", "file:///opt/b/simple")
    assert configured_index().timeout == 7.0
    config[":env:.index-url"] = "https://env.example/simple"
    assert configured_index().urls[0] == "https://env.example/simple"
    assert configured_index("https://given.example/simple").urls == ("https://given.example/simple",)
    monkeypatch.setattr(index_module, "_pip_config", lambda: {})
    assert configured_index().urls == ("https://pypi.org/simple/",)


def _bump(tmp_path: Path, project: dict[str, str], settings: dict, name: str = "project",
          use_cache: bool = True) -> tuple[list[str], object]:
    old = upstream_tree(tmp_path / "old", {"sglang/srt/utils.py": "", "sglang-0.1.0.dist-info/METADATA": SGLANG_OLD}, "0.1.0")
    new = upstream_tree(tmp_path / "new", {"sglang/srt/utils.py": "", "sglang-0.2.0.dist-info/METADATA": SGLANG_NEW}, "0.2.0")
    root = write_tree(tmp_path / name, {"pyproject.toml": "[project]\nname = 'app'\n", **project})
    result = run_check([root], CheckOptions(old=str(old), new=str(new), cache_dir=tmp_path / "c", workers=1,
                                            settings=settings, use_cache=use_cache))
    return [f"{d.path}:{d.line}:{d.col}: {d.code} {d.severity}" for d in result.diagnostics], result


MILES_SHAPED = {"docker/Dockerfile": "FROM ubuntu:24.04\n# Reconcile with sglang's pin\n"
                                     "RUN pip install --force-reinstall nvidia-cutlass-dsl==4.6.2\n"
                                     "RUN pip install nvidia-nccl-cu13==2.29.0 nvidia-nccl-cu13==2.30.7\n",
                "requirements.txt": "torchvision==0.24.1\ntransformers==5.19.0\n"}


def test_a_bump_reports_the_projects_installs_against_the_new_closure(tmp_path: Path, file_index: str) -> None:
    found, result = _bump(tmp_path, MILES_SHAPED, {"package-index": file_index})
    assert found == ["docker/Dockerfile:3:35: SGC711 error", "docker/Dockerfile:4:17: SGC711 warning",
                     "requirements.txt:1:1: SGC712 error"]
    messages = {d.code + str(d.line): d.message for d in result.diagnostics}
    assert messages["SGC7113"].endswith("sglang 0.2.0 requires: 4.8.0 (sglang -> nvidia-cutlass-dsl[cu13]==4.8.0; sglang "
                                        "0.1.0 brought 4.6.0); the line says it follows SGLang's stack: set it to "
                                        "nvidia-cutlass-dsl==4.8.0")
    assert "follows" not in messages["SGC7114"]  # no comment says so above it
    assert "sglang -> torch==2.14.1 -> nvidia-nccl-cu13==2.30.7" in messages["SGC7114"]
    assert "`torchvision==0.24.1` requires `torch==2.9.1`, which sglang 0.1.0 met" in messages["SGC7121"]
    moves = {move.name for move in result.closure_delta.moves}
    assert {"torch", "nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-cutlass-dsl"} <= moves
    assert result.closure_delta.transitive
    (note,) = result.closure_delta.notes  # what this small index lacks
    assert note.startswith("no wheel metadata on the index for nvidia-cutlass-dsl-libs-base==4.6.0, ")


def test_a_first_run_walks_the_closures_while_it_indexes_the_project(tmp_path: Path, file_index: str,
                                                                     monkeypatch) -> None:
    """A first run reads the package index on a thread of its own while the project is indexed
    (runner._EarlyClosureWalk): the index's build here waits until that walk has read the index,
    which it would wait for in vain were the walk begun after it. The run's own computation
    then reads nothing from the index, and finds what a run without the early walk finds."""
    import threading

    from sglang_contracts.check import runner
    from sglang_contracts.closure import source as source_module

    fetched_for: list[str] = []  # for each read of the index, the thread that made its source
    walk_read = threading.Event()
    real_init, real_fetch = source_module.MetadataSource.__init__, source_module.MetadataSource._fetch

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self.made_on = threading.current_thread().name

    def fetch(self, index, name, version):
        fetched_for.append(self.made_on)
        walk_read.set()
        return real_fetch(self, index, name, version)

    real_index = runner.Fresh.index

    def index(self, *args, **kwargs):
        assert walk_read.wait(30), "the closure walk read nothing while the project was indexed"
        return real_index(self, *args, **kwargs)

    monkeypatch.setattr(source_module.MetadataSource, "__init__", init)
    monkeypatch.setattr(source_module.MetadataSource, "_fetch", fetch)
    with monkeypatch.context() as waiting:
        waiting.setattr(runner.Fresh, "index", index)
        found, result = _bump(tmp_path, MILES_SHAPED, {"package-index": file_index})
    assert fetched_for and set(fetched_for) == {"closure walk"}
    monkeypatch.setattr(runner._EarlyClosureWalk, "_walk", staticmethod(lambda *args: None))
    fetched_for.clear()
    (tmp_path / "second").mkdir()  # its own releases, project and cache
    alone, by_itself = _bump(tmp_path / "second", MILES_SHAPED, {"package-index": file_index})
    assert fetched_for and "closure walk" not in fetched_for  # without it, the run reads the index itself
    assert found == alone and len(found) == 3
    assert result.closure_delta.moves == by_itself.closure_delta.moves
    assert result.closure_delta.notes == by_itself.closure_delta.notes


def test_an_index_found_unreachable_is_not_asked_again_a_moment_later(tmp_path: Path, monkeypatch) -> None:
    """A first run's early walk met an unreachable index: the run's own computation, a moment
    later, says the same without waiting for it again (closure/source.py UNREACHABLE_MEMORY);
    once that time has passed, it is asked again."""
    from sglang_contracts.closure import source as source_module

    asked: list[tuple[str, str]] = []
    real = source_module.PackageIndex.metadata_text

    def metadata_text(self, name: str, version: str):
        asked.append((name, version))
        return real(self, name, version)

    monkeypatch.setattr(source_module.PackageIndex, "metadata_text", metadata_text)
    first = source_for(tmp_path, UNREACHABLE, "one")
    first.prefetch([("torch", "2.9.1")])
    assert first.unreachable and asked == [("torch", "2.9.1")]
    second = source_for(tmp_path, UNREACHABLE, "two")
    second.prefetch([("torch", "2.9.1"), ("numpy", "2.1.0")])
    assert second.unreachable == first.unreachable and len(asked) == 1
    assert second.pins("torch", "2.9.1") is None
    monkeypatch.setattr(source_module, "UNREACHABLE_MEMORY", 0.0)
    third = source_for(tmp_path, UNREACHABLE, "three")
    third.prefetch([("torch", "2.9.1")])
    assert third.unreachable and len(asked) == 2


def test_an_unreachable_index_is_one_note_and_the_run_goes_on(tmp_path: Path) -> None:
    found, result = _bump(tmp_path, MILES_SHAPED, {"package-index": UNREACHABLE})
    assert found == ["docker/Dockerfile:3:35: SGC711 error"]  # SGLang's own pin needs no index
    (note,) = [note for note in result.notes if "closure" in note]
    assert note.startswith("the dependency closure was not computed past what is cached: the package index could not be read")


def test_once_cached_a_bump_needs_no_index(tmp_path: Path, file_index: str) -> None:
    online, first = _bump(tmp_path, MILES_SHAPED, {"package-index": file_index})
    shutil.rmtree(tmp_path / "index")  # the index gone: the cache alone answers
    offline, result = _bump(tmp_path, MILES_SHAPED, {"package-index": file_index})
    assert offline == online and len(online) == 3
    assert result.notes == first.notes and result.closure_delta.moves == first.closure_delta.moves


def test_package_index_none_reads_the_closure_the_cache_holds(tmp_path: Path, file_index: str, monkeypatch) -> None:
    import json

    from sglang_contracts.reporters.json import write_json
    from sglang_contracts.reporters.markdown import write_markdown

    def shape(result) -> str:
        out = io.StringIO()
        write_json(result, out)
        return type(json.loads(out.getvalue())).__name__

    _, cold = _bump(tmp_path / "cold", MILES_SHAPED, {"package-index": "none"})  # nothing cached: SGLang's pins alone
    assert not cold.closure_delta.reported and shape(cold) == "list" and not cold.notes
    # a run on pip's index (no setting) fills the cache `none` reads
    monkeypatch.delenv("SGLANG_CONTRACTS_PACKAGE_INDEX")
    monkeypatch.setattr(index_module, "_pip_config", lambda: {"global.index-url": file_index})
    online, first = _bump(tmp_path, MILES_SHAPED, {})
    # one pin more, whose metadata the cache never held
    offline, result = _bump(tmp_path, {**MILES_SHAPED, "build.sh": "pip install torchaudio==2.8.0\n"}, {"package-index": "none"})
    # the same cache, the same findings and moves (the "What moves together" section), which says
    # in one line what the cache lacked; nothing more on standard error, and the JSON keeps the
    # list `none` always gives, whatever the cache holds
    assert offline == online and result.closure_delta.reported
    assert result.closure_delta.moves == first.closure_delta.moves and not result.notes
    assert result.closure_delta.unread.startswith("The package index was not read (`--package-index none`): the closure "
                                                  "stops at what is cached, not torchaudio==2.8.0")
    out = io.StringIO()
    write_markdown(result, out)
    assert "### What moves together" in out.getvalue() and result.closure_delta.unread[:40] in out.getvalue()
    assert (shape(result), shape(cold), shape(first)) == ("list", "list", "dict")


def test_a_projects_own_index_folder_is_replayed_to_no_other_run(tmp_path: Path, file_index: str) -> None:
    """Campaign 12, R02: metadata was cached by (name, version) whatever index gave it. A pull
    request's project whose configuration names a folder of its own (`package-index = "index"`)
    planted forged metadata (torch 2.14.1 requiring numpy==6.6.6, transformers missing) that
    every later run on the same cache replayed, whatever index it was given, `none` too."""
    forged = {**PACKAGES, ("torch", "2.14.1"): metadata("torch", "2.14.1", "numpy==6.6.6", "evilpkg==6.6.6")}
    del forged["transformers", "5.19.0"]
    write_index(tmp_path / "pr" / "index", forged)
    _bump(tmp_path, MILES_SHAPED, {"package-index": "index"}, name="pr")
    for settings in ({"package-index": file_index}, {"package-index": "none"}):
        found, result = _bump(tmp_path, MILES_SHAPED, settings)
        alone, fresh = _bump(tmp_path, MILES_SHAPED, settings, use_cache=False)
        assert found == alone and [d.message for d in result.diagnostics] == [d.message for d in fresh.diagnostics]
        assert result.closure_delta.moves == fresh.closure_delta.moves
        assert result.closure_delta.notes == fresh.closure_delta.notes


def test_a_closure_that_lacked_metadata_is_read_again_once_the_absence_is_old(tmp_path: Path, monkeypatch) -> None:
    """Campaign 12, R02: a version the index had no wheel of was cached as such for good, and so
    was the closure that lacked it: a page fixed later was never read again. The absence is
    believed for ABSENCE_LIFE (a second run stays offline), then asked again."""
    root = write_index(tmp_path / "index", {key: text for key, text in PACKAGES.items() if key != ("torch", "2.14.1")})
    settings = {"package-index": root.as_uri()}
    lacking, _ = _bump(tmp_path, MILES_SHAPED, settings)
    assert "docker/Dockerfile:4:17: SGC711 warning" not in lacking  # torch 2.14.1's NCCL unknown
    write_index(root, PACKAGES)  # the page fixed
    assert _bump(tmp_path, MILES_SHAPED, settings)[0] == lacking  # within its life, the absence holds
    later = time.time() + ABSENCE_LIFE + 60
    monkeypatch.setattr(source_module, "time", SimpleNamespace(time=lambda: later))
    found, _ = _bump(tmp_path, MILES_SHAPED, settings)
    assert "docker/Dockerfile:4:17: SGC711 warning" in found


def test_fix_moves_sglangs_own_pin_and_leaves_what_another_pin_brings(tmp_path: Path, file_index: str) -> None:
    from sglang_contracts.check.fixes import run_fix

    old = upstream_tree(tmp_path / "old", {"sglang/srt/utils.py": "", "sglang-0.1.0.dist-info/METADATA": SGLANG_OLD}, "0.1.0")
    new = upstream_tree(tmp_path / "new", {"sglang/srt/utils.py": "", "sglang-0.2.0.dist-info/METADATA": SGLANG_NEW}, "0.2.0")
    project = write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n", **MILES_SHAPED,
                                                "build.sh": "pip install nvidia-cutlass-dsl==4.6.2+cu129\n"})
    options = CheckOptions(old=str(old), new=str(new), cache_dir=tmp_path / "c", workers=1,
                           settings={"package-index": file_index})
    report = run_fix([project], options, unsafe=False)
    dockerfile = (project / "docker/Dockerfile").read_text().splitlines()
    assert dockerfile[2] == "RUN pip install --force-reinstall nvidia-cutlass-dsl==4.8.0"
    assert dockerfile[3] == "RUN pip install nvidia-nccl-cu13==2.29.0 nvidia-nccl-cu13==2.30.7"  # torch's: by hand
    assert (project / "build.sh").read_text() == "pip install nvidia-cutlass-dsl==4.6.2+cu129\n"  # a local build: by hand
    said = "\n".join(report.notes)
    assert "comes through another pin (sglang -> torch==2.14.1 -> nvidia-nccl-cu13==2.30.7)" in said
    assert "nvidia-cutlass-dsl==4.6.2+cu129 is not an exact public version: move it to 4.8.0 by hand" in said


def test_fixes_of_many_pins_in_one_dockerfile_split_its_text_once(tmp_path: Path, file_index: str, monkeypatch) -> None:
    """Each SGC711 fix split the whole text again to see whether its command names the version
    twice (campaign 12, R05's class): a file's fixes cost fixes x lines. Counted: once a file by
    the check (SGC711's look at the comments above each pin: it split it again for each pin, unseen
    while the rule ran in a forked copy) and once by the fix."""
    from sglang_contracts.check.fixes import run_fix
    from sglang_contracts.contracts import dependencies
    from sglang_contracts.fix import document as documents

    old = upstream_tree(tmp_path / "old", {"sglang/srt/utils.py": "", "sglang-0.1.0.dist-info/METADATA": SGLANG_OLD}, "0.1.0")
    new = upstream_tree(tmp_path / "new", {"sglang/srt/utils.py": "", "sglang-0.2.0.dist-info/METADATA": SGLANG_NEW}, "0.2.0")
    pins = 50
    project = write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n", "docker/Dockerfile":
                                                "FROM ubuntu:24.04\n"
                                                + "RUN pip install --force-reinstall nvidia-cutlass-dsl==4.6.2\n" * pins})
    split = []
    for module in (dependencies, documents):
        monkeypatch.setattr(module, "numbered_lines", lambda text, _split=module.numbered_lines, **ends: split.append(
            len(text)) or _split(text, **ends))
    options = CheckOptions(old=str(old), new=str(new), cache_dir=tmp_path / "c", workers=1,
                           settings={"package-index": file_index})
    report = run_fix([project], options, unsafe=False, write=False)
    before, after = report.texts["docker/Dockerfile"]
    assert after == before.replace("==4.6.2", "==4.8.0")
    assert split.count(len(before)) == 2


def test_the_command_line_names_the_index_by_a_folder_relative_to_where_it_runs(tmp_path: Path, monkeypatch,
                                                                                 capsys) -> None:
    from sglang_contracts.cli import main

    write_index(tmp_path / "index", PACKAGES)
    old = upstream_tree(tmp_path / "old", {"sglang/srt/utils.py": "", "sglang-0.1.0.dist-info/METADATA": SGLANG_OLD}, "0.1.0")
    new = upstream_tree(tmp_path / "new", {"sglang/srt/utils.py": "", "sglang-0.2.0.dist-info/METADATA": SGLANG_NEW}, "0.2.0")
    project = write_tree(tmp_path / "project", {"pyproject.toml": "[project]\nname = 'app'\n", **MILES_SHAPED})
    monkeypatch.chdir(tmp_path)
    argv = ["check", "project", "--old", str(old), "--new", str(new), "--cache-dir", str(tmp_path / "c"), "-q"]
    assert main([*argv, "--package-index", "index"]) == 1
    assert "requirements.txt:1:1: SGC712" in capsys.readouterr().out  # torchvision's metadata came from ./index
    assert main([*argv, "--package-index", "none", "--no-cache"]) == 1
    assert "SGC712" not in capsys.readouterr().out  # no index, nothing cached: torchvision's requirements unknown
    assert project.is_dir()


# The CUDA 12 build of the same releases (closure/flavour.py): PyTorch's index serves torch
# 2.14.1 as `2.14.1+cu129`, whose CUDA libraries are cu12 ones; flashinfer offers both builds'
# extras, cutlass-dsl only `cu13` (its base requirements are the CUDA 12 build)
CU12_SGLANG_NEW = metadata("sglang", "0.2.0", "torch==2.14.1", "nvidia-cutlass-dsl[cu13]==4.8.0",
                           "flashinfer-python[cu13]==0.7.2", "nvshmem4py-cu13", "cuda-python>=13.0",
                           "nvidia-nvshmem-cu13==3.4.5", "humming-kernels[cu13]==0.1.12")
CU12_PACKAGES = {**PACKAGES, ("flashinfer-python", "0.7.2"): metadata(
    "flashinfer-python", "0.7.2", 'nvidia-cutlass-dsl>=4.7; extra == "cu12"',
    'nvidia-cudnn-frontend-cu13>=1.0; extra == "cu13"', 'nvidia-cudnn-frontend-cu12>=1.0; extra == "cu12"')}
CU12_PACKAGES[("humming-kernels", "0.1.12")] = metadata(
    "humming-kernels", "0.1.12", 'nvidia-cuda-runtime-cu12; extra == "cu129"', 'nvidia-cuda-runtime; extra == "cu13"')
TORCH_CU129 = {("torch", "2.14.1+cu129"): metadata("torch", "2.14.1+cu129",
                                                   'nvidia-nccl-cu12==2.28.3; platform_system == "Linux"', "filelock")}


def test_the_closure_of_a_cuda_12_build_takes_its_extras_and_pytorchs_build(tmp_path: Path, file_index: str) -> None:
    from sglang_contracts.closure.flavour import CudaBuild

    index = write_index(tmp_path / "index12", CU12_PACKAGES).as_uri()
    builds = write_index(tmp_path / "cu129", TORCH_CU129).as_uri()
    build = CudaBuild("cu129", "docker/Dockerfile:1")
    closure = walk(metadata_pins(CU12_SGLANG_NEW), frozenset(), X86, source_for(tmp_path, index), build=build,
                   build_source=source_for(tmp_path, builds, "builds"))
    assert closure.first("nvidia-nccl-cu12").path() == "sglang -> torch==2.14.1 -> nvidia-nccl-cu12==2.28.3"
    assert "nvidia-nccl-cu13" not in closure.needs and "nvidia-cutlass-dsl-libs-cu13" not in closure.needs
    assert "nvidia-cudnn-frontend-cu12" in closure.needs and "nvidia-cudnn-frontend-cu13" not in closure.needs
    assert closure.build_unread == [] and closure.cuda_build == "cu129"
    # named for another major: renamed to the build's when any version goes, left out when pinned
    assert "nvshmem4py-cu12" in closure.needs and "nvshmem4py-cu13" not in closure.needs
    assert "nvidia-nvshmem-cu13" not in closure.needs
    assert "sglang -> nvidia-nvshmem-cu13==3.4.5" in closure.other_build
    assert closure.first("cuda-python").specifier == "<13,>=12"  # as the CUDA 12 images ask it
    # an extra named for the build itself (`cu129`) is taken over its major's, and chains say so
    assert closure.first("nvidia-cuda-runtime-cu12").path() == (
        "sglang -> humming-kernels[cu129]==0.1.12 -> nvidia-cuda-runtime-cu12")
    # the same release with no build named is the index's build: its cu13 libraries
    default = walk(metadata_pins(CU12_SGLANG_NEW), frozenset(), X86, source_for(tmp_path, index))
    assert default.version("nvidia-nccl-cu13") == "2.30.7" and "nvidia-cudnn-frontend-cu13" in default.needs
    assert "nvshmem4py-cu13" in default.needs and default.first("cuda-python").specifier == ">=13.0"
    assert "nvidia-nccl-cu12" not in default.needs


def test_a_cuda_build_whose_own_torch_is_not_read_leaves_its_cuda_libraries_out(tmp_path: Path) -> None:
    from sglang_contracts.closure.flavour import CudaBuild

    index = write_index(tmp_path / "index12", CU12_PACKAGES).as_uri()
    build = CudaBuild("cu129", "docker/Dockerfile:1")
    closure = walk(metadata_pins(CU12_SGLANG_NEW), frozenset(), X86, source_for(tmp_path, index), build=build,
                   build_source=source_for(tmp_path, UNREACHABLE, "builds"))
    assert closure.build_unread == ["torch==2.14.1+cu129"]
    assert "nvidia-nccl-cu13" not in closure.needs and "nvidia-nccl-cu12" not in closure.needs
    assert closure.version("filelock") is None and "filelock" in closure.needs  # torch's other requirements stay
    assert closure.other_build == ["sglang -> nvidia-nvshmem-cu13==3.4.5",
                                   "sglang -> torch==2.14.1 -> nvidia-nccl-cu13==2.30.7"]
    assert type(closure).from_json(closure.to_json()) == closure


CU129_PROJECT = {"docker/Dockerfile": "FROM lmsysorg/sglang:v0.1.0-cu129\n"
                                      "RUN pip install nvidia-nccl-cu13==2.29.0\n"}


def test_a_bump_on_a_cu129_image_is_judged_on_that_build(tmp_path: Path) -> None:
    index = write_index(tmp_path / "index12", CU12_PACKAGES).as_uri()
    builds = write_index(tmp_path / "cu129", TORCH_CU129)
    found, result = _bump(tmp_path, CU129_PROJECT, {"package-index": index, "cuda-build-index": str(builds)})
    moves = {move.name: move for move in result.closure_delta.moves}
    assert (moves["nvidia-nccl-cu12"].old, moves["nvidia-nccl-cu12"].new) == ("2.27.5", "2.28.3")
    assert "nvidia-nccl-cu13" not in moves  # the index's build, not the image's
    assert result.closure_delta.cuda_build == "cu129 the project builds on (docker/Dockerfile:1)"
    assert not any(code.split()[1] == "SGC714" for code in found)  # torch 2.14.1 is built for CUDA 12.9 too
    # an install of the other build's library is no longer judged against a closure that lacks it
    assert "docker/Dockerfile:2:17: SGC711 warning" not in found
    # PyTorch's index unreachable: the libraries it would bring are left out, one note says so,
    # and the image's CUDA is judged by the index's torch, as without a build
    offline = {"package-index": index, "cuda-build-index": UNREACHABLE}
    found, result = _bump(tmp_path / "offline", CU129_PROJECT, offline)
    assert "docker/Dockerfile:1:22: SGC714 warning" in found
    assert "nvidia-nccl-cu13" not in {move.name for move in result.closure_delta.moves}
    (note,) = [note for note in result.closure_delta.notes if "CUDA build" in note]
    assert note.startswith("the CUDA build's own metadata of torch==2.14.1+cu129 was not read from "
                           "http://127.0.0.1:9/simple/ (127.0.0.1:9: ")
    assert result.closure_delta.build_unread.startswith("The CUDA libraries torch==2.14.1+cu129 bring are not in it")


def test_the_build_is_the_main_dockerfiles_and_a_variants_suffix_does_not_choose_it(tmp_path: Path) -> None:
    # miles' shape: the main Dockerfile builds on the release's own image (`v0.1.0`), a variant
    # of build.py on its `-cu129` one: the closure is the wheel's build, with no build named
    index = write_index(tmp_path / "index12", CU12_PACKAGES).as_uri()
    project = {"docker/Dockerfile": "ARG SGLANG_IMAGE_TAG=v0.1.0\nFROM lmsysorg/sglang:${SGLANG_IMAGE_TAG}\n",
               "docker/build.py": 'VARIANTS = {"cu12": {"SGLANG_IMAGE_TAG": "v0.1.0-cu129"}}\n'}
    _, result = _bump(tmp_path, project, {"package-index": index})
    assert result.closure_delta.cuda_build == ""
    assert "nvidia-nccl-cu13" in {move.name for move in result.closure_delta.moves}
    # a project that pins its torch build instead of an image
    pinned = {"requirements.txt": "torch==2.9.1+cu129\ntorchvision==0.24.1+cu129\n"}
    found, result = _bump(tmp_path / "pinned", pinned, {"package-index": index, "cuda-build-index": UNREACHABLE})
    assert result.closure_delta.cuda_build == "cu129 the project builds on (requirements.txt:1)"
    # a build of PyTorch's pinned exactly is held to the new closure by its public version's requirements
    assert "requirements.txt:2:1: SGC712 error" in found


def test_a_file_index_reads_no_file_out_of_its_folder(tmp_path: Path) -> None:
    """A `file:` index's pages (a pull request's `package-index` folder) linking a file out of
    the folder, the process's environment, or a link in the folder pointing out: none is read,
    so nothing of them reaches the closure records (eighth campaign, Q01); a wheel in the folder
    is read as ever."""
    import zipfile

    index = tmp_path / "idx"
    (index / "evil").mkdir(parents=True)
    secret = tmp_path / "secret.txt"
    secret.write_text("Metadata-Version: 2.1\nName: evil\nVersion: 1.0\nRequires-Dist: OUTSIDE-SECRET==1\n")
    (index / "evil" / "inside-link.whl.metadata").symlink_to(secret)
    (index / "evil" / "index.html").write_text(
        f'<a href="file://{secret}?x=">evil-1.0-py3-none-any.whl</a>\n'
        '<a href="file:///proc/self/environ?x=">evil-1.1-py3-none-any.whl</a>\n'
        '<a href="inside-link.whl" data-dist-info-metadata="true">evil-1.2-py3-none-any.whl</a>\n'
        '<a href="good-1.3-py3-none-any.whl">evil-1.3-py3-none-any.whl</a>\n')
    with zipfile.ZipFile(index / "evil" / "good-1.3-py3-none-any.whl", "w") as wheel:
        wheel.writestr("evil-1.3.dist-info/METADATA", "Metadata-Version: 2.1\nName: evil\nVersion: 1.3\n")
    packages = PackageIndex(IndexSettings((index.as_uri(),)))
    assert [packages.metadata_text("evil", version) for version in ("1.0", "1.1", "1.2")] == [None, None, None]
    assert "Version: 1.3" in (packages.metadata_text("evil", "1.3") or "")


def test_a_file_index_that_names_a_fifo_is_not_waited_on(tmp_path: Path) -> None:
    """A `file:` index (a pull request's `package-index` folder) whose page links a wheel, or
    its metadata file, that is a FIFO, or whose page itself is one: each is refused as a file
    that is not regular, never opened to wait for a writer (seventh campaign, P06: the run
    hung for good)."""
    import os
    import threading

    index = tmp_path / "idx"
    (index / "foo").mkdir(parents=True)
    (index / "bar").mkdir()
    fifos = [index / "foo" / "a.whl", index / "foo" / "meta.whl.metadata", index / "bar" / "index.html"]
    for fifo in fifos:
        os.mkfifo(fifo)
    (index / "foo" / "meta.whl").write_bytes(b"")
    (index / "foo" / "index.html").write_text(
        '<a href="a.whl">foo-1.0.0-py3-none-any.whl</a>\n'
        '<a href="meta.whl" data-dist-info-metadata="true">foo-1.0.1-py3-none-any.whl</a>\n')
    answers: dict[str, object] = {}

    def ask() -> None:
        packages = PackageIndex(IndexSettings((index.as_uri(),)))
        for name, version in (("foo", "1.0.0"), ("foo", "1.0.1"), ("bar", "1.0.0")):
            try:
                answers[f"{name} {version}"] = packages.metadata_text(name, version)
            except IndexUnreachable as unreachable:
                answers[f"{name} {version}"] = str(unreachable)

    asking = threading.Thread(target=ask, daemon=True)
    asking.start()
    asking.join(30)
    if asking.is_alive():  # let the test end: a writer releases whatever waits on a FIFO
        for fifo in fifos:
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # no reader waits on this one
                pass
    assert not asking.is_alive() and answers["foo 1.0.0"] is None
    assert "not a regular file" in str(answers["foo 1.0.1"]) and "not a regular file" in str(answers["bar 1.0.0"])


def test_an_index_that_answers_a_byte_at_a_time_is_unreachable_within_its_timeout(tmp_path: Path) -> None:
    """The timeout bounded each read of the socket, not the page: a server sending a byte every
    half second kept a run waiting for good (eighth campaign, Q02). The whole page is read
    within the timeout, else the index is unreachable."""
    import socket
    import time

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    stop = threading.Event()

    def trickle() -> None:
        while not stop.is_set():
            try:
                listener.settimeout(0.5)
                connection, _ = listener.accept()
            except OSError:
                continue
            with connection:
                connection.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n")
                while not stop.is_set():
                    try:
                        connection.sendall(b" ")
                    except OSError:
                        break
                    time.sleep(0.2)

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    index = PackageIndex(IndexSettings((f"http://127.0.0.1:{listener.getsockname()[1]}/simple/",), timeout=1.0))
    started = time.monotonic()
    try:
        with pytest.raises(IndexUnreachable, match="answers too slowly"):
            index.metadata_text("torch", "2.0.0")
        assert time.monotonic() - started < 10
    finally:
        stop.set()
        thread.join(5)
        listener.close()
