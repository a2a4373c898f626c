"""What upstream function bodies do with `self`, and a normalised form of each body.

griffe models signatures, not bodies, so bodies are read with `ast` (from the tree griffe
visits too): which attributes a method reads from and writes to `self`, which
`self.<name>(...)` methods it calls, and its statements unparsed (formatting, comments and the
docstring dropped) and hashed line by line, so two releases' bodies compare without line
numbers and "how much changed" can be counted.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field

from sglang_contracts.pysource import own_nodes as _own_nodes, returned_shape, unpack_count

AnyFunction = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class BodyFacts:
    reads: set[str] = field(default_factory=set)  # self.<name> loads (calls included)
    calls: set[str] = field(default_factory=set)  # self.<name>(...)
    writes: set[str] = field(default_factory=set)  # self.<name> = ...
    read_first: set[str] = field(default_factory=set)  # written here, but read before the first write
    lines: list[str] = field(default_factory=list)  # hashes of the normalised body's lines
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
    # self.<method>(...) whose result the body unpacks (`a, b = self.m(...)`): method -> targets
    unpacks: dict[str, int] = field(default_factory=dict)
    awaits: set[str] = field(default_factory=set)  # self.<method>(...) the body awaits
    plain_calls: set[str] = field(default_factory=set)  # self.<method>(...) it calls without await

    def merge(self, other: "BodyFacts") -> None:
        """A property and its setter, or overloads, share one name: keep what all of them do."""
        self.reads |= other.reads
        self.calls |= other.calls
        self.writes |= other.writes
        self.read_first |= other.read_first
        self.lines += other.lines
        self.guard = None  # one of them may run past it
        self.forwards = None
        self.raises = self.raises if self.raises == other.raises else None
        self.wrapper_reads |= other.wrapper_reads
        self.call_args += [call for call in other.call_args if call not in self.call_args]
        self.is_async = self.is_async and other.is_async
        self.shape = self.shape if self.shape == other.shape else None
        self.unpacks = {name: count for name, count in self.unpacks.items() if other.unpacks.get(name, count) == count}
        self.awaits |= other.awaits
        self.plain_calls |= other.plain_calls
        for name, callees in other.constructed.items():
            self.constructed.setdefault(name, set()).update(callees)

    def to_json(self) -> dict:
        record = {"reads": sorted(self.reads), "calls": sorted(self.calls), "writes": sorted(self.writes),
                  "body": self.lines}
        if self.read_first:
            record["read_first"] = sorted(self.read_first)
        if self.guard is not None:
            record["guard"] = self.guard
        if self.forwards is not None:
            record["forwards"] = self.forwards
        if self.raises is not None:
            record["raises"] = self.raises
        if self.wrapper_reads:
            record["wrapper_reads"] = sorted(self.wrapper_reads)
        if self.call_args:
            record["call_args"] = self.call_args
        if self.is_async:
            record["async"] = True
        if self.shape is not None:
            record["shape"] = self.shape
        if self.unpacks:
            record["unpacks"] = dict(sorted(self.unpacks.items()))
        if self.awaits:
            record["awaits"] = sorted(self.awaits)
        if self.plain_calls:
            record["plain_calls"] = sorted(self.plain_calls)
        if self.constructed:
            record["constructed"] = {name: sorted(callees) for name, callees in sorted(self.constructed.items())}
        return record


def _line_hash(line: str) -> str:
    return hashlib.blake2b(line.strip().encode(), digest_size=5).hexdigest()


def _statements(node: AnyFunction) -> list[ast.stmt]:
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
    text = "\n".join(unparsed(statement) for statement in _statements(node))  # a docstring edit changes nothing
    return [_line_hash(line) for line in text.splitlines() if line.strip()]


def _self_attribute(node: ast.AST, receiver: str) -> str | None:
    """`name` when the node is `<receiver>.name` (`self.name`), else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == receiver:
        return node.attr
    return None


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
    statements = _statements(node)
    alias = None
    if len(statements) > 1 and isinstance(statements[0], ast.Assign) and len(statements[0].targets) == 1 \
            and isinstance(statements[0].targets[0], ast.Name):
        alias = statements[0].targets[0].id, statements[0].value
        statements = statements[1:]
    first = statements[0] if statements else None
    if not (isinstance(first, ast.If) and not first.orelse and len(first.body) == 1 and isinstance(first.body[0], ast.Return)):
        return None
    tested = _tested(first.test)
    if tested is None:
        return None
    what, kind = tested
    if alias is not None:  # the local must be what is tested: its assignment runs before the test
        if not (isinstance(what, ast.Name) and what.id == alias[0]):
            return None
        what = alias[1]
    name = _self_attribute(what, receiver)
    return [name, kind] if name is not None else None


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


