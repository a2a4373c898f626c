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
    FlagFact,
    FunctionFact,
    ImportFact,
    MethodFact,
    PatchFact,
    Position,
    ProbeFact,
    ReadFact,
    Receiver,
    SourceProbeFact,
    SpecFact,
    StringsFact,
)
from sglang_contracts.project.positions import positions_of
from sglang_contracts.sources.base import PACKAGE
from sglang_contracts.project.scopes import (
    TypeTable,
    annotation_types,
    decorator_names,
    function_types,
    parameter_list,
    receiver_name,
)

IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
# Calls that name an attribute or a dotted target by string, or introspect an object: the
# last name of the callee (`mock.patch.object` -> "object").
PROBES = {"getattr", "hasattr", "setattr", "patch", "object", "signature", "fields"}
SOURCE_GETTERS = {"getsource"}
TEXT_METHODS = {"replace", "find", "rfind", "index", "rindex", "count", "startswith", "endswith", "split", "partition"}
REGEX_FUNCTIONS = {"search", "match", "fullmatch", "sub", "subn", "findall", "finditer", "split"}
MOCKS = {"Mock", "MagicMock", "NonCallableMock", "NonCallableMagicMock", "AsyncMock"}
MOCK_OPTIONS = {"spec", "spec_set", "name", "side_effect", "return_value", "wraps", "unsafe", "new_callable"}
PASS_THROUGH_ATTR = "sglang_"
PASS_THROUGH_FLAG = "--sglang-"
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


def _catches(handler: cst.ExceptHandler, names: set[str]) -> bool:
    """Does the handler name one of `names` (a bare `except:` names none: its intent is unknown)?"""
    if handler.type is None:
        return False
    types = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
    return any((get_full_name_for_node(item.value if isinstance(item, cst.Element) else item) or "")
               .rsplit(".", 1)[-1] in names for item in types)


def _string(node: cst.BaseExpression) -> str | None:
    """The value of a plain string literal (no f-string, no concatenation), else None."""
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:  # an odd literal libcst cannot evaluate
            return None
        return value if isinstance(value, str) else None
    return None


