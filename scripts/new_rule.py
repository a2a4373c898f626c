"""Scaffold a new rule: its catalog entry, its check, registered, and the rule reference.

    python scripts/new_rule.py SGC1106 http-response-key-gone
    python scripts/new_rule.py SGC1106 http-response-key-gone --module http --severity warning

Writes:
- rules/<CODE>.toml: name, severity, the group its code's family gives, a summary, description
  and message to write, one example that must be reported and one valid example;
- the check, `def <name>(ctx)` decorated `@contract(CODE, reads=..., process=...)`, appended to
  sglang_contracts/contracts/<module>.py (by default the module that holds most of the group's
  checks; a new module is added to contracts/__init__.py);
- docs/rules.md, regenerated (scripts/generate_rules_doc.py).

The reported example fails until the check finds it: `python -m pytest -q tests/rules/test_catalog.py -k CODE`.
See CONTRIBUTING.md, "Adding a rule".
"""

from __future__ import annotations

import argparse
import ast
import collections
import re
import sys
import textwrap
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(CHECKOUT))  # this checkout's package, whatever copy is installed

import sglang_contracts.contracts  # noqa: E402,F401  (registers every check)
from sglang_contracts.contracts.base import CHECKS, Process, Reads  # noqa: E402
from sglang_contracts.diagnostics.catalog import SURFACES, load_catalog  # noqa: E402

RULES = CHECKOUT / "rules"
CONTRACTS = CHECKOUT / "sglang_contracts" / "contracts"
CODE = re.compile(r"SGC\d{3,4}")
NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")

ENTRY = '''code = "{code}"
name = "{name}"
severity = "{severity}"
group = "{group}"
summary = "TODO: one sentence: the contract the project relies on, and how the new release breaks it."
description = """
TODO: what the project does that held on the pinned release, what the target release changed,
and what goes wrong at run time. Name the shapes the check recognises and those it leaves alone.

What to do: TODO.
"""
message = "TODO: {{symbol}} ... in sglang {{new}} (it was ... in {{old}})"
# No `report = {{ ... }}`: its findings are breaks of the bump, listed under the group (CONTRIBUTING.md,
# "Adding a rule", step 2, for the other ways a report can treat them).

# The examples run with every rule on, each in a project of its own (tests/rules/test_catalog.py):
# `expect` lists every finding, as `path:line:col: CODE`.

[[examples]]
title = "TODO: the smallest case the rule reports"
old = {{ "sglang/srt/example.py" = "def helper(): ...\\n" }}
new = {{ "sglang/srt/example.py" = "def helper(): ...\\n# TODO: the change {code} reports\\n" }}
project = {{ "app/use.py" = "from sglang.srt.example import helper\\n" }}
expect = ["app/use.py:1:1: {code}"]

[[examples]]
title = "valid: TODO: the closest case the rule must not report"
old = {{ "sglang/srt/example.py" = "def helper(): ...\\n" }}
new = {{ "sglang/srt/example.py" = "def helper(): ...\\n" }}
project = {{ "app/use.py" = "from sglang.srt.example import helper\\n" }}
expect = []
'''

CHECK = '''

@contract("{code}", reads=Reads.{reads}, process=Process.{process})
def {function}(ctx: CheckContext) -> Iterator[Diagnostic]:
    """TODO: the contract that held on ctx.old and breaks on ctx.new (rules/{code}.toml)."""
    for facts in ctx.checked_files():  # the files whose findings this run keeps
        # TODO: for each contract of `facts` that holds on ctx.old and fails on ctx.new:
        # yield finding("{code}", facts, position, symbol, old=ctx.old_version, new=ctx.new_version, ...)
        yield from ()
'''

# What the check needs in its module's namespace: (module, name).
NEEDED = [("typing", "Iterator"), ("sglang_contracts.contracts.base", "CheckContext"),
          ("sglang_contracts.contracts.base", "Process"), ("sglang_contracts.contracts.base", "Reads"),
          ("sglang_contracts.contracts.base", "contract"), ("sglang_contracts.diagnostics", "Diagnostic"),
          ("sglang_contracts.diagnostics", "finding")]


def fail(message: str) -> None:
    sys.exit(f"new_rule.py: {message}")


def group_of(code: str) -> str:
    """The group whose code family `code` is in (the families are prefix-disjoint)."""
    groups = [key for key, surface in SURFACES.items() if code.startswith(surface.family)]
    if not groups:
        fail(f"{code} is in no group's code family: " + ", ".join(f"{s.family} ({k})" for k, s in SURFACES.items()))
    return groups[0]


def default_module(group: str) -> str:
    catalog = load_catalog()
    modules = collections.Counter(check.__module__.rsplit(".", 1)[-1] for code, check in CHECKS.items()
                                  if catalog[code].group == group)
    if not modules:
        fail(f"no check of group {group} yet: name the module with --module")
    return modules.most_common(1)[0][0]


