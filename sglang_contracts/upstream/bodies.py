"""What upstream function bodies do with `self`, and a normalised form of each body.

griffe models signatures, not bodies, so bodies are read with `ast` (from the tree griffe
visits too): which attributes a method reads from and writes to `self`, which
`self.<name>(...)` methods it calls, and its statements unparsed (formatting, comments and the
docstring dropped) and hashed line by line, so two releases' bodies compare without line
numbers and "how much changed" can be counted.
"""

from __future__ import annotations

import ast
import copy
import hashlib
from dataclasses import dataclass, field

from sglang_contracts.infra.collector import collector_paused
from sglang_contracts.infra.lines import line_starts, numbered_lines
from sglang_contracts.infra.writes import MUTATING, add_mutated, self_attribute, value_token
from sglang_contracts.infra.pysource import BRANCH_TYPES, SCOPES, branch_nodes, node_fields, nodes_below as _nodes, own_nodes as _own_nodes, parse_quietly, returned_shape, returns_its_receiver, unpack_count

AnyFunction = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class BodyFacts:
    reads: set[str] = field(default_factory=set)  # self.<name> loads (calls included)
    calls: set[str] = field(default_factory=set)  # self.<name>(...)
    writes: set[str] = field(default_factory=set)  # self.<name> = ...
    read_first: set[str] = field(default_factory=set)  # written here, but read before the first write
    # Hashes of the normalised body's lines; None when not computed (the extraction leaves them
    # out: they cost half of it and only body comparisons need them, see UpstreamModel.body_lines).
    lines: list[str] | None = None
    # [`self.<name>`, "none" or "falsy"]: while it is None (or falsy), the body returns at once.
    guard: list[str] | None = None
    # self.<name> = Callee(...): the callee as written (`WeightUpdater`, `mod.Thing`), per name
    constructed: dict[str, set[str]] = field(default_factory=dict)
    # [positional arguments, keywords] the body passes besides its own `*args`/`**kwargs` when it
    # hands those on, untouched, to the same method of the next class: `super().m(*args, **kwargs)`.
    forwards: list | None = None
    # [exception, message] when the body's first statement raises: calling it always fails
    raises: list[str] | None = None
    # A decorator's: what the wrappers it defines (`def wrapper(self, ...)`) read from `self`
    wrapper_reads: set[str] = field(default_factory=set)
    # Method calls `<receiver>.<name>(...)`, each once: [name, on self (1) or another receiver
    # (0), positional arguments before any `*` splat, keywords, 1 if a splat may pass more]
    call_args: list[list] = field(default_factory=list)
    is_async: bool = False  # `async def`
    # The length of the tuple every `return` gives, when each is a tuple display of one length
    shape: int | None = None
    returns_self: bool = False  # the body is `return self` (pysource.returns_its_receiver)
    # self.<method>(...) whose result the body unpacks (`a, b = self.m(...)`): method -> targets
    unpacks: dict[str, int] = field(default_factory=dict)
    awaits: set[str] = field(default_factory=set)  # self.<method>(...) the body awaits
    plain_calls: set[str] = field(default_factory=set)  # self.<method>(...) it calls without await
    # self.<name> read (or called, or set: "=name") only on branches: per name, for each place,
    # the conditions on `self` that must hold to get there ([attribute, test, value] as in
    # `branch_conditions`). A name read anywhere without a condition is not listed.
    gated: dict[str, list[list[list[str]]]] = field(default_factory=dict)
    # self.<name> that the body may fill or hand on: `self.x.append(...)`, `self.x[k] = v`,
    # `f(self.x)`, `y = self.x` (an empty container stays empty only where nothing does)
    mutates: set[str] = field(default_factory=set)
    # self.<name> = <value>: the values written, in source order, as source text (for messages:
    # `rust_server = None or rust_server`; the first alone would say only one branch's)
    assigns: dict[str, str] = field(default_factory=dict)
    # self.<name>.<member>: the members the body reads (or calls) on each attribute of self
    members: dict[str, set[str]] = field(default_factory=dict)

    def merge(self, other: "BodyFacts") -> None:
        """A property and its setter, or overloads, share one name: keep what all of them do."""
        self.reads |= other.reads
        self.calls |= other.calls
        self.writes |= other.writes
        self.read_first |= other.read_first
        self.lines = None if self.lines is None or other.lines is None else self.lines + other.lines
        self.guard = None  # one of them may run past it
        self.forwards = None
        self.raises = self.raises if self.raises == other.raises else None
        self.wrapper_reads |= other.wrapper_reads
        self.call_args += [call for call in other.call_args if call not in self.call_args]
        self.is_async = self.is_async and other.is_async
        self.shape = self.shape if self.shape == other.shape else None
        self.returns_self = self.returns_self and other.returns_self
        self.unpacks = _agreeing_counts(self.unpacks, other.unpacks)
        self.awaits |= other.awaits
        self.plain_calls |= other.plain_calls
        self.gated = {}  # which of them runs is unknown: every read counts
        self.mutates |= other.mutates
        _add_each(self.members, other.members)
        for name, text in other.assigns.items():
            self.assigns.setdefault(name, text)
        _add_each(self.constructed, other.constructed)

    def to_json(self) -> dict:
        record = {"reads": sorted(self.reads), "calls": sorted(self.calls), "writes": sorted(self.writes)}
        for key, attribute, unless_none, shown in _OPTIONAL_RECORD_FIELDS:
            value = getattr(self, attribute)
            if (value is not None) if unless_none else value:
                record[key] = shown(value) if shown is not None else value
        return record


