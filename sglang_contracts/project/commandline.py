"""The command line a project builds for upstream's server, and where it uses it.

slime and miles wrap `ServerArgs.add_cli_args`: they replace `parser.add_argument` for the
call with a function that skips the options whose name is in a skip list and registers the
rest as `--sglang-<option string>` with `dest=sglang_<dest>`, then read the values back as
`args.sglang_<dest>`. The wrapper is understood from its code:

- the prefix, from the f-strings that build the new option strings (`f"--sglang-{stem}"`) and
  the new dest (`f"sglang_{dest}"`);
- the skip list, from `if NAME in LIST: return` (and `continue`), and what is compared: the
  name built from `kwargs["dest"]` or the first long option string is argparse's dest;
- a rename table, a dict `TABLE` used as `TABLE.get(name, name)` or `TABLE[name]` on a name.

The uses of the pass-through are read from every Python file (cached per file content): reads
(`args.sglang_x`, `getattr(args, "sglang_x"[, d])`, `hasattr`, `vars(args)["sglang_x"]`),
writes (`args.sglang_x = ...`, `setattr`, the project's own `add_argument("--sglang-x")`),
`set_defaults(sglang_x=...)`, and flag strings (`"--sglang-x"`, `"--sglang-x=v"`, f-string
literal parts); flags are also read from shell scripts, YAML/JSON configs and docs.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable

from sglang_contracts.infra.boundary import read_project_text
from sglang_contracts.infra.pysource import child_nodes, parse_quietly
from sglang_contracts.project.facts import Position
from sglang_contracts.infra.shapes import Exactly, ListOf, Row, rows_of
from sglang_contracts.project.index import ProjectIndex, walk_project
from sglang_contracts.project.positions import SourcePositions
from sglang_contracts.infra.lines import LINE_BREAK, comment_start, find_from, numbered_lines

ENTRY = "add_cli_args"
TEXT_SUFFIXES = (".sh", ".bash", ".yml", ".yaml", ".json", ".md", ".rst", ".cfg", ".ini", ".txt")
SKIP_EXITS = (ast.Return, ast.Continue)
# Writes that build a record of the file's own (a config class, a dict or keywords for a
# namespace): they stand for the attribute in that file only, not on the parsed arguments.
LOCAL_RECORDS = ("class field", "dict key", "item assignment", "keyword")
# The project's own `add_argument("--sglang-x")` of a name upstream's options also produce can
# only be on another parser (argparse refuses a second one): a helper parser of that function.
LOCAL_PARSERS = ("add_argument",)


@dataclass(frozen=True)
class Wrapper:
    path: str
    line: int
    flag_prefix: str  # "--sglang-"
    dest_prefix: str  # "sglang_"
    skipped: tuple[tuple[str, Position], ...]  # entries of the skip list
    skip_list: str  # its name
    renames: tuple[tuple[str, str, Position], ...] = ()  # upstream name -> project name


@dataclass(frozen=True)
class Use:
    path: str
    position: Position
    kind: str  # "read", "probe" (hasattr, getattr with a default), "write", "default", "flag"
    name: str  # the attribute (`sglang_dp_size`) or the option string (`--sglang-dp-size`)
    value: str = ""  # a flag's value when written with it (`--sglang-x=v`, `--sglang-x v`)
    how: str = ""  # as written: "args.sglang_x", "hasattr", "set_defaults", ...
    scope: str = ""  # the enclosing function (`name@line`), "" at module level or outside Python


@dataclass
class PassThrough:
    wrappers: list[Wrapper]
    uses: list[Use] = field(default_factory=list)

    def set_by_project(self, read: Use) -> bool:
        """Does the project set the attribute itself before `read` may run: anywhere outside
        the reading function, or earlier in it? (Then the read does not depend on upstream.)"""
        return any((use.how not in LOCAL_RECORDS or use.path == read.path)
                   and (use.how not in LOCAL_PARSERS or (use.path, use.scope) == (read.path, read.scope))
                   and ((use.path, use.scope) != (read.path, read.scope) or use.position.line < read.position.line)
                   for use in self._writes.get(read.name, ()))

    def __post_init__(self) -> None:
        self._writes: dict[str, list[Use]] = {}

    def index(self) -> None:
        for use in self.uses:
            if use.kind in ("write", "default"):
                self._writes.setdefault(use.name, []).append(use)


# -- the wrapper -----------------------------------------------------------------------------------


def _template(node: ast.JoinedStr, bindings: dict[str, ast.AST]) -> str | None:
    """`f"--sglang-{stem}"` -> "--sglang-": the text before the last placeholder, with the
    placeholders before it that name a parameter bound to a string at the call filled in
    (`f"--{flag_prefix}-{stem}"` called with `flag_prefix="sglang"`); None when unknown."""
    if len(node.values) < 2 or not isinstance(node.values[-1], ast.FormattedValue):
        return None
    text = ""
    for part in node.values[:-1]:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            text += part.value
        elif isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name) \
                and isinstance(bindings.get(part.value.id), ast.Constant) \
                and isinstance(bindings[part.value.id].value, str):
            text += bindings[part.value.id].value
        else:
            return None
    return text


def _literal_head(node: ast.JoinedStr) -> str | None:
    """`f"--{x}"` -> "--": the literal text before the first placeholder."""
    if len(node.values) >= 2 and isinstance(node.values[0], ast.Constant) and isinstance(node.values[0].value, str) \
            and isinstance(node.values[1], ast.FormattedValue):
        return node.values[0].value
    return None


FLAG_PREFIX = re.compile(r"--[A-Za-z][\w-]*-")
DEST_PREFIX = re.compile(r"[A-Za-z]\w*_")


def _is_string(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _strings_of(node: ast.AST) -> list[ast.Constant] | None:
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and node.elts and all(_is_string(e) for e in node.elts):
        return list(node.elts)  # type: ignore[arg-type]
    return None


def _assigned_lists(scopes: list[ast.AST]) -> dict[str, list[ast.Constant]]:
    """`NAME = [...]` of strings, and `NAME = OTHER + [...]` of such lists, in order."""
    found: dict[str, list[ast.Constant]] = {}
    for scope in scopes:
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                strings = _list_items(node.value, found)
                if strings is not None:
                    found[node.targets[0].id] = strings
    return found


def _list_items(node: ast.AST | None, lists: dict[str, list[ast.Constant]]) -> list[ast.Constant] | None:
    if isinstance(node, ast.Name):
        return lists.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _list_items(node.left, lists), _list_items(node.right, lists)
        return left + right if left is not None and right is not None else None
    return _strings_of(node) if node is not None else None


def _assigned_tables(scopes: list[ast.AST]) -> dict[str, ast.Dict]:
    found: dict[str, ast.Dict] = {}
    for scope in scopes:
        for node in ast.walk(scope):
            if _assigns_string_table(node):
                found[node.targets[0].id] = node.value
    return found


def _assigns_string_table(node: ast.AST) -> bool:
    """`NAME = {"a": "b", ...}`: a name assigned a non-empty dict of strings to strings."""
    return isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
        and isinstance(node.value, ast.Dict) and bool(node.value.keys) \
        and all(_is_string(k) for k in node.value.keys) and all(_is_string(v) for v in node.value.values)


def _calls_add_cli_args(function: ast.AST) -> bool:
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == ENTRY
               and isinstance(node.func.value, ast.Name) and node.func.value.id == "ServerArgs"
               for node in ast.walk(function))


def _wrapper_in(function: ast.FunctionDef, module: ast.Module, relpath: str, at: SourcePositions,
                bindings: dict[str, ast.AST]) -> list | None:
    """The wrapper a function installs around `ServerArgs.add_cli_args(parser)`, as JSON, with
    its parameters bound as at one call (`bindings`): its replacement of `add_argument`, the
    prefixes its f-strings build, its skip list and its rename table."""
    body = _replacement(function)
    if body is None:
        return None
    prefixes = _prefixes(body, bindings)
    if prefixes is None:
        return None  # a prefix this tool cannot tell: no judgement rather than a wrong one
    flag_prefix, dest_prefix = prefixes
    skip_list, entries = _skip_list(body, _bound_lists(module, function, bindings), at)
    renames = _renames(body, _assigned_tables([module, function]), at)
    return ["wrapper", relpath, function.lineno, flag_prefix, dest_prefix, skip_list, entries, renames]


def _prefixes(body: ast.FunctionDef, bindings: dict[str, ast.AST]) -> tuple[str, str] | None:
    """(option prefix, dest prefix) the replacement's f-strings build (the dest's, from the
    option's when none builds one); None when no option prefix can be told."""
    heads = _f_string_heads(body, bindings)
    # Each pattern named where it is matched: tests/robustness reads how the code uses it.
    flag_prefix = next((h for h in heads if h and FLAG_PREFIX.fullmatch(h)), None)
    if flag_prefix is None:
        return None
    dest_prefix = next((h for h in heads if h and DEST_PREFIX.fullmatch(h)), None)
    return flag_prefix, dest_prefix or flag_prefix[2:].replace("-", "_")


