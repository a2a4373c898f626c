"""Extract one project file's facts with `ast`: its SGLang-relevant imports, classes, calls and reads.

The project is read with the standard `ast` parser: on a 2-core machine, libcst took 11.5 s of CPU to
parse the 227 files of sglang-omni that name SGLang and 8 s more to walk them (its visitor rebuilds
the tree), against 1.3 s for `ast`. Nothing here rewrites code, so a concrete syntax tree buys nothing;
positions are converted to flake8's character columns by positions.py."""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Callable, Iterable

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
    FreeNameFact,
    FunctionFact,
    GateFact,
    ImportFact,
    MethodFact,
    ModuleNameFact,
    PatchFact,
    Position,
    ProbeFact,
    ReadFact,
    Receiver,
    SourceProbeFact,
    SpecFact,
    StringsFact,
    base_kind,
    import_binds,
    through_imports,
    used_class_names,
)
from sglang_contracts.project.positions import SourcePositions
from sglang_contracts.infra.boundary import problem_for
from sglang_contracts.infra.lines import numbered_lines
from sglang_contracts.infra.pysource import CHILDLESS, PLACEHOLDER, SCOPES, TooComplex, absolute_import, branch_nodes, child_nodes, parse_shared, rendered, returned_shape, returns_its_receiver, sole_return, tree_depth, unpack_count
from sglang_contracts.sources.base import PACKAGE
from sglang_contracts.infra.writes import add_mutated, value_token
from sglang_contracts.upstream.model import is_upstream
from sglang_contracts.upstream.toplevel import UNREAD_EXPORTS, listed_exports
from sglang_contracts.project.scopes import (
    FUNCTIONS,
    Function,
    TypeTable,
    TypedNames,
    annotation_types,
    body_types,
    bound_methods,
    call_types,
    decorator_names,
    dotted_chain,
    full_name,
    function_types,
    kept_object,
    kept_objects,
    literal_getattr,
    module_names,
    module_rebound,
    module_returns,
    module_strings,
    parameter_list,
    receiver_name,
    stars_before_bindings,
    string_value,
    walrus_lines,
)

EXITS = frozenset({ast.Return, ast.Yield, ast.YieldFrom})  # what returned_shape looks at
IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
# Calls that name an attribute or a dotted target by string, or introspect an object: the
# last name of the callee (`mock.patch.object` -> "object").
PROBES = {"getattr", "hasattr", "setattr", "delattr", "patch", "object", "signature", "fields"}
# Patchers whose first argument may be a dotted target (`mock.patch("a.b.c")`,
# `monkeypatch.setattr("a.b.c", v)`, `monkeypatch.delattr("a.b.c")`); the builtins take no target.
PATCHERS = {"patch", "setattr", "delattr"}
# `patch.<these>`: `patch.multiple(target, x=..., y=...)` patches each keyword's attribute of its
# target; `patch.dict("a.b.TABLE", ...)` imports its target first, as `patch("a.b.TABLE")` does.
NAME_PATCHERS = {"multiple", "dict"}
PATCH_MULTIPLE_OPTIONS = {"target", "spec", "create", "spec_set", "autospec", "new_callable"}  # not attributes
SOURCE_GETTERS = {"getsource"}
STAR_IMPORT = re.compile(r"\bimport[\s\\]*\*")  # a text that shows none needs no look for one in its tree
TEXT_METHODS = {"replace", "find", "rfind", "index", "rindex", "count", "startswith", "endswith", "split", "partition"}
REGEX_FUNCTIONS = {"search", "match", "fullmatch", "sub", "subn", "findall", "finditer", "split"}
MOCKS = {"Mock", "MagicMock", "NonCallableMock", "NonCallableMagicMock", "AsyncMock"}
MOCK_OPTIONS = {"spec", "spec_set", "name", "side_effect", "return_value", "wraps", "unsafe", "new_callable"}
PASS_THROUGH_ATTR = "sglang_"
PASS_THROUGH_FLAG = "--sglang-"
NOQA = re.compile(r"#\s*noqa(?P<colon>\s*:\s*(?P<codes>[^#\n]*))?", re.I)
CODE = re.compile(r"(?<![A-Z])[A-Z]+[0-9]+")  # from a run's start only: not from each letter of a long run


def parse_noqa(text: str, in_string: Callable[[int, int], bool] | None = None) -> dict[int, list[str] | None]:
    """`# noqa` silences every code on its line; `# noqa: SGC101,SGC102` only those.

    A `# noqa: something-else` written for another tool names none of our codes and
    silences nothing (a blanket reading would hide real breaks).
    """
    result: dict[int, list[str] | None] = {}
    for number, line in enumerate(numbered_lines(text), start=1):
        if "noqa" not in line.lower():
            continue
        for match in NOQA.finditer(line):
            if in_string is not None and in_string(number, len(line[:match.start()].encode("utf-8", "surrogatepass"))):
                continue  # the pattern in a string's text is no comment (campaign 13, R05)
            if not match.group("colon"):
                result[number] = None
                break
            codes = CODE.findall(match.group("codes") or "")
            if codes:
                existing = result.get(number, [])
                if existing is not None:
                    result[number] = sorted(set(existing) | set(codes))
    return result


def string_test(module: ast.Module, lines: set[int]) -> Callable[[int, int], bool]:
    """Whether (line, UTF-8 column) is inside a string literal of the module, asked of `lines`
    only (the lines a `# noqa` pattern matched: a walk of the tree for the few files with one).
    The spans are kept by the lines they cover, so that each question reads its line's alone."""
    covering: dict[int, list[tuple[int, int, int, int]]] = {}
    asked = sorted(lines)
    # Only the nodes whose lines hold one of those asked are entered: a walk of the whole tree
    # was a tenth of the re-check of a 4,000-line file with one `# noqa`.
    below = [module]
    while below:
        for node in ast.iter_child_nodes(below.pop()):
            first, last = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
            if first is not None and last is not None:
                # a definition's lines start at its `def` or `class`, below its decorators
                first = min([first, *(decorator.lineno for decorator in getattr(node, "decorator_list", ()))])
                at = bisect.bisect_left(asked, first)
                if at == len(asked) or asked[at] > last:
                    continue  # a node without a position (arguments, a context) is entered
                if type(node) is ast.JoinedStr or type(node) is ast.Constant and isinstance(node.value, str):
                    span = (first, node.col_offset, last, node.end_col_offset or 0)
                    for line in lines.intersection(range(first, last + 1)):
                        covering.setdefault(line, []).append(span)
            below.append(node)

    def inside(line: int, col: int) -> bool:
        return any((first, start) <= (line, col) < (last, end) for first, start, last, end in covering.get(line, ()))

    return inside


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


def _imported_pairs(statement: ast.stmt) -> list[tuple[str, str]] | None:
    """(module, name) of each name an absolute import statement binds (name "" for `import m`);
    none for a statement that raises nothing an import guard catches (`pass`, a docstring, an
    assignment of a constant or a name); None for any other statement, or an import of `*`."""
    if isinstance(statement, ast.Import):
        return [(alias.name, "") for alias in statement.names]
    if isinstance(statement, ast.ImportFrom) and not statement.level and statement.module:
        names = [(statement.module, alias.name) for alias in statement.names if alias.name != "*"]
        return names if len(names) == len(statement.names) else None
    return [] if _raises_nothing(statement) else None


def _raises_nothing(statement: ast.stmt) -> bool:
    """`pass`, a constant expression (a docstring), or an assignment of a constant or a name."""
    return isinstance(statement, ast.Pass) or isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) \
        or isinstance(statement, ast.Assign) and isinstance(statement.value, (ast.Constant, ast.Name))


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
        if isinstance(node, ast.Call):
            source = _getattr_source(node, parameter)
            if source:
                sources.append(source)
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == parameter:
            names.extend(_compared_strings(node))
    return sources, names


def _getattr_source(node: ast.Call, parameter: str) -> str | None:
    """`getattr(Source, parameter)`: the dotted Source as written (None for `self`, or any other call)."""
    if full_name(node.func) != "getattr" or len(node.args) < 2:
        return None
    second = node.args[1]
    if not (isinstance(second, ast.Name) and second.id == parameter):
        return None
    source = full_name(node.args[0])
    return source if source and source != "self" else None


