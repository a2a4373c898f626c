"""The bump pull request's contract section, in GitHub markdown.

It says which pins move, what breaks grouped by surface (imports, calls, subclasses, ...:
`catalog.SURFACES`), with one bullet per distinct break and the places it occurs, the
patch stack as counts per patch, the upstream behaviour the project inherits in a section of
its own, the upstream delta where one was computed, and a checklist of what a static check
cannot prove. It fits a pull request's description (GitHub refuses one over 65,536
characters): the longest groups are cut to their first findings, each cut naming the command
that lists the rest.
"""

from __future__ import annotations

import re
from collections import Counter
from itertools import groupby
from typing import TYPE_CHECKING, Callable, TextIO

from sglang_contracts.diagnostics.catalog import code_order, report_of, surface_for, surface_order
from sglang_contracts.diagnostics import Diagnostic
from sglang_contracts.infra.display import printable_path
from sglang_contracts.infra.markdown import cell, code, inline, plain
from sglang_contracts.infra.wording import plural
from sglang_contracts.config import find_config
from sglang_contracts.patch.release import PatchedTree, names_the_stack_adds
from sglang_contracts.patch.stack import patch_stacks
from sglang_contracts.reporters.base import SEVERITY_ORDER, repository_path

if TYPE_CHECKING:
    from sglang_contracts.check.runner import CheckResult
    from sglang_contracts.patch.stack import PatchStacks
    from sglang_contracts.sources.base import ReleaseTree
    from sglang_contracts.closure.delta import Move


def _severity_counts(diagnostics: list[Diagnostic]) -> str:
    counts = Counter(d.severity for d in diagnostics)
    return ", ".join(plural(counts[s], s) if s != "info" else f"{counts[s]} info"
                     for s in SEVERITY_ORDER if counts[s])


def _pins(result: "CheckResult") -> list[str]:
    old, new = result.old.release, result.new.release
    where = f" ({code(result.pin.where)})" if result.pin else ""
    pinned = result.pin.version if result.pin else old.short
    rows = ["| pin | now | after the bump |", "|---|---|---|",
            f"| `sglang`{cell(where)} | {cell(code(pinned))} | {cell(code(new.short))} |"]
    if result.pin and result.pin.version != old.short:
        rows.append(f"\nChecked from {inline(old.label)} (not the pinned {plain(result.pin.version)}) to {inline(new.label)}.")
    rows += [f"\n> **Note:** {inline(note)}" for note in result.notes]
    return rows


def _group_key(d: Diagnostic) -> tuple:
    return (SEVERITY_ORDER.index(d.severity) if d.severity in SEVERITY_ORDER else 9, d.code, d.message)


# Under GitHub's 65,536 for a pull request's body, with room for the author's own words.
MAX_CHARACTERS = 60_000
MAX_PLACES = 8  # of one break, in a report cut to fit; the rest counted


def _inherited(d: Diagnostic) -> bool:
    """Upstream behaviour the project inherits (a changed body its overrides or borrowed methods
    run), which a reviewer reads apart from what breaks (the bump guide's own list), as the
    rule's catalog entry declares (`report.inherited`)."""
    return report_of(d.code).inherited


def _patch_hunk(d: Diagnostic) -> bool:
    """A hunk of a patch file, counted per patch rather than listed, as the rule's catalog entry
    declares (`report.hunk_wording`)."""
    return bool(report_of(d.code).hunk_wording)


def _bullets(result: "CheckResult", diagnostics: list[Diagnostic], cut: bool = False) -> list[str]:
    """One bullet per distinct break (severity, rule, message), errors first, with its places
    (MAX_PLACES of them when the report is `cut`)."""
    bullets = []
    for (_, rule_code, message), group in groupby(sorted(diagnostics, key=_group_key), key=_group_key):
        sites = list(group)
        listed = sites[:MAX_PLACES] if cut else sites
        places = ", ".join(code(f"{printable_path(repository_path(result, d))}:{d.line}") for d in listed)
        if len(sites) > len(listed):
            places += f" and {len(sites) - len(listed)} more"
        bullets.append(f"- **{sites[0].severity}** {rule_code}: {inline(message)}  \n  {places}")
    return bullets


