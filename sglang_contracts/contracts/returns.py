"""Signature contracts beyond parameters (SGC206-SGC209): whether a callable is a coroutine
function, and the shape of the tuple it returns, both ways across the project boundary.

- The project calls upstream (SGC206, SGC207): a function that became `async def` returns a
  coroutine that never runs where the project calls it without `await`; one that became a
  plain `def` makes the project's `await` raise TypeError; `a, b, c = f()` raises once `f`
  returns a tuple of another length, and `a, b = f()`, `f()[0]` and `for x in f()` once it
  returns a dataclass (0.5.7's `ModelRunner.forward` -> `ModelRunnerOutput`) where it
  returned a tuple; `f().name` once it returns a tuple where it returned an object.
- Upstream calls the project's override (SGC208, SGC209): the base method's return shape
  changed (its annotation, or its upstream callers now unpack `a, b = self.m(...)`) and the
  override still returns the old one; or the base became async (or stopped being) and the
  override did not follow, so upstream's `await self.m()` raises or its coroutine never runs.

A shape is read from the body when every `return` is a tuple display of one length (over
the annotation: a stale `Tuple[A, B, C]` above `return a, b, c, d` says less than the body),
else from the return annotation (`tuple[A, B]`, or a class of SGLang's that is no sequence);
anything else is unknown and never judged.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Iterator

from sglang_contracts.contracts.base import CheckContext, Process, Reads, contract
from sglang_contracts.analysis.hints import taken_in
from sglang_contracts.analysis.resolve import ProjectClass, Resolver, project_view, resolvers
from sglang_contracts.analysis.overrides import overrides
from sglang_contracts.diagnostics import Diagnostic, finding
from sglang_contracts.infra.markdown import code_span
from sglang_contracts.project.facts import CallFact, FileFacts
from sglang_contracts.upstream.model import Member, UpstreamModel

# Return annotations of a plain function that still hands back something awaitable.
AWAITABLE_WORDS = ("Awaitable", "Coroutine", "Future", "Task", "Deferred")


def _record(resolver: Resolver, facts: FileFacts, call: CallFact) -> tuple[str, dict[str, Any]] | None:
    """(owner, record) of the upstream function or method a project call reaches; None for a
    constructor or what cannot be resolved."""
    callee = resolver.callee_at(facts, call)
    if callee is None or callee.signature.dataclass or callee.signature.owner.endswith(".__init__"):
        return None
    record = callee.member.record if callee.member is not None \
        else resolver.model.callable_record(callee.signature.owner)
    return (callee.signature.owner, record) if record is not None else None


def _display(owner: str) -> str:
    parts = owner.split(".")
    return ".".join(parts[-2:]) if len(parts) > 1 and parts[-2][:1].isupper() else parts[-1]


def _awaitable(record: dict[str, Any]) -> bool:
    return any(word in record.get("annotation", "") for word in AWAITABLE_WORDS)


def _call_pairs(ctx: CheckContext) -> Iterator[tuple[FileFacts, CallFact, str, dict[str, Any], dict[str, Any]]]:
    old_resolver, new_resolver = resolvers(ctx)
    for facts in ctx.project.files.values():
        for call in facts.calls:
            old = _record(old_resolver, facts, call)
            if old is None:
                continue
            new = _record(new_resolver, facts, call) or _taken_in(ctx, old[0])
            if new is None:
                continue
            yield facts, call, new[0], old[1], new[1]


def _taken_in(ctx: CheckContext, owner: str) -> tuple[str, dict[str, Any]] | None:
    """A module function the new release made a static or class method of a class of its module
    (0.5.10's `Engine._launch_subprocesses`): the project's call is judged against that method,
    what its import must be rewritten to (SGC102 names it)."""
    taken = taken_in(ctx.old, owner, ctx.new)
    return (f"{taken[0]}.{taken[1]}.{owner.rpartition('.')[2]}", taken[3]) if taken is not None else None


@contract("SGC206", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def call_of_callable_that_changed_async(ctx: CheckContext) -> Iterator[Diagnostic]:
    for facts, call, owner, old, new in _call_pairs(ctx):
        was, now = bool(old.get("async")), bool(new.get("async"))
        if was == now or "property" in new.get("decorators", ()):
            continue
        change = _async_change(ctx, call, old, new, was, now)
        if change is None:
            continue
        yield finding("SGC206", facts, call.position, owner, callee=f"{_display(owner)}()", change=change,
                      old=ctx.old_version, new=ctx.new_version)


def _async_change(ctx: CheckContext, call: CallFact, old: dict[str, Any], new: dict[str, Any], was: bool,
                  now: bool) -> str | None:
    """What the callee's change to or from `async def` does to this call; None where it works on."""
    awaited = call.use == "await"
    # `return f()`: the coroutine goes to the caller, who awaits it (SGC209 judges an override's caller);
    # a partial's, to whoever calls the partial
    if now and not awaited and call.use not in ("return", "partial") and not _awaitable(old):
        return (f"is `async def` in sglang {ctx.new_version} (a plain function in {ctx.old_version}): "
                "this call without `await` gets a coroutine that never runs")
    if was and awaited and not _awaitable(new):
        return (f"is a plain function in sglang {ctx.new_version} (`async def` in {ctx.old_version}): "
                "awaiting its result raises TypeError")
    return None


@dataclass(frozen=True)
class Result:
    """What a callable returns, as far as one release says: a tuple of `length` values, or an
    instance of one of `classes` (upstream classes none of which can be unpacked, indexed or
    iterated: no `__iter__`, `__getitem__` or base outside SGLang, as a dataclass)."""

    length: int | None = None
    classes: tuple[str, ...] = ()

    def text(self) -> str:
        if self.length is not None:
            return f"a tuple of {self.length}"
        return " or ".join(f"a {origin.rsplit('.', 1)[-1]}" for origin in self.classes)


# Members that let an object be unpacked, indexed or iterated like a tuple.
SEQUENCE_MEMBERS = frozenset({"__iter__", "__getitem__"})


def _result(model: UpstreamModel, record: dict[str, Any]) -> Result | None:
    """What the function or method of `record` returns in the release of `model`; None unknown."""
    if record.get("shape") is not None:
        return Result(length=record["shape"])
    origins = [model.resolve_class(path) for path in record.get("returns", [])]
    annotation = record.get("annotation", "")
    if not origins or None in origins or "None" in annotation or "Optional" in annotation:
        return None  # a result that may be None, or of a class not read: not judged
    for origin in origins:
        if model.mro(origin)[1] or SEQUENCE_MEMBERS & model.member_names(origin):
            return None  # a base outside SGLang (a NamedTuple), or a sequence: it may unpack
    return Result(classes=tuple(origins))


def _use_breaks(use: str, model_old: UpstreamModel, was: Result, now: Result) -> tuple[str, str] | None:
    """(what the call does with the result, what goes wrong) when a use that fits the old
    result fails on the new one; None when it does not, or either is unknown."""
    kind, _, detail = use.partition(":")
    if kind == "unpack":
        return _unpack_breaks(int(detail), was, now)
    if kind in ("index", "iter") and was.length is not None and now.classes:
        return SUBSCRIPT_BREAKS[kind]
    if kind == "attr" and was.classes and now.length is not None \
            and all(model_old.member(origin, detail) is not None for origin in was.classes):
        return f"reading or setting .{detail} on it", "raises AttributeError (a tuple has no such attribute)"
    return None


# What indexing or iterating over a result that was a tuple, and is now an object, does.
SUBSCRIPT_BREAKS = {"index": ("indexing it", "raises TypeError (it is not subscriptable)"),
                    "iter": ("iterating over it", "raises TypeError (it is not iterable)")}


def _unpack_breaks(count: int, was: Result, now: Result) -> tuple[str, str] | None:
    """_use_breaks for `a, b, ... = f()` into `count` names."""
    if was.length != count:
        return None  # the call did not fit the old shape either (or it is unknown)
    doing = f"unpacking it into {count} names"
    if now.length is not None:
        return (doing, "raises ValueError") if now.length != count else None
    return doing, "raises TypeError (it cannot be unpacked)"


@contract("SGC207", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def unpacked_result_changed_shape(ctx: CheckContext) -> Iterator[Diagnostic]:
    for facts, call, owner, old, new in _call_pairs(ctx):
        if not call.use or call.use == "await":
            continue
        was, now = _result(ctx.old, old), _result(ctx.new, new)
        if was is None or now is None or was == now:
            continue
        broken = _use_breaks(call.use, ctx.old, was, now)
        if broken is None:
            continue
        doing, effect = broken
        yield finding("SGC207", facts, call.position, owner, callee=f"{_display(owner)}()", now=now.text(),
                      was=was.text(), doing=doing, effect=effect, old=ctx.old_version, new=ctx.new_version)


# -- upstream calling the project's override ----------------------------------------------


def _overridden(ctx: CheckContext, cls: ProjectClass, name: str) -> bool:
    """Whether the project class (or a project class between it and upstream) defines `name`
    without handing on to upstream's (`return super().<name>(...)` keeps upstream's running)."""
    for klass in project_view(ctx).ancestry(cls)[0]:
        if name in klass.fact.provided:
            scope = f"{klass.fact.name}.{name}"
            return not any(call.scope == scope and call.callee.types == (f"U:{klass.fact.name}",)
                           and call.callee.attrs == (name,) for call in klass.facts.calls)
    return False


def _callers(ctx: CheckContext, resolver: Resolver, cls: ProjectClass, method: str) -> list[tuple[Member, dict]]:
    """Upstream methods on the class's upstream bases that call `self.<method>(...)` and that
    the project does not override: they run on the project's instances and reach its override."""
    found: list[tuple[Member, dict]] = []
    seen: set[tuple[str, str]] = set()
    for origin in resolver.upstream_bases(cls):
        for owner in resolver.model.mro(origin)[0]:
            record = resolver.model.class_record(owner)
            for name, body in sorted(record["methods"].items()):
                if (owner, name) in seen or name == method or not _calls_self_method(body, method):
                    continue
                seen.add((owner, name))
                if _runs_upstream_method(ctx, resolver, cls, origin, owner, name):
                    found.append((Member(owner, name, "method", body), body))
    return found


def _calls_self_method(body: dict, method: str) -> bool:
    """Whether the upstream method's body unpacks, awaits or plainly calls `self.<method>(...)`."""
    return method in body.get("unpacks", {}) or method in body.get("awaits", ()) \
        or method in body.get("plain_calls", ())


def _runs_upstream_method(ctx: CheckContext, resolver: Resolver, cls: ProjectClass, origin: str, owner: str,
                          name: str) -> bool:
    """Whether the project's instances run `owner`'s own `name`: the project does not override it,
    and the upstream base `origin` reaches it as `owner`'s."""
    reached = resolver.model.member(origin, name)
    return not _overridden(ctx, cls, name) and reached is not None and reached.owner == owner


def _expected_shape(record: dict[str, Any], callers: list[tuple[Member, dict]],
                    method: str) -> tuple[int | None, list[str]]:
    """The tuple length upstream expects of the method: its annotation's (or body's), or what
    every caller unpacks; and the callers that unpack it."""
    unpacking = [(member.qualname, body["unpacks"][method]) for member, body in callers
                 if method in body.get("unpacks", {})]
    counts = {count for _, count in unpacking}
    shape = record.get("shape")
    if shape is None and len(counts) == 1:
        shape = next(iter(counts))
    return shape, [name for name, count in unpacking if count == shape]


def _annotation_length(text: str) -> int | None:
    """The length of a fixed tuple annotation written in the project (`tuple[A, B]`)."""
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return None
    if isinstance(node, ast.Subscript) and ast.unparse(node.value).rsplit(".", 1)[-1] in ("tuple", "Tuple"):
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if not any(isinstance(item, ast.Constant) and item.value is Ellipsis for item in items):
            return len(items)
    return None


def _last(text: str) -> str:
    return text.replace(" ", "").replace('"', "").replace("'", "").rsplit(".", 1)[-1]


@contract("SGC208", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def override_returns_old_shape(ctx: CheckContext) -> Iterator[Diagnostic]:
    old_resolver, new_resolver = resolvers(ctx)
    for item in overrides(ctx):
        if not _overrides_method(item) or item.method.name == "__init__":
            continue
        name = item.method.name
        new_callers = _callers(ctx, new_resolver, item.cls, name)
        now, unpacking = _expected_shape(item.new.record, new_callers, name)
        if now is None:
            continue
        was, _ = _expected_shape(item.old.record, _callers(ctx, old_resolver, item.cls, name), name)
        if was == now:
            continue
        gives = _old_shape_given(ctx, item, now)
        if gives is None:
            continue  # what the override returns is unknown (or fits): not judged
        if unpacking:
            use = f"{unpacking[0]} unpacks it into {now} names"
        elif new_callers or item.new.record.get("annotation"):
            use = f"it is annotated {code_span(item.new.record.get('annotation', ''))}"
        else:
            continue
        yield finding("SGC208", item.cls.facts, item.method.position, f"{item.new.owner}.{name}",
                      cls=item.cls.fact.name, method=name, gives=gives, upstream=item.new.qualname, shape=str(now),
                      use=use, old=ctx.old_version, new=ctx.new_version)


def _overrides_method(item) -> bool:
    """Whether the override overrides a method in both releases."""
    return item.new is not None and item.new.kind == "method" and item.old.kind == "method"


def _old_shape_given(ctx: CheckContext, item, now: int) -> str | None:
    """What the override returns when it is not the `now`-tuple upstream expects: its own tuple
    length, or the old base's annotation it copied; None when that is unknown, or fits."""
    returns = item.method.shape if item.method.shape is not None else _annotation_length(item.method.annotation)
    old_annotation = item.old.record.get("annotation", "")
    if returns is not None:
        return f"a {returns}-tuple" if returns != now else None
    if item.method.annotation and old_annotation and _last(item.method.annotation) == _last(old_annotation) \
            and _last(old_annotation) != _last(item.new.record.get("annotation", "")):
        return f"{item.method.annotation}, as {item.old.qualname} did in {ctx.old_version}"
    return None


@contract("SGC209", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def override_async_out_of_date(ctx: CheckContext) -> Iterator[Diagnostic]:
    _, new_resolver = resolvers(ctx)
    for item in overrides(ctx):
        if not _overrides_method(item):
            continue
        was, now = bool(item.old.record.get("async")), bool(item.new.record.get("async"))
        if was == now or item.method.is_async != was:
            continue
        if now and _hands_back_awaitable(item.method):
            continue
        callers = _callers(ctx, new_resolver, item.cls, item.method.name)
        yield finding("SGC209", item.cls.facts, item.method.position, f"{item.new.owner}.{item.method.name}",
                      cls=item.cls.fact.name, method=item.method.name, upstream=item.new.qualname,
                      effect=_async_effect(ctx, item.method.name, callers, now),
                      kind="a plain `def`" if not item.method.is_async else "`async def`",
                      old=ctx.old_version, new=ctx.new_version)


def _hands_back_awaitable(method) -> bool:
    """A plain override that returns an awaitable still works under `await`: one annotated so, or
    one that hands back the base's own (now coroutine) result, as a version-guarded
    `if new_release: return super().m(x)` does on the path that release takes."""
    return bool(method.delegates) or any(word in method.annotation for word in AWAITABLE_WORDS)


def _async_effect(ctx: CheckContext, name: str, callers: list[tuple[Member, dict]], now: bool) -> str:
    """What upstream's calls now do with the override that did not follow its base to or from `async def`."""
    key = "awaits" if now else "plain_calls"
    named = [member.qualname for member, body in callers if name in body.get(key, ())]
    where = f"; {named[0]} calls it" if named else ""
    if now:
        return (f"became `async def` in sglang {ctx.new_version}, so upstream awaits it: awaiting this plain "
                f"method's result raises TypeError{where}")
    return (f"is a plain method in sglang {ctx.new_version}, so upstream calls it without `await`: this coroutine "
            f"never runs{where}")