def _compared_strings(node: ast.Compare) -> list[str]:
    """The strings a comparison tests its left side against with `==` or `in`."""
    names: list[str] = []
    for operator, value in zip(node.ops, node.comparators):
        if isinstance(operator, (ast.Eq, ast.In)):
            items = value.elts if isinstance(value, (ast.Tuple, ast.List, ast.Set)) else [value]
            names.extend(text for item in items if (text := string_value(item)) is not None)
    return names


def _getattr_of(methods: list[Function]) -> tuple[list[str], list[str]]:
    """_getattr_probe of the class's `__getattr__(self, name)`; nothing without one."""
    getattr_method = next((m for m in methods if m.name == "__getattr__"), None)
    if getattr_method is None:
        return [], []
    params = [*getattr_method.args.posonlyargs, *getattr_method.args.args]
    if len(params) < 2:
        return [], []
    return _getattr_probe(getattr_method, params[1].arg)


def _calls_base_init(methods: list[Function], walks: dict[int, _MethodWalk]) -> bool | None:
    """Does the class's `__init__` call its base's (None: the class has no `__init__`)?"""
    init = next((m for m in methods if m.name == "__init__"), None)
    return None if init is None else walks[id(init)].calls_base_init


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

    def __init__(self, node: ast.ClassDef, returns: dict[str, tuple[str, ...]] | None = None,
                 walrus: tuple[int, ...] | None = None) -> None:
        self.node = node
        self.name = node.name
        self.bases = tuple(name for base in node.bases if (name := full_name(base)))
        self.attributes = TypeTable()
        self.provided: set[str] = set()
        self.method_types: dict[int, dict[str, tuple[str, ...]]] = {}
        methods = [m for m in node.body if isinstance(m, FUNCTIONS)]
        self._read_body(node.body)
        for method in methods:
            self.provided.add(method.name)
            self.method_types[id(method)] = function_types(method, self.name, self.attributes, returns=returns,
                                                           walrus=walrus)
        self.provided.update(self.attributes.names)
        self.methods = methods
        self.method_ids = {id(m) for m in methods}
        self.getattr_sources, self.getattr_names = _getattr_of(methods)
        self.walks = walks = {id(method): _MethodWalk(method, self.bases) for method in methods}  # each walked once
        self.init_calls_base = _calls_base_init(methods, walks)
        self.none_only, self.falsy_only = _constant_only(node, methods, walks)
        self.values, self.returns = _values(node, methods, walks)
        self.namespaces = _namespaces(methods, walks)

    def _read_body(self, body: list[ast.stmt]) -> None:
        """The names the class body's own statements provide, and the types its annotations give."""
        for statement in body:
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                self.provided.add(statement.target.id)
                self.attributes.bind(statement.target.id, annotation_types(statement.annotation))
            elif isinstance(statement, ast.Assign):
                self.provided.update(target.id for target in statement.targets if isinstance(target, ast.Name))
            elif isinstance(statement, ast.ClassDef):
                self.provided.add(statement.name)

    def fact(self, at: SourcePositions) -> ClassFact:
        return ClassFact(
            name=self.name,
            position=at.definition_name(self.node),
            bases=self.bases,
            methods=tuple(
                MethodFact(m.name, at.definition_name(m), parameter_list(m), decorator_names(m),
                           isinstance(m, ast.AsyncFunctionDef), _annotation_text(m),
                           returned_shape(m, self.walks[id(m)].exits),
                           _returns_base_call(m, self.walks[id(m)].exits, self.bases), returns_its_receiver(m))
                for m in self.methods
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


# What makes a partial of the callable given first (_Collector._partial_call).
PARTIALS = ("functools.partial", "functools.partialmethod")


class _Collector:
    """One depth-first walk of a module in source order, recording what may touch SGLang.
    Positions are taken as facts are recorded; `_collect` keeps the facts that matter."""

    def __init__(self, module_name: str, is_package: bool, at: SourcePositions, module: ast.Module) -> None:
        self.module_name = module_name
        self.is_package = is_package
        self.at = at
        self.guard_depth = 0
        self._guard_stops: list[bool] = []  # of each enclosing import guard: does its handler raise again?
        self.type_checking_depth = 0
        self.scope_depth = 0
        self.imports: list[tuple[dict, Position, Position]] = []  # (fact fields, name, module in statement)
        # The callee of each call of a plain or dotted name, one per name: a module of 380,000
        # calls of `f` kept as many equal receivers (campaign 12, R04). Facts are never changed.
        self.named_callees: dict[str, Receiver] = {}
        self.chains: list[tuple[str, list[ast.Attribute], bool, bool]] = []  # (root, its attributes, store, guarded)
        # Where a name an import binds may be another binding's (_rebound): the types of each
        # function whose body is being visited, innermost last (TypedNames.local, .rebound);
        # ids of the Name nodes a lambda's parameter or a comprehension's target binds; the
        # module's own top-level rebindings, found when first asked.
        self._bodies: list[dict[str, tuple[str, ...]]] = []
        self._rebound_names: set[int] = set()
        self._module = module
        self._module_rebound: frozenset[str] | None = None
        self.import_bound: set[str] = set()  # the names the imports visited so far bind
        self._import_paths: dict[str, str] = {}  # each of them -> what it binds (import_binds)
        self.rebound_calls: set[int] = set()  # indices in `calls` whose root is another binding's (_rebound)
        self._stored: set[int] = set()
        self._store_values: dict[int, str] = {}  # id of an assigned Attribute -> value_token of the value
        # (scope, name) -> (key, position) of the string keys a dict bound to the name was built
        # with so far in that scope: a literal, `dict(k=...)`, `d["k"] = ...`, `d.update(k=...)`
        self._dict_keys: dict[tuple[str, str], list[tuple[str, Position]]] = {}
        self.classes: list[_ClassSummary] = []
        self._class: _ClassSummary | None = None  # the module-level class being visited
        self._functions: list[tuple[str, dict[str, tuple[str, ...]]]] = []  # (scope, typed names)
        # Outside functions: the typed names of the module body, and of the class bodies being visited
        self.module_types = TypedNames()
        self._strings: dict[str, str] | None = None  # scopes.module_strings, read when a patch target needs them
        self._class_bodies: list[TypedNames] = []
        # (callee root or None, Receiver, position of the callee's name, [(kind, name, position)], scope)
        self.calls: list[tuple[str | None, Receiver, Position, list[tuple[str, str | None, Position]], str, str]] = []
        self._uses: dict[int, str] = {}  # id of a call node -> what is done with its result (CallFact.use)
        # (scope, name) -> index in `calls` of the call whose result the name was last assigned
        # (`out = f(...)`): a later `a, b = out`, `out[0]`, `for x in out`, `out.x` is that call's use
        self._results: dict[tuple[str, str], int] = {}
        self.reads: list[tuple[Receiver, str, Position, bool, str, bool, bool, str]] = []
        self.attr_guard_depth = 0
        self._called_getattrs: set[int] = set()  # `getattr(A, "f", None)` called at once: the read A.f
        self._receiver: str | None = None  # the instance's name in the module-level class's method
        # (kind, target as written, position, value, scope): monkeypatches and saved originals
        self.patches: list[tuple[str, str, Position, str | None, str]] = []
        self.functions: list[Function] = []  # module level
        # Names whose calls may build an object a chain reads on (_result_chain): the names
        # imports bind, and the module's own functions and classes.
        self.factories: set[str] = set()
        self.bound_methods: dict[str, tuple[str, ...]] = {}  # scopes.bound_methods
        self.returns: dict[str, tuple[str, ...]] = {}  # scopes.module_returns
        self.walrus: tuple[int, ...] | None = None  # scopes.walrus_lines
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
        # The names the module reads and binds nowhere (scopes.module_names), where it star-imports
        # an SGLang module or a project module (star_givers): what that import may bind, each
        # taken for an import-bound name
        self.star_uses: tuple[str, ...] = ()
        self.star_givers: frozenset[str] = frozenset()

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
            names = _imported_pairs(statement)
            if names is None:
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
                                   returns=self.returns, walrus=self.walrus)
            outer = self._functions[-1][0] if self._functions else ""
            scope = f"{outer}.{node.name}" if outer else node.name
        self._functions.append((scope, types))
        # Decorators and defaults are read in the function's scope, as its body is; only the
        # body sees the names the function binds (`def k(sglang=sglang.srt.a.g)` reads the module).
        self._visit_all([*node.decorator_list, node.args, *([node.returns] if node.returns else [])])
        self._bodies.append(types)
        self._visit_all(node.body)
        self._bodies.pop()
        if method:
            self._receiver = None
        elif self.scope_depth == 1:  # a module function: a version helper is called as the version itself
            self.conditions.scope = scope
            self.conditions.read_getter(node)
        self.scope_depth -= 1
        self._functions.pop()
        return False

    def _visit_class(self, node: ast.ClassDef) -> bool:
        # Module-level classes, and classes a plain function defines (a worker class built only
        # where its platform's imports succeed); not classes nested in classes.
        outer = self._class
        summarised = outer is None
        if summarised:
            self._class = _ClassSummary(node, self.returns, self.walrus)
            self.classes.append(self._class)
        self.scope_depth += 1
        self._visit_all([*node.decorator_list, *node.bases, *node.keywords])
        body_typed = not self._functions  # a class body in a function reads the function's types
        if body_typed:
            self._class_bodies.append(body_types(node.body, None, "", self.returns, self.walrus))
        self._visit_all(node.body)
        if body_typed:
            self._class_bodies.pop()
        self.scope_depth -= 1
        if summarised:
            self._class = outer
        return False

    # -- typed names -------------------------------------------------------------------
    def _types_of(self, name: str) -> tuple[str, ...]:
        """The innermost function's (or an enclosing function's) types for a name; outside
        functions, the class body's or the module's."""
        types = self._typing(name)
        return types.get(name, ()) if types is not None else ()

    def _nullable(self, name: str) -> bool:
        """Does the function that types `name` say it may be None (see TypedNames)?"""
        types = self._typing(name)
        return types is not None and name in getattr(types, "nullable", ())

    def _typing(self, name: str) -> dict[str, tuple[str, ...]] | None:
        """The table that types `name` where the walk is: a function's, a class body's (which
        binds it, typed or not), or the module's; None when none does."""
        for _, types in reversed(self._functions):
            if name in types:
                return types
        if self._functions:
            return None
        if self._class_bodies and name in self._class_bodies[-1].local:
            return self._class_bodies[-1]
        return self.module_types

    def _rebound(self, name: ast.Name) -> bool:
        """Is the name here bound by something other than an import (a parameter, an assignment,
        a loop or comprehension target) in the innermost scope that binds it? A dotted chain or
        a call starting at it then reads no module nor name an import gives (`def k(sglang):
        return sglang.srt.a.g`)."""
        if id(name) in self._rebound_names:
            return True
        for types in reversed(self._bodies):
            if name.id in getattr(types, "local", ()):
                return name.id in getattr(types, "rebound", ())
        if self._module_rebound is None:
            self._module_rebound = module_rebound(self._module, self.walrus)
        return name.id in self._module_rebound

    def _visit_expression_scope(self, node: ast.Lambda | ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
                                ) -> None:
        """A lambda's parameters, a comprehension's targets: the Name nodes below that they bind
        are noted (_rebound), for the names an import bound so far (the others cannot be taken
        for an import's, and most lambdas and comprehensions bind none of those)."""
        bound, region = _expression_scope(node)
        bound &= self.import_bound
        if bound:
            self._rebound_names.update(id(name) for part in region for name in ast.walk(part)
                                       if type(name) is ast.Name and name.id in bound)

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
            self.import_bound.add(bound)
            self._import_paths[bound] = import_binds(alias.name, None, bound)
            where = self.at.start(alias)
            self.imports.append((fact, where, where))
        return False

    def _visit_import_from(self, node: ast.ImportFrom) -> bool:
        module = absolute_import(node, self.module_name, self.is_package)
        if not module:
            return False
        anchor = self.at.imported_module(node)
        for alias in node.names:
            bound = "*" if alias.name == "*" else alias.asname or alias.name
            self.conditions.scope = self._scope
            self.conditions.bind_import(module, alias.name, bound, not is_upstream(module))
            fact = {"module": module, "name": alias.name, "bound": bound, **self._context()}
            self.factories.add(bound)
            self.import_bound.add(bound)
            if bound != "*":
                self._import_paths[bound] = import_binds(module, alias.name, bound)
            if bound == "*" and module in self.star_givers:
                self.factories.update(self.star_uses)
                self.import_bound.update(self.star_uses)
            self.imports.append((fact, self.at.start(alias), anchor))
        return False

    def _dynamic_import(self, node: ast.Call) -> None:
        """`importlib.import_module(name[, package])` with a name built from the release's version."""
        template = self.templates.template(self._scope, node.args[0])
        if template is None or all(kind == "text" for kind, _ in template):
            return  # a literal name is no dispatch; one that cannot be read is the `serves` setting's
        anchor = node.args[1] if len(node.args) > 1 else next(
            (k.value for k in node.keywords if k.arg == "package"), None)
        self.dispatches.append(DispatchFact("import", self.at.start(node), ast.unparse(node.args[0])[:200],
                                            template, self._anchor_package(anchor)))

    def _anchor_package(self, anchor: ast.AST | None) -> str:
        """The package `import_module`'s anchor names: `__package__`, `__name__` or a literal ("" if unknown)."""
        if isinstance(anchor, ast.Name) and anchor.id == "__package__":
            return self.module_name if self.is_package else self.module_name.rpartition(".")[0]
        if isinstance(anchor, ast.Name) and anchor.id == "__name__":
            return self.module_name
        if isinstance(anchor, ast.Constant) and isinstance(anchor.value, str):
            return anchor.value
        return ""

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
        self._note_result_uses(node)
        for target in node.targets:
            self._mark_store(target)
            self._instance_write(target)
        if len(node.targets) != 1:
            return
        target, value = node.targets[0], node.value
        if isinstance(target, ast.Tuple | ast.List):
            self._unpacked_patches(target, value)
        elif isinstance(target, ast.Name):
            self._bind_name(target.id, value)
        elif isinstance(target, ast.Attribute):
            self._attribute_write(target, value)
        elif isinstance(target, ast.Subscript):
            self._subscript_write(target, value)

    def _note_result_uses(self, node: ast.Assign) -> None:
        """What an assignment does with a call's result: unpacks it, or binds it to a name whose
        later use is the call's (_call_fact); a name rebound no longer holds its earlier result."""
        single = node.targets[0] if len(node.targets) == 1 else None
        if single is not None and (count := unpack_count(single)):
            if isinstance(node.value, ast.Call):
                self._uses[id(node.value)] = f"unpack:{count}"
            elif type(node.value) is ast.Name:
                self._result_used(node.value, f"unpack:{count}")
        if self._results:
            self._forget_results(node.targets)
        if type(single) is ast.Name and isinstance(node.value, ast.Call):
            self._uses[id(node.value)] = f"bind:{single.id}"

    def _forget_results(self, targets: list[ast.expr]) -> None:
        """The names assigned are rebound: no longer the results of the calls they were bound to."""
        for target in targets:
            if type(target) is ast.Name:
                self._results.pop((self._scope, target.id), None)

    def _attribute_write(self, target: ast.Attribute, value: ast.expr) -> None:
        """`owner.attr = value`: the value written, and a monkeypatch when the owner is a module or class."""
        self._store_values[id(target)] = value_token(value)
        if (owner := self._patched_owner(target.value)) is not None:
            self.patches.append(("replace", f"{owner}.{target.attr}", self.at.attribute_name(target), full_name(value),
                                 self._scope))

    def _subscript_write(self, target: ast.Subscript, value: ast.expr) -> None:
        """`owner[key] = value`: a patch of a module's namespace, or a key added to a dict built in the scope."""
        scope = self._scope
        key = string_value(target.slice)
        if key is not None and key.isidentifier() and (owner := self._namespace_owner(target.value)) is not None:
            # `m.__dict__["n"] = f`, `vars(m)["n"] = f`: the module's namespace is its attributes
            self.patches.append(("replace", f"{owner}.{key}", self.at.start(target.slice), full_name(value), scope))
        if isinstance(target.value, ast.Name) and (keys := self._dict_keys.get((scope, target.value.id))) is not None \
                and key is not None:
            keys.append((key, self.at.start(target.slice)))

    def _bind_name(self, name: str, value: ast.expr) -> None:
        """`name = value`: what the name now holds (a dict's keys, a version, a saved original,
        upstream source, a mock's spec, a collection of strings)."""
        scope = self._scope
        self._dict_keys.pop((scope, name), None)
        if (keys := self._keys_built(value)) is not None:
            self._dict_keys[(scope, name)] = keys
        self.conditions.scope = scope
        self.conditions.bind(name, value)
        self.templates.bind(scope, name, value)
        if isinstance(value, ast.Attribute) and (chain := dotted_chain(value)) is not None \
                and chain[0] not in ("self", "cls"):
            self.patches.append(("save", full_name(value), self.at.attribute_name(value), name, scope))
        source = _getsource_target(value)
        if source:
            self._sources[(scope, name)] = source
        if isinstance(value, ast.Call):
            spec = self._spec_of(value)
            if spec is not None:
                self._spec_vars[(scope, name)] = spec
        self._string_collection(name, value)

    def _unpacked_patches(self, target: ast.Tuple | ast.List, value: ast.AST) -> None:
        """`(m.a, m.b) = (x, y)` patches each attribute as `m.a = x` would; with a value that is
        not a tuple of as many items, by a value that is not known."""
        for element, item in zip(target.elts, _unpacked_values(value, len(target.elts))):
            # An attribute of a module or class as written (not of self, cls or a typed local)
            if isinstance(element, ast.Attribute) and (patched := self._patched_owner(element)) is not None:
                self._store_values[id(element)] = value_token(item) if item is not None else ""
                self.patches.append(("replace", patched, self.at.attribute_name(element),
                                     full_name(item) if item is not None else None, self._scope))
            elif isinstance(element, ast.Tuple | ast.List):
                self._unpacked_patches(element, item if item is not None else ast.Constant(None))

    def _string_collection(self, name: str, value: ast.AST) -> None:
        nodes = _collection_items(value)
        if nodes is None:
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
        attrs = [(k.arg, self.at.start(k)) for k in node.keywords if _sets_mock_attribute(k)]
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
        value = node.value
        if type(value) is ast.Call:
            self._uses.setdefault(id(value), f"attr:{node.attr}")
        elif self._results and type(value) is ast.Name:
            self._result_used(value, f"attr:{node.attr}")
        store = id(node) in self._stored
        if isinstance(value, ast.Call) and full_name(value.func) == "super":
            self._super_read(node, store)
            return True
        if not isinstance(value, ast.Name) and (result := self._result_chain(node)) is not None:
            self._result_reads(*result, store)
            self._visit_expression(_chain_call(node))  # the call itself, and its arguments
            return False
        chain = dotted_chain(node)
        if chain is None:
            return True
        self._chain_reads(node, *chain, store)
        return False  # a pure dotted chain holds nothing else to visit

    def _super_read(self, node: ast.Attribute, store: bool) -> None:
        """`super().x`: a read on the bases of the module-level class whose method this is."""
        owner = self._super_class()
        if owner is not None:
            self.reads.append((Receiver((f"U:{owner}",)), node.attr, self.at.attribute_name(node), store,
                               self._scope, self.attr_guard_depth > 0, False, ""))

    def _result_reads(self, types: tuple[str, ...], attributes: list[ast.Attribute], store: bool) -> None:
        """`f(...).a.b`: a read of each attribute on what the call returns (see _result_chain)."""
        for index, attribute in enumerate(attributes):
            last = index == len(attributes) - 1
            self.reads.append((Receiver(types, tuple(a.attr for a in attributes[:index])), attribute.attr,
                               self.at.attribute_name(attribute), store and last, self._scope,
                               self.attr_guard_depth > 0, False, ""))

    def _chain_reads(self, node: ast.Attribute, root: str, attributes: list[ast.Attribute], store: bool) -> None:
        """A dotted chain `root.a.b`: reads on a typed root, or a chain kept for `_collect` to resolve."""
        # Positions are taken for what is kept: most chains start at `self` or at a name that
        # turns out not to be imported (_collect keeps those of imported names).
        self._pass_through_attributes(attributes)
        guarded = self.attr_guard_depth > 0
        spec = self._spec_vars.get((self._scope, root))
        if spec is not None and store and len(attributes) == 1:
            self.specs[spec][2].append((attributes[0].attr, self.at.attribute_name(attributes[0])))
        types = self._types_of(root)
        if types:
            self._typed_reads(node, root, types, attributes, store, guarded)
        elif root not in ("self", "cls") and not self._rebound(attributes[0].value):
            self.chains.append((root, attributes, store, guarded))

    def _pass_through_attributes(self, attributes: list[ast.Attribute]) -> None:
        """`args.sglang_<flag>`: a flag the project passes through to SGLang."""
        for attribute in attributes:
            attr = attribute.attr
            if attr.startswith(PASS_THROUGH_ATTR) and len(attr) > len(PASS_THROUGH_ATTR):
                self.flags.append((attr[len(PASS_THROUGH_ATTR):], self.at.attribute_name(attribute), "attr"))

    def _typed_reads(self, node: ast.Attribute, root: str, types: tuple[str, ...], attributes: list[ast.Attribute],
                     store: bool, guarded: bool) -> None:
        """A read of each attribute of `root.a.b` on what the typed root holds (the last one written, for a store)."""
        named = [(a.attr, self.at.attribute_name(a)) for a in attributes]
        for index, (attr, where) in enumerate(named):
            last = index == len(named) - 1
            receiver = Receiver(types, tuple(a for a, _ in named[:index]))
            nullable = index == 0 and self._nullable(root)
            value = self._store_values.get(id(node), "") if store and last else ""
            self.reads.append((receiver, attr, where, store and last, self._scope, guarded, nullable, value))

    # -- calls -------------------------------------------------------------------------
    def _result_chain(self, node: ast.Attribute) -> tuple[tuple[str, ...], list[ast.Attribute]] | None:
        """`f(...).a.b`, `f` a dotted name from an import or a module-level definition (a factory
        whose result no annotation may type; analysis/inference.py infers it where it matters),
        or a name that keeps one (`K = C`, then `K().a.b`: campaign 15, R04): (the types of the
        call's result, the Attribute nodes of .a and .b)."""
        attributes: list[ast.Attribute] = []
        while isinstance(node, ast.Attribute):
            attributes.append(node)
            node = node.value
        if not isinstance(node, ast.Call) or (chain := dotted_chain(node.func)) is None:
            return None
        known = self._types_of(chain[0])
        if not known and chain[0] not in self.factories \
                or known and (not kept_objects(known) or self._aliases_another(known)):
            return None
        types = call_types(node, self.returns, {chain[0]: known})
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

    def _probe(self, node: ast.Call, function: str, origin: str, where: Position) -> None:
        """A probe of `function` as written; `origin`, what it is through the file's imports, says which."""
        positional = [arg for arg in node.args if not isinstance(arg, ast.Starred)]
        strings = _string_arguments(positional)
        if (target := self._built_target(node, origin, positional, strings)) is not None:
            strings.insert(0, (*target, 0))
        first = positional[0] if positional else None
        if origin.rsplit(".", 2)[-2:] == ["patch", "object"]:  # patch.object(target=A, attribute="x")
            first = first or _target_keyword(node)
            attribute = _target_keyword(node, "attribute") if len(positional) < 2 else None
            if (text := string_value(attribute)) is not None:
                strings.append((text, attribute, 1))
        subject = self._subject(first) if first is not None else None
        if not strings and subject is None:
            return
        keywords = tuple(k.arg for k in node.keywords if k.arg is not None)
        self.probes.append((function, subject, [(text, self.at.start(value), index) for text, value, index in strings],
                            len(positional), keywords, where, self._scope, self.attr_guard_depth > 0,
                            self._first_nullable(positional)))
        if origin == "setattr":
            self._setattr_patch(positional, strings)

    def _built_target(self, node: ast.Call, function: str, positional: list[ast.expr],
                      strings: list[tuple[str, ast.expr, int]]) -> tuple[str, ast.expr] | None:
        """(text, argument) of the dotted target a patcher names other than by a literal first
        argument: by `target=`, or by a string built from the module's string constants
        (`f"{M}.x"`, `M + ".x"`, `M`)."""
        if function.rsplit(".", 1)[-1] not in PATCHERS or function in ("setattr", "delattr") \
                or strings and strings[0][2] == 0:
            return None
        value = positional[0] if positional else _target_keyword(node)
        text = self._rendered_target(value)
        return (text, value) if text else None

    def _rendered_target(self, value: ast.expr | None) -> str | None:
        """The string a target spells: a literal, or built from the module's string constants."""
        if not isinstance(value, (ast.Constant, ast.Name, ast.JoinedStr, ast.BinOp)):
            return None
        if self._strings is None:
            self._strings = module_strings(self._module)
        text = rendered(value, self._strings)
        return text if text and PLACEHOLDER not in text else None

    def _names_patch(self, node: ast.Call, function: str, where: Position) -> None:
        """`patch.dict(target, ...)`: a probe of its target as `patch(target)` is. `patch.multiple(target,
        x=..., y=...)`: one of each keyword's attribute, as `patch("target.x")` (the target a string) or
        `patch.object(target, "x")` (an object) is, at the keyword; none with `create=True`, which makes
        what is missing, or a `**` splat, which may hold it."""
        multiple = function.endswith("multiple")
        target = node.args[0] if node.args else _target_keyword(node, "target" if multiple else "in_dict")
        text = self._rendered_target(target)
        if not multiple:
            if text:
                self.probes.append((function, None, [(text, self.at.start(target), 0)], len(node.args), (), where,
                                    self._scope, self.attr_guard_depth > 0, False))
            return
        subject = self._subject(target) if target is not None and not text else None
        may_create = any(k.arg is None or k.arg == "create" and not _is_false(k.value) for k in node.keywords)
        if not (text or subject) or may_create:
            return
        for keyword in node.keywords:
            if keyword.arg not in PATCH_MULTIPLE_OPTIONS:
                at = self.at.start(keyword)
                strings = [(f"{text}.{keyword.arg}", at, 0)] if text else [(keyword.arg, at, 1)]
                self.probes.append((function, subject, strings, len(node.args), (), where, self._scope,
                                    self.attr_guard_depth > 0, False))

    def _first_nullable(self, positional: list[ast.expr]) -> bool:
        """Is the first argument a name its function says may be None?"""
        return bool(positional) and isinstance(positional[0], ast.Name) and self._nullable(positional[0].id)

    def _setattr_patch(self, positional: list[ast.expr], strings: list[tuple[str, ast.expr, int]]) -> None:
        """`setattr(owner, "name", value)`, the name a literal: a monkeypatch, as `owner.name = value` is."""
        if len(positional) != 3 or len(strings) != 1 or strings[0][2] != 1:
            return
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
            self._text_method_probe(func.value, values)
        elif function.startswith("re.") and last in REGEX_FUNCTIONS and len(values) >= 2:
            self._regex_probe(values)

    def _text_method_probe(self, text: ast.expr, values: list[ast.expr]) -> None:
        """`src.replace("old", ...)`: the literal looked for, when `src` holds upstream source."""
        source = self._source_of(text)
        if source and values and (needle := string_value(values[0])) is not None:
            self.source_probes.append((source, needle, False, self.at.start(values[0]), self._scope))

    def _regex_probe(self, values: list[ast.expr]) -> None:
        """`re.sub("pattern", ..., src)`: the literal pattern, when an argument holds upstream source."""
        pattern = string_value(values[0])
        source = next((s for value in values[1:] if (s := self._source_of(value))), None)
        if pattern is not None and source:
            self.source_probes.append((source, pattern, True, self.at.start(values[0]), self._scope))

    def _keys_built(self, value: ast.AST) -> list[tuple[str, Position]] | None:
        """The string keys of a dict a value builds (a literal, `dict(k=...)`), None if no dict."""
        if isinstance(value, ast.Dict):
            return [(key, self.at.start(node)) for node in value.keys
                    if node is not None and (key := string_value(node)) is not None]
        if _is_keywords_dict(value):
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
                    self._splatted_keys(self._dict_keys.get((self._scope, item.value.id), ()), result)
                else:  # `**{"b": 2}`, `**dict(b=2)`: the keys are written at the call
                    self._splatted_keys(self._keys_built(item.value) or (), result)
            elif isinstance(item, ast.keyword):
                result.append(("kw", item.arg, self.at.start(item)))
            else:
                result.append(("pos", item.id if isinstance(item, ast.Name) else None, self.at.start(item)))
        return result

    def _splatted_keys(self, keys: Iterable[tuple[str, Position]],
                       result: list[tuple[str, str | None, Position]]) -> None:
        """`**d` of a dict the scope built or the call writes (its `keys`): each identifier key not
        given already, as a keyword."""
        given = {name for kind, name, _ in result if kind == "kw"}
        for key, where in keys:
            if key.isidentifier() and key not in given:
                given.add(key)
                result.append(("kw", key, where))

    def _visit_call(self, node: ast.Call) -> bool:
        func = node.func
        while type(func) is ast.NamedExpr:  # `(g := f)(...)` calls f (campaign 15, R04)
            func = func.value
        if type(func) is ast.Call \
                and (read := self._literal_getattr(func, full_name(func.func), called=True)) is not None:
            self._called_getattrs.add(id(func))
            func = read  # `getattr(A, "f")(...)` and `getattr(A, "f", None)(...)` call A.f
        function = full_name(func)
        self._call_probes(node, func, function)
        if isinstance(func, ast.Attribute) and func.attr == "update" and isinstance(func.value, ast.Name):
            self._dict_update(node, func.value.id)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) \
                and full_name(func.value.func) == "super":
            self._super_call(node, func)
        else:
            self._named_call(node, func, function)
        if function and (partial := through_imports(function, self._import_paths)) in PARTIALS:
            self._partial_call(node, method=partial == "functools.partialmethod")
        read = self._literal_getattr(node, function)
        if read is None:
            return True
        self._visit_expression(read)  # its value is the subject: visited once, as part of the read
        self._visit_expression(node.args[1])
        return False

    def _partial_call(self, node: ast.Call, method: bool = False) -> None:
        """`functools.partial(f, 1, b=4)`: a call of f with the arguments it binds, judged where
        the partial is made (audit 13, R12): they are written there, wherever the partial goes
        (a callback, a pool, `map`), and a keyword f lost raises at each call of it. What those
        calls add is left open, as a `*`/`**` splat at the end: nothing is missing. Its use is
        "partial": the partial does not run f, nor give f's result. A `partialmethod(C.m, ...)`
        (`method`) binds its arguments after the instance its method is called on: `C.m(<self>, ...)`."""
        if not node.args or isinstance(node.args[0], ast.Starred):
            return
        func = node.args[0]
        at = {"lineno": node.end_lineno, "col_offset": node.end_col_offset - 1}  # the closing parenthesis
        later = ast.Constant(None, **at)
        instance = [ast.Constant(None, **at)] if method else []
        bound = ast.Call(func, [*instance, *node.args[1:], ast.Starred(later, ast.Load(), **at)],
                         [*node.keywords, ast.keyword(None, later, **at)], **at)
        self._uses[id(bound)] = "partial"
        self._named_call(bound, func, full_name(func))

    def _literal_getattr(self, node: ast.Call, function: str | None, called: bool = False) -> ast.Attribute | None:
        """`getattr(A, "x")`, with no default, of a module or class as written: the read `A.x` it
        is (an AttributeError where A lost x), placed at the string, for the attribute rules to
        judge as any other (audit 13, R12). With a default it raises nothing: a probe (SGC804),
        unless `called` at once with a default of None, which is not callable either.
        A typed instance's getattr stays a probe, judged by the field rules as one."""
        if function != "getattr" or "getattr" in self.import_bound:
            return None
        read = literal_getattr(node, called=called or id(node) in self._called_getattrs)
        root = read and dotted_chain(read)
        if read is None or root is None or root[0] in ("self", "cls") or self._types_of(root[0]):
            return None
        return read

    def _call_probes(self, node: ast.Call, func: ast.expr, function: str | None) -> None:
        """What a call may probe: a module imported by a name built from the version, attributes
        named by string, upstream source text."""
        if function in dispatches.IMPORTERS and node.args:
            self._dynamic_import(node)
        if function:
            last = function.rsplit(".", 1)[-1]
            # what an import binds decides, not the name it is bound to (`patch as P`, `import unittest.mock as um`)
            origin = through_imports(function, self._import_paths) or function
            if origin.rsplit(".", 1)[-1] in PROBES and id(node) not in self._called_getattrs:
                self._probe(node, function, origin, self.at.attribute_name(func) if isinstance(func, ast.Attribute)
                            else self.at.start(func))
            elif origin.rsplit(".", 2)[-2:] in (["patch", name] for name in NAME_PATCHERS) \
                    and isinstance(func, ast.Attribute):
                self._names_patch(node, function, self.at.attribute_name(func))
            if last in TEXT_METHODS or last in REGEX_FUNCTIONS:
                self._text_probe(node, function)
        elif isinstance(func, ast.Attribute) and func.attr in TEXT_METHODS:
            self._text_probe(node, func.attr)  # inspect.getsource(f).replace(...)

    def _dict_update(self, node: ast.Call, dict_name: str) -> None:
        """`d.update(k=..., other)` of a dict the scope built: the keys it adds."""
        keys = self._dict_keys.get((self._scope, dict_name))
        if keys is None:
            return
        keys += [(k.arg, self.at.start(k)) for k in node.keywords if k.arg is not None]
        for argument in node.args:
            keys += self._keys_built(argument) or []

    def _super_call(self, node: ast.Call, func: ast.Attribute) -> None:
        """`super().m(...)`: a call of the bases' method, in a method of a module-level class."""
        owner = self._super_class()
        if owner is not None:
            self._call_fact(None, Receiver((f"U:{owner}",), (func.attr,)), self.at.attribute_name(func), node)

    def _named_call(self, node: ast.Call, func: ast.expr, function: str | None) -> None:
        """A call of a name or a dotted name: a method of a typed receiver, or what the name is bound to."""
        if isinstance(func, ast.Name):
            root, names = func.id, []
        elif isinstance(func, ast.Attribute) and (chain := dotted_chain(func)) is not None:
            root, names = chain
        elif isinstance(func, ast.Attribute):
            self._result_call(node, func)
            return
        else:
            return
        where = self.at.attribute_name(names[-1]) if names else self.at.start(func)
        types = self._types_of(root)
        if types:
            if not self._aliases_another(types):
                self._call_fact(None, Receiver(types, tuple(n.attr for n in names)), where, node)
        elif root not in ("self", "cls"):
            if self._rebound(func if isinstance(func, ast.Name) else names[0].value):
                self.rebound_calls.add(len(self.calls))
            callee = self.named_callees.get(function)
            if callee is None:
                callee = self.named_callees[function] = Receiver((f"C:{function}",))
            self._call_fact(root, callee, where, node)

    def _aliases_another(self, types: tuple[str, ...]) -> bool:
        """Is one of the types an alias (`h = f`: `P:C:f|`, scopes' _alias) of a name that a
        function around the one that typed it binds otherwise (`def outer(f): def inner(): h = f`),
        or the module does: there f is not the import's."""
        return any(self._rebound(ast.Name(name.partition(".")[0])) for kind in types
                   if (name := kept_object(kind)) is not None)

    def _result_call(self, node: ast.Call, func: ast.Attribute) -> None:
        """`Adapter.create(...).pause()`: a method of what a call returns."""
        result = self._result_chain(func)
        if result is not None:
            types, names = result
            self._call_fact(None, Receiver(types, tuple(n.attr for n in names)), self.at.attribute_name(func), node)

    def _visit_await(self, node: ast.Await) -> None:
        if isinstance(node.value, ast.Call):
            self._uses[id(node.value)] = "await"

    def _visit_return(self, node: ast.Return) -> None:
        # The result goes to the caller, who may await it: not a coroutine left unrun.
        if type(node.value) is ast.Call:
            self._uses[id(node.value)] = "return"
        elif self._results and type(node.value) is ast.Name:
            self._result_used(node.value, "return")

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
    ast.Return: _Collector._visit_return,
    ast.Subscript: _Collector._visit_subscript, ast.For: _Collector._visit_loop, ast.AsyncFor: _Collector._visit_loop,
    ast.comprehension: _Collector._visit_loop,
    ast.Lambda: _Collector._visit_expression_scope, ast.ListComp: _Collector._visit_expression_scope,
    ast.SetComp: _Collector._visit_expression_scope, ast.GeneratorExp: _Collector._visit_expression_scope,
    ast.DictComp: _Collector._visit_expression_scope,
}


