"""Call contracts (SGC201-SGC205): calls of upstream callables that bound on the old signature,
and calls of callables the new release retired.

A call is bound to each release's signature the way Python binds arguments; it is reported
only when it bound on the old release and fails on the new one. Arguments behind `*args` or
`**kwargs` splats are never guessed: what they may supply is not reported missing, and
positions after a `*args` are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

from sglang_contracts.contracts.base import CheckContext, Process, Reads, contract, fixes
from sglang_contracts.analysis.resolve import resolvers
from sglang_contracts.analysis.migrated import asks_upstream, import_needed_names, migration_fields, upstream_migrations
from sglang_contracts.diagnostics import Diagnostic, built_per_file, finding
from sglang_contracts.infra.wording import plural
from sglang_contracts.migrations.learn import Question
from sglang_contracts.project.facts import ArgFact, CallFact, FileFacts, Position
from sglang_contracts.upstream.model import Signature


@dataclass(frozen=True)
class Problem:
    code: str  # SGC201 unexpected keyword, SGC202 missing required, SGC203 positional trouble
    detail: str
    position: Position | None  # the argument at fault; None: the call itself


@dataclass
class Binding:
    landed: dict[int, str]  # argument index -> parameter name
    problems: list[Problem]
    # Keywords only a `**kwargs` took, whose destination is unknown: the call did not provably bind them.
    unknown: set[str] = field(default_factory=set)


def bind(signature: Signature, args: tuple[ArgFact, ...]) -> Binding:
    """Python's argument binding, as far as the call's text shows it."""
    binding = Binding({}, [])
    filled: set[str] = set()
    _bind_positionals(signature.params, args, binding, filled)
    _bind_keywords(signature, args, binding, filled)
    _require_unfilled(signature.params, args, binding, filled)
    return binding


def _bind_positionals(params, args: tuple[ArgFact, ...], binding: Binding, filled: set[str]) -> None:
    """Land the positional arguments up to a `*args` splat, or report one too many."""
    positional = [p for p in params if p[1] in ("po", "pk")]
    var_positional = any(kind == "va" for _, kind, _ in params)
    count = 0
    for index, arg in enumerate(args):
        if arg.kind == "star":
            break  # what follows a *args splat lands where the splat's length says
        if arg.kind != "pos":
            continue
        if count < len(positional):
            binding.landed[index] = positional[count][0]
            filled.add(positional[count][0])
        elif not var_positional:
            binding.problems.append(_too_many_positionals(args, len(positional), arg))
            break
        count += 1


def _too_many_positionals(args: tuple[ArgFact, ...], takes: int, arg: ArgFact) -> Problem:
    given = sum(1 for a in args if a.kind == "pos")
    return Problem("SGC203", f"{plural(given, 'positional argument')} given, it takes {takes}", arg.position)


def _bind_keywords(signature: Signature, args: tuple[ArgFact, ...], binding: Binding, filled: set[str]) -> None:
    """Land the keyword arguments on their parameters or in a `**kwargs`."""
    params = signature.params
    keywords = {name for name, kind, _ in params if kind in ("pk", "ko")}
    var_keyword = any(kind == "vk" for _, kind, _ in params)
    for index, arg in enumerate(args):
        if arg.kind != "kw":
            continue
        if arg.name in keywords:
            if arg.name in filled:
                binding.problems.append(Problem("SGC203", f"{arg.name} is given twice: positionally and by keyword",
                                                arg.position))
            filled.add(arg.name)
            binding.landed[index] = arg.name
        elif not var_keyword:
            binding.problems.append(Problem("SGC201", arg.name, arg.position))
        else:
            _bind_to_var_keyword(signature, arg, binding)


def _bind_to_var_keyword(signature: Signature, arg: ArgFact, binding: Binding) -> None:
    """`**kwargs` takes the keyword; where it goes on to is known only when the body forwards it."""
    accepted = signature.accepts_forwarded(arg.name)
    if accepted is False:
        binding.problems.append(Problem("SGC201", arg.name, arg.position))
    elif accepted is None:
        binding.unknown.add(arg.name)


def _require_unfilled(params, args: tuple[ArgFact, ...], binding: Binding, filled: set[str]) -> None:
    """Report each required parameter left unfilled that no splat may supply."""
    has_star = any(a.kind == "star" for a in args)
    has_dstar = any(a.kind == "dstar" for a in args)
    for name, kind, has_default in params:
        if has_default or name in filled or kind in ("va", "vk"):
            continue
        if _splat_may_supply(kind, has_star, has_dstar):
            continue
        binding.problems.append(Problem("SGC202", name, None))


def _splat_may_supply(kind: str, has_star: bool, has_dstar: bool) -> bool:
    return has_dstar and kind in ("pk", "ko") or has_star and kind in ("po", "pk")


def _display(owner: str) -> str:
    """`pkg.mod.Class.__init__` -> `Class()`, `pkg.mod.func` -> `func()`, methods as `Class.m()`."""
    parts = owner.split(".")
    if parts[-1] == "__init__":
        return f"{parts[-2]}()"
    return f"{'.'.join(parts[-2:]) if len(parts) > 1 and parts[-2][:1].isupper() else parts[-1]}()"


@dataclass
class CallBreak:
    facts: FileFacts
    call: CallFact
    problem: Problem
    old: Signature
    new: Signature


def _landing_changes(old: Binding, new: Binding, call: CallFact, old_signature: Signature,
                     new_signature: Signature) -> list[Problem]:
    """Positional arguments that now land on another parameter. A parameter renamed in place
    (the old name gone, the new one new) is the same slot, not a move."""
    changes = []
    old_names, new_names = old_signature.names(), new_signature.names()
    kinds = {name: kind for name, kind, _ in new_signature.params}
    for index, was in old.landed.items():
        arg = call.args[index]
        if arg.kind != "pos":
            continue
        change = _landing_change(index, was, new.landed.get(index), kinds, old_names, new_names)
        if change:
            changes.append(Problem("SGC203", change, arg.position))
    return changes


def _landing_change(index: int, was: str, now: str | None, kinds: dict[str, str], old_names, new_names) -> str:
    """How the positional argument at `index`, which filled `was`, lands now ("": as it did)."""
    if now is None and kinds.get(was) == "ko":
        return f"{was} became keyword-only"
    if now is None or now == was:
        return ""
    if now not in old_names and was in new_names:
        # what changed is a parameter inserted before it, not the one it used to fill
        return f"the new parameter {now} now takes argument {index + 1}, which was {was}"
    if now in old_names or was in new_names:
        return f"argument {index + 1} now lands on {now} (it was {was})"
    return ""


def _analyse_calls(ctx: CheckContext) -> list[CallBreak]:
    old_resolver, new_resolver = resolvers(ctx)
    breaks: list[CallBreak] = []
    # The calls found unbroken, by what their verdict rests on: the two signatures (held here,
    # so that no other takes their ids) and the arguments' kinds and keywords. A file of 125,000
    # calls of one function judged each again (campaign 19, R08); so do projects, less often.
    unbroken: dict[tuple, tuple] = {}
    for facts in ctx.project.files.values():
        for call in facts.calls:
            old_callee = old_resolver.callee_at(facts, call)
            if old_callee is None:
                continue
            new_callee = new_resolver.callee_at(facts, call)
            new_signature = new_callee.signature if new_callee is not None else None
            key = (id(old_callee.signature), id(new_signature), new_callee is not None and new_callee.member is None,
                   tuple((arg.kind, arg.name) for arg in call.args))
            if key in unbroken:
                continue
            found = _breaks_of_call(ctx, facts, call, old_callee, new_callee)
            if found:
                breaks.extend(found)
            else:
                unbroken[key] = (old_callee.signature, new_signature)
    return breaks


def _breaks_of_call(ctx: CheckContext, facts: FileFacts, call: CallFact, old_callee, new_callee) -> list[CallBreak]:
    """The call's breaks: its callee newly retired, and what no longer binds on the new signature."""
    breaks: list[CallBreak] = []
    if _newly_retired(ctx, old_callee, new_callee):
        breaks.append(CallBreak(facts, call, Problem("SGC205", "", None), old_callee.signature,
                                new_callee.signature))
    old_binding = bind(old_callee.signature, call.args)
    if old_binding.problems:
        return breaks  # did not bind on the old release either: not this bump's break
    if new_callee is None:
        return breaks  # gone or unknowable: the import and attribute contracts say which
    new_binding = bind(new_callee.signature, call.args)
    for problem in _binding_problems(old_binding, new_binding, call, old_callee.signature, new_callee.signature):
        breaks.append(CallBreak(facts, call, problem, old_callee.signature, new_callee.signature))
    return breaks