def _f_string_heads(body: ast.FunctionDef, bindings: dict[str, ast.AST]) -> list[str | None]:
    """The _template of each f-string in the replacement."""
    return [_template(node, bindings) for node in ast.walk(body) if isinstance(node, ast.JoinedStr)]


def _bound_lists(module: ast.Module, function: ast.FunctionDef, bindings: dict[str, ast.AST]
                 ) -> dict[str, list[ast.Constant]]:
    """The lists of strings the module and function assign, and the parameters bound to one."""
    lists = _assigned_lists([module, function])
    for name, value in bindings.items():
        items = _list_items(value, lists)
        if items is not None:
            lists[name] = items
    return lists


def _replacement(function: ast.FunctionDef) -> ast.FunctionDef | None:
    """The inner function the wrapper assigns to `parser.add_argument`."""
    replaced = {node.value.id for node in ast.walk(function)
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
                and any(isinstance(t, ast.Attribute) and t.attr == "add_argument" for t in node.targets)}
    return next((node for node in ast.walk(function) if isinstance(node, ast.FunctionDef) and node.name in replaced),
                None)


def _skip_list(body: ast.FunctionDef, lists: dict[str, list], at: SourcePositions) -> tuple[str, list]:
    """(the list `if NAME in LIST: return` skips by, its entries as [value, line, col]); the last one found."""
    skip_list, entries = "", []
    for node in ast.walk(body):
        if not _skips(node):
            continue
        for compare in ast.walk(node.test):
            if _member_of_list(compare, lists):
                skip_list = compare.comparators[0].id
                entries = [[item.value, at.start(item).line, at.start(item).col] for item in lists[skip_list]]
    return skip_list, entries


