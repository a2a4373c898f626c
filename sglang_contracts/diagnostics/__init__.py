"""Diagnostics: what a contract reports, and the filters a user applies (select, ignore, noqa)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

from sglang_contracts.config import SEVERITY_VALUES
from sglang_contracts.diagnostics.catalog import rule, surface_for
from sglang_contracts.project.facts import FileFacts, Position

T = TypeVar("T")


@dataclass(frozen=True)
class Diagnostic:
    path: str
    line: int
    col: int
    code: str
    severity: str  # error, warning, or info (a contract already broken on the old release)
    message: str
    symbol: str  # the upstream qualified name the contract is about
    # Filled in after the checks (runner.enrich) where a check did not: not part of identity.
    end_line: int | None = field(default=None, compare=False)
    end_col: int | None = field(default=None, compare=False)  # exclusive, 1-based
    old: dict[str, Any] | None = field(default=None, compare=False)  # what the old release says of `symbol`
    new: dict[str, Any] | None = field(default=None, compare=False)
    fingerprint: str = field(default="", compare=False)  # stable across unrelated line moves
    # The fields the message was rendered from (and any a check adds for its fix, such as the
    # verified new home of a moved name): what a fix reads instead of parsing the message.
    data: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    # `path:line:col` of the finding this one is reported under: a break of the module serving
    # the old release only, listed as what the new release's module must change under the
    # SGC106 that says no code serves the new release (check/served.py)
    grouped_under: str | None = field(default=None, compare=False)

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.col, self.code, self.message)

    def to_json(self) -> dict[str, Any]:  # the reporters' record: `data` stays internal
        return {
            "path": self.path, "line": self.line, "col": self.col, "end_line": self.end_line,
            "end_col": self.end_col, "code": self.code, "severity": self.severity,
            "surface": surface_for(self.code).key, "message": self.message, "symbol": self.symbol,
            "old": self.old, "new": self.new, "fingerprint": self.fingerprint,
            **({"grouped_under": self.grouped_under} if self.grouped_under else {}),
        }

    def to_record(self) -> dict[str, Any]:
        """to_json's, with the facts JSON holds as they are (`data`'s strings, numbers, lists of
        them): what a cache record keeps of a finding, so that a replayed or reused finding
        serves a report and a fix as the computed one did (the markdown report's safe fixes)."""
        return {**self.to_json(), "data": {key: value for key, value in self.data.items() if _plain(value)}}

    @classmethod
    def from_record(cls, item: dict[str, Any]) -> "Diagnostic":
        """A finding to_record kept; TypeError for one of another shape."""
        diagnostic, data = cls.from_json(item), item.get("data")
        if data is None:
            return diagnostic
        if type(data) is not dict:
            raise TypeError("a kept finding's facts of another shape")
        return dataclasses.replace(diagnostic, data=data)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Diagnostic":
        """A finding a record kept (to_json's); TypeError for one of another shape (a record's
        reader then computes it again rather than fail later on a message that is a number)."""
        diagnostic = cls(**{key: value for key, value in data.items() if key not in ("surface", "data")})
        if not _of_the_kept_shape(diagnostic):
            raise TypeError("a kept finding of another shape")
        return diagnostic


_TEXTS = ("path", "code", "severity", "message", "symbol", "fingerprint")


def _plain(value: Any) -> bool:
    return value is None or type(value) in (str, int, float, bool) or (
        type(value) is list and all(_plain(item) for item in value))


def _of_the_kept_shape(diagnostic: Diagnostic) -> bool:
    """Whether each field of a finding read back has the type to_json gives it."""
    return (all(type(getattr(diagnostic, name)) is str for name in _TEXTS)
            and all(type(getattr(diagnostic, name)) is int for name in ("line", "col"))
            and all(type(value) in (int, type(None)) for value in (diagnostic.end_line, diagnostic.end_col))
            and all(type(value) in (dict, type(None)) for value in (diagnostic.old, diagnostic.new))
            and type(diagnostic.grouped_under) in (str, type(None)))


def finding(code: str, facts: FileFacts, position: Position, symbol: str, *,
            severity: str | None = None, **fields: Any) -> Diagnostic:
    """A diagnostic for `code`, its message rendered from the catalog's template."""
    return finding_at(code, facts.path, position.line, position.col, symbol, severity=severity, **fields)


def finding_at(code: str, path: str, line: int, col: int, symbol: str, *,
               severity: str | None = None, **fields: Any) -> Diagnostic:
    """The same for a place in any project file (a Dockerfile, a pyproject, a .patch)."""
    entry = rule(code)
    fields = {"symbol": symbol, **fields}
    return Diagnostic(
        path=path,
        line=line,
        col=col,
        code=code,
        severity=severity or entry.severity,
        message=entry.render(fields, unresolved=severity == "info"),
        symbol=symbol,
        data=fields,
    )


def longest_prefix(code: str, prefixes: Iterable[str]) -> str | None:
    """The longest of `prefixes` that `code` starts with."""
    return max((p for p in prefixes if code.startswith(p)), key=len, default=None)


def code_selected(code: str, select: Iterable[str], ignore: Iterable[str]) -> bool:
    """ruff's prefix semantics: the longest matching prefix of --select/--ignore decides."""
    best_select = longest_prefix(code, select)
    best_ignore = longest_prefix(code, ignore)
    return best_select is not None and (best_ignore is None or len(best_select) > len(best_ignore))


# Findings of one rule a file lists at most: past them, one more finding of the rule counts the
# rest. A pull request's import naming a removed name 150,000 times made as many findings, each
# enriched and written (ninth campaign, R02: past a minute); no real file comes near.
MOST_LISTED = 1000
NOT_LISTED = "not_listed"  # the data of a finding that counts those left out: how many; it fixes none


def listed_per_file(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """`diagnostics` (in report order) with at most MOST_LISTED of one rule in one file: the
    rest of such a group are left out for one finding of the rule at the first left out, as
    severe as the most severe of them, which says how many they are and what the first says.
    A count a rule made of the findings it did not build (built_per_file) adds to it."""
    groups: dict[tuple[str, str], list[Diagnostic]] = {}
    for diagnostic in diagnostics:
        groups.setdefault((diagnostic.path, diagnostic.code), []).append(diagnostic)
    if all(len(group) <= MOST_LISTED and not _counts(group) for group in groups.values()):
        return diagnostics
    kept = []
    for group in groups.values():
        counts = _counts(group)
        listed = [diagnostic for diagnostic in group if NOT_LISTED not in diagnostic.data] if counts else group
        kept += listed[:MOST_LISTED]
        if len(listed) > MOST_LISTED:
            kept.append(_not_listed(listed[MOST_LISTED:], counts))
        elif counts:  # none of its own left out (a count made apart from them): the counts, as one
            kept.append(_not_listed([counts[0]], counts[1:]))
    return sorted(kept, key=Diagnostic.sort_key)


def _counts(group: list[Diagnostic]) -> list[Diagnostic]:
    return [diagnostic for diagnostic in group if NOT_LISTED in diagnostic.data]


def _not_listed(left_out: list[Diagnostic], counts: Sequence[Diagnostic] = ()) -> Diagnostic:
    first = left_out[0]
    severity = min((diagnostic.severity for diagnostic in [*left_out, *counts]),
                   key=SEVERITY_VALUES.index)  # the most severe
    number = sum(diagnostic.data.get(NOT_LISTED, 1) for diagnostic in [*left_out, *counts])
    what = f"the first: {first.message}" if NOT_LISTED not in first.data else "the rest not built"
    message = (f"{number:,} more {first.code} findings in this file are not listed (a file lists at most "
               f"{MOST_LISTED:,} of one rule); {what}")
    return Diagnostic(path=first.path, line=first.line, col=first.col, code=first.code, severity=severity,
                      message=message, symbol="", data={NOT_LISTED: number})


def built_per_file(sites: Iterable[T], facts_of: Callable[[T], FileFacts], place: Callable[[T], Position],
                   build: Callable[[T], Diagnostic], code: str,
                   severity: Callable[[T], str | None] = lambda site: None) -> Iterator[Diagnostic]:
    """The findings of `code` at `sites`, each file's in report order and built only as far as
    listed_per_file lists them: the first MOST_LISTED a `# noqa` leaves and the first left out
    (with any at its place: the message orders them), then one count of the rest, which are
    not built (380,000 calls each losing a keyword built as many findings to list 1,000: 48 s,
    campaign 12 R04). A site a `# noqa` silences past them is built bare: enough for the
    comment to count as used. `severity`: a site's finding's when not the rule's."""
    by_file: dict[str, list[T]] = {}
    for site in sites:
        by_file.setdefault(facts_of(site).path, []).append(site)
    for path, of_file in by_file.items():
        yield from _built_in_file(of_file, facts_of(of_file[0]).noqa, path, lambda site: _at(place(site)), build,
                                  code, lambda site: severity(site) or rule(code).severity)


def _at(position: Position) -> tuple[int, int]:
    return position.line, position.col


def _built_in_file(sites: list[T], noqa: dict[int, list[str] | None], path: str, place: Callable[[T], tuple[int, int]],
                   build: Callable[[T], Diagnostic], code: str, severity: Callable[[T], str]) -> Iterator[Diagnostic]:
    built, last, left = 0, None, []
    for site in sorted(sites, key=place):
        line, col = place(site)
        silenced = noqa_silences(noqa, line, code)
        if built <= MOST_LISTED or (line, col) == last:
            built, last = built + (not silenced), (line, col)
            yield build(site)
        elif silenced:
            yield Diagnostic(path=path, line=line, col=col, code=code, severity=severity(site), message="", symbol="")
        else:
            left.append(site)
    if left:
        line, col = place(left[0])
        yield Diagnostic(path=path, line=line, col=col, code=code, symbol="",
                         severity=min(map(severity, left), key=SEVERITY_VALUES.index),  # the most severe
                         message=f"{len(left):,} more {code} findings in this file are not listed",
                         data={NOT_LISTED: len(left)})


def noqa_silences(noqa: dict[int, list[str] | None], line: int, code: str) -> bool:
    """Whether a file's `# noqa` comments (line -> the codes named, None: all) silence `code` on `line`."""
    if line not in noqa:
        return False
    codes = noqa[line]
    return codes is None or code in codes
