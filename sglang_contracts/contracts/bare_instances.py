"""Upstream objects built without their `__init__` (SGC315).

Tests build an upstream object cheaply with `object.__new__(OpenAIServingChat)`, set by hand
the attributes the methods they call read, and call them (miles' `_make_serving`). The object
has none of the attributes the upstream `__init__` sets: when a method the project calls on it
reads one more in the new release (`default_chat_template_kwargs` in sglang 0.5.16), the call
raises AttributeError. The upstream methods reached are walked as for borrowed methods
(`borrowed.reach`): the bare object plays the project object's part.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from sglang_contracts.contracts.base import CheckContext, Process, Reads, contract
from sglang_contracts.analysis.borrowing import CALLABLE_KINDS, Needed, Root, reach
from sglang_contracts.analysis.resolve import Resolver, resolvers
from sglang_contracts.diagnostics import Diagnostic, finding
from sglang_contracts.project.facts import FileFacts
from sglang_contracts.upstream.model import is_upstream


@dataclass
class BareBuild:
    """Where one file builds an upstream class bare, and what it does with the object."""

    facts: FileFacts
    cls: str  # the class's dotted name as the file binds it
    builder: str  # the scope holding `object.__new__(cls)`
    provided: set[str] = field(default_factory=set)  # attributes the project sets on it
    written: dict[str, set[str]] = field(default_factory=dict)  # attribute -> value tokens of its writes
    calls: list[Root] = field(default_factory=list)  # upstream methods the project calls on it

    def values(self) -> dict[str, frozenset[str]]:
        """attribute -> the values the project gives it, for attributes all of whose writes say
        what they are (literals, enum members, empty containers): the branches they decide."""
        return {name: frozenset(tokens) for name, tokens in self.written.items()
                if tokens and "" not in tokens and "empty" not in tokens}


def _bare_builds(facts: FileFacts) -> list[BareBuild]:
    """The builds of a file. The object is followed in the scope that builds it and, when that
    scope is a function, in the same file's scopes that call it (`serving = _make_serving(t)`):
    what those set on its result is set, what they call on it is called."""
    builds = _bare_objects(facts)
    by_result = {f"R:{build.builder}": build for build in builds.values() if build.builder}
    by_bare = {(build.builder, f"B:{build.cls}"): build for build in builds.values()}
    _add_writes(facts, by_bare, by_result)
    _add_calls(facts, by_bare, by_result)
    return [build for build in builds.values() if build.calls]


def _add_writes(facts: FileFacts, by_bare: dict[tuple[str, str], BareBuild], by_result: dict[str, BareBuild]) -> None:
    """What the file sets on each bare object (and its values as written)."""
    for read in facts.reads:
        build = _build_of(by_bare, by_result, read.scope, read.receiver.types)
        if build is not None and not read.receiver.attrs and read.store:
            build.provided.add(read.attr)
            build.written.setdefault(read.attr, set()).add(read.value)


def _add_calls(facts: FileFacts, by_bare: dict[tuple[str, str], BareBuild], by_result: dict[str, BareBuild]) -> None:
    """The methods the file calls on each bare object."""
    for call in facts.calls:
        build = _build_of(by_bare, by_result, call.scope, call.callee.types)
        if build is not None and len(call.callee.attrs) == 1:
            build.calls.append(Root(facts, call.position, call.scope or "<module>", call.callee.attrs[0], None))


def _bare_objects(facts: FileFacts) -> dict[tuple[str, str], BareBuild]:
    """(scope, class) -> a build, for each `object.__new__(cls)` the file reads as a bare object."""
    builds: dict[tuple[str, str], BareBuild] = {}
    for read in facts.reads:
        for kind in read.receiver.types:
            if kind.startswith("B:") and not read.receiver.attrs:
                builds.setdefault((read.scope, kind[2:]), BareBuild(facts, kind[2:], read.scope))
    return builds


def _build_of(by_bare: dict[tuple[str, str], BareBuild], by_result: dict[str, BareBuild], scope: str,
              types: tuple[str, ...]) -> BareBuild | None:
    """The build a receiver of these types stands for in the scope: the bare object, or what its builder returns."""
    if len(types) != 1:
        return None
    return by_bare.get((scope, types[0])) or by_result.get(types[0])


def _needed(resolver: Resolver, build: BareBuild) -> dict[str, tuple[Needed, str]] | None:
    """attribute -> (the least-guarded read of it, the upstream class) by the upstream methods
    the project calls on the bare object, among those neither the project sets nor the class
    holds at class level; None when the class is not upstream in this release."""
    dotted = resolver.view.dotted(build.facts, build.cls)
    origin = resolver.model.resolve_class(dotted) if dotted and is_upstream(dotted) else None
    if origin is None:
        return None
    model = resolver.model
    needed: dict[str, tuple[Needed, str]] = {}
    values = build.values()
    for root in build.calls:  # the least-guarded read of each attribute, over all calls
        first = model.member(origin, root.name)
        if first is None or first.kind not in CALLABLE_KINDS:
            continue
        reads, writes, _, _ = reach(resolver, lambda name: model.member(origin, name), first, root,
                                    set(build.provided), values)
        _keep_least_guarded(needed, reads, writes, origin)
    return needed


def _keep_least_guarded(needed: dict[str, tuple[Needed, str]], reads: dict[str, Needed], writes,
                        origin: str) -> None:
    """Keep in `needed` each read attribute the methods do not write, at its least-guarded read."""
    for attr, need in reads.items():
        if attr not in writes and (attr not in needed or need.cost < needed[attr][0].cost):
            needed[attr] = (need, origin)


def _init_value(resolver: Resolver, origin: str, attr: str) -> str | None:
    """The value the class's `__init__` (in lookup order) gives `attr`, as written."""
    for owner in resolver.model.mro(origin)[0]:
        method = (resolver.model.class_record(owner) or {}).get("methods", {}).get("__init__")
        if method is not None:
            return method.get("assigns", {}).get(attr)
    return None


@contract("SGC315", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def bare_instance_lacks_init_attribute(ctx: CheckContext) -> Iterator[Diagnostic]:
    old, new = resolvers(ctx)
    for facts in ctx.project.files.values():
        if not _builds_bare(facts):
            continue
        for build in _bare_builds(facts):
            before, now = _needed(old, build), _needed(new, build)
            if before is None or not now:
                continue
            # One finding per object: the attributes one `__init__` sets are one fix.
            news = sorted(attr for attr in now if attr not in before)
            if news:
                yield _lacks_init_finding(ctx, new, build, now, news)


def _builds_bare(facts: FileFacts) -> bool:
    return any(kind.startswith("B:") for read in facts.reads for kind in read.receiver.types)


def _lacks_init_finding(ctx: CheckContext, new: Resolver, build: BareBuild, now: dict[str, tuple[Needed, str]],
                        news: list[str]) -> Diagnostic:
    """SGC315 at the first new read, naming every attribute the new `__init__` would have set."""
    need, origin = now[news[0]]
    cls = origin.rsplit(".", 1)[-1]
    values = [f"{attr} = {value}" for attr in news if (value := _init_value(new, origin, attr)) is not None]
    listed = ", ".join(f"self.{attr}" for attr in news)
    return finding("SGC315", need.root.facts, need.root.position, f"{origin}.{news[0]}",
                   cls=cls, builder=build.builder or "module level", attrs=listed,
                   call_path=" -> ".join(need.path + [f"reads self.{news[0]}"]),
                   init=f"; upstream {cls}.__init__ sets {', '.join(values)}" if values else "",
                   old=ctx.old_version, new=ctx.new_version)