def _skips(node: ast.AST) -> bool:
    """`if <test>: return` (or `continue`), the test a comparison."""
    return isinstance(node, ast.If) and isinstance(node.test, (ast.Compare, ast.BoolOp)) \
        and any(isinstance(item, SKIP_EXITS) for item in node.body)


def _member_of_list(compare: ast.AST, lists: dict[str, list]) -> bool:
    """`X in LIST`, LIST one of `lists`."""
    return isinstance(compare, ast.Compare) and isinstance(compare.ops[0], ast.In) \
        and isinstance(compare.comparators[0], ast.Name) and compare.comparators[0].id in lists


def _renames(body: ast.FunctionDef, tables: dict[str, ast.Dict], at: SourcePositions) -> list:
    """The rename table used as `TABLE.get(name, name)` or `TABLE[name]`, as [upstream name,
    project name, line, col] rows; the last one found."""
    renames = []
    for node in ast.walk(body):
        table = _looked_up(node)
        if table in tables:
            renames = [[key.value, value.value, at.start(key).line, at.start(key).col] for key, value in
                       zip(tables[table].keys, tables[table].values)]
    return renames


def _looked_up(node: ast.AST) -> str | None:
    """The name of the dict `NAME.get(...)` or `NAME[...]` reads from; None for another node."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
            and isinstance(node.func.value, ast.Name):
        return node.func.value.id
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and isinstance(node.ctx, ast.Load):
        return node.value.id
    return None


def _call_bindings(function: ast.FunctionDef, module: ast.Module) -> list[dict[str, ast.AST]]:
    """The function's parameters as bound at each call of it in the module (the prefix and the
    skip list may be arguments: miles' `_add_prefixed_server_args(parser, flag_prefix="sglang",
    ...)`); one unbound set when it is never called there."""
    names = [arg.arg for arg in function.args.posonlyargs + function.args.args]
    found = []
    for node in ast.walk(module):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == function.name:
            bindings: dict[str, ast.AST] = dict(zip(names, node.args))
            bindings.update({keyword.arg: keyword.value for keyword in node.keywords if keyword.arg})
            found.append(bindings)
    return found or [{}]


# ["wrapper", path, line, flag prefix, dest prefix, skip list, its entries [value, line, col],
# renames [upstream name, project name, line, col]]
@rows_of(Row(Exactly("wrapper"), str, int, str, str, str, ListOf(Row(str, int, int)), ListOf(Row(str, str, int, int))))
def _file_wrappers(relpath: str, text: str) -> list[list]:
    try:
        tree = parse_quietly(text, relpath)
    except Exception:  # an unparsable file is SGC000's to report
        return []
    at = SourcePositions(text)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and _calls_add_cli_args(node):
            for bindings in _call_bindings(node, tree):
                wrapper = _wrapper_in(node, tree, relpath, at, bindings)
                if wrapper is not None:
                    found.append(wrapper)
    return found


# -- the uses --------------------------------------------------------------------------------------


def _flag_pattern(flag_prefix: str) -> re.Pattern:
    return re.compile(rf"(?<![\w-]){re.escape(flag_prefix)}([A-Za-z0-9][\w-]*)(?:(?:=|[ \t]+)([^\s{{}}\"'`,;)\]\\-][^\s{{}}\"'`,;)\]\\]*))?")


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def _dest_of(call: ast.Call) -> str | None:
    dest = _dest_keyword(call)
    if dest is not None:
        return dest
    strings = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    long = next((s for s in strings if s.startswith("--")), None)
    return long.lstrip("-").replace("-", "_") if long else None