def _agreeing_counts(mine: dict[str, int], theirs: dict[str, int]) -> dict[str, int]:
    """The entries of `mine` that `theirs` has alike or not at all."""
    return {name: count for name, count in mine.items() if theirs.get(name, count) == count}


def _add_each(mine: dict[str, set[str]], theirs: dict[str, set[str]]) -> None:
    for name, found in theirs.items():
        mine.setdefault(name, set()).update(found)


def _sorted_by_name(table: dict[str, set[str]]) -> dict[str, list[str]]:
    return {name: sorted(found) for name, found in sorted(table.items())}


# BodyFacts.to_json's optional entries, in record order: (key, attribute, kept unless None (else
# unless empty), how the record holds it (None: as it is)).
_OPTIONAL_RECORD_FIELDS = (
    ("body", "lines", True, None),
    ("read_first", "read_first", False, sorted),
    ("guard", "guard", True, None),
    ("forwards", "forwards", True, None),
    ("raises", "raises", True, None),
    ("wrapper_reads", "wrapper_reads", False, sorted),
    ("call_args", "call_args", False, None),
    ("async", "is_async", False, None),
    ("shape", "shape", True, None),
    ("returns_self", "returns_self", False, None),
    ("unpacks", "unpacks", False, lambda unpacks: dict(sorted(unpacks.items()))),
    ("awaits", "awaits", False, sorted),
    ("plain_calls", "plain_calls", False, sorted),
    ("gated", "gated", False, None),
    ("mutates", "mutates", False, sorted),
    ("assigns", "assigns", False, None),
    ("members", "members", False, _sorted_by_name),
    ("constructed", "constructed", False, _sorted_by_name),
)


def _line_hash(line: str) -> str:
    return hashlib.blake2b(line.strip().encode(), digest_size=5).hexdigest()


def body_statements(node: AnyFunction) -> list[ast.stmt]:
    """The body's statements after its docstring."""
    statements = list(node.body)
    if statements and isinstance(statements[0], ast.Expr) and isinstance(getattr(statements[0], "value", None), ast.Constant) \
            and isinstance(statements[0].value.value, str):
        return statements[1:]
    return statements


def unparsed(node: ast.AST) -> str:
    """`ast.unparse`, or for a node nested deeper than it can recurse (a method chain of
    hundreds of calls) the node's structure, written out with a stack on one line: the same
    code gives the same text either way."""
    try:
        return ast.unparse(node)
    except RecursionError:
        return _dumped(node)


def _dumped(node: ast.AST) -> str:
    """The node's type and fields, all of them, much as `ast.dump` writes them, walked with a
    stack instead of recursion."""
    parts: list[str] = []
    pending: list[tuple[bool, object]] = [(False, node)]  # (is it text to write as it is, item)
    while pending:
        literal, item = pending.pop()
        if literal:
            parts.append(item)  # type: ignore[arg-type]
        elif isinstance(item, ast.AST):
            inner: list[tuple[bool, object]] = [(True, f"{type(item).__name__}(")]
            for index, name in enumerate(item._fields):
                inner += [(True, f"{', ' if index else ''}{name}="), (False, getattr(item, name, None))]
            pending.extend(reversed([*inner, (True, ")")]))
        elif isinstance(item, list):
            inner = [(True, "[")]
            for index, element in enumerate(item):
                inner += [(True, ", ")] if index else []
                inner.append((False, element))
            pending.extend(reversed([*inner, (True, "]")]))
        else:
            parts.append(repr(item))
    return "".join(parts)


def normalised_lines(node: AnyFunction) -> list[str]:
    text = "\n".join(unparsed(statement) for statement in body_statements(node))  # a docstring edit changes nothing
    return [_line_hash(line) for line in numbered_lines(text) if line.strip()]


def _tested(test: ast.expr) -> tuple[ast.expr, str] | None:
    """(what, "none") for `what is None`, (what, "falsy") for `not what`; a test `a or b`
    holds whenever `a` does, so its first operand counts."""
    while isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        test = test.values[0]
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand, "falsy"
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is) \
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
        return test.left, "none"
    return None


