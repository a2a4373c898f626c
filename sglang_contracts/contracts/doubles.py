"""Test-double contracts (SGC601-SGC603): upstream names patched by string, fakes of upstream
classes, and probes of upstream source text.
"""

from __future__ import annotations

import ast
import re
import re._constants as re_constants
import re._parser as re_parser
import textwrap
from dataclasses import dataclass
from itertools import takewhile
from typing import Iterator

from sglang_contracts.analysis.configured import CONFIGURATION, configuration_text, entry_positions
from sglang_contracts.contracts.base import CheckContext, Process, Reads, contract, fixes
from sglang_contracts.analysis.hints import moved_home
from sglang_contracts.analysis.resolve import project_view, resolvers
from sglang_contracts.contracts.serverargs import field_sets, typed_as_server_args
from sglang_contracts.analysis.targets import upstream_dotted
from sglang_contracts.upstream.targets import resolve_target
from sglang_contracts.diagnostics import Diagnostic, finding, finding_at
from sglang_contracts.project.data_probes import data_probes
from sglang_contracts.project.facts import FileFacts, Position
from sglang_contracts.infra.lines import LINE_BREAK, line_starts, numbered_lines
from sglang_contracts.infra.pysource import parse_quietly
from sglang_contracts.upstream.model import UpstreamModel, is_upstream
from sglang_contracts.upstream.serverargs import SERVER_ARGS

FAKE_NAME = re.compile(r"^(?:Fake|Mock|Dummy|Stub)_?(?P<a>[A-Z]\w*)$|^(?P<b>[A-Z]\w*?)_?(?:Fake|Mock|Stub|Double)$")


# -- SGC601: patch targets ---------------------------------------------------------------

# A patch given one of these keywords may not raise on a name that is gone: `create=True`
# makes it (mock), `raising=False` leaves it (pytest's monkeypatch). Only the keyword's name is
# in the facts: `create=False`, written out, is taken for the same (a warning, never a false error).
MAY_NOT_RAISE = frozenset({"create", "raising"})


def _patch_targets(ctx: CheckContext) -> Iterator[tuple[FileFacts, Position, str, str, bool]]:
    """(facts, position, upstream dotted target, how it is patched, whether the patch raises
    when the target is gone) for every patch target."""
    view = project_view(ctx)
    for facts in ctx.project.files.values():
        for probe in facts.probes:
            target = _patch_target(ctx, view, facts, probe)
            if target:
                yield facts, *target, not MAY_NOT_RAISE.intersection(probe.keywords)


def _patch_target(ctx: CheckContext, view, facts: FileFacts, probe) -> tuple[Position, str, str] | None:
    """(position, upstream dotted target, how) when the probe patches an upstream name, else None."""
    function = view.dotted(facts, probe.function) or probe.function  # `patch as P`: what P is decides
    last = function.rsplit(".", 1)[-1]
    # not the builtins; `patch.multiple`/`patch.dict`: the scanner's probes of each name they patch
    patcher = last in ("patch", "multiple", "dict") or last in ("setattr", "delattr") and function != last
    if patcher and probe.string_at(0):  # patch("sglang.x.y.name")
        text, position = probe.string_at(0)
        dotted = text if is_upstream(text) else ctx.project.upstream_path(text)
        return (position, dotted, probe.function) if dotted and "." in text else None
    if _patches_class_attribute(probe, function, patcher, last):  # patch.object(Cls, "name")
        owner = upstream_dotted(view, facts, probe.subject.types[0][2:])
        if owner:
            text, position = probe.string_at(1)
            return position, f"{owner}.{text}", probe.function
    return None


def _patches_class_attribute(probe, function: str, patcher: bool, last: str) -> bool:
    """`patch.object(Cls, "name")` or `monkeypatch.setattr(Cls, "name", ...)` on a class (`function`:
    the probe's, through the file's imports)."""
    return (patcher or last == "object" and ".patch." in f".{function}") and probe.subject is not None \
        and probe.subject.types[0].startswith("C:") and bool(probe.string_at(1))


# imports_anywhere: a target names a project module by its string (`patch("app.layers.rmsnorm")`),
# read through that module's imports, which the patching file need not import.
@contract("SGC601", reads=Reads.IMPORTS_ANYWHERE, process=Process.MAIN)
def patch_target_gone(ctx: CheckContext) -> Iterator[Diagnostic]:
    gone = [(facts, position, dotted, how, raises) for facts, position, dotted, how, raises in _patch_targets(ctx)
            if resolve_target(ctx.old, dotted).found and resolve_target(ctx.new, dotted).missing]
    for facts, position, dotted, how, raises in gone:
        # create=True / raising=False: no AttributeError, the test patches what nothing reads now
        yield finding("SGC601", facts, position, dotted, target=dotted, how=how, old=ctx.old_version,
                      new=ctx.new_version, home=_target_home(ctx, dotted), severity=None if raises else "warning")


