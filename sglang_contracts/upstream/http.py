"""One release's HTTP API, read statically: the routes of its server, how each handler reads the
request body, what the body may hold, and the keys `sampling_params` takes.

Routes are the decorators `@app.post(path)`, `@app.get(path)`, `@app.put/delete/patch(path)`,
`@app.api_route(path, methods=[...])` and the calls `app.add_api_route(path, handler, methods=[...])`
in `sglang/srt/entrypoints/http_server.py`, and those of the routers it includes
(`app.include_router(router, prefix=...)`, a router imported from another upstream module).
A handler reads its body in one of three ways, and that decides what a key the release no longer
knows does:

- `obj: GenerateReqInput` (or `Annotated[T, Body()]`, `Optional[T]`): FastAPI validates the body
  into the dataclass with pydantic, whose dataclasses ignore extra keys (and so does the schema
  0.5.15's msgspec request structs give pydantic, `extra_behavior="ignore"`): an unknown key is
  silently dropped (`ignored`), a missing required field is refused (422);
- `T(**(await request.json()))`, or `body = await request.json()` then `T(**body)`: the
  constructor raises TypeError on an unknown key (`raises`);
- `body = await request.json()` then `body.get("k")` / `body["k"]`: the handler reads the keys it
  knows and ignores the rest (`ignored`); `body["k"]` is required.

Request types are the release's own classes (dataclasses or msgspec structs), read from the
class records of the model. `sampling_params` is handed on as `SamplingParams(**params)`: an
unknown key raises unless its constructor takes `**kwargs`.
Route tables are cached per release, with its other whole-release records.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Callable

from sglang_contracts.infra.errors import ContractsError
from sglang_contracts.infra.pysource import absolute_from_imports, parse_quietly
from sglang_contracts.infra.shapes import ListOf, Row, Table, TableOf
from sglang_contracts.upstream.bodies import unparsed
from sglang_contracts.upstream.extract import STRUCT_BASES
from sglang_contracts.upstream.model import UpstreamModel

HTTP_SERVER = "sglang.srt.entrypoints.http_server"
SAMPLING_PARAMS = "sglang.srt.sampling.sampling_params.SamplingParams"
VERBS = {"get": "GET", "post": "POST", "put": "PUT", "delete": "DELETE", "patch": "PATCH"}
# Parameter annotations that are never the body: FastAPI's own objects and plain values (query
# parameters).
NOT_A_BODY = {"Request", "Response", "BackgroundTasks", "WebSocket", "int", "float", "str", "bool",
              "Optional[int]", "Optional[float]", "Optional[str]", "Optional[bool]", "dict", "Dict"}


@dataclass(frozen=True)
class Route:
    path: str
    methods: tuple[str, ...]
    handler: str
    line: int
    # "model": a typed body parameter; "construct": `T(**body)`; "dict": keys read from the JSON;
    # "": no body read that this module can see.
    body: str = ""
    request_type: str = ""  # the type's name as the handler's module writes it
    module: str = HTTP_SERVER  # where the handler is defined (an included router's module)
    keys: tuple[str, ...] = ()  # for "dict": the keys the handler reads
    required: tuple[str, ...] = ()  # for "dict": the keys read as `body["k"]`

    def matches(self, path: str) -> bool:
        own, asked = self.path.strip("/").split("/"), path.strip("/").split("/")
        return len(own) == len(asked) and all(
            mine == theirs or (mine.startswith("{") and mine.endswith("}")) for mine, theirs in zip(own, asked))


@dataclass(frozen=True)
class RequestShape:
    """What a body may hold: each accepted key and whether it must be given, and for each old key
    the release maps onto another (`self.routed_dp_rank = self.data_parallel_rank`)."""

    origin: str
    fields: dict[str, bool]  # key -> required
    open: bool  # takes `**kwargs` or has a base outside SGLang: keys beyond `fields` may be fine
    aliases: dict[str, str] = field(default_factory=dict)


@dataclass
class HttpApi:
    model: UpstreamModel
    routes: list[Route]
    # Every route is listed: no router built by a call, mounted app or unreadable router module
    # may serve more. A route is said to be gone only from a complete table.
    complete: bool = True
    # path -> its routes: each request is judged against both releases, route by route, and
    # most of a project's requests share a few paths
    _routes_of: dict[str, list[Route]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def route_for(self, path: str) -> list[Route]:
        """The routes that serve `path` (callers never change the list)."""
        found = self._routes_of.get(path)
        if found is None:
            exact = [route for route in self.routes if route.path.rstrip("/") == path.rstrip("/")]
            found = self._routes_of[path] = exact or [route for route in self.routes if route.matches(path)]
        return found

    def request_shape(self, route: Route) -> RequestShape | None:
        if route.body in ("model", "construct") and route.request_type:
            origin = self.model.resolve_class(f"{route.module}.{route.request_type}")
            return accepted_keys(self.model, origin) if origin else None
        if route.body == "dict":
            return RequestShape(f"{route.module}.{route.handler}", {key: key in route.required for key in route.keys},
                                open=False)
        return None

    def sampling_shape(self) -> RequestShape | None:
        origin = self.model.resolve_class(SAMPLING_PARAMS)
        return accepted_keys(self.model, origin) if origin else None


def accepted_keys(model: UpstreamModel, origin: str) -> RequestShape | None:
    """The keywords `origin(...)` takes: its `__init__`'s, or its dataclass/struct fields."""
    order, open_ended = model.mro(origin)
    if any("__init__" in model.class_record(owner)["methods"] for owner in order):
        return _constructor_shape(model, origin, order)
    return _fields_shape(model, origin, order, open_ended)


