"""The edit upstream made at one use, generalised, and what it says of a project's use.

An edit is what changed between the old use and its counterpart: for a call, its arguments
by slot (a keyword's name, `**` for a `**mapping`, `#2` for the third positional argument);
for an attribute read, the whole expression (slot `expr`), its receiver abstracted. It is
generalised up to the names it carries over: a name the old arguments and the new ones both
use (`rank=r` -> `group_rank=r`) is a placeholder that stands for any local name; a name only
the old side uses (`tp_rank=attn_tp_rank`) is part of the pattern, and a name only the new
side uses must be importable (upstream's file imports it, or it is a builtin), else the edit
names something of upstream's own function and cannot be carried into a project.

A project's use then matches a variant exactly (safe: every example of that shape made the
same edit), differs from examples that all agree (unsafe), or meets examples that disagree
(no edit; the message lists them).
"""

from __future__ import annotations

import ast
import builtins
import copy
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from sglang_contracts.upstream.bodies import unparsed

RECEIVER = "__receiver"  # the placeholder of an attribute read's receiver
PLACEHOLDER = "__{}"  # the placeholder of the n-th name an edit carries over
VALUE = "__value{}"  # the placeholder of the n-th argument passed on as it was under another keyword
LEVEL = "__level"  # where in a read's chain of attributes the pattern matched
MAX_SHOWN = 3  # variants a message lists
MIN_SAFE_EXAMPLES = 2  # upstream uses that must have made an edit for it to be safe


@dataclass(frozen=True)
class Variant:
    """One generalised edit and the examples that made it."""

    before: tuple[tuple[str, str], ...]  # (slot, pattern), slots sorted
    after: tuple[tuple[str, str], ...]
    imports: tuple[tuple[str, str], ...]  # (name, upstream path) the new side needs bound
    foreign: tuple[str, ...]  # names of upstream's own function the new side uses
    # what is written: per new slot, literal pieces and placeholder names alternating
    templates: tuple[tuple[str, tuple[str, ...]], ...]
    shown_before: str  # the first example as upstream wrote it
    shown_after: str
    where: str  # the first example: `relpath:line` in the old release
    count: int = 1

    def key(self) -> tuple:
        return self.before, self.after, self.imports, self.foreign

    def to_json(self) -> list:
        return [list(map(list, self.before)), list(map(list, self.after)), list(map(list, self.imports)),
                list(self.foreign), [[slot, list(pieces)] for slot, pieces in self.templates],
                self.shown_before, self.shown_after, self.where, self.count]

    @classmethod
    def from_json(cls, row: list) -> "Variant":
        before, after, imports, foreign, templates, shown_before, shown_after, where, count = row
        return cls(tuple(map(tuple, before)), tuple(map(tuple, after)), tuple(map(tuple, imports)), tuple(foreign),
                   tuple((slot, tuple(pieces)) for slot, pieces in templates), shown_before, shown_after, where, count)

    @property
    def slots(self) -> set[str]:
        """The arguments (or the expression) the edit rewrites; not the `=name` entries."""
        return {slot for slot, _ in self.before if not slot.startswith("=")}

    def shown(self) -> str:
        return f"{self.shown_before} -> {self.shown_after}"


def call_slots(call: ast.Call) -> dict[str, ast.expr] | None:
    """slot -> argument of a call; None when two `**` mappings make the slots ambiguous."""
    slots: dict[str, ast.expr] = {}
    for index, argument in enumerate(call.args):
        slots["*" if isinstance(argument, ast.Starred) else f"#{index}"] = argument
    for keyword in call.keywords:
        slot = keyword.arg or "**"
        if slot in slots:
            return None
        slots[slot] = keyword.value
    return slots


def call_edit(old: ast.Call, new: ast.Call, old_keywords: set[str], new_keywords: set[str]
              ) -> tuple[list[tuple[str, ast.expr]], list[tuple[str, ast.expr]]] | None:
    """(old arguments, new arguments) of the slots the change of signature forced, in the
    calls' order: positional and unpacked arguments that differ, keywords the new signature
    (`new_keywords`) no longer takes and keywords the old one (`old_keywords`) did not take. A
    keyword both take that the call now passes otherwise is a choice of its own, not the
    migration's (0.5.22's `reduce_results=False` beside some `parallel_group="attn_tp"`).
    None when nothing was forced or the slots are ambiguous."""
    before, after = call_slots(old), call_slots(new)
    if before is None or after is None:
        return None

    def forced(slot: str) -> bool:
        if not slot.isidentifier():
            return slot not in before or slot not in after or unparsed(before[slot]) != unparsed(after[slot])
        return slot in before and slot not in new_keywords or slot in after and slot not in old_keywords

    changed = {slot for slot in before.keys() | after.keys() if forced(slot)}
    if not changed:
        return None
    return ([(slot, value) for slot, value in before.items() if slot in changed],
            [(slot, value) for slot, value in after.items() if slot in changed])


