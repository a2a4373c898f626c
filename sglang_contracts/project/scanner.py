"""Extract one project file's facts with libcst: its SGLang-relevant imports and dotted reads."""

from __future__ import annotations

import re

import libcst as cst
from libcst.helpers import get_full_name_for_node

from sglang_contracts.project.facts import AttributeFact, FileFacts, ImportFact, Position
from sglang_contracts.project.positions import positions_of

IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
NOQA = re.compile(r"#\s*noqa(?P<colon>\s*:\s*(?P<codes>[^#\n]*))?", re.I)
CODE = re.compile(r"[A-Z]+[0-9]+")


def parse_noqa(text: str) -> dict[int, list[str] | None]:
    """`# noqa` silences every code on its line; `# noqa: SGC101,SGC102` only those.

    A `# noqa: something-else` written for another tool names none of our codes and
    silences nothing (a blanket reading would hide real breaks).
    """
    result: dict[int, list[str] | None] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if "noqa" not in line.lower():
            continue
        for match in NOQA.finditer(line):
            if not match.group("colon"):
                result[number] = None
                break
            codes = CODE.findall(match.group("codes") or "")
            if codes:
                existing = result.get(number, [])
                if existing is not None:
                    result[number] = sorted(set(existing) | set(codes))
    return result


def _catches_import_error(handler: cst.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
    for item in types:
        node = item.value if isinstance(item, cst.Element) else item
        name = get_full_name_for_node(node) or ""
        if name.rsplit(".", 1)[-1] in IMPORT_ERRORS:
            return True
    return False


def _is_type_checking(test: cst.BaseExpression) -> bool:
    return (get_full_name_for_node(test) or "").rsplit(".", 1)[-1] == "TYPE_CHECKING"


def _dotted_chain(node: cst.Attribute) -> tuple[str, list[cst.Name]] | None:
    """`a.b.c` -> ("a", [Name b, Name c]); None when the chain does not start at a plain name."""
    attrs: list[cst.Name] = []
    current: cst.BaseExpression = node
    while isinstance(current, cst.Attribute):
        attrs.append(current.attr)
        current = current.value
    if not isinstance(current, cst.Name):
        return None
    return current.value, attrs[::-1]


class _Collector(cst.CSTVisitor):
    def __init__(self, module_name: str, is_package: bool) -> None:
        self.module_name = module_name
        self.is_package = is_package
        self.guard_depth = 0
        self.type_checking_depth = 0
        self.scope_depth = 0
        self.imports: list[tuple[dict, cst.CSTNode, cst.CSTNode]] = []
        self.chains: list[tuple[str, list[cst.Name], bool]] = []
        self._stored: set[int] = set()

    # -- context -----------------------------------------------------------------------
    def visit_Try_body(self, node: cst.Try) -> None:
        guarded = any(_catches_import_error(h) for h in node.handlers)
        self.guard_depth += guarded

    def leave_Try_body(self, node: cst.Try) -> None:
        self.guard_depth -= any(_catches_import_error(h) for h in node.handlers)

    def visit_If_body(self, node: cst.If) -> None:
        self.type_checking_depth += _is_type_checking(node.test)

    def leave_If_body(self, node: cst.If) -> None:
        self.type_checking_depth -= _is_type_checking(node.test)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scope_depth += 1

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scope_depth -= 1

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.scope_depth += 1

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.scope_depth -= 1

    def _context(self) -> dict:
        return {
            "guarded": self.guard_depth > 0,
            "type_checking": self.type_checking_depth > 0,
            "module_level": self.scope_depth == 0,
        }

    # -- imports -----------------------------------------------------------------------
    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            module = get_full_name_for_node(alias.name)
            if not module:
                continue
            bound = alias.asname.name.value if alias.asname else module.split(".")[0]
            fact = {"module": module, "name": None, "bound": bound, **self._context()}
            self.imports.append((fact, alias.name, alias.name))

    def _absolute(self, node: cst.ImportFrom) -> str | None:
        module = get_full_name_for_node(node.module) if node.module else ""
        level = len(node.relative)
        if not level:
            return module
        package = self.module_name.split(".") if self.is_package else self.module_name.split(".")[:-1]
        if level - 1 > len(package):
            return None
        base = package[: len(package) - (level - 1)]
        return ".".join(base + ([module] if module else []))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = self._absolute(node)
        if not module:
            return
        anchor = node.module if node.module is not None else node
        if isinstance(node.names, cst.ImportStar):
            fact = {"module": module, "name": "*", "bound": "*", **self._context()}
            self.imports.append((fact, node.names, anchor))
            return
        for alias in node.names:
            name = get_full_name_for_node(alias.name)
            bound = alias.asname.name.value if alias.asname else name
            fact = {"module": module, "name": name, "bound": bound, **self._context()}
            self.imports.append((fact, alias.name, anchor))

    # -- dotted reads and writes -----------------------------------------------------------
    def _mark_store(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Attribute):
            self._stored.add(id(target))

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._mark_store(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._mark_store(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._mark_store(node.target)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        chain = _dotted_chain(node)
        if chain is None:
            return True
        root, attrs = chain
        if root not in ("self", "cls"):
            self.chains.append((root, attrs, id(node) in self._stored))
        return False  # a pure dotted chain holds nothing else to visit


def _syntax_error(text: str, error: Exception) -> tuple[int, int, str]:
    """Where and why the file does not parse; CPython's own message is the clearest, so ask it first."""
    import ast

    try:
        ast.parse(text)
    except SyntaxError as syntax:
        return syntax.lineno or 1, syntax.offset or 1, syntax.msg
    except ValueError as value:  # e.g. NUL bytes
        return 1, 1, str(value)
    if isinstance(error, cst.ParserSyntaxError):
        return error.raw_line, error.raw_column + 1, error.message.splitlines()[0]
    return 1, 1, f"{type(error).__name__}: {error}".splitlines()[0]


def scan_source(path: str, module_name: str, text: str) -> FileFacts:
    """Facts of one file. A file that does not parse yields a parse error, not an exception."""
    facts = FileFacts(path=path, module=module_name, noqa=parse_noqa(text))
    try:
        module = cst.parse_module(text)
    except Exception as error:  # ParserSyntaxError, and a few other types on exotic input
        facts.parse_error = _syntax_error(text, error)
        return facts
    collector = _Collector(module_name, path.endswith("__init__.py"))
    module.visit(collector)
    bound_names = {fact["bound"] for fact, _, _ in collector.imports}
    chains = [chain for chain in collector.chains if chain[0] in bound_names]
    wanted = [node for _, node, anchor in collector.imports for node in (node, anchor)]
    wanted += [name for _, attrs, _ in chains for name in attrs]
    where = positions_of(module, wanted)
    for fact, node, anchor in collector.imports:
        facts.imports.append(ImportFact(position=where[id(node)], module_position=where[id(anchor)], **fact))
    for root, attrs, store in chains:
        facts.attributes.append(
            AttributeFact(
                root=root,
                attrs=tuple(a.value for a in attrs),
                positions=tuple(where[id(a)] for a in attrs),
                store=store,
            )
        )
    return facts