def _constructor_shape(model: UpstreamModel, origin: str, order: tuple[str, ...]) -> RequestShape | None:
    """accepted_keys of a class with an `__init__` of its own or inherited: its parameters."""
    signature = model.constructor(origin)
    if signature is None:
        return None
    fields = {name: not has_default for name, kind, has_default in signature.params if kind in ("pk", "ko")}
    takes_more = any(kind == "vk" for _, kind, _ in signature.params)
    return RequestShape(origin, fields, open=takes_more, aliases=_aliases(model, order, fields))


def _fields_shape(model: UpstreamModel, origin: str, order: tuple[str, ...], open_ended: bool) -> RequestShape | None:
    """accepted_keys of a class whose constructor is generated: its dataclass or struct fields."""
    # A msgspec struct's generated constructor refuses unknown keywords like a dataclass's.
    struct = any(base in STRUCT_BASES for owner in order for base in model.class_record(owner)["bases"])
    fields = {}
    for owner in reversed(order):
        declared = model.class_record(owner)["fields"]
        if not declared and struct:
            # The class records give fields only to direct `msgspec.Struct` subclasses; a struct
            # deriving from another (0.5.15's `UpdateWeightsFromTensorReqInput(BaseReq)`) is read here.
            module_name, _, class_name = owner.rpartition(".")
            declared = _module_classes(model, module_name)["annotated"].get(class_name, [])
        for name, has_default, *_ in declared:
            fields[name] = not has_default
    if not fields:
        return None
    return RequestShape(origin, fields, open=open_ended and not struct, aliases=_aliases(model, order, fields))


def _aliases(model: UpstreamModel, order: tuple[str, ...], fields: dict[str, bool]) -> dict[str, str]:
    """Old keys a class's own methods copy onto another field: `self.new = self.old` (or under
    `if self.new is None:`), the way deprecated keys are kept working."""
    found: dict[str, str] = {}
    for owner in order:
        module_name, _, class_name = owner.rpartition(".")
        for old_key, new_key in _module_classes(model, module_name)["aliases"].get(class_name, {}).items():
            if old_key in fields and new_key in fields and old_key != new_key:
                found.setdefault(old_key, new_key)
    return found


def _module_classes(model: UpstreamModel, module_name: str) -> dict[str, dict[str, Any]]:
    return _cached(model, "classes", module_name, _read_classes, CLASSES_TABLE)


