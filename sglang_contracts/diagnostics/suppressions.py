"""What the user silences or re-grades after the checks: `# noqa`, per-file ignores, severity overrides.

Diagnostics may point at any project file, not only the Python files the scanner read
(a Dockerfile, pyproject.toml, a .patch): their text is read here when needed.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from sglang_contracts.diagnostics import Diagnostic, code_selected, longest_prefix, noqa_silences
from sglang_contracts.infra.files import Unreadable, read_text_limited
from sglang_contracts.infra.lines import numbered_lines
from sglang_contracts.project.facts import FileFacts

UNUSED_NOQA = "SGC010"
INTERNAL_ERROR = "SGC001"
# Rules the runner reports itself (from what the checks found), not a registered check.
RUNNER_RULES = {UNUSED_NOQA, INTERNAL_ERROR}
_WILDCARD = re.compile(r"[*?[]")  # what a glob's literal text ends at (a `[` may open a class)


@dataclass
class ProjectText:
    """Lines of project files, read once each; a file that cannot be read has no lines."""

    root: Path
    _lines: dict[str, list[str]] = field(default_factory=dict)

    def lines(self, relpath: str) -> list[str]:
        if relpath not in self._lines:
            try:
                self._lines[relpath] = numbered_lines(read_text_limited(self.root / relpath, within=self.root))
            except (Unreadable, ValueError):  # a FIFO, a device, a file too large: no lines
                self._lines[relpath] = []
        return self._lines[relpath]

    def line(self, relpath: str, number: int) -> str:
        lines = self.lines(relpath)
        return lines[number - 1] if 0 < number <= len(lines) else ""


@dataclass
class NoqaIndex:
    """`# noqa` comments of every file a diagnostic points at, and which of them were used."""

    files: dict[str, FileFacts]
    text: ProjectText
    _other: dict[str, dict[int, list[str] | None]] = field(default_factory=dict)
    used: set[tuple[str, int, str | None]] = field(default_factory=set)  # (path, line, code or None=blanket)

    def comments(self, relpath: str) -> dict[int, list[str] | None]:
        facts = self.files.get(relpath)
        if facts is not None:
            return facts.noqa
        if relpath not in self._other:  # not a scanned Python file: read its comments now
            from sglang_contracts.project.scanner import parse_noqa

            # A patch's lines are upstream's code: a `# noqa` in them is not the project's.
            patch = relpath.endswith((".patch", ".diff"))
            self._other[relpath] = {} if patch else parse_noqa("\n".join(self.text.lines(relpath)))
        return self._other[relpath]

    def suppresses(self, diagnostic: Diagnostic) -> bool:
        comments = self.comments(diagnostic.path)
        if not noqa_silences(comments, diagnostic.line, diagnostic.code):
            return False
        blanket = comments[diagnostic.line] is None
        self.used.add((diagnostic.path, diagnostic.line, None if blanket else diagnostic.code))
        return True

    def unused(self, active: Callable[[str, str], bool], wanted: Callable[[str], bool]) -> Iterable[Diagnostic]:
        """`# noqa: SGCnnn` codes that silenced nothing (like ruff's RUF100).

        Only our own codes, and only codes that were checked for that file, can be judged; a
        blanket `# noqa` may be there for another tool and is never reported.
        """
        from sglang_contracts.diagnostics.catalog import rule

        entry = rule(UNUSED_NOQA)
        for relpath, facts in sorted(self.files.items()):
            if not wanted(relpath):
                continue
            for line, codes in sorted(facts.noqa.items()):
                unused = [code for code in codes or [] if code.startswith("SGC") and active(code, relpath)
                          and (relpath, line, code) not in self.used]
                if unused:
                    yield self._unused_noqa_finding(entry, relpath, line, unused)

    def _unused_noqa_finding(self, entry: Any, relpath: str, line: int, unused: list[str]) -> Diagnostic:
        """The SGC010 finding for the `unused` codes of the `# noqa` comment on the line, at the comment."""
        from sglang_contracts.project.scanner import NOQA

        match = NOQA.search(self.text.line(relpath, line))
        col = match.start() + 1 if match else 1
        return Diagnostic(
            path=relpath, line=line, col=col, code=UNUSED_NOQA, severity=entry.severity,
            message=entry.render({"codes": ", ".join(unused), "symbol": ""}), symbol="",
            end_line=line if match else None, end_col=match.end() + 1 if match else None,
        )


class PathGlobs:
    """Globs matched against project-relative POSIX paths (a folder pattern covers what is below
    it), and what each path matched kept. Matched one by one through fnmatch, thousands of
    configured globs were compiled again for every finding, past fnmatch's cache of 32,768
    (campaign 9, R23); compiled once each, every path was still tried against every glob: 20,000
    excludes and 20,000 per-file-ignores over 2,000 files took 45 s (campaign 14, R06). Each glob
    is filed under a run of the text its matches hold as it is (_LiteralKey), and a path is tried
    only against the globs whose run it holds there, each compiled when first tried."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self._globs = [_relative_glob(pattern) for pattern in patterns]
        self._compiled: dict[int, re.Pattern[str]] = {}
        self._keys = {where: _LiteralKey() for where in ("head", "tail", "inside")}
        self._everywhere: list[int] = []  # globs of wildcards and classes only: tried on every path
        filings = [_filings(glob) for glob in self._globs]
        # Filed under the run fewest globs share: 20,000 `sglang/srt/*_{n}.py` by their tails.
        shared = Counter(filing for each in filings for filing in set(each))
        for n, each in enumerate(filings):
            if each:
                where, run = min(each, key=lambda filing: (shared[filing], -len(filing[1])))
                self._keys[where].file(run, n)
            else:
                self._everywhere.append(n)
        self._matched: dict[str, tuple[int, ...]] = {}

    def matched(self, relpath: str) -> tuple[int, ...]:
        """The indexes of the patterns the path matches."""
        found = self._matched.get(relpath)
        if found is None:
            found = self._matched[relpath] = tuple(n for n in sorted(self._candidates(relpath))
                                                   if self._pattern(n).match(relpath))
        return found

    def matches(self, relpath: str) -> bool:
        return bool(self.matched(relpath))

    def _candidates(self, relpath: str) -> set[int]:
        """The globs whose literal run the path holds where a match would: a glob matches the path
        itself or a folder it is in (`tests` covers `tests/x.py`), which begins where the path does."""
        folders = [relpath[:end] for end, char in enumerate(relpath) if char == "/"]
        candidates = set(self._everywhere)
        candidates.update(self._keys["head"].filed(relpath[:length] for length in self._keys["head"].lengths))
        candidates.update(self._keys["tail"].filed(subject[-length:] for subject in [*folders, relpath]
                                                   for length in self._keys["tail"].lengths if length <= len(subject)))
        candidates.update(self._keys["inside"].filed(relpath[start:start + length]
                                                     for length in self._keys["inside"].lengths
                                                     for start in range(len(relpath) - length + 1)))
        return candidates

    def _pattern(self, n: int) -> re.Pattern[str]:
        pattern = self._compiled.get(n)
        if pattern is None:
            glob = self._globs[n]
            pattern = self._compiled[n] = re.compile(f"{fnmatch.translate(glob)}|{fnmatch.translate(glob + '/*')}")
        return pattern


@dataclass
class _LiteralKey:
    """Globs filed by a run of literal text: which globs each run stands for, and the runs' lengths
    (the slices of a path worth looking up)."""

    globs: dict[str, list[int]] = field(default_factory=dict)
    lengths: set[int] = field(default_factory=set)

    def file(self, run: str, n: int) -> None:
        self.globs.setdefault(run, []).append(n)
        self.lengths.add(len(run))

    def filed(self, slices: Iterable[str]) -> Iterator[int]:
        for text in slices:
            yield from self.globs.get(text, ())


def _filings(glob: str) -> list[tuple[str, str]]:
    """The glob's literal runs, each with where it stands in what the glob matches ("head": at the
    start, "tail": at the end, "inside": anywhere); a literal glob is its own head. At equal
    sharing an end is preferred, listed first: fewer slices of a path are looked up for it."""
    runs = _literal_runs(glob)
    # A run is filed by its first (a tail's: last) FILED_RUN characters, which a path holding the
    # run holds too: each length filed is a slice of every path looked up, and 999 lengths over
    # 2,000 paths of 420 characters took 94 s (campaign 19).
    filings = [("head", runs[0][:FILED_RUN])] if len(runs) == 1 else [
        ("head", runs[0][:FILED_RUN]), ("tail", runs[-1][-FILED_RUN:]),
        *(("inside", run[:FILED_RUN]) for run in runs[1:-1])]
    return [(where, run) for where, run in filings if run]


FILED_RUN = 12


def _literal_runs(glob: str) -> list[str]:
    """The glob's text between its wildcards (`*`, `?`) and bracket classes, in order: an empty run
    first or last when it begins or ends with one. A class reaches as far as fnmatch reads it
    (`[!]x]` is one class); a `[` that no `]` closes is cut at too, which only shortens runs."""
    runs, start, last_closing = [], 0, glob.rfind("]")
    while (wildcard := _WILDCARD.search(glob, start)) is not None:
        runs.append(glob[start:wildcard.start()])
        start = _class_end(glob, wildcard.start(), last_closing) if wildcard.group() == "[" else wildcard.end()
    return [*runs, glob[start:]]


def _class_end(glob: str, opening: int, last_closing: int) -> int:
    """Where the bracket class opened at `opening` ends, as fnmatch.translate reads it (a `]`
    right after `[` or `[!` is one of its characters), or just after the `[` if nothing closes it
    (known from the glob's last `]`: a glob of many `[` is not searched to its end from each)."""
    at = opening + 1
    if glob.startswith("!", at):
        at += 1
    if glob.startswith("]", at):
        at += 1
    return opening + 1 if at > last_closing else glob.find("]", at) + 1


def _relative_glob(pattern: str) -> str:
    """`./tests/*` as the paths it is matched with are written (`tests/x.py`): a leading `./`
    made a glob match no file, silently."""
    glob = pattern.strip("/")
    while glob.startswith("./"):
        glob = glob[2:].lstrip("/")
    return glob


class FileIgnores:
    """The per-file-ignores setting: glob -> the code prefixes ignored in the files it matches."""

    def __init__(self, per_file_ignores: dict[str, list[str]]) -> None:
        self._globs = PathGlobs(per_file_ignores)
        self._prefixes = list(per_file_ignores.values())
        self._by_file: dict[str, list[str]] = {}

    def ignored(self, code: str, relpath: str) -> bool:
        prefixes = self._by_file.get(relpath)
        if prefixes is None:
            prefixes = self._by_file[relpath] = sorted({prefix for n in self._globs.matched(relpath)
                                                        for prefix in self._prefixes[n]})
        return longest_prefix(code, prefixes) is not None


def code_active(code: str, relpath: str, select: list[str], ignore: list[str], per_file_ignores: FileIgnores) -> bool:
    return code_selected(code, select, ignore) and not per_file_ignores.ignored(code, relpath)


def override_severity(diagnostic: Diagnostic, overrides: dict[str, str]) -> Diagnostic:
    """The configured severity for the longest matching code prefix; contracts already broken on
    the old release (info) stay info, whatever their rule's severity is set to."""
    prefix = longest_prefix(diagnostic.code, overrides)
    if prefix is None or diagnostic.severity == "info" or overrides[prefix] == diagnostic.severity:
        return diagnostic
    return dataclasses.replace(diagnostic, severity=overrides[prefix])