def _target_home(ctx: CheckContext, dotted: str) -> str | None:
    """Where the new release has the same object a gone target named: the module-level name
    (a function, a class) found at a verified new home, with any member path after it."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module, name, rest = ".".join(parts[:cut]), parts[cut], parts[cut + 1:]
        if not ctx.old.module_exists(module):
            continue
        candidates = ctx.new.find_definitions({name}).get(name, [])
        home = moved_home(ctx.old, ctx.old.resolve_name(module, name), ctx.new, name, candidates, module)
        moved = ".".join([home, *rest]) if home else None
        return moved if moved and resolve_target(ctx.new, moved).found else None
    return None


@fixes("SGC601")
def patch_new_home(diagnostic: Diagnostic, workspace) -> bool:
    """Patch the target where the new release defines the same object: the string is rewritten
    when it spells the upstream path itself (not a project re-export, not `patch.object`)."""
    import libcst
    from sglang_contracts.fix import python as python_edits  # libcst: only a fix run pays its import

    home = diagnostic.data.get("home")
    document = workspace.document(diagnostic.path)
    if not home or not document.python:
        return False
    literal = python_edits.nodes_at(document, diagnostic.line, diagnostic.col, (libcst.SimpleString,))
    if not literal or literal[0].evaluated_value != diagnostic.data["target"]:
        return False
    return python_edits.replace_string(document, diagnostic.line, diagnostic.col, home)


# -- SGC602: fakes ---------------------------------------------------------------------

@dataclass
class Fake:
    facts: FileFacts
    position: Position
    name: str
    upstream: str  # dotted
    provided: dict[str, Position]  # names the fake defines, with where
    complete: bool  # a class (may lack names); a spec mock answers every name of its spec


def _members(ctx: CheckContext, model: UpstreamModel, dotted: str, fields) -> set[str] | None:
    """Names an upstream class offers its instances in one release; None when not a class."""
    if fields is not None and model.resolve_path(dotted).origin == SERVER_ARGS:
        return set(fields.fields)
    origin = model.resolve_class(dotted)
    if origin is None:
        return None
    names: set[str] = set()
    for owner in model.mro(origin)[0]:
        record = model.class_record(owner)
        names.update(record["methods"], record["attributes"], (f[0] for f in record["fields"] if len(f) < 4 or f[3]))
    return names


def _fakes(ctx: CheckContext) -> list[Fake]:
    view = project_view(ctx)
    configured = {project: upstream for project, upstream in ctx.settings.get("fakes", {}).items()}
    found = []
    for key, cls in view.classes.items():
        upstream = configured.get(key)
        if upstream is None:
            upstream = _named_after_upstream(view, cls)
            if upstream is None:
                continue  # not named after an imported upstream class, or a subclass of it
        where = {method.name: method.position for method in cls.fact.methods}
        provided = {name: where.get(name, cls.fact.position) for name in cls.fact.provided}
        found.append(Fake(cls.facts, cls.fact.position, cls.fact.name, upstream, provided,
                          "__getattr__" not in cls.fact.provided))
    for facts in ctx.project.files.values():
        for spec in facts.specs:
            upstream = upstream_dotted(view, facts, spec.spec)
            if upstream:
                found.append(Fake(facts, spec.position, f"Mock(spec={spec.spec})", upstream, dict(spec.attrs), False))
    return found


def _named_after_upstream(view, cls) -> str | None:
    """The imported upstream class a class is named a fake of (`FakeScheduler`), unless it subclasses it."""
    match = FAKE_NAME.match(cls.fact.name)
    named = match and (match.group("a") or match.group("b"))
    upstream = upstream_dotted(view, cls.facts, named) if named else None
    if upstream is None or any(upstream_dotted(view, cls.facts, base) == upstream for base in cls.fact.bases):
        return None
    return upstream


def _project_reads(ctx: CheckContext, upstream: str) -> dict[str, tuple[FileFacts, Position]]:
    """Attributes the project's code reads on objects it types as the upstream class (new release)."""
    _, new = resolvers(ctx)
    origin = ctx.new.resolve_class(upstream)
    server_args = ctx.new.resolve_path(upstream).origin == SERVER_ARGS
    reads: dict[str, tuple[FileFacts, Position]] = {}
    for facts in ctx.project.files.values():
        for read in facts.reads:
            if read.store or read.receiver.types[0].startswith(("C:", "U:")):
                continue
            if server_args:
                hit = typed_as_server_args(new, facts, read.receiver)
            else:
                instances = new.receiver(facts, read.receiver) or []
                hit = bool(instances) and all(i.origin == origin for i in instances)
            if hit:
                reads.setdefault(read.attr, (facts, read.position))
    return reads