def _dest_keyword(call: ast.Call) -> str | None:
    """`dest="name"`, given as a literal."""
    for keyword in call.keywords:
        if keyword.arg == "dest" and _is_string(keyword.value):
            return keyword.value.value
    return None


@dataclass
class _FileUses:
    """What _uses_in's stages share for one file: how to read it, and the rows found so far
    ([kind, name, value, how, line, col, scope], in the order the tree is walked)."""

    at: SourcePositions
    lines: list[str]
    flags: re.Pattern
    flag_prefix: str
    dest_prefix: str
    scopes: dict[int, list]
    prose: set[int]
    guarded: set[int]
    docstrings: set[int]
    own_option_strings: set[int] = field(default_factory=set)
    found: list[list] = field(default_factory=list)

    def add(self, node: ast.AST, kind: str, name: str, how: str, value: str = "") -> None:
        where = self.at.attribute_name(node) if isinstance(node, ast.Attribute) else self.at.start(node)
        self.found.append([kind, name, value, how, where.line, where.col, self.scopes.get(id(node), "")])

    def named(self, value: object) -> bool:
        """Whether `value` is a string naming a pass-through dest (`sglang_x`)."""
        return isinstance(value, str) and value.startswith(self.dest_prefix)


def _uses_in(relpath: str, text: str, flag_prefix: str, dest_prefix: str) -> list[list]:
    """The rows of every use of the pass-through in one Python file: its names written, read and
    probed in code (one walk of the tree), then its flags in strings (a second walk)."""
    try:
        tree = parse_quietly(text, relpath)
    except Exception:
        return []
    uses = _FileUses(SourcePositions(text), LINE_BREAK.split(text), _flag_pattern(flag_prefix), flag_prefix,
                     dest_prefix, _function_scopes(tree), _prose_nodes(tree), _hasattr_guarded(tree),
                     _docstrings(tree))
    _code_uses(uses, tree)
    _string_uses(uses, tree)
    return uses.found


def _code_uses(uses: _FileUses, tree: ast.Module) -> None:
    """The pass-through's names written, read and probed in code."""
    for node in ast.walk(tree):
        _record_writes(uses, node)
        _keyword_writes(uses, node)
        if isinstance(node, ast.Attribute) and uses.named(node.attr):
            _attribute_use(uses, node)
        elif isinstance(node, ast.Call):
            _call_use(uses, node)
        elif isinstance(node, ast.Subscript) and _is_vars_call(node.value):
            _vars_item_use(uses, node)


