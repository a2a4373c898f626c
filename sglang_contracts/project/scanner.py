"""Extract one project file's facts with `ast`: its SGLang-relevant imports, classes, calls and reads.

The project is read with the standard `ast` parser: on a 2-core machine, libcst took 11.5 s of CPU to
parse the 227 files of sglang-omni that name SGLang and 8 s more to walk them (its visitor rebuilds
the tree), against 1.3 s for `ast`. Nothing here rewrites code, so a concrete syntax tree buys nothing;
positions are converted to flake8's character columns by positions.py."""

from __future__ import annotations

import ast
import re

from sglang_contracts.project import dispatches, gates
from sglang_contracts.project.facts import (
    ArgFact,
    AttributeFact,
    CallFact,
    ClassFact,
    ConditionFact,
    DispatchFact,
    FileFacts,
    FlagFact,
    FunctionFact,
    GateFact,
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
    used_class_names,
)
from sglang_contracts.project.positions import SourcePositions
from sglang_contracts.infra.boundary import problem_for
from sglang_contracts.infra.pysource import CHILDLESS, SCOPES, TooComplex, branch_nodes, child_nodes, parse_shared, returned_shape, tree_depth, unpack_count
from sglang_contracts.sources.base import PACKAGE
from sglang_contracts.upstream.bodies import MUTATING, add_mutated, value_token
from sglang_contracts.upstream.model import is_upstream
from sglang_contracts.project.scopes import (
    FUNCTIONS,
    Function,
    TypeTable,
    annotation_types,
    bound_methods,
    call_types,
    decorator_names,
    dotted_chain,
    full_name,
    function_types,
    module_returns,
    parameter_list,
    receiver_name,
    string_value,
)

EXITS = frozenset({ast.Return, ast.Yield, ast.YieldFrom})  # what returned_shape looks at
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
CODE = re.compile(r"(?<![A-Z])[A-Z]+[0-9]+")  # from a run's start only: not from each letter of a long run


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


def _handler_names(handler: ast.ExceptHandler) -> list[str]:
    """The last names of the exception types an `except` clause lists."""
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return [(full_name(item) or "").rsplit(".", 1)[-1] for item in types]


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    return handler.type is None or any(name in IMPORT_ERRORS for name in _handler_names(handler))


# What ends a process from a handler: `sys.exit(1)`, `exit()`, `os._exit(1)`, `quit()`.
PROCESS_EXITS = {"sys.exit", "exit", "quit", "os._exit"}


def _stops(body: list[ast.stmt]) -> bool:
    """Does a handler end in `raise` (the error again, or another) or an exit, with no
    fallback: the import's failure then stops every run."""
    last = body[-1] if body else None
    return isinstance(last, ast.Raise) or (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
                                           and full_name(last.value.func) in PROCESS_EXITS)


def _catches(handler: ast.ExceptHandler, names: set[str]) -> bool:
    """Does the handler name one of `names` (a bare `except:` names none: its intent is unknown)?"""
    return handler.type is not None and any(name in names for name in _handler_names(handler))


def _getsource_target(node: ast.AST) -> str | None:
    """`inspect.getsource(X)`, possibly inside `textwrap.dedent(...)`: the dotted X as written."""
    while isinstance(node, ast.Call):
        name = (full_name(node.func) or "").rsplit(".", 1)[-1]
        if not node.args:
            return None
        if name in SOURCE_GETTERS:
            return full_name(node.args[0])
        if name != "dedent":
            return None
        node = node.args[0]
    return None


def _is_type_checking(test: ast.AST) -> bool:
    return (full_name(test) or "").rsplit(".", 1)[-1] == "TYPE_CHECKING"


def _in_order(node: ast.AST):
    """The node and everything below it, depth first in source order (ast.walk is breadth first);
    with a stack, as deep as the tree goes."""
    pending = [node]
    while pending:
        current = pending.pop()
        yield current
        pending.extend(reversed(child_nodes(current)))


def _getattr_probe(method: Function, parameter: str) -> tuple[list[str], list[str]]:
    """In a `__getattr__(self, name)`: the objects `getattr(Source, name)` fetches from, and
    the names it compares `name` with (the names it answers itself)."""
    sources: list[str] = []
    names: list[str] = []
    for node in _in_order(method):
        if isinstance(node, ast.Call) and full_name(node.func) == "getattr" and len(node.args) >= 2:
            source = full_name(node.args[0])
            second = node.args[1]
            if isinstance(second, ast.Name) and second.id == parameter and source and source != "self":
                sources.append(source)
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == parameter:
            for operator, value in zip(node.ops, node.comparators):
                if isinstance(operator, (ast.Eq, ast.In)):
                    items = value.elts if isinstance(value, (ast.Tuple, ast.List, ast.Set)) else [value]
                    names.extend(text for item in items if (text := string_value(item)) is not None)
    return sources, names


def _annotation_text(function: Function) -> str:
    """The function's return annotation as written ("" when it has none)."""
    if function.returns is None:
        return ""
    try:
        return ast.unparse(function.returns)
    except RecursionError:
        return ""


class _ClassSummary:
    """What a module-level class gives its instances, gathered before its body is visited."""

    def __init__(self, node: ast.ClassDef, returns: dict[str, tuple[str, ...]] | None = None) -> None:
        self.node = node
        self.name = node.name
        self.bases = tuple(name for base in node.bases if (name := full_name(base)))
        self.attributes = TypeTable()
        self.provided: set[str] = set()
        self.method_types: dict[int, dict[str, tuple[str, ...]]] = {}
        methods = [m for m in node.body if isinstance(m, FUNCTIONS)]
        for statement in node.body:
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                self.provided.add(statement.target.id)
                self.attributes.bind(statement.target.id, annotation_types(statement.annotation))
            elif isinstance(statement, ast.Assign):
                self.provided.update(target.id for target in statement.targets if isinstance(target, ast.Name))
            elif isinstance(statement, ast.ClassDef):
                self.provided.add(statement.name)
        for method in methods:
            self.provided.add(method.name)
            self.method_types[id(method)] = function_types(method, self.name, self.attributes, returns=returns)
        self.provided.update(self.attributes.names)
        self.methods = methods
        self.method_ids = {id(m) for m in methods}
        self.getattr_sources: list[str] = []
        self.getattr_names: list[str] = []
        getattr_method = next((m for m in methods if m.name == "__getattr__"), None)
        if getattr_method is not None:
            params = [*getattr_method.args.posonlyargs, *getattr_method.args.args]
            if len(params) >= 2:
                self.getattr_sources, self.getattr_names = _getattr_probe(getattr_method, params[1].arg)
        self.walks = walks = {id(method): _MethodWalk(method, self.bases) for method in methods}  # each walked once
        init = next((m for m in methods if m.name == "__init__"), None)
        self.init_calls_base = None if init is None else walks[id(init)].calls_base_init
        self.none_only, self.falsy_only = _constant_only(node, methods, walks)
        self.values, self.returns = _values(node, methods, walks)
        self.namespaces = _namespaces(methods, walks)

    def fact(self, at: SourcePositions) -> ClassFact:
        return ClassFact(
            name=self.name,
            position=at.definition_name(self.node),
            bases=self.bases,
            methods=tuple(
                MethodFact(m.name, at.definition_name(m), parameter_list(m), decorator_names(m),
                           isinstance(m, ast.AsyncFunctionDef), _annotation_text(m),
                           returned_shape(m, self.walks[id(m)].exits)) for m in self.methods
            ),
            provided=tuple(sorted(self.provided)),
            attr_types=tuple(sorted(self.attributes.typed().items())),
            getattr_sources=tuple(self.getattr_sources),
            getattr_names=tuple(sorted(set(self.getattr_names))),
            init_calls_base=self.init_calls_base,
            none_only=self.none_only,
            falsy_only=self.falsy_only,
            values=self.values,
            returns=self.returns,
            namespaces=self.namespaces,
            decorated=bool(self.node.decorator_list or self.node.keywords),
        )