def _expression_scope(node: ast.Lambda | ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
                      ) -> tuple[set[str], list[ast.AST]]:
    """(the names a lambda or a comprehension binds, the parts of it that see them): a lambda's
    body, not its defaults; a comprehension's all but its first iterable, read outside it."""
    if isinstance(node, ast.Lambda):
        arguments = node.args
        params = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
        return {param.arg for param in params if param is not None}, [node.body]
    bound = {name.id for generator in node.generators for name in ast.walk(generator.target)
             if type(name) is ast.Name}
    results = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
    first, *others = node.generators
    return bound, [*results, *first.ifs, *others]


def _string_arguments(positional: list[ast.expr]) -> list[tuple[str, ast.expr, int]]:
    """(text, node, index) of each literal string among a call's positional arguments."""
    return [(text, value, index) for index, value in enumerate(positional) if (text := string_value(value)) is not None]


def _target_keyword(node: ast.Call, name: str = "target") -> ast.expr | None:
    """The value of a call's `target=` keyword (`mock.patch(target="a.b.c")`), None without one."""
    return next((k.value for k in node.keywords if k.arg == name), None)


def _is_false(node: ast.expr) -> bool:
    """A literal False (or 0, None): `create=False`, as good as none."""
    return isinstance(node, ast.Constant) and not node.value