def _newly_retired(ctx: CheckContext, old_callee, new_callee) -> bool:
    """Functions and constructors only: a method's raise may be a base's, answered by an override."""
    if new_callee is None or new_callee.member is not None:
        return False
    retired_now = bool(_retirement(ctx.new, new_callee.signature.owner))
    return retired_now and not _retirement(ctx.old, old_callee.signature.owner)


def _binding_problems(old_binding: Binding, new_binding: Binding, call: CallFact, old_signature: Signature,
                      new_signature: Signature) -> list[Problem]:
    """What the new binding gets wrong that the old did not: one positional report per call (its
    first argument out of place), one per keyword."""
    landing = _landing_changes(old_binding, new_binding, call, old_signature, new_signature)
    # A keyword the old release took into an opaque `**kwargs` never provably bound.
    problems = [p for p in new_binding.problems if not (p.code == "SGC201" and p.detail in old_binding.unknown)]
    moved = landing + [p for p in problems if p.code == "SGC203"]
    if moved:  # one break, one finding: what the shift leaves unfilled is the shift's doing
        problems = _not_left_by_shift(problems, old_binding, call)
    return [p for p in problems if p.code != "SGC203"] + moved[:1]


def _not_left_by_shift(problems: list[Problem], old_binding: Binding, call: CallFact) -> list[Problem]:
    """The problems but the required parameters the positional arguments filled before they moved."""
    shifted = {name for index, name in old_binding.landed.items() if call.args[index].kind == "pos"}
    return [p for p in problems if not (p.code == "SGC202" and p.detail in shifted)]


