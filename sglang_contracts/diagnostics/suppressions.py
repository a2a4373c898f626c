"""What the user silences or re-grades after the checks: `# noqa`, per-file ignores, severity overrides.

Diagnostics may point at any project file, not only the Python files the scanner read
(a Dockerfile, pyproject.toml, a .patch): their text is read here when needed.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from sglang_contracts.diagnostics import Diagnostic, code_selected, longest_prefix, noqa_silences
from sglang_contracts.infra.files import Unreadable, read_text_limited
from sglang_contracts.infra.lines import numbered_lines
from sglang_contracts.project.facts import FileFacts

UNUSED_NOQA = "SGC010"
INTERNAL_ERROR = "SGC001"
# Rules the runner reports itself (from what the checks found), not a registered check.
RUNNER_RULES = {UNUSED_NOQA, INTERNAL_ERROR}


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
    it): each compiled once, and what each path matched kept. Matched one by one through
    fnmatch, thousands of configured globs were compiled again for every finding, past fnmatch's
    cache of 32,768 (campaign 9, R23: 20,000 per-file-ignores kept a run past 100 s)."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self._compiled = [re.compile(f"{fnmatch.translate(glob)}|{fnmatch.translate(glob + '/*')}")
                          for glob in map(_relative_glob, patterns)]
        self._matched: dict[str, tuple[int, ...]] = {}

    def matched(self, relpath: str) -> tuple[int, ...]:
        """The indexes of the patterns the path matches."""
        found = self._matched.get(relpath)
        if found is None:
            found = self._matched[relpath] = tuple(n for n, glob in enumerate(self._compiled) if glob.match(relpath))
        return found

    def matches(self, relpath: str) -> bool:
        return bool(self.matched(relpath))


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