class _Collector:
    """One depth-first walk of a module in source order, recording what may touch SGLang.
    Positions are taken as facts are recorded; `_collect` keeps the facts that matter."""

    def __init__(self, module_name: str, is_package: bool, at: SourcePositions) -> None:
        self.module_name = module_name
        self.is_package = is_package
        self.at = at
        self.guard_depth = 0
        self._guard_stops: list[bool] = []  # of each enclosing import guard: does its handler raise again?
        self.type_checking_depth = 0
        self.scope_depth = 0
        self.imports: list[tuple[dict, Position, Position]] = []  # (fact fields, name, module in statement)
        self.chains: list[tuple[str, list[ast.Attribute], bool, bool]] = []  # (root, its attributes, store, guarded)
        self._stored: set[int] = set()
        self._store_values: dict[int, str] = {}  # id of an assigned Attribute -> value_token of the value
        # (scope, name) -> (key, position) of the string keys a dict bound to the name was built
        # with so far in that scope: a literal, `dict(k=...)`, `d["k"] = ...`, `d.update(k=...)`
        self._dict_keys: dict[tuple[str, str], list[tuple[str, Position]]] = {}
        self.classes: list[_ClassSummary] = []
        self._class: _ClassSummary | None = None  # the module-level class being visited
        self._functions: list[tuple[str, dict[str, tuple[str, ...]]]] = []  # (scope, typed names)
        # (callee root or None, Receiver, position of the callee's name, [(kind, name, position)], scope)
        self.calls: list[tuple[str | None, Receiver, Position, list[tuple[str, str | None, Position]], str, str]] = []
        self._uses: dict[int, str] = {}  # id of a call node -> what is done with its result (CallFact.use)
        # (scope, name) -> index in `calls` of the call whose result the name was last assigned
        # (`out = f(...)`): a later `a, b = out`, `out[0]`, `for x in out`, `out.x` is that call's use
        self._results: dict[tuple[str, str], int] = {}
        self.reads: list[tuple[Receiver, str, Position, bool, str, bool, bool, str]] = []
        self.attr_guard_depth = 0
        self._receiver: str | None = None  # the instance's name in the module-level class's method
        # (kind, target as written, position, value, scope): monkeypatches and saved originals
        self.patches: list[tuple[str, str, Position, str | None, str]] = []
        self.functions: list[Function] = []  # module level
        # Names whose calls may build an object a chain reads on (_result_chain): the names
        # imports bind, and the module's own functions and classes.
        self.factories: set[str] = set()
        self.bound_methods: dict[str, tuple[str, ...]] = {}  # scopes.bound_methods
        self.returns: dict[str, tuple[str, ...]] = {}  # scopes.module_returns
        # (function, subject, [(string, position, index)], nargs, keywords, position, scope, guarded)
        self.probes: list[tuple[str, Receiver | None, list[tuple[str, Position, int]], int, tuple[str, ...], Position, str, bool, bool]] = []
        self.source_probes: list[tuple[str, str, bool, Position, str]] = []
        self._sources: dict[tuple[str, str], str] = {}  # (scope, name) -> target of getsource bound to it
        self.specs: list[list] = []  # [spec, position, [(attr, position)], scope]
        self._spec_vars: dict[tuple[str, str], int] = {}  # (scope, name) -> index into specs
        self.flags: list[tuple[str, Position, str]] = []
        self.strings: list[tuple[str, list[tuple[str, Position]]]] = []
        self.conditions = gates.ConditionReader()  # names bound to the release's version, and tests of it
        self.gate: gates.Gate = gates.TRUE  # the condition the code being visited runs under (simplified)
        self.gates: list[GateFact] = []  # blocks under a condition on the release, outer ones first
        self.templates = dispatches.TemplateReader(self.conditions)  # module names built from the version
        self.dispatches: list[DispatchFact] = []

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.expr):
            self._visit_expression(node)
            return
        visitor = _VISITORS.get(type(node))
        if visitor is None or visitor(self, node) is not False:
            self._children(node)

    def _visit_expression(self, root: ast.expr) -> None:
        """An expression and everything in it, in the order `visit` would go, with a stack: an
        expression nests a node per link of a method chain (`f().a().a()...`) or per operand
        of an operator, deeper than recursion may go. Statements nest no deeper than their
        indentation, and no visitor of an expression does anything after its children."""
        pending: list[ast.AST] = [root]
        while pending:
            node = pending.pop()
            kind = type(node)
            visitor = _VISITORS.get(kind)
            if (visitor is None or visitor(self, node) is not False) and kind not in CHILDLESS:
                pending.extend(reversed(child_nodes(node)))

    def _children(self, node: ast.AST) -> None:
        for child in child_nodes(node):
            self.visit(child)

    def _visit_all(self, nodes: list[ast.AST]) -> None:
        for node in nodes:
            self.visit(node)

    # -- context -----------------------------------------------------------------------
    def _visit_try(self, node: ast.Try | ast.TryStar) -> bool:
        guarded = any(_catches_import_error(h) for h in node.handlers)
        attr_guarded = any(_catches(h, {"AttributeError"}) for h in node.handlers)
        self.guard_depth += guarded
        self.attr_guard_depth += attr_guarded
        if guarded:
            self._guard_stops.append(all(_stops(h.body) for h in node.handlers if _catches_import_error(h)))
        self._visit_all(node.body)
        if guarded:
            self._guard_stops.pop()
        self.guard_depth -= guarded
        self.attr_guard_depth -= attr_guarded
        # A handler of import errors after a body of SGLang imports only runs where one of
        # them fails; the `else:` only where all succeed.
        fails = self._import_failure(node.body)
        for handler in node.handlers:
            self._visit_gated([handler.type] if handler.type else [], handler.body,
                              fails if _catches_import_error(handler) else gates.UNKNOWN)
        self._visit_gated([], node.orelse, gates.negate(fails))
        self._visit_all(node.finalbody)
        return False

    def _import_failure(self, body: list[ast.stmt]) -> gates.Gate:
        """The gate "one of these imports fails" for a try body of SGLang imports (and plain
        assignments); undecided for any other body, which may raise for other reasons."""
        atoms: list[gates.Atom] = []
        for statement in body:
            if isinstance(statement, ast.Import):
                names = [(alias.name, "") for alias in statement.names]
            elif isinstance(statement, ast.ImportFrom) and not statement.level and statement.module:
                names = [(statement.module, alias.name) for alias in statement.names if alias.name != "*"]
                if len(names) != len(statement.names):
                    return gates.UNKNOWN
            elif isinstance(statement, ast.Pass) or isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
                    or isinstance(statement, ast.Assign) and isinstance(statement.value, (ast.Constant, ast.Name)):
                continue
            else:
                return gates.UNKNOWN
            if not all(is_upstream(module) for module, _ in names):
                return gates.UNKNOWN  # whether a third-party or project import fails is not known
            atoms += [("import-fails", f"{module}:{name}") for module, name in names]
        return tuple((atom,) for atom in dict.fromkeys(atoms)) if atoms else gates.UNKNOWN

    def _visit_gated(self, heads: list[ast.AST], body: list[ast.stmt], condition: gates.Gate) -> None:
        """Visit a block that runs only where `condition` holds (`heads` run before it, unconditionally)."""
        self._visit_all(heads)
        outer = self.gate
        self.gate = gates.simplified(gates.conjoin(outer, condition))
        if body and self.gate != outer:
            self.gates.append(GateFact(self.at.start(body[0]), self.at.end(body[-1]), self.gate))
        self._visit_all(body)
        self.gate = outer

    def _visit_if(self, node: ast.If) -> bool:
        self.visit(node.test)
        self.conditions.scope = self._scope
        condition = self.conditions.gate(node.test)
        type_checking = _is_type_checking(node.test)
        self.type_checking_depth += type_checking
        self._visit_gated([], node.body, condition)
        self.type_checking_depth -= type_checking
        self._visit_gated([], node.orelse, gates.negate(condition))
        return False

    def _visit_function(self, node: Function) -> bool:
        if self.scope_depth == 0:
            self.functions.append(node)
        self.scope_depth += 1
        method = self._class is not None and id(node) in self._class.method_ids
        if method:
            types = self._class.method_types[id(node)]
            scope = f"{self._class.name}.{node.name}"
            self._receiver = receiver_name(node, True)
        else:
            types = function_types(node, None, bound_as=self.bound_methods.get(node.name, ()) if self.scope_depth == 1 else (),
                                   returns=self.returns)
            outer = self._functions[-1][0] if self._functions else ""
            scope = f"{outer}.{node.name}" if outer else node.name
        self._functions.append((scope, types))
        # Decorators and defaults are read in the function's scope, as its body is.
        self._visit_all([*node.decorator_list, node.args, *([node.returns] if node.returns else []), *node.body])
        if method:
            self._receiver = None
        self.scope_depth -= 1
        self._functions.pop()
        return False

    def _visit_class(self, node: ast.ClassDef) -> bool:
        # Module-level classes, and classes a plain function defines (a worker class built only
        # where its platform's imports succeed); not classes nested in classes.
        outer = self._class
        summarised = outer is None
        if summarised:
            self._class = _ClassSummary(node, self.returns)
            self.classes.append(self._class)
        self.scope_depth += 1
        self._visit_all([*node.decorator_list, *node.bases, *node.keywords, *node.body])
        self.scope_depth -= 1
        if summarised:
            self._class = outer
        return False

    # -- typed names -------------------------------------------------------------------
    def _types_of(self, name: str) -> tuple[str, ...]:
        """The innermost function's (or an enclosing function's) types for a name."""
        for _, types in reversed(self._functions):
            if name in types:
                return types[name]
        return ()

    def _nullable(self, name: str) -> bool:
        """Does the function that types `name` say it may be None (see TypedNames)?"""
        for _, types in reversed(self._functions):
            if name in types:
                return name in getattr(types, "nullable", ())
        return False

    @property
    def _scope(self) -> str:
        return self._functions[-1][0] if self._functions else ""

    def _super_class(self) -> str | None:
        """The module-level class whose method we are in, when `super()` can refer to its bases."""
        return self._class.name if self._class is not None and self._functions else None

    def _context(self) -> dict:
        return {
            "guarded": self.guard_depth > 0,
            "guard_stops": bool(self._guard_stops) and all(self._guard_stops),
            "type_checking": self.type_checking_depth > 0,
            "module_level": self.scope_depth == 0,
        }

    # -- imports -----------------------------------------------------------------------
    def _visit_import(self, node: ast.Import) -> bool:
        for alias in node.names:
            bound = alias.asname or alias.name.split(".")[0]
            self.conditions.scope = self._scope
            self.conditions.bind_import(alias.name, None, bound, False)
            fact = {"module": alias.name, "name": None, "bound": bound, **self._context()}
            self.factories.add(bound)
            where = self.at.start(alias)
            self.imports.append((fact, where, where))
        return False

    def _absolute(self, node: ast.ImportFrom) -> str | None:
        module = node.module or ""
        if not node.level:
            return module
        package = self.module_name.split(".") if self.is_package else self.module_name.split(".")[:-1]
        if node.level - 1 > len(package):
            return None
        base = package[: len(package) - (node.level - 1)]
        return ".".join(base + ([module] if module else []))

    def _visit_import_from(self, node: ast.ImportFrom) -> bool:
        module = self._absolute(node)
        if not module:
            return False
        anchor = self.at.imported_module(node)
        for alias in node.names:
            bound = "*" if alias.name == "*" else alias.asname or alias.name
            self.conditions.scope = self._scope
            self.conditions.bind_import(module, alias.name, bound, not is_upstream(module))
            fact = {"module": module, "name": alias.name, "bound": bound, **self._context()}
            self.factories.add(bound)
            self.imports.append((fact, self.at.start(alias), anchor))
        return False

    def _dynamic_import(self, node: ast.Call) -> None:
        """`importlib.import_module(name[, package])` with a name built from the release's version."""
        template = self.templates.template(self._scope, node.args[0])
        if template is None or all(kind == "text" for kind, _ in template):
            return  # a literal name is no dispatch; one that cannot be read is the `serves` setting's
        anchor = node.args[1] if len(node.args) > 1 else next(
            (k.value for k in node.keywords if k.arg == "package"), None)
        package = ""
        if isinstance(anchor, ast.Name) and anchor.id == "__package__":
            package = self.module_name if self.is_package else self.module_name.rpartition(".")[0]
        elif isinstance(anchor, ast.Name) and anchor.id == "__name__":
            package = self.module_name
        elif isinstance(anchor, ast.Constant) and isinstance(anchor.value, str):
            package = anchor.value
        self.dispatches.append(DispatchFact("import", self.at.start(node), ast.unparse(node.args[0])[:200],
                                            template, package))

    def _visit_raise(self, node: ast.Raise) -> None:
        """A `raise` that only some releases reach: the end of a dispatch on the version."""
        if node.exc is not None and any(op in gates.VERSION_SYMBOLS or op in ("flag", "not-flag")
                                        for term in self.gate for op, _ in term):
            exception = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            self.dispatches.append(DispatchFact("raise", self.at.start(node), full_name(exception) or "an exception"))

    # -- dotted reads and writes -----------------------------------------------------------
    def _mark_store(self, target: ast.AST) -> None:
        if isinstance(target, ast.Attribute):
            self._stored.add(id(target))
        elif isinstance(target, ast.Tuple | ast.List):  # `(m.a, m.b) = ...` writes both
            for element in target.elts:
                self._mark_store(element.value if isinstance(element, ast.Starred) else element)

    def _instance_write(self, target: ast.AST) -> None:
        """`self.x = ...` in a method gives instances `x`, whatever the value (None included);
        so does each of `self.x, self.y = ...`."""
        if isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self._instance_write(element.value if isinstance(element, ast.Starred) else element)
        elif self._receiver and isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                and target.value.id == self._receiver:
            self._class.provided.add(target.attr)

    def _visit_assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1 and (count := unpack_count(node.targets[0])):
            if isinstance(node.value, ast.Call):
                self._uses[id(node.value)] = f"unpack:{count}"
            elif type(node.value) is ast.Name:
                self._result_used(node.value, f"unpack:{count}")
        for target in node.targets:
            if type(target) is ast.Name and self._results:
                self._results.pop((self._scope, target.id), None)  # rebound: no longer that result
        if len(node.targets) == 1 and type(node.targets[0]) is ast.Name and isinstance(node.value, ast.Call):
            self._uses[id(node.value)] = f"bind:{node.targets[0].id}"
        for target in node.targets:
            self._mark_store(target)
            self._instance_write(target)
        if len(node.targets) != 1:
            return
        target, value = node.targets[0], node.value
        scope = self._scope
        if isinstance(target, ast.Tuple | ast.List):
            self._unpacked_patches(target, value)
            return
        if isinstance(target, ast.Attribute):
            self._store_values[id(target)] = value_token(value)
        if isinstance(target, ast.Attribute) and (owner := self._patched_owner(target.value)) is not None:
            self.patches.append(("replace", f"{owner}.{target.attr}", self.at.attribute_name(target), full_name(value), scope))
        elif isinstance(target, ast.Subscript) and (key := string_value(target.slice)) is not None \
                and key.isidentifier() and (owner := self._namespace_owner(target.value)) is not None:
            # `m.__dict__["n"] = f`, `vars(m)["n"] = f`: the module's namespace is its attributes
            self.patches.append(("replace", f"{owner}.{key}", self.at.start(target.slice), full_name(value), scope))
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                and (keys := self._dict_keys.get((scope, target.value.id))) is not None \
                and (key := string_value(target.slice)) is not None:
            keys.append((key, self.at.start(target.slice)))
        if not isinstance(target, ast.Name):
            return
        self._dict_keys.pop((scope, target.id), None)
        if (keys := self._keys_built(value)) is not None:
            self._dict_keys[(scope, target.id)] = keys
        self.conditions.scope = scope
        self.conditions.bind(target.id, value)
        self.templates.bind(scope, target.id, value)
        if isinstance(value, ast.Attribute) and (chain := dotted_chain(value)) is not None \
                and chain[0] not in ("self", "cls"):
            self.patches.append(("save", full_name(value), self.at.attribute_name(value), target.id, scope))
        source = _getsource_target(value)
        if source:
            self._sources[(scope, target.id)] = source
        if isinstance(value, ast.Call):
            spec = self._spec_of(value)
            if spec is not None:
                self._spec_vars[(scope, target.id)] = spec
        self._string_collection(target.id, value)

    def _unpacked_patches(self, target: ast.Tuple | ast.List, value: ast.AST) -> None:
        """`(m.a, m.b) = (x, y)` patches each attribute as `m.a = x` would; with a value that is
        not a tuple of as many items, by a value that is not known."""
        values = value.elts if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == len(target.elts) \
            and not any(isinstance(item, ast.Starred) for item in value.elts) else [None] * len(target.elts)
        for element, item in zip(target.elts, values):
            if isinstance(element, ast.Attribute) and (chain := dotted_chain(element)) is not None \
                    and chain[0] not in ("self", "cls") and not self._types_of(chain[0]):
                self._store_values[id(element)] = value_token(item) if item is not None else ""
                self.patches.append(("replace", full_name(element), self.at.attribute_name(element),
                                     full_name(item) if item is not None else None, self._scope))
            elif isinstance(element, ast.Tuple | ast.List):
                self._unpacked_patches(element, item if item is not None else ast.Constant(None))

    def _string_collection(self, name: str, value: ast.AST) -> None:
        if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
            nodes = value.elts
        elif isinstance(value, ast.Dict):
            if any(key is None for key in value.keys):  # `{**other}`
                return
            nodes = [part for pair in zip(value.keys, value.values) for part in pair]
        else:
            return
        items = [(string_value(item), item) for item in nodes]
        if items and all(text is not None for text, _ in items):
            self.strings.append((name, [(text, self.at.start(item)) for text, item in items]))

    def _spec_of(self, node: ast.Call) -> int | None:
        """A `Mock(spec=X, attr=...)` call: record it, return its index."""
        if (full_name(node.func) or "").rsplit(".", 1)[-1] not in MOCKS:
            return None
        spec = next((k.value for k in node.keywords if k.arg in ("spec", "spec_set")), None)
        name = full_name(spec) if spec is not None else None
        if not name:
            return None
        attrs = [(k.arg, self.at.start(k)) for k in node.keywords
                 if k.arg and k.arg not in MOCK_OPTIONS and "." not in k.arg]
        self.specs.append([name, self.at.start(spec), attrs, self._scope])
        return len(self.specs) - 1

    def _visit_constant(self, node: ast.Constant) -> None:
        text = node.value
        if isinstance(text, str) and text.startswith(PASS_THROUGH_FLAG) and len(text) > len(PASS_THROUGH_FLAG):
            self.flags.append((text[len(PASS_THROUGH_FLAG):].split("=")[0].replace("-", "_"), self.at.start(node), "flag"))

    def _visit_fstring(self, node: ast.JoinedStr) -> bool:
        """An f-string's literal parts are no flag names; its expressions are read like any other."""
        self._visit_all([value for value in node.values if isinstance(value, ast.FormattedValue)])
        return False

    def _visit_compare(self, node: ast.Compare) -> None:
        """`"text" in src` where src holds upstream source."""
        needle = string_value(node.left)
        if needle is None:
            return
        for operator, comparator in zip(node.ops, node.comparators):
            if isinstance(operator, (ast.In, ast.NotIn)):
                source = self._source_of(comparator)
                if source:
                    self.source_probes.append((source, needle, False, self.at.start(node.left), self._scope))

    def _source_of(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            for scope in (self._scope, ""):
                if (scope, node.id) in self._sources:
                    return self._sources[(scope, node.id)]
            return None
        return _getsource_target(node)

    def _visit_annotated(self, node: ast.AnnAssign) -> None:
        self._mark_store(node.target)
        self._instance_write(node.target)

    def _visit_delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._mark_store(target)

    def _visit_attribute(self, node: ast.Attribute) -> bool:
        if type(node.value) is ast.Call:
            self._uses.setdefault(id(node.value), f"attr:{node.attr}")
        elif self._results and type(node.value) is ast.Name:
            self._result_used(node.value, f"attr:{node.attr}")
        store = id(node) in self._stored
        if isinstance(node.value, ast.Call) and full_name(node.value.func) == "super":
            owner = self._super_class()
            if owner is not None:
                self.reads.append((Receiver((f"U:{owner}",)), node.attr, self.at.attribute_name(node), store,
                                   self._scope, self.attr_guard_depth > 0, False, ""))
            return True
        if not isinstance(node.value, ast.Name) and (result := self._result_chain(node)) is not None:
            types, attributes = result
            for index, attribute in enumerate(attributes):
                last = index == len(attributes) - 1
                self.reads.append((Receiver(types, tuple(a.attr for a in attributes[:index])), attribute.attr,
                                   self.at.attribute_name(attribute), store and last, self._scope,
                                   self.attr_guard_depth > 0, False, ""))
            self._visit_expression(_chain_call(node))  # the call itself, and its arguments
            return False
        chain = dotted_chain(node)
        if chain is None:
            return True
        root, attributes = chain
        # Positions are taken for what is kept: most chains start at `self` or at a name that
        # turns out not to be imported (_collect keeps those of imported names).
        for attribute in attributes:
            attr = attribute.attr
            if attr.startswith(PASS_THROUGH_ATTR) and len(attr) > len(PASS_THROUGH_ATTR):
                self.flags.append((attr[len(PASS_THROUGH_ATTR):], self.at.attribute_name(attribute), "attr"))
        guarded = self.attr_guard_depth > 0
        spec = self._spec_vars.get((self._scope, root))
        if spec is not None and store and len(attributes) == 1:
            self.specs[spec][2].append((attributes[0].attr, self.at.attribute_name(attributes[0])))
        types = self._types_of(root)
        if types:
            named = [(a.attr, self.at.attribute_name(a)) for a in attributes]
            for index, (attr, where) in enumerate(named):
                last = index == len(named) - 1
                receiver = Receiver(types, tuple(a for a, _ in named[:index]))
                nullable = index == 0 and self._nullable(root)
                value = self._store_values.get(id(node), "") if store and last else ""
                self.reads.append((receiver, attr, where, store and last, self._scope, guarded, nullable, value))
        elif root not in ("self", "cls"):
            self.chains.append((root, attributes, store, guarded))
        return False  # a pure dotted chain holds nothing else to visit

    # -- calls -------------------------------------------------------------------------
    def _result_chain(self, node: ast.Attribute) -> tuple[tuple[str, ...], list[ast.Attribute]] | None:
        """`f(...).a.b`, `f` a dotted name from an import or a module-level definition (a factory
        whose result no annotation may type; contracts/inference.py infers it where it matters):
        (the types of the call's result, the Attribute nodes of .a and .b)."""
        attributes: list[ast.Attribute] = []
        while isinstance(node, ast.Attribute):
            attributes.append(node)
            node = node.value
        if not isinstance(node, ast.Call) or (chain := dotted_chain(node.func)) is None \
                or chain[0] not in self.factories or self._types_of(chain[0]):
            return None
        types = call_types(node, self.returns)
        return (types, attributes[::-1]) if types else None

    def _subject(self, node: ast.AST) -> Receiver | None:
        """What a call's first argument names: a typed receiver, or a dotted name (`C:`)."""
        if isinstance(node, ast.Name):
            root, attrs = node.id, ()
        elif isinstance(node, ast.Attribute) and (chain := dotted_chain(node)) is not None:
            root, attrs = chain[0], tuple(a.attr for a in chain[1])
        else:
            return None
        types = self._types_of(root)
        if types:
            return Receiver(types, attrs)
        if root in ("self", "cls"):
            return None
        return Receiver((f"C:{full_name(node)}",))

    def _probe(self, node: ast.Call, function: str, where: Position) -> None:
        positional = [arg for arg in node.args if not isinstance(arg, ast.Starred)]
        strings = [(text, value, index) for index, value in enumerate(positional)
                   if (text := string_value(value)) is not None]
        subject = self._subject(positional[0]) if positional else None
        if not strings and subject is None:
            return
        keywords = tuple(k.arg for k in node.keywords if k.arg is not None)
        nullable = isinstance(positional[0], ast.Name) and self._nullable(positional[0].id) if positional else False
        self.probes.append((function, subject, [(text, self.at.start(value), index) for text, value, index in strings],
                            len(positional), keywords, where, self._scope, self.attr_guard_depth > 0, nullable))
        if function == "setattr" and len(positional) == 3 and len(strings) == 1 and strings[0][2] == 1:
            owner = self._patched_owner(positional[0])
            if owner is not None:
                self.patches.append(("replace", f"{owner}.{strings[0][0]}", self.at.start(positional[1]),
                                     full_name(positional[2]), self._scope))

    def _patched_owner(self, node: ast.AST) -> str | None:
        """The object a patch writes an attribute of, as written (`m`, `a.b.C`), or the absolute
        name of a module reached by `sys.modules["a.b"]`; None for self, cls, a typed local
        (an instance, not a module or class) or anything else."""
        if isinstance(node, ast.Subscript) and full_name(node.value) == "sys.modules" and type(node.value) is ast.Attribute:
            module = string_value(node.slice)
            return module if module and all(part.isidentifier() for part in module.split(".")) else None
        chain = dotted_chain(node)
        if chain is None or chain[0] in ("self", "cls") or self._types_of(chain[0]):
            return None
        return full_name(node)

    def _namespace_owner(self, node: ast.AST) -> str | None:
        """The object whose namespace `node` is: `m.__dict__`, `vars(m)` (m as `_patched_owner` reads it)."""
        if isinstance(node, ast.Attribute) and node.attr == "__dict__":
            return self._patched_owner(node.value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "vars" \
                and len(node.args) == 1 and not node.keywords:
            return self._patched_owner(node.args[0])
        return None

    def _text_probe(self, node: ast.Call, function: str) -> None:
        """`src.replace("old", ...)` and `re.sub("pattern", ..., src)` on upstream source text."""
        func = node.func
        last = function.rsplit(".", 1)[-1]
        values = [*node.args, *(k.value for k in node.keywords)]
        if isinstance(func, ast.Attribute) and last in TEXT_METHODS:
            source = self._source_of(func.value)
            if source and values and (needle := string_value(values[0])) is not None:
                self.source_probes.append((source, needle, False, self.at.start(values[0]), self._scope))
        elif function.startswith("re.") and last in REGEX_FUNCTIONS and len(values) >= 2:
            pattern = string_value(values[0])
            source = next((s for value in values[1:] if (s := self._source_of(value))), None)
            if pattern is not None and source:
                self.source_probes.append((source, pattern, True, self.at.start(values[0]), self._scope))

    def _keys_built(self, value: ast.AST) -> list[tuple[str, Position]] | None:
        """The string keys of a dict a value builds (a literal, `dict(k=...)`), None if no dict."""
        if isinstance(value, ast.Dict):
            return [(key, self.at.start(node)) for node in value.keys
                    if node is not None and (key := string_value(node)) is not None]
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict" \
                and not value.args:
            return [(k.arg, self.at.start(k)) for k in value.keywords if k.arg is not None]
        return None

    def _arguments(self, node: ast.Call) -> list[tuple[str, str | None, Position]]:
        """(kind, name, position) of each argument, in source order (ast keeps keywords apart).
        `**d` of a dict the same scope built from string keys also gives each key as a keyword,
        at the key: the call passes them (the splat stays, for what else it may hold)."""
        items = sorted([*node.args, *node.keywords], key=lambda item: (item.lineno, item.col_offset))
        result = []
        for item in items:
            if isinstance(item, ast.Starred):
                result.append(("star", None, self.at.start(item.value)))
            elif isinstance(item, ast.keyword) and item.arg is None:
                result.append(("dstar", None, self.at.start(item.value)))
                if isinstance(item.value, ast.Name):
                    given = {name for kind, name, _ in result if kind == "kw"}
                    for key, where in self._dict_keys.get((self._scope, item.value.id), ()):
                        if key.isidentifier() and key not in given:
                            given.add(key)
                            result.append(("kw", key, where))
            elif isinstance(item, ast.keyword):
                result.append(("kw", item.arg, self.at.start(item)))
            else:
                result.append(("pos", item.id if isinstance(item, ast.Name) else None, self.at.start(item)))
        return result

    def _visit_call(self, node: ast.Call) -> None:
        func = node.func
        function = full_name(func)
        if function in dispatches.IMPORTERS and node.args:
            self._dynamic_import(node)
        if function:
            last = function.rsplit(".", 1)[-1]
            if last in PROBES:
                self._probe(node, function, self.at.attribute_name(func) if isinstance(func, ast.Attribute)
                            else self.at.start(func))
            if last in TEXT_METHODS or last in REGEX_FUNCTIONS:
                self._text_probe(node, function)
        elif isinstance(func, ast.Attribute) and func.attr in TEXT_METHODS:
            self._text_probe(node, func.attr)  # inspect.getsource(f).replace(...)
        if isinstance(func, ast.Attribute) and func.attr == "update" and isinstance(func.value, ast.Name) \
                and (keys := self._dict_keys.get((self._scope, func.value.id))) is not None:
            keys += [(k.arg, self.at.start(k)) for k in node.keywords if k.arg is not None]
            for argument in node.args:
                keys += self._keys_built(argument) or []
        root: str | None = None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) \
                and full_name(func.value.func) == "super":
            owner = self._super_class()
            if owner is None:
                return
            callee, where = Receiver((f"U:{owner}",), (func.attr,)), self.at.attribute_name(func)
        else:
            if isinstance(func, ast.Name):
                root, names = func.id, []
            elif isinstance(func, ast.Attribute) and (chain := dotted_chain(func)) is not None:
                root, names = chain
            elif isinstance(func, ast.Attribute) and (result := self._result_chain(func)) is not None:
                # `Adapter.create(...).pause()`: a method of what a call returns
                types, names = result
                self._call_fact(None, Receiver(types, tuple(n.attr for n in names)), self.at.attribute_name(func), node)
                return
            else:
                return
            where = self.at.attribute_name(names[-1]) if names else self.at.start(func)
            types = self._types_of(root)
            if types:
                callee, root = Receiver(types, tuple(n.attr for n in names)), None
            elif root in ("self", "cls"):
                return
            else:
                callee = Receiver((f"C:{function}",))
        self._call_fact(root, callee, where, node)

    def _visit_await(self, node: ast.Await) -> None:
        if isinstance(node.value, ast.Call):
            self._uses[id(node.value)] = "await"

    def _visit_subscript(self, node: ast.Subscript) -> None:
        if type(node.value) is ast.Call:
            self._uses[id(node.value)] = "index"
        elif self._results and type(node.value) is ast.Name:
            self._result_used(node.value, "index")

    def _visit_loop(self, node: ast.For | ast.AsyncFor | ast.comprehension) -> None:
        if type(node.iter) is ast.Call:
            self._uses[id(node.iter)] = "iter"
        elif self._results and type(node.iter) is ast.Name:
            self._result_used(node.iter, "iter")

    def _result_used(self, name: ast.Name, use: str) -> None:
        """A use of a name bound to a call's result: the call's use, unless it has one already."""
        index = self._results.get((self._scope, name.id))
        if index is not None and not self.calls[index][5]:
            self.calls[index] = (*self.calls[index][:5], use)

    def _call_fact(self, root: str | None, callee: Receiver, where: Position, node: ast.Call) -> None:
        """Record a call; one whose result is assigned to a name waits for that name's use."""
        use = self._uses.pop(id(node), "")
        if use.startswith("bind:"):
            self._results[(self._scope, use[5:])] = len(self.calls)
            use = ""
        self.calls.append((root, callee, where, self._arguments(node), self._scope, use))


# A visitor returning False has visited the node's children itself, or wants them skipped.
# Plain functions, not methods bound to a collector: a table of those would hold the collector
# in a reference cycle, and with it the file's syntax tree until a collection found them.
_VISITORS = {
    ast.Try: _Collector._visit_try, ast.TryStar: _Collector._visit_try, ast.If: _Collector._visit_if,
    ast.FunctionDef: _Collector._visit_function, ast.AsyncFunctionDef: _Collector._visit_function,
    ast.ClassDef: _Collector._visit_class, ast.Import: _Collector._visit_import,
    ast.ImportFrom: _Collector._visit_import_from, ast.Assign: _Collector._visit_assign,
    ast.AnnAssign: _Collector._visit_annotated, ast.Delete: _Collector._visit_delete,
    ast.Constant: _Collector._visit_constant, ast.JoinedStr: _Collector._visit_fstring,
    ast.Compare: _Collector._visit_compare, ast.Attribute: _Collector._visit_attribute,
    ast.Call: _Collector._visit_call, ast.Await: _Collector._visit_await, ast.Raise: _Collector._visit_raise,
    ast.Subscript: _Collector._visit_subscript, ast.For: _Collector._visit_loop, ast.AsyncFor: _Collector._visit_loop,
    ast.comprehension: _Collector._visit_loop,
}


def _chain_call(node: ast.AST) -> ast.AST:
    """The call a chain of attributes starts from (`f(...).a.b` -> `f(...)`)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def _syntax_error(error: Exception) -> tuple[int, int, str]:
    """Where and why the file does not parse, in CPython's own words."""
    if isinstance(error, SyntaxError):
        return error.lineno or 1, error.offset or 1, error.msg
    if isinstance(error, TooComplex):
        return 1, 1, str(error)
    return 1, 1, f"{type(error).__name__}: {error}".splitlines()[0]  # e.g. NUL bytes


def _inert(receiver: Receiver, closed: set[str], walked: int = 0) -> bool:
    """A direct `self.<name>` on a closed class (`walked` attributes of the receiver being the
    name itself, for a call): nothing upstream can stand behind it."""
    return len(receiver.attrs) <= walked and len(receiver.types) == 1 and receiver.types[0] in closed


def _probe_matters(subject: Receiver | None, strings: list[tuple[str, Position, int]], bound_names: set[str]) -> bool:
    """A probe of a typed object, of an imported name, or of a dotted target or pass-through name."""
    if subject is not None:
        kind = subject.types[0]
        if not kind.startswith("C:") or kind[2:].split(".")[0] in bound_names:
            return True
    return any("." in text or text.startswith(PASS_THROUGH_ATTR) for text, _, _ in strings)


def _constant(node: ast.AST | None) -> str:
    """"none" for a literal None, "falsy" for False, 0 or an empty string, "" for anything else
    (an empty list is falsy only until something is appended)."""
    if isinstance(node, ast.Constant):
        if node.value is None:
            return "none"
        if node.value in (False, 0, "", b""):
            return "falsy"
    return ""


class _MethodWalk:
    """What the class facts need from one method, in one walk of it (they were five):

    `writes`: (attribute, the value assigned, None when not a plain assignment) of each
    `self.<x>` write; None when the method may set names it does not spell (`setattr(self,
    ...)`, `self.__dict__`), except in `__getattr__`, which only runs for names not set yet.
    `mutates`: the `self.<x>` its body may fill or hand on (upstream.bodies.add_mutated).
    `built`/`unbuilt`: attributes written as `self.x = SimpleNamespace(a=..., ...)` with those
    members, and attributes written (or given members) any other way.
    `calls_base_init`: does it call `super().__init__(...)` or `Base.__init__(self, ...)`?
    `exits`: the returns and yields of its own body, for `returned_shape`."""

    def __init__(self, method: Function, bases: tuple[str, ...]) -> None:
        arguments = [*method.args.posonlyargs, *method.args.args]
        receiver = arguments[0].arg if arguments else None
        self.writes: list[tuple[str, ast.AST | None]] | None = []
        self.mutates: set[str] = set()
        self.built: dict[str, set[str]] = {}
        self.unbuilt: set[str] = set()
        self.calls_base_init = False
        values: dict[int, ast.AST | None] = {}  # target node -> the value assigned to it
        self._dynamic_writes_matter = method.name != "__getattr__"
        self.exits: list[ast.AST] = []  # the returns and yields of its own body (returned_shape)
        # Every node but the LEAVES, each before those below it (an assignment before its
        # targets), in three groups walked in turn: the body's own nodes, those of functions
        # and classes defined in it, and its arguments, decorators and return annotation.
        body = {id(statement) for statement in method.body}
        parts = branch_nodes(method)
        nested: list[ast.AST] = []
        self._walk([part for part in parts if id(part) in body], receiver, bases, values, True, nested)
        self._walk(nested, receiver, bases, values, True, None)
        self._walk([part for part in parts if id(part) not in body], receiver, bases, values, False, None)

    def _walk(self, pending: list[ast.AST], receiver: str | None, bases: tuple[str, ...],
              values: dict[int, ast.AST | None], in_body: bool, nested: list[ast.AST] | None) -> None:
        """The nodes of `pending` and below: `in_body`, are they the method's body's; `nested`,
        where the nodes below a function or class go (None: these are below one already)."""
        while pending:
            sub = pending.pop()
            kind = type(sub)
            if nested is not None and kind in SCOPES:
                nested.extend(branch_nodes(sub))
            else:
                pending.extend(branch_nodes(sub))
            if kind is ast.Attribute:
                if receiver is None:
                    continue
                value = sub.value
                if type(value) is ast.Name:
                    if value.id == receiver:
                        if sub.attr == "__dict__" and self._dynamic_writes_matter:
                            self.writes = None
                        if type(sub.ctx) is not ast.Load and self.writes is not None:
                            self.writes.append((sub.attr, values.get(id(sub))))
                elif type(value) is ast.Attribute and type(value.value) is ast.Name and value.value.id == receiver \
                        and type(sub.ctx) is not ast.Load:
                    self.unbuilt.add(value.attr)  # members added later: self.x.y = ...
            elif kind is ast.Call:
                func = sub.func
                if type(func) is ast.Attribute and func.attr == "__init__":
                    owner = func.value
                    if isinstance(owner, ast.Call) and full_name(owner.func) == "super" or full_name(owner) in bases:
                        self.calls_base_init = True
                if receiver is None:
                    continue
                if type(func) is ast.Name and func.id == "setattr" and self._dynamic_writes_matter and sub.args \
                        and isinstance(sub.args[0], ast.Name) and sub.args[0].id == receiver:
                    self.writes = None
                if in_body:
                    add_mutated(sub, receiver, self.mutates)
            elif kind is ast.Assign or kind is ast.AnnAssign or kind is ast.AugAssign:
                if receiver is None:
                    continue
                self._targets(sub, receiver)
                if kind is ast.Assign:
                    values.update((id(target), sub.value) for target in sub.targets)
                elif kind is ast.AnnAssign:
                    values[id(sub.target)] = sub.value
                if in_body and kind is not ast.AnnAssign:
                    add_mutated(sub, receiver, self.mutates)
            elif kind is ast.Subscript:
                if in_body and receiver is not None:
                    add_mutated(sub, receiver, self.mutates)
            elif nested is not None and kind in EXITS:
                self.exits.append(sub)

    def _targets(self, assignment: ast.Assign | ast.AnnAssign | ast.AugAssign, receiver: str) -> None:
        """Which attributes an assignment builds as a SimpleNamespace stand-in, and which not."""
        targets = assignment.targets if isinstance(assignment, ast.Assign) else [assignment.target]
        for target in targets:
            if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                    and target.value.id == receiver):
                for inner in ast.walk(target):  # unpacked or nested targets: not a stand-in
                    if isinstance(inner, ast.Attribute) and isinstance(inner.value, ast.Name) \
                            and inner.value.id == receiver:
                        self.unbuilt.add(inner.attr)
                continue
            value = assignment.value
            if isinstance(assignment, ast.Assign) and isinstance(value, ast.Call) \
                    and full_name(value.func) in ("SimpleNamespace", "types.SimpleNamespace") \
                    and not value.args and all(k.arg for k in value.keywords):
                self.built.setdefault(target.attr, set()).update(k.arg for k in value.keywords)
            else:
                self.unbuilt.add(target.attr)


