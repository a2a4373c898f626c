"""Extract what one upstream module defines, statically, with griffe (SGLang is never imported).

The result is a plain, JSON-ready record so it can be cached per module content: a second
run over the same release never parses SGLang again.
"""

from __future__ import annotations

import ast
import logging
from pathlib import Path, PurePosixPath
from typing import Any

from sglang_contracts.infra.collector import collector_paused
from sglang_contracts.infra.boundary import problem_for
from sglang_contracts.infra.lines import numbered_lines
from sglang_contracts.infra.pysource import parse_quietly, source_depth, why_unparsable
from sglang_contracts.upstream.bodies import BodyFacts, definition_lines, module_bodies
from sglang_contracts.upstream.next_sibling import indexed_next_sibling
from sglang_contracts.upstream.toplevel import MODULE, dynamic_setters, evaluated_exports

UNION_WRAPPERS = {"Optional", "Union"}
# Containers whose items a `for` loop yields (their lower-cased names).
CONTAINERS = {"list", "sequence", "iterable", "iterator", "set", "frozenset", "deque", "collection",
              "mutablesequence", "tuple"}
# griffe's parameter kinds, shortened for the cache: positional-only, positional-or-keyword,
# *args, keyword-only, **kwargs.
PARAMETER_KINDS = {"positional-only": "po", "positional or keyword": "pk", "variadic positional": "va",
                   "keyword-only": "ko", "variadic keyword": "vk"}

# griffe reports unresolvable aliases and odd code at DEBUG/WARNING level; they are not ours to show.
logging.getLogger("griffe").setLevel(logging.ERROR)


def _parent_chain(module_name: str, relpath: str):
    """griffe resolves relative imports through Module.parent, so give it the package chain."""
    import griffe

    parent = None
    parts = module_name.split(".")[:-1]
    folder = PurePosixPath(relpath).parent
    folders = [folder.parents[i] for i in range(len(parts) - 1)][::-1] + [folder] if parts else []
    for part, path in zip(parts, folders):
        parent = griffe.Module(part, filepath=Path(str(path)) / "__init__.py", parent=parent)
    return parent


def _binding(member) -> dict[str, Any]:
    if member.is_alias:
        return {"kind": "alias", "line": member.alias_lineno or 0, "target": member.target_path}
    kind = member.kind.value  # "class", "function", "attribute", "module"
    return {"kind": kind, "line": member.lineno or 0}


def _union_operands(expression) -> list:
    """The operands of `A | B | C`, left to right: the expression nests to the left, a level per
    operand, and is taken apart in a loop."""
    import griffe

    operands = []
    pending = [expression]
    while pending:
        current = pending.pop()
        if isinstance(current, griffe.ExprBinOp) and current.operator == "|":
            pending += [current.right, current.left]
        else:
            operands.append(current)
    return operands


def _is_union_operator(expression) -> bool:
    """`A | B`."""
    import griffe

    return isinstance(expression, griffe.ExprBinOp) and expression.operator == "|"


def _is_named_subscript(expression) -> bool:
    """`Name[...]` or `module.Name[...]`."""
    import griffe

    return isinstance(expression, griffe.ExprSubscript) \
        and isinstance(expression.left, (griffe.ExprName, griffe.ExprAttribute))


def _wrapper_name(subscript) -> str:
    """The last component of a named subscript's head (`Optional` of `typing.Optional[T]`)."""
    return subscript.left.canonical_path.rsplit(".", 1)[-1]


def _subscript_members(subscript) -> list:
    """The expressions between a subscript's brackets: `[A, B]` of `X[A, B]`, `[A]` of `X[A]`."""
    import griffe

    inner = subscript.slice
    return inner.elements if isinstance(inner, griffe.ExprTuple) else [inner]


def _each_of(read, expressions) -> list[str]:
    """The classes `read` finds in each expression, in order."""
    return [path for expression in expressions for path in read(expression)]


