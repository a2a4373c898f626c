"""Module names chosen by the installed SGLang version, read statically.

A project that serves several SGLang releases may load the code for the installed one by
name: `importlib.import_module(f"pkg.patches.v{sglang.__version__.replace('.', '_')}")`, or
through a table, `importlib.import_module(_FOR_RELEASE[sglang.__version__])`. The scanner reads
such an argument into a template (`TemplateReader`); `module_for` gives the module it names on
one release, so the serving model (project/serving.py) knows which module each release loads.

A template is a tuple of parts, each (kind, value):
- ("text", s): literal text;
- ("version", replacements): the release's version string, with `.replace(a, b)` applied in
  order (replacements is JSON: [[a, b], ...]);
- ("table", mapping): the value the table maps the release's version string to (JSON: {version: text}).
"""

from __future__ import annotations

import ast
import json
from typing import Collection

from sglang_contracts.project.gates import ConditionReader

Template = tuple[tuple[str, str], ...]
MAX_DEPTH = 32  # parts of a module name built by `+` and f-strings, more than any name has
IMPORTERS = {"importlib.import_module", "import_module"}  # what loads a module by a name computed at run time


class TemplateReader:
    """The names a module binds to a template (`ver = sglang.__version__.replace(".", "_")`) or to
    a table of literal strings (`{"0.5.20": "pkg.for_0_5_20"}`), scope by scope, in source order."""

    def __init__(self, conditions: ConditionReader) -> None:
        self.conditions = conditions  # what is the release's version string
        self.templates: dict[tuple[str, str], Template] = {}
        self.tables: dict[tuple[str, str], dict[str, str]] = {}

    def bind(self, scope: str, name: str, value: ast.AST) -> None:
        key = (scope, name)
        self.templates.pop(key, None)
        self.tables.pop(key, None)
        if _is_string_table(value):
            self.tables[key] = {k.value: v.value for k, v in zip(value.keys, value.values)}
            return
        template = self.template(scope, value)
        if template is not None and any(kind != "text" for kind, _ in template):
            self.templates[key] = template

    def template(self, scope: str, node: ast.AST, depth: int = 0) -> Template | None:
        """The parts of a string expression built from the release's version; None: not one
        (nor one nested deeper than a module name is ever built: `"a" + "b" + ...` 5,000 times)."""
        if depth > MAX_DEPTH:
            return None
        reader = _TEMPLATE_READERS.get(type(node))  # by kind of node: this runs on every link of a chain
        if reader is not None:
            found = reader(self, scope, node, depth)
            # A name's template is kept and read whole: `v1 = v0 + v0`, `v2 = v1 + v1`, ... doubled
            # it each line (thirty lines: a billion parts, a minute and gigabytes; sixth campaign, M02's class).
            if isinstance(found, tuple) and len(found) > MAX_DEPTH:
                return None
            if found is not _NOT_BUILT:
                return found
        if (version := self._version(scope, node, depth)) is not None:
            return (("version", version),)
        return None

    # The readers of each kind of node: a template, None (not one), or _NOT_BUILT (then it may
    # still be the version itself, _version).
    def _text(self, scope: str, node: ast.Constant, depth: int) -> Template | object:
        return (("text", node.value),) if isinstance(node.value, str) else _NOT_BUILT

    def _named(self, scope: str, node: ast.Name, depth: int) -> Template | object:
        found = self._lookup(self.templates, scope, node.id)
        return found if found is not None else _NOT_BUILT

    def _looked_up(self, scope: str, node: ast.Subscript, depth: int) -> Template | None | object:
        """`TABLE[V]`."""
        return self._from_table(scope, node.value.id, node.slice) if isinstance(node.value, ast.Name) else _NOT_BUILT

    def _called(self, scope: str, node: ast.Call, depth: int) -> Template | None | object:
        """`TABLE.get(V)`, or `V.replace("a", "b")` of the version."""
        func = node.func
        if not isinstance(func, ast.Attribute) or node.keywords:
            return _NOT_BUILT
        if func.attr == "get" and isinstance(func.value, ast.Name) and len(node.args) == 1:
            return self._from_table(scope, func.value.id, node.args[0])
        if func.attr == "replace":
            return self._replaced(scope, node, depth)
        return _NOT_BUILT

    def _f_string(self, scope: str, node: ast.JoinedStr, depth: int) -> Template | None:
        """An f-string's parts, each a template (a formatted value with no format of its own)."""
        parts: list[tuple[str, str]] = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                if value.format_spec is not None or value.conversion not in (-1, ord("s")):
                    return None
                inner = self.template(scope, value.value, depth + 1)
            else:
                inner = self.template(scope, value, depth + 1)
            if inner is None:
                return None
            parts += inner
        return tuple(parts)

    def _sum(self, scope: str, node: ast.BinOp, depth: int) -> Template | None | object:
        """`a + b`: both operands' parts, when both are templates."""
        if not isinstance(node.op, ast.Add):
            return _NOT_BUILT
        left, right = self.template(scope, node.left, depth + 1), self.template(scope, node.right, depth + 1)
        return left + right if left is not None and right is not None else None

    def _replaced(self, scope: str, node: ast.Call, depth: int) -> Template | object:
        """`V.replace("a", "b")` of the release's version: the version with one more replacement."""
        if len(node.args) != 2 or not all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args):
            return _NOT_BUILT
        inner = self._version(scope, node.func.value, depth + 1)
        if inner is None:
            return _NOT_BUILT
        return (("version", json.dumps([*json.loads(inner), [node.args[0].value, node.args[1].value]])),)

    def _version(self, scope: str, node: ast.AST, depth: int) -> str | None:
        """The replacements made on the release's version string `node` is (JSON), if it is one:
        the version itself, a name bound to it, or `.replace(a, b)` of one of those."""
        self.conditions.scope = scope
        if self.conditions.version_of(node) == ("s", 0):
            return "[]"
        if isinstance(node, ast.Name):
            found = self._lookup(self.templates, scope, node.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "replace":
            found = self.template(scope, node, depth + 1)
        else:
            return None
        # a template that is the version alone: its replacements
        return found[0][1] if found is not None and len(found) == 1 and found[0][0] == "version" else None

    def _from_table(self, scope: str, table: str, key: ast.AST) -> Template | None:
        mapping = self._lookup(self.tables, scope, table)
        if mapping is None:
            return None
        self.conditions.scope = scope
        if self.conditions.version_of(key) != ("s", 0):
            return None
        return (("table", json.dumps(mapping, sort_keys=True)),)

    @staticmethod
    def _lookup(table: dict, scope: str, name: str):
        for key in ((scope, name), ("", name)):
            if key in table:
                return table[key]
        return None


_NOT_BUILT = object()  # a template reader's answer for a node it does not build
_TEMPLATE_READERS = {
    ast.Constant: TemplateReader._text, ast.JoinedStr: TemplateReader._f_string, ast.BinOp: TemplateReader._sum,
    ast.Name: TemplateReader._named, ast.Subscript: TemplateReader._looked_up, ast.Call: TemplateReader._called,
}


def _is_string_table(value: ast.AST) -> bool:
    """`{"0.5.20": "pkg.for_0_5_20", ...}`: a non-empty dict literal of strings to strings."""
    return isinstance(value, ast.Dict) and bool(value.keys) \
        and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys) \
        and all(isinstance(v, ast.Constant) and isinstance(v.value, str) for v in value.values)