def _string_uses(uses: _FileUses, tree: ast.Module) -> None:
    """The pass-through's flags in strings and f-strings (not docstrings, nor the project's own option strings)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            _f_string_flags(uses, node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in uses.docstrings \
                and id(node) not in uses.own_option_strings and uses.flag_prefix in node.value:
            _string_flags(uses, node)


def _function_scopes(tree: ast.Module) -> dict[int, list]:
    """Each node's function as [name, line]: a line number the incremental check moves with the
    lines (incremental.moved_only), not a string that would make a typed line change the rows."""
    scopes: dict[int, list] = {}
    for function in ast.walk(tree):  # outer functions first: an inner one overrides for its own nodes
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(function):
                scopes[id(inner)] = [function.name, function.lineno]
    return scopes


def _prose_nodes(tree: ast.Module) -> set[int]:
    """Strings that describe an option to a reader (`help=`, `description=`): a flag named there
    is prose, not a command line anything runs."""
    return {id(node) for keyword in ast.walk(tree) if isinstance(keyword, ast.keyword)
            and keyword.arg in PROSE_KEYWORDS for node in ast.walk(keyword.value)}


def _hasattr_guarded(tree: ast.Module) -> set[int]:
    """Reads inside `if hasattr(x, "sglang_y"):`, which cannot raise."""
    guarded: set[int] = set()
    for branch in ast.walk(tree):
        if isinstance(branch, ast.If):
            probed = {call.args[1].value for call in ast.walk(branch.test) if _is_hasattr_of_string(call)}
            guarded.update(id(node) for statement in branch.body for node in ast.walk(statement)
                           if isinstance(node, ast.Attribute) and node.attr in probed)
    return guarded


def _is_hasattr_of_string(call: ast.AST) -> bool:
    """`hasattr(x, "name")`."""
    return isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "hasattr" \
        and len(call.args) == 2 and _is_string(call.args[1])


def _record_writes(uses: _FileUses, node: ast.AST) -> None:
    """The project's own record of such names: a config class's fields, a dict's keys, an item assigned."""
    if isinstance(node, ast.ClassDef):
        _class_fields(uses, node)
    elif isinstance(node, ast.Dict):
        for key in node.keys:
            if isinstance(key, ast.Constant) and uses.named(key.value):
                uses.add(key, "write", key.value, "dict key")
    elif isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load) \
            and isinstance(node.slice, ast.Constant) and uses.named(node.slice.value):
        uses.add(node.slice, "write", node.slice.value, "item assignment")


def _class_fields(uses: _FileUses, node: ast.ClassDef) -> None:
    for item in node.body:
        targets = [item.target] if isinstance(item, ast.AnnAssign) else \
            item.targets if isinstance(item, ast.Assign) else []
        for target in targets:
            if isinstance(target, ast.Name) and uses.named(target.id):
                uses.add(target, "write", target.id, "class field")


def _keyword_writes(uses: _FileUses, node: ast.AST) -> None:
    """`f(sglang_x=...)`, but for set_defaults (a default: _call_use)."""
    if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Attribute) and node.func.attr == "set_defaults"):
        for keyword in node.keywords:
            if keyword.arg and uses.named(keyword.arg):
                uses.add(keyword.value, "write", keyword.arg, "keyword")


def _attribute_use(uses: _FileUses, node: ast.Attribute) -> None:
    """`args.sglang_x`: a read, unless under a hasattr guard or assigned."""
    if isinstance(node.ctx, ast.Load) and id(node) not in uses.guarded:
        uses.add(node, "read", node.attr, "attribute")
    else:
        uses.add(node, "write", node.attr, "assignment")


def _call_use(uses: _FileUses, node: ast.Call) -> None:
    """getattr/hasattr/setattr of a named dest, set_defaults, the project's own add_argument, and
    `vars(args).get("sglang_x")`."""
    callee = node.func.id if isinstance(node.func, ast.Name) else \
        node.func.attr if isinstance(node.func, ast.Attribute) else ""
    if callee in ("getattr", "hasattr", "setattr"):
        _attribute_function_use(uses, node, callee)
    elif callee == "set_defaults":
        _defaults_use(uses, node)
    elif callee == "add_argument":
        _own_add_argument(uses, node)
    elif callee == "get":
        _vars_get_use(uses, node)


def _vars_get_use(uses: _FileUses, node: ast.Call) -> None:
    """`vars(args).get("sglang_x")`: a probe."""
    if not (isinstance(node.func, ast.Attribute) and _is_vars_call(node.func.value) and node.args):
        return
    key = node.args[0]
    if isinstance(key, ast.Constant) and uses.named(key.value):
        uses.add(key, "probe", key.value, "vars().get")