def call_breaks(ctx: CheckContext) -> list[CallBreak]:
    return ctx.shared("calls", _analyse_calls)


def _migration(ctx: CheckContext, item: CallBreak) -> dict[str, Any]:
    """What upstream did with its own calls of the callee that passed the keyword."""
    answer = upstream_migrations(ctx).calls(item.old.owner, item.new.owner)
    return migration_fields(ctx, item.facts, item.call.position, item.call.scope, answer, item.problem.detail,
                            "calls", lambda plan: _unbindable(item, plan))


@asks_upstream("SGC201")
def _migration_questions(ctx: CheckContext) -> Iterator[Question]:
    """The callables SGC201's findings will ask about (_report)."""
    for item in call_breaks(ctx):
        if item.problem.code == "SGC201" and not item.new.dataclass:
            yield Question("calls", (item.old.owner, item.new.owner))


@asks_upstream("SGC202")
def _required_questions(ctx: CheckContext) -> Iterator[Question]:
    """The callables SGC202's findings will ask about: what upstream's calls now pass."""
    for item in call_breaks(ctx):
        if item.problem.code == "SGC202" and not item.new.dataclass:
            yield Question("calls", (item.old.owner, item.new.owner))


@asks_upstream("SGC204")
def _field_questions(ctx: CheckContext) -> Iterator[Question]:
    """The dataclasses SGC204's findings will ask about: how upstream now builds them."""
    for item in call_breaks(ctx):
        if item.problem.code in ("SGC201", "SGC202") and item.new.dataclass:
            yield Question("calls", (item.old.owner, item.new.owner))


