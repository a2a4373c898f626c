"""Command-line pass-through contracts (SGC504-SGC509): upstream's argparse interface as the
project's wrapper exposes it (`--sglang-<option>`, `args.sglang_<dest>`), judged per release.

What the project can use on a release is what the wrapper makes of that release's command line
(upstream/commandline.py): every option whose dest is not in the skip list, registered under the
prefixed strings, storing to the prefixed dest. A name is judged only where the old release
exposed it (differential), and an attribute the project sets itself is never judged as a read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from sglang_contracts.contracts.base import CheckContext, Process, Reads, contract
from sglang_contracts.diagnostics import Diagnostic, finding_at
from sglang_contracts.project.facts import Position
from sglang_contracts.infra.errors import ContractsError
from sglang_contracts.project.commandline import (DIRECT, PassThrough, Use, Wrapper, direct_launch, ignores_unknown_flags,
                                                  pass_through)
from sglang_contracts.project.parsers import wrapper_allows_abbreviations
from sglang_contracts.upstream.commandline import CommandLine, Option, argparse_dest, command_line, default_spelled, take_flag


@dataclass
class Exposed:
    """What one release's command line becomes through the wrapper."""

    by_dest: dict[str, Option]  # the project's dest (`sglang_dp_size`) -> option
    by_string: dict[str, Option]  # the project's option string (`--sglang-dp-size`) -> option
    skipped: dict[str, Option]  # upstream dest -> the option the skip list drops


def project_dest(option: Option, wrapper: Wrapper) -> str:
    # With `dest=` the wrapper prefixes it; without, argparse derives it from the prefixed strings.
    if option.dest != argparse_dest(option.strings):
        return wrapper.dest_prefix + option.dest
    return argparse_dest([project_string(string, wrapper) for string in option.strings])


def project_string(string: str, wrapper: Wrapper) -> str:
    return wrapper.flag_prefix + string.lstrip("-")


def expose(line: CommandLine, wrapper: Wrapper) -> Exposed:
    skip = {text for text, _ in wrapper.skipped}
    exposed = Exposed({}, {}, {})
    for option in line.options:
        if option.dest in skip:
            exposed.skipped.setdefault(option.dest, option)
            continue
        exposed.by_dest.setdefault(project_dest(option, wrapper), option)
        for string in option.strings:
            exposed.by_string.setdefault(project_string(string, wrapper), option)
    return exposed


@dataclass
class PassThroughModel:
    facts: PassThrough
    wrapper: Wrapper
    old_line: CommandLine
    new_line: CommandLine
    old: Exposed
    new: Exposed


@dataclass
class Unreadable:
    """A wrapper whose upstream command line could not be read: an extraction error, reported
    as SGC000 at the wrapper, never a clean report."""

    wrapper: Wrapper
    error: str


def _models(context: CheckContext) -> list[PassThroughModel | Unreadable]:
    """One model per way the project hands flags to upstream: its prefixing wrapper, and the
    argument lists it assembles for `python -m sglang.launch_server`."""
    launched = direct_launch(context.project)
    found = pass_through(context.project) + ([launched] if launched is not None else [])
    if not found:
        return []
    try:
        old_line, new_line = command_line(context.old), command_line(context.new)
    except ContractsError as error:
        facts = found[0]
        wrapper = facts.wrappers[0]
        if wrapper is DIRECT:  # no wrapper of its own: reported where the first launch is written
            first = facts.uses[0]
            wrapper = Wrapper(first.path, first.position.line, DIRECT.flag_prefix, "", (), "")
        return [Unreadable(wrapper, str(error))]
    if old_line is None or new_line is None:
        return []
    return [PassThroughModel(facts, facts.wrappers[0], old_line, new_line, expose(old_line, facts.wrappers[0]),
                             expose(new_line, facts.wrappers[0])) for facts in found]


def pass_through_models(ctx: CheckContext) -> list[PassThroughModel]:
    """The models whose command lines could both be read (else SGC000, below)."""
    return [model for model in ctx.shared("command-line-pass-through", _models) if isinstance(model, PassThroughModel)]


def prefixing_models(ctx: CheckContext) -> list[PassThroughModel]:
    """The project's prefixing wrappers over both releases' command lines."""
    return [model for model in pass_through_models(ctx) if model.wrapper is not DIRECT]