def _attribute_function_use(uses: _FileUses, node: ast.Call, callee: str) -> None:
    """`getattr(args, "sglang_x"[, default])` (a probe with a default), `hasattr`, `setattr`."""
    literal = node.args[1] if len(node.args) > 1 else None
    name = literal.value if _is_string(literal) else None
    if name and uses.named(name):
        kind = "write" if callee == "setattr" else "probe" if callee == "hasattr" or len(node.args) > 2 else "read"
        uses.add(literal, kind, name, callee)


def _defaults_use(uses: _FileUses, node: ast.Call) -> None:
    """`parser.set_defaults(sglang_x=...)`."""
    for keyword in node.keywords:
        if keyword.arg and uses.named(keyword.arg):
            uses.add(keyword, "default", keyword.arg, "set_defaults")


def _own_add_argument(uses: _FileUses, node: ast.Call) -> None:
    """The project's own `add_argument`: its option strings are no flag uses, its dest a write."""
    uses.own_option_strings.update(id(a) for a in node.args)
    dest = _dest_of(node)
    if dest and uses.named(dest):
        uses.add(node, "write", dest, "add_argument")


def _is_vars_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars"


def _vars_item_use(uses: _FileUses, node: ast.Subscript) -> None:
    """`vars(args)["sglang_x"]`, read or written."""
    key = node.slice
    if isinstance(key, ast.Constant) and uses.named(key.value):
        uses.add(key, "read" if isinstance(node.ctx, ast.Load) else "write", key.value, "vars()[...]")


def _f_string_flags(uses: _FileUses, node: ast.JoinedStr) -> None:
    """Flags in an f-string's literal parts, which carry no position of their own: the
    f-string's start is given."""
    for part in node.values:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            uses.own_option_strings.add(id(part))
            how = "prose" if id(node) in uses.prose else "string"
            for match in uses.flags.finditer(part.value):
                uses.add(node, "flag", uses.flag_prefix + match.group(1), how, match.group(2) or "")


def _string_flags(uses: _FileUses, node: ast.Constant) -> None:
    """Flags in a string, each at the place it is written."""
    start = uses.at.start(node)
    single = "\n" not in node.value and node.end_lineno == node.lineno
    written = None if single else _written_at(uses.lines, node, start)
    for match in uses.flags.finditer(node.value):
        flag = uses.flag_prefix + match.group(1)
        line, col = (start.line, start.col + match.start() + 1) if written is None else written(flag)
        uses.found.append(["flag", flag, match.group(2) or "", "prose" if id(node) in uses.prose else "string",
                           line, col, uses.scopes.get(id(node), "")])


def _written_at(lines: list[str], node: ast.Constant, start: Position) -> Callable[[str], tuple[int, int]]:
    """For a string over several lines (a triple-quoted one, or literals concatenated across
    lines): a finder of where each flag, in order, is written in the source, so that a finding
    points at the flag and not at the expression's first line; the expression's start when
    the flag is not written as is (an escape inside it)."""
    cursor = (start.line - 1, start.col - 1)  # rows and columns from 0

    def find(flag: str) -> tuple[int, int]:
        nonlocal cursor
        written = find_from(lines, flag, *cursor, last_row=(node.end_lineno or node.lineno) - 1)
        if written is None:
            return start.line, start.col
        cursor = (written[0], written[1] + len(flag))
        return written[0] + 1, written[1] + 1

    return find


def _text_flags(relpath: str, text: str, flag_prefix: str) -> list[Use]:
    flags = _flag_pattern(flag_prefix)
    found = []
    for number, line in enumerate(numbered_lines(text), start=1):
        if flag_prefix not in line:
            continue
        comment = comment_start(line, spaced=True)
        for match in flags.finditer(line):
            how = "comment" if comment is not None and match.start() > comment else "text"
            found.append(Use(relpath, Position(number, match.start() + 1), "flag", flag_prefix + match.group(1),
                             match.group(2) or "", how))
    return found


PROSE_KEYWORDS = ("help", "description", "epilog", "usage")


def _accept_text(name: str) -> bool:
    return name.endswith(TEXT_SUFFIXES)


LAUNCHER = "sglang.launch_server"
# Upstream's own command line, as `python -m sglang.launch_server` takes it: no prefix, no skip list.
DIRECT = Wrapper("", 0, "--", "", (), "")
LONG_FLAG = re.compile(r"--[A-Za-z0-9][\w-]*")


