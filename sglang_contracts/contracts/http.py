"""HTTP contracts (SGC1101-SGC1105): the routes the project calls on SGLang's server, the keys it
posts there and the `sampling_params` it sends.

The routes and request shapes come from upstream/http.py, the requests from project/http.py.
A request is judged only where its route was served by the old release. What a key the new
release no longer knows does decides the rule: the handler builds its request type with
`T(**body)` (TypeError: SGC1102, an error), or FastAPI validates the body into a dataclass and
drops what it does not know, or the handler reads only the keys it wants (SGC1103, a warning).
"""

from __future__ import annotations

from typing import Iterator

from sglang_contracts.contracts.base import CheckContext, Process, Reads, contract
from sglang_contracts.diagnostics import Diagnostic, finding_at
from sglang_contracts.patch.release import PatchedTree
from sglang_contracts.project.http import SAMPLING, HttpFacts, HttpRequest, Key, http_facts
from sglang_contracts.upstream.http import HttpApi, RequestShape, Route, http_api
from sglang_contracts.upstream.model import UpstreamModel


def _apis(ctx: CheckContext) -> tuple[HttpApi | None, HttpApi | None, HttpFacts]:
    def compute(context: CheckContext):
        facts = http_facts(context.project)
        if not facts.requests:
            return None, None, facts
        return http_api(context.old), http_api(context.new), facts

    return ctx.shared("http-apis", compute)


def _served(api: HttpApi, request: HttpRequest) -> list[Route]:
    routes = api.route_for(request.route)
    if request.method is None:
        return routes
    return [route for route in routes if request.method in route.methods]


def _judged(ctx: CheckContext) -> Iterator[tuple[HttpRequest, list[Route], list[Route]]]:
    """Each distinct request whose route the old release served, with the routes of both."""
    old, new, facts = _apis(ctx)
    if old is None or new is None:
        return
    seen = set()
    for request in facts.requests:
        if request in seen:
            continue
        seen.add(request)
        old_routes = _served(old, request)
        if old_routes:
            yield request, old_routes, _served(new, request)


def _served_by_the_stack(model: UpstreamModel, route: Route) -> bool:
    """Does the old release serve the route only through the project's own patch stack (slime's
    `/pull_weights`)? Then whether it survives is the patch's contract (SGC901), not upstream's."""
    tree = model.tree
    relpath = model.relpath_of(route.module)
    if not isinstance(tree, PatchedTree) or relpath is None or relpath not in tree.patched:
        return False
    stock = tree.base.readable_source(relpath) or ""
    return route.path not in stock


