"""The project's choice of code by the installed release (SGC106): a release it cannot serve.

A project that serves several SGLang releases at once chooses, at import time, the code for
the installed one (project/serving.py); the choice ends in `raise NotImplementedError` or
names a module the project does not have. Reaching that on the new release stops every run,
however well each module the choice loads holds on the releases it serves.
"""

from __future__ import annotations

from typing import Iterator

from sglang_contracts.contracts.base import CheckContext, Process, Reads, contract
from sglang_contracts.diagnostics import Diagnostic, finding
from sglang_contracts.project.dispatches import module_for
from sglang_contracts.project.gates import evaluate
from sglang_contracts.project.index import module_name_for
from sglang_contracts.project.releasefacts import gate_at, judged_release


@contract("SGC106", reads=Reads.WHOLE_PROJECT, process=Process.MAIN)  # a module added anywhere serves it
def release_dispatch_refuses_new(ctx: CheckContext) -> Iterator[Diagnostic]:
    if not any(facts.dispatches for facts in ctx.project.files.values()):
        return
    old, new = judged_release(ctx.project, ctx.old), judged_release(ctx.project, ctx.new)
    modules = {module_name_for(relpath) for relpath in ctx.project.digests}
    for facts in ctx.checked_files():
        for dispatch in facts.dispatches:
            refused = _refusal(dispatch, gate_at(facts.gates, dispatch.position), old, new, modules)
            if refused is None:
                continue
            reached, named = refused
            loaded = ctx.serving.loaded_on_old_only.get(facts.path, []) if ctx.serving is not None else []
            yield finding("SGC106", facts, dispatch.position, reached, old=ctx.old_version, new=ctx.new_version,
                          reached=reached, named=named, loaded=_what_loads(loaded))


def _refusal(dispatch, gate, old, new, modules: set[str]) -> tuple[str, str] | None:
    """(what the choice reaches, what it names) when it refuses the new release and held on the old one."""
    if dispatch.kind == "raise":
        return _raise_refusal(dispatch, gate, old, new)
    return _import_refusal(dispatch, gate, old, new, modules)


def _raise_refusal(dispatch, gate, old, new) -> tuple[str, str] | None:
    """Reached on the new release for certain, never on the old one: the choice held there."""
    if gate is None or evaluate(gate, old) is not False or evaluate(gate, new) is not True:
        return None
    return f"raise {dispatch.detail}", ""


def _import_refusal(dispatch, gate, old, new, modules: set[str]) -> tuple[str, str] | None:
    """A module chosen by the release's name that the project has for the old release, not the new."""
    on_old = module_for(dispatch.template, dispatch.package, old.version or "")
    on_new = module_for(dispatch.template, dispatch.package, new.version or "")
    ran_on_old = gate is None or evaluate(gate, old) is not False
    if not ran_on_old or on_old not in modules or on_new in modules:
        return None
    named = (f", which names {on_new}" if on_new is not None
             else f", whose table has no entry for {new.version}")
    return f"importlib.import_module({dispatch.detail})", named


def _what_loads(relpaths: list[str], shown: int = 3) -> str:
    """The top modules of what the old release loads here (a package, not each of its modules)."""
    names = sorted(module_name_for(relpath) for relpath in relpaths)
    tops = [name for name in names if not any(name.startswith(f"{other}.") for other in names)]
    if not tops:
        return "took another branch"
    more = f" and {len(tops) - shown} more" if len(tops) > shown else ""
    return "loads " + ", ".join(tops[:shown]) + more
