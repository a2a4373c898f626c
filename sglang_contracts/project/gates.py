"""Code that runs only on some releases: branches on the installed SGLang version, and import
fallbacks that run only when the primary import fails.

The scanner turns the condition a block of code sits under into a gate: plain data (a
disjunction of conjunctions of atoms) recorded with the block's extent (`GateFact`). A gate
is judged per release by `runs_on`; `for_release` gives the checks the facts that can run on
the target release, so a fact that sits only under a branch for other releases, or under a
fallback the target release never takes, is never judged as a break of the bump.

Atoms (op, value):
- version comparisons: op is one of < <= > >= == != and value is `p:0.5.6` (a parsed version,
  `packaging` semantics), `s:0.5.6` (the raw version string, compared as a string, as Python
  does) or `t<n>:0,5,6` (a tuple of the first n release numbers, n=0: all of them);
- `import-fails` / `import-ok` with value `module:name` (`module:` for `import module`): does
  the import succeed on the release;
- `flag` / `not-flag` with value `module.NAME`: a module-level condition of another project
  module (`from .compat import SGLANG_GE_0_5_6`).

What cannot be decided (a condition on anything else, a version that cannot be known, an
import whose status is unknown) counts as "may run": the code is judged as it always was.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Callable

from sglang_contracts.infra.pysource import own_nodes
from sglang_contracts.requirements import as_version

Atom = tuple[str, str]
Gate = tuple[tuple[Atom, ...], ...]  # a disjunction of conjunctions

TRUE: Gate = ((),)  # always runs
FALSE: Gate = ()  # never runs
UNKNOWN_ATOM: Atom = ("?", "")  # a condition on something else than the release: may hold or not
UNKNOWN: Gate = ((UNKNOWN_ATOM,),)
TRUE_ATOM: Atom = ("true", "")  # holds on every installed release (`V is not None`)
MAX_TERMS = 32  # a condition larger than this is left undecided
VERSION_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
VERSION_SYMBOLS = frozenset(VERSION_OPS.values())  # the atoms that compare the release's version
FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "==",
           "import-fails": "import-ok", "import-ok": "import-fails", "flag": "not-flag", "not-flag": "flag",
           "?": "?", "false": "true", "true": "false"}
PARSERS = {"parse", "Version", "LooseVersion", "StrictVersion", "parse_version"}
PARSED_VIEWS = {"release": ("t", 0), "base_version": ("s", 0)}  # a parsed version's attribute -> what it gives


def conjoin(a: Gate, b: Gate) -> Gate:
    if a == TRUE:
        return b
    if b == TRUE:
        return a
    terms = tuple(dict.fromkeys(tuple(dict.fromkeys(x + y)) for x in a for y in b))
    return UNKNOWN if len(terms) > MAX_TERMS else terms


def disjoin(a: Gate, b: Gate) -> Gate:
    if a == TRUE or b == TRUE:
        return TRUE
    terms = tuple(dict.fromkeys(a + b))
    return UNKNOWN if len(terms) > MAX_TERMS else terms


def negate(gate: Gate) -> Gate:
    """The gate of the `else` branch. An undecided atom stays undecided: `not (A and ?)` may
    hold wherever A does."""
    result = TRUE
    for term in gate:  # not (t1 or t2) = not t1 and not t2; not (a and b) = not a or not b
        result = conjoin(result, tuple(((NEGATED[op], value),) for op, value in term))
    return result


def simplified(gate: Gate) -> Gate:
    """For judging only: undecided atoms dropped (they may hold), and those that always hold;
    TRUE where any term is left empty."""
    terms = tuple(dict.fromkeys(tuple(atom for atom in term if atom not in (UNKNOWN_ATOM, TRUE_ATOM)) for term in gate))
    return TRUE if () in terms else terms


def decided(gate: Gate) -> bool:
    """Does the gate say anything about the release?"""
    return simplified(gate) != TRUE


# -- reading conditions ---------------------------------------------------------------------------
class ConditionReader:
    """Turns `if` tests into gates, knowing the names a module has bound so far to the SGLang
    version (`__version__`, `v = version.parse(sglang.__version__)`) and to conditions on it
    (`SGLANG_GE_0_5_6 = v >= version.parse("0.5.6")`)."""

    def __init__(self) -> None:
        self.scope = ""  # the function being read ("" at module level)
        self.sglang_modules: set[str] = set()  # names bound to the sglang package or sglang.version
        # (scope, name) -> (kind, tuple length) of a version; None: bound to something else too
        self.versions: dict[tuple[str, str], tuple[str, int] | None] = {}
        self.conditions: dict[tuple[str, str], Gate | None] = {}  # (scope, name) -> gate; None: as above
        self.imported_flags: dict[str, str] = {}  # name -> "module.NAME" of a project module
        self.metadata_versions: set[str] = {"importlib.metadata.version", "importlib_metadata.version",
                                            "metadata.version"}  # what reads a distribution's version
        # The module's functions that return the SGLang version (`def get_version(pkg): return
        # parse(version(pkg))`): name -> (kind, tuple length, index of the parameter that names
        # the package, -1 for none: the function reads sglang's own)
        self.getters: dict[str, tuple[str, int, int]] = {}
        self.strings: dict[tuple[str, str], str | None] = {}  # (scope, name) -> the string constant bound to it

    # The version itself: (kind, n) with kind "p" parsed, "s" string, "t" tuple of n numbers.
    def version_of(self, node: ast.AST) -> tuple[str, int] | None:
        reader = _VERSION_READERS.get(type(node))  # by kind of node: asked of every link of a chain
        return reader(self, node) if reader is not None else None

    def _name_version(self, node: ast.Name) -> tuple[str, int] | None:
        return self._lookup(self.versions, node.id)

    def _attribute_version(self, node: ast.Attribute) -> tuple[str, int] | None:
        """`sglang.__version__`, a distribution's `.version`, a parsed version's `.release` or `.base_version`."""
        if node.attr == "__version__" and _dotted(node.value) in self.sglang_modules:
            return ("s", 0)
        if node.attr == "version" and isinstance(node.value, ast.Call) and _names_sglang(node.value):
            return ("s", 0)  # pkg_resources.get_distribution("sglang").version
        view = PARSED_VIEWS.get(node.attr)
        if view is not None and (inner := self.version_of(node.value)) and inner[0] == "p":
            return view
        return None

    def _sliced_version(self, node: ast.Subscript) -> tuple[str, int] | None:
        """`V.release[:n]`: a tuple of the first n numbers."""
        bound = node.slice
        if not isinstance(bound, ast.Slice):
            return None
        inner = self.version_of(node.value)
        if inner and inner[0] == "t" and bound.lower is None and bound.step is None \
                and isinstance(bound.upper, ast.Constant) and isinstance(bound.upper.value, int):
            return ("t", bound.upper.value)
        return None

    def _call_version(self, node: ast.Call) -> tuple[str, int] | None:
        """`version("sglang")`, a call of a version helper, `parse(V)`, `tuple(...)` of V's numbers."""
        name = (_dotted(node.func) or "").rsplit(".", 1)[-1]
        if _names_sglang(node) and _dotted(node.func) in self.metadata_versions:
            return ("s", 0)  # importlib.metadata.version("sglang")
        if isinstance(node.func, ast.Name) and node.func.id in self.getters:
            return self._getter_call(node, *self.getters[node.func.id])
        if len(node.args) != 1 or node.keywords:
            return None
        argument = node.args[0]
        if name in PARSERS:
            return self._parsed(argument)
        if name in ("tuple", "list"):
            return self._numbers(argument)
        return None

    def _parsed(self, argument: ast.AST) -> tuple[str, int] | None:
        """`parse(V)` of the version's string: the parsed version."""
        inner = self.version_of(argument)
        return ("p", 0) if inner and inner[0] == "s" else None

    def _getter_call(self, node: ast.Call, kind: str, length: int, index: int) -> tuple[str, int] | None:
        """The version a call of one of the module's version functions gives: sglang's, when the
        function reads sglang's own or the call names "sglang" (literally or by a name bound to it)."""
        if index < 0:
            return (kind, length)
        argument = node.args[index] if index < len(node.args) and not any(
            isinstance(a, ast.Starred) for a in node.args[:index + 1]) else None
        if argument is None or isinstance(argument, ast.Name) and self._lookup(self.strings, argument.id) != "sglang" \
                or not isinstance(argument, ast.Name) and not _is_sglang(argument):
            return None
        return (kind, length)

    def read_getter(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """A module-level function every `return` of which gives the release's version (or None,
        where SGLang is not installed), read after its body (so `self.scope` is its own and its
        names are bound): `return parse(importlib.metadata.version(pkg))` of a parameter `pkg`,
        `return version("sglang")`, `return sglang.__version__`. A project that wraps the
        version in such a helper (RLinf's `get_version("sglang")`) dispatches on it as on the
        version itself."""
        self.getters.pop(node.name, None)
        if isinstance(node, ast.AsyncFunctionDef) or node.args.vararg is not None:
            return
        parameters = [argument.arg for argument in [*node.args.posonlyargs, *node.args.args]]
        found: set[tuple[str, int, int]] = set()
        for child in own_nodes(node):
            if isinstance(child, (ast.Yield, ast.YieldFrom)):
                return
            if not _returns_a_value(child):
                continue  # `return None`: not installed (a version compared is never None then)
            returned = self._returned_version(child.value, parameters)
            if returned is None:
                return
            found.add(returned)
        if len(found) == 1:
            self.getters[node.name] = found.pop()

    def _returned_version(self, value: ast.AST, parameters: list[str]) -> tuple[str, int, int] | None:
        if (version := self.version_of(value)) is not None:
            return (*version, -1)
        if not isinstance(value, ast.Call) or len(value.args) != 1 or value.keywords:
            return None
        argument = value.args[0]
        if _dotted(value.func) in self.metadata_versions and isinstance(argument, ast.Name) \
                and argument.id in parameters:
            return ("s", 0, parameters.index(argument.id))  # version(pkg)
        if (_dotted(value.func) or "").rsplit(".", 1)[-1] in PARSERS:
            return self._parsed_returned(argument, parameters)
        return None

    def _parsed_returned(self, argument: ast.AST, parameters: list[str]) -> tuple[str, int, int] | None:
        """`return parse(X)` of a returned version string X: the parsed version."""
        inner = self._returned_version(argument, parameters)
        return ("p", 0, inner[2]) if inner is not None and inner[0] == "s" else None

    def _numbers(self, node: ast.AST) -> tuple[str, int] | None:
        """`map(int, V.split(".")[:n])`, `int(x) for x in V.split(".")[:n]`: a tuple of n numbers."""
        if isinstance(node, ast.Call) and _dotted(node.func) == "map" and len(node.args) == 2 \
                and _dotted(node.args[0]) == "int":
            return self._split(node.args[1])
        if isinstance(node, (ast.GeneratorExp, ast.ListComp)) and len(node.generators) == 1:
            iterated = _ints_of_loop(node.elt, node.generators[0])
            if iterated is not None:
                return self._split(iterated)
        return None

    def _split(self, node: ast.AST) -> tuple[str, int] | None:
        length = 0
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            leading = _leading_count(node.slice)
            if leading is None:
                return None
            length, node = leading, node.value
        if _splits_on_dots(node) and self.version_of(node.func.value) == ("s", 0):
            return ("t", length)
        return None

    @staticmethod
    def constant_of(node: ast.AST, kind: str) -> str | None:
        """The constant a version of `kind` is compared with, as the atom's value text."""
        if kind == "s":
            return _string_constant(node)
        if kind == "p":
            return _parsed_constant(node)
        return _numbers_constant(node)

    def gate(self, node: ast.AST) -> Gate:
        """The gate a test stands for; what is not about the release is undecided (UNKNOWN)."""
        if isinstance(node, ast.BoolOp):
            combine, result = (conjoin, TRUE) if isinstance(node.op, ast.And) else (disjoin, FALSE)
            for value in node.values:
                result = combine(result, self.gate(value))
            return result
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return negate(self.gate(node.operand))
        if isinstance(node, ast.Name):
            if (found := self._lookup(self.conditions, node.id)) is not None:
                return found
            if node.id in self.imported_flags:
                return ((("flag", self.imported_flags[node.id]),),)
            return UNKNOWN
        if isinstance(node, ast.Compare):
            return self._compare(node)
        return UNKNOWN

    def _none_test(self, left: ast.AST, op: ast.cmpop, right: ast.AST) -> Atom | None:
        """`V is None` of the release's version (a helper's "not installed"): false wherever a
        release is installed, which every judged release is; `is not None` true."""
        if not isinstance(op, (ast.Is, ast.IsNot)):
            return None
        for version, other in ((left, right), (right, left)):
            if isinstance(other, ast.Constant) and other.value is None and self.version_of(version) is not None:
                return ("false" if isinstance(op, ast.Is) else "true", "")
        return None

    def _lookup(self, table: dict, name: str):
        """The current scope's binding of a name, else the module's."""
        for key in ((self.scope, name), ("", name)):
            if key in table:
                return table[key]
        return None

    def _compare(self, node: ast.Compare) -> Gate:
        result = TRUE
        operands = [node.left, *node.comparators]
        for left, op, right in zip(operands, node.ops, operands[1:]):
            if isinstance(op, (ast.In, ast.NotIn)):
                result = conjoin(result, self._membership(left, right, isinstance(op, ast.In)))
                continue
            if (atom := self._none_test(left, op, right)) is not None:
                result = conjoin(result, ((atom,),))
                continue
            symbol = VERSION_OPS.get(type(op))
            atom = self._atom(left, symbol, right) if symbol else None
            if atom is None and symbol:
                atom = self._atom(right, FLIPPED[symbol], left)
            result = conjoin(result, ((atom or UNKNOWN_ATOM,),))  # a link not about the release: undecided
        return result

    def _membership(self, version: ast.AST, options: ast.AST, inside: bool) -> Gate:
        """`V in ["0.5.4.post2", "0.5.7"]`: V equals one of them (`not in`: none of them)."""
        if not isinstance(options, (ast.List, ast.Tuple, ast.Set)) or not options.elts:
            return UNKNOWN
        atoms = [self._atom(version, "==" if inside else "!=", option) for option in options.elts]
        if any(atom is None for atom in atoms):
            return UNKNOWN
        return tuple((atom,) for atom in atoms) if inside else (tuple(atoms),)

    def _atom(self, version: ast.AST, op: str, constant: ast.AST) -> Atom | None:
        found = self.version_of(version)
        if found is None:
            return None
        kind, length = found
        value = self.constant_of(constant, kind)
        if value is None:
            return None
        return (op, f"t{length}:{value}" if kind == "t" else f"{kind}:{value}")

    # Bindings, in source order.
    def bind(self, name: str, value: ast.AST | None) -> None:
        """`name = value`: a version, a condition on it, or something else (forgets the name)."""
        key = (self.scope, name)
        version = self.version_of(value) if value is not None else None
        gate = self.gate(value) if value is not None and version is None else UNKNOWN
        self.versions[key] = _rebound(self.versions, key, version)
        self.conditions[key] = _rebound(self.conditions, key, gate) if decided(gate) else None
        self.strings[key] = _rebound(self.strings, key, _string_constant(value))
        if not self.scope:
            self.imported_flags.pop(name, None)
            self.getters.pop(name, None)

    def _bind_module(self, module: str, bound: str) -> None:
        """`import module [as bound]`: a name for the sglang package or sglang.version."""
        if module.startswith("sglang.") and bound == "sglang":  # `import sglang.x` binds sglang
            self.sglang_modules.update(("sglang", "sglang.version"))
        elif module in ("sglang", "sglang.version"):
            self.sglang_modules.add(bound)

    def module_conditions(self) -> dict[str, Gate]:
        """The module-level names bound to a condition on the release, and only to it."""
        return {name: gate for (scope, name), gate in self.conditions.items() if not scope and gate is not None}

    def bind_import(self, module: str, name: str | None, bound: str, project_module: bool) -> None:
        if name is None:
            self._bind_module(module, bound)
            return
        if module in ("importlib.metadata", "importlib_metadata") and name == "version":
            self.metadata_versions.add(bound)
        elif module == "sglang" and name == "version":
            self.sglang_modules.add(bound)
        elif module in ("sglang", "sglang.version") and name == "__version__":
            self.versions[(self.scope, bound)] = ("s", 0)
        elif project_module:
            self.imported_flags[bound] = f"{module}.{name}"


# ConditionReader.version_of's reader of each kind of node; plain functions, not bound methods.
_VERSION_READERS = {
    ast.Name: ConditionReader._name_version, ast.Attribute: ConditionReader._attribute_version,
    ast.Subscript: ConditionReader._sliced_version, ast.Call: ConditionReader._call_version,
}


def _dotted(node: ast.AST | None) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def _rebound(table: dict, key: tuple[str, str], value):
    """What a name holds after another binding: the value, unless it was bound to another before (None)."""
    return value if key not in table or table[key] == value else None


def _returns_a_value(node: ast.AST) -> bool:
    """A `return` of something else than None."""
    return isinstance(node, ast.Return) and node.value is not None \
        and not (isinstance(node.value, ast.Constant) and node.value.value is None)


def _ints_of_loop(element: ast.expr, loop: ast.comprehension) -> ast.expr | None:
    """`int(x) for x in ITER` (no condition): ITER; None for any other comprehension."""
    if isinstance(element, ast.Call) and _dotted(element.func) == "int" and len(element.args) == 1 \
            and isinstance(element.args[0], ast.Name) and isinstance(loop.target, ast.Name) \
            and element.args[0].id == loop.target.id and not loop.ifs:
        return loop.iter
    return None


def _leading_count(bound: ast.Slice) -> int | None:
    """`[:n]`, n a literal: n; None for any other slice."""
    if bound.lower is not None or bound.step is not None or not (
            isinstance(bound.upper, ast.Constant) and isinstance(bound.upper.value, int)):
        return None
    return bound.upper.value


def _splits_on_dots(node: ast.AST) -> bool:
    """`X.split(".")`."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "split" \
        and len(node.args) == 1 and isinstance(node.args[0], ast.Constant) and node.args[0].value == "."


def _string_constant(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _parsed_constant(node: ast.AST) -> str | None:
    """`parse("0.5.6")` (any of PARSERS) of a version that parses: its text."""
    if isinstance(node, ast.Call) and (_dotted(node.func) or "").rsplit(".", 1)[-1] in PARSERS \
            and len(node.args) == 1 and isinstance(node.args[0], ast.Constant) \
            and isinstance(node.args[0].value, str) and _parses(node.args[0].value):
        return node.args[0].value
    return None


def _numbers_constant(node: ast.AST) -> str | None:
    """A tuple of release numbers, `(0, 5, 6)`: "0,5,6"."""
    # A release number fits 64 bits; `0x` and 5,000 digits would not even print (int's limit).
    if isinstance(node, ast.Tuple) and all(isinstance(e, ast.Constant) and type(e.value) is int
                                           and e.value.bit_length() <= 64 for e in node.elts):
        return ",".join(str(e.value) for e in node.elts)
    return None


def _names_sglang(node: ast.Call) -> bool:
    return len(node.args) == 1 and _is_sglang(node.args[0])


def _is_sglang(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == "sglang"


def _parses(text: str) -> bool:
    return as_version(text) is not None


# -- judging gates ---------------------------------------------------------------------------------
@dataclasses.dataclass
class Release:
    """What a gate is judged against: a release's version, and whether an import succeeds there."""

    version: str | None
    imports: Callable[[str, str | None], bool | None]  # (module, name) -> succeeds? None: unknown
    flag: Callable[[str], Gate | None] = lambda dotted: None  # a project module's named condition


def _compare(left, op: str, right) -> bool:
    return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right,
            "==": left == right, "!=": left != right}[op]