def none_guard(node: AnyFunction, receiver: str) -> list[str] | None:
    """[`<name>`, "none" or "falsy"] when the body opens with `if self.<name> is None: return`
    (or `if not self.<name>`, or either as the first operand of an `or`), directly or through
    a local (`req = self.<name>` first): nothing else runs while it is None (or falsy)."""
    alias, statements = _leading_alias(body_statements(node))
    first = statements[0] if statements else None
    if not _returns_at_once(first):
        return None
    tested = _tested(first.test)
    if tested is None:
        return None
    what, kind = tested
    if alias is not None:  # the local must be what is tested: its assignment runs before the test
        if not (isinstance(what, ast.Name) and what.id == alias[0]):
            return None
        what = alias[1]
    name = self_attribute(what, receiver)
    return [name, kind] if name is not None else None


def _leading_alias(statements: list[ast.stmt]) -> tuple[tuple[str, ast.expr] | None, list[ast.stmt]]:
    """((local, its value), the statements after) when the body opens with `local = value` and
    goes on; (None, the statements) otherwise."""
    opening = statements[0] if len(statements) > 1 else None
    if isinstance(opening, ast.Assign) and len(opening.targets) == 1 and isinstance(opening.targets[0], ast.Name):
        return (opening.targets[0].id, opening.value), statements[1:]
    return None, statements


def _returns_at_once(statement: ast.stmt | None) -> bool:
    """Whether the statement is `if <test>: return ...` with no `else`."""
    return isinstance(statement, ast.If) and not statement.orelse and len(statement.body) == 1 \
        and isinstance(statement.body[0], ast.Return)


def _decorator_name(decorator: ast.expr) -> str:
    """The last dotted component of a decorator's text (`staticmethod`, `abc.abstractmethod`)."""
    if isinstance(decorator, ast.Name):
        return decorator.id
    if isinstance(decorator, ast.Attribute):
        return decorator.attr
    return unparsed(decorator).rsplit(".", 1)[-1]  # rare: a call or any other expression


def _receiver_name(node: AnyFunction) -> str | None:
    """The name the function calls its instance (`self`), or None for a static method."""
    if any(_decorator_name(d) == "staticmethod" for d in node.decorator_list):
        return None
    arguments = node.args.posonlyargs + node.args.args
    return arguments[0].arg if arguments else None




def _wrapper_reads(node: AnyFunction, every: list[ast.AST]) -> set[str]:
    """What the functions a decorator defines inside itself read from their first parameter,
    when it is called `self`: the wrapper runs as the decorated method. `every`: the nodes
    below the decorator (`nodes_below`)."""
    found: set[str] = set()
    for inner in every:
        if inner is node or not isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        arguments = [*inner.args.posonlyargs, *inner.args.args]
        if not arguments or arguments[0].arg != "self":
            continue
        found |= {child.attr for child in _nodes(inner)
                  if self_attribute(child, "self") is not None and isinstance(child.ctx, ast.Load)}
    return found


def _raised(node: AnyFunction) -> list[str] | None:
    """[exception, message] when the body (after its docstring) opens with `raise X(...)`."""
    statements = body_statements(node)
    first = statements[0] if statements else None
    if not isinstance(first, ast.Raise) or first.exc is None:
        return None
    exception = first.exc.func if isinstance(first.exc, ast.Call) else first.exc
    name = _written_name(exception) or (exception.id if isinstance(exception, ast.Name) else None)
    if name is None:
        return None
    message = _raised_message(first.exc.args[0]) if isinstance(first.exc, ast.Call) and first.exc.args else ""
    return [name, " ".join(message.split())]