# Nodes with nothing below them that could be an attribute access: not worth descending into.
_LEAVES = (ast.Name, ast.Constant, ast.expr_context)


def _nodes(root: ast.AST):
    """Every node under `root` that may hold or be an attribute access (`ast.walk` without the
    leaves, which is most of a body's nodes)."""
    pending = [root]
    while pending:
        node = pending.pop()
        yield node
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                pending.extend(item for item in value if isinstance(item, ast.AST) and not isinstance(item, _LEAVES))
            elif isinstance(value, ast.AST) and not isinstance(value, _LEAVES):
                pending.append(value)


def _wrapper_reads(node: AnyFunction) -> set[str]:
    """What the functions a decorator defines inside itself read from their first parameter,
    when it is called `self`: the wrapper runs as the decorated method."""
    found: set[str] = set()
    for inner in ast.walk(node):
        if inner is node or not isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        arguments = [*inner.args.posonlyargs, *inner.args.args]
        if not arguments or arguments[0].arg != "self":
            continue
        found |= {child.attr for child in ast.walk(inner)
                  if _self_attribute(child, "self") is not None and isinstance(child.ctx, ast.Load)}
    return found


def _raised(node: AnyFunction) -> list[str] | None:
    """[exception, message] when the body (after its docstring) opens with `raise X(...)`."""
    statements = _statements(node)
    first = statements[0] if statements else None
    if not isinstance(first, ast.Raise) or first.exc is None:
        return None
    exception = first.exc.func if isinstance(first.exc, ast.Call) else first.exc
    name = _written_name(exception) or (exception.id if isinstance(exception, ast.Name) else None)
    if name is None:
        return None
    message = ""
    if isinstance(first.exc, ast.Call) and first.exc.args:
        parts = first.exc.args[0]
        if isinstance(parts, ast.Constant) and isinstance(parts.value, str):
            message = parts.value
        elif isinstance(parts, ast.JoinedStr):  # an f-string: its literal parts
            message = "".join(v.value for v in parts.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return [name, " ".join(message.split())]


def _self_calls_use(node: AnyFunction, receiver: str, facts: "BodyFacts") -> None:
    """Which `self.<method>(...)` results the body unpacks, awaits, or takes as they are."""
    awaited: set[int] = set()
    for child in _own_nodes(node):
        if isinstance(child, ast.Await) and isinstance(child.value, ast.Call):
            awaited.add(id(child.value))
        elif isinstance(child, ast.Assign) and len(child.targets) == 1 and isinstance(child.value, ast.Call) \
                and (method := _self_attribute(child.value.func, receiver)) is not None \
                and (count := unpack_count(child.targets[0])) is not None:
            known = facts.unpacks.setdefault(method, count)
            if known != count:
                facts.unpacks[method] = -1  # unpacked in two ways: not one shape
    for child in _own_nodes(node):
        if isinstance(child, ast.Call) and (method := _self_attribute(child.func, receiver)) is not None:
            (facts.awaits if id(child) in awaited else facts.plain_calls).add(method)
    facts.unpacks = {name: count for name, count in facts.unpacks.items() if count >= 0}


def body_facts(node: AnyFunction, in_class: bool) -> BodyFacts:
    facts = BodyFacts(lines=normalised_lines(node), raises=_raised(node),
                      is_async=isinstance(node, ast.AsyncFunctionDef), shape=returned_shape(node))
    receiver = _receiver_name(node) if in_class else None
    if receiver is not None:
        _self_calls_use(node, receiver, facts)
    if receiver is None:
        if not in_class:
            facts.wrapper_reads = _wrapper_reads(node)
        return facts
    facts.guard = none_guard(node, receiver)
    facts.forwards = super_forward(node) if node.args.kwarg is not None else None
    augmented: set[str] = set()  # `self.x += ...`: a store that reads x first
    for child in _nodes(node):
        if isinstance(child, ast.Assign) and isinstance(child.value, ast.Call):
            callee = _written_name(child.value.func)
            for target in child.targets:
                written = _self_attribute(target, receiver) if callee else None
                if written is not None:
                    facts.constructed.setdefault(written, set()).add(callee)
        elif isinstance(child, ast.AugAssign) and (written := _self_attribute(child.target, receiver)) is not None:
            augmented.add(written)
        if (name := _self_attribute(child, receiver)) is not None:
            (facts.writes if isinstance(child.ctx, (ast.Store, ast.Del)) else facts.reads).add(name)
        elif isinstance(child, ast.Call) and (name := _self_attribute(child.func, receiver)) is not None:
            facts.calls.add(name)
        if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
            call = _call_shape(child, receiver)
            if call not in facts.call_args:
                facts.call_args.append(call)
    both = facts.reads & facts.writes | augmented
    facts.read_first = _read_before_written(node, receiver, both) if both else set()
    return facts


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
    uses = [child for child in ast.walk(node) if isinstance(child, ast.Name) and child.id in splatted]
    calls = [child for child in ast.walk(node) if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)
             and child.func.attr == node.name and isinstance(child.func.value, ast.Call)
             and isinstance(child.func.value.func, ast.Name) and child.func.value.func.id == "super"
             and not child.func.value.args]
    for call in calls:
        kwargs_splat = [k for k in call.keywords if k.arg is None and isinstance(k.value, ast.Name)
                        and k.value.id == arguments.kwarg.arg]
        args_splat = [a for a in call.args if isinstance(a, ast.Starred) and isinstance(a.value, ast.Name)
                      and arguments.vararg is not None and a.value.id == arguments.vararg.arg]
        if len(kwargs_splat) == 1 and len(uses) == 1 + len(args_splat) and len(args_splat) == (arguments.vararg is not None):
            if any(k.arg is None for k in call.keywords if k not in kwargs_splat) \
                    or any(isinstance(a, ast.Starred) for a in call.args if a not in args_splat):
                return None  # other splats: what lands where is unknown
            positional = sum(1 for a in call.args if not isinstance(a, ast.Starred))
            return [positional, sorted(k.arg for k in call.keywords if k.arg is not None)]
    return None