def validate(code: str, name: str) -> None:
    catalog = load_catalog()
    if not CODE.fullmatch(code):
        fail(f"{code}: a code is SGC and three or four digits")
    if not NAME.fullmatch(name):
        fail(f"{name}: a name is lowercase words joined by '-'")
    if code in catalog or (RULES / f"{code}.toml").exists():
        fail(f"{code} exists already (rules/{code}.toml)")
    if any(rule.name == name for rule in catalog.values()):
        fail(f"a rule is named {name} already")
    clashes = [other for other in catalog if other.startswith(code) or code.startswith(other)]
    if clashes:
        fail(f"{code} and {', '.join(clashes)}: no code may be a prefix of another (--select would take both)")


def add_imports(text: str) -> str:
    """`text` with the imports the check needs added after its last top-level import."""
    tree = ast.parse(text)
    have = {(node.module, alias.asname or alias.name) for node in tree.body if isinstance(node, ast.ImportFrom)
            for alias in node.names}
    missing: dict[str, list[str]] = {}
    for module, name in NEEDED:
        if (module, name) not in have:
            missing.setdefault(module, []).append(name)
    if not missing:
        return text
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    lines = text.splitlines(keepends=True)
    at = imports[-1].end_lineno if imports else 0
    added = [f"from {module} import {', '.join(names)}\n" for module, names in missing.items()]
    if imports and isinstance(imports[-1], ast.ImportFrom) and imports[-1].module == "__future__":
        added.insert(0, "\n")
    return "".join(lines[:at] + added + lines[at:])


def register_module(module: str) -> None:
    """A new module is imported by contracts/__init__.py, which registers every check."""
    init = CONTRACTS / "__init__.py"
    text = init.read_text()
    listed = re.search(r"from sglang_contracts\.contracts import \(  # noqa: F401\n(.*?)\n\)", text, re.S)
    if listed is None:
        fail(f"cannot find the import list in {init}")
    names = sorted({*re.findall(r"\w+", listed.group(1)), module})
    body = "\n".join(textwrap.wrap(", ".join(names) + ",", 100, initial_indent="    ", subsequent_indent="    "))
    init.write_text(text[:listed.start(1)] + body + text[listed.end(1):])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("code", help="SGCnnn, in the code family of the rule's group (see diagnostics/catalog.py SURFACES)")
    parser.add_argument("name", help="the rule's name, lowercase words joined by '-'; the check function is named after it")
    parser.add_argument("--severity", choices=["error", "warning"], default="error")
    parser.add_argument("--module", help="contracts/<module>.py to hold the check (default: where most of the group's checks are)")
    parser.add_argument("--reads", choices=[r.value for r in Reads], default=Reads.FILE_AND_IMPORTS.value,
                        help="what a finding in one file may rest on (contracts/base.py Reads)")
    parser.add_argument("--process", choices=[p.value for p in Process], default=Process.MAIN.value,
                        help="where a one-shot run checks the rule (contracts/base.py Process)")
    args = parser.parse_args(argv)
    code, name = args.code.upper(), args.name
    validate(code, name)
    group = group_of(code)
    module = args.module or default_module(group)
    if not re.fullmatch(r"[a-z_]+", module) or module == "base":
        fail(f"{module}: not a rule module")
    function = name.replace("-", "_")

    entry = RULES / f"{code}.toml"
    entry.write_text(ENTRY.format(code=code, name=name, severity=args.severity, group=group))
    path = CONTRACTS / f"{module}.py"
    new_module = not path.exists()
    text = (f'"""TODO: the contracts of this module."""\n\nfrom __future__ import annotations\n'
            if new_module else path.read_text())
    if re.search(rf"^def {function}\(", text, re.M):
        fail(f"{path.name} has a {function} already")
    check = CHECK.format(code=code, function=function, reads=Reads(args.reads).name, process=Process(args.process).name)
    path.write_text(add_imports(text).rstrip("\n") + "\n" + check)
    if new_module:
        register_module(module)
    import generate_rules_doc

    load_catalog.cache_clear()
    generate_rules_doc.main([])
    shown = [entry, path] + ([CONTRACTS / "__init__.py"] if new_module else [])
    print("wrote " + ", ".join(str(p.relative_to(CHECKOUT)) for p in shown))
    print(f"""next:
  1. write the summary, description, message and examples in rules/{code}.toml
  2. implement {function} in sglang_contracts/contracts/{module}.py (reads={Reads(args.reads).name}, process={Process(args.process).name}: see contracts/base.py)
  3. python -m pytest -q tests/rules/test_catalog.py -k {code}     # the reported example fails until the check finds it
  4. python scripts/generate_rules_doc.py                  # after every edit of the entry""")
    return 0


if __name__ == "__main__":
    sys.exit(main())