def _raised_message(parts: ast.expr) -> str:
    """The text of an exception's first argument: a string, or an f-string's literal parts."""
    if isinstance(parts, ast.Constant) and isinstance(parts.value, str):
        return parts.value
    if isinstance(parts, ast.JoinedStr):
        return "".join(v.value for v in parts.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return ""


def _self_calls_use(own: list[ast.AST], receiver: str, facts: "BodyFacts") -> None:
    """Which `self.<method>(...)` results the body (`own`: its own nodes) unpacks, awaits, or
    takes as they are."""
    awaited: set[int] = set()
    for child in own:
        if isinstance(child, ast.Await) and isinstance(child.value, ast.Call):
            awaited.add(id(child.value))
        elif (unpacked := _unpacked_self_call(child, receiver)) is not None:
            method, count = unpacked
            known = facts.unpacks.setdefault(method, count)
            if known != count:
                facts.unpacks[method] = -1  # unpacked in two ways: not one shape
    _sort_self_calls(own, receiver, awaited, facts)
    facts.unpacks = {name: count for name, count in facts.unpacks.items() if count >= 0}


def _unpacked_self_call(child: ast.AST, receiver: str) -> tuple[str, int] | None:
    """(method, how many targets) for `a, b = self.<method>(...)`."""
    if isinstance(child, ast.Assign) and len(child.targets) == 1 and isinstance(child.value, ast.Call) \
            and (method := self_attribute(child.value.func, receiver)) is not None \
            and (count := unpack_count(child.targets[0])) is not None:
        return method, count
    return None


def _sort_self_calls(own: list[ast.AST], receiver: str, awaited: set[int], facts: "BodyFacts") -> None:
    """Each `self.<method>(...)` into the awaited calls (its node's id in `awaited`) or the plain ones."""
    for child in own:
        if isinstance(child, ast.Call) and (method := self_attribute(child.func, receiver)) is not None:
            (facts.awaits if id(child) in awaited else facts.plain_calls).add(method)


def _every_and_own(node: AnyFunction) -> tuple[list[ast.AST], list[ast.AST]]:
    """`nodes_below(node)` as a list, and those of them that are the body's own (`own_nodes`'
    nodes, in another order): one walk for both."""
    every: list[ast.AST] = []
    own: list[ast.AST] = []
    body = {id(statement) for statement in node.body}
    pending: list[tuple[ast.AST, bool]] = [(child, id(child) in body) for child in branch_nodes(node)]
    every.append(node)
    while pending:
        child, is_own = pending.pop()
        every.append(child)
        if is_own:
            own.append(child)
        below_own = is_own and not isinstance(child, SCOPES)
        pending.extend([(below, below_own) for below in branch_nodes(child)])
    return every, own


def body_facts(node: AnyFunction, in_class: bool, lines: bool = True) -> BodyFacts:
    receiver = _receiver_name(node) if in_class else None
    # Walked once for the shape, the uses of self's calls, and what a method does with self or
    # what a function's inner functions are (a decorator's wrappers); a static method needs neither.
    every, own = _every_and_own(node) if receiver is not None or not in_class else (None, _own_nodes(node))
    facts = BodyFacts(lines=normalised_lines(node) if lines else None, raises=_raised(node),
                      is_async=isinstance(node, ast.AsyncFunctionDef), shape=returned_shape(node, own))
    if receiver is not None:
        _self_calls_use(own, receiver, facts)
    if receiver is None:
        if not in_class:
            facts.wrapper_reads = _wrapper_reads(node, every)
        return facts
    facts.guard = none_guard(node, receiver)
    facts.returns_self = returns_its_receiver(node)
    facts.forwards = super_forward(node) if node.args.kwarg is not None else None
    augmented = _record_self_uses(every, receiver, facts)
    both = facts.reads & facts.writes | augmented
    facts.read_first = _read_before_written(node, receiver, both) if both else set()
    facts.gated, facts.mutates, facts.assigns = _branches(node, receiver)
    return facts


def _record_self_uses(every: list[ast.AST], receiver: str, facts: BodyFacts) -> set[str]:
    """Record what the nodes (`every`) construct into, read, write and call on `self`, and the
    shape of each method call; return the attributes stored by `self.x += ...` (a store that
    reads x first)."""
    augmented: set[str] = set()
    for child in every:
        if isinstance(child, ast.Assign) and isinstance(child.value, ast.Call):
            _record_constructed(child, receiver, facts)
        elif isinstance(child, ast.AugAssign) and (written := self_attribute(child.target, receiver)) is not None:
            augmented.add(written)
        _record_self_access(child, receiver, facts)
        if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
            call = _call_shape(child, receiver)
            if call not in facts.call_args:
                facts.call_args.append(call)
    return augmented


def _record_constructed(assignment: ast.Assign, receiver: str, facts: BodyFacts) -> None:
    """`self.x = Callee(...)`: the callee as written, for each attribute of self it is given to."""
    callee = _written_name(assignment.value.func)
    for target in assignment.targets:
        written = self_attribute(target, receiver) if callee else None
        if written is not None:
            facts.constructed.setdefault(written, set()).add(callee)


def _record_self_access(child: ast.AST, receiver: str, facts: BodyFacts) -> None:
    """`self.x` read or written, `self.x.member` read, or `self.x(...)` called."""
    if (name := self_attribute(child, receiver)) is not None:
        (facts.writes if isinstance(child.ctx, (ast.Store, ast.Del)) else facts.reads).add(name)
    elif isinstance(child, ast.Attribute) and isinstance(child.ctx, ast.Load) \
            and (name := self_attribute(child.value, receiver)) is not None:
        facts.members.setdefault(name, set()).add(child.attr)
    elif isinstance(child, ast.Call) and (name := self_attribute(child.func, receiver)) is not None:
        facts.calls.add(name)


def _call_shape(call: ast.Call, receiver: str) -> list:
    """[method name, on self, positional arguments, keywords, splat] of `<x>.<name>(...)`."""
    func = call.func
    assert isinstance(func, ast.Attribute)
    on_self = int(isinstance(func.value, ast.Name) and func.value.id == receiver)
    positional = 0
    for argument in call.args:
        if isinstance(argument, ast.Starred):
            break
        positional += 1
    splat = int(any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords))
    return [func.attr, on_self, positional, sorted(k.arg for k in call.keywords if k.arg is not None), splat]