def _placeholder(node: ast.expr, values: dict[str, str]) -> ast.expr:
    """The argument, or the placeholder of an argument passed on as it was."""
    text = unparsed(node)
    return ast.copy_location(ast.Name(values[text], ast.Load()), node) if text in values else node


def _names(node: ast.AST) -> list[str]:
    """The names an expression reads, not the placeholders of arguments passed on."""
    return [child.id for child in ast.walk(node) if isinstance(child, ast.Name) and not child.id.startswith(VALUE[:-2])]


def _renamed(node: ast.expr, names: dict[str, str], receiver: str | None = None) -> str:
    """The expression's text with carried names (and the receiver's text) as placeholders."""
    class Rename(ast.NodeTransformer):
        def visit(self, child):
            if receiver is not None and isinstance(child, ast.expr) and unparsed(child) == receiver:
                return ast.copy_location(ast.Name(RECEIVER, ast.Load()), child)
            return super().visit(child)

        def visit_Name(self, child):
            return ast.copy_location(ast.Name(names.get(child.id, child.id), child.ctx), child)

    return unparsed(Rename().visit(copy.deepcopy(node)))


def source_of(lines: list[str], node: ast.expr) -> str:
    """The node's text as written (`ast.get_source_segment` over the file's lines, which it
    would split again at every call)."""
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    if not 0 <= first <= last < len(lines):
        return ""
    if first == last:
        return lines[first].encode()[node.col_offset:node.end_col_offset].decode(errors="replace")
    middle = lines[first + 1:last]
    return "\n".join([lines[first].encode()[node.col_offset:].decode(errors="replace"), *middle,
                      lines[last].encode()[:node.end_col_offset].decode(errors="replace")])


def _template(node: ast.expr, lines: list[str], names: dict[str, str], receiver: str | None) -> tuple[str, ...]:
    """The new argument as upstream wrote it (one line), its placeholders cut out: literal and
    placeholder pieces alternating; unparsed where it spans lines."""
    if isinstance(node, ast.Name) and node.id.startswith("__"):
        return "", node.id, ""
    segment = source_of(lines, node)
    if "\n" in segment or not segment:
        pattern = _renamed(node, names, receiver)
        segment_node = ast.parse(pattern, mode="eval").body
        return _pieces(segment_node, pattern, set(names.values()) | {RECEIVER})
    return _pieces_in(node, segment, names, receiver)


def _pieces(node: ast.AST, text: str, placeholders: set[str]) -> tuple[str, ...]:
    """`text` (whose tree is `node`, on one line) cut at the placeholder names."""
    cuts = sorted((child.col_offset, child.end_col_offset, child.id) for child in ast.walk(node)
                  if isinstance(child, ast.Name) and child.id in placeholders)
    pieces: list[str] = []
    start = 0
    for begin, end, name in cuts:
        pieces += [text[start:begin], name]
        start = end
    return (*pieces, text[start:])


def _pieces_in(node: ast.expr, segment: str, names: dict[str, str], receiver: str | None) -> tuple[str, ...]:
    """_pieces over the source segment of `node` (one line): placeholders where the carried
    names and the receiver are."""
    base = node.col_offset
    cuts: list[tuple[int, int, str]] = []
    taken: list[tuple[int, int]] = []
    for child in ast.walk(node):
        if not isinstance(child, ast.expr) or child.lineno != node.lineno:
            continue
        span = (child.col_offset - base, child.end_col_offset - base)
        if any(a <= span[0] and span[1] <= b for a, b in taken):
            continue
        if receiver is not None and unparsed(child) == receiver:
            cuts.append((*span, RECEIVER))
            taken.append(span)
        elif isinstance(child, ast.Name) and child.id in names:
            cuts.append((*span, names[child.id]))
            taken.append(span)
    pieces: list[str] = []
    start = 0
    encoded = segment.encode()  # ast columns are UTF-8 byte offsets
    for begin, end, name in sorted(cuts):
        pieces += [encoded[start:begin].decode(errors="replace"), name]
        start = end
    return (*pieces, encoded[start:].decode(errors="replace"))