def _read_classes(code: str) -> dict[str, dict[str, Any]]:
    """Per top-level class: the `self.new = self.old` copies its methods make, and its class-level
    annotated names with whether each has a default (`ClassVar`s left out)."""
    tree = _parsed(code)
    aliases: dict[str, dict[str, str]] = {}
    annotated: dict[str, list[list[Any]]] = {}
    for node in tree.body if tree is not None else ():
        if not isinstance(node, ast.ClassDef):
            continue
        annotated[node.name] = _annotated_names(node)
        for inner in ast.walk(node):
            if _is_self_copy(inner):
                aliases.setdefault(node.name, {})[_self_attr(inner.value)] = _self_attr(inner.targets[0])
    return {"aliases": aliases, "annotated": annotated}


def _annotated_names(node: ast.ClassDef) -> list[list[Any]]:
    """[name, whether it has a default] of each class-level annotated name but the `ClassVar`s."""
    return [[item.target.id, item.value is not None] for item in node.body
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            and "ClassVar" not in unparsed(item.annotation)]


def _is_self_copy(node: ast.AST) -> bool:
    """`self.new = self.old`."""
    return isinstance(node, ast.Assign) and len(node.targets) == 1 and bool(_self_attr(node.targets[0])) \
        and bool(_self_attr(node.value))