def _cut(bullets: list[str], shown: int | None, diagnostics: list[Diagnostic], new: str) -> list[str]:
    if shown is None or len(bullets) <= shown:
        return bullets
    codes = ",".join(sorted({d.code for d in diagnostics}))
    return [*bullets[:shown], f"- … and {len(bullets) - shown} more: {code(f'sglang-contracts check --new {new} --select {codes}')}"]


def _surface_section(result: "CheckResult", title: str, what: str, diagnostics: list[Diagnostic],
                     shown: int | None = None) -> list[str]:
    lines = [f"### {title}: {_severity_counts(diagnostics)}", "", f"_{what}_", ""]
    return lines + _cut(_bullets(result, diagnostics, shown is not None), shown, diagnostics, result.new.release.short) + [""]


def _per_patch(result: "CheckResult", diagnostics: list[Diagnostic]) -> list[str]:
    """One line per patch file: its hunks that no longer apply and those already upstream, of
    how many it has, and the folders that keep a copy of it (judged once)."""
    by_patch: dict[str, Counter] = {}
    copies: dict[str, list[str]] = {}
    project_path: dict[str, str] = {}
    for d in filter(_patch_hunk, diagnostics):
        path = printable_path(repository_path(result, d))
        by_patch.setdefault(path, Counter())[d.code] += 1
        copies[path], project_path[path] = list(d.data.get("copies") or ()), d.path
    stacks = _live_stacks(result)[0] if by_patch else None
    sizes = {relpath: sum(len(f.hunks) for f in patch.files) for relpath, patch in stacks.patches.items()} \
        if stacks is not None else {}
    lines = []
    for path, counts in sorted(by_patch.items()):
        size = sizes.get(project_path[path])
        said = ", ".join(f"{counts[c]} of {plural(size, 'hunk')} {report_of(c).hunks_said(counts[c])} ({c})" if size
                         else f"{plural(counts[c], 'hunk')} {report_of(c).hunks_said(counts[c])} ({c})"
                         for c in sorted(counts, key=code_order))
        lines.append(f"- {code(path)}{_also_in(copies[path])}: {said}")
    return lines


def _patch_section(result: "CheckResult", title: str, what: str, diagnostics: list[Diagnostic],
                   shown: int | None = None, stacks: dict[int, str] | None = None) -> list[str]:
    """The stack as counts per patch file (a hunk per bullet ran to 286 lines on slime), the
    rest of the surface's findings as bullets, those about names the stack's own patches define
    apart, and the command that rebases the stack."""
    lines = [f"### {title}: {_severity_counts(diagnostics)}", "", f"_{what}_", ""]
    per_patch = _per_patch(result, diagnostics)
    lines += per_patch
    stacks = stacks or {}
    new = result.new.release.short
    others = [d for d in diagnostics if not _patch_hunk(d) and id(d) not in stacks]
    lines += _cut(_bullets(result, others, shown is not None), shown, others, new)
    ours = [d for d in diagnostics if id(d) in stacks]
    if ours:
        patches = ", ".join(code(printable_path(path)) for path in sorted(set(stacks.values())))
        lines += ["", f"Names the stack's own patches define ({patches}), gone from {plain(new)} with the hunks that "
                  "no longer apply there, not removed upstream: they come back when the stack is rebased.", ""]
        lines += _cut(_bullets(result, ours, shown is not None), shown, ours, new)
    if per_patch:
        old = result.old.release.short
        lines += ["", f"Rebase the stack onto {plain(new)}, each patch on the ones before it, into its new folder, "
                  f"the decisions in the plan: {code(f'sglang-contracts patch rebase --old {old} --new {new}')} "
                  f"(one patch: {code(f'sglang-contracts patch rebase PATCH --old {old} --new {new} --plan PLAN.md')})"]
    return lines + [""]


