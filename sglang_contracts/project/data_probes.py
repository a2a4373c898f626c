"""Source-text probes the project keeps as data: a target naming an upstream object and a text to
find in its source, written as YAML in a Python string (miles' source-patcher configs: `- target:
sglang.srt.models.x.Layer.forward` then `edits:` with `- match: |` blocks) or as a Python dict
(`{"target": "sglang...", "match": "..."}`, or its matches in nested `edits` entries).

The YAML is read by its lines (a `target:` key, then each `match:` value until the next target:
a plain, quoted or `|` block scalar), not by a YAML library: only this shape is looked for. Only
targets under `sglang.` count. A probe's position is its `match` key, found in the file's own
lines after the string starts.
"""

from __future__ import annotations

import ast
import re
import sys
import textwrap
from dataclasses import dataclass

from sglang_contracts.infra.pysource import parse_quietly
from sglang_contracts.infra.shapes import Row, rows_of
from sglang_contracts.project.index import ProjectIndex
from sglang_contracts.infra.lines import LINE_BREAK, numbered_lines

DICT_TARGET = re.compile(r"""["']target["']\s*:\s*\(?\s*[rRuU]?["']sglang\.""")
KEY = re.compile(r"^(?P<indent>[ \t]*(?:-[ \t]+)?)(?P<key>target|match):[ \t]*(?P<value>.*?)[ \t]*$")


@dataclass(frozen=True)
class DataProbe:
    path: str
    line: int
    col: int
    target: str  # a dotted upstream path
    needle: str  # the text, compared line by line with each line stripped


def data_probes(project: ProjectIndex) -> list[DataProbe]:
    return [DataProbe(*row) for row in project.each_file(
        "data-probes", _file_probes, _may_probe, sys.modules[__name__])]


def _may_probe(text: str) -> bool:
    """A YAML text with `target:` and `match:` keys, or a dict whose "target" is a string
    naming `sglang.`: what `_file_probes` reads."""
    return "sglang." in text and (("target:" in text and "match:" in text) or DICT_TARGET.search(text) is not None)


@rows_of(Row(str, int, int, str, str))  # DataProbe's fields
def _file_probes(relpath: str, text: str) -> list[list]:
    try:
        tree = parse_quietly(text)
    except (SyntaxError, ValueError):
        return []  # the scanner reports the file (SGC000)
    lines = LINE_BREAK.split(text)
    found: list[list] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "match:" in node.value:
            found.extend([relpath, *where, target, needle]
                         for where, (target, needle) in zip(_match_keys(lines, node), yaml_probes(node.value)) if target)
        elif isinstance(node, ast.Dict):
            found += _dict_probes(relpath, node)
    return found


def _dict_probes(relpath: str, node: ast.Dict) -> list[list]:
    """The probes of a dict whose "target" names `sglang.`, one per match it gives."""
    target = _entry(node, "target")
    if not (isinstance(target, ast.Constant) and isinstance(target.value, str) and target.value.startswith("sglang.")):
        return []
    return [[relpath, match.lineno, match.col_offset + 1, target.value, match.value] for match in _dict_matches(node)]


def yaml_probes(text: str) -> list[tuple[str, str]]:
    """(target, match) of each `match:` in a YAML text, in order; a match under a target outside
    `sglang.` is kept as ("", text) so that the n-th pair stays the n-th `match:` key."""
    lines = numbered_lines(text)
    found = []
    target = ""
    index = 0
    while index < len(lines):
        key = KEY.match(lines[index])
        index += 1
        if key is None:
            continue
        value = key.group("value")
        if key.group("key") == "target":
            target = _scalar(value)
            continue
        if value[:1] in ("|", ">"):
            block = []
            own = len(key.group("indent"))
            while index < len(lines) and (not lines[index].strip() or _indent(lines[index]) > own):
                block.append(lines[index])
                index += 1
            needle = textwrap.dedent("\n".join(block)).strip()
        else:
            needle = _scalar(value)
        found.append((target if target.startswith("sglang.") else "", needle))
    return found


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _scalar(value: str) -> str:
    if value.startswith('"') and value.endswith('"') and len(value) > 1:
        return re.sub(r'\\(.)', lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), value[1:-1])
    if value.startswith("'") and value.endswith("'") and len(value) > 1:
        return value[1:-1].replace("''", "'")
    return value.split(" #", 1)[0].strip()


def _match_keys(lines: list[str], node: ast.Constant) -> list[tuple[int, int]]:
    """(line, column) of each `match:` key of a string, in the file's own lines."""
    found = []
    for number in range(node.lineno, (node.end_lineno or node.lineno) + 1):
        key = KEY.match(lines[number - 1]) if number - 1 < len(lines) else None
        if key is not None and key.group("key") == "match":
            found.append((number, key.end("indent") + 1))
    return found


def _entry(node: ast.Dict, name: str) -> ast.AST | None:
    for key, value in zip(node.keys, node.values):
        if isinstance(key, ast.Constant) and key.value == name:
            return value
    return None


def _dict_matches(node: ast.Dict) -> list[ast.Constant]:
    """The `match` strings of a probe dict and of the dicts nested in it."""
    found = []
    for inner in ast.walk(node):
        if isinstance(inner, ast.Dict):
            match = _entry(inner, "match")
            if isinstance(match, ast.Constant) and isinstance(match.value, str):
                found.append(match)
    return found