def _self_attr(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def http_api(model: UpstreamModel) -> HttpApi | None:
    """The release's HTTP API; None when it has no HTTP server module. Raises ContractsError when
    the module is there but yields no route: an extraction error, never a clean report."""
    if not model.module_exists(HTTP_SERVER):
        return None
    table = _cached(model, "routes", HTTP_SERVER, _read_routes, ROUTE_TABLE)
    routes = [_route(raw, HTTP_SERVER, "") for raw in table["routes"]]
    complete = not table["opaque"]
    for included, prefix in table["included"]:
        found = _included_routes(model, included, prefix)
        complete = complete and found is not None
        routes.extend(found or [])
    if not routes:
        raise ContractsError(f"{model.release.label}: no route could be read from {HTTP_SERVER}; "
                             "refusing to judge HTTP contracts on nothing")
    return HttpApi(model, routes, complete)


def _included_routes(model: UpstreamModel, dotted: str, prefix: str) -> list[Route] | None:
    """The routes of a router the server includes (`from M import router as r; app.include_router(r)`);
    None when its module cannot be read."""
    symbol = model.resolve_path(dotted)
    module_name, _, name = (symbol.origin if symbol.found and symbol.origin else dotted).rpartition(".")
    if not model.module_exists(module_name):
        return None
    table = _cached(model, "routes", module_name, _read_routes, ROUTE_TABLE)
    return [_route(raw, module_name, prefix + table["prefixes"].get(name, ""))
            for raw in table["routes"] if raw.get("owner") == name]


def _route(raw: dict[str, Any], module_name: str, prefix: str) -> Route:
    return Route(path=prefix + raw["path"], methods=tuple(raw["methods"]), handler=raw["handler"], line=raw["line"],
                 body=raw["body"], request_type=raw["request_type"], module=module_name, keys=tuple(raw["keys"]),
                 required=tuple(raw["required"]))


def _module_source(model: UpstreamModel, module_name: str) -> str | None:
    record = model.module(module_name)
    return model.tree.readable_source(record.relpath) if record is not None and record.relpath else None


# What _read_classes and _read_routes make: the shapes their cached tables are read back as.
CLASSES_TABLE = Table(aliases=TableOf(TableOf(str)), annotated=TableOf(ListOf(Row(str, bool))))
_ROUTE = Table(path=str, methods=ListOf(str), handler=str, line=int, body=str, request_type=(str, None),
               keys=ListOf(str), required=ListOf(str), optional={"owner": str})
ROUTE_TABLE = Table(routes=ListOf(_ROUTE), included=ListOf(Row(str, str)), prefixes=TableOf(str), opaque=ListOf(int))


def _cached(model: UpstreamModel, kind: str, module_name: str, read: Callable[[str], Any], shape: Any) -> Any:
    """A table `read` from one module's source, of `shape`, cached with the release's other
    records (for a release whose content cannot change: the module's source is then not even read)."""
    return model.whole_release_search(f"http {kind} {module_name}",
                                      lambda: read(_module_source(model, module_name) or ""), shape)


def _parsed(code: str) -> ast.Module | None:
    try:
        return parse_quietly(code)
    except (SyntaxError, ValueError, RecursionError):  # the model reports the module's own problem
        return None


def _read_routes(code: str) -> dict[str, Any]:
    """The route table of one module: its routes (with the router each is on), the routers of
    other modules it includes, and the prefix each of its own routers was made with."""
    tree = _parsed(code)
    if tree is None or not code.strip():  # unreadable (or nothing to read): may serve anything
        return {"routes": [], "included": [], "prefixes": {}, "opaque": [1]}
    imported = absolute_from_imports(tree)
    functions = _functions_by_name(tree)
    table: dict[str, Any] = {"routes": [], "included": [], "prefixes": {}, "opaque": []}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            table["routes"].extend(_decorated_routes(node))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            _read_router_call(node, functions, imported, table)
        elif _makes_router(node):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    table["prefixes"][target.id] = _keyword_text(node.value, "prefix")
    return table


def _functions_by_name(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every function of the module by name (the last of a name wins)."""
    return {node.name: node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _decorated_routes(handler: ast.FunctionDef | ast.AsyncFunctionDef) -> list[dict[str, Any]]:
    """The routes a function's decorators make of it (`@app.post("/generate")`)."""
    return [{**found, **_body_of(handler), "handler": handler.name, "line": handler.lineno}
            for found in map(_route_of, handler.decorator_list) if found]


def _read_router_call(node: ast.Call, functions: dict[str, ast.AST], imported: dict[str, str],
                      table: dict[str, Any]) -> None:
    """`r.add_api_route(path, handler)`, `app.include_router(r)`, `app.mount(...)` into the route table."""
    if node.func.attr == "add_api_route" and len(node.args) >= 2 and _text(node.args[0]) is not None:
        table["routes"].append(_added_route(node, functions))
    elif node.func.attr in ("include_router", "mount"):
        # A router imported by name is followed; any other (built by a call, a mounted app)
        # may serve routes this table cannot list.
        if node.func.attr == "include_router" and node.args and isinstance(node.args[0], ast.Name) \
                and node.args[0].id in imported:
            table["included"].append([imported[node.args[0].id], _keyword_text(node, "prefix")])
        else:
            table["opaque"].append(node.lineno)


def _added_route(node: ast.Call, functions: dict[str, ast.AST]) -> dict[str, Any]:
    """The route of `r.add_api_route(path, handler, ...)`, the handler read when it is defined here."""
    handler = functions.get(unparsed(node.args[1]).rsplit(".", 1)[-1])
    return {"path": _text(node.args[0]), "methods": _methods(node, "GET"),
            "owner": unparsed(node.func.value), **(_body_of(handler) if handler else _no_body()),
            "handler": handler.name if handler else unparsed(node.args[1]), "line": node.lineno}


def _makes_router(node: ast.AST) -> bool:
    """`name = APIRouter(...)` (or `fastapi.APIRouter(...)`)."""
    return isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
        and unparsed(node.value.func).rsplit(".", 1)[-1] == "APIRouter"


def _route_of(decorator: ast.AST) -> dict[str, Any] | None:
    if not (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute) and decorator.args):
        return None
    path = _text(decorator.args[0])
    verb = decorator.func.attr
    if path is None or not path.startswith("/"):
        return None
    if verb in VERBS:
        methods = [VERBS[verb]]
    elif verb == "api_route":
        methods = _methods(decorator, "GET")
    else:
        return None
    return {"path": path, "methods": methods, "owner": unparsed(decorator.func.value)}


def _methods(call: ast.Call, default: str) -> list[str]:
    for keyword in call.keywords:
        if keyword.arg == "methods" and isinstance(keyword.value, (ast.List, ast.Tuple, ast.Set)):
            return sorted({_text(e).upper() for e in keyword.value.elts if _text(e)})
    return [default]


def _text(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _keyword_text(call: ast.Call, name: str) -> str:
    return next((_text(k.value) or "" for k in call.keywords if k.arg == name), "")


def _no_body() -> dict[str, Any]:
    return {"body": "", "request_type": "", "keys": [], "required": []}


def _body_of(handler: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, Any]:
    """How a handler reads its body (see the module's docstring)."""
    body_type = _typed_body(handler)
    if body_type:
        return {**_no_body(), "body": "model", "request_type": body_type}
    json_names = _json_names(handler)
    constructed = _constructed_from_json(handler, json_names)
    if constructed is not None:
        return {**_no_body(), "body": "construct", "request_type": constructed}
    keys = _json_keys(handler, json_names)
    if keys:
        return {"body": "dict", "request_type": "", "keys": sorted(keys),
                "required": sorted(key for key, required in keys.items() if required)}
    return _no_body()


def _typed_body(handler: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The class of the handler's first parameter annotated as the body (_body_type); "" when none is."""
    for argument in [*handler.args.posonlyargs, *handler.args.args, *handler.args.kwonlyargs]:
        body_type = _body_type(argument.annotation)
        if body_type:
            return body_type
    return ""


def _json_names(handler: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names the handler gives the request's JSON (`body = await request.json()`)."""
    json_names: set[str] = set()
    for node in ast.walk(handler):
        if isinstance(node, ast.Assign) and _reads_json(node.value):
            json_names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return json_names


def _constructed_from_json(handler: ast.FunctionDef | ast.AsyncFunctionDef, json_names: set[str]) -> str | None:
    """`T` of the first `T(**body)` whose spread is the request's JSON (read there or into `json_names`)."""
    for node in ast.walk(handler):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            spread = [k.value for k in node.keywords if k.arg is None]
            if any(_is_json(value, json_names) for value in spread):
                return node.func.id
    return None


def _is_json(value: ast.expr, json_names: set[str]) -> bool:
    return _reads_json(value) or (isinstance(value, ast.Name) and value.id in json_names)


def _json_keys(handler: ast.FunctionDef | ast.AsyncFunctionDef, json_names: set[str]) -> dict[str, bool]:
    """The keys the handler reads from the JSON it holds in `json_names`, each with whether it is
    required (`body["k"]`) or not (`body.get("k")`)."""
    keys: dict[str, bool] = {}
    for node in ast.walk(handler):
        if (key := _got_key(node, json_names)) is not None:
            keys.setdefault(key, False)
        elif (key := _subscripted_key(node, json_names)) is not None:
            keys[key] = True
    return keys


def _got_key(node: ast.AST, json_names: set[str]) -> str | None:
    """"k" of `body.get("k", ...)` for a name in `json_names`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
            and isinstance(node.func.value, ast.Name) and node.func.value.id in json_names and node.args:
        return _text(node.args[0]) or None
    return None


def _subscripted_key(node: ast.AST, json_names: set[str]) -> str | None:
    """"k" of a read `body["k"]` for a name in `json_names`."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in json_names \
            and isinstance(node.ctx, ast.Load):
        return _text(node.slice) or None
    return None


def _body_type(annotation: ast.AST | None) -> str:
    """The class a parameter annotation names as the body: `T`, `Annotated[T, Body()]`, `Optional[T]`."""
    while isinstance(annotation, ast.Subscript):
        head = unparsed(annotation.value).rsplit(".", 1)[-1]
        inner = annotation.slice.elts[0] if isinstance(annotation.slice, ast.Tuple) else annotation.slice
        if head not in ("Annotated", "Optional"):
            return ""
        annotation = inner
    if isinstance(annotation, ast.Name) and annotation.id not in NOT_A_BODY and annotation.id[:1].isupper():
        return annotation.id
    return ""


def _reads_json(node: ast.AST) -> bool:
    """`await request.json()` (or `request.json()`)."""
    if isinstance(node, ast.Await):
        node = node.value
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "json" \
        and not node.args
