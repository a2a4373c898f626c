"""Extract one project file's facts with libcst: its SGLang-relevant imports and dotted reads."""

from __future__ import annotations

import re

import libcst as cst
from libcst.helpers import get_full_name_for_node

from sglang_contracts.project.facts import (
    ArgFact,
    AttributeFact,
    CallFact,
    ClassFact,
    FileFacts,
    ImportFact,
    MethodFact,
    Position,
    ReadFact,
    Receiver,
)
from sglang_contracts.project.positions import positions_of
from sglang_contracts.project.scopes import (
    TypeTable,
    annotation_types,
    decorator_names,
    function_types,
    parameter_list,
)

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


def _body(node: cst.ClassDef | cst.FunctionDef) -> list[cst.CSTNode]:
    return list(node.body.body) if isinstance(node.body, cst.IndentedBlock) else []


def _statements(node: cst.ClassDef) -> list[cst.BaseSmallStatement]:
    return [small for line in _body(node) if isinstance(line, cst.SimpleStatementLine) for small in line.body]


class _GetattrProbe(cst.CSTVisitor):
    """In a `__getattr__(self, name)`: `getattr(Source, name)` fetches, and names it answers itself."""

    def __init__(self, parameter: str) -> None:
        self.parameter = parameter
        self.sources: list[str] = []
        self.names: list[str] = []

    def visit_Call(self, node: cst.Call) -> None:
        if get_full_name_for_node(node.func) == "getattr" and len(node.args) >= 2:
            first, second = node.args[0].value, node.args[1].value
            source = get_full_name_for_node(first)
            if isinstance(second, cst.Name) and second.value == self.parameter and source and source != "self":
                self.sources.append(source)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if not (isinstance(node.left, cst.Name) and node.left.value == self.parameter):
            return
        for target in node.comparisons:
            if isinstance(target.operator, (cst.Equal, cst.In)):
                value = target.comparator
                items = value.elements if isinstance(value, (cst.Tuple, cst.List, cst.Set)) else [value]
                for item in items:
                    node_value = item.value if isinstance(item, cst.BaseElement) else item
                    if isinstance(node_value, cst.SimpleString):
                        self.names.append(node_value.evaluated_value)