def super_forward(node: AnyFunction) -> list | None:
    """[positional arguments, sorted keywords] that the call passes besides the splats, when the
    body's only use of its `**kwargs` (and of its `*args`, if any) is to splat them into
    `super().<same method>(...)`: what a caller passes there is the next class's to accept."""
    arguments = node.args
    if arguments.kwarg is None:
        return None
    splatted = {arguments.kwarg.arg, *([arguments.vararg.arg] if arguments.vararg else [])}
    uses = _name_uses(node, splatted)
    calls = [child for child in ast.walk(node) if _is_super_call_of(child, node.name)]
    for call in calls:
        kwargs_splat = _kwargs_splats(call, arguments.kwarg.arg)
        args_splat = _args_splats(call, arguments.vararg)
        if len(kwargs_splat) == 1 and uses == 1 + len(args_splat) and len(args_splat) == (arguments.vararg is not None):
            if _other_splats(call, kwargs_splat, args_splat):
                return None  # other splats: what lands where is unknown
            return _passed_besides_splats(call)
    return None


def _passed_besides_splats(call: ast.Call) -> list:
    """[positional arguments, sorted keywords] of a call, its splats left out."""
    positional = sum(1 for a in call.args if not isinstance(a, ast.Starred))
    return [positional, sorted(k.arg for k in call.keywords if k.arg is not None)]


def _name_uses(node: ast.AST, names: set[str]) -> int:
    """How many times the names occur under `node`."""
    return sum(1 for child in ast.walk(node) if isinstance(child, ast.Name) and child.id in names)


def _is_super_call_of(child: ast.AST, method: str) -> bool:
    """Whether the node is `super().<method>(...)`."""
    return isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) \
        and child.func.attr == method and isinstance(child.func.value, ast.Call) \
        and isinstance(child.func.value.func, ast.Name) and child.func.value.func.id == "super" \
        and not child.func.value.args


def _kwargs_splats(call: ast.Call, kwargs: str) -> list[ast.keyword]:
    """The call's `**<kwargs>` arguments."""
    return [k for k in call.keywords if k.arg is None and isinstance(k.value, ast.Name) and k.value.id == kwargs]


def _args_splats(call: ast.Call, vararg: ast.arg | None) -> list[ast.expr]:
    """The call's `*<vararg>` arguments (none without a `*vararg`)."""
    return [a for a in call.args if isinstance(a, ast.Starred) and isinstance(a.value, ast.Name)
            and vararg is not None and a.value.id == vararg.arg]


def _other_splats(call: ast.Call, kwargs_splat: list[ast.keyword], args_splat: list[ast.expr]) -> bool:
    """Whether the call splats anything besides `kwargs_splat` and `args_splat`."""
    return any(k.arg is None for k in call.keywords if k not in kwargs_splat) \
        or any(isinstance(a, ast.Starred) for a in call.args if a not in args_splat)