# [path, kind, name, value, how, line, col, [function, line] or "" at module level]: a Use's fields
USE_ROW = Row(str, str, str, str, str, int, int, (Row(str, int), str))


@rows_of(USE_ROW)
def _use_rows(relpath: str, text: str, flag_prefix: str, dest_prefix: str) -> list[list]:
    return [[relpath, *use] for use in _uses_in(relpath, text, flag_prefix, dest_prefix)]


@rows_of(USE_ROW)
def _launch_rows(relpath: str, text: str) -> list[list]:
    return [[relpath, *flag] for flag in _launch_flags(relpath, text)]


def _launch_flags(relpath: str, text: str) -> list[list]:
    """Flags of argument lists assembled by hand for `python -m sglang.launch_server`: the string
    elements of the function (or module) that names the launcher in a list, in its list literals
    and `append`/`extend`/`+=` calls, each with the literal that follows it as its value."""
    try:
        tree = parse_quietly(text, relpath)
    except Exception:
        return []
    at = SourcePositions(text)
    scopes = [node for node in ast.walk(tree) if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef))]
    found = _config_field_flags(tree, at) if any(_names_a_flag(node) for node in ast.walk(tree)) else []
    for scope in scopes:
        found += _launch_list_flags(scope, at)
    return found


def _config_field_flags(tree: ast.Module, at: SourcePositions) -> list[list]:
    """A config class of the project whose fields this file turns into `--<field>` flags."""
    found: list[list] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) \
                        and not item.target.id.startswith("_"):
                    where = at.start(item.target)
                    found.append(["flag", "--" + item.target.id.replace("_", "-"), "", "config field",
                                  where.line, where.col, ""])
    return found


def _launch_list_flags(scope: ast.AST, at: SourcePositions) -> list[list]:
    """The flags of the list literals of a function (or module) whose own code names the launcher in one."""
    lists = [node for node in _own_nodes(scope) if isinstance(node, (ast.List, ast.Tuple))]
    if not _names_launcher(lists):
        return []
    found: list[list] = []
    for node in lists:
        elements = node.elts
        for index, element in enumerate(elements):
            flag = _list_flag(element, elements[index + 1] if index + 1 < len(elements) else None)
            if flag is not None:
                where = at.start(element)
                found.append(["flag", *flag, "launch list", where.line, where.col + 1, ""])
    return found


def _names_launcher(lists: list[ast.List | ast.Tuple]) -> bool:
    return any(isinstance(e, ast.Constant) and e.value == LAUNCHER for node in lists for e in node.elts)


def _list_flag(element: ast.expr, following: ast.expr | None) -> tuple[str, str] | None:
    """(flag, value) of a list element `"--x=v"`, or `"--x"` followed by its value; None for another element."""
    if not (_is_string(element) and LONG_FLAG.fullmatch(element.value.split("=")[0])):
        return None
    flag, _, value = element.value.partition("=")
    if not value and _is_string(following) and not following.value.startswith("-"):
        value = following.value
    return flag, value


def _names_a_flag(node: ast.AST) -> bool:
    """`f"--{name.replace('_', '-')}"` or `"--" + name.replace("_", "-")`: a field name made a flag."""
    value = _dashed_part(node)
    return value is not None and isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
        and value.func.attr == "replace" and [getattr(arg, "value", None) for arg in value.args] == ["_", "-"]


def _dashed_part(node: ast.AST) -> ast.AST | None:
    """X of `f"--{X}"` or `"--" + X`; None for another node."""
    if isinstance(node, ast.JoinedStr) and _literal_head(node) == "--":
        return node.values[1].value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and isinstance(node.left, ast.Constant) \
            and node.left.value == "--":
        return node.right
    return None


def _own_nodes(scope: ast.AST):
    """The nodes of a function's (or module's) own code, not of the functions defined in it."""
    pending = child_nodes(scope)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        yield node
        pending.extend(child_nodes(node))


def _launch_commands(relpath: str, text: str) -> list[Use]:
    """Flags of a shell command line that runs `sglang.launch_server` (continued with `\\`)."""
    found: list[Use] = []
    running = False
    for number, line in enumerate(numbered_lines(text), start=1):
        running = running or LAUNCHER in line
        if not running:
            continue
        for match in _flag_pattern("--").finditer(line):
            found.append(Use(relpath, Position(number, match.start() + 1), "flag", "--" + match.group(1),
                             match.group(2) or "", "launch command"))
        running = line.rstrip().endswith("\\")
    return found