def _is_keywords_dict(value: ast.AST) -> bool:
    """`dict(k=..., ...)`: a dict built from keywords alone."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict" \
        and not value.args


def _unpacked_values(value: ast.AST, count: int) -> list[ast.expr | None]:
    """The items of a tuple or list assigned to `count` targets, one each; Nones when the value
    is not one of as many plain (unstarred) items."""
    if isinstance(value, ast.Tuple | ast.List) and len(value.elts) == count \
            and not any(isinstance(item, ast.Starred) for item in value.elts):
        return value.elts
    return [None] * count


def _collection_items(value: ast.AST) -> list[ast.expr] | None:
    """The items of a list, tuple or set literal, or a dict literal's keys and values in turn;
    None for anything else, or a dict that splats another (`{**other}`)."""
    if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
        return value.elts
    if isinstance(value, ast.Dict) and not any(key is None for key in value.keys):
        return [part for pair in zip(value.keys, value.values) for part in pair]
    return None


def _sets_mock_attribute(keyword: ast.keyword) -> bool:
    """Does a Mock's keyword set an attribute of the mock (not one of its options, nor a dotted child's)?"""
    return bool(keyword.arg) and keyword.arg not in MOCK_OPTIONS and "." not in keyword.arg


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
    return 1, 1, numbered_lines(f"{type(error).__name__}: {error}")[0]  # e.g. NUL bytes


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


def _returns_base_call(method: Function, exits: list[ast.AST], bases: tuple[str, ...]) -> bool:
    """Does some `return` of the method's own body give its base's method of the same name
    called directly: `return super().m(...)` or `return Base.m(self, ...)` (MethodFact.delegates)?"""
    for node in exits:
        value = node.value if type(node) is ast.Return else None
        if type(value) is not ast.Call or type(value.func) is not ast.Attribute or value.func.attr != method.name:
            continue
        if _names_base(value.func.value, bases):
            return True
    return False


def _names_base(owner: ast.expr, bases: tuple[str, ...]) -> bool:
    """Is `owner` (of a method called) `super()`, or one of the class's bases by name?"""
    return isinstance(owner, ast.Call) and full_name(owner.func) == "super" or full_name(owner) in bases


