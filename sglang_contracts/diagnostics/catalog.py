"""The rule catalog: one TOML file per rule in `rules/`, each with its documentation and examples.

The catalog is the single source of a rule's name, severity, summary, message template,
examples and how reports treat its findings (`report`); check functions in `contracts/` only
produce the template's fields, and declare how they run on their decorator (contracts/base.py).
"""

from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from sglang_contracts.infra.errors import ContractsError
from sglang_contracts.infra.lines import numbered_lines
from sglang_contracts.infra.tomltext import parse_toml
from sglang_contracts.infra.markdown import code_span

SEVERITIES = {"error", "warning"}
# ruff's split: a safe fix is certain from the new release; an unsafe one is a judgement a
# maintainer should read, applied only with --unsafe-fixes.
FIX_SAFETIES = {"safe", "unsafe"}
QUOTED_FIELD = re.compile(r"`\{(\w+)\}`")  # a field a message template shows as code
# Where a rule file's examples start: a run reads only the entry above them (the examples are
# four fifths of the catalog's text, and a run that parsed them all spent 0.1 s on it).
# The paragraph of a rule's description that says what to do (explain shows it first).
WHAT_TO_DO = re.compile(r"(?:^|\n)What to do:.*?(?=\n\s*\n|\Z)", re.DOTALL)
EXAMPLES_START = re.compile(r"^\[\[(?:fix_)?examples\]\]", re.MULTILINE)


@dataclass(frozen=True)
class Surface:
    """Where in the project a contract lives: the group a finding is reported under. Each rule
    names its group in its catalog entry (`group = "imports"`)."""

    key: str  # stable identifier (the rule's `group`, JSON `surface`, SARIF rule tag)
    family: str  # the code prefix of the group's rules; no family is a prefix of another's
    title: str
    what: str  # one line for the markdown report


OTHER_SURFACE = Surface("other", "", "Other contracts", "Contracts of rules without a surface of their own.")
# The groups, in the report's order. A rule's code starts with its group's family, and the
# families are prefix-disjoint (tests/rules/test_catalog.py), so `--select SGC11` selects the HTTP
# group and nothing else, and a code no rule has yet still has one group.
SURFACES: dict[str, Surface] = {surface.key: surface for surface in (
    Surface("imports", "SGC10", "Imports", "Upstream modules and names the project imports or reads from modules."),
    Surface("http", "SGC11", "HTTP API",
            "Routes, request keys and sampling parameters the project sends to SGLang's server."),
    Surface("calls", "SGC2", "Calls", "Calls into upstream functions and constructors: their parameters and signatures."),
    Surface("subclasses", "SGC30", "Subclasses",
            "Project classes that subclass upstream classes and override their methods."),
    Surface("borrowed-methods", "SGC31", "Borrowed methods",
            "Upstream methods a project class borrows (bound to itself) and the state they read."),
    Surface("attribute-reads", "SGC32", "Attribute reads", "Attributes of upstream objects the project reads."),
    Surface("monkeypatches", "SGC4", "Monkeypatches", "Upstream names the project replaces at run time."),
    Surface("server-args", "SGC5", "ServerArgs", "ServerArgs fields the project reads, sets or mirrors."),
    Surface("tests", "SGC6", "Tests",
            "Upstream names the project's tests patch by string, and fakes of upstream classes."),
    Surface("stack", "SGC70", "Stack", "Pins, versions and mirrored copies of upstream code."),
    Surface("dependency-closure", "SGC71", "Installs against the new closure",
            "The project's installs held against the new release's dependency closure: SGLang's pins, and their "
            "pins in turn."),
    Surface("defensive-access", "SGC8", "Defensive access",
            "`getattr`/`hasattr` probes of upstream names whose fallback now runs."),
    Surface("patch-files", "SGC9", "Patch files", "Patch files the project applies to upstream sources."),
    Surface("project-files", "SGC0", "Project files",
            "Project files the check could not read, and its own comments."),
)}


def surface_for(code: str) -> Surface:
    """The group of any rule code: the one its catalog entry names; for a code this version has
    never seen (a baseline's, a newer tool's), the group whose family it is in."""
    catalog = load_catalog()
    if code in catalog:
        return SURFACES[catalog[code].group]
    return next((surface for surface in SURFACES.values() if code.startswith(surface.family)), OTHER_SURFACE)


def surface_order() -> list[Surface]:
    return [*SURFACES.values(), OTHER_SURFACE]