def annotation_types(expression) -> list[str]:
    """The classes an annotation admits: `Optional[T]`, `T | None`, `Union[A, B]` and `"T"` unwrap;
    containers (`list[T]`) and anything else admit nothing we can follow."""
    import griffe

    if isinstance(expression, (griffe.ExprName, griffe.ExprAttribute)):
        path = expression.canonical_path
        return [] if path in ("None", "typing.Any", "Any") else [path]
    if _is_union_operator(expression):
        return _each_of(annotation_types, _union_operands(expression))
    if _is_named_subscript(expression) and _wrapper_name(expression) in UNION_WRAPPERS:
        return _each_of(annotation_types, _subscript_members(expression))
    return []


def admits_none(expression) -> bool:
    """Does an annotation admit None: `Optional[T]`, `T | None`, `Union[T, None]`?"""
    import griffe

    if expression is None:
        return False
    if isinstance(expression, str):
        return expression.strip() == "None"
    if isinstance(expression, (griffe.ExprName, griffe.ExprAttribute)):
        return str(expression) == "None"
    if _is_union_operator(expression):
        return any(admits_none(operand) for operand in _union_operands(expression))
    if _is_named_subscript(expression):
        wrapper = _wrapper_name(expression)
        if wrapper == "Optional":
            return True
        if wrapper == "Union":
            return any(admits_none(member) for member in _subscript_members(expression))
    return False


def element_types(expression) -> list[str]:
    """The classes a container annotation holds: `List[Req]`, `Optional[list[Req]]`, `Deque[Req]`."""
    if _is_union_operator(expression):
        return _each_of(element_types, _union_operands(expression))
    if not _is_named_subscript(expression):
        return []
    wrapper = _wrapper_name(expression)
    members = _subscript_members(expression)
    if wrapper in UNION_WRAPPERS:
        return _each_of(element_types, members)
    if wrapper.lower() in CONTAINERS and members:
        if wrapper.lower() == "tuple" and not (len(members) == 2 and str(members[1]) == "..."):
            return []
        return annotation_types(members[0])
    return []


def _constructed(value) -> list[str]:
    """`self.x = SomeClass(...)`: the callee may be the attribute's class (checked when resolved)."""
    import griffe

    if isinstance(value, griffe.ExprCall) and isinstance(value.function, (griffe.ExprName, griffe.ExprAttribute)):
        return [value.function.canonical_path]
    return []


def _parameters(function) -> list[list[Any]]:
    return [[p.name, PARAMETER_KINDS[p.kind.value], p.default is not None and p.kind.value.startswith(("positional", "keyword"))]
            for p in function.parameters]


TUPLES = {"tuple", "Tuple", "typing.Tuple"}


def tuple_length(expression) -> int | None:
    """N for a return annotation `tuple[A, B, ...N]` / `Tuple[...]` of fixed length, else None."""
    if _is_named_subscript(expression) and expression.left.canonical_path in TUPLES | {"builtins.tuple"}:
        members = _subscript_members(expression)
        if any(str(member) in ("...", "()") for member in members):
            return None
        return len(members)
    return None


def _function(function, body: BodyFacts | None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "line": function.lineno or 0,
        "params": _parameters(function),
        "decorators": sorted({str(d.value).split("(")[0].rsplit(".", 1)[-1] for d in function.decorators}),
        "returns": annotation_types(function.returns) if function.returns is not None else [],
    }
    annotations = _parameter_annotations(function)
    if annotations:  # a renamed keyword is told from another parameter by its type (contracts/calls.py)
        record["annotations"] = annotations
    if "property" in record["decorators"] and admits_none(function.returns):
        record["nullable"] = True  # a property that may return None
    if body is not None:
        record.update(body.to_json())
    if function.returns is not None:
        _add_return_annotation(record, function.returns)
    return record


def _parameter_annotations(function) -> dict[str, str]:
    return {p.name: str(p.annotation) for p in function.parameters if p.annotation is not None}