def _first_parameter(method: Function) -> str | None:
    """The name of a method's first parameter (its receiver, `self` or `cls`), None without one."""
    arguments = [*method.args.posonlyargs, *method.args.args]
    return arguments[0].arg if arguments else None


def _is_receiver_attribute(node: ast.AST, receiver: str) -> bool:
    """`self.<x>`, `self` being the method's receiver."""
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == receiver


def _sets_receiver_names(call: ast.Call, receiver: str) -> bool:
    """`setattr(self, ...)`: a write of a name the method may not spell."""
    func = call.func
    return type(func) is ast.Name and func.id == "setattr" and len(call.args) > 0 \
        and isinstance(call.args[0], ast.Name) and call.args[0].id == receiver


def _namespace_members(assignment: ast.Assign | ast.AnnAssign | ast.AugAssign) -> list[str] | None:
    """The members of a `SimpleNamespace(a=..., b=...)` (or `types.SimpleNamespace`) assigned with
    keywords alone; None for any other value or assignment."""
    value = assignment.value
    if isinstance(assignment, ast.Assign) and isinstance(value, ast.Call) \
            and full_name(value.func) in ("SimpleNamespace", "types.SimpleNamespace") \
            and not value.args and all(k.arg for k in value.keywords):
        return [k.arg for k in value.keywords]
    return None