# Megatron's parse_args(..., ignore_unknown_args=True), as slime calls it: the flags the
# project's own parsers leave (parse_known_args) are dropped there too, without a word.
IGNORES_UNKNOWN = re.compile(r"\bignore_unknown_args\s*=\s*True\b")


def ignores_unknown_flags(text: str) -> bool:
    """Whether a file parses a command line so that flags no parser knows are ignored."""
    # The word first: a pattern opening with `\b` is tried at every position of every file.
    return "ignore_unknown_args" in text and IGNORES_UNKNOWN.search(text) is not None


def _scope(row_scope: list | str) -> str:
    """Use.scope of a row's [function name, line] ("" at module level)."""
    return f"{row_scope[0]}@{row_scope[1]}" if row_scope else ""


def direct_launch(project: ProjectIndex) -> PassThrough | None:
    """Upstream's server launched with flags the project writes itself; None when it never is."""
    module = sys.modules[__name__]
    uses = [Use(relpath, Position(line, col), kind, name, value, how, _scope(scope)) for relpath, kind, name, value, how,
            line, col, scope in project.each_file("launch-lists", _launch_rows, _may_launch, module)]
    root = project.root.resolve()
    for path in walk_project([root], lambda name: name.endswith((".sh", ".bash"))):
        text = read_project_text(path, root)
        if text and LAUNCHER in text:
            uses.extend(_launch_commands(path.relative_to(root).as_posix(), text))
    if not uses:
        return None
    result = PassThrough([DIRECT], uses)
    result.index()
    return result


def pass_through(project: ProjectIndex) -> list[PassThrough]:
    """The project's pass-throughs of upstream's command line, one per wrapper (miles prefixes
    it twice: `--sglang-` and `--eval-sglang-`), with the uses of each prefix."""
    module = sys.modules[__name__]
    wrappers = _wrappers(project, module)
    root = project.root.resolve()
    texts = [(path, read_project_text(path, root)) for path in walk_project([root], _accept_text)] if wrappers else []
    return [_wrapper_pass_through(project, wrapper, texts, root, module) for wrapper in wrappers]


def _wrappers(project: ProjectIndex, module: object) -> list[Wrapper]:
    """Every wrapper of `add_cli_args` in the project's Python files."""
    raw = project.each_file("cli-wrappers", _file_wrappers, _may_wrap, module)
    return [Wrapper(path, line, flag_prefix, dest_prefix,
                    tuple((text, Position(l, c)) for text, l, c in entries), skip_list,
                    tuple((old, new, Position(l, c)) for old, new, l, c in renames))
            for _, path, line, flag_prefix, dest_prefix, skip_list, entries, renames in raw]


def _wrapper_pass_through(project: ProjectIndex, wrapper: Wrapper, texts: list[tuple[Path, str | None]], root: Path,
                          module: object) -> PassThrough:
    """One wrapper's pass-through, with the uses of its prefix in the Python files and the text files."""
    flag_prefix, dest_prefix = wrapper.flag_prefix, wrapper.dest_prefix
    result = PassThrough([wrapper])
    analyse = partial(_use_rows, flag_prefix=flag_prefix, dest_prefix=dest_prefix)  # sendable to a worker
    for relpath, kind, name, value, how, line, col, scope in project.each_file(
            f"cli-uses {flag_prefix} {dest_prefix}", analyse,
            partial(_may_use, flag_prefix=flag_prefix, dest_prefix=dest_prefix), module):
        result.uses.append(Use(relpath, Position(line, col), kind, name, value, how, _scope(scope)))
    for path, text in texts:
        if text and flag_prefix in text:
            result.uses.extend(_text_flags(path.relative_to(root).as_posix(), text, flag_prefix))
    result.uses.sort(key=lambda use: (use.path, use.position.line, use.position.col))
    result.index()
    return result


def _may_launch(text: str) -> bool:
    return LAUNCHER in text


def _may_wrap(text: str) -> bool:
    return ENTRY in text and "add_argument" in text


def _may_use(text: str, flag_prefix: str, dest_prefix: str) -> bool:
    return flag_prefix in text or dest_prefix in text
