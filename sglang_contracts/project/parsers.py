"""Which argparse parsers the project hands its `--sglang-` wrapper, and whether they accept
abbreviations (`allow_abbrev`, True unless the constructor says otherwise).

A flag such as `--sglang-mem-frac` is no option string at all: argparse takes it for the one
option it is a prefix of, when the parser allows abbreviations. For the wrapper's options the
parser is the project's, not upstream's: the `ArgumentParser(...)` passed to the wrapper
function, directly, through a local name, or through the parameters of its callers (followed by
name, a few calls up). A parser that cannot be seen (handed in by a framework, as Megatron's
`extra_args_provider` is, whose parser says `allow_abbrev=False`) leaves the answer unknown.
"""

from __future__ import annotations

import ast
import sys

from sglang_contracts.infra.pysource import parse_shared
from sglang_contracts.project.index import ProjectIndex
from sglang_contracts.upstream.commandline import allow_abbrev, is_argument_parser

MAX_DEPTH = 4  # calls followed up from the wrapper function


def _callee(call: ast.Call) -> str | None:
    return call.func.id if isinstance(call.func, ast.Name) else call.func.attr if isinstance(call.func, ast.Attribute) else None


def file_parser_calls(relpath: str, text: str) -> list[list]:
    """["def", path, name, line] of each function, and ["call", path, caller, callee, kind, value]
    of each call whose first argument is a parser (kind "parser", value its allow_abbrev), a
    parameter of the calling function ("param", its name) or anything else ("other")."""
    try:
        tree = parse_shared(text, relpath)
    except Exception:  # an unparsable file is SGC000's to report
        return []
    found: list[list] = []
    functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for function in [tree, *functions]:
        name = getattr(function, "name", "")
        if name:
            found.append(["def", relpath, name, function.lineno])
        params = {a.arg for a in function.args.posonlyargs + function.args.args + function.args.kwonlyargs} if name else set()
        local_parsers: dict[str, bool | None] = {}
        body = [node for statement in function.body for node in ast.walk(statement)]
        for node in body:
            if isinstance(node, ast.Assign) and is_argument_parser(node.value):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        local_parsers[target.id] = allow_abbrev(node.value)
        for node in body:
            if not isinstance(node, ast.Call) or not node.args or _callee(node) is None:
                continue
            first = node.args[0]
            if is_argument_parser(first):
                found.append(["call", relpath, name, _callee(node), "parser", allow_abbrev(first)])
            elif isinstance(first, ast.Name) and first.id in local_parsers:
                found.append(["call", relpath, name, _callee(node), "parser", local_parsers[first.id]])
            elif isinstance(first, ast.Name) and first.id in params:
                found.append(["call", relpath, name, _callee(node), "param", first.id])
    return found


def wrapper_allows_abbreviations(project: ProjectIndex, path: str, line: int) -> bool | None:
    """Whether every parser the wrapper function (defined at `path:line`) is applied to accepts
    abbreviations: True or False when all are seen and agree, None when one cannot be seen or
    they disagree (then an abbreviated flag is not judged)."""
    facts = project.each_file("argument-parsers", file_parser_calls, lambda text: "ArgumentParser" in text or "def " in text,
                              sys.modules[__name__], sys.modules[is_argument_parser.__module__])
    name = next((f[2] for f in facts if f[0] == "def" and f[1] == path and f[3] == line), None)
    if name is None:
        return None
    calls = [f for f in facts if f[0] == "call"]
    values: set[bool | None] = set()
    frontier, seen = {name}, set()
    for _ in range(MAX_DEPTH):
        callers = set()
        for callee in frontier - seen:
            seen.add(callee)
            reaching = [c for c in calls if c[3] == callee]
            if not reaching:
                values.add(None)  # called from where this tool does not see: its parser is unknown
            for _, _, caller, _, kind, value in reaching:
                if kind == "parser":
                    values.add(value)
                elif kind == "param" and caller:
                    callers.add(caller)
                else:
                    values.add(None)
        if not callers:
            break
        frontier = callers
    else:
        values.add(None)
    return values.pop() if len(values) == 1 and None not in values else None
