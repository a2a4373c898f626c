"""The rule catalog: one TOML file per rule in `rules/`, each with its documentation and examples.

The catalog is the single source of a rule's name, severity, summary, message template
and examples; check functions in `contracts/` only produce the template's fields.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from sglang_contracts.infra.errors import ContractsError
from sglang_contracts.infra.tomltext import parse_toml
from sglang_contracts.infra.markdown import code_span

SEVERITIES = {"error", "warning"}
# ruff's split: a safe fix is certain from the new release; an unsafe one is a judgement a
# maintainer should read, applied only with --unsafe-fixes.
FIX_SAFETIES = {"safe", "unsafe"}
QUOTED_FIELD = re.compile(r"`\{(\w+)\}`")  # a field a message template shows as code


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
# families are prefix-disjoint (tests/test_catalog.py), so `--select SGC11` selects the HTTP
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
    examples: tuple[Example, ...]
    source: Path
    # For contracts already broken on the old release (--report-unresolved): the change
    # the main message describes did not happen, so it needs its own words.
    unresolved_message: str | None = None
    fix: str | None = None  # "safe" or "unsafe" when the rule can rewrite the project
    fix_description: str = ""
    # When one finding's fix of a rule whose fix is unsafe is safe: the finding says so itself
    # (`fix_safety` in its data), as upstream's own examples decide (migrations/).
    fix_safe_when: str = ""
    fix_examples: tuple[FixExample, ...] = ()
    # Values of message fields a check passes only when it says something else (the wording of
    # a warning that could not be verified beside the rule's error): `message_defaults` in TOML.
    message_defaults: dict[str, str] = field(default_factory=dict)

    def render(self, fields: dict[str, Any], *, unresolved: bool = False) -> str:
        """The message; a field the template shows as code (`` `{written}` ``) fenced as its
        own backticks need (a Dockerfile value may hold some)."""
        template = self.unresolved_message if unresolved and self.unresolved_message else self.message
        fields = {**self.message_defaults, **fields}
        return "".join(code_span(str(fields[piece])) if index % 2 else piece.format(**fields)
                       for index, piece in enumerate(QUOTED_FIELD.split(template)))  # text, field, text, ...


def catalog_dir() -> Path:
    package = Path(__file__).resolve().parent.parent
    shipped = package / "_catalog"  # inside an installed wheel
    return shipped if shipped.is_dir() else package.parent / "rules"


def _load_rule(path: Path) -> Rule:
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
        rule = Rule(
            code=data["code"],
            name=data["name"],
            severity=data["severity"],
            group=data["group"],
            summary=data["summary"],
            description=data["description"].strip(),
            message=data["message"],
            reference=data.get("reference", ""),
            examples=examples,
            source=path,
            unresolved_message=data.get("unresolved_message"),
            message_defaults=data.get("message_defaults", {}),
            fix=data.get("fix"),
            fix_description=data.get("fix_description", "").strip(),
            fix_safe_when=data.get("fix_safe_when", "").strip(),
            fix_examples=tuple(
                FixExample(title=raw["title"], old=raw.get("old", {}), new=raw.get("new", {}),
                           before=raw["before"], after=raw["after"], unsafe_fixes=raw.get("unsafe_fixes"))
                for raw in data.get("fix_examples", [])
            ),
        )
    except (KeyError, TypeError, tomllib.TOMLDecodeError) as error:
        raise ContractsError(f"{path}: malformed rule entry ({error})") from None
    if rule.severity not in SEVERITIES or path.stem != rule.code:
        raise ContractsError(f"{path}: code must match the file name and severity be error or warning")
    if rule.group not in SURFACES or not rule.code.startswith(SURFACES[rule.group].family):
        raise ContractsError(f"{path}: group must be one of {', '.join(SURFACES)}, whose code family"
                             f" ({', '.join(s.family for s in SURFACES.values())}) the code is in")
    if rule.fix is not None and (rule.fix not in FIX_SAFETIES or not rule.fix_description):
        raise ContractsError(f"{path}: fix must be \"safe\" or \"unsafe\", with a fix_description")
    if rule.fix_safe_when and rule.fix != "unsafe":
        raise ContractsError(f"{path}: fix_safe_when belongs to a rule whose fix is unsafe")
    return rule


@lru_cache(maxsize=1)
def load_catalog() -> dict[str, Rule]:
    folder = catalog_dir()
    return {rule.code: rule for rule in map(_load_rule, sorted(folder.glob("SGC*.toml")))}


def rule(code: str) -> Rule:
    catalog = load_catalog()
    if code not in catalog:
        raise ContractsError(f"{code}: no such rule in {catalog_dir()}")
    return catalog[code]


def explanation(code: str) -> str:
    """What `sglang-contracts explain CODE` prints: the rule, why it matters, its examples."""
    entry = rule(code.upper())
    out = [f"{entry.code} {entry.name} ({entry.severity})\n\n{entry.summary}\n\n{entry.description}\n",
           f"Message: {entry.message}\nReference: {entry.reference}"]
    if entry.fix:
        out.append(f"\nFix ({entry.fix}{', with --unsafe-fixes' * (entry.fix == 'unsafe')}): {entry.fix_description}")
    if entry.fix_safe_when:
        out.append(f"Safe, without --unsafe-fixes, when: {entry.fix_safe_when}")
    for example in entry.examples:
        out.append(f"\nExample: {example.title}" + (" (the pin alone: --old X --new X)" if example.pin_alone else ""))
        releases = (("sglang", example.old),) if example.pin_alone else (("old sglang", example.old), ("new sglang", example.new))
        for label, files in (*releases, ("project", example.project)):
            for path, text in files.items():
                out.append(f"  [{label}] {path}:")
                out.extend(f"    {line}" for line in text.strip("\n").splitlines())
        out.append("  reports: " + (", ".join(map(example.shown, example.expect)) if example.expect else "nothing"))
    return "\n".join(out)