def _subject_names(d: Diagnostic) -> set[str]:
    """The names a finding is about: its symbol's last part, and the flags and routes its
    message names (`--enable-fp32-moe-router` as the field `enable_fp32_moe_router`); not every
    word of it (`hidden_states` in a signature the patch also touches)."""
    names = {d.symbol.rsplit(".", 1)[-1]}
    names.update(flag.replace("-", "_") for flag in re.findall(r"(?<![\w-])--([\w-]+)", d.message))
    names.update(re.findall(r"(?<![\w.])/(\w+)", d.message))
    return names


def _live_stacks(result: "CheckResult") -> tuple["PatchStacks | None", "ReleaseTree"]:
    """The live patch stacks the check judged, and the old release as published: from the old
    release as the image has it (the stacks applied), else, for a replay, which names the stock
    release, read again from the project."""
    tree = result.old.release.tree
    if isinstance(tree, PatchedTree):
        return tree.stacks, tree.base
    if result.replayed_files_with_contracts is not None:
        root = result.project.root
        return patch_stacks(root, find_config(root, None).get("patch-files") or ()), tree
    return None, tree


def stack_findings(result: "CheckResult") -> dict[int, str]:
    """The findings (by id) about a name the project's own patch stack defines, not upstream
    (slime's `router_gemm_batch_invariant`, `--enable-fp32-moe-router`): -> the patch. Read
    from the old release as the image has it (the stack applied)."""
    stacks, stock = _live_stacks(result)
    added = names_the_stack_adds(stacks, stock) if stacks is not None else {}
    found: dict[int, str] = {}
    for d in result.diagnostics if added else ():
        if surface_for(d.code).key == "patch-files":
            continue
        patch = next((added[name] for name in sorted(_subject_names(d)) if name in added), None)
        if patch is not None:
            found[id(d)] = patch
    return found


def _upstream_place(d: Diagnostic) -> str | None:
    """The upstream name a finding is about, dotted (a patch hunk's file `python/sglang/srt/x.py`
    is `sglang.srt.x`); None for the project's own names and the pins."""
    if _patch_hunk(d) and "sglang/" in d.symbol:
        return d.symbol[d.symbol.index("sglang/"):].removesuffix(".py").replace("/", ".")
    return d.symbol if d.symbol.startswith("sglang.") else None


def _weights(diagnostics: list[Diagnostic]) -> tuple[dict[str, set], Counter]:
    """Per dotted prefix of the upstream names the findings are about (`sglang.srt` itself
    aside): its distinct breaks (code, message), and its patch hunks."""
    breaks: dict[str, set] = {}
    hunks: Counter = Counter()
    for d in diagnostics:
        parts = (_upstream_place(d) or "").split(".")
        prefixes = (".".join(parts[:depth]) for depth in range(2, len(parts) + 1))
        for prefix in (p for p in prefixes if p != "sglang.srt"):
            if _patch_hunk(d):
                hunks[prefix] += 1
            else:
                breaks.setdefault(prefix, set()).add((d.code, d.message))
    return breaks, hunks


def _narrowed(place: str, places: set[str], score: Callable[[str], int]) -> str:
    """From an area down to its part holding two thirds of what it holds, while one does."""
    while True:
        depth = place.count(".") + 1
        best = max((p for p in places if p.startswith(place + ".") and p.count(".") == depth), key=score, default=None)
        if best is None or score(best) * 3 < score(place) * 2:
            return place
        place = best


