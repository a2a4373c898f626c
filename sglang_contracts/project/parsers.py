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

from sglang_contracts.infra.shapes import Exactly, Row, rows_of
from sglang_contracts.infra.pysource import parse_shared
from sglang_contracts.project.index import ProjectIndex
from sglang_contracts.upstream.commandline import allow_abbrev, is_argument_parser

MAX_DEPTH = 4  # calls followed up from the wrapper function


def _callee(call: ast.Call) -> str | None:
    return call.func.id if isinstance(call.func, ast.Name) else call.func.attr if isinstance(call.func, ast.Attribute) else None


@rows_of((Row(Exactly("def"), str, str, int), Row(Exactly("call"), str, str, str, Exactly("parser"), (bool, None)),
          Row(Exactly("call"), str, str, str, Exactly("param"), str)))
def file_parser_calls(relpath: str, text: str) -> list[list]:
    """["def", path, name, line] of each function, and ["call", path, caller, callee, kind, value]
    of each call whose first argument is a parser (kind "parser", value its allow_abbrev), a
    parameter of the calling function ("param", its name)."""
    try:
        tree = parse_shared(text, relpath)
    except Exception:  # an unparsable file is SGC000's to report
        return []
    found: list[list] = []
    functions = [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for function in [tree, *functions]:
        found += _function_rows(relpath, function)
    return found


def _function_rows(relpath: str, function: ast.AST) -> list[list]:
    """file_parser_calls' rows of one function (or of the module's own code, nameless)."""
    name = getattr(function, "name", "")
    found: list[list] = [["def", relpath, name, function.lineno]] if name else []
    params = {a.arg for a in function.args.posonlyargs + function.args.args + function.args.kwonlyargs} if name else set()
    body = [node for statement in function.body for node in ast.walk(statement)]
    local_parsers = _local_parsers(body)
    for node in body:
        if not _passes_arguments(node):
            continue
        row = _first_argument_row(node.args[0], local_parsers, params)
        if row is not None:
            found.append(["call", relpath, name, _callee(node), *row])
    return found


def _passes_arguments(node: ast.AST) -> bool:
    """A call of a name or an attribute, with positional arguments."""
    return isinstance(node, ast.Call) and bool(node.args) and _callee(node) is not None


def _local_parsers(body: list[ast.AST]) -> dict[str, bool | None]:
    """The names a function binds to a parser it builds, with the parser's allow_abbrev."""
    local_parsers: dict[str, bool | None] = {}
    for node in body:
        if isinstance(node, ast.Assign) and is_argument_parser(node.value):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    local_parsers[target.id] = allow_abbrev(node.value)
    return local_parsers


def _first_argument_row(first: ast.AST, local_parsers: dict[str, bool | None], params: set[str]) -> list | None:
    """[kind, value] of a call's first argument: a parser ("parser", its allow_abbrev) or a
    parameter of the calling function ("param", its name); None for anything else."""
    if is_argument_parser(first):
        return ["parser", allow_abbrev(first)]
    if isinstance(first, ast.Name) and first.id in local_parsers:
        return ["parser", local_parsers[first.id]]
    if isinstance(first, ast.Name) and first.id in params:
        return ["param", first.id]
    return None


def wrapper_allows_abbreviations(project: ProjectIndex, path: str, line: int) -> bool | None:
    """Whether every parser the wrapper function (defined at `path:line`) is applied to accepts
    abbreviations: True or False when all are seen and agree, None when one cannot be seen or
    they disagree (then an abbreviated flag is not judged)."""
    facts = project.each_file("argument-parsers", file_parser_calls, _may_parse_arguments,
                              sys.modules[__name__], sys.modules[is_argument_parser.__module__])
    name = _function_at(facts, path, line)
    if name is None:
        return None
    values = _reached_parsers([f for f in facts if f[0] == "call"], name)
    return values.pop() if len(values) == 1 and None not in values else None


def _function_at(facts: list[list], path: str, line: int) -> str | None:
    """The name of the function file_parser_calls saw defined at `path:line`."""
    return next((f[2] for f in facts if f[0] == "def" and f[1] == path and f[3] == line), None)


def _reached_parsers(calls: list[list], name: str) -> set[bool | None]:
    """The allow_abbrev of each parser the function is applied to, followed up the callers that
    pass it on as a parameter (None: a parser that cannot be seen)."""
    values: set[bool | None] = set()
    frontier, seen = {name}, set()
    for _ in range(MAX_DEPTH):
        callers = _callers_passing(calls, frontier - seen, seen, values)
        if not callers:
            break
        frontier = callers
    else:
        values.add(None)
    return values


def _callers_passing(calls: list[list], callees: set[str], seen: set[str], values: set[bool | None]) -> set[str]:
    """One step up: the parsers the callees are called with go to `values`, and the callers
    that pass on a parameter of their own are returned."""
    callers = set()
    for callee in callees:
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
    return callers


def _may_parse_arguments(text: str) -> bool:
    return "ArgumentParser" in text or "def " in text