def _unbindable(item: CallBreak, plan: dict[str, Any]) -> str:
    """Why the call rewritten as planned would not do, or "": only keywords are rewritten, and
    the result must bind to the new signature."""
    written = [slot for slot, _ in plan["write"]]
    if not all(slot.isidentifier() for slot in [*plan["remove"], *written]):
        return "upstream's edit rewrote positional or unpacked arguments too"
    kept = tuple(arg for arg in item.call.args if not _passes_keyword(arg, plan["remove"]))
    if any(_passes_keyword(arg, written) for arg in kept):
        return f"the call already passes {', '.join(written)}"
    rewritten = kept + tuple(ArgFact("kw", slot, item.call.position) for slot in written)
    if bind(item.new, rewritten).problems:
        return "the call rewritten so would not bind to the new signature"
    return ""


def _passes_keyword(arg: ArgFact, names) -> bool:
    return arg.kind == "kw" and arg.name in names


def _fields(ctx: CheckContext, item: CallBreak) -> dict[str, str | None]:
    """What changed upstream for this call, in the words each rule's message uses."""
    name, old_version = item.problem.detail, ctx.old_version
    if item.problem.code == "SGC201":
        renamed, refused = renamed_in_place(ctx, item, name)
        return {"name": name, "change": f"has no field {name} any more", "renamed_to": renamed,
                **({"rename_refused": refused} if refused else {})}
    if item.problem.code == "SGC202":
        was = _requirement_change(item.old, item.new, name, old_version)
        return {"name": name, "was": was,
                "change": f"has a new required field {name} ({was}) that this call does not set"}
    return {"change": name, "new_params": _signature_text(item.new), "old_params": _signature_text(item.old)}


def _requirement_change(old: Signature, new: Signature, name: str, old_version: str) -> str:
    """What changed upstream that makes `name` required where this call does not pass it: a
    new parameter (and where it went), or a default taken away (and what was put before it)."""
    before = next((param for param in old.params if param[0] == name), None)
    if before is None:
        positional = [param for param, kind, _ in new.params if kind in ("po", "pk")]
        if positional and positional[0] == name and len(positional) > 1:
            return f"a new first positional parameter, absent in {old_version}"
        return f"a new parameter, absent in {old_version}"
    if before[2]:
        return f"it had a default in {old_version}{_put_before(old, new, name)}"
    return f"required in {old_version} too, where this call passed it"


def _put_before(old: Signature, new: Signature, name: str) -> str:
    """Which new positional parameters now come before `name` ("": none)."""
    positional = [param for param, kind, _ in new.params if kind in ("po", "pk")]
    ahead = positional[:positional.index(name)] if name in positional else []
    inserted = [param for param in ahead if param not in old.names()]
    if not inserted:
        return ""
    return (f"; the new parameter{'s' if len(inserted) > 1 else ''} {', '.join(inserted)} "
            f"now come{'' if len(inserted) > 1 else 's'} before it")


def renamed_in_place(ctx: CheckContext, item: CallBreak, name: str) -> tuple[str | None, str]:
    """(the new name of a keyword renamed in place, or None; why a parameter in its place is
    no rename, or ""). A rename is where the new release has, where `name` was, a parameter
    the old one had not, of the same kind and default-ness, after the same parameters, and the
    two are the same thing: both annotated alike, or upstream's own calls passed their argument
    under the new name (`dp_size: int` then `model_runner: ModelRunner` is another parameter)."""
    renamed = _in_place_of(item.old.params, item.new.params, name)
    if renamed is None:
        return None, ""
    before, after = _annotation(ctx.old, item.old.owner, name), _annotation(ctx.new, item.new.owner, renamed)
    if before is not None and before == after or _renamed_upstream(ctx, item, name, renamed):
        return renamed, ""
    typed = f"{renamed}: {after}" if after is not None else f"{renamed} (unannotated)"
    was = f"{name}: {before}" if before is not None else f"{name} (unannotated)"
    return None, (f"{typed} took the place of {was}, and upstream's own calls did not pass the one as the other: "
                  f"not a rename; port the call by hand")


