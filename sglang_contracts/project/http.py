"""Requests the project sends to SGLang's HTTP server, read from its Python code.

A URL is a string, f-string or concatenation that names a server (`http://{host}:{port}/generate`,
`f"{base_url}/generate"`); its path is what follows the host, without the query. A request is a
call that takes a URL (its first argument or `url=`), directly or through a name bound to one in
the same function; its payload is the call's `json=`/`payload=` argument or its second one. An
endpoint helper is a function of the file that builds its URL from a parameter
(`f"http://{self.host}:{self.port}/{endpoint}"`) and posts its payload parameter: each call of it
with a literal endpoint in the same file is a request to that path with that payload.

Payload keys are those of the dict literal or `dict(...)` call given, or, for a name, of what the
same function binds to it (`payload = {...}`, `payload["k"] = v`). The keys of the
`sampling_params` entry are read the same way, and so are the item assignments to a name ending
in `sampling_params` anywhere in the file. Only files that mention SGLang are read.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass

from sglang_contracts.infra.pysource import PLACEHOLDER, child_nodes, parse_shared, rendered
from sglang_contracts.infra.shapes import Exactly, ListOf, Row, rows_of
from sglang_contracts.project.index import ProjectIndex, names_sglang

KEY_ROW = Row(str, int, int)  # a payload key's [name, line, col] in the table of requests
from sglang_contracts.project.positions import SourcePositions

HTTP_VERBS = {"get": "GET", "post": "POST", "put": "PUT", "delete": "DELETE", "patch": "PATCH"}
PAYLOAD_KEYWORDS = ("json", "payload")
AUTHORITY = re.compile(r"^[a-z]+://[^/]*")
SAMPLING = "sampling_params"
URL_HINT = re.compile(r"""["'][a-z]*://|\}/|\+\s*[fFrRuU]{0,2}["']/""")


@dataclass(frozen=True)
class Key:
    name: str
    line: int
    col: int


@dataclass(frozen=True)
class HttpRequest:
    path: str  # the project file
    line: int  # of the URL (or of the helper's endpoint argument)
    col: int
    route: str  # "/generate"
    method: str | None  # None when the call does not say (a helper of the project's own)
    keys: tuple[Key, ...]
    closed: bool  # every key of the payload is known
    sampling: tuple[Key, ...]


@dataclass(frozen=True)
class HttpFacts:
    requests: list[HttpRequest]
    sampling: list[tuple[str, Key]]  # (file, key) of sampling_params keys set outside a request


def http_facts(project: ProjectIndex) -> HttpFacts:
    rows = project.each_file("http-requests", _file_requests, _may_request, sys.modules[__name__])
    requests = [HttpRequest(row[1], row[2], row[3], row[4], row[5], tuple(Key(*k) for k in row[6]), row[7],
                            tuple(Key(*k) for k in row[8])) for row in rows if row[0] == "request"]
    inside = {(r.path, k) for r in requests for k in r.sampling}
    sampling = [(row[1], Key(*row[2])) for row in rows if row[0] == "sampling" and (row[1], Key(*row[2])) not in inside]
    return HttpFacts(requests, sampling)


def _may_request(text: str) -> bool:
    """Whether the file may hold a URL to a server or a sampling_params key: a string that
    starts with a scheme, a formatted or concatenated value followed by a path. A URL in a
    comment or inside prose (half of sglang's own files cite one) is no request."""
    return names_sglang(text) and (SAMPLING in text or URL_HINT.search(text) is not None)


# ["request", path, line, col, route, method, keys, closed, sampling keys] and ["sampling", path, key],
# each key [name, line, col]
@rows_of((Row(Exactly("request"), str, int, int, str, (str, None), ListOf(KEY_ROW), bool, ListOf(KEY_ROW)),
          Row(Exactly("sampling"), str, KEY_ROW)))
def _file_requests(relpath: str, text: str) -> list[list]:
    try:
        tree = parse_shared(text)
    except (SyntaxError, ValueError):
        return []  # the scanner reports the file (SGC000)
    reader = _Reader(relpath, SourcePositions(text))
    scopes = _scopes(tree)
    helpers = {}
    for scope, nodes in scopes:
        helper = reader.helper(scope, nodes) if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        if helper:
            helpers[scope.name] = helper
    found: list[list] = []
    for scope, nodes in scopes:
        found.extend(reader.requests(nodes, helpers))
        found.extend(["sampling", relpath, key] for key in reader.sampling_assignments(nodes))
    return found


def _scopes(tree: ast.Module) -> list[tuple[ast.AST, list[ast.AST]]]:
    """The module and each function, with the nodes of each that belong to no function inside it
    (a class body's statements count as the enclosing scope's): one walk over the tree."""
    found: list[tuple[ast.AST, list[ast.AST]]] = []
    pending: list[ast.AST] = [tree]
    while pending:
        scope = pending.pop()
        nodes: list[ast.AST] = []
        inner = child_nodes(scope)
        while inner:
            node = inner.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                pending.append(node)
                continue
            nodes.append(node)
            inner.extend(child_nodes(node))
        found.append((scope, nodes))
    return found


def url_path(text: str) -> str | None:
    """The path of a URL to a server (`http://h:p/generate?x=1` -> `/generate`); None for a text that
    names no server (a bare "/generate" may be anything)."""
    if "://" in text:
        path = AUTHORITY.sub("", text, count=1)
        if path == text:
            return None
    elif text.startswith(PLACEHOLDER + "/"):
        path = text[1:]
    else:
        return None
    path = path.split("?", 1)[0].split("#", 1)[0]
    return path if path.startswith("/") else None


def _in_order(found: list[list]) -> list[list]:
    return sorted(found, key=lambda key: (key[1], key[2]))


def _updates(node: ast.AST, name: str) -> bool:
    """`name.update(...)`: keys added that cannot be told."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update" \
        and isinstance(node.func.value, ast.Name) and node.func.value.id == name


def _string_key_owner(target: ast.AST) -> str | None:
    """`NAME["key"]` (a string key): NAME; None for another target."""
    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
            and isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str):
        return target.value.id
    return None


class _Reader:
    def __init__(self, relpath: str, positions: SourcePositions) -> None:
        self.relpath = relpath
        self.positions = positions

    # -- payloads ---------------------------------------------------------------------------

    def keys(self, node: ast.AST | None, scope: list[ast.AST],
             seen: frozenset[str] = frozenset()) -> tuple[list[list], bool, list[list]]:
        """(keys, closed, sampling keys) of a payload expression; `seen`: the names being followed
        (`a = {"sampling_params": b}` and `b = {"sampling_params": a}` end there)."""
        if node is None:
            return [], False, []  # no payload seen: nothing known of it
        if isinstance(node, ast.BoolOp):  # `payload or {}`
            return self._either_keys(node, scope, seen)
        if isinstance(node, ast.Dict):
            return self._dict_keys(node, scope, seen)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
            return self._keyword_keys(node, scope, seen)
        if isinstance(node, ast.Name) and node.id not in seen:
            return self._bound_keys(node.id, scope, seen | {node.id})
        return [], False, []

    def _either_keys(self, node: ast.BoolOp, scope: list[ast.AST], seen: frozenset[str]
                     ) -> tuple[list[list], bool, list[list]]:
        """`payload or {}`: the keys of every operand, closed where all are."""
        parts = [self.keys(value, scope, seen) for value in node.values]
        return ([k for p in parts for k in p[0]], all(p[1] for p in parts), [k for p in parts for k in p[2]])

    def _dict_keys(self, node: ast.Dict, scope: list[ast.AST], seen: frozenset[str]
                   ) -> tuple[list[list], bool, list[list]]:
        """A dict literal: its string keys, closed unless some key is not a string (`**other`)."""
        keys, closed, sampling = [], True, []
        for key, value in zip(node.keys, node.values):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                keys.append(self._key(key.value, key))
                if key.value == SAMPLING:
                    sampling.extend(self.keys(value, scope, seen)[0])
            else:
                closed = False
        return keys, closed, sampling

    def _keyword_keys(self, node: ast.Call, scope: list[ast.AST], seen: frozenset[str]
                      ) -> tuple[list[list], bool, list[list]]:
        """`dict(k=..., ...)`: its keywords, closed unless one is `**other`."""
        keys = [self._key(k.arg, k.value) for k in node.keywords if k.arg]
        sampling = [s for k in node.keywords if k.arg == SAMPLING for s in self.keys(k.value, scope, seen)[0]]
        return keys, all(k.arg for k in node.keywords), sampling

    def _bound_keys(self, name: str, scope: list[ast.AST], seen: frozenset[str]) -> tuple[list[list], bool, list[list]]:
        keys, closed, sampling, bound = [], True, [], False
        for node in scope:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    part = self._target_keys(node, target, name, scope, seen)
                    if part is not None:
                        keys += part[0]
                        closed &= part[1]
                        sampling += part[2]
                        bound |= part[3]
            elif _updates(node, name):
                closed = False
        return _in_order(keys), closed and bound, _in_order(sampling)

    def _target_keys(self, node: ast.Assign, target: ast.expr, name: str, scope: list[ast.AST],
                     seen: frozenset[str]) -> tuple[list[list], bool, list[list], bool] | None:
        """(keys, closed, sampling keys, binds the name) an assignment's target adds to what `name`
        holds: `name = {...}` binds it, `name["k"] = v` adds a key; None for another target."""
        if isinstance(target, ast.Name) and target.id == name:
            # `payload = other`: another name's keys are not followed (they may change between)
            aliased = isinstance(node.value, ast.Name)
            found = ([], False, []) if aliased else self.keys(node.value, scope, seen)
            return found[0], found[1] and isinstance(node.value, (ast.Dict, ast.Call)), found[2], True
        if _string_key_owner(target) == name:
            sampling = self.keys(node.value, scope, seen)[0] if target.slice.value == SAMPLING else []
            return [self._key(target.slice.value, target.slice)], True, sampling, False
        return None

    def sampling_assignments(self, scope: list[ast.AST]) -> list[list]:
        found = []
        for node in scope:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    owner = _string_key_owner(target)
                    if owner is not None and owner.endswith(SAMPLING):
                        found.append(self._key(target.slice.value, target.slice))
        return found

    def _key(self, name: str, node: ast.AST) -> list:
        position = self.positions.start(node)
        return [name, position.line, position.col]

    # -- URLs, requests, helpers ------------------------------------------------------------

    def _url_names(self, scope: list[ast.AST]) -> dict[str, ast.AST]:
        names = {}
        for node in scope:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                text = rendered(node.value)
                if text is not None and url_path(text):
                    for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                        if isinstance(target, ast.Name):
                            names[target.id] = node.value
        return names

    def _url_argument(self, call: ast.Call, names: dict[str, ast.AST]) -> ast.AST | None:
        candidates = [*call.args[:1], *(k.value for k in call.keywords if k.arg == "url")]
        for candidate in candidates:
            node = names.get(candidate.id) if isinstance(candidate, ast.Name) else candidate
            text = rendered(node) if node is not None else None
            if text is not None and url_path(text):
                return node
        return None

    @staticmethod
    def _payload(call: ast.Call) -> ast.AST | None:
        for keyword in call.keywords:
            if keyword.arg in PAYLOAD_KEYWORDS:
                return keyword.value
        return call.args[1] if len(call.args) > 1 and isinstance(call.args[1], (ast.Dict, ast.Name)) else None

    @staticmethod
    def _method(call: ast.Call) -> str | None:
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
        return HTTP_VERBS.get(name)

    def helper(self, function: ast.FunctionDef | ast.AsyncFunctionDef, scope: list[ast.AST]) -> dict | None:
        """An endpoint helper: (prefix, endpoint parameter, payload parameter, method) or None."""
        params = [a.arg for a in [*function.args.posonlyargs, *function.args.args]]
        names = self._url_names(scope)
        for node in scope:
            if isinstance(node, ast.Call):
                found = self._endpoint_call(node, names, params)
                if found is not None:
                    return found
        return None

    def _endpoint_call(self, node: ast.Call, names: dict[str, ast.AST], params: list[str]) -> dict | None:
        """A call to a URL whose path ends in a parameter of the function (`f"{base}/{endpoint}"`):
        the helper it makes of the function; None for another call."""
        url = self._url_argument(node, names) or self._templated(node, names)
        if url is None or not isinstance(url, ast.JoinedStr) or not isinstance(url.values[-1], ast.FormattedValue):
            return None
        last = url.values[-1].value
        text = rendered(url)
        path = url_path(text) if text else None
        if not (isinstance(last, ast.Name) and last.id in params and path and path.endswith("/" + PLACEHOLDER)):
            return None
        return self._helper_of(node, params, path, last.id)

    def _helper_of(self, node: ast.Call, params: list[str], path: str, endpoint: str) -> dict:
        """The helper: its URL prefix, which parameters give the endpoint and the payload, its method."""
        payload = self._payload(node)
        payload_names = {n.id for n in ast.walk(payload) if isinstance(n, ast.Name)} if payload is not None else set()
        payload_param = next((p for p in params if p in payload_names), None)
        offset = 1 if params and params[0] in ("self", "cls") else 0
        return {"prefix": path[:-1], "endpoint": endpoint, "endpoint_index": params.index(endpoint) - offset,
                "payload": payload_param,
                "payload_index": params.index(payload_param) - offset if payload_param else -1,
                "method": self._method(node)}

    def _templated(self, call: ast.Call, names: dict[str, ast.AST]) -> ast.AST | None:
        """A URL argument whose path ends in a formatted parameter (`/{endpoint}`)."""
        for candidate in [*call.args[:1], *(k.value for k in call.keywords if k.arg == "url")]:
            node = names.get(candidate.id) if isinstance(candidate, ast.Name) else candidate
            if isinstance(node, ast.JoinedStr):
                return node
        return None

    def requests(self, scope: list[ast.AST], helpers: dict[str, dict]) -> list[list]:
        names = self._url_names(scope)
        found = []
        for node in scope:
            if not isinstance(node, ast.Call):
                continue
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            url = self._url_argument(node, names)
            if url is not None:
                path = url_path(rendered(url))
                if PLACEHOLDER in path:
                    continue
                keys, closed, sampling = self.keys(self._payload(node), scope)
                position = self.positions.start(url)
                found.append(["request", self.relpath, position.line, position.col, path, self._method(node),
                              keys, closed, sampling])
            elif callee in helpers:
                found.extend(self._helper_call(node, helpers[callee], scope))
        return found

    def _helper_call(self, call: ast.Call, helper: dict, scope: list[ast.AST]) -> list[list]:
        def argument(name: str | None, index: int) -> ast.AST | None:
            for keyword in call.keywords:
                if keyword.arg == name:
                    return keyword.value
            return call.args[index] if 0 <= index < len(call.args) else None

        endpoint = argument(helper["endpoint"], helper["endpoint_index"])
        if not (isinstance(endpoint, ast.Constant) and isinstance(endpoint.value, str)):
            return []
        path = helper["prefix"] + endpoint.value.lstrip("/")
        keys, closed, sampling = self.keys(argument(helper["payload"], helper["payload_index"]), scope)
        position = self.positions.start(endpoint)
        return [["request", self.relpath, position.line, position.col, path.split("?", 1)[0], helper["method"],
                 keys, closed, sampling]]