def dominant_change(diagnostics: list[Diagnostic]) -> list[tuple[str, int, int]]:
    """The upstream places behind most of the findings, as (dotted prefix, distinct breaks, patch
    hunks), at most two: from the area (`sglang.srt.X`, `sglang.X`) holding most, down to the
    part of it holding two thirds of them (`sglang.srt.server_args.ServerArgs`). What a
    reviewer reads first; inferred from where the findings point, not measured."""
    breaks, hunks = _weights(diagnostics)
    score = lambda prefix: len(breaks.get(prefix, ())) + hunks[prefix]  # noqa: E731
    places = {*breaks, *hunks}
    areas = sorted((p for p in places if p.count(".") == (2 if p.startswith("sglang.srt.") else 1)),
                   key=lambda p: (-score(p), p))
    total = len({(d.code, d.message) for d in diagnostics if not _patch_hunk(d)}) + sum(map(_patch_hunk, diagnostics))
    chosen: list[tuple[str, int, int]] = []
    for area in areas[:2]:
        if score(area) < max(3, total / 5) or (chosen and score(area) * 2 < chosen[0][1] + chosen[0][2]):
            break
        place = _narrowed(area, places, score)
        chosen.append((place, len(breaks.get(place, ())), hunks[place]))
    return chosen


def _dominant_line(diagnostics: list[Diagnostic]) -> list[str]:
    found = dominant_change(diagnostics)
    if not found:
        return []
    distinct = len({(d.code, d.message) for d in diagnostics if not _patch_hunk(d)})
    hunks_all = sum(map(_patch_hunk, diagnostics))

    def share(breaks: int, hunks: int) -> str:
        parts = [f"{breaks} of the {distinct} distinct breaks" if breaks else "",
                 f"{hunks} of the {hunks_all} patch hunks" if hunks else ""]
        return ", ".join(part for part in parts if part)

    said = "; then ".join(f"{code(place)} ({share(breaks, hunks)})" for place, breaks, hunks in found)
    return ["", f"**Dominant upstream change:** {said}. Inferred from where the findings point: read what changed "
            "there first.", ""]


def _also_in(copies: list[str]) -> str:
    """The folders that keep the same patch, judged once (slime's `v0.5.15.post1/` beside `latest/`)."""
    folders = sorted({printable_path(path.rsplit("/", 1)[0] + "/") if "/" in path else "./" for path in copies})
    return f" (judged once; the same file is in {', '.join(code(folder) for folder in folders)})" if folders else ""


def _inherited_section(result: "CheckResult", diagnostics: list[Diagnostic], shown: int | None = None) -> list[str]:
    if not diagnostics:
        return []
    old, new = plain(result.old.release.short), plain(result.new.release.short)
    lines = [f"### Inherited upstream behaviour: {plural(len(diagnostics), 'method')}", "",
             f"_Upstream methods the project overrides or runs as its own whose bodies changed from {old} to "
             f"{new}: nothing raises, but what runs is not what ran. Read each._", ""]
    return lines + _cut(_bullets(result, diagnostics, shown is not None), shown, diagnostics, result.new.release.short) + [""]


MAX_DELTA_COMMITS = 30  # a PR description, not a log: the rest is one `git log` away


def upstream_delta_section(result: "CheckResult") -> list[str]:
    """The commits between the two tags that touch the files behind the project's contracts,
    and the modules to read in full (where a git clone was given)."""
    delta = result.upstream_delta
    if delta is None:
        return []
    span = code(f"{delta.old_ref}..{delta.new_ref}")
    lines = ["### Upstream delta", ""]
    if delta.commits:
        lines += [f"{len(delta.commits)} first-parent commits in {span} touch the upstream files behind "
                  "the project's contracts:", ""]
        for commit in delta.commits[:MAX_DELTA_COMMITS]:
            files = ", ".join(code(name) for name in commit.files[:4]) + (" …" if len(commit.files) > 4 else "")
            lines.append(f"- {code(commit.sha[:10])} {inline(commit.summary)} ({plain(commit.author)}, "
                         f"{plain(commit.date[:10])}): {files}")
        if len(delta.commits) > MAX_DELTA_COMMITS:
            lines.append(f"- … and {len(delta.commits) - MAX_DELTA_COMMITS} more: "
                         + code(f"git log --first-parent {delta.old_ref}..{delta.new_ref}"))
    else:
        lines.append(f"No first-parent commit in {span} touches the upstream files behind the project's contracts.")
    if delta.must_read:
        lines += ["", "Read these in full, whatever the log says (they changed):", ""]
        lines += [f"- [ ] {code(item.path)}: +{item.added} −{item.removed} in {item.files} files" for item in delta.must_read]
    return lines + [""]