@contract("SGC1101", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def http_route_gone(ctx: CheckContext) -> Iterator[Diagnostic]:
    _, new, _ = _apis(ctx)
    reported = set()
    for request, old_routes, new_routes in _judged(ctx):
        where = (request.path, request.line, request.col)
        if new_routes or where in reported or not new.complete \
                or all(_served_by_the_stack(ctx.old, route) for route in old_routes):
            continue
        reported.add(where)
        other = new.route_for(request.route)
        if other:
            change = f"no longer accepts {request.method} (it takes {', '.join(other[0].methods)})"
        else:
            change = "is no longer served"
        yield finding_at("SGC1101", request.path, request.line, request.col, request.route,
                         route=request.route, change=change, old=ctx.old_version, new=ctx.new_version)


def _shapes(ctx: CheckContext, old_routes: list[Route], new_routes: list[Route]):
    old, new, _ = _apis(ctx)
    return old.request_shape(old_routes[0]), new.request_shape(new_routes[0])


def _accepts(shape: RequestShape, key: str) -> bool:
    return key in shape.fields or shape.open


def _replacement(old_shape: RequestShape, new_shape: RequestShape, key: str) -> str:
    successor = old_shape.aliases.get(key)
    if successor and successor in new_shape.fields:
        return f"; the old release copied it onto {successor}: send that instead"
    return ""


@contract("SGC1102", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def http_request_key_rejected(ctx: CheckContext) -> Iterator[Diagnostic]:
    yield from _key_findings(ctx, rejected=True)


@contract("SGC1103", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def http_request_key_ignored(ctx: CheckContext) -> Iterator[Diagnostic]:
    yield from _key_findings(ctx, rejected=False)


def _dropped(request, old_shape: RequestShape, new_shape: RequestShape) -> list:
    """The keys of the payload the old request type read and the new one does not take."""
    return [key for key in dict.fromkeys(request.keys)
            if key.name in old_shape.fields and not _accepts(new_shape, key.name)]


def _newly_required(request, old_shape: RequestShape, new_shape: RequestShape) -> list[str]:
    """The keys the new request type requires (and the old did not) that a closed payload lacks."""
    if not request.closed:
        return []
    given = {key.name for key in request.keys}
    return [name for name, required in new_shape.fields.items()
            if required and name not in given and not old_shape.fields.get(name, False)]


def _key_findings(ctx: CheckContext, rejected: bool) -> Iterator[Diagnostic]:
    code = "SGC1102" if rejected else "SGC1103"
    for request, old_routes, new_routes in _judged(ctx):
        if not new_routes or (new_routes[0].body == "construct") != rejected:
            continue
        old_shape, new_shape = _shapes(ctx, old_routes, new_routes)
        if old_shape is None or new_shape is None:
            continue
        # A dropped key beside a newly required one the payload lacks (0.5.18 renamed the LoRA
        # request's required serialized_tensors to serialized_named_tensors): not ignored but
        # rejected, an error, reported here once for both (SGC1104 then leaves the request).
        missing = _newly_required(request, old_shape, new_shape)
        effect = (f"the request is rejected, since it now requires {', '.join(missing)}, which the payload does not send"
                  if missing else "it is silently ignored")
        for key in _dropped(request, old_shape, new_shape):
            yield finding_at(code, request.path, key.line, key.col, f"{new_shape.origin}.{key.name}",
                             severity="error" if missing else None, effect=effect,
                             key=key.name, route=request.route, request_type=new_shape.origin.rsplit(".", 1)[-1],
                             hint=_replacement(old_shape, new_shape, key.name),
                             old=ctx.old_version, new=ctx.new_version)


@contract("SGC1104", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def http_required_key_missing(ctx: CheckContext) -> Iterator[Diagnostic]:
    for request, old_routes, new_routes in _judged(ctx):
        if not new_routes or not request.closed:
            continue
        old_shape, new_shape = _shapes(ctx, old_routes, new_routes)
        if old_shape is None or new_shape is None:
            continue
        missing = _newly_required(request, old_shape, new_shape)
        if missing and _dropped(request, old_shape, new_shape):
            continue  # one break, one finding: SGC1102/SGC1103 report it at the dropped key
        if missing:
            yield finding_at("SGC1104", request.path, request.line, request.col, new_shape.origin,
                             keys=", ".join(missing), route=request.route,
                             request_type=new_shape.origin.rsplit(".", 1)[-1],
                             old=ctx.old_version, new=ctx.new_version)


def _sampled_keys(ctx: CheckContext, old_api: HttpApi, facts: HttpFacts) -> list[tuple[str, Key]]:
    """(path, key) of each sampling parameter the project sends to a route that took them."""
    sampled: list[tuple[str, Key]] = []
    files = set()
    for request, old_routes, _ in _judged(ctx):
        shape = old_api.request_shape(old_routes[0])
        if shape is not None and SAMPLING in shape.fields:
            files.add(request.path)
            sampled.extend((request.path, key) for key in request.sampling)
    # Assignments to a `sampling_params` dict count in files that send one to the server.
    sampled.extend((path, key) for path, key in facts.sampling if path in files)
    return sampled


@contract("SGC1105", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def sampling_param_removed(ctx: CheckContext) -> Iterator[Diagnostic]:
    old_api, new_api, facts = _apis(ctx)
    if old_api is None or new_api is None:
        return
    old_shape, new_shape = old_api.sampling_shape(), new_api.sampling_shape()
    if old_shape is None or new_shape is None or new_shape.open:
        return
    for path, key in dict.fromkeys(_sampled_keys(ctx, old_api, facts)):
        if key.name in old_shape.fields and key.name not in new_shape.fields:
            yield finding_at("SGC1105", path, key.line, key.col, f"{new_shape.origin}.{key.name}", key=key.name,
                             old=ctx.old_version, new=ctx.new_version)
