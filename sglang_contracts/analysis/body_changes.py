"""How an upstream function's body changed between the two releases: how many lines
(body_change), the first changed lines as a report shows them (body_preview), and the
definition itself as its module writes it (definition)."""

from __future__ import annotations

import ast
import difflib
import os
from functools import lru_cache
from typing import TYPE_CHECKING

from sglang_contracts.infra.lines import numbered_lines
from sglang_contracts.infra.markdown import code_span
from sglang_contracts.infra.pysource import parse_quietly
from sglang_contracts.infra.shapes import ListOf
from sglang_contracts.upstream.model import Member, UpstreamModel

if TYPE_CHECKING:
    from sglang_contracts.contracts.base import CheckContext


def body_change(old_model: UpstreamModel, old: Member, new_model: UpstreamModel, new: Member) -> tuple[int, int] | None:
    """(lines changed, lines of the two bodies aligned) between two releases' bodies, or None if
    equal. A changed line is one of a replaced, removed or added run (the longer side of each);
    the total counts the unchanged lines and the changed ones, so it is never below the count
    of changes (a body that lost lines is not "2 of 1")."""
    before, after = old_model.body_lines(old), new_model.body_lines(new)
    if before == after:
        return None
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    opcodes = matcher.get_opcodes()
    changed = sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in opcodes if tag != "equal")
    unchanged = sum(i2 - i1 for tag, i1, i2, _, _ in opcodes if tag == "equal")
    return changed, changed + unchanged


@lru_cache(maxsize=4)  # old and new of a module or two: trees are large
def _parsed_module(source: str):
    """An upstream module's tree, parsed once for all the previews of its methods (scheduler.py
    has a dozen the project overrides or borrows)."""
    try:
        return parse_quietly(source)
    except (SyntaxError, ValueError, RecursionError):
        return None


def _body_text(model: UpstreamModel, member: Member) -> list[str] | None:
    """The normalised lines of a method's body as text (what the record keeps hashed), kept
    per release (a published release or a commit): reading it parses the whole module."""
    line = member.record.get("line")
    return model.whole_release_search(f"body-text\0{member.owner}\0{member.name}\0{line}",
                                      lambda: _read_body_text(model, member), (ListOf(str), None))


def _read_body_text(model: UpstreamModel, member: Member) -> list[str] | None:
    from sglang_contracts.upstream.bodies import body_statements, unparsed

    node, _ = definition(model, member)
    if node is None:
        return None
    text = "\n".join(unparsed(statement) for statement in body_statements(node))
    return [row.strip() for row in numbered_lines(text) if row.strip()]


def body_preview(ctx: CheckContext, old: Member, new: Member, lines: int = 3, width: int = 100) -> str:
    """The first changed lines of the upstream body (a unified diff of the normalised bodies),
    as "; first change: -old line | +new line", or "" where the sources cannot be read."""
    before, after = _body_text(ctx.old, old), _body_text(ctx.new, new)
    if before is None or after is None:
        return ""
    changed = [row for row in difflib.unified_diff(before, after, lineterm="", n=0)
               if row[:1] in "+-" and not row.startswith(("+++", "---"))]
    if not changed:
        return ""
    def clipped(row: str) -> str:
        # A long line changed in its middle: start near the change, past what the other side shares.
        others = [o[1:] for o in changed if o[:1] != row[:1]]
        shared = max((len(os.path.commonprefix([row[1:], o])) for o in others), default=0)
        text = row[1:] if shared <= 30 else "..." + row[1 + shared - 20:]
        # One code span per line, cut or not: a report that marks names as code (markdown)
        # would otherwise mark the halves of names the cut left.
        return row[0] + code_span(text if len(text) <= width else text[: width - 3] + "...")

    shown = [clipped(row) for row in changed[:lines]]
    more = f" | ({len(changed) - lines} more)" if len(changed) > lines else ""
    return "; first change: " + " | ".join(shown) + more


def definition(model: UpstreamModel, member: Member) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef | None, str]:
    """(an upstream function or method as its module defines it at its record's line, the
    module's text): from its own lines where the model finds them, else from the module's tree."""
    found = model.definition_node(member)
    if found is not None:
        return found
    relpath = model.relpath_of(member.owner)
    text = model.tree.read_source(relpath) if relpath else None
    line = member.record.get("line")
    tree = _parsed_module(text) if text and line else None
    node = _function_at(tree, member.name, line) if tree is not None else None
    return (node, text) if node is not None else (None, text or "")


def _function_at(tree: ast.AST, name: str, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The function or method `name` of the tree whose definition (or a decorator of it) is at `line`."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name \
                and line in (node.lineno, *(d.lineno for d in node.decorator_list)):
            return node
    return None
