"""Write docs/rules.md, the rule reference, from the rule catalog (rules/*.toml).

    python scripts/generate_rules_doc.py           # write docs/rules.md
    python scripts/generate_rules_doc.py --check   # exit 1 when docs/rules.md is not what it would write

docs/rules.md is never edited by hand: edit the rule's TOML file and run this again.
tests/rules/test_rules_doc.py fails when the checked-in file is stale.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(CHECKOUT))  # this checkout's package, whatever copy is installed

from sglang_contracts.diagnostics.catalog import Example, Rule, load_catalog, surface_for, surface_order  # noqa: E402

TARGET = CHECKOUT / "docs" / "rules.md"
COMMAND = "python scripts/generate_rules_doc.py"
BACKTICKS = re.compile(r"`{3,}")


def code_number(code: str) -> int:
    """SGC1101 after SGC105: rules are ordered by number, not as strings."""
    return int(code.removeprefix("SGC"))


def anchor(rule: Rule) -> str:
    """The anchor GitHub gives the rule's heading `SGCnnn: name`."""
    return f"{rule.code.lower()}-{rule.name}"


def fenced(text: str, language: str = "") -> list[str]:
    """A fenced code block longer than any backtick fence inside it."""
    fence = "`" * max([3, *(len(run) + 1 for run in BACKTICKS.findall(text))])
    return [f"{fence}{language}", *text.strip("\n").splitlines(), fence]


def example_lines(example: Example) -> list[str]:
    title = example.title + (" (the pin alone: `--old X --new X`)" if example.pin_alone else "")
    out = [f"**{'Valid' if not example.expect else 'Reported'}:** {title}", ""]
    releases = (("sglang", example.old),) if example.pin_alone else (("old sglang", example.old), ("new sglang", example.new))
    for label, files in (*releases, ("project", example.project)):
        for path, text in files.items():
            out += [f"- {label}, `{path}`:", ""]
            out += ["  " + line if line else "" for line in fenced(text, "python" if path.endswith(".py") else "")]
            out.append("")
    if example.options:
        out += ["- options: " + ", ".join(f"`{key} = {value!r}`" for key, value in sorted(example.options.items())), ""]
    out += ["- reports: " + (", ".join(f"`{example.shown(line)}`" for line in example.expect) if example.expect else "nothing"), ""]
    return out


def rule_lines(rule: Rule) -> list[str]:
    surface = surface_for(rule.code)
    facts = [f"severity: {rule.severity}", f"group: {surface.title}"]
    if rule.fix:
        facts.append(f"fix: {rule.fix}" + (" (`--unsafe-fixes`)" if rule.fix == "unsafe" else ""))
    out = [f"### {rule.code}: {rule.name}", "", " · ".join(facts), "", rule.summary, "", rule.description, ""]
    out += ["Message:", "", *fenced(rule.message), ""]
    if rule.unresolved_message:
        out += ["Already broken on the old release (`--report-unresolved`):", "", *fenced(rule.unresolved_message), ""]
    if rule.reference:
        out += [f"Reference: <{rule.reference}>", ""]
    if rule.fix:
        out += ["**Fix.** " + rule.fix_description, ""]
    # One reported and one valid example; the rest are in the rule's file, and all are tested.
    shown = [example for example in (next((e for e in rule.examples if e.expect), None),
                                     next((e for e in rule.examples if not e.expect), None)) if example]
    source = f"[`rules/{rule.code}.toml`](../rules/{rule.code}.toml)"
    more = len(rule.examples) - len(shown)
    out += ["#### Examples", "", f"{len(shown)} of {len(rule.examples)}; all are in {source}." if more else f"From {source}.", ""]
    for example in shown:
        out += example_lines(example)
    return out


def render() -> str:
    """The text of docs/rules.md for the catalog as it is."""
    catalog = load_catalog()
    rules = sorted(catalog.values(), key=lambda rule: code_number(rule.code))
    groups = [(surface, [rule for rule in rules if surface_for(rule.code) == surface]) for surface in surface_order()]
    groups = [(surface, members) for surface, members in groups if members]
    out = [
        "# Rules",
        "",
        f"<!-- Generated from rules/*.toml by `{COMMAND}`; do not edit by hand. -->",
        "",
        f"Every rule sglang-contracts has, {len(rules)} of them, by report group (the heading a finding is",
        "shown under in the markdown report, and its `surface` in JSON and SARIF). Each rule is one",
        "file in [`rules/`](../rules/); this page is generated from those files, and its examples are",
        "among the ones the tests run. `sglang-contracts explain CODE` prints one rule. What all rules share",
        "(version gates, receiver types, the stack) is in [judging.md](judging.md).",
        "",
    ]
    for surface, members in groups:
        out += [f"## {surface.title}", "", surface.what, "", "| code | name | severity | fix | summary |", "|---|---|---|---|---|"]
        for rule in members:
            summary = rule.summary.replace("|", "\\|")
            out.append(f"| [{rule.code}](#{anchor(rule)}) | {rule.name} | {rule.severity} | {rule.fix or ''} | {summary} |")
        out.append("")
    out += ["## Every rule", ""]
    for surface, members in groups:
        for rule in members:
            out += rule_lines(rule)
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/rules.md is stale, writing nothing")
    args = parser.parse_args(argv)
    text = render()
    shown = TARGET.relative_to(CHECKOUT) if TARGET.is_relative_to(CHECKOUT) else TARGET
    current = TARGET.read_text() if TARGET.exists() else None
    if args.check:
        if current != text:
            print(f"{shown} is stale: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    if current != text:
        TARGET.write_text(text)
        print(f"wrote {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