def _add_return_annotation(record: dict[str, Any], returns) -> None:
    record["annotation"] = str(returns)
    # The body, when every `return` is a tuple display of one length, is what callers get,
    # even under an annotation that says otherwise (0.5.5's `_launch_subprocesses` returns
    # four values under a stale `Tuple[TokenizerManager, TemplateManager, Dict]`); the
    # annotation says the shape where the body does not.
    length = tuple_length(returns)
    if record.get("shape") is None and length is not None:
        record["shape"] = length


def _dataclass_options(cls) -> dict[str, Any] | None:
    for decorator in cls.decorators:
        text = str(decorator.value)
        if text.split("(")[0].rsplit(".", 1)[-1] == "dataclass":
            return {"kw_only": "kw_only=True" in text.replace(" ", "")}
    return None


def _dataclass_fields(cls) -> list[list[Any]]:
    """[name, has_default, kw_only, attribute] of the fields this class declares, in order.

    A field is an annotated class-level name: never a property (griffe gives a property its
    return annotation, so it looks like one), a method, a `ClassVar`, an assignment on `self`
    in a method, or `field(init=False)`. An `InitVar` is a parameter of the generated
    `__init__` but not an attribute of the instance (`attribute` False). After `_: KW_ONLY`
    the fields are keyword-only, as is a `field(kw_only=True)`."""
    fields = []
    kw_only = False
    init = cls.members.get("__init__")
    for name, member in cls.members.items():
        if not _may_be_field(member, init):
            continue
        annotation = str(member.annotation).replace(" ", "")
        if annotation.endswith("KW_ONLY"):
            kw_only = True
            continue
        if "ClassVar" in annotation:
            continue
        field = _field(name, member, annotation, kw_only)
        if field is not None:
            fields.append(field)
    return fields


def _may_be_field(member, init) -> bool:
    """Whether a class member is an annotated class-level name, not a property or `self.x: T`."""
    if member.is_alias or not member.is_attribute or member.annotation is None:
        return False
    if member.labels & {"property", "cached_property"} or _set_in_init(member, init):
        return False
    # griffe unwraps `ClassVar[T]` to `T` and labels the name a class attribute only
    return "instance-attribute" in member.labels


def _field(name: str, member, annotation: str, kw_only: bool) -> list[Any] | None:
    """_dataclass_fields' record of one field (`annotation` without spaces); None for a
    `field(init=False)`. `kw_only`: whether a `_: KW_ONLY` came before it."""
    value = str(member.value).replace(" ", "") if member.value is not None else None
    is_field_call = value is not None and value.split("(")[0].rsplit(".", 1)[-1] == "field"
    if is_field_call and "init=False" in value:
        return None
    has_default = value is not None and (not is_field_call or "default=" in value or "default_factory=" in value)
    own_kw_only = kw_only or bool(is_field_call and "kw_only=True" in value)
    initvar = annotation.split("[")[0].rsplit(".", 1)[-1] == "InitVar"
    return [name, has_default, own_kw_only, not initvar]


def _set_in_init(member, init) -> bool:
    """An annotated `self.x: T = ...` in `__init__` (griffe keeps it among the class's
    attributes, labelled as an instance attribute with a value): not a field."""
    if "class-attribute" in member.labels:
        return False
    if member.value is not None:
        return True
    start, end = getattr(init, "lineno", None), getattr(init, "endlineno", None)
    return bool(init is not None and not init.is_alias and start and end and start <= (member.lineno or 0) <= end)


STRUCT_BASES = {"msgspec.Struct", "msgspec.structs.Struct"}


def _is_struct(cls) -> bool:
    """A direct `msgspec.Struct` subclass: its annotated class-level names are its fields."""
    return any(getattr(base, "canonical_path", str(base)) in STRUCT_BASES for base in cls.bases)


