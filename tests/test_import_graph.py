"""The package's import graph, imports inside functions included (a cycle hidden in a function
is still a cycle: it runs the first time the function does): no cycle between modules, none
between the package's parts (check/, contracts/, fix/, ...), no private name imported from
another module, and rule modules that share analyses through analysis/ rather than importing
one another. Imports under `if TYPE_CHECKING:` are annotations only and are left out."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from tests.helpers import package_syntax

# Rule modules that still import another rule module for a helper of its own: each should move
# to analysis/. The list may only shrink (test_rule_modules_import_no_rule_module).
RULE_MODULE_IMPORTS_LEFT = {
    ("sglang_contracts.contracts.attributes", "sglang_contracts.contracts.imports"),
    ("sglang_contracts.contracts.defensive", "sglang_contracts.contracts.attributes"),
    ("sglang_contracts.contracts.defensive", "sglang_contracts.contracts.serverargs"),
    ("sglang_contracts.contracts.dependencies", "sglang_contracts.contracts.stack"),
    ("sglang_contracts.contracts.doubles", "sglang_contracts.contracts.serverargs"),
    ("sglang_contracts.contracts.monkeypatches", "sglang_contracts.contracts.calls"),
    ("sglang_contracts.contracts.serverargs", "sglang_contracts.contracts.commandline"),
}


@dataclass(frozen=True)
class Import:
    importer: str  # the module whose code imports
    module: str  # the module imported (a package's __init__ by the package's name)
    name: str | None  # the name taken from it (`from module import name`), None for `import module`
    line: int


MODULES = {name: path for name, (path, _) in package_syntax().items()}


def _annotations_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports_of(name: str) -> list[Import]:
    """Every import of the package's own modules in module `name`, at any depth."""
    path = MODULES[name]
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found, pending = [], [package_syntax()[name][1]]
    while pending:
        for node in ast.iter_child_nodes(pending.pop()):
            if _annotations_only(node):
                pending.extend(node.orelse)
                continue
            pending.append(node)
            if isinstance(node, ast.Import):
                found += [Import(name, alias.name, None, node.lineno) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
                for alias in node.names:
                    if f"{base}.{alias.name}" in MODULES:  # `from package import module`
                        found.append(Import(name, f"{base}.{alias.name}", None, node.lineno))
                    else:
                        found.append(Import(name, base, alias.name, node.lineno))
    return [one for one in found if one.module in MODULES]


IMPORTS = [one for name in MODULES for one in imports_of(name)]


def edges(part_of=lambda module: module) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {part_of(name): set() for name in MODULES}
    for one in IMPORTS:
        if part_of(one.importer) != part_of(one.module):
            graph[part_of(one.importer)].add(part_of(one.module))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def part(module: str) -> str:
    """sglang_contracts.check.runner -> sglang_contracts.check; top-level modules are their own part."""
    return ".".join(module.split(".")[:2])


def test_the_reader_finds_imports_inside_functions() -> None:
    """The graph is only as good as its reader: the language server imports the engine inside a function."""
    assert any(one.module == "sglang_contracts.resident.engine" for one in imports_of("sglang_contracts.lsp.server"))
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_imports_itself_back() -> None:
    assert cycles(edges()) == []


def test_no_part_of_the_package_imports_itself_back() -> None:
    """check/ runs the rules of contracts/, which use the edits of fix/; fix/ imports neither."""
    assert cycles(edges(part)) == []


def test_no_private_name_is_imported_from_another_module() -> None:
    private = [f"{one.importer}:{one.line} imports {one.module}.{one.name}" for one in IMPORTS
               if one.name and one.name.startswith("_") and not one.name.startswith("__") and one.module != one.importer]
    assert private == []


def test_rule_modules_import_no_rule_module() -> None:
    """A rule module imports analyses (analysis/) and the rule machinery (contracts/base.py), not
    another rule module; analysis/ imports no rule module at all."""
    rule_modules = {name for name in MODULES if name.startswith("sglang_contracts.contracts.")} - {
        "sglang_contracts.contracts.base"}
    between = {(one.importer, one.module) for one in IMPORTS if one.importer in rule_modules and one.module in rule_modules}
    assert between <= RULE_MODULE_IMPORTS_LEFT, between - RULE_MODULE_IMPORTS_LEFT
    assert RULE_MODULE_IMPORTS_LEFT <= between, f"moved to analysis/: take {RULE_MODULE_IMPORTS_LEFT - between} off the list"
    assert not [one for one in IMPORTS if one.importer.startswith("sglang_contracts.analysis") and one.module in rule_modules]