def generalised(before: list[tuple[str, ast.expr]], after: list[tuple[str, ast.expr]], new_lines: list[str],
                bound: Callable[[str], str | None], old_lines: list[str], where: str,
                defined: Callable[[str], str | None], receiver: str | None = None) -> Variant:
    """One example's edit as a Variant. `bound`: the path a name of the new file is bound to
    at its top level (an import, its own definition), or None; `defined`: what a local name of
    the old use holds there (pairing.definition), None for a name the module binds. `receiver`: an attribute read's
    receiver as written, which any receiver of the same class may stand for."""
    # An argument passed on as it was, under another keyword, stands for any argument.
    values = {}
    for _, node in before:
        text = unparsed(node)
        if text not in values and any(unparsed(other) == text for _, other in after):
            values[text] = VALUE.format(len(values) + 1)
    before = [(slot, _placeholder(node, values)) for slot, node in before]
    after = [(slot, _placeholder(node, values)) for slot, node in after]
    receiver_names = set(_names(ast.parse(receiver, mode="eval").body)) if receiver is not None else set()
    carried = ({name for _, node in after for name in _names(node)}
               & {name for _, node in before for name in _names(node)}) - receiver_names
    order = [name for _, node in before for name in _names(node) if name in carried]
    names = {name: PLACEHOLDER.format(index + 1) for index, name in enumerate(dict.fromkeys(order))}
    free = {name for _, node in after for name in _names(node)} - carried - receiver_names
    paths = {name: bound(name) for name in free}
    imports = tuple(sorted((name, path) for name, path in paths.items() if path is not None))
    foreign = tuple(sorted(name for name, path in paths.items() if path is None and not hasattr(builtins, name)))
    # The old side's own local names are compared with what they hold there.
    held = [(f"={name}", defined(name)) for name in dict.fromkeys(
        name for _, node in before for name in _names(node)
        if name not in carried and name not in receiver_names and name not in ("self", "cls") and not hasattr(builtins, name))]
    held = [(slot, text) for slot, text in held if text is not None]
    return Variant(
        before=tuple(sorted([*((slot, _renamed(node, names, receiver)) for slot, node in before), *held])),
        after=tuple(sorted((slot, _renamed(node, names, receiver)) for slot, node in after)),
        imports=imports, foreign=foreign,
        templates=tuple((slot, _template(node, new_lines, names, receiver)) for slot, node in after),
        shown_before=", ".join(_shown(slot, node, old_lines) for slot, node in before),
        shown_after=", ".join(_shown(slot, node, new_lines) for slot, node in after) or "(nothing)",
        where=where)


def _shown(slot: str, node: ast.expr, lines: list[str]) -> str:
    segment = source_of(lines, node) or unparsed(node)
    value = " ".join(segment.split()) if "\n" in segment else segment
    if slot.startswith("#") or slot in ("*", "expr"):
        return value
    return f"**{value}" if slot == "**" else f"{slot}={value}"


def merged(variants: list[Variant]) -> list[Variant]:
    """Examples that made the same edit counted together (the first one shown), most first."""
    found: dict[tuple, Variant] = {}
    for variant in variants:
        known = found.get(variant.key())
        if known is not None:  # the example shown is the first in the release's order, whatever the search's
            first = min(known, variant, key=_place)
            variant = _counted(first, known.count + variant.count)
        found[variant.key()] = variant
    return sorted(found.values(), key=lambda v: (-v.count, _place(v)))


def _place(variant: Variant) -> tuple[str, int]:
    path, _, line = variant.where.rpartition(":")
    return path, int(line) if line.isdigit() else 0


def _counted(variant: Variant, count: int) -> Variant:
    return replace(variant, count=count)


# -- a project's use -----------------------------------------------------------------------------