@contract("SGC602", reads=Reads.WHOLE_PROJECT, process=Process.MAIN)
def fake_drifted(ctx: CheckContext) -> Iterator[Diagnostic]:
    old_fields, new_fields = field_sets(ctx)
    for fake in _fakes(ctx):
        before = _members(ctx, ctx.old, fake.upstream, old_fields)
        after = _members(ctx, ctx.new, fake.upstream, new_fields)
        if before is None or after is None:
            continue
        common = dict(fake=fake.name, upstream=fake.upstream.rsplit(".", 1)[-1], old=ctx.old_version,
                      new=ctx.new_version)
        yield from _defines_removed(fake, before, after, common)
        if fake.complete:
            yield from _lacks_added(ctx, fake, before, after, common)


def _defines_removed(fake: Fake, before: set[str], after: set[str], common: dict) -> Iterator[Diagnostic]:
    """The names the fake still defines that upstream removed (dunders aside)."""
    for name, position in sorted(fake.provided.items()):
        if name in before and name not in after and not (name.startswith("__") and name.endswith("__")):
            yield finding("SGC602", fake.facts, position, f"{fake.upstream}.{name}", **common,
                          change=f"still defines {name}, which upstream removed")


def _lacks_added(ctx: CheckContext, fake: Fake, before: set[str], after: set[str],
                 common: dict) -> Iterator[Diagnostic]:
    """The names upstream added, the project reads, and the (complete) fake lacks."""
    for name, (facts, position) in sorted(_project_reads(ctx, fake.upstream).items()):
        if name in after and name not in before and name not in fake.provided:
            yield finding("SGC602", fake.facts, fake.position, f"{fake.upstream}.{name}", **common,
                          change=f"lacks {name}, which upstream added and {facts.path}:{position.line} reads")


# -- SGC603: probes of upstream source text -----------------------------------------------

def source_text(model: UpstreamModel, dotted: str) -> str | None:
    """The source of the upstream module, class, function or method at `dotted`, dedented: what
    the project's `textwrap.dedent(inspect.getsource(...))` reads, whose needles this is asked
    about (a needle ending in "\\n" on the last line must match as it does there)."""
    target = resolve_target(model, dotted)
    if not target.found or not target.origin or target.kind == "external":
        return None
    relpath = model.relpath_of(target.origin)
    text = model.tree.readable_source(relpath) if relpath else None
    if text is None or target.kind == "module":
        return text if text is None else _as_inspect_reads(text, 1, None)
    module = model.module_name_of(relpath)
    node = _definition_node(text, target.origin[len(module) + 1:].split("."))
    if node is None:
        return None
    decorators = getattr(node, "decorator_list", None)
    first = decorators[0].lineno if decorators else node.lineno
    return textwrap.dedent(_as_inspect_reads(text, first, node.end_lineno))


def _as_inspect_reads(text: str, first: int, last: int | None) -> str:
    """Lines `first` to `last` (from 1; None: to the end) as inspect.getsource returns them: whole
    lines, the decorators' and the last one's trailing comment and newline included, each ended
    by "\\n" (linecache reads with universal newlines and ends a last line that lacks one)."""
    starts = line_starts(text)
    end = starts[last] if last is not None and last < len(starts) else len(text)
    lines = LINE_BREAK.sub("\n", text[starts[first - 1]:end])
    return lines if lines.endswith("\n") or not lines else lines + "\n"


def _definition_node(text: str, path: list[str]) -> ast.AST | None:
    """The node of the class, function or method at `path` in the module's text; None if absent."""
    try:
        node: ast.AST = parse_quietly(text)
    except (SyntaxError, ValueError, RecursionError):  # RecursionError: nested too deep to parse
        return None
    for part in path:
        node = next((child for child in getattr(node, "body", []) if getattr(child, "name", None) == part), None)
        if node is None:
            return None
    return node