def _command_line_unreadable(ctx: CheckContext) -> Iterator[Diagnostic]:
    """SGC000, yielded with SGC504's findings (one check per code; SGC000's own reads the files)."""
    for model in ctx.shared("command-line-pass-through", _models):
        if isinstance(model, Unreadable):
            at = model.wrapper
            yield finding_at("SGC000", at.path, at.line, 1, "", what="cannot read upstream's command line for the "
                             f"{at.flag_prefix} flags handed to it", error=model.error,
                             unchecked="the command-line contracts (SGC504-SGC508) are not checked", hint="")


def _same_option_in(new: CommandLine, option: Option) -> Option | None:
    """The new release's option that keeps one of the old option's strings."""
    return next((new.by_string[s] for s in option.strings if s in new.by_string), None)


def _spelled(option: Option) -> str:
    return "/".join(option.strings)


def _where_now(model: PassThroughModel, option: Option) -> str:
    """What became of an option the project no longer gets under the old name."""
    wrapper = model.wrapper
    now = _same_option_in(model.new_line, option)
    if now is None:
        return f"; {_spelled(option)} is gone from upstream's command line"
    if now.dest in model.new.skipped:
        return (f"; {_spelled(now)} now has dest {now.dest}, which the skip list {wrapper.skip_list} drops, so no "
                f"{wrapper.flag_prefix} option stores it")
    if now.deprecated:
        replacement = f" (use {project_string(now.replacement, wrapper)})" if now.replacement else ""
        return f"; {_spelled(now)} is now a deprecated alias storing to {project_dest(now, wrapper)}{replacement}"
    return f"; {_spelled(now)} now stores to {project_dest(now, wrapper)}"


def _judged(model: PassThroughModel, use: Use) -> Option | None:
    """The old option behind a read, when the old release exposed it and the new does not."""
    if model.facts.set_by_project(use):
        return None
    option = model.old.by_dest.get(use.name)
    if option is None or use.name in model.new.by_dest:
        return None
    return option


DOCS = (".md", ".mdx", ".rst", ".txt", ".adoc")


def _refused(use: Use) -> str | None:
    """The severity of a flag upstream refuses: an error where it runs, a warning in docs, in a
    comment, or in an option's help text (prose: nothing runs it)."""
    return "warning" if use.path.endswith(DOCS) or use.how in ("comment", "prose") else None


def _dropped_silently(ctx: CheckContext, model: PassThroughModel) -> bool:
    """Whether a flag the wrapper's parser does not know is ignored rather than refused: the
    project parses its command line with `ignore_unknown_args=True` (upstream's own parser, for
    a direct launch, refuses it)."""
    if model.wrapper is DIRECT:
        return False
    return ctx.shared("command line ignores unknown flags", lambda c: any(
        ignores_unknown_flags(text) for text in c.project.texts.values()))


def _common(ctx: CheckContext) -> dict[str, str]:
    return dict(old=ctx.old_version, new=ctx.new_version)


@contract("SGC504", reads=Reads.WHOLE_PROJECT, process=Process.MAIN)
def pass_through_destination_gone(ctx: CheckContext) -> Iterator[Diagnostic]:
    yield from _command_line_unreadable(ctx)
    for model, use in ((model, use) for model in pass_through_models(ctx) for use in model.facts.uses):
        if use.kind not in ("read", "probe", "default"):
            continue
        if use.kind == "default":
            option = model.old.by_dest.get(use.name)
            if option is None or use.name in model.new.by_dest:
                continue
        else:
            option = _judged(model, use)
            if option is None:
                continue
        effect = {"read": "raises AttributeError",
                  "probe": f"now always answers as if absent ({use.how})",
                  "default": "sets an attribute no option of upstream's stores to any more"}[use.kind]
        yield finding_at("SGC504", use.path, use.position.line, use.position.col, use.name,
                         severity=None if use.kind == "read" else "warning", name=use.name, effect=effect,
                         option=_spelled(option), now=_where_now(model, option), **_common(ctx))


