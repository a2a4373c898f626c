"""What upstream's own code did with an API a finding is about (migrations/), in the words of
the finding: its message's `migration` field, and the plan its fix applies (`migrated`, with
the finding's own `fix_safety`), or why there is none (`unmigrated`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable

from sglang_contracts.migrations.edits import verdict
from sglang_contracts.migrations.learn import Answer, Migrations, Question
from sglang_contracts.migrations.sites import ProjectSites, same_object
from sglang_contracts.project.facts import FileFacts, Position

if TYPE_CHECKING:
    from sglang_contracts.contracts.base import CheckContext

# rule code -> the questions its findings will ask of upstream's migrations: a run learns the
# questions of every rule it runs in one pass (migrations/learn.py), not one pass per question.
QUESTIONS: dict[str, Callable[[CheckContext], Iterable[Question]]] = {}


def asks_upstream(code: str):
    """Register what a rule's findings will ask of upstream's migrations."""

    def register(function: Callable[[CheckContext], Iterable[Question]]):
        QUESTIONS[code] = function
        return function

    return register


def upstream_migrations(ctx: CheckContext) -> Migrations:
    """The release pair's migrations, told first what every rule this process runs will ask."""
    migrations = ctx.of_releases("migrations", lambda c: Migrations(c.old, c.new))
    asking = sorted(code for code in ctx.running if code in QUESTIONS)
    ctx.shared(f"migration questions\0{','.join(asking)}",
               lambda c: migrations.expect(question for code in asking for question in QUESTIONS[code](c)))
    return migrations


def project_sites(ctx: CheckContext) -> ProjectSites:
    return ctx.shared("project-sites", lambda c: ProjectSites(c.project.texts))


def migration_fields(ctx: CheckContext, facts: FileFacts, at: Position, scope: str | None, answer: Answer,
                     slot: str, noun: str, unfit: Callable[[dict[str, Any]], str]) -> dict[str, Any]:
    """The finding's fields for the project's use named at `at` (a call's callee, a read's
    attribute) in `scope`: `unfit(plan)` says why the planned rewrite would not do there."""
    if answer.unlearned:
        return unlearned_fields(answer)
    variants = answer.variants
    use = project_sites(ctx).use(facts, at.line, at.col, scope) if variants else None
    found = verdict(variants, slot, use, noun) if use is not None else None
    if found is None:
        return {}
    fields: dict[str, Any] = {"migration": f"; {found.message}"}
    plan = found.data()
    why = found.why or _why_unfit(ctx, facts, plan, unfit)
    if plan and not why:
        where = use.chain[plan["level"]][1] if use.chain else at
        fields.update(migrated=plan, fix_safety=found.safety, use_at=[where.line, where.col])
    else:
        fields["unmigrated"] = why
    return fields


def _why_unfit(ctx: CheckContext, facts: FileFacts, plan: dict[str, Any] | None,
               unfit: Callable[[dict[str, Any]], str]) -> str:
    """Why the planned rewrite would not do here (`unfit`, or the names it needs cannot be
    bound in the file); "" when it would, or there is no plan."""
    if not plan:
        return ""
    return unfit(plan) or _imports_unfit(ctx, facts, plan)


def unlearned_fields(answer: Answer) -> dict[str, Any]:
    """What a finding says when upstream's migration of its API was not learned (the budget)."""
    return {"migration": f"; upstream's migration not learned: {answer.unlearned}",
            "unmigrated": f"upstream's migration not learned: {answer.unlearned}"}


def _imports_unfit(ctx: CheckContext, facts: FileFacts, plan: dict[str, Any]) -> str:
    """Why a name the new code needs cannot be bound in this file as upstream's file binds it."""
    bindings = facts.bindings()
    for name, path in plan["imports"]:
        if name not in bindings:
            if path.rpartition(".")[2] != name or "." not in path:
                return f"upstream's new code needs {name} bound as {path}"
        elif not same_object(ctx.new, bindings[name], path):
            return f"{name} means something else in this file"
    return ""


def import_needed_names(document, plan: dict[str, Any]) -> None:
    """Have the fix run import what the rewrite needs (`from module import name`), once its
    edits are made."""
    for name, path in plan["imports"]:
        module, _, leaf = path.rpartition(".")
        if leaf == name and module:
            document.names_needed.add((module, name))