def source_texts(ctx: CheckContext, dotted: str) -> tuple[str | None, str | None]:
    """source_text of `dotted` in the old and the new release, each found once while both
    releases are kept (a resident process's re-checks parsed the probed modules every time)."""
    found = ctx.of_releases("probed-source-texts", lambda c: {})
    if dotted not in found:
        found[dotted] = (source_text(ctx.old, dotted), source_text(ctx.new, dotted))
    return found[dotted]


def _matches(needle: str, regex: bool, text: str) -> bool | None:
    """Whether the probe's text or pattern is in `text`; None when that cannot be told: a pattern
    that is not valid, or one that could backtrack without bound. The pattern is the project's
    (a pull request's), run here on the release's source: `(\\w|\\w)*@` would take hours."""
    if not regex:
        return needle in text
    try:
        parsed = re_parser.parse(needle, re.M)
    except (re.error, RecursionError, OverflowError):
        return None
    if not _bounded_backtracking(parsed):
        return None
    return re.search(needle, text, re.M) is not None


_REPEATS = {re_constants.MAX_REPEAT, re_constants.MIN_REPEAT}
_MOST_REPEATS = 64  # a repeat allowing more counts as unbounded
_MOST_UNBOUNDED = 4  # `\s*x\s*=\s*\w+` is what probes look like; each more multiplies a worst case
_COMPLEMENTS = ({re_constants.CATEGORY_SPACE, re_constants.CATEGORY_NOT_SPACE},
                {re_constants.CATEGORY_WORD, re_constants.CATEGORY_NOT_WORD},
                {re_constants.CATEGORY_DIGIT, re_constants.CATEGORY_NOT_DIGIT})


def _spans_lines(item, dotall: bool) -> bool:
    """Whether a repeated item matches nearly any character, newlines included (`[^Q]`, `[\\s\\S]`,
    `.` under DOTALL): each try of such a repeat runs to the end of the source, and a search
    tries from every position of a 200 kB class, so 2 * 10**10 steps."""
    op, value = item
    if op is re_constants.NOT_LITERAL or (op is re_constants.ANY and dotall):
        return True
    if op is re_constants.IN:
        kinds = {kind for kind, _ in value}
        categories = {category for kind, category in value if kind is re_constants.CATEGORY}
        return re_constants.NEGATE in kinds or any(pair <= categories for pair in _COMPLEMENTS)
    return False


def _bounded_backtracking(parsed) -> bool:
    """Whether a parsed pattern backtracks within a polynomial bound of low degree: no repeat
    holds a repeat, an alternation or a back-reference (the exponential shapes `(a+)+`,
    `(\\w|\\w)*`), no back-reference or look-around holds a repeat, at most a few repeats are
    unbounded (over _MOST_REPEATS), no more than two of them of `.`, and one spanning lines
    (_spans_lines) only behind a literal beginning."""
    dotall = bool(parsed.state.flags & re.S)
    # A repeat spanning lines is cheap behind a rare anchor (`def forward\\([^)]*\\)`: tried only
    # where the anchor is): at most one, behind a literal beginning of six characters, not all space.
    anchor = "".join(chr(value) for _, value in takewhile(lambda item: item[0] is re_constants.LITERAL, parsed))
    return _BacktrackingBudget(dotall, len(anchor) >= 6 and not anchor.isspace()).walk(parsed, False)


class _BacktrackingBudget:
    """The walk of _bounded_backtracking over a parsed pattern, with what it has spent so far:
    the unbounded repeats met, and whether a repeat spanning lines is still allowed."""

    def __init__(self, dotall: bool, broad_allowed: bool):
        self.dotall = dotall
        self.broad_allowed = broad_allowed
        self.unbounded = 0

    def walk(self, items, inside_repeat: bool) -> bool:
        for op, value in items:
            if not self._item_bounded(op, value, inside_repeat):
                return False
        return self.unbounded <= _MOST_UNBOUNDED

    def _item_bounded(self, op, value, inside_repeat: bool) -> bool:
        if op in _REPEATS:
            return self._repeat_bounded(value, inside_repeat)
        if op is re_constants.BRANCH:
            return not inside_repeat and all(self.walk(branch, inside_repeat) for branch in value[1])
        if op in (re_constants.GROUPREF, re_constants.GROUPREF_EXISTS):
            return False
        if op is re_constants.SUBPATTERN:
            return self.walk(value[-1], inside_repeat)
        if op in (re_constants.ASSERT, re_constants.ASSERT_NOT):
            return self.walk(value[-1], True)
        if op is re_constants.ATOMIC_GROUP:
            return self.walk(value, True)
        if op is re_constants.POSSESSIVE_REPEAT:
            return self.walk(value[2], True)
        return True

    def _repeat_bounded(self, value, inside_repeat: bool) -> bool:
        low, high, body = value
        if inside_repeat and high > 1:
            return False
        if high > _MOST_REPEATS and not self._spend_unbounded(body):  # `{0,100000}` backtracks as `*` does
            return False
        return self.walk(body, inside_repeat or high > 1)

    def _spend_unbounded(self, body) -> bool:
        """Count an unbounded repeat; False when the pattern can no longer afford it."""
        self.unbounded += 1
        if any(_spans_lines(item, self.dotall) for item in body):
            if not self.broad_allowed:
                return False
            self.broad_allowed = False
            return True
        return not (any(item[0] is re_constants.ANY for item in body) and self.unbounded > 2)


