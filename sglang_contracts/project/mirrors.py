"""Hand-copied upstream code, as the project cites it in comments and docstrings.

Projects say where a helper comes from: `Mirrors upstream Scheduler.__init__
(sglang/srt/managers/scheduler.py)`, `like sglang's multinomial_with_seed`, or explicitly
`# sglang-contracts: mirrors sglang.srt.layers.sampler.multinomial_with_seed`. Free text counts
only right after a word that says "copied" (mirrors, copied from, ported from, adapted from,
like, based on) in the same sentence, so a passing mention of an upstream name ("composition
over sglang.srt.models.qwen3.Qwen3ForCausalLM") is not a citation.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from sglang_contracts.project import stack
from sglang_contracts.infra.shapes import Row, rows_of
from sglang_contracts.project.index import ProjectIndex
from sglang_contracts.project.stack import offset_position, prose_pieces, sglang_mentions

MARKER = re.compile(r"sglang-contracts:\s*mirrors\s+(?P<target>sglang(?:\.\w+)+)")
CUE_WINDOW = 40  # characters before a citation where the copy word must stand
COPY_CUE = re.compile(r"(?i)\b(?:mirror(?:s|ed|ing)?|copied|copy of|ported|adapted|taken from|based on|like)\b")
# The forms a citation takes, each giving a dotted target or an object and the file it is in.
CITATIONS = [
    re.compile(r"(?P<target>\bsglang(?:\.\w+){2,})"),  # sglang.srt.layers.sampler.multinomial_with_seed
    # A name starts a word (or follows a dot not after a word): tried from every character of a long
    # word, it read the rest of the word again each time.
    re.compile(r"`?(?<!\w)(?<!\w\.)(?P<object>[A-Za-z_]\w*(?:\.\w+)*)`?\s*\(\s*`?(?:python/)?(?P<path>sglang/[\w/]+\.py)`?\s*\)"),
    re.compile(r"(?i)\bsglang's\s+`?(?P<name>[A-Za-z_]\w*(?:\.\w+)?)`?"),  # sglang's multinomial_with_seed
]


@dataclass(frozen=True)
class Citation:
    path: str  # the project file, relative to its root
    line: int
    col: int
    target: str  # a dotted upstream path, or a bare name (kind "name") to look up
    kind: str  # "path" (a dotted path) or "name" (defined somewhere upstream, found by search)
    text: str  # as written


def _module_of(relpath: str) -> str:
    return relpath[: -len(".py")].replace("/", ".").removesuffix(".__init__")


def _citations_in(raw: str) -> list[tuple[int, str, str, str]]:
    """(offset, target, kind, text) of each citation in one comment or docstring."""
    marker = MARKER.search(raw)
    if marker:
        return [(marker.start("target"), marker.group("target"), "path", marker.group("target"))]
    if not COPY_CUE.search(raw):
        return []

    def cued(start: int) -> bool:
        """A copy word just before the citation, in the same sentence and line."""
        before = raw[max(0, start - CUE_WINDOW):start]
        before = re.split(r"\n|[.;:!?]\s", before)[-1]
        return bool(COPY_CUE.search(before))

    found = []
    taken: list[tuple[int, int]] = []
    for pattern in CITATIONS:
        for match in pattern.finditer(raw):
            if any(start <= match.start() < end for start, end in taken) or not cued(match.start()):
                continue
            taken.append(match.span())
            groups = match.groupdict()
            if groups.get("target"):
                found.append((match.start("target"), groups["target"], "path", match.group(0)))
            elif groups.get("path"):
                target = f"{_module_of(groups['path'])}.{groups['object']}"
                found.append((match.start(), target, "path", match.group(0)))
            else:
                found.append((match.start("name"), groups["name"], "name", match.group(0)))
    return found


def _may_cite(text: str) -> bool:
    """The cheap test a file must pass before its comments and docstrings are tokenized: the
    marker, or a copy word shortly before some "sglang"."""
    if "sglang" not in text:
        return False
    if "sglang-contracts:" in text and MARKER.search(text):
        return True
    lower = text.lower()
    return any(COPY_CUE.search(lower, max(0, at - CUE_WINDOW - 40), at) for at in sglang_mentions(lower))


@rows_of(Row(str, int, int, str, str, str))  # Citation's fields
def _file_citations(relpath: str, text: str) -> list[list]:
    """The citations in one file's comments and docstrings, as Citation fields."""
    found = []
    for _, line, col, raw in prose_pieces(text):
        if "sglang" not in raw:
            continue
        for offset, target, kind, written in _citations_in(raw):
            found.append([relpath, *offset_position(line, col, raw, offset), target, kind, written])
    return found


def mirror_citations(project: ProjectIndex) -> list[Citation]:
    # Tokenizing is the cost: only files that may cite something are read closely.
    return [Citation(*fields) for fields in project.each_file(
        "mirror-citations", _file_citations, _may_cite, sys.modules[__name__], stack)]