@dataclass(frozen=True)
class Example:
    """A self-contained case: two upstream releases, a project, and what must be reported."""

    title: str
    old: dict[str, str]  # upstream files (paths below the folder holding sglang/)
    new: dict[str, str]
    project: dict[str, str]
    expect: tuple[str, ...]  # "path:line:col: CODE" prefixes; empty for a valid example
    options: dict[str, Any] = field(default_factory=dict)
    pin_alone: bool = False  # checked as `--old X --new X`: `old` is both releases, `new` is unused
    # the severity of expected entries where it is part of the example: "path:line:col: CODE" -> severity
    severities: dict[str, str] = field(default_factory=dict)

    def shown(self, entry: str) -> str:
        """An expected entry as the documentation shows it, with its severity where the example states it."""
        return f"{entry} ({self.severities[entry]})" if entry in self.severities else entry


@dataclass(frozen=True)
class FixExample:
    """A project before and after `fix`, against two upstream releases; files not in `after` stay as they were."""

    title: str
    old: dict[str, str]
    new: dict[str, str]
    before: dict[str, str]
    after: dict[str, str]
    # run with --unsafe-fixes or not; None: as the rule's fix is declared. An example whose
    # `after` is its `before` shows a fix refused (it says why).
    unsafe_fixes: bool | None = None


# In a bump run (--old != --new), what a rule's findings say of the bump (`report.bump`):
# a break of the bump marks its file as one the bump touches; a finding not of the bump (a file
# that could not be read, what the pin alone reports too) is reported but marks none; one that
# holds on the pin alone and would repeat on every bump is reported only in the files the bump
# touches, and marks none (check/runner.py bump_touched, bump_noise_filtered).
BUMP_ROLES = ("of-the-bump", "not-of-the-bump", "shown-where-the-bump-touches")


@dataclass(frozen=True)
class Report:
    """How reports treat a rule's findings: its entry's `report` table (by default, a break of
    the bump, reported under its group)."""

    bump: str = "of-the-bump"  # one of BUMP_ROLES
    # Upstream behaviour the project inherits (a body it runs changed), not a break: the markdown
    # report lists it in a section of its own rather than under the rule's group.
    inherited: bool = False
    # Defensive code guarding what both releases define: dead code to look at rather than a
    # break, which the markdown report's opening counts apart.
    guards_what_both_define: bool = False
    # A finding is one hunk of a patch file: the markdown report counts them per patch file,
    # worded "3 hunks {many}" ({"one": ..., "many": ...}); empty for every other rule.
    hunk_wording: dict[str, str] = field(default_factory=dict)

    def hunks_said(self, count: int) -> str:
        return self.hunk_wording["one" if count == 1 else "many"]


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: str
    group: str  # the key of its Surface: where its findings are reported
    summary: str
    description: str
    message: str  # str.format template over the finding's fields
    reference: str
    source: Path
    # For contracts already broken on the old release (--report-unresolved): the change
    # the main message describes did not happen, so it needs its own words.
    unresolved_message: str | None = None
    fix: str | None = None  # "safe" or "unsafe" when the rule can rewrite the project
    fix_description: str = ""
    # When one finding's fix of a rule whose fix is unsafe is safe: the finding says so itself
    # (`fix_safety` in its data), as upstream's own examples decide (migrations/).
    fix_safe_when: str = ""
    # Values of message fields a check passes only when it says something else (the wording of
    # a warning that could not be verified beside the rule's error): `message_defaults` in TOML.
    message_defaults: dict[str, str] = field(default_factory=dict)
    report: Report = field(default_factory=Report)

    def render(self, fields: dict[str, Any], *, unresolved: bool = False) -> str:
        """The message; a field the template shows as code (`` `{written}` ``) fenced as its
        own backticks need (a Dockerfile value may hold some)."""
        template = self.unresolved_message if unresolved and self.unresolved_message else self.message
        fields = {**self.message_defaults, **fields}
        return "".join(code_span(str(fields[piece])) if index % 2 else piece.format(**fields)
                       for index, piece in enumerate(QUOTED_FIELD.split(template)))  # text, field, text, ...

    @cached_property
    def _all_examples(self) -> tuple[tuple[Example, ...], tuple[FixExample, ...]]:
        """Both kinds, from one read of the entry's file when first asked for (tests, docs, explain)."""
        return _examples(self.source)

    @property
    def examples(self) -> tuple[Example, ...]:
        return self._all_examples[0]

    @property
    def fix_examples(self) -> tuple[FixExample, ...]:
        return self._all_examples[1]