MAX_OTHER_MOVES = 40  # the stack's heavy parts are listed in full; the rest by name, up to this many


def _moved(move: "Move") -> str:
    was = code(move.old) if move.old is not None else "(not required)"
    now = code(move.new) if move.new is not None else "(no longer required)"
    return f"{was} → {now}"


def closure_section(result: "CheckResult") -> list[str]:
    """What moves between the two releases' dependency closures (closure/delta.py): the
    stack's heavy parts with the chain that brings each, then the other packages by name."""
    delta = result.closure_delta
    if delta is None or not delta.reported:
        return []
    old, new = plain(result.old.release.short), plain(result.new.release.short)
    lines = ["### What moves together", "",
             f"The dependency closure (SGLang's requirements, then each exact pin's own, transitively) has "
             f"{delta.sizes[0]} packages on {old} and {delta.sizes[1]} on {new}"
             f"{f', read for the CUDA build {inline(delta.cuda_build)}' if delta.cuda_build else ''}. Installs the "
             "project makes of these packages must move with them.", ""]
    lines += [inline(delta.unread), ""] if delta.unread else []
    lines += [inline(delta.build_unread), ""] if delta.build_unread else []
    key = [move for move in delta.moves if move.key]
    if key or delta.python:
        lines += ["| package | moves | brought by | platforms |", "|---|---|---|---|"]
        if delta.python:
            lines.append(f"| Python | {cell(code(delta.python[0]))} → {cell(code(delta.python[1]))} | every package's "
                         "`Requires-Python` | |")
        for move in key:
            lines.append(f"| {cell(code(move.name))} | {cell(_moved(move))} | {cell(code(move.chain))} | "
                         f"{cell(', '.join(move.platforms))} |")
        lines.append("")
    others = [move for move in delta.moves if not move.key]
    if others:
        listed = ", ".join(f"{code(move.name)} {_moved(move)}" for move in others[:MAX_OTHER_MOVES])
        more = f", and {len(others) - MAX_OTHER_MOVES} more" if len(others) > MAX_OTHER_MOVES else ""
        lines += [f"Also moving: {listed}{more}.", ""]
    return lines


def _checklist(result: "CheckResult", fixes: tuple[int, list[str]]) -> list[str]:
    old, new = plain(result.old.release.short), plain(result.new.release.short)
    where = f" in {code(result.pin.where)}" if result.pin else ""
    counts = Counter(d.severity for d in result.diagnostics)
    image = result.pin is not None and not result.pin.written.lower().startswith("sglang")
    target = (f"the SGLang image ({code(result.pin.written)}) to {new}" if image
              else f"Pin {code('sglang==' + result.new.release.short)}")
    items = [f"{'Move ' if image else ''}{target}{where}, and move the pins that mirror SGLang's stack with it"]
    fixed, changed = fixes
    if fixed:
        shown = ", ".join(code(printable_path(path)) for path in changed[:MAX_PLACES])
        more = f" and {len(changed) - MAX_PLACES} more" if len(changed) > MAX_PLACES else ""
        items.append(f"Apply the safe fixes: {code(f'sglang-contracts fix --new {result.new.release.short}')} fixes "
                     f"{plural(fixed, 'finding')} in {plural(len(changed), 'file')} ({shown}{more}); review the diff, "
                     "the other findings are by hand")
    if counts["error"]:
        items.append("Fix every error above, or accept it in the baseline with a written justification")
    if counts["warning"]:
        items.append("Decide on each warning above: it may run, but not the way it did on " + old)
    items += [
        f"Accuracy A/B: run the same evaluation on {old} and {new} and compare; numerics, kernels and "
        "defaults that change under an unchanged name are invisible to a static check",
        f"Startup logs: start the server on {new} and read the log for deprecation warnings, ignored or "
        "renamed arguments, and fallbacks to slower kernels",
        "Run the tests that need GPUs, and one end-to-end request per model the project serves",
    ]
    return ["### Before merging", "", *(f"- [ ] {item}" for item in items), ""]