def _read_before_written(node: AnyFunction, receiver: str, candidates: set[str]) -> set[str]:
    """Which of `candidates`, attributes of `self` that the body both reads and sets, it reads
    first in source order (the right-hand side of an assignment counts before its target)."""
    first: dict[str, bool] = {}  # attribute -> its first access is a read
    pending: list[ast.AST] = list(reversed(node.body))  # a stack: the next node to visit on top
    while pending:
        child = pending.pop()
        if isinstance(child, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            _visit_assignment(child, receiver, first, pending)
            continue
        if (name := self_attribute(child, receiver)) is not None:
            first.setdefault(name, isinstance(child.ctx, ast.Load))
        pending.extend(reversed(branch_nodes(child)))
    return {attr for attr, is_read in first.items() if is_read and attr in candidates}


def _visit_assignment(child: ast.Assign | ast.AnnAssign | ast.AugAssign, receiver: str, first: dict[str, bool],
                      pending: list[ast.AST]) -> None:
    """_read_before_written's step at an assignment: `self.x += 1` reads x first, and the value
    is visited before the targets."""
    if isinstance(child, ast.AugAssign) and (name := self_attribute(child.target, receiver)) is not None:
        first.setdefault(name, True)
    targets = child.targets if isinstance(child, ast.Assign) else [child.target]
    pending.extend(reversed([*([child.value] if child.value is not None else []), *targets]))


def _written_name(func: ast.expr) -> str | None:
    """`Thing` or `mod.Thing` as written, for a callee whose last name is CapWords (a class,
    by convention; whether it is one is checked when the name is resolved)."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    parts.append(func.id)
    return ".".join(reversed(parts)) if parts[0][:1].isupper() else None


def module_bodies(tree: ast.Module, lines: bool = True, code: str | None = None,
                  known: dict[tuple[bool, str], BodyFacts] | None = None) -> dict[str, dict[str, BodyFacts]]:
    """{"": {function: facts}, "ClassName": {method: facts}} for the module's top level;
    `lines`: with the bodies' normalised lines. With the module's `code`, `known` keeps each
    definition's facts by its source lines (decorators included): a definition written alike
    in another module (the same module in the other release: nine in ten of a changed
    module's functions are unchanged) is not walked again. The facts read only the node, and
    relative positions, so equal lines give equal facts."""
    result: dict[str, dict[str, BodyFacts]] = {"": {}}
    starts = (*line_starts(code), len(code)) if known is not None and code is not None else None

    def computed(node: AnyFunction, in_class: bool) -> BodyFacts:
        if starts is None:
            return body_facts(node, in_class, lines)
        first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
        last = min(node.end_lineno or node.lineno, len(starts) - 1)
        key = (in_class, code[starts[first - 1]:starts[last]])
        facts = known.get(key)
        if facts is None:
            facts = known[key] = body_facts(node, in_class, lines)
        return facts

    def add(owner: dict[str, BodyFacts], node: AnyFunction, in_class: bool) -> None:
        facts = computed(node, in_class)
        if node.name in owner:
            # merged into a copy: the facts kept in `known` may stand for another definition
            owner[node.name] = merged = copy.deepcopy(owner[node.name])
            merged.merge(facts)
        else:
            owner[node.name] = facts

    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            add(result[""], statement, in_class=False)
        elif isinstance(statement, ast.ClassDef):
            methods = result.setdefault(statement.name, {})
            for member in statement.body:
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    add(methods, member, in_class=True)
    return result


def definition_lines(tree: ast.Module) -> dict[str, dict[str, list[list[int]]]]:
    """{"": {function: places}, "ClassName": {method: places}} of the module's top level, each
    place [its first line (its first decorator's), its last line, its column, its `def` line],
    one per definition of that name (a property and its setter are two), in source order."""
    def place(node: AnyFunction) -> list[int]:
        first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
        return [first, node.end_lineno or node.lineno, node.col_offset, node.lineno]

    found: dict[str, dict[str, list[list[int]]]] = {"": {}}
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found[""].setdefault(statement.name, []).append(place(statement))
        elif isinstance(statement, ast.ClassDef):
            methods = found.setdefault(statement.name, {})
            for member in statement.body:
                if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    methods.setdefault(member.name, []).append(place(member))
    return found


def definition_spans(places: dict[str, dict[str, list[list[int]]]], text: str) -> dict[str, dict[str, list[list[int]]]]:
    """`definition_lines`' places as spans of `text`: [offset of the first line, offset after
    the last line, column, first line, `def` line], where `definition_node` finds a definition
    without the module's tree."""
    starts = [*line_starts(text), len(text)]  # the offset of each line

    def span(first: int, last: int, column: int, line: int) -> list[int]:
        # Within the text whatever a record says (a kept record can be damaged): a place that
        # is not the definition's is found so by definition_node, which then parses the module.
        first = min(max(first, 1), len(starts) - 1)
        last = min(max(last, first), len(starts) - 1)
        return [starts[first - 1], starts[last], column, first, line]

    return {table: {name: [span(*place) for place in each] for name, each in names.items()}
            for table, names in places.items()}


def definition_node(text: str, span: list[int], name: str) -> AnyFunction | None:
    """The definition at `span`, parsed from its own lines alone (a method under an `if` at its
    own indentation), with the module's line numbers; None when those lines do not parse to it
    alone (a definition sharing a line with other code): the caller then parses the module."""
    start, end, column, first, _ = span
    segment = text[start:end]
    if len(segment) - len(segment.lstrip(" \t")) != column or first < (1 if column == 0 else 2):
        return None
    # Blank lines before it give its nodes the module's line numbers (shifting them after
    # parsing walked every node in Python: a fifth of a second of a cold run).
    padding = "\n" * (first - 1) if column == 0 else "\n" * (first - 2) + "if 1:\n"
    try:
        with collector_paused(collect_after=True):
            tree = parse_quietly(padding + segment)
    except (SyntaxError, ValueError):  # ValueError: TooComplex, or a NUL byte
        return None
    return _lone_definition(tree, column, name)


def _lone_definition(tree: ast.Module, column: int, name: str) -> AnyFunction | None:
    """The definition `name` when it is all the parsed segment holds (under the `if 1:` put
    before an indented one)."""
    body = tree.body if column == 0 else getattr(tree.body[0], "body", []) if tree.body else []
    if len(body) != 1 or not isinstance(body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) or body[0].name != name:
        return None
    return body[0]


def module_definition_lines(tree: ast.Module, table: str, name: str) -> list[str]:
    """The normalised lines of every top-level definition `name` (of class `table`, or of the
    module when ""), concatenated in source order, from the module's whole tree."""
    statements = tree.body if not table else [
        member for statement in tree.body if isinstance(statement, ast.ClassDef) and statement.name == table
        for member in statement.body]
    return [line for statement in statements
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == name
            for line in normalised_lines(statement)]


# -- branch conditions -------------------------------------------------------------------------

_NEGATED = {"truthy": "falsy", "falsy": "truthy", "none": "notnone", "notnone": "none", "eq": "ne", "ne": "eq",
            "in": "notin", "notin": "in"}
_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
_SCOPE_TYPES = frozenset(SCOPES)


def _atom(test: ast.expr, receiver: str) -> list[str] | None:
    """[attribute, test, value] for a test on one attribute of `self` that the project's writes
    may decide: `self.x` (truthy), `self.x is None`, `self.x is not None`, `self.x == K`,
    `self.x != K`, `self.x in (K, ...)`, `not` of any of them."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _atom(test.operand, receiver)
        return [inner[0], _NEGATED[inner[1]], inner[2]] if inner else None
    if (name := self_attribute(test, receiver)) is not None:
        return [name, "truthy", ""]
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        return _compared_atom(test, receiver)
    return None


def _compared_atom(test: ast.Compare, receiver: str) -> list[str] | None:
    """_atom of a comparison with one operator, `self.x` on either side of `==`/`!=`."""
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if self_attribute(left, receiver) is None and isinstance(op, (ast.Eq, ast.NotEq)):
        left, right = right, left
    name = self_attribute(left, receiver)
    if name is None:
        return None
    compared = _comparison(op, right)
    return [name, *compared] if compared is not None else None


def _comparison(op: ast.cmpop, right: ast.expr) -> tuple[str, str] | None:
    """(test, value) of `<attribute> <op> <right>`, when the source says what `right` is."""
    if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(right, ast.Constant) and right.value is None:
        return "none" if isinstance(op, ast.Is) else "notnone", ""
    if isinstance(op, (ast.Eq, ast.NotEq)) and (token := value_token(right)) and token != "empty":
        return "eq" if isinstance(op, ast.Eq) else "ne", token
    if isinstance(op, (ast.In, ast.NotIn)):
        return _membership(op, right)
    return None


def _membership(op: ast.In | ast.NotIn, right: ast.expr) -> tuple[str, str] | None:
    """(test, values) of `<attribute> in (K, ...)`, when every K is a known value."""
    if not (isinstance(right, (ast.Tuple, ast.List, ast.Set)) and right.elts):
        return None
    tokens = [value_token(element) for element in right.elts]
    if all(tokens) and "empty" not in tokens:
        return "in" if isinstance(op, ast.In) else "notin", "|".join(tokens)
    return None


def branch_conditions(test: ast.expr, receiver: str, holds: bool) -> list[list[str]]:
    """Conditions on `self` that hold wherever `test` is `holds`: both sides of a true `and`,
    of a false `or`; one atom; nothing it cannot tell."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.BoolOp):
        return branch_conditions(test.operand, receiver, not holds)
    if isinstance(test, ast.BoolOp):
        if isinstance(test.op, ast.And) == holds:
            return [c for value in test.values for c in branch_conditions(value, receiver, holds)]
        return []
    atom = _atom(test, receiver)
    if atom is None:
        return []
    return [atom] if holds else [[atom[0], _NEGATED[atom[1]], atom[2]]]


def _exits(block: list[ast.stmt]) -> bool:
    return bool(block) and isinstance(block[-1], _EXITS)


def _branches(node: AnyFunction, receiver: str) -> tuple[dict, set[str], dict[str, str]]:
    """(gated, mutates, assigns) of a body: see BodyFacts. Conditions come from `if`/`elif`/
    `else`, early exits (`if C: return` guards the statements after it), `while`, `for` over
    `self.x` (not entered while it is empty), `and`/`or` operands and conditional expressions.
    Nested functions and lambdas are left to the caller's plain reads."""
    walk = _BranchWalk(receiver)
    walk.run(node.body)
    return _gated(walk.places), walk.mutates, _assigned_values(walk.written)


class _BranchWalk:
    """_branches' walk: every node of a body, each with the conditions on `self` holding there
    (a stack of (node, conditions); a statements list is walked with its early exits)."""

    __slots__ = ("receiver", "pending", "places", "mutates", "written")

    def __init__(self, receiver: str) -> None:
        self.receiver = receiver
        self.pending: list[tuple[object, tuple]] = []
        self.places: dict[str, list[tuple[tuple[str, ...], ...]]] = {}
        self.mutates: set[str] = set()
        self.written: dict[str, list[tuple[int, int, str]]] = {}  # name -> (line, column, value text)

    def run(self, body: list[ast.stmt]) -> None:
        pending = self.pending
        pending.append((list(body), ()))
        while pending:
            item, conds = pending.pop()
            if isinstance(item, list):  # a block of statements
                self._block(item, conds)
                continue
            kind = type(item)  # tests of the class itself: this loop sees every node of every body
            branching = _BRANCHING.get(kind)
            if branching is not None:
                branching(self, item, conds)
                continue
            # a nested scope runs when called, not here: unconditioned, as the plain reads count it
            self._plain(item, kind, () if kind in _SCOPE_TYPES else conds)

    def _holding(self, test: ast.expr, holds: bool) -> tuple:
        """The conditions that hold where `test` is `holds`, as tuples."""
        return tuple(tuple(c) for c in branch_conditions(test, self.receiver, holds))

    def _block(self, statements: list[ast.stmt], conds: tuple) -> None:
        running = conds
        for statement in statements:
            self.pending.append((statement, running))
            if isinstance(statement, ast.If) and _exits(statement.body) and not statement.orelse:
                running = running + self._holding(statement.test, False)

    def _if(self, child: ast.If | ast.IfExp, conds: tuple) -> None:
        pending = self.pending
        pending.append((child.test, conds))
        statements = type(child) is ast.If  # an `if` statement's blocks, or a conditional expression's parts
        pending.append((list(child.body) if statements else child.body, conds + self._holding(child.test, True)))
        pending.append((list(child.orelse) if statements else child.orelse, conds + self._holding(child.test, False)))

    def _while(self, child: ast.While, conds: tuple) -> None:
        pending = self.pending
        pending.append((child.test, conds))
        pending.append((list(child.body), conds + self._holding(child.test, True)))
        pending.append((list(child.orelse), conds))

    def _for(self, child: ast.For | ast.AsyncFor, conds: tuple) -> None:
        self.pending.extend([(child.iter, conds), (child.target, conds), (list(child.orelse), conds)])
        name = self_attribute(child.iter, self.receiver)
        self.pending.append((list(child.body), conds + (((name, "truthy", ""),) if name else ())))

    def _boolean(self, child: ast.BoolOp, conds: tuple) -> None:
        running = conds
        holds = isinstance(child.op, ast.And)  # the next operand runs when this one is (not) true
        for value in child.values:
            self.pending.append((value, running))
            running = running + self._holding(value, holds)

    def _plain(self, child: ast.AST, kind: type, conds: tuple) -> None:
        """Record what a node writes, fills or reads on `self`, and push the nodes below it."""
        if kind is ast.Assign or kind is ast.AnnAssign:
            self._record_written(child)
        if kind in MUTATING:
            add_mutated(child, self.receiver, self.mutates)
        if kind is ast.Attribute and (name := self_attribute(child, self.receiver)) is not None:
            key = name if isinstance(child.ctx, ast.Load) else f"={name}"
            self.places.setdefault(key, []).append(conds)
        self._push_below(child, kind, conds)

    def _record_written(self, child: ast.Assign | ast.AnnAssign) -> None:
        """`self.x = value`: the value's text, where it is written."""
        if type(child) is ast.Assign:
            targets = child.targets
        elif child.value is not None:
            targets = [child.target]
        else:
            return
        for target in targets:
            if (name := self_attribute(target, self.receiver)) is not None:
                self.written.setdefault(name, []).append((child.lineno, child.col_offset, _short(child.value)))

    def _push_below(self, child: ast.AST, kind: type, conds: tuple) -> None:
        # A name, a literal or a context holds nothing the loop looks for: not pushed at all.
        pending = self.pending
        for field_name in node_fields(kind):
            value = getattr(child, field_name, None)
            if type(value) is list:
                if value and isinstance(value[0], ast.stmt):
                    pending.append((value, conds))
                else:
                    pending.extend([(v, conds) for v in value if type(v) in BRANCH_TYPES])
            elif type(value) in BRANCH_TYPES:
                pending.append((value, conds))


# _BranchWalk's steps at the nodes whose parts run under conditions
_BRANCHING = {ast.If: _BranchWalk._if, ast.IfExp: _BranchWalk._if, ast.While: _BranchWalk._while,
              ast.For: _BranchWalk._for, ast.AsyncFor: _BranchWalk._for, ast.BoolOp: _BranchWalk._boolean}


def _gated(places: dict[str, list[tuple[tuple[str, ...], ...]]]) -> dict[str, list[list[list[str]]]]:
    """The names every place of which has a condition, with each place's conditions."""
    gated = {}
    for name, where in places.items():
        if all(where):
            gated[name] = [[list(cond) for cond in place] for place in sorted({tuple(sorted(set(c))) for c in where})]
    return gated


def _assigned_values(written: dict[str, list[tuple[int, int, str]]]) -> dict[str, str]:
    """Per name, the values written in source order: the first two, and how many more."""
    assigns = {}
    for name, values in written.items():
        texts = list(dict.fromkeys(text for _, _, text in sorted(values)))
        assigns[name] = " or ".join(texts[:2]) + (f" (or {len(texts) - 2} more)" if len(texts) > 2 else "")
    return assigns


def _short(value: ast.AST) -> str:
    text = " ".join(unparsed(value).split())
    return text if len(text) <= 60 else text[:57] + "..."