class _MethodWalk:
    """What the class facts need from one method, in one walk of it (they were five):

    `writes`: (attribute, the value assigned, None when not a plain assignment) of each
    `self.<x>` write; None when the method may set names it does not spell (`setattr(self,
    ...)`, `self.__dict__`), except in `__getattr__`, which only runs for names not set yet.
    `mutates`: the `self.<x>` its body may fill or hand on (infra.writes.add_mutated).
    `built`/`unbuilt`: attributes written as `self.x = SimpleNamespace(a=..., ...)` with those
    members, and attributes written (or given members) any other way.
    `calls_base_init`: does it call `super().__init__(...)` or `Base.__init__(self, ...)`?
    `exits`: the returns and yields of its own body, for `returned_shape`."""

    def __init__(self, method: Function, bases: tuple[str, ...]) -> None:
        receiver = _first_parameter(method)
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
            walker = _WALKERS.get(kind)
            if walker is not None:
                walker(self, sub, receiver, bases, values, in_body)
            elif nested is not None and kind in EXITS:
                self.exits.append(sub)

    def _walk_attribute(self, sub: ast.Attribute, receiver: str | None, bases: tuple[str, ...],
                        values: dict[int, ast.AST | None], in_body: bool) -> None:
        """`self.x`, and `self.x.y = ...` (members added later to x: not a stand-in)."""
        if receiver is None:
            return
        value = sub.value
        if type(value) is ast.Name and value.id == receiver:
            self._receiver_attribute(sub, values)
        elif type(value) is ast.Attribute and type(value.value) is ast.Name and value.value.id == receiver \
                and type(sub.ctx) is not ast.Load:
            self.unbuilt.add(value.attr)

    def _receiver_attribute(self, sub: ast.Attribute, values: dict[int, ast.AST | None]) -> None:
        """`self.x` written (with the value assigned to it), or `self.__dict__`, through which any name may be."""
        if sub.attr == "__dict__" and self._dynamic_writes_matter:
            self.writes = None
        if type(sub.ctx) is not ast.Load and self.writes is not None:
            self.writes.append((sub.attr, values.get(id(sub))))

    def _walk_call(self, sub: ast.Call, receiver: str | None, bases: tuple[str, ...],
                   values: dict[int, ast.AST | None], in_body: bool) -> None:
        """A call of the base's `__init__`, `setattr(self, ...)`, or one that may fill `self.<x>`."""
        func = sub.func
        if type(func) is ast.Attribute and func.attr == "__init__" and _names_base(func.value, bases):
            self.calls_base_init = True
        if receiver is None:
            return
        if self._dynamic_writes_matter and _sets_receiver_names(sub, receiver):
            self.writes = None
        if in_body:
            add_mutated(sub, receiver, self.mutates)

    def _walk_assignment(self, sub: ast.Assign | ast.AnnAssign | ast.AugAssign, receiver: str | None,
                         bases: tuple[str, ...], values: dict[int, ast.AST | None], in_body: bool) -> None:
        """An assignment: the stand-ins it builds, the values of its targets, what it may fill."""
        if receiver is None:
            return
        kind = type(sub)
        self._targets(sub, receiver)
        if kind is ast.Assign:
            values.update((id(target), sub.value) for target in sub.targets)
        elif kind is ast.AnnAssign:
            values[id(sub.target)] = sub.value
        if in_body and kind is not ast.AnnAssign:
            add_mutated(sub, receiver, self.mutates)

    def _walk_subscript(self, sub: ast.Subscript, receiver: str | None, bases: tuple[str, ...],
                        values: dict[int, ast.AST | None], in_body: bool) -> None:
        """`self.x[...]`: what the body may fill."""
        if in_body and receiver is not None:
            add_mutated(sub, receiver, self.mutates)

    def _targets(self, assignment: ast.Assign | ast.AnnAssign | ast.AugAssign, receiver: str) -> None:
        """Which attributes an assignment builds as a SimpleNamespace stand-in, and which not."""
        targets = assignment.targets if isinstance(assignment, ast.Assign) else [assignment.target]
        for target in targets:
            if not _is_receiver_attribute(target, receiver):
                # unpacked or nested targets: not a stand-in
                self.unbuilt.update(inner.attr for inner in ast.walk(target) if _is_receiver_attribute(inner, receiver))
                continue
            members = _namespace_members(assignment)
            if members is None:
                self.unbuilt.add(target.attr)
            else:
                self.built.setdefault(target.attr, set()).update(members)