@dataclass
class TakenFlag:
    """A flag string of the project, and what each release's parser takes it for."""

    model: PassThroughModel
    use: Use
    old_option: Option  # what the old release took it for (exactly, or as an abbreviation)
    new_option: Option | None  # what the new one takes it for; None: refused
    abbreviated: bool = False  # not an option string on the old release: a unique prefix of one
    ambiguous: tuple[Option, ...] = ()  # the new release's candidates, when the prefix now matches several
    new_abbreviates: bool = True  # the new release's parser takes abbreviations

    @property
    def changed_meaning(self) -> bool:
        """Taken on the new release for another option than the old one (by abbreviation)."""
        new = self.new_option
        return new is not None and new is not _same_option_in(self.model.new_line, self.old_option) \
            and new.dest != self.old_option.dest


def _abbreviations(ctx: CheckContext, model: PassThroughModel) -> tuple[bool, bool]:
    """Whether the parser that reads the flags takes abbreviations, on the old and the new
    release: upstream's own for a direct launch, else the project's (project/parsers.py; not
    judged when it cannot be seen)."""
    if model.wrapper is DIRECT:
        return model.old_line.allow_abbrev, model.new_line.allow_abbrev
    allowed = ctx.shared(f"abbreviations {model.wrapper.path}:{model.wrapper.line}", lambda c: wrapper_allows_abbreviations(
        c.project, model.wrapper.path, model.wrapper.line)) is True
    return allowed, allowed


def _own_prefixes(model: PassThroughModel) -> set[str]:
    """Option strings the project registers itself with the wrapper's prefix (argparse's string
    for the dest): a flag one of them starts with may be the project's own, not upstream's."""
    return {"--" + use.name.replace("_", "-") for use in model.facts.uses if use.how == "add_argument"}


def _taken(model: PassThroughModel, use: Use, abbreviate: tuple[bool, bool], own: set[str]) -> TakenFlag | None:
    exact = model.old.by_string.get(use.name)
    if exact is not None:
        old_option, abbreviated = exact, False
    elif abbreviate[0] and not any(string.startswith(use.name) for string in own):
        old_option, _ = take_flag(use.name, model.old.by_string)
        abbreviated = True
    else:
        return None
    if old_option is None or old_option.deprecated:
        return None
    if abbreviate[1] and not any(string.startswith(use.name) for string in own):
        new_option, candidates = take_flag(use.name, model.new.by_string)
    else:
        new_option, candidates = model.new.by_string.get(use.name), []
    return TakenFlag(model, use, old_option, new_option, abbreviated, tuple(candidates), abbreviate[1])


def _flag_uses(ctx: CheckContext) -> Iterator[TakenFlag]:
    """Each flag the old release's command line accepted (not as a deprecated alias), exactly or
    as argparse's abbreviation, with what the new release takes it for."""
    for model in pass_through_models(ctx):
        abbreviate, own = _abbreviations(ctx, model), _own_prefixes(model)
        for use in model.facts.uses:
            taken = _taken(model, use, abbreviate, own) if use.kind == "flag" else None
            if taken is not None:
                yield taken


def _project_spelled(option: Option, wrapper: Wrapper) -> str:
    return "/".join(project_string(string, wrapper) for string in option.strings)


@contract("SGC505", reads=Reads.WHOLE_PROJECT, process=Process.MAIN)
def pass_through_flag_not_accepted(ctx: CheckContext) -> Iterator[Diagnostic]:
    for taken in _flag_uses(ctx):
        model, use, old_option, new_option = taken.model, taken.use, taken.old_option, taken.new_option
        was = f"an abbreviation of {_spelled(old_option)}" if taken.abbreviated else _spelled(old_option)
        if taken.ambiguous:
            matches = ", ".join(_project_spelled(option, model.wrapper) for option in taken.ambiguous)
            yield finding_at("SGC505", use.path, use.position.line, use.position.col, use.name,
                             severity=_refused(use), flag=use.name,
                             effect=f"finds the abbreviation ambiguous (argparse exits: it could match {matches})",
                             option=was, now="", **_common(ctx))
        elif taken.changed_meaning:
            yield finding_at("SGC505", use.path, use.position.line, use.position.col, use.name,
                             severity=_refused(use), flag=use.name,
                             effect=f"takes it for another option, {_project_spelled(new_option, model.wrapper)} "
                                    f"(argparse's abbreviation, storing to {project_dest(new_option, model.wrapper)})",
                             option=was, now="", **_common(ctx))
        elif new_option is None:
            yield _gone_flag_finding(ctx, taken, was)
        elif new_option.deprecated:
            yield _deprecated_flag_finding(ctx, taken, was)