def _match(pattern: ast.AST, node: ast.AST, bindings: dict[str, str]) -> bool:
    """Whether `node` is `pattern` with its placeholders filled: a carried name's by a name
    (the same one wherever it recurs), the receiver's by any expression."""
    if isinstance(pattern, ast.Name) and pattern.id.startswith("__"):
        if pattern.id == RECEIVER and not _plain_chain(node):
            return False  # a receiver the rewrite drops must do nothing when read (no call)
        if not pattern.id.startswith((RECEIVER, VALUE[:-2])) and not isinstance(node, ast.Name):
            return False
        text = unparsed(node)
        return bindings.setdefault(pattern.id, text) == text
    if type(pattern) is not type(node):
        return False
    for name, value in ast.iter_fields(pattern):
        other = getattr(node, name, None)
        if isinstance(value, ast.AST):
            if not isinstance(other, ast.AST) or not _match(value, other, bindings):
                return False
        elif isinstance(value, list):
            if not isinstance(other, list) or len(other) != len(value):
                return False
            for item, counterpart in zip(value, other):
                if isinstance(item, ast.AST):
                    if not isinstance(counterpart, ast.AST) or not _match(item, counterpart, bindings):
                        return False
                elif item != counterpart:
                    return False
        elif name != "ctx" and value != other:
            return False
    return True


def _bare_read(pattern: str) -> bool:
    """`__receiver.attr`: a read of the attribute alone."""
    head, _, attr = pattern.partition(".")
    return head == RECEIVER and attr.isidentifier()


def _plain_chain(node: ast.AST) -> bool:
    """`name` or `name.attr.attr`."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def matched(variant: Variant, use: "Use") -> dict[str, str] | None:
    """The placeholders' values where the project's use is the variant's old side exactly,
    its local names holding what upstream's held."""
    bindings: dict[str, str] = {}
    for slot, pattern in variant.before:
        if slot.startswith("="):
            if use.defined(slot[1:]) != pattern:
                return None
        elif slot == "expr" and use.chain:
            tree = ast.parse(pattern, mode="eval").body
            # Each level is tried on its own bindings: a level that fails part way (the receiver
            # bound to `data` of `data.req.extend_range`) binds nothing for the next.
            tried = ((index, dict(bindings)) for index in range(len(use.chain)))
            level = next(((index, trial) for index, trial in tried if _match(tree, use.chain[index][0], trial)), None)
            if level is None:
                return None
            bindings = {**level[1], LEVEL: str(level[0])}
        elif slot not in use.slots or not _match(ast.parse(pattern, mode="eval").body, use.slots[slot], bindings):
            return None
    return bindings


@dataclass
class Use:
    """A project's use of the API: its arguments by slot (or `expr`: the read), and what its
    local names hold (pairing.definition; None for a name its module binds)."""

    slots: dict[str, ast.expr]
    defined: Callable[[str], str | None]
    # A read's expression and each attribute read on it in turn, with where its name is: the
    # level an upstream pattern matches is the one rewritten (`req.extend_range.end`).
    chain: list[tuple[ast.expr, Any]] = field(default_factory=list)


def written(variant: Variant, bindings: dict[str, str]) -> list[tuple[str, str]] | None:
    """(slot, text) of the new side with the placeholders filled; None when one is unfilled."""
    found = []
    for slot, pieces in variant.templates:
        parts = []
        for index, piece in enumerate(pieces):
            if index % 2 and piece not in bindings:
                return None
            parts.append(bindings[piece] if index % 2 else piece)
        found.append((slot, "".join(parts)))
    return found


@dataclass
class Verdict:
    """What upstream's examples say of one project use."""

    message: str  # what upstream did, for the finding's message
    safety: str | None = None  # "safe", "unsafe", or None: no edit
    variant: Variant | None = None
    values: list[tuple[str, str]] | None = None  # (slot, text) to write
    why: str = ""  # why no edit
    level: int = 0  # a read's: which of its chain's expressions is rewritten (Use.chain)

    def data(self) -> dict[str, Any] | None:
        """What the fix reads."""
        if self.variant is None or self.values is None:
            return None
        return {"remove": sorted(self.variant.slots), "write": self.values, "imports": list(self.variant.imports),
                "level": self.level}