def atom_holds(atom: Atom, release: Release, depth: int = 0) -> bool | None:
    op, value = atom
    if op in ("import-fails", "import-ok"):
        return _import_holds(op, value, release)
    if op in ("flag", "not-flag"):
        return _flag_holds(op, value, release, depth)
    if op in ("false", "true"):
        return op == "true"
    if op == "?":
        return None
    return _version_holds(op, value, release)


def _import_holds(op: str, value: str, release: Release) -> bool | None:
    """Does the release's import of `module:name` fail (`import-fails`) or succeed (`import-ok`)?"""
    module, _, name = value.partition(":")
    succeeds = release.imports(module, name or None)
    return None if succeeds is None else succeeds == (op == "import-ok")


def _flag_holds(op: str, value: str, release: Release, depth: int) -> bool | None:
    """Does a project module's named condition hold (`flag`) or not (`not-flag`) on the release?"""
    gate = release.flag(value) if depth < 10 else None
    holds = None if gate is None else evaluate(gate, release, depth + 1)
    return None if holds is None else holds == (op == "flag")


def _version_holds(op: str, value: str, release: Release) -> bool | None:
    """Does the release's version compare with the atom's constant as `op` says?"""
    if release.version is None:
        return None
    kind, _, constant = value.partition(":")
    if kind == "s":
        return _compare(release.version, op, constant)
    version = as_version(release.version)
    if version is None:
        return None
    if kind == "p":
        return _compare(version, op, as_version(constant))  # the gate's reader took only one that parses
    length = int(kind[1:] or 0)
    numbers = version.release[:length] if length else version.release
    return _compare(numbers, op, tuple(int(part) for part in constant.split(",") if part))


def evaluate(gate: Gate, release: Release, depth: int = 0) -> bool | None:
    """True: runs on the release; False: never does; None: cannot tell."""
    answer: bool | None = False
    for term in gate:
        holds: bool | None = True
        for atom in term:
            value = atom_holds(atom, release, depth)
            if value is False:
                holds = False
                break
            if value is None:
                holds = None
        if holds:
            return True
        if holds is None:
            answer = None
    return answer


def runs_on(gate: Gate, release: Release) -> bool:
    """May code under this gate run on the release? (What cannot be told may.)"""
    return evaluate(gate, release) is not False