@contract("SGC603", reads=Reads.FILE_AND_IMPORTS, process=Process.MAIN)
def source_probe_no_longer_matches(ctx: CheckContext) -> Iterator[Diagnostic]:
    view = project_view(ctx)
    for facts in ctx.project.files.values():
        for probe in facts.source_probes:
            dotted = upstream_dotted(view, facts, probe.target)
            if dotted is None:
                continue
            before, after = source_texts(ctx, dotted)
            if before is None or after is None:
                continue
            if _matches(probe.needle, probe.regex, before) and _matches(probe.needle, probe.regex, after) is False:
                shown = probe.needle if len(probe.needle) <= 60 else probe.needle[:57] + "..."
                yield finding("SGC603", facts, probe.position, dotted, target=".".join(dotted.split(".")[-2:]),
                              needle=repr(shown),
                              kind="pattern" if probe.regex else "text", old=ctx.old_version, new=ctx.new_version)
    yield from _data_probes_no_longer_matching(ctx)


def _lines_occur(needle: str, text: str) -> bool:
    """Whether the needle's lines occur as consecutive lines of the text, each compared stripped
    (how source patchers such as SGLang's own `source_patcher` find their `match` text)."""
    wanted = [line.strip() for line in numbered_lines(needle.strip())]
    have = [line.strip() for line in numbered_lines(text)]
    return bool(wanted) and any(have[i:i + len(wanted)] == wanted for i in range(len(have) - len(wanted) + 1))


def _data_probes_no_longer_matching(ctx: CheckContext) -> Iterator[Diagnostic]:
    """Probes kept as data (project/data_probes.py): a target and a `match` text."""
    for probe in data_probes(ctx.project):
        before, after = source_texts(ctx, probe.target)
        if before is None or after is None or not _lines_occur(probe.needle, before) or _lines_occur(probe.needle, after):
            continue
        flat = " ".join(probe.needle.split())
        shown = flat if len(flat) <= 60 else flat[:57] + "..."
        yield finding_at("SGC603", probe.path, probe.line, probe.col, probe.target,
                         target=".".join(probe.target.split(".")[-2:]), needle=repr(shown), kind="text",
                         old=ctx.old_version, new=ctx.new_version)


@contract("SGC604", reads=Reads.WHOLE_PROJECT, process=Process.MAIN)
def fake_mapping_unresolved(ctx: CheckContext) -> Iterator[Diagnostic]:
    configured = ctx.settings.get("fakes", {})
    if not configured:
        return
    view = project_view(ctx)
    old_fields, _ = field_sets(ctx)
    unparsed = {facts.module for facts in ctx.project.files.values() if facts.parse_error or facts.problem}
    unresolved = []
    for fake, upstream in sorted(configured.items()):
        if fake not in view.classes:
            if _in_one_of(fake, unparsed):
                continue  # its file could not be read (SGC000 says so)
            what = "no class of the project"
        elif _members(ctx, ctx.old, upstream, old_fields) is None:
            what = f"no class of sglang {ctx.old_version}"
        else:
            continue
        unresolved.append((fake, upstream, what))
    written = configuration_text(ctx.project.root) if unresolved else ""
    positions = entry_positions(written, {fake for fake, _, _ in unresolved})
    for fake, upstream, what in unresolved:
        line, col = positions.get(fake, (1, 1))  # its first line: the settings were read from another file
        yield finding_at("SGC604", CONFIGURATION, line, col, fake, fake=fake, upstream=upstream, what=what,
                         old=ctx.old_version, new=ctx.new_version)


def _in_one_of(dotted: str, modules: set[str]) -> bool:
    """Whether `dotted` names something in one of `modules` (by its enclosing names: one look-up each)."""
    parts = dotted.split(".")
    return any(".".join(parts[:end]) in modules for end in range(1, len(parts)))