def verdict(variants: list[Variant], slot: str, use: Use, noun: str) -> Verdict | None:
    """What upstream's edits of uses like this one (those whose old side has `slot`) say of the
    project's use; None when upstream has no such example."""
    slots = use.slots
    # A call's argument the new signature requires (SGC202): upstream's calls that passed none
    # of the arguments the change forced and now pass it (`() -> checkpoint=True`).
    relevant = [v for v in variants if slot in v.slots] \
        or [v for v in variants if not v.slots and slot in dict(v.after)]
    if not relevant:
        return None
    total = sum(v.count for v in relevant)
    exact = [(v, b) for v in relevant if (b := matched(v, use)) is not None]
    if exact:
        kinds = merged([v for v, _ in exact])
        portable = [v for v in kinds if not v.foreign]
        if len(kinds) > 1 and len(portable) == 1:
            # The others rewrote the use with a value of their own function (`joint_len`): no
            # other way a project could write it, but not the examples' agreement either.
            variant = portable[0]
            bindings = next(b for v, b in exact if v.key() == variant.key())
            aside = sum(v.count for v in kinds if v.foreign)
            other = next(v for v in kinds if v.foreign)
            return _applied(variant, bindings, f"upstream migrated {_many(variant.count, noun)}: {variant.shown()} "
                            f"(e.g. {variant.where}); {_many(aside, noun)} used a value of its own function instead "
                            f"({other.shown()}, e.g. {other.where})", "unsafe")
        if len(kinds) > 1:
            return Verdict(_listed(kinds, noun), why="upstream's examples of this shape disagree")
        variant, bindings = exact[0]
        count = sum(v.count for v, _ in exact)
        # One example is too thin to call a rewrite certain: a pairing may be a coincidence.
        return _applied(variant, bindings, f"upstream migrated {_many(count, noun)}: {variant.shown()} (e.g. {variant.where})",
                        "safe" if count >= MIN_SAFE_EXAMPLES else "unsafe")
    agreeing = {(tuple(sorted(v.slots)), v.after, v.imports, v.foreign) for v in relevant}
    if len(agreeing) > 1:
        return Verdict(_listed(relevant, noun), why="upstream's examples disagree")
    variant = relevant[0]
    message = f"upstream migrated {_many(total, noun)}: {variant.shown()} (e.g. {variant.where})"
    bindings = {}
    for slot_name, pattern in variant.before:  # a placeholder alone stands for whatever is there
        if pattern.startswith("__") and pattern.isidentifier() and slot_name in slots:
            bindings[pattern] = unparsed(slots[slot_name])
    if not variant.slots <= slots.keys():
        return Verdict(message, why=f"this use does not pass {', '.join(sorted(variant.slots - slots.keys()))} as upstream's did")
    if use.chain and not any(_bare_read(pattern) for name, pattern in variant.before if name == "expr"):
        return Verdict(message, why="upstream's reads that changed so read more than this one does")
    return _applied(variant, bindings, message, "unsafe")


def _applied(variant: Variant, bindings: dict[str, str], message: str, safety: str) -> Verdict:
    if variant.foreign:
        return Verdict(message, variant=variant,
                       why=f"upstream's new code names {', '.join(variant.foreign)}, of its own function")
    values = written(variant, bindings)
    if values is None:
        return Verdict(message, variant=variant, why="the new code reuses what this use writes otherwise")
    return Verdict(message, safety, variant, values, level=int(bindings.get(LEVEL, 0)))


def _listed(variants: list[Variant], noun: str) -> str:
    variants = merged(variants)
    shown = "; ".join(f"{v.shown()} ({v.count}, e.g. {v.where})" for v in variants[:MAX_SHOWN])
    more = f"; and {len(variants) - MAX_SHOWN} more" if len(variants) > MAX_SHOWN else ""
    total = sum(v.count for v in variants)
    return f"upstream rewrote {_many(total, noun)} in {len(variants)} ways, so no edit is certain: {shown}{more}"


def _many(count: int, noun: str) -> str:
    """`3 calls`, `1 call`."""
    return f"{count} {noun if count != 1 else noun.removesuffix('s')}"


def module_verdict(variants: list[Variant], home: str | None) -> Verdict | None:
    """What upstream's own imports from a lost module say: where they moved, and whether that
    is `home`, the module verified to define the same names; None without an example."""
    if not variants:
        return None
    kinds = merged(variants)
    if len(kinds) > 1:
        return Verdict(_listed(kinds, "imports"), why="upstream's imports moved to different modules")
    variant = kinds[0]
    message = f"upstream moved {_many(variant.count, 'imports')}: {variant.shown()} (e.g. {variant.where})"
    if home is None or variant.after != (("module", home),):
        return Verdict(message, why="upstream's imports moved elsewhere than a module defining the same names")
    return Verdict(message, "safe", variant, [("module", home)])