def _gone_flag_finding(ctx: CheckContext, taken: TakenFlag, was: str) -> Diagnostic:
    """SGC505 for a flag the new release no longer accepts (dropped silently where the project
    parses with ignore_unknown_args=True)."""
    model, use, old_option = taken.model, taken.use, taken.old_option
    now = _where_now(model, old_option)
    if taken.abbreviated and not taken.new_abbreviates:
        now = ("; its parser no longer takes abbreviations (allow_abbrev=False): "
               f"write {_project_spelled(old_option, model.wrapper)}")
    effect, severity = "no longer accepts it", _refused(use)
    if severity is None and _dropped_silently(ctx, model):  # where it runs, not in docs or prose
        effect = ("no longer accepts it (the project parses with ignore_unknown_args=True: the flag is "
                  "dropped without a word, and the value it sets is lost)")
        severity = "warning"
    return finding_at("SGC505", use.path, use.position.line, use.position.col, use.name,
                      severity=severity, flag=use.name, effect=effect,
                      option=was, now=now, **_common(ctx))


def _deprecated_flag_finding(ctx: CheckContext, taken: TakenFlag, was: str) -> Diagnostic:
    """SGC505 for a flag the new release accepts only as a deprecated alias."""
    model, use, new_option = taken.model, taken.use, taken.new_option
    replacement = f": use {project_string(new_option.replacement, model.wrapper)}" if new_option.replacement else ""
    return finding_at("SGC505", use.path, use.position.line, use.position.col, use.name, severity="warning",
                      flag=use.name, effect="accepts it only as a deprecated alias",
                      option=was,
                      now=f"{replacement} (it stores to {project_dest(new_option, model.wrapper)})",
                      **_common(ctx))


@contract("SGC506", reads=Reads.WHOLE_PROJECT, process=Process.MAIN)
def pass_through_choice_removed(ctx: CheckContext) -> Iterator[Diagnostic]:
    for taken in _flag_uses(ctx):
        use, old_option, new_option = taken.use, taken.old_option, taken.new_option
        if not use.value or new_option is None or taken.changed_meaning or old_option.choices is None \
                or new_option.choices is None:
            continue
        if use.value in old_option.choices and use.value not in new_option.choices:
            yield finding_at("SGC506", use.path, use.position.line, use.position.col, use.name,
                             severity=_refused(use), flag=use.name,
                             value=use.value, choices=", ".join(new_option.choices), **_common(ctx))


def _entries(ctx: CheckContext) -> Iterator[tuple[PassThroughModel, str, Position, str]]:
    """Each skip-list and rename-table entry of each wrapper, once (two wrappers may share a list)."""
    seen: set[tuple[str, int, int]] = set()
    for model in prefixing_models(ctx):
        wrapper = model.wrapper
        entries = [(text, position, f"skip list {wrapper.skip_list}") for text, position in wrapper.skipped]
        entries += [(old, position, "rename table") for old, _, position in wrapper.renames]
        for text, position, table in entries:
            if (wrapper.path, position.line, position.col) not in seen:
                seen.add((wrapper.path, position.line, position.col))
                yield model, text, position, table


def _matched(line: CommandLine, dest: str) -> list[Option]:
    return line.by_dest.get(dest, [])


@contract("SGC507", reads=Reads.WHOLE_PROJECT, process=Process.MAIN)
def pass_through_entry_match_changed(ctx: CheckContext) -> Iterator[Diagnostic]:
    for model, text, position, table in _entries(ctx):
        wrapper = model.wrapper
        before, after = _matched(model.old_line, text), _matched(model.new_line, text)
        strings_before = {s for option in before for s in option.strings}
        strings_after = {s for option in after for s in option.strings}
        if strings_before == strings_after:
            continue
        if not after:
            what = _no_longer_matched(model, table, before, strings_before)
        elif not before:
            what = _newly_matched(model, table, strings_after)
        else:
            what = (f"now matches {'/'.join(sorted(strings_after))} instead of "
                    f"{'/'.join(sorted(strings_before))}")
        yield finding_at("SGC507", wrapper.path, position.line, position.col, text, entry=text, table=table,
                         what=what, **_common(ctx))


