"""A package's core metadata at one version, read from a simple package index, never installed.

The index is the one pip is configured for (`pip config list`: `index-url`, `extra-index-url`,
from pip's files and its `PIP_*` environment, as pip itself reads them), or the one the
`package-index` setting names. Each index is read through the simple API (PEP 691's JSON, or
PEP 503's HTML: a `file://` index is a folder of `index.html` pages). For a wheel of the
version, the metadata file PEP 658 publishes beside it (`<wheel>.metadata`) is read when the
index offers one; else only the wheel's `*.dist-info/METADATA` member is read, by ranges of the
remote archive (its central directory, then the one member): a torch wheel is 500 MB, its
metadata 2 kB. A version published only as a source distribution is not read (its metadata
would have to be built, which runs its code).
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import subprocess
import time
import urllib.parse
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from sglang_contracts.infra import pipfiles
from sglang_contracts.infra.files import Unreadable, open_regular
from sglang_contracts.infra.lines import numbered_lines
from sglang_contracts.infra.pythonpath import python_command
from sglang_contracts.requirements import as_version, normalized

# The network's modules (http.client, ssl, urllib.request, html.parser: a twentieth of the start
# of every run) are imported where the index is read, which a run whose closures are cached
# never does.

PYPI = "https://pypi.org/simple/"
JSON_ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
DEFAULT_TIMEOUT = 30.0
READ_DEADLINES = 1  # a page's whole read, in timeouts (the timeout bounds each read of the socket too)
MOST_METADATA_BYTES = 4 << 20  # a METADATA member larger than this is no package's metadata
MOST_PAGE_BYTES = 64 << 20  # torch's JSON page is 3 MB; a page past this is not read
TAIL_BYTES = 1 << 16  # the end of an archive read at once: its central directory, mostly
# Wheels of the platforms the closure is read for come first: a package whose metadata differs
# by wheel (rare) is read as a Linux server installs it.
PREFERRED_PLATFORMS = ("manylinux", "linux_x86_64", "any")


class IndexUnreachable(Exception):
    """The package index could not be read: no network, a refused connection, a server error.
    Its message shows no URL's user and password, whatever the reason quotes (shown_url)."""

    def __init__(self, reason: str) -> None:
        super().__init__(shown_url(reason))


@dataclass(frozen=True)
class IndexSettings:
    urls: tuple[str, ...]  # the index first, then the extra indexes
    timeout: float = DEFAULT_TIMEOUT
    cafile: str | None = None  # pip's `cert`: the certificate authorities of a private index