# What _MethodWalk._walk reads of each kind of node; plain functions, as _VISITORS are.
_WALKERS = {
    ast.Attribute: _MethodWalk._walk_attribute, ast.Call: _MethodWalk._walk_call,
    ast.Assign: _MethodWalk._walk_assignment, ast.AnnAssign: _MethodWalk._walk_assignment,
    ast.AugAssign: _MethodWalk._walk_assignment, ast.Subscript: _MethodWalk._walk_subscript,
}


def _constant_only(node: ast.ClassDef, methods: list[Function],
                   walks: dict[int, _MethodWalk]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(attributes every write of which sets None, those every write of which sets None or
    another immutable falsy constant), over the class body and `self` in its methods. Nothing
    is claimed when the class may set names it does not spell (`setattr(self, name, ...)`,
    `self.__dict__`), except in `__getattr__`, which only runs for names not set yet.
    `walks`: each method's _MethodWalk, by id."""
    method_writes = _method_writes(methods, walks)
    if method_writes is None:
        return (), ()
    defined = [(statement.name, None) for statement in node.body if isinstance(statement, (*FUNCTIONS, ast.ClassDef))]
    writes: dict[str, set[str]] = {}  # attribute -> the kinds of value written ("none", "falsy", "")
    # in methods, augmented, unpacked, deleted (value None): not a constant
    for name, value in [*_class_body_values(node), *defined, *method_writes]:
        writes.setdefault(name, set()).add(_constant(value))
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
    for name, value in _class_body_values(node):
        writes.setdefault(name, set()).add(value_token(value))
    returns = []
    for method in methods:
        receiver = _first_parameter(method)
        if receiver is None:
            continue
        if found := _literal_return(method):
            returns.append((method.name, found))
        walk = walks[id(method)]
        if walk.writes is None:
            return (), ()
        for name, value in walk.writes:
            writes.setdefault(name, set()).add(_written_token(value, receiver))
        for name in walk.mutates:  # filled, or handed to what may fill it
            writes.setdefault(name, set()).add("filled")
    return (tuple(sorted((name, tuple(sorted(kinds))) for name, kinds in writes.items())),
            tuple(sorted(returns)))


def _class_body_values(node: ast.ClassDef) -> list[tuple[str, ast.expr]]:
    """(name, value) of each plain name the class body assigns, annotated ones with a value included."""
    pairs: list[tuple[str, ast.expr]] = []
    for statement in node.body:
        if isinstance(statement, ast.Assign):
            pairs += [(target.id, statement.value) for target in statement.targets if isinstance(target, ast.Name)]
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value is not None:
            pairs.append((statement.target.id, statement.value))
    return pairs


def _method_writes(methods: list[Function], walks: dict[int, _MethodWalk]) -> list[tuple[str, ast.AST | None]] | None:
    """The `self.<x>` writes of all the methods (_MethodWalk.writes); None when one may set names it does not spell."""
    writes: list[tuple[str, ast.AST | None]] = []
    for method in methods:
        found = walks[id(method)].writes
        if found is None:
            return None
        writes += found
    return writes


def _literal_return(method: Function) -> str:
    """The token of what a method returns when its body (imports, `pass` and docstrings apart) is
    one `return`; "" for any other body."""
    found = sole_return(method)
    return value_token(found.value) if found is not None else ""


def _written_token(value: ast.AST | None, receiver: str) -> str:
    """A value written to `self.<x>`: "m:<name>" for `self.<name>()`, else its value_token ("" for none)."""
    if isinstance(value, ast.Call) and not value.args and not value.keywords \
            and isinstance(value.func, ast.Attribute) and isinstance(value.func.value, ast.Name) \
            and value.func.value.id == receiver:
        return f"m:{value.func.attr}"
    return value_token(value) if value is not None else ""


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
        kind = base_kind(kind)
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
    if facts.noqa:
        facts.noqa = parse_noqa(text, string_test(module, set(facts.noqa)))
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
    collector, own_names = _collected(module, module_name, path, text, at, packages)
    bound_names = {fact["bound"] for fact, _, _ in collector.imports} | set(collector.star_uses)
    patches = _kept_patches(collector.patches, bound_names)
    foreign = _foreign_names(collector.imports, packages)
    facts.imports = [ImportFact(position=where, module_position=anchor, **fact) for fact, where, anchor in collector.imports]
    facts.attributes = _attribute_facts(collector.chains, bound_names, at)
    facts.classes = [summary.fact(at) for summary in collector.classes]
    closed = _closed_classes(collector.classes, foreign)
    facts.calls = _call_facts(collector, bound_names, patches, closed, foreign)
    facts.reads = _read_facts(collector.reads, closed, foreign)
    facts.patches = [PatchFact(*patch) for patch in patches]
    facts.functions = _replacement_functions(collector.functions, patches, at)
    facts.probes = _probe_facts(collector.probes, bound_names)
    facts.source_probes = [SourceProbeFact(*probe) for probe in collector.source_probes]
    facts.specs = [SpecFact(spec, where, tuple(attrs), scope) for spec, where, attrs, scope in collector.specs
                   if spec.split(".")[0] in bound_names]
    facts.flags = [FlagFact(*flag) for flag in collector.flags]
    facts.gates = collector.gates
    facts.dispatches = collector.dispatches
    facts.conditions = [ConditionFact(name, gate) for name, gate in collector.conditions.module_conditions().items()]
    facts.strings = _strings_facts(collector.strings, text)
    facts.free_names = [FreeNameFact(name) for name in collector.star_uses]
    if collector.star_givers:
        facts.module_names = _module_name_facts(module, own_names, module_name, collector.is_package)


def _collected(module: ast.Module, module_name: str, path: str, text: str, at: SourcePositions,
               packages: tuple[str, ...]) -> tuple[_Collector, tuple[str, ...]]:
    """The collector, after its walk of the module (told first the module's own factories,
    bound methods and what its functions return), and the names the module binds at its top
    level where it star-imports a module that may give SGLang's names (else none)."""
    collector = _Collector(module_name, path.endswith("__init__.py"), at, module)
    collector.factories.update(statement.name for statement in module.body
                               if isinstance(statement, (*FUNCTIONS, ast.ClassDef)))
    collector.bound_methods = bound_methods(module, text)
    collector.returns = module_returns(module, text)
    collector.walrus = walrus_lines(text)
    collector.module_types = body_types(module.body, module, text, collector.returns, collector.walrus)
    own_names: tuple[str, ...] = ()
    if STAR_IMPORT.search(text):
        collector.star_givers = _star_givers(module, module_name, collector.is_package, packages)
    if collector.star_givers:
        collector.star_uses, own_names = module_names(text, path)
    collector.visit(module)
    return collector, own_names


def _star_givers(module: ast.Module, module_name: str, is_package: bool, packages: tuple[str, ...]) -> frozenset[str]:
    """The modules the module star-imports that may give it SGLang's names: SGLang's own
    (`from sglang.srt.a import *`), and the project's (`from pk.base import *`, where pk/base.py
    may star-import SGLang in turn: releasefacts.with_star_names decides)."""
    project = {*packages, module_name.partition(".")[0]}
    found = set()
    for node in ast.walk(module):
        if type(node) is ast.ImportFrom and any(alias.name == "*" for alias in node.names):
            star = absolute_import(node, module_name, is_package) or ""
            if is_upstream(star) or star.partition(".")[0] in project:
                found.add(star)
    return frozenset(found)


def _module_name_facts(module: ast.Module, own_names: tuple[str, ...], module_name: str,
                       is_package: bool) -> list[ModuleNameFact]:
    """What a star import of the module gives (ModuleNameFact): its star imports, the names it
    binds, and those its `__all__` lists."""
    stars, before = stars_before_bindings(module, own_names)
    listed = listed_exports(module)
    # absolute, as the imports' facts name them
    facts = [ModuleNameFact(absolute_import(star, module_name, is_package) or "", "star") for star in stars]
    facts += [ModuleNameFact(name, "bound", before[name]) for name in own_names]
    if listed is UNREAD_EXPORTS:
        return [*facts, ModuleNameFact("*", "listed")]
    return facts + [ModuleNameFact(name, "listed") for name in dict.fromkeys(listed or ())]


def _foreign_names(imports: list[tuple[dict, Position, Position]], packages: tuple[str, ...]) -> set[str]:
    """Names bound to third-party imports: nothing behind them is SGLang's (known only with `packages`)."""
    known = {PACKAGE, *packages}
    return {fact["bound"] for fact, _, _ in imports
            if packages and fact["module"].split(".")[0] not in known} - {"*"}


def _closed_classes(classes: list[_ClassSummary], foreign: set[str]) -> set[str]:
    """`self.x` in a class with no base (but third-party ones) and no __getattr__ can only reach the class itself."""
    return {f"S:{c.name}" for c in classes
            if not c.getattr_sources and all(base.split(".")[0] in foreign for base in c.bases)}


def _attribute_facts(chains: list[tuple[str, list[ast.Attribute], bool, bool]], bound_names: set[str],
                     at: SourcePositions) -> list[AttributeFact]:
    """The dotted chains that start at an imported name."""
    return [
        AttributeFact(root=root, attrs=tuple(a.attr for a in attributes),
                      positions=tuple(at.attribute_name(a) for a in attributes), store=store, attr_guarded=guarded)
        for root, attributes, store, guarded in chains if root in bound_names
    ]


def _call_facts(collector: _Collector, bound_names: set[str], patches: list[tuple], closed: set[str],
                foreign: set[str]) -> list[CallFact]:
    """Calls of plain names matter when the name is imported (or holds a saved original);
    calls on typed receivers always. A module-level subclass is built with its bases'
    `__init__` when it has none (resolve.py)."""
    named = _call_roots(collector, bound_names, patches)
    not_imported = named - bound_names  # saved originals and subclasses: not an import's, wherever bound
    return [
        CallFact(callee, where, tuple(ArgFact(*arg) for arg in args), scope, use)
        for index, (root, callee, where, args, scope, use) in enumerate(collector.calls)
        if (root is None or root in named and (index not in collector.rebound_calls or root in not_imported))
        and not _inert(callee, closed, walked=1) and not _foreign(callee.types, foreign)
    ]


def _call_roots(collector: _Collector, bound_names: set[str], patches: list[tuple]) -> set[str]:
    """The names whose calls matter: imported ones, saved originals, module-level subclasses."""
    saved = {p[3] for p in patches if p[0] == "save"}
    subclasses = {summary.name for summary in collector.classes if summary.bases}
    return bound_names | saved | subclasses


def _kept_patches(patches: list[tuple], bound_names: set[str]) -> list[tuple]:
    """Monkeypatches of import-bound objects, and the names their originals are saved under.
    A target that starts at `sglang` with nothing binding it was reached through `sys.modules`."""
    return [p for p in patches if p[1].split(".")[0] in bound_names or is_upstream(p[1])]


def _read_facts(reads: list[tuple], closed: set[str], foreign: set[str]) -> list[ReadFact]:
    """The reads that may reach SGLang: not of a closed class's own `self.x`, nor third-party."""
    return [ReadFact(receiver, attr, where, store, scope, guarded, nullable, value)
            for receiver, attr, where, store, scope, guarded, nullable, value in reads
            if not _inert(receiver, closed) and not _foreign(receiver.types, foreign)]


def _replacement_functions(functions: list[Function], patches: list[tuple], at: SourcePositions) -> list[FunctionFact]:
    """The module-level functions a monkeypatch puts in place of an upstream one."""
    replacements = {p[3] for p in patches if p[0] == "replace" and p[3]}
    return [FunctionFact(f.name, at.definition_name(f), parameter_list(f))
            for f in functions if f.name in replacements]


def _strings_facts(strings: list[tuple[str, list[tuple[str, Position]]]], text: str) -> list[StringsFact]:
    """The collections of strings, kept in a file that may build SGLang's server arguments."""
    if "ServerArgs" not in text and "add_cli_args" not in text:
        return []
    return [StringsFact(name, tuple(items)) for name, items in strings]


def _probe_facts(probes: list[tuple], bound_names: set[str]) -> list[ProbeFact]:
    """The probes of typed objects, imported names, dotted targets or pass-through names (_probe_matters)."""
    return [
        ProbeFact(function, subject, tuple((text, where) for text, where, _ in strings), nargs, keywords,
                  where_, scope, guarded, tuple(index for _, _, index in strings), nullable)
        for function, subject, strings, nargs, keywords, where_, scope, guarded, nullable in probes
        if _probe_matters(subject, strings, bound_names)
    ]