def _getsource_target(node: cst.BaseExpression) -> str | None:
    """`inspect.getsource(X)`, possibly inside `textwrap.dedent(...)`: the dotted X as written."""
    while isinstance(node, cst.Call):
        name = (get_full_name_for_node(node.func) or "").rsplit(".", 1)[-1]
        if not node.args:
            return None
        if name in SOURCE_GETTERS:
            return get_full_name_for_node(node.args[0].value)
        if name != "dedent":
            return None
        node = node.args[0].value
    return None


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
        self.provided.update(m.name.value for m in _body(node) if isinstance(m, cst.ClassDef))
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
        self.chains: list[tuple[str, list[cst.Name], bool, bool]] = []
        self._stored: set[int] = set()
        self.classes: list[_ClassSummary] = []
        self._class: _ClassSummary | None = None  # the module-level class being visited
        self._functions: list[tuple[str, dict[str, tuple[str, ...]]]] = []  # (scope, typed names)
        # (callee root or None, Receiver, callee name node, [(kind, name, node)], scope)
        self.calls: list[tuple[str | None, Receiver, cst.CSTNode, list[tuple[str, str | None, cst.CSTNode]], str]] = []
        self.reads: list[tuple[Receiver, str, cst.Name, bool, str, bool]] = []
        self.attr_guard_depth = 0
        self._receiver: str | None = None  # the instance's name in the module-level class's method
        # (kind, target as written, node of the name, value, scope): monkeypatches and saved originals
        self.patches: list[tuple[str, str, cst.CSTNode, str | None, str]] = []
        self.functions: list[cst.FunctionDef] = []  # module level
        # (function, subject, [(string, node)], nargs, keywords, callee node, scope, guarded)
        self.probes: list[tuple[str, Receiver | None, list[tuple[str, cst.CSTNode]], int, tuple[str, ...], cst.CSTNode, str, bool]] = []
        self.source_probes: list[tuple[str, str, bool, cst.CSTNode, str]] = []
        self._sources: dict[tuple[str, str], str] = {}  # (scope, name) -> target of getsource bound to it
        self.specs: list[list] = []  # [spec, node, [(attr, node)], scope]
        self._spec_vars: dict[tuple[str, str], int] = {}  # (scope, name) -> index into specs
        self.flags: list[tuple[str, cst.CSTNode, str]] = []
        self.strings: list[tuple[str, list[tuple[str, cst.CSTNode]]]] = []

    # -- context -----------------------------------------------------------------------
    def visit_Try_body(self, node: cst.Try) -> None:
        guarded = any(_catches_import_error(h) for h in node.handlers)
        self.guard_depth += guarded

        self.attr_guard_depth += any(_catches(h, {"AttributeError"}) for h in node.handlers)

    def leave_Try_body(self, node: cst.Try) -> None:
        self.guard_depth -= any(_catches_import_error(h) for h in node.handlers)
        self.attr_guard_depth -= any(_catches(h, {"AttributeError"}) for h in node.handlers)

    def visit_If_body(self, node: cst.If) -> None:
        self.type_checking_depth += _is_type_checking(node.test)

    def leave_If_body(self, node: cst.If) -> None:
        self.type_checking_depth -= _is_type_checking(node.test)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self.scope_depth == 0:
            self.functions.append(node)
        self.scope_depth += 1
        in_class = self._class is not None and node in self._class.methods
        if in_class:
            types = self._class.method_types[id(node)]
            scope = f"{self._class.name}.{node.name.value}"
            self._receiver = receiver_name(node, True)
        else:
            types = function_types(node, None)
            outer = self._functions[-1][0] if self._functions else ""
            scope = f"{outer}.{node.name.value}" if outer else node.name.value
        self._functions.append((scope, types))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self._class is not None and node in self._class.methods:
            self._receiver = None
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
        self._instance_write(node.target)

    def _instance_write(self, target: cst.BaseExpression) -> None:
        """`self.x = ...` in a method gives instances `x`, whatever the value (None included)."""
        if self._receiver and isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
                and target.value.value == self._receiver:
            self._class.provided.add(target.attr.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1:
            return
        target, value = node.targets[0].target, node.value
        scope = self._scope
        if isinstance(target, cst.Attribute) and (chain := _dotted_chain(target)) is not None \
                and chain[0] not in ("self", "cls") and not self._types_of(chain[0]):
            self.patches.append(("replace", get_full_name_for_node(target), target.attr,
                                 get_full_name_for_node(value), scope))
        if not isinstance(target, cst.Name):
            return
        if isinstance(value, cst.Attribute) and (chain := _dotted_chain(value)) is not None \
                and chain[0] not in ("self", "cls"):
            self.patches.append(("save", get_full_name_for_node(value), value.attr, target.value, scope))
        source = _getsource_target(value)
        if source:
            self._sources[(scope, target.value)] = source
        if isinstance(value, cst.Call):
            spec = self._spec_of(value)
            if spec is not None:
                self._spec_vars[(scope, target.value)] = spec
        self._string_collection(target.value, value)

    def _string_collection(self, name: str, value: cst.BaseExpression) -> None:
        if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
            nodes = [element.value for element in value.elements]
        elif isinstance(value, cst.Dict):
            nodes = [part for element in value.elements if isinstance(element, cst.DictElement)
                     for part in (element.key, element.value)]
            if len(nodes) != 2 * len(value.elements):
                return
        else:
            return
        items = [(_string(item), item) for item in nodes]
        if items and all(text is not None for text, _ in items):
            self.strings.append((name, items))

    def _spec_of(self, node: cst.Call) -> int | None:
        """A `Mock(spec=X, attr=...)` call: record it, return its index."""
        if (get_full_name_for_node(node.func) or "").rsplit(".", 1)[-1] not in MOCKS:
            return None
        spec = next((arg.value for arg in node.args if arg.keyword and arg.keyword.value in ("spec", "spec_set")), None)
        name = get_full_name_for_node(spec) if spec is not None else None
        if not name:
            return None
        attrs = [(arg.keyword.value, arg.keyword) for arg in node.args
                 if arg.keyword and arg.keyword.value not in MOCK_OPTIONS and "." not in arg.keyword.value]
        self.specs.append([name, spec, attrs, self._scope])
        return len(self.specs) - 1

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if PASS_THROUGH_FLAG in node.value[:12]:
            text = _string(node)
            if text and text.startswith(PASS_THROUGH_FLAG) and len(text) > len(PASS_THROUGH_FLAG):
                self.flags.append((text[len(PASS_THROUGH_FLAG):].split("=")[0].replace("-", "_"), node, "flag"))

    def visit_Comparison(self, node: cst.Comparison) -> None:
        """`"text" in src` where src holds upstream source."""
        needle = _string(node.left)
        if needle is None:
            return
        for target in node.comparisons:
            if isinstance(target.operator, (cst.In, cst.NotIn)):
                source = self._source_of(target.comparator)
                if source:
                    self.source_probes.append((source, needle, False, node.left, self._scope))

    def _source_of(self, node: cst.BaseExpression) -> str | None:
        if isinstance(node, cst.Name):
            for scope in (self._scope, ""):
                if (scope, node.value) in self._sources:
                    return self._sources[(scope, node.value)]
            return None
        return _getsource_target(node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._mark_store(node.target)
        self._instance_write(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._mark_store(node.target)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        store = id(node) in self._stored
        if isinstance(node.value, cst.Call) and get_full_name_for_node(node.value.func) == "super":
            owner = self._super_class()
            if owner is not None:
                self.reads.append((Receiver((f"U:{owner}",)), node.attr.value, node.attr, store, self._scope,
                                   self.attr_guard_depth > 0))
            return True
        chain = _dotted_chain(node)
        if chain is None:
            return True
        root, attrs = chain
        for attr in attrs:
            if attr.value.startswith(PASS_THROUGH_ATTR) and len(attr.value) > len(PASS_THROUGH_ATTR):
                self.flags.append((attr.value[len(PASS_THROUGH_ATTR):], attr, "attr"))
        guarded = self.attr_guard_depth > 0
        spec = self._spec_vars.get((self._scope, root))
        if spec is not None and store and len(attrs) == 1:
            self.specs[spec][2].append((attrs[0].value, attrs[0]))
        types = self._types_of(root)
        if types:
            for index, attr in enumerate(attrs):
                last = index == len(attrs) - 1
                receiver = Receiver(types, tuple(a.value for a in attrs[:index]))
                self.reads.append((receiver, attr.value, attr, store and last, self._scope, guarded))
        elif root not in ("self", "cls"):
            self.chains.append((root, attrs, store, guarded))
        return False  # a pure dotted chain holds nothing else to visit

    # -- calls -------------------------------------------------------------------------
    def _subject(self, node: cst.BaseExpression) -> Receiver | None:
        """What a call's first argument names: a typed receiver, or a dotted name (`C:`)."""
        if isinstance(node, cst.Name):
            root, attrs = node.value, ()
        elif isinstance(node, cst.Attribute) and (chain := _dotted_chain(node)) is not None:
            root, attrs = chain[0], tuple(a.value for a in chain[1])
        else:
            return None
        types = self._types_of(root)
        if types:
            return Receiver(types, attrs)
        if root in ("self", "cls"):
            return None
        return Receiver((f"C:{get_full_name_for_node(node)}",))

    def _probe(self, node: cst.Call, function: str, name_node: cst.CSTNode) -> None:
        positional = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
        strings = [(text, value, index) for index, value in enumerate(positional) if (text := _string(value)) is not None]
        subject = self._subject(positional[0]) if positional else None
        last = function.rsplit(".", 1)[-1]
        if not strings and subject is None:
            return
        keywords = tuple(arg.keyword.value for arg in node.args if arg.keyword is not None)
        self.probes.append((function, subject, strings, len(positional), keywords, name_node, self._scope,
                            self.attr_guard_depth > 0))
        if last == "setattr" and function == "setattr" and len(positional) == 3 and len(strings) == 1 \
                and isinstance(positional[1], cst.SimpleString):
            owner = get_full_name_for_node(positional[0])
            if owner and owner.split(".")[0] not in ("self", "cls") and not self._types_of(owner.split(".")[0]):
                self.patches.append(("replace", f"{owner}.{strings[0][0]}", positional[1],
                                     get_full_name_for_node(positional[2]), self._scope))

    def _text_probe(self, node: cst.Call, function: str) -> None:
        """`src.replace("old", ...)` and `re.sub("pattern", ..., src)` on upstream source text."""
        func = node.func
        last = function.rsplit(".", 1)[-1]
        if isinstance(func, cst.Attribute) and last in TEXT_METHODS:
            source = self._source_of(func.value)
            if source and node.args and (needle := _string(node.args[0].value)) is not None:
                self.source_probes.append((source, needle, False, node.args[0].value, self._scope))
        elif function.startswith("re.") and last in REGEX_FUNCTIONS and len(node.args) >= 2:
            pattern = _string(node.args[0].value)
            if pattern is not None and any(self._source_of(arg.value) for arg in node.args[1:]):
                source = next(s for arg in node.args[1:] if (s := self._source_of(arg.value)))
                self.source_probes.append((source, pattern, True, node.args[0].value, self._scope))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        function = get_full_name_for_node(func)
        if function:
            last = function.rsplit(".", 1)[-1]
            if last in PROBES:
                self._probe(node, function, func.attr if isinstance(func, cst.Attribute) else func)
            if last in TEXT_METHODS or last in REGEX_FUNCTIONS:
                self._text_probe(node, function)
        elif isinstance(func, cst.Attribute) and func.attr.value in TEXT_METHODS:
            self._text_probe(node, func.attr.value)  # inspect.getsource(f).replace(...)
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


def _probe_matters(probe: tuple, bound_names: set[str]) -> bool:
    """A probe of a typed object, of an imported name, or of a dotted target or pass-through name."""
    subject, strings = probe[1], probe[2]
    if subject is not None:
        kind = subject.types[0]
        if not kind.startswith("C:") or kind[2:].split(".")[0] in bound_names:
            return True
    return any("." in text or text.startswith(PASS_THROUGH_ATTR) for text, _, _ in strings)


def _foreign(kinds: tuple[str, ...], foreign: set[str]) -> bool:
    """Do all of a receiver's type alternatives start at a third-party name (torch, numpy, ...)?"""
    for kind in kinds:
        while kind[:2] in ("P:", "E:"):
            kind = kind[2:].rpartition("|")[0]
        if kind[:2] not in ("T:", "R:", "L:", "C:") or kind[2:].split(".")[0] not in foreign:
            return False
    return bool(kinds)


def scan_source(path: str, module_name: str, text: str, packages: tuple[str, ...] = ()) -> FileFacts:
    """Facts of one file. A file that does not parse yields a parse error, not an exception.
    `packages` are the project's top-level packages: with them, names imported from anywhere
    else but SGLang are known to be third-party, and facts about them are not kept."""
    facts = FileFacts(path=path, module=module_name, noqa=parse_noqa(text))
    try:
        module = cst.parse_module(text)
    except Exception as error:  # ParserSyntaxError, and a few other types on exotic input
        facts.parse_error = _syntax_error(text, error)
        return facts
    try:
        _collect(module, module_name, path, text, facts, packages)
    except Exception as error:  # a scanner bug must cost one file, never the run
        clean = FileFacts(path=path, module=module_name, noqa=facts.noqa)
        clean.parse_error = (1, 1, f"could not be analysed ({type(error).__name__}: {error}); please report this")
        return clean
    return facts


def _collect(module: cst.Module, module_name: str, path: str, text: str, facts: FileFacts,
             packages: tuple[str, ...]) -> None:
    """Visit the parsed module and fill `facts` with what matters for SGLang's contracts."""
    collector = _Collector(module_name, path.endswith("__init__.py"))
    module.visit(collector)
    bound_names = {fact["bound"] for fact, _, _ in collector.imports}
    chains = [chain for chain in collector.chains if chain[0] in bound_names]
    # Monkeypatches of import-bound objects, and the names their originals are saved under.
    patches = [p for p in collector.patches if p[1].split(".")[0] in bound_names]
    saved = {p[3] for p in patches if p[0] == "save"}
    replacements = {p[3] for p in patches if p[0] == "replace" and p[3]}
    functions = [f for f in collector.functions if f.name.value in replacements]
    # Calls of plain names matter when the name is imported (or holds a saved original);
    # calls on typed receivers always.
    calls = [call for call in collector.calls if call[0] is None or call[0] in bound_names or call[0] in saved]
    probes = [probe for probe in collector.probes if _probe_matters(probe, bound_names)]
    specs = [spec for spec in collector.specs if spec[0].split(".")[0] in bound_names]
    keep_strings = "ServerArgs" in text or "add_cli_args" in text
    strings = collector.strings if keep_strings else []
    # `self.x` in a class with no base and no __getattr__ can only reach the class itself.
    # Names bound to third-party imports: nothing behind them is SGLang's.
    known = {PACKAGE, *packages}
    foreign = {fact["bound"] for fact, _, _ in collector.imports
               if packages and fact["module"].split(".")[0] not in known} - {"*"}
    closed = {f"S:{c.name}" for c in collector.classes
              if not c.getattr_sources and all(base.split(".")[0] in foreign for base in c.bases)}
    wanted = [node for _, node, anchor in collector.imports for node in (node, anchor)]
    wanted += [name for _, attrs, _, _ in chains for name in attrs]
    wanted += [node for summary in collector.classes for node in summary.position_nodes()]
    wanted += [node for _, _, name_node, args, _ in calls for node in (name_node, *(a[2] for a in args))]
    wanted += [read[2] for read in collector.reads]
    wanted += [p[2] for p in patches] + [f.name for f in functions]
    wanted += [node for probe in probes for node in (probe[5], *(n for _, n, _ in probe[2]))]
    wanted += [probe[3] for probe in collector.source_probes]
    wanted += [node for spec in specs for node in (spec[1], *(n for _, n in spec[2]))]
    wanted += [flag[1] for flag in collector.flags]
    wanted += [node for _, items in strings for _, node in items]
    where = positions_of(module, wanted)
    for fact, node, anchor in collector.imports:
        facts.imports.append(ImportFact(position=where[id(node)], module_position=where[id(anchor)], **fact))
    for root, attrs, store, guarded in chains:
        facts.attributes.append(
            AttributeFact(
                root=root,
                attrs=tuple(a.value for a in attrs),
                positions=tuple(where[id(a)] for a in attrs),
                store=store,
                attr_guarded=guarded,
            )
        )
    facts.classes = [summary.fact(where) for summary in collector.classes]
    for _, callee, name_node, args, scope in calls:
        if _inert(callee, closed, walked=1) or _foreign(callee.types, foreign):
            continue
        arg_facts = tuple(ArgFact(kind, name, where[id(node)]) for kind, name, node in args)
        facts.calls.append(CallFact(callee, where[id(name_node)], arg_facts, scope))
    for receiver, attr, node, store, scope, guarded in collector.reads:
        if _inert(receiver, closed) or _foreign(receiver.types, foreign):
            continue
        facts.reads.append(ReadFact(receiver, attr, where[id(node)], store, scope, guarded))
    facts.patches = [PatchFact(kind, target, where[id(node)], value, scope) for kind, target, node, value, scope in patches]
    facts.functions = [FunctionFact(f.name.value, where[id(f.name)], parameter_list(f)) for f in functions]
    facts.probes = [
        ProbeFact(function, subject, tuple((text, where[id(node)]) for text, node, _ in strings_), nargs, keywords,
                  where[id(name_node)], scope, guarded, tuple(index for _, _, index in strings_))
        for function, subject, strings_, nargs, keywords, name_node, scope, guarded in probes
    ]
    facts.source_probes = [SourceProbeFact(target, needle, regex, where[id(node)], scope)
                           for target, needle, regex, node, scope in collector.source_probes]
    facts.specs = [SpecFact(spec, where[id(node)], tuple((a, where[id(n)]) for a, n in attrs), scope)
                   for spec, node, attrs, scope in specs]
    facts.flags = [FlagFact(field, where[id(node)], kind) for field, node, kind in collector.flags]
    facts.strings = [StringsFact(name, tuple((text, where[id(node)]) for text, node in items)) for name, items in strings]