def _pip_config() -> dict[str, str]:
    """`pip config list` as {"global.index-url": value, ":env:.index-url": value, ...}: pip's own
    reading of its files and environment (empty when pip cannot be run, or would wait on a
    configuration file that is a FIFO: campaign 18, R06)."""
    if pipfiles.blocking_configuration() is not None:
        return {}
    try:
        listed = subprocess.run(python_command("-m", "pip", "config", "list"), capture_output=True,
                                text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return {}
    found = {}
    for line in numbered_lines(listed.stdout):
        key, equals, value = line.partition("=")
        if equals:
            found[key.strip()] = value.strip().strip("'\"")
    return found


def _setting(config: dict[str, str], name: str) -> str | None:
    """A pip setting as `pip install` sees it: its environment variable over its `install`
    section over its `global` one."""
    for section in (":env:", "install", "global"):
        if f"{section}.{name}" in config:
            return config[f"{section}.{name}"]
    return None


def configured_index(explicit: str | None = None) -> IndexSettings:
    """The indexes to read: `explicit` (a URL, or a folder holding a simple index) alone when
    given, else pip's index and extra indexes."""
    config = _pip_config()
    cafile = _setting(config, "cert")
    settings = dict(timeout=_seconds(_setting(config, "timeout") or _setting(config, "default-timeout")),
                    cafile=cafile if cafile and os.path.isfile(cafile) else None)
    if explicit:
        return IndexSettings((as_url(explicit),), **settings)
    main = _setting(config, "index-url") or PYPI
    extras = (_setting(config, "extra-index-url") or "").split()
    return IndexSettings(tuple(dict.fromkeys([main, *extras])), **settings)


def _seconds(text: str | None) -> float:
    """pip's `timeout` setting, else the default (a value pip would refuse too)."""
    try:
        seconds = float(text) if text else DEFAULT_TIMEOUT
    except ValueError:
        return DEFAULT_TIMEOUT
    return seconds if 0 < seconds < 3600 else DEFAULT_TIMEOUT


def as_url(location: str) -> str:
    """An index named by URL, or by a folder on disk (then as a `file://` URL), its links left to
    the reading (a link that leads back to itself, or a 300-byte name, is an index that cannot be
    read there, not an error of every run: campaign 17, R07)."""
    if re.match(r"[a-z][a-z0-9+.-]*://", location, re.I):
        return location
    return Path(os.path.abspath(Path(location).expanduser())).as_uri()


def _read_within(response: Any, most: int, url: str, timeout: float) -> bytes:
    """At most `most` bytes of a response, read within READ_DEADLINES x the timeout in all: the
    timeout bounds each read of the socket, and a server that sends a byte every few seconds
    kept a run waiting for good (eighth campaign, Q02)."""
    deadline = time.monotonic() + READ_DEADLINES * timeout
    chunks, left = [], most
    while left > 0:
        chunk = response.read1(min(left, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
        if time.monotonic() > deadline:
            raise IndexUnreachable(f"{_host(url)}: answers too slowly (still sending after "
                                   f"{READ_DEADLINES * timeout:.0f} s)")
    return b"".join(chunks)


@dataclass(frozen=True)
class IndexFile:
    filename: str
    url: str
    metadata_offered: bool  # PEP 658/714: `<url>.metadata` holds its METADATA


def _file_page(url: str, most: int) -> tuple[bytes, str]:
    """PackageIndex._get of a `file:` URL: a folder's index.html, or the file."""
    path = _file_path(url)
    try:
        if path.is_dir():  # pathlib lets ENAMETOOLONG out (campaign 17, R07)
            path = path / "index.html"
        with open_regular(path) as handle:
            return handle.read(most + 1)[:most], "text/html"
    except (FileNotFoundError, NotADirectoryError):
        raise FileNotFoundError(url) from None
    except Unreadable as unreadable:
        raise IndexUnreachable(f"{shown_url(url)}: {unreadable.reason}") from None
    except OSError as error:
        raise IndexUnreachable(f"{shown_url(url)}: {error.strerror or error}") from None


def _ranked_wheels(links: list[tuple[str, str, bool]], wanted: Version | None,
                   page: str) -> list[tuple[int, IndexFile]]:
    """(rank of its platform among PREFERRED_PLATFORMS, file) of each wheel of version `wanted`
    the page links to (`links`: (filename, href, whether its metadata is offered))."""
    found = []
    for filename, href, offered in links:
        try:
            _, file_version, _, tags = parse_wheel_filename(filename)
        except InvalidWheelFilename:
            continue  # a source distribution, or not a distribution at all
        if file_version == wanted:
            platform = " ".join(tag.platform for tag in tags)
            rank = next((i for i, p in enumerate(PREFERRED_PLATFORMS) if p in platform), len(PREFERRED_PLATFORMS))
            try:
                url = urllib.parse.urljoin(page, href.split("#")[0])
            except ValueError:  # a link no URL parser takes (`http://[zz/`): the page's, not the run's fault
                continue
            found.append((rank, IndexFile(filename, url, offered)))
    return found


class PackageIndex:
    def __init__(self, settings: IndexSettings) -> None:
        import ssl
        import urllib.request

        from sglang_contracts.closure.connections import RememberedAddresses, remembering_handlers

        self.settings = settings
        context = ssl.create_default_context(cafile=settings.cafile) if settings.cafile else None
        self.addresses = RememberedAddresses()  # each host looked up once (closure/connections.py)
        self._opener = urllib.request.build_opener(*remembering_handlers(self.addresses, context))
        # A `file:` index is read only below its own folder, links resolved: its pages are the
        # project's (a pull request's) files when the setting names a folder of it, and a link
        # to `file:///proc/self/environ` or out of the folder put what it names in the closure
        # records (eighth campaign, Q01). An http index's pages name no `file:` URL either.
        self._file_roots = [os.path.realpath(_file_path(url)) for url in settings.urls if url.startswith("file:")]
        # An index's credentials go with every request to its host, as pip sends them (the files
        # its pages link to are on that host too), never to another host.
        self._authorizations = {_host(url): authorization for url in settings.urls
                                for _, authorization in [_credentials(url)] if authorization}

    def _request(self, url: str, headers: dict[str, str]) -> Any:
        """The urllib request of `url`, with the credentials of its index's host."""
        import urllib.request

        url, authorization = _credentials(url)
        authorization = authorization or self._authorizations.get(_host(url))
        return urllib.request.Request(url, headers={**headers, **({"Authorization": authorization}
                                                                  if authorization else {})})

    def _confined(self, url: str) -> bool:
        """Whether a `file:` URL is below one of the index's `file:` folders (links resolved)."""
        real = os.path.realpath(_file_path(url))
        return any(real == root or real.startswith(os.path.join(root, "")) for root in self._file_roots)

    def _get(self, url: str, headers: dict[str, str] | None = None, most: int = MOST_PAGE_BYTES) -> tuple[bytes, str]:
        """(body, content type) of `url`; FileNotFoundError for a page the index does not have
        (or a `file:` one out of its folder: _confined), IndexUnreachable when the index does
        not answer."""
        if url.startswith("file:"):
            if not self._confined(url):
                raise FileNotFoundError(url)
            return _file_page(url, most)
        return self._http_page(url, headers, most)

    def _http_page(self, url: str, headers: dict[str, str] | None, most: int) -> tuple[bytes, str]:
        import http.client
        import urllib.error

        try:
            with self._opener.open(self._request(url, headers or {}), timeout=self.settings.timeout) as response:
                body = _read_within(response, most, url, self.settings.timeout)
                return body, response.headers.get("Content-Type", "")
        except urllib.error.HTTPError as error:
            if error.code in (404, 410):
                raise FileNotFoundError(url) from None
            raise IndexUnreachable(f"{shown_url(url)}: HTTP {error.code}") from None
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as error:  # IncompleteRead too
            reason = getattr(error, "reason", None) or error
            raise IndexUnreachable(f"{_host(url)}: {reason}") from None

    def files(self, name: str, version: str) -> list[IndexFile]:
        """The wheels of `name` at `version` on the first index that lists any, the preferred
        platforms first."""
        wanted = as_version(version)
        for base in self.settings.urls:
            try:
                page = urllib.parse.urljoin(base.rstrip("/") + "/", f"{normalized(name)}/")
            except ValueError as error:  # an index setting no URL parser takes (`https://[::1/simple`)
                raise IndexUnreachable(f"{shown_url(base)}: not a URL ({error})") from None
            try:
                body, kind = self._get(page, {"Accept": JSON_ACCEPT})
            except FileNotFoundError:
                continue
            links = _json_links(body) if "json" in kind else _html_links(body)
            found = _ranked_wheels(links, wanted, page)
            if found:
                return [file for _, file in sorted(found, key=lambda pair: pair[0])]
        return []

    def metadata_text(self, name: str, version: str) -> str | None:
        """The METADATA of `name` at `version`, or None when no index has a wheel of it."""
        files = self.files(name, version)
        for file in files[:3]:
            if file.metadata_offered or file.url.startswith("file:"):
                try:
                    body, _ = self._get(file.url + ".metadata", most=MOST_METADATA_BYTES)
                    return body.decode("utf-8", "replace")
                except FileNotFoundError:
                    pass
            text = self._metadata_in_wheel(file)
            if text is not None:
                return text
        return None

    def _metadata_in_wheel(self, file: IndexFile) -> str | None:
        if file.url.startswith("file:"):
            if not self._confined(file.url):
                return None
            try:
                with open_regular(_file_path(file.url)) as archive:
                    return _metadata_member(zipfile.ZipFile(archive))
            except (OSError, Unreadable, zipfile.BadZipFile, zlib.error, EOFError, ValueError):
                return None
        try:
            return _metadata_member(zipfile.ZipFile(_RemoteArchive(self, file.url)))
        except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, FileNotFoundError):
            return None


def _file_path(url: str) -> Path:
    from urllib.request import url2pathname

    try:
        path = urllib.parse.urlparse(url).path
    except ValueError:  # a host no parser takes (`file://[zz/x`): the path after it, as urlparse splits one
        rest = url.partition(":")[2].removeprefix("//")
        path = "/" + rest.partition("/")[2].split("?", 1)[0].split("#", 1)[0]
    return Path(url2pathname(path))


# A URL's user and password (`https://user:token@host/simple`: pip's usual form for a private
# index, in PIP_INDEX_URL or pip.conf), up to the netloc's last `@` as urllib splits it; in a
# text, a URL ends at a space or a quote.
_USERINFO = re.compile(r"\b([a-z][a-z0-9+.-]{0,31}://)([^/?#\s'\"]*)@", re.I)


def shown_url(text: str) -> str:
    """`text` (a URL, or a message quoting URLs) as a message may show it: without the user and
    password a URL may carry. An index's messages reach the report, and the report a pull
    request's body."""
    return _USERINFO.sub(r"\1", text)


def _host(url: str) -> str:
    shown = shown_url(url)
    return shown.partition("://")[2].split("/", 1)[0] or shown


def _credentials(url: str) -> tuple[str, str | None]:
    """(`url` without its user and password, the HTTP Basic `Authorization` they make or None):
    urllib sends no credentials of a URL, and takes `user:token@host` for the host."""
    match = _USERINFO.match(url)
    if match is None:
        return url, None
    user, _, password = match.group(2).partition(":")
    token = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}".encode()
    return shown_url(url), "Basic " + base64.b64encode(token).decode("ascii")


def _json_links(body: bytes) -> list[tuple[str, str, bool]]:
    try:
        page = json.loads(body)
        return [(f["filename"], f["url"], bool(f.get("core-metadata") or f.get("dist-info-metadata")))
                for f in page.get("files", []) if isinstance(f, dict) and isinstance(f.get("filename"), str)
                and isinstance(f.get("url"), str)]
    except (ValueError, AttributeError, RecursionError):
        return []


def _html_links(body: bytes) -> list[tuple[str, str, bool]]:
    from sglang_contracts.closure.anchors import Anchors

    parser = Anchors()
    try:
        parser.feed(body.decode("utf-8", "replace"))
    except (AssertionError, ValueError):  # HTMLParser on markup it cannot follow
        pass
    return [(text or href.split("#")[0].rsplit("/", 1)[-1], href, offered) for text, href, offered in parser.links]


def _metadata_member(archive: zipfile.ZipFile) -> str | None:
    """The `*.dist-info/METADATA` at the top of a wheel, decoded."""
    with archive:
        for info in archive.infolist():
            parts = info.filename.split("/")
            if len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] == "METADATA":
                if info.file_size > MOST_METADATA_BYTES:
                    return None
                return archive.read(info).decode("utf-8", "replace")
    return None