def _constant_only(node: ast.ClassDef, methods: list[Function],
                   walks: dict[int, _MethodWalk]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(attributes every write of which sets None, those every write of which sets None or
    another immutable falsy constant), over the class body and `self` in its methods. Nothing
    is claimed when the class may set names it does not spell (`setattr(self, name, ...)`,
    `self.__dict__`), except in `__getattr__`, which only runs for names not set yet.
    `walks`: each method's _MethodWalk, by id."""
    writes: dict[str, set[str]] = {}  # attribute -> the kinds of value written ("none", "falsy", "")

    def wrote(name: str, value: ast.AST | None) -> None:
        writes.setdefault(name, set()).add(_constant(value))

    for statement in node.body:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    wrote(target.id, statement.value)
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value is not None:
            wrote(statement.target.id, statement.value)
        elif isinstance(statement, (*FUNCTIONS, ast.ClassDef)):
            wrote(statement.name, None)
    for method in methods:
        found = walks[id(method)].writes
        if found is None:
            return (), ()
        for name, value in found:
            wrote(name, value)  # augmented, unpacked, deleted (value None): not a constant
    none = tuple(sorted(name for name, kinds in writes.items() if kinds == {"none"}))
    falsy = tuple(sorted(name for name, kinds in writes.items() if kinds and "" not in kinds))
    return none, falsy


def _values(node: ast.ClassDef, methods: list[Function], walks: dict[int, _MethodWalk]) -> tuple[tuple, tuple]:
    """((attribute, tokens of every value the class writes to it), ...) and ((method, token
    of what it returns), ...) for methods that only return a literal or an enum member.
    Tokens as `value_token`, "m:<name>" for `self.<name>()`, "" for anything unknown (a value
    computed), "filled" where a method may fill it or hand it on (an empty container then may
    not stay empty). Nothing at all when the class may set
    names it does not spell (`setattr(self, ...)`, `self.__dict__` outside `__getattr__`).
    `walks`: each method's _MethodWalk, by id."""
    writes: dict[str, set[str]] = {}

    def token(value: ast.AST | None) -> str:
        if isinstance(value, ast.Call) and not value.args and not value.keywords \
                and isinstance(value.func, ast.Attribute) and isinstance(value.func.value, ast.Name) \
                and value.func.value.id == receiver:
            return f"m:{value.func.attr}"
        return value_token(value) if value is not None else ""

    receiver = None
    for statement in node.body:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    writes.setdefault(target.id, set()).add(value_token(statement.value))
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value is not None:
            writes.setdefault(statement.target.id, set()).add(value_token(statement.value))
    returns = []
    for method in methods:
        arguments = [*method.args.posonlyargs, *method.args.args]
        receiver = arguments[0].arg if arguments else None
        if receiver is None:
            continue
        body = [s for s in method.body if not isinstance(s, (ast.Import, ast.ImportFrom, ast.Pass))
                and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if len(body) == 1 and isinstance(body[0], ast.Return) and (found := value_token(body[0].value)):
            returns.append((method.name, found))
        found = walks[id(method)].writes
        if found is None:
            return (), ()
        for name, value in found:
            writes.setdefault(name, set()).add(token(value))
        for name in walks[id(method)].mutates:  # filled, or handed to what may fill it
            writes.setdefault(name, set()).add("filled")
    return (tuple(sorted((name, tuple(sorted(kinds))) for name, kinds in writes.items())),
            tuple(sorted(returns)))


def _namespaces(methods: list[Function], walks: dict[int, _MethodWalk]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """((attribute, its members), ...) for attributes every write of which in the class is
    `self.x = SimpleNamespace(a=..., b=...)` (or `types.SimpleNamespace`): a stand-in object
    that has those members and no others. `walks`: each method's _MethodWalk, by id."""
    built: dict[str, set[str]] = {}
    other: set[str] = set()
    for method in methods:
        walk = walks[id(method)]
        for name, members in walk.built.items():
            built.setdefault(name, set()).update(members)
        other |= walk.unbuilt
    return tuple(sorted((name, tuple(sorted(members))) for name, members in built.items() if name not in other))


def _foreign(kinds: tuple[str, ...], foreign: set[str]) -> bool:
    """Do all of a receiver's type alternatives start at a third-party name (torch, numpy, ...)?"""
    for kind in kinds:
        while kind[:2] in ("P:", "E:"):
            kind = kind[2:].rpartition("|")[0]
        if kind[:2] not in ("T:", "R:", "L:", "C:", "B:") or kind[2:].split(".")[0] not in foreign:
            return False
    return bool(kinds)


def scan_source(path: str, module_name: str, text: str, packages: tuple[str, ...] = ()) -> FileFacts:
    """Facts of one file. A file that does not parse yields a parse error, not an exception.
    `packages` are the project's top-level packages: with them, names imported from anywhere
    else but SGLang are known to be third-party, and facts about them are not kept."""
    facts = FileFacts(path=path, module=module_name, noqa=parse_noqa(text))
    try:
        module = parse_shared(text, path)
    except Exception as error:  # SyntaxError, ValueError on NUL bytes, RecursionError on deep nesting
        facts.parse_error = _syntax_error(error)
        return facts
    try:
        _collect(module, module_name, path, text, facts, packages)
    except Exception as error:  # a scanner bug, or a tree too deep to walk, costs one file, never the run
        clean = FileFacts(path=path, module=module_name, noqa=facts.noqa)
        clean.problem = problem_for(error, path, "scanning the file", depth=lambda: tree_depth(module))
        return clean
    facts.class_names = sorted(used_class_names(facts))
    return facts


def _collect(module: ast.Module, module_name: str, path: str, text: str, facts: FileFacts,
             packages: tuple[str, ...]) -> None:
    """Visit the parsed module and fill `facts` with what matters for SGLang's contracts."""
    at = SourcePositions(text)
    collector = _Collector(module_name, path.endswith("__init__.py"), at)
    collector.factories.update(statement.name for statement in module.body
                               if isinstance(statement, (*FUNCTIONS, ast.ClassDef)))
    collector.bound_methods = bound_methods(module, text)
    collector.returns = module_returns(module, text)
    collector.visit(module)
    bound_names = {fact["bound"] for fact, _, _ in collector.imports}
    # Monkeypatches of import-bound objects, and the names their originals are saved under.
    # A target that starts at `sglang` with nothing binding it was reached through `sys.modules`.
    patches = [p for p in collector.patches if p[1].split(".")[0] in bound_names or is_upstream(p[1])]
    saved = {p[3] for p in patches if p[0] == "save"}
    replacements = {p[3] for p in patches if p[0] == "replace" and p[3]}
    # `self.x` in a class with no base and no __getattr__ can only reach the class itself.
    # Names bound to third-party imports: nothing behind them is SGLang's.
    known = {PACKAGE, *packages}
    foreign = {fact["bound"] for fact, _, _ in collector.imports
               if packages and fact["module"].split(".")[0] not in known} - {"*"}
    closed = {f"S:{c.name}" for c in collector.classes
              if not c.getattr_sources and all(base.split(".")[0] in foreign for base in c.bases)}
    facts.imports = [ImportFact(position=where, module_position=anchor, **fact) for fact, where, anchor in collector.imports]
    facts.attributes = [
        AttributeFact(root=root, attrs=tuple(a.attr for a in attributes),
                      positions=tuple(at.attribute_name(a) for a in attributes), store=store, attr_guarded=guarded)
        for root, attributes, store, guarded in collector.chains if root in bound_names
    ]
    facts.classes = [summary.fact(at) for summary in collector.classes]
    # Calls of plain names matter when the name is imported (or holds a saved original);
    # calls on typed receivers always.
    # A module-level subclass is built with its bases' `__init__` when it has none (resolve.py).
    subclasses = {summary.name for summary in collector.classes if summary.bases}
    facts.calls = [
        CallFact(callee, where, tuple(ArgFact(*arg) for arg in args), scope, use)
        for root, callee, where, args, scope, use in collector.calls
        if (root is None or root in bound_names or root in saved or root in subclasses)
        and not _inert(callee, closed, walked=1) and not _foreign(callee.types, foreign)
    ]
    facts.reads = [ReadFact(receiver, attr, where, store, scope, guarded, nullable, value)
                   for receiver, attr, where, store, scope, guarded, nullable, value in collector.reads
                   if not _inert(receiver, closed) and not _foreign(receiver.types, foreign)]
    facts.patches = [PatchFact(*patch) for patch in patches]
    facts.functions = [FunctionFact(f.name, at.definition_name(f), parameter_list(f))
                       for f in collector.functions if f.name in replacements]
    facts.probes = [
        ProbeFact(function, subject, tuple((text, where) for text, where, _ in strings), nargs, keywords,
                  where_, scope, guarded, tuple(index for _, _, index in strings), nullable)
        for function, subject, strings, nargs, keywords, where_, scope, guarded, nullable in collector.probes
        if _probe_matters(subject, strings, bound_names)
    ]
    facts.source_probes = [SourceProbeFact(*probe) for probe in collector.source_probes]
    facts.specs = [SpecFact(spec, where, tuple(attrs), scope) for spec, where, attrs, scope in collector.specs
                   if spec.split(".")[0] in bound_names]
    facts.flags = [FlagFact(*flag) for flag in collector.flags]
    facts.gates = collector.gates
    facts.dispatches = collector.dispatches
    facts.conditions = [ConditionFact(name, gate) for name, gate in collector.conditions.module_conditions().items()]
    keep_strings = "ServerArgs" in text or "add_cli_args" in text
    facts.strings = [StringsFact(name, tuple(items)) for name, items in collector.strings] if keep_strings else []