def _calls_base_init(function: cst.FunctionDef, bases: tuple[str, ...]) -> bool:
    """Does `__init__` call `super().__init__(...)` or `Base.__init__(self, ...)`?"""
    found = False

    class Probe(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            nonlocal found
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value == "__init__":
                owner = func.value
                if isinstance(owner, cst.Call) and get_full_name_for_node(owner.func) == "super":
                    found = True
                elif get_full_name_for_node(owner) in bases:
                    found = True

    function.visit(Probe())
    return found


class _ClassSummary:
    """What a module-level class gives its instances, gathered before its body is visited."""

    def __init__(self, node: cst.ClassDef) -> None:
        self.node = node
        self.name = node.name.value
        self.bases = tuple(
            name for arg in node.bases if arg.keyword is None and (name := get_full_name_for_node(arg.value))
        )
        self.attributes = TypeTable()
        self.provided: set[str] = set()
        self.method_types: dict[int, dict[str, tuple[str, ...]]] = {}
        methods = [m for m in _body(node) if isinstance(m, cst.FunctionDef)]
        for statement in _statements(node):
            if isinstance(statement, cst.AnnAssign) and isinstance(statement.target, cst.Name):
                self.provided.add(statement.target.value)
                self.attributes.bind(statement.target.value, annotation_types(statement.annotation.annotation))
            elif isinstance(statement, cst.Assign):
                for target in statement.targets:
                    if isinstance(target.target, cst.Name):
                        self.provided.add(target.target.value)
        self.provided.update(m.name for m in _body(node) if isinstance(m, cst.ClassDef))
        for method in methods:
            self.provided.add(method.name.value)
            self.method_types[id(method)] = function_types(method, self.name, self.attributes)
        self.provided.update(self.attributes.names)
        self.methods = methods
        self.getattr_sources: list[str] = []
        self.getattr_names: list[str] = []
        getattr_method = next((m for m in methods if m.name.value == "__getattr__"), None)
        if getattr_method is not None:
            params = [*getattr_method.params.posonly_params, *getattr_method.params.params]
            if len(params) >= 2:
                probe = _GetattrProbe(params[1].name.value)
                getattr_method.visit(probe)
                self.getattr_sources, self.getattr_names = probe.sources, probe.names
        init = next((m for m in methods if m.name.value == "__init__"), None)
        self.init_calls_base = None if init is None else _calls_base_init(init, self.bases)

    def fact(self, where: dict[int, Position]) -> ClassFact:
        return ClassFact(
            name=self.name,
            position=where[id(self.node.name)],
            bases=self.bases,
            methods=tuple(
                MethodFact(m.name.value, where[id(m.name)], parameter_list(m), decorator_names(m)) for m in self.methods
            ),
            provided=tuple(sorted(self.provided)),
            attr_types=tuple(sorted(self.attributes.typed().items())),
            getattr_sources=tuple(self.getattr_sources),
            getattr_names=tuple(sorted(set(self.getattr_names))),
            init_calls_base=self.init_calls_base,
        )

    def position_nodes(self) -> list[cst.CSTNode]:
        return [self.node.name, *(m.name for m in self.methods)]


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
        self.classes: list[_ClassSummary] = []
        self._class: _ClassSummary | None = None  # the module-level class being visited
        self._functions: list[tuple[str, dict[str, tuple[str, ...]]]] = []  # (scope, typed names)
        # (callee root or None, Receiver, callee name node, [(kind, name, node)], scope)
        self.calls: list[tuple[str | None, Receiver, cst.CSTNode, list[tuple[str, str | None, cst.CSTNode]], str]] = []
        self.reads: list[tuple[Receiver, str, cst.Name, bool, str]] = []

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
        in_class = self._class is not None and node in self._class.methods
        if in_class:
            types = self._class.method_types[id(node)]
            scope = f"{self._class.name}.{node.name.value}"
        else:
            types = function_types(node, None)
            outer = self._functions[-1][0] if self._functions else ""
            scope = f"{outer}.{node.name.value}" if outer else node.name.value
        self._functions.append((scope, types))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.scope_depth -= 1
        self._functions.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        if self.scope_depth == 0:
            self._class = _ClassSummary(node)
            self.classes.append(self._class)
        self.scope_depth += 1

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self.scope_depth -= 1
        if self.scope_depth == 0:
            self._class = None

    # -- typed names -------------------------------------------------------------------
    def _types_of(self, name: str) -> tuple[str, ...]:
        """The innermost function's (or an enclosing function's) types for a name."""
        for _, types in reversed(self._functions):
            if name in types:
                return types[name]
        return ()

    @property
    def _scope(self) -> str:
        return self._functions[-1][0] if self._functions else ""

    def _super_class(self) -> str | None:
        """The module-level class whose method we are in, when `super()` can refer to its bases."""
        return self._class.name if self._class is not None and self._functions else None

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
        store = id(node) in self._stored
        if isinstance(node.value, cst.Call) and get_full_name_for_node(node.value.func) == "super":
            owner = self._super_class()
            if owner is not None:
                self.reads.append((Receiver((f"U:{owner}",)), node.attr.value, node.attr, store, self._scope))
            return True
        chain = _dotted_chain(node)
        if chain is None:
            return True
        root, attrs = chain
        types = self._types_of(root)
        if types:
            for index, attr in enumerate(attrs):
                last = index == len(attrs) - 1
                receiver = Receiver(types, tuple(a.value for a in attrs[:index]))
                self.reads.append((receiver, attr.value, attr, store and last, self._scope))
        elif root not in ("self", "cls"):
            self.chains.append((root, attrs, store))
        return False  # a pure dotted chain holds nothing else to visit

    # -- calls -------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        root: str | None = None
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) \
                and get_full_name_for_node(func.value.func) == "super":
            owner = self._super_class()
            if owner is None:
                return
            callee, name_node = Receiver((f"U:{owner}",), (func.attr.value,)), func.attr
        else:
            if isinstance(func, cst.Name):
                root, names = func.value, []
            elif isinstance(func, cst.Attribute) and (chain := _dotted_chain(func)) is not None:
                root, names = chain[0], chain[1]
            else:
                return
            name_node = names[-1] if names else func
            types = self._types_of(root)
            if types:
                callee, root = Receiver(types, tuple(n.value for n in names)), None
            elif root in ("self", "cls"):
                return
            else:
                callee = Receiver((f"C:{get_full_name_for_node(func)}",))
        args = []
        for arg in node.args:
            if arg.star == "*":
                args.append(("star", None, arg.value))
            elif arg.star == "**":
                args.append(("dstar", None, arg.value))
            elif arg.keyword is not None:
                args.append(("kw", arg.keyword.value, arg.keyword))
            else:
                args.append(("pos", arg.value.value if isinstance(arg.value, cst.Name) else None, arg.value))
        self.calls.append((root, callee, name_node, args, self._scope))


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