def _no_longer_matched(model: PassThroughModel, table: str, before: list[Option], strings_before: set[str]) -> str:
    """What an entry that matches no option any more did match, and where that option went."""
    what = f"matches no option any more (it matched {'/'.join(sorted(strings_before))})"
    moved = next((o for o in (_same_option_in(model.new_line, option) for option in before) if o), None)
    if moved is not None:
        what += f"; that option now has dest {moved.dest}"
        if table.startswith("skip"):
            what += f" and is no longer skipped: {project_string(moved.strings[0], model.wrapper)} appears"
    return what


def _newly_matched(model: PassThroughModel, table: str, strings_after: set[str]) -> str:
    """What an entry that matched nothing now matches, and (a skip list's) what it hides."""
    wrapper = model.wrapper
    what = f"now matches {'/'.join(sorted(strings_after))}, which it did not"
    exposed = sorted(project_string(s, wrapper) for s in strings_after
                     if project_string(s, wrapper) in model.old.by_string)
    if exposed and table.startswith("skip"):
        what += f": {', '.join(exposed)} and the option's {wrapper.dest_prefix}* dest stop existing"
    return what


@contract("SGC508", reads=Reads.WHOLE_PROJECT, process=Process.MAIN)
def pass_through_new_option_decides(ctx: CheckContext) -> Iterator[Diagnostic]:
    """A new option now decides what an old option the project uses did: the old one became a
    deprecated alias storing to the new option's dest, whose own default then applies."""
    seen: set[tuple[str, str, str]] = set()
    for model in pass_through_models(ctx):
        old_dests = set(model.old_line.by_dest)
        for use in model.facts.uses:
            diagnostic = _new_option_decides(ctx, model, use, old_dests, seen)
            if diagnostic is not None:
                yield diagnostic


def _new_option_decides(ctx: CheckContext, model: PassThroughModel, use, old_dests: set[str],
                        seen: set[tuple[str, str, str]]) -> Diagnostic | None:
    """SGC508 for the use, once per function and new option; None where no new option decides."""
    now = _folded_switch(model, use, old_dests)
    if now is None:
        return None
    target = next((o for o in model.new_line.live(now.dest)), None)
    key = (use.path, use.scope or str(use.position.line), now.dest)  # once per function and new option
    if target is None or key in seen:
        return None
    seen.add(key)
    choices = f", one of {', '.join(target.choices)}" if target.choices else ""
    return finding_at("SGC508", use.path, use.position.line, use.position.col, target.dest, severity="info",
                      used=use.name, option=project_string(target.strings[0], model.wrapper),
                      default=target.default or "unset", choices=choices,
                      help=target.help.strip().split(". ")[0][:160], **_common(ctx))


def _folded_switch(model: PassThroughModel, use, old_dests: set[str]) -> Option | None:
    """The new release's deprecated alias of the (live) old option the use names, when it folds the
    switch into one value of a new option (`new_flag="--x=value"`): only that leaves the rest to
    that option's default; a plain rename keeps the behaviour."""
    old_option = _old_option_used(model, use)
    if old_option is None or old_option.deprecated:
        return None
    now = _same_option_in(model.new_line, old_option)
    if now is None or not now.deprecated or now.dest in old_dests or "=" not in now.replacement:
        return None
    return now


def _old_option_used(model: PassThroughModel, use) -> Option | None:
    """The old release's option a flag, or a read, probe or write of a destination, names."""
    if use.kind == "flag":
        return model.old.by_string.get(use.name)
    return model.old.by_dest.get(use.name) if use.kind in ("read", "probe", "write") else None


def _mention_pattern(dest: str) -> re.Pattern:
    """`dest` as a key or keyword: `kwargs["dest"] = ...`, `ServerArgs(dest=...)`."""
    return re.compile(rf"[\"']{re.escape(dest)}[\"']|\b{re.escape(dest)}\s*=(?!=)")


def _mentions(project_texts: list[str], dest: str) -> bool:
    """Does the project's Python name the field as a key or keyword: then it sets it on a road
    this model does not follow."""
    pattern = _mention_pattern(dest)
    return any(dest in text and pattern.search(text) for text in project_texts)