def _in_place_of(old, new, name: str) -> str | None:
    """The parameter the new release has where `name` was, if the old one had it not, of the same
    kind and default-ness, after the same parameters; else None."""
    index = next((i for i, p in enumerate(old) if p[0] == name), None)
    if index is None or index >= len(new) or old[:index] != new[:index] or new[index][0] in {p[0] for p in old}:
        return None
    if new[index][1:] != old[index][1:] or new[index][1] not in ("pk", "ko"):
        return None
    return new[index][0]


def _annotation(model, owner: str, parameter: str) -> str | None:
    record = model.callable_record(owner)
    return (record or {}).get("annotations", {}).get(parameter)


def _renamed_upstream(ctx: CheckContext, item: CallBreak, name: str, renamed: str) -> bool:
    """Whether upstream's own calls of the callable passed their argument of `name` on, as it
    was, under `renamed` (a learned edit `name=x` -> `renamed=x`)."""
    if item.new.dataclass:
        return False
    answer = upstream_migrations(ctx).calls(item.old.owner, item.new.owner)
    return any(dict(variant.before).get(name) == dict(variant.after).get(renamed) is not None
               and set(dict(variant.after)) == {renamed} for variant in answer.variants)


@fixes("SGC201")
def rewrite_call(diagnostic: Diagnostic, workspace) -> bool:
    """Rewrite the call's arguments as upstream rewrote its own calls (the finding's plan:
    migrations/), else pass the keyword under its new name where the new release renamed it
    in place."""
    import libcst
    from sglang_contracts.fix import python as python_edits  # libcst: only a fix run pays its import

    if diagnostic.data.get("migrated"):
        document = workspace.document(diagnostic.path)
        return document.python and _rewritten_as_planned(diagnostic, document)
    why = diagnostic.data.get("unmigrated")
    return python_edits.rename_at(diagnostic, workspace, (libcst.Arg,),
                                  lambda arg, new: arg.with_changes(keyword=libcst.Name(new)),
                                  f"{why}; port the call by hand" if why else diagnostic.data.get("rename_refused") or
                                  "the new release removed the keyword, it did not rename it in place: port the call by hand")


@fixes("SGC202")
def pass_required_argument(diagnostic: Diagnostic, workspace) -> bool:
    """Pass the argument as upstream's own calls that passed none of the changed ones now pass it
    (the finding's plan: migrations/)."""
    from sglang_contracts.fix import python as python_edits  # libcst: only a fix run pays its import

    document = python_edits.document_to_rewrite(diagnostic, workspace, bool(diagnostic.data.get("migrated")),
                                                diagnostic.data.get("unmigrated")
                                                or "upstream's own calls show no argument to pass: pass it by hand")
    return document is not None and _rewritten_as_planned(diagnostic, document)


@fixes("SGC204")
def rebuild_as_upstream(diagnostic: Diagnostic, workspace) -> bool:
    """Build the dataclass as upstream's own constructions of it now do: the field it lost
    dropped, or the one it requires passed (the finding's plan: migrations/)."""
    from sglang_contracts.fix import python as python_edits  # libcst: only a fix run pays its import

    document = python_edits.document_to_rewrite(diagnostic, workspace, bool(diagnostic.data.get("migrated")),
                                                diagnostic.data.get("unmigrated")
                                                or "upstream's own constructions show no rewrite: port it by hand")
    return document is not None and _rewritten_as_planned(diagnostic, document)