def catalog_dir() -> Path:
    package = Path(__file__).resolve().parent.parent
    shipped = package / "_catalog"  # inside an installed wheel
    return shipped if shipped.is_dir() else package.parent / "rules"


# The keys of an entry and their TOML types; any other key is refused, since a misspelt optional
# key (`inherted = true`) would leave the rule as the default without a word.
ENTRY_KEYS: dict[str, type] = {
    "code": str, "name": str, "severity": str, "group": str, "summary": str, "description": str, "message": str,
    "reference": str, "unresolved_message": str, "message_defaults": dict, "fix": str, "fix_description": str,
    "fix_safe_when": str, "report": dict,
    "examples": list, "fix_examples": list,  # read when first asked for (_examples)
}
REPORT_KEYS: dict[str, type] = {"bump": str, "inherited": bool, "guards_what_both_define": bool,
                                "hunk_wording": dict}
HUNK_WORDING_KEYS = {"one", "many"}
TOML_TYPES = {str: "a string", bool: "a boolean (true or false)", dict: "a table", list: "an array of tables"}


def load_rule(path: Path) -> Rule:
    """One catalog entry, its examples read when first asked for."""
    text = path.read_text()
    start = EXAMPLES_START.search(text)
    try:
        try:
            data = parse_toml(text[:start.start()] if start else text)
        except tomllib.TOMLDecodeError:  # the cut fell inside a string: the whole text
            data = parse_toml(text)
    except tomllib.TOMLDecodeError as error:
        raise ContractsError(f"{path}: malformed rule entry ({error!r})") from None
    _refuse_unknown_or_mistyped(data, ENTRY_KEYS, path, "")
    try:
        rule = Rule(
            code=data["code"],
            name=data["name"],
            severity=data["severity"],
            group=data["group"],
            summary=data["summary"],
            description=data["description"].strip(),
            message=data["message"],
            reference=data.get("reference", ""),
            source=path,
            unresolved_message=data.get("unresolved_message"),
            message_defaults=data.get("message_defaults", {}),
            fix=data.get("fix"),
            fix_description=data.get("fix_description", "").strip(),
            fix_safe_when=data.get("fix_safe_when", "").strip(),
            report=_report(data.get("report", {}), path),
        )
    except KeyError as error:
        raise ContractsError(f"{path}: malformed rule entry (no {error})") from None
    _refuse_inconsistent(rule, path)
    return rule


def _refuse_unknown_or_mistyped(data: dict[str, Any], types: dict[str, type], path: Path, within: str) -> None:
    """A ContractsError for a key of `data` that `types` does not name, or whose value is not of its type."""
    for key, value in data.items():
        if key not in types:
            raise ContractsError(f"{path}: unknown key {within}{key} (known: {', '.join(types)})")
        if not isinstance(value, types[key]):
            raise ContractsError(f"{path}: {within}{key} must be {TOML_TYPES[types[key]]}, not {value!r}")


def _report(data: dict[str, Any], path: Path) -> Report:
    """The entry's `report` table, its keys and their values checked."""
    _refuse_unknown_or_mistyped(data, REPORT_KEYS, path, "report.")
    report = Report(**data)
    if report.bump not in BUMP_ROLES:
        roles = ", ".join(map(repr, BUMP_ROLES))
        raise ContractsError(f"{path}: report.bump must be one of {roles}, not {report.bump!r}")
    wording = report.hunk_wording
    if wording and (set(wording) != HUNK_WORDING_KEYS or not all(isinstance(v, str) for v in wording.values())):
        raise ContractsError(f"{path}: report.hunk_wording must be a table of two strings, one and many,"
                             f" not {wording!r}")
    return report


def _refuse_inconsistent(rule: Rule, path: Path) -> None:
    """A ContractsError for an entry whose code, severity, group or fix do not fit together."""
    if rule.severity not in SEVERITIES or path.stem != rule.code:
        raise ContractsError(f"{path}: code must match the file name and severity be error or warning")
    if rule.group not in SURFACES or not rule.code.startswith(SURFACES[rule.group].family):
        raise ContractsError(f"{path}: group must be one of {', '.join(SURFACES)}, whose code family"
                             f" ({', '.join(s.family for s in SURFACES.values())}) the code is in")
    _refuse_inconsistent_fix(rule, path)


