"""The field set of one release's `ServerArgs`, read statically in either of its shapes.

Up to 0.5.19 `ServerArgs` is a dataclass in `sglang/srt/server_args.py`. From 0.5.20 its
fields are declared on namespace classes (`msgspec.Struct` subclasses under
`sglang/srt/arg_groups/fields/`), listed in a module-level list that is handed to
`collect_input_fields(...)`, and assembled with `msgspec.defstruct("ServerArgs", ...)`; the
name `ServerArgs` then binds the assembled record, not a class statement. Both shapes are
read here from the extracted class records; the list and the call are found with `ast`.
A release whose `ServerArgs` yields no field (a plain class) is FieldsUnreadable, never a clean
report: one SGC000 says so (contracts/serverargs.py field_sets).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from sglang_contracts.infra.errors import ContractsError
from sglang_contracts.infra.pysource import parse_quietly
from sglang_contracts.upstream.bodies import unparsed
from sglang_contracts.upstream.model import UpstreamModel

SERVER_ARGS = "sglang.srt.server_args.ServerArgs"
COLLECTOR = "collect_input_fields"


class FieldsUnreadable(ContractsError):
    """A release has a `ServerArgs`, but no field can be read from it (a plain class, say)."""

    def __init__(self, release: str, origin: str) -> None:
        self.release = release
        self.why = f"{origin} is neither a dataclass nor namespaces assembled by {COLLECTOR}"
        super().__init__(f"{release}: no ServerArgs field could be read ({self.why}); "
                         "refusing to judge ServerArgs contracts on nothing")


@dataclass(frozen=True)
class Field:
    name: str
    owner: str  # the class that declares it (a namespace class, or ServerArgs itself)
    line: int


@dataclass(frozen=True)
class FieldSet:
    origin: str  # where `ServerArgs` is bound in the release
    shape: str  # "dataclass" or "namespaces"
    fields: dict[str, Field]

    def __contains__(self, name: str) -> bool:
        return name in self.fields

    def __len__(self) -> int:
        return len(self.fields)


def _declared(model: UpstreamModel, origin: str) -> dict[str, Field]:
    """Fields a class and its upstream bases declare (base classes first)."""
    found: dict[str, Field] = {}
    for owner in reversed(model.mro(origin)[0]):
        record = model.class_record(owner)
        for name, *rest in record["fields"]:
            if len(rest) > 2 and not rest[2]:
                continue  # an InitVar: a parameter of __init__, not a field
            line = record["attributes"].get(name, {}).get("line", 0) or record["line"]
            found[name] = Field(name, owner, line)
    return found


def _namespace_list(code: str) -> tuple[list[str], dict[str, int]]:
    """The names in the list handed to `collect_input_fields(LIST)` at module level, and the
    class-level annotated names of the module's own `class ServerArgs` (with their lines)."""
    try:
        tree = parse_quietly(code)
    except (SyntaxError, ValueError, RecursionError):  # RecursionError: nested too deep to parse
        return [], {}
    lists: dict[str, list[str]] = {}
    collected: list[str] = []
    own: dict[str, int] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and isinstance(statement.value, (ast.List, ast.Tuple)):
            _add_named_list(statement, lists)
        if isinstance(statement, ast.ClassDef) and statement.name == "ServerArgs":
            own.update(_own_annotated_lines(statement))
        if isinstance(statement, (ast.Assign, ast.Expr)):
            collected += _collected_lists(statement)
    return [name for listed in collected for name in lists.get(listed, [])], own


def _add_named_list(statement: ast.Assign, lists: dict[str, list[str]]) -> None:
    """`NAME = [A, b.B, ...]`: the names it lists, as written, under each name it is given."""
    names = [unparsed(element) for element in statement.value.elts if isinstance(element, (ast.Name, ast.Attribute))]
    for target in statement.targets:
        if isinstance(target, ast.Name):
            lists[target.id] = names


def _own_annotated_lines(cls: ast.ClassDef) -> dict[str, int]:
    """The line of each class-level annotated name of the class but the `ClassVar`s."""
    return {item.target.id: item.lineno for item in cls.body
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            and "ClassVar" not in unparsed(item.annotation)}


def _collected_lists(statement: ast.stmt) -> list[str]:
    """NAME of each `collect_input_fields(NAME)` in the statement, in walk order."""
    return [node.args[0].id for node in ast.walk(statement)
            if isinstance(node, ast.Call) and unparsed(node.func).rsplit(".", 1)[-1] == COLLECTOR
            and node.args and isinstance(node.args[0], ast.Name)]


def _namespace_fields(model: UpstreamModel, module_name: str, origin: str) -> dict[str, Field]:
    """The fields of a `ServerArgs` collected from namespace classes (`collect_input_fields`),
    then those the module's own `class ServerArgs` annotates."""
    record = model.module(module_name)
    code = model.tree.readable_source(record.relpath) if record is not None and record.relpath else ""
    names, own = _namespace_list(code or "")
    fields: dict[str, Field] = {}
    for name in names:
        namespace = model.resolve_class(f"{module_name}.{name}") or model.resolve_class(name)
        if namespace is not None:
            fields.update(_declared(model, namespace))
    fields.update({name: Field(name, origin, line) for name, line in own.items()})
    return fields


def server_args_fields(model: UpstreamModel) -> FieldSet | None:
    """The release's `ServerArgs` fields; None when the release has no `ServerArgs` at all
    (the import contracts report that). Raises FieldsUnreadable when it has one but no field
    can be read from it."""
    symbol = model.resolve_path(SERVER_ARGS)
    if not symbol.found or not symbol.origin:
        return None
    module_name, _, _ = symbol.origin.rpartition(".")
    if symbol.kind == "class":
        fields = _declared(model, symbol.origin)
        shape = "dataclass"
    else:
        fields = _namespace_fields(model, module_name, symbol.origin)
        shape = "namespaces"
    if not fields:
        raise FieldsUnreadable(model.release.label, symbol.origin)
    return FieldSet(symbol.origin, shape, fields)