def _class(cls, bodies: dict[str, BodyFacts], module_name: str) -> dict[str, Any]:
    methods: dict[str, Any] = {}
    attributes: dict[str, Any] = {}
    set_later: set[str] = set()
    for name, member in cls.members.items():
        if member.is_alias:
            continue
        if member.is_function:
            methods[name] = _function(member, bodies.get(name))
        elif member.is_attribute:
            _read_attribute(name, member, bodies, methods, attributes, set_later)
        elif member.is_class:
            attributes[name] = {"line": member.lineno or 0, "kind": "class", "types": []}
    _add_written_attributes(bodies, attributes, set_later)
    _add_constructed_types(bodies, attributes, set_later, module_name)
    options = _dataclass_options(cls)
    return {
        "line": cls.lineno or 0,
        "bases": _bases(cls),
        "dataclass": options,
        "fields": _dataclass_fields(cls) if options is not None or _is_struct(cls) else [],
        "methods": methods,
        "attributes": attributes,
    }


def _bases(cls) -> list[str]:
    return [base.canonical_path if hasattr(base, "canonical_path") else str(base) for base in cls.bases]


def _attribute(member) -> dict[str, Any]:
    """An attribute's record: its line, kind, the classes it holds and, for a container, its items'."""
    kind = "property" if "property" in member.labels else (
        "class" if "class-attribute" in member.labels else "instance")
    types = annotation_types(member.annotation) if member.annotation is not None else _constructed(member.value)
    items = element_types(member.annotation) if member.annotation is not None else []
    record = {"line": member.lineno or 0, "kind": kind, "types": types, "items": items}
    if admits_none(member.annotation) or str(member.value) == "None":
        record["nullable"] = True  # it may hold None: a probe of it handles that
    return record


def _read_attribute(name: str, member, bodies: dict[str, BodyFacts], methods: dict[str, Any],
                    attributes: dict[str, Any], set_later: set[str]) -> None:
    """An attribute member into `attributes`; a property with a body into `methods` as well."""
    record = attributes[name] = _attribute(member)
    if record["kind"] == "instance" and not record["types"] and str(member.value) == "None":
        set_later.add(name)  # `self.x = None` in __init__: its class may come from another method
    if record["kind"] == "property" and name in bodies:
        methods.setdefault(name, {"line": member.lineno or 0, "params": [], "decorators": ["property"],
                                  "returns": record["types"], **bodies[name].to_json(),
                                  **({"nullable": True} if record.get("nullable") else {})})


def _add_written_attributes(bodies: dict[str, BodyFacts], attributes: dict[str, Any], set_later: set[str]) -> None:
    """Instance attributes assigned in any method, not only __init__; in name order, so the
    record does not depend on the process's string hashing."""
    for body in bodies.values():
        for written in sorted(body.writes):
            if written not in attributes:
                attributes[written] = {"line": 0, "kind": "instance", "types": []}
                set_later.add(written)


def _add_constructed_types(bodies: dict[str, BodyFacts], attributes: dict[str, Any], set_later: set[str],
                           module_name: str) -> None:
    """griffe types only what __init__ assigns; `self.x = Thing(...)` elsewhere is read here,
    the name resolved later from the module's own bindings."""
    for method in sorted(bodies):
        for written, callees in sorted(bodies[method].constructed.items()):
            if written in set_later:
                record = attributes[written]
                record["types"] = sorted({*record["types"], *(f"{module_name}.{callee}" for callee in callees)})


def extract_module(module_name: str, relpath: str, code: str, known_bodies: dict | None = None) -> dict[str, Any]:
    """A record of the module's top level: its bindings, star imports and `__all__`, and what
    its classes and functions define (signatures, members, bodies). `known_bodies`: body
    facts already computed, by source lines (bodies.module_bodies)."""
    # griffe links the parsed tree's nodes to their parents: the tree is freed by the collector.
    with collector_paused(collect_after=True):
        try:
            return _extract(module_name, relpath, code, known_bodies)
        except Exception as error:  # the error boundary: a bug costs this module, not the run
            problem = problem_for(error, "", f"analyse {module_name}", depth=lambda: source_depth(code))
            return {"opaque": problem.error, "problem": [problem.stage, problem.error, problem.internal]}


