"""Project methods that override upstream ones (the subclass rules, contracts/subclasses.py,
and the return-shape rules, contracts/returns.py): each matched with the nearest upstream
definition of the same name, found through the project's own intermediate classes and
upstream's bases. A class whose `__getattr__` hands out an upstream class's methods
(sglang-omni's OmniScheduler) overrides them too: the upstream code it borrows calls
`self.<name>()` and reaches the project's method."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sglang_contracts.analysis.resolve import ProjectClass, project_view, resolvers
from sglang_contracts.project.facts import MethodFact
from sglang_contracts.upstream.model import Member

if TYPE_CHECKING:
    from sglang_contracts.contracts.base import CheckContext


@dataclass
class Override:
    cls: ProjectClass
    method: MethodFact
    old: Member
    new: Member | None


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and name != "__init__"


def checked_classes(ctx: CheckContext) -> list[ProjectClass]:
    """The project classes of the files whose findings this run keeps (CheckContext.checked)."""
    classes = project_view(ctx).classes.values()
    return list(classes) if ctx.checked is None else [cls for cls in classes if cls.facts.path in ctx.checked]


def derived_classes(ctx: CheckContext) -> list[ProjectClass]:
    """Checked project classes with an upstream base in the old release (directly or through the project)."""
    old, _ = resolvers(ctx)
    return [cls for cls in checked_classes(ctx) if old.upstream_bases(cls)]


def _overriding_classes(ctx: CheckContext) -> list[ProjectClass]:
    """Checked derived classes, and those that borrow an upstream class's methods through `__getattr__`."""
    view = project_view(ctx)
    old, _ = resolvers(ctx)
    return [cls for cls in checked_classes(ctx) if old.upstream_bases(cls) or view.borrow_sources(cls)]


def _overrides(ctx: CheckContext) -> list[Override]:
    view = project_view(ctx)
    old, new = resolvers(ctx)
    found = []
    for cls in _overriding_classes(ctx):
        parents = view.ancestry(cls)[0][1:]
        # A class that only borrows builds itself: upstream code never runs its __init__ (what
        # the upstream one would have set is SGC312's to report).
        borrower_only = not old.upstream_bases(cls)
        for method in cls.fact.methods:
            if _is_dunder(method.name) or any(p.fact.method(method.name) for p in parents) \
                    or borrower_only and method.name == "__init__":
                continue  # overrides the project's own class, or a protocol method
            was = old.upstream_member(cls, method.name)
            if was is None or was.kind not in ("method", "property"):
                continue
            found.append(Override(cls, method, was, new.upstream_member(cls, method.name)))
    return found


def overrides(ctx: CheckContext) -> list[Override]:
    return ctx.shared("overrides", _overrides)


def unaccepted_parameters(override: tuple[tuple[str, str, bool], ...], old: Member, new: Member) -> list[str]:
    """Parameters the new upstream method has, the old one had not, and the override cannot take."""
    before = {p[0] for p in old.record.get("params", [])}
    names, takes_kwargs, takes_args, positional_slots = _what_the_override_takes(override)
    missing = []
    new_params = new.record.get("params", [])
    for index, (name, kind, _) in enumerate(new_params):
        if name in before or kind in ("va", "vk"):
            continue
        by_keyword = name in names or takes_kwargs
        by_position = index < positional_slots or takes_args
        if _cannot_pass(kind, by_keyword, by_position):
            missing.append(name)
    return missing


def _what_the_override_takes(override: tuple[tuple[str, str, bool], ...]) -> tuple[set[str], bool, bool, int]:
    """(its parameters a keyword can pass, whether it takes **kwargs, whether it takes *args,
    how many parameters a position can pass)."""
    names = {name for name, kind, _ in override if kind in ("pk", "ko")}
    takes_kwargs = any(kind == "vk" for _, kind, _ in override)
    takes_args = any(kind == "va" for _, kind, _ in override)
    positional_slots = sum(1 for _, kind, _ in override if kind in ("po", "pk"))
    return names, takes_kwargs, takes_args, positional_slots


def _cannot_pass(kind: str, by_keyword: bool, by_position: bool) -> bool:
    """Whether a caller cannot pass a parameter of this kind (keyword-only "ko", positional-only
    "po", either "pk") to the override, given how the override can take it."""
    return kind == "ko" and not by_keyword or kind == "po" and not by_position \
        or kind == "pk" and not (by_keyword or by_position)