def _inert(receiver: Receiver, closed: set[str], walked: int = 0) -> bool:
    """A direct `self.<name>` on a closed class (`walked` attributes of the receiver being the
    name itself, for a call): nothing upstream can stand behind it."""
    return len(receiver.attrs) <= walked and len(receiver.types) == 1 and receiver.types[0] in closed


def scan_source(path: str, module_name: str, text: str) -> FileFacts:
    """Facts of one file. A file that does not parse yields a parse error, not an exception."""
    facts = FileFacts(path=path, module=module_name, noqa=parse_noqa(text))
    try:
        module = cst.parse_module(text)
    except Exception as error:  # ParserSyntaxError, and a few other types on exotic input
        facts.parse_error = _syntax_error(text, error)
        return facts
    collector = _Collector(module_name, path.endswith("__init__.py"))
    try:
        module.visit(collector)
    except Exception as error:  # a scanner bug must cost one file, never the run
        facts.parse_error = (1, 1, f"could not be analysed ({type(error).__name__}: {error}); please report this")
        return facts
    bound_names = {fact["bound"] for fact, _, _ in collector.imports}
    chains = [chain for chain in collector.chains if chain[0] in bound_names]
    # Calls of plain names matter when the name is imported; calls on typed receivers always.
    calls = [call for call in collector.calls if call[0] is None or call[0] in bound_names]
    # `self.x` in a class with no base and no __getattr__ can only reach the class itself.
    closed = {f"S:{c.name}" for c in collector.classes if not c.bases and not c.getattr_sources}
    wanted = [node for _, node, anchor in collector.imports for node in (node, anchor)]
    wanted += [name for _, attrs, _ in chains for name in attrs]
    wanted += [node for summary in collector.classes for node in summary.position_nodes()]
    wanted += [node for _, _, name_node, args, _ in calls for node in (name_node, *(a[2] for a in args))]
    wanted += [node for _, _, node, _, _ in collector.reads]
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
    facts.classes = [summary.fact(where) for summary in collector.classes]
    for _, callee, name_node, args, scope in calls:
        if _inert(callee, closed, walked=1):
            continue
        arg_facts = tuple(ArgFact(kind, name, where[id(node)]) for kind, name, node in args)
        facts.calls.append(CallFact(callee, where[id(name_node)], arg_facts, scope))
    for receiver, attr, node, store, scope in collector.reads:
        if _inert(receiver, closed):
            continue
        facts.reads.append(ReadFact(receiver, attr, where[id(node)], store, scope))
    return facts