def module_for(template: Template, package: str, version: str) -> str | None:
    """The absolute module the template names on a release of this version; None where the
    release gets none (a table without its version: the lookup fails)."""
    text = _module_text(template, version)
    if text is None:
        return None
    if not text.startswith("."):
        return text
    level = len(text) - len(text.lstrip("."))
    parts = package.split(".") if package else []
    if level - 1 > len(parts) or not package:
        return None
    base = parts[: len(parts) - (level - 1)]
    rest = text[level:]
    return ".".join(base + ([rest] if rest else []))


def _module_text(template: Template, version: str) -> str | None:
    """The module name the template spells on a release of this version, as written (relative or not)."""
    text = ""
    for kind, value in template:
        if kind == "text":
            text += value
        elif kind == "version":
            piece = version
            for old, new in json.loads(value):
                piece = piece.replace(old, new)
            text += piece
        else:
            mapped = json.loads(value).get(version)
            if mapped is None:
                return None
            text += mapped
    return text


_ANY_VERSION = "\0"  # stands for the version while the template's other parts are resolved


def named_modules(template: Template, package: str, modules: Collection[str]) -> list[str]:
    """The modules of `modules` the template may name on some release, whichever: the folders
    for other releases (`pkg.v0_5_19_patch`) that this choice loads on none of the two."""
    tables = [json.loads(value) for kind, value in template if kind == "table"]
    if tables:  # the names a table gives, whatever version picks them
        return _table_modules(template, package, modules, tables)
    skeleton = module_for(template, package, _ANY_VERSION)
    if skeleton is None:
        return []
    pieces = skeleton.split(_ANY_VERSION)
    return sorted(name for name in modules if _fills(name, pieces))


def _table_modules(template: Template, package: str, modules: Collection[str], tables: list[dict[str, str]]
                   ) -> list[str]:
    """The modules of `modules` the template names on the versions its tables list."""
    versions = {version for table in tables for version in table}
    named = {module_for(template, package, version) for version in versions}
    return sorted(name for name in named if name is not None and name in modules)


def _fills(name: str, pieces: list[str]) -> bool:
    """Is `name` the pieces in order, each gap between two of them filled by some text (a
    version)? Read left to right, each piece at its first place: no pattern, no backtracking."""
    if not name.startswith(pieces[0]) or not name.endswith(pieces[-1]) \
            or len(name) <= len(pieces[0]) + len(pieces[-1]) + len(pieces) - 2:
        return False
    at, end = len(pieces[0]), len(name) - len(pieces[-1])
    for piece in pieces[1:-1]:
        found = name.find(piece, at + 1, end - 1) if piece else at + 1
        if found < 0:
            return False
        at = found + len(piece)
    return at < end