class _RemoteArchive(io.RawIOBase):
    """A remote file read by HTTP ranges, as zipfile reads an archive: seek to the end for the
    central directory, then to one member. The last TAIL_BYTES are read in one request."""

    def __init__(self, index: PackageIndex, url: str) -> None:
        super().__init__()
        self._index, self._url, self._at = index, url, 0
        body, _, total = self._range(f"-{TAIL_BYTES}")
        self._size = total if total is not None else len(body)
        self._tail_start = self._size - len(body)
        self._tail = body
        self._block: tuple[int, bytes] = (0, b"")

    def _range(self, spec: str) -> tuple[bytes, str, int | None]:
        import http.client
        import urllib.error

        request = self._index._request(self._url, {"Range": f"bytes={spec}"})
        try:
            with self._index._opener.open(request, timeout=self._index.settings.timeout) as response:
                if response.status != 206:
                    raise ValueError("the server does not serve ranges")  # a whole wheel is not read for its metadata
                content_range = response.headers.get("Content-Range", "")
                total = content_range.rpartition("/")[2]
                body = _read_within(response, MOST_PAGE_BYTES, self._url, self._index.settings.timeout)
                return body, content_range, int(total) if total.isdigit() else None
        except urllib.error.HTTPError as error:
            if error.code in (404, 410):
                raise FileNotFoundError(self._url) from None
            raise IndexUnreachable(f"{_host(self._url)}: HTTP {error.code}") from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
            raise IndexUnreachable(f"{_host(self._url)}: {getattr(error, 'reason', None) or error}") from None

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._at

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._at, io.SEEK_END: self._size}[whence]
        self._at = max(0, base + offset)
        return self._at

    def read(self, size: int = -1) -> bytes:
        end = self._size if size is None or size < 0 else min(self._size, self._at + size)
        if end <= self._at:
            return b""
        if self._at >= self._tail_start:
            data = self._tail[self._at - self._tail_start:end - self._tail_start]
        elif end >= self._tail_start:  # the central directory, which starts before the tail read at first
            if self._tail_start - self._at > MOST_PAGE_BYTES:
                raise ValueError("a central directory larger than any wheel's")
            data = self._range(f"{self._at}-{self._tail_start - 1}")[0] + self._tail[:end - self._tail_start]
        else:
            if end - self._at > MOST_METADATA_BYTES:
                raise ValueError("a read larger than any metadata member")
            block_start, block = self._block
            if not (block_start <= self._at and end <= block_start + len(block)):
                # zipfile reads a member's header, name and data in small reads: one request
                # reads ahead for all of them
                ahead = min(self._tail_start, max(end, self._at + TAIL_BYTES))
                block_start, block = self._at, self._range(f"{self._at}-{ahead - 1}")[0]
                self._block = (block_start, block)
            data = block[self._at - block_start:end - block_start]
        self._at += len(data)
        return data

    def readinto(self, buffer) -> int:  # io.RawIOBase's other reader
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)