def _read_before_written(node: AnyFunction, receiver: str, candidates: set[str]) -> set[str]:
    """Which of `candidates`, attributes of `self` that the body both reads and sets, it reads
    first in source order (the right-hand side of an assignment counts before its target)."""
    first: dict[str, bool] = {}  # attribute -> its first access is a read
    pending: list[ast.AST] = list(reversed(node.body))  # a stack: the next node to visit on top
    while pending:
        child = pending.pop()
        if isinstance(child, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            if isinstance(child, ast.AugAssign) and (name := _self_attribute(child.target, receiver)) is not None:
                first.setdefault(name, True)  # `self.x += 1` reads x first
            targets = child.targets if isinstance(child, ast.Assign) else [child.target]
            pending.extend(reversed([*([child.value] if child.value is not None else []), *targets]))
            continue
        if (name := _self_attribute(child, receiver)) is not None:
            first.setdefault(name, isinstance(child.ctx, ast.Load))
        pending.extend(reversed(list(ast.iter_child_nodes(child))))
    return {attr for attr, is_read in first.items() if is_read and attr in candidates}


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


def module_bodies(tree: ast.Module) -> dict[str, dict[str, BodyFacts]]:
    """{"": {function: facts}, "ClassName": {method: facts}} for the module's top level."""
    result: dict[str, dict[str, BodyFacts]] = {"": {}}

    def add(owner: dict[str, BodyFacts], node: AnyFunction, in_class: bool) -> None:
        facts = body_facts(node, in_class)
        if node.name in owner:
            owner[node.name].merge(facts)
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