def what_fix_writes(result: "CheckResult") -> tuple[int, list[str]]:
    """The findings `fix` fixes and the files it changes, as `fix --diff` counts them (its
    first round, nothing written): not the rules' fix class, which counted slime's 18 where fix
    fixes 9 (a pin a fix refuses, a patch hunk of a past release's folder)."""
    from sglang_contracts.check.fixes import apply_fixes

    if not any(d.severity != "info" for d in result.diagnostics):
        return 0, []
    workspace, fixed, _ = apply_fixes(result, unsafe=False)
    return len(fixed), sorted(doc.relpath for doc in workspace.documents.values() if doc.changed)


def write_markdown(result: "CheckResult", out: TextIO, quiet: bool = False,
                   fixes: tuple[int, list[str]] | None = None) -> None:
    """Every value of the project or the releases shown as code or as prose (infra/markdown).
    Groups are cut to fewer findings each until the whole fits MAX_CHARACTERS. `fixes`: what
    `fix` fixes, when the caller knows (bump, which ran it, says so itself)."""
    fixes, stacks = what_fix_writes(result) if fixes is None else fixes, stack_findings(result)
    for shown in (None, 40, 20, 10, 5, 2, 1, 0):
        text = _report(result, shown, fixes, stacks)
        if len(text) <= MAX_CHARACTERS:
            break
    out.write(text)


def _report(result: "CheckResult", shown: int | None, fixes: tuple[int, list[str]], stacks: dict[int, str]) -> str:
    old, new = plain(result.old.release.short), plain(result.new.release.short)
    diagnostics = result.diagnostics
    lines = [f"## SGLang contracts: {old} → {new}", "", *_pins(result), ""]
    if diagnostics:
        files = len({d.path for d in diagnostics})
        guards = sum(report_of(d.code).guards_what_both_define for d in diagnostics)
        apart = (f"; {guards} of them are defensive code guarding what both releases define, dead code to look "
                 "at rather than a break") if guards else ""
        lines.append(f"**{plural(len(diagnostics), 'contract')} with SGLang break** in this bump "
                     f"({_severity_counts(diagnostics)}, in {plural(files, 'file')}): each held on {old} "
                     f"and fails on {new}{apart}.")
        lines.append("Read statically from both releases and the project, nothing run; what only running "
                     "can show is in the checklist at the end.")
    else:
        lines.append(f"**No contract breaks.** Every contract with SGLang that a static check can see "
                     f"holds on {new} as it did on {old}.")
    lines += _dominant_line(diagnostics)
    if result.baselined:
        lines.append(f"{plural(result.baselined, 'finding')} accepted in the baseline {'is' if result.baselined == 1 else 'are'} not listed.")
    lines.append("")
    by_surface: dict[str, list[Diagnostic]] = {}
    for d in diagnostics:
        if not _inherited(d):
            by_surface.setdefault("patch-files" if id(d) in stacks else surface_for(d.code).key, []).append(d)
    for surface in surface_order():
        if surface.key in by_surface:
            if surface.key == "patch-files":
                lines += _patch_section(result, surface.title, surface.what, by_surface[surface.key], shown, stacks)
            else:
                lines += _surface_section(result, surface.title, surface.what, by_surface[surface.key], shown)
    lines += _inherited_section(result, list(filter(_inherited, diagnostics)), shown)
    lines += closure_section(result)
    lines += upstream_delta_section(result)
    lines += _checklist(result, fixes)
    return "\n".join(lines).rstrip("\n") + "\n"