def _members(module, bodies: dict[str, dict[str, BodyFacts]], module_name: str) -> tuple[dict, list, dict, dict]:
    """(bindings, star imports, classes, functions) of a module griffe visited."""
    bindings: dict[str, Any] = {}
    wildcards: list[str] = []
    classes: dict[str, Any] = {}
    functions: dict[str, Any] = {}
    for name, member in module.members.items():
        if member.is_alias and name.endswith("/*"):
            wildcards.append(member.target_path)
            continue
        bindings[name] = _binding(member)
        if member.is_alias:
            continue
        if member.is_class:
            classes[name] = _class(member, bodies.get(name, {}), module_name)
        elif member.is_function:
            functions[name] = _function(member, bodies.get("", {}).get(name))
    return bindings, wildcards, classes, functions


def _add_dynamic_attributes(tree: ast.Module, bindings: dict[str, Any], classes: dict[str, Any]) -> dict[str, str]:
    """Attributes set by name at run time (toplevel.dynamic_setters): a literal name is one more
    attribute; any other makes the owner's attributes unknown beyond what is declared. Returns
    why each owner's attributes are not known (the module's under MODULE)."""
    literal, dynamic = dynamic_setters(tree)
    for owner, names in literal.items():
        if owner == MODULE:
            for name, (line, _) in names.items():
                bindings.setdefault(name, {"kind": "attribute", "line": line})
        elif owner in classes:
            attributes = classes[owner]["attributes"]
            for name, (line, kind) in names.items():
                if name not in classes[owner]["methods"]:
                    attributes.setdefault(name, {"line": line, "kind": kind, "types": []})
    for owner, why in dynamic.items():
        if owner in classes:
            classes[owner]["dynamic"] = why
    return dynamic


def _exports(module, tree: ast.Module) -> Any:
    """The module's `__all__`: griffe's reading, or evaluated_exports' where griffe's is wrong."""
    exports: Any = module.exports
    if exports is not None and not all(isinstance(item, str) for item in exports):
        return None  # built from other modules' __all__: treat every public name as exported
    if (computed := evaluated_exports(tree)) is not None:
        return computed  # a comprehension over globals(), or parts griffe reads as an empty list
    return exports


def _extract(module_name: str, relpath: str, code: str, known_bodies: dict | None) -> dict[str, Any]:
    import griffe

    filepath = Path(relpath)
    try:
        # One parse for griffe and for the bodies: griffe.visit would parse the code itself,
        # so its Visitor is given the tree (as griffe.visit does after compiling it).
        tree = parse_quietly(code, str(filepath))
    except (SyntaxError, ValueError) as error:  # a newer grammar, NUL bytes, too deep: opaque, and said so
        return {"opaque": why_unparsable(error)}
    try:
        # No extensions: griffe's only built-in one (dataclasses) acts on packages griffe loads
        # itself, never on one visited module, and dispatching its hooks at every node cost a
        # tenth of the extraction (dataclass fields are read here: _dataclass_fields).
        visitor = griffe.Visitor(module_name.rsplit(".", 1)[-1], filepath, code, griffe.Extensions(),
                                 _parent_chain(module_name, relpath))
        with indexed_next_sibling():  # griffe's own lookup is quadratic in a module's statements
            visitor.visit(tree)
        module = visitor.current.module
    except Exception as error:  # a file griffe cannot read is opaque, not empty
        return {"opaque": numbered_lines(f"griffe cannot analyse it: {type(error).__name__}: {error}")[0]}
    bodies = module_bodies(tree, lines=False, code=code, known=known_bodies)  # the lines on demand: UpstreamModel.body_lines
    bindings, wildcards, classes, functions = _members(module, bodies, module_name)
    dynamic = _add_dynamic_attributes(tree, bindings, classes)
    exports = _exports(module, tree)
    # Which lines each definition has (UpstreamModel.body_lines): from this tree, so that no
    # module is parsed again in the checking process for the bodies a comparison reads.
    return {"bindings": bindings, "wildcards": wildcards,
            "exports": list(exports) if isinstance(exports, list | tuple) else exports,
            "classes": classes, "functions": functions, "definitions": definition_lines(tree),
            **({"dynamic": dynamic[MODULE]} if MODULE in dynamic else {})}