def _set_by_project(model: PassThroughModel, option: Option, texts: list[str]) -> bool:
    """Does the project set the option anywhere: a flag of it, a write or a default of its
    destination, its field name as a key or keyword?"""
    strings = {project_string(string, model.wrapper) for string in option.strings}
    dest = project_dest(option, model.wrapper)
    return any(use.name in strings if use.kind == "flag" else use.name == dest and use.kind in ("write", "default")
               for use in model.facts.uses) or _mentions(texts, option.dest)


def _where_told(model: PassThroughModel) -> tuple[str, int]:
    """Where a finding about options the project never names goes: its wrapper, or the first
    command line that launches upstream's server."""
    if model.wrapper is not DIRECT:
        return model.wrapper.path, model.wrapper.line
    first = model.facts.uses[0]
    return first.path, first.position.line


def _first_sentence(text: str) -> str:
    return text.strip().split(". ")[0][:160] or "(no help text)"


@contract("SGC509", reads=Reads.WHOLE_PROJECT, process=Process.MAIN)
def pass_through_default_changed(ctx: CheckContext) -> Iterator[Diagnostic]:
    """What upstream now does when the project leaves an option unset, as the new release's
    declarations show it: a changed default, or a switch folded into a new option whose default
    then decides. Info only: the declarations say the default moved, not that it matters."""
    models = pass_through_models(ctx)
    # Every text at once, decoded (project/texts.py holds some as bytes): only for a project with a pass-through.
    texts = list(ctx.project.texts.values()) if models else []
    seen: set[str] = set()
    for model in models:
        yield from _default_changes_of(ctx, model, texts, seen)


def _default_changes_of(ctx: CheckContext, model: PassThroughModel, texts: list[str],
                        seen: set[str]) -> Iterator[Diagnostic]:
    """One model's SGC509 findings: its changed defaults, then its switches folded into a new
    option. An option set by the project through one model is known to it through all (`seen`)."""
    path, line = _where_told(model)
    old_dests = set(model.old_line.by_dest)
    folded: dict[str, list[Option]] = {}  # the new option's dest -> the old switches now feeding it
    for option in model.old_line.options:
        now = _live_counterpart(model, option)
        if now is None:
            continue
        if now.deprecated and "=" in now.replacement and now.dest not in old_dests:
            folded.setdefault(now.dest, []).append(option)
        elif _default_moved(option, now) and option.dest not in seen:
            seen.add(option.dest)
            if not _set_by_project(model, now, texts):
                yield finding_at("SGC509", path, line, 1, option.dest, severity="info",
                                 option=project_string(now.strings[0], model.wrapper),
                                 change=f"changed its default from {default_spelled(option)} to {default_spelled(now)}",
                                 help=_first_sentence(now.help), **_common(ctx))
    yield from _folded_defaults(ctx, model, folded, texts, seen, path, line)


def _live_counterpart(model: PassThroughModel, option: Option) -> Option | None:
    """The new release's option for an old one the project does not skip (not a deprecated alias)."""
    if option.deprecated or option.dest in model.new.skipped:
        return None
    return _same_option_in(model.new_line, option)


def _default_moved(option: Option, now: Option) -> bool:
    return not now.deprecated and now.dest == option.dest and default_spelled(option) != default_spelled(now)


def _folded_defaults(ctx: CheckContext, model: PassThroughModel, folded: dict[str, list[Option]], texts: list[str],
                     seen: set[str], path: str, line: int) -> Iterator[Diagnostic]:
    """SGC509 for each new option whose default now decides what old switches, folded into it, did."""
    for dest, switches in sorted(folded.items()):
        target = next(iter(model.new_line.live(dest)), None)
        if target is None or dest in seen:
            continue
        seen.add(dest)
        if _set_by_project(model, target, texts) or any(_set_by_project(model, switch, texts) for switch in switches):
            continue  # a project that sets one of them is told by SGC508 (or has chosen)
        olds = ", ".join(f"{project_string(s.strings[0], model.wrapper)} (default {default_spelled(s)})"
                         for s in switches)
        choices = f", one of {', '.join(target.choices)}" if target.choices else ""
        yield finding_at("SGC509", path, line, 1, dest, severity="info",
                         option=project_string(target.strings[0], model.wrapper),
                         change=f"is new, and its default ({default_spelled(target)}{choices}) now decides what "
                                f"{olds} did: they became its deprecated aliases",
                         help=_first_sentence(target.help), **_common(ctx))