def _refuse_inconsistent_fix(rule: Rule, path: Path) -> None:
    if rule.fix is not None and (rule.fix not in FIX_SAFETIES or not rule.fix_description):
        raise ContractsError(f"{path}: fix must be \"safe\" or \"unsafe\", with a fix_description")
    if rule.fix_safe_when and rule.fix != "unsafe":
        raise ContractsError(f"{path}: fix_safe_when belongs to a rule whose fix is unsafe")


def _examples(path: Path) -> tuple[tuple[Example, ...], tuple[FixExample, ...]]:
    """A rule file's examples and fix examples."""
    try:
        data = parse_toml(path.read_text())
        examples = tuple(
            Example(
                title=raw["title"],
                old=raw.get("old", {}),
                new=raw.get("new", {}),
                project=raw["project"],
                expect=tuple(raw.get("expect", [])),
                options=raw.get("options", {}),
                pin_alone=bool(raw.get("pin_alone", False)),
                severities=raw.get("severities", {}),
            )
            for raw in data.get("examples", [])
        )
        fix_examples = tuple(
            FixExample(title=raw["title"], old=raw.get("old", {}), new=raw.get("new", {}),
                       before=raw["before"], after=raw["after"], unsafe_fixes=raw.get("unsafe_fixes"))
            for raw in data.get("fix_examples", [])
        )
    except (KeyError, TypeError, AttributeError, tomllib.TOMLDecodeError) as error:
        raise ContractsError(f"{path}: malformed examples ({error!r})") from None
    return examples, fix_examples


@lru_cache(maxsize=1)
def load_catalog() -> dict[str, Rule]:
    folder = catalog_dir()
    rules = map(load_rule, folder.glob("SGC*.toml"))
    return {rule.code: rule for rule in sorted(rules, key=lambda rule: code_order(rule.code))}


def rule(code: str) -> Rule:
    catalog = load_catalog()
    if code not in catalog:
        raise ContractsError(f"{code}: no such rule in {catalog_dir()}")
    return catalog[code]


NOT_DECLARED = Report()


def report_of(code: str) -> Report:
    """How reports treat a code's findings, as its entry declares; a code no entry has (a newer
    tool's, in a baseline) as a break of the bump."""
    entry = load_catalog().get(code)
    return entry.report if entry is not None else NOT_DECLARED


def explanation(code: str) -> str:
    """What `sglang-contracts explain CODE` prints: the rule and what to do first, then why it
    matters, its message and fix, and its examples last (they run to hundreds of lines)."""
    entry = rule(code.upper())
    why, to_do = split_what_to_do(entry.description)
    out = [f"{entry.code} {entry.name} ({entry.severity})\n\n{entry.summary}\n"]
    if to_do:
        out.append(f"{to_do}\n")
    if entry.fix:
        out.append(f"Fix ({entry.fix}{', with --unsafe-fixes' * (entry.fix == 'unsafe')}): {entry.fix_description}\n")
    if entry.fix_safe_when:
        out.append(f"Safe, without --unsafe-fixes, when: {entry.fix_safe_when}\n")
    out.append(f"Why:\n{why}\n\nMessage: {entry.message}\nReference: {entry.reference}")
    for example in entry.examples:
        out += _example_lines(example)
    return "\n".join(out)


def _example_lines(example: Example) -> list[str]:
    """An example as `explain` shows it: its files by release, then what it reports."""
    out = [f"\nExample: {example.title}" + (" (the pin alone: --old X --new X)" if example.pin_alone else "")]
    releases = (("sglang", example.old),) if example.pin_alone else (("old sglang", example.old), ("new sglang", example.new))
    for label, files in (*releases, ("project", example.project)):
        for path, text in files.items():
            out.append(f"  [{label}] {path}:")
            out.extend(f"    {line}" for line in numbered_lines(text.strip("\n")))
    out.append("  reports: " + (", ".join(map(example.shown, example.expect)) if example.expect else "nothing"))
    return out


def split_what_to_do(description: str) -> tuple[str, str]:
    """(the description without its "What to do:" paragraph, that paragraph), or (all of it, "")."""
    match = WHAT_TO_DO.search(description)
    if match is None:
        return description, ""
    return (description[:match.start()] + description[match.end():]).strip(), match.group(0).strip()


def code_order(code: str) -> tuple[int, str]:
    """Rule codes in number order (SGC105, SGC201, ... SGC903, SGC1101), not as strings."""
    digits = code[3:]
    return (int(digits), code) if digits.isdigit() else (sys.maxsize, code)