def _rewritten_as_planned(diagnostic: Diagnostic, document) -> bool:
    """The call's arguments rewritten as the finding's plan says: the keywords upstream's calls
    dropped or renamed, or (none dropped) the one they now pass added after the last."""
    from sglang_contracts.fix import python as python_edits  # libcst: only a fix run pays its import

    plan = diagnostic.data["migrated"]
    write = [tuple(pair) for pair in plan["write"]]
    if plan["remove"]:
        done = python_edits.rewrite_arguments(document, *diagnostic.data["use_at"], diagnostic.data["name"],
                                              set(plan["remove"]), write)
    else:
        done = python_edits.add_arguments(document, *diagnostic.data["use_at"], write)
    if done:
        import_needed_names(document, plan)
    return done


def _report(ctx: CheckContext, codes: set[str], dataclass: bool, code: str) -> Iterator[Diagnostic]:
    breaks = [item for item in call_breaks(ctx) if item.problem.code in codes and item.new.dataclass == dataclass]
    yield from built_per_file(breaks, lambda item: item.facts, lambda item: item.problem.position or item.call.position,
                              lambda item: _finding(ctx, code, item), code)


def _finding(ctx: CheckContext, code: str, item: CallBreak) -> Diagnostic:
    position = item.problem.position or item.call.position
    # A parameter's own qualified name, so two findings on one call stay distinct.
    symbol = item.new.owner if item.problem.code == "SGC203" else f"{item.new.owner}.{item.problem.detail}"
    migration = _migration(ctx, item) if code in ("SGC201", "SGC202", "SGC204") else {}
    return finding(code, item.facts, position, symbol, callee=_display(item.new.owner),
                   old=ctx.old_version, new=ctx.new_version, **_fields(ctx, item), **migration)


def _signature_text(signature: Signature) -> str:
    """The positional part of a signature, the part a positional argument lands in."""
    names = [name for name, kind, _ in signature.params if kind in ("po", "pk")]
    rest = "*args" if any(kind == "va" for _, kind, _ in signature.params) else "*"
    return f"({', '.join(names + [rest])})"


@contract("SGC201", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def call_keyword_removed(ctx: CheckContext) -> Iterator[Diagnostic]:
    yield from _report(ctx, {"SGC201"}, False, "SGC201")


@contract("SGC202", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def call_missing_required_argument(ctx: CheckContext) -> Iterator[Diagnostic]:
    yield from _report(ctx, {"SGC202"}, False, "SGC202")


@contract("SGC203", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def call_positional_arguments_moved(ctx: CheckContext) -> Iterator[Diagnostic]:
    yield from _report(ctx, {"SGC203"}, False, "SGC203")
    yield from _report(ctx, {"SGC203"}, True, "SGC203")


@contract("SGC204", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def dataclass_fields_changed(ctx: CheckContext) -> Iterator[Diagnostic]:
    yield from _report(ctx, {"SGC201", "SGC202"}, True, "SGC204")


def _retirement(model, owner: str) -> list[str] | None:
    """[exception, message] when the callable's body opens with a raise; an abstract stub's
    NotImplementedError is not a retirement (an override answers it)."""
    record = model.callable_record(owner)
    raised = record.get("raises") if record is not None else None
    return raised if raised and raised[0].rsplit(".", 1)[-1] != "NotImplementedError" else None


@contract("SGC205", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def call_of_retired_callable(ctx: CheckContext) -> Iterator[Diagnostic]:
    retired = [item for item in call_breaks(ctx) if item.problem.code == "SGC205"]
    yield from built_per_file(retired, lambda item: item.facts, lambda item: item.call.position,
                              lambda item: _retired_finding(ctx, item), "SGC205")


def _retired_finding(ctx: CheckContext, item: CallBreak) -> Diagnostic:
    exception, message = _retirement(ctx.new, item.new.owner)
    hint = f": {message[:200]}" if message else ""
    return finding("SGC205", item.facts, item.call.position, item.new.owner, callee=_display(item.new.owner),
                   exception=exception, old=ctx.old_version, new=ctx.new_version, hint=hint)
