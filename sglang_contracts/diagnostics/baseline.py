"""Baselines: a file of accepted findings, so CI reports only the breaks that are new.

An entry names its code, path and symbol, the fingerprint of its line (the code, path, symbol
and the line's text, not its number) and a justification a person writes. Matching is a
multiset match, first on the fingerprint, then on code, path and symbol alone: moving
unrelated lines changes nothing, and editing the reported line itself keeps the entry as
long as it is still about the same symbol in the same file.
"""

from __future__ import annotations

import json
import os
import stat
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from sglang_contracts.infra.cache import atomic_write_bytes
from sglang_contracts.diagnostics import Diagnostic
from sglang_contracts.infra.display import printable
from sglang_contracts.infra.errors import UsageError, shown
from sglang_contracts.infra.files import Unreadable, read_limited
from sglang_contracts.infra.output import write_file, writing

FORMAT_VERSION = 1
FIELDS = ("code", "path", "symbol", "fingerprint", "justification")


@dataclass(frozen=True)
class Entry:
    code: str
    path: str  # relative to the project root
    symbol: str
    fingerprint: str
    justification: str = ""
    line: int = 0  # where it was when written; informative only
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "path": self.path, "symbol": self.symbol, "line": self.line,
                "message": self.message, "fingerprint": self.fingerprint, "justification": self.justification}


def read_baseline(path: Path) -> list[Entry]:
    findings = _baseline_findings(path)
    entries = []
    for number, raw in enumerate(findings, start=1):
        if not isinstance(raw, dict) or not all(isinstance(raw.get(key, ""), str) for key in FIELDS) \
                or not raw.get("code") or not raw.get("path"):
            raise UsageError(f"{path}: finding {number} needs string fields code, path, symbol, fingerprint, justification")
        line = raw.get("line", 0)
        entries.append(Entry(raw["code"], raw["path"], raw.get("symbol", ""), raw.get("fingerprint", ""),
                             raw.get("justification", ""), line if isinstance(line, int) else 0,
                             str(raw.get("message", ""))))
    return entries


class _KeyTwice(ValueError):
    pass


def _each_key_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each given once: JSON keeps the last of two, so a second
    "findings" list far down a baseline accepted what the first, the one a reviewer reads, did not
    (campaign 17, R03)."""
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise _KeyTwice(key)
        seen.add(key)
    return dict(pairs)


def _baseline_findings(path: Path) -> list:
    """The baseline file's "findings" list, as JSON has it; a UsageError for any other file."""
    try:
        data = json.loads(read_limited(path), object_pairs_hook=_each_key_once)
    except Unreadable as error:
        raise UsageError(f"{path}: cannot read the baseline ({error.reason})") from None
    except _KeyTwice as error:
        raise UsageError(f"{path}: the baseline gives {shown(str(error))!r} twice in one object: keep one") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise UsageError(f"{path}: the baseline is not valid JSON ({error})") from None
    except RecursionError:
        raise UsageError(f"{path}: the baseline is not valid JSON (nested too deeply)") from None
    findings = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(findings, list):
        raise UsageError(f"{path}: not a sglang-contracts baseline (no \"findings\" list)")
    return findings


def match(diagnostics: list[Diagnostic], entries: list[Entry]) -> tuple[list[Diagnostic], dict[int, Entry], list[Entry]]:
    """(diagnostics no entry accepts, index of each accepted diagnostic -> its entry, unused entries)."""
    by_fingerprint: dict[tuple, list[Entry]] = defaultdict(list)
    by_symbol: dict[tuple, list[Entry]] = defaultdict(list)
    for entry in entries:
        by_fingerprint[(entry.code, entry.path, entry.symbol, entry.fingerprint)].append(entry)
    accepted: dict[int, Entry] = {}
    _accept(diagnostics, accepted, by_fingerprint, lambda d: (d.code, d.path, d.symbol, d.fingerprint))
    for bucket in by_fingerprint.values():
        for entry in bucket:
            by_symbol[(entry.code, entry.path, entry.symbol)].append(entry)
    _accept(diagnostics, accepted, by_symbol, lambda d: (d.code, d.path, d.symbol))
    new = [d for index, d in enumerate(diagnostics) if index not in accepted]
    unused = [entry for bucket in by_symbol.values() for entry in bucket]
    return new, accepted, unused


def _accept(diagnostics: list[Diagnostic], accepted: dict[int, Entry], buckets: dict[tuple, list[Entry]],
            key: Callable[[Diagnostic], tuple]) -> None:
    """Each diagnostic not yet `accepted` takes the first entry left in its bucket (by `key`), if any."""
    for index, d in enumerate(diagnostics):
        if index in accepted:
            continue
        bucket = buckets.get(key(d))
        if bucket:
            accepted[index] = bucket.pop(0)


def write_baseline(path: Path, diagnostics: list[Diagnostic], previous: list[Entry]) -> int:
    """Write every finding as accepted; justifications already written for a finding are kept."""
    _, accepted, _ = match(diagnostics, previous)
    entries = [
        Entry(d.code, d.path, d.symbol, d.fingerprint, accepted[i].justification if i in accepted else "",
              d.line, d.message)
        for i, d in enumerate(diagnostics)
    ]
    document = {
        "tool": "sglang-contracts",
        "version": FORMAT_VERSION,
        "about": "Accepted findings: `sglang-contracts check --baseline FILE` reports only others. "
                 "Write in each justification why the finding is accepted.",
        "findings": [entry.to_json() for entry in entries],
    }
    data = (json.dumps(document, indent=2) + "\n").encode()
    if _regular_or_absent(path) or not written_through(path):
        with writing(path):
            atomic_write_bytes(path, data)  # whole or not at all; a link is replaced, never written through
    else:  # a stream the user named (/dev/stdout, /dev/full, a FIFO): written to, never replaced
        write_file(path, data)
    return len(entries)


def written_through(path: Path) -> bool:
    """Whether a baseline named by `path` is written to rather than replaced: a FIFO or a
    character device, itself or at the end of the user's link (/dev/stdout). A link to a file
    (one a pull request can commit, pointing out of the project) is replaced, its target never
    written; a block device is refused."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    if stat.S_ISBLK(mode):
        raise UsageError(f"{printable(str(path))}: a block device, not written as the baseline")
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def previous_entries(path: Path) -> list[Entry]:
    """The justifications a baseline already at `path` holds: a regular file's, never a link's
    (`--baseline` does not read a link either)."""
    return read_baseline(path) if not path.is_symlink() and path.is_file() else []


def _regular_or_absent(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except FileNotFoundError:
        return True
    except OSError:
        return False
