"""Project text in markdown (the bump PR's report, `patch rebase --plan`, the editor's hover),
where the project may be an attacker's pull request: a backtick in a file name closed the code
span around it, and `![x](https://evil.example/p.png)` after it rendered an image, `@octocat` a
mention.

Untrusted text is shown as code (`code`: fenced by a backtick run longer than any run inside,
CommonMark's rule, so nothing inside can close it) or as prose (`plain`: markdown's punctuation
escaped, `@` and `#` kept from mentioning anyone or referencing an issue), always printable
first (infra/display). A message's own code spans (`code_span` around a value, as the catalog
renders it) are read as CommonMark reads them and written back fenced (`inline`).
"""

from __future__ import annotations

import re

from sglang_contracts.infra.display import printable, printable_lines

BACKTICKS = re.compile(r"`+")
# Dotted names and snake_case identifiers: shown as code.
NAME = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b|\b[A-Za-z]\w*_\w+\b")
SPECIAL = re.compile(r"([\\`*\[\]<>|#])")  # `_` inside words is literal in GitHub markdown
# GitHub links `@name` (a mention, which notifies) and `#123` in rendered text, escaped or not:
# a zero-width joiner after the sign keeps the text as it reads and links nothing.
LINKED = re.compile(r"([@#])")
ZERO_WIDTH_JOINER = "\u200d"


def code_span(text: str) -> str:
    """`text` as a CommonMark code span: fenced by a backtick run longer than any in it, with a
    space inside each fence where the text starts or ends with a backtick (or has a space at
    both ends, which a reader strips). The text is taken as it is: see `code` for project text."""
    if not text:
        return "` `"
    fence = "`" * (max((len(run) for run in BACKTICKS.findall(text)), default=0) + 1)
    padded = text[0] == "`" or text[-1] == "`" or (text[0] == text[-1] == " " and text.strip(" "))
    pad = " " if padded else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def code(text: str) -> str:
    """Project text as inline code: printable, fenced."""
    return code_span(printable(text))


def cell(markdown: str) -> str:
    """Markdown in a cell of a GitHub table: a `|` escaped, which would end the cell even in a
    code span (and leave the span's backticks, and what follows them, unbalanced)."""
    return markdown.replace("|", "\\|")


def plain(text: str) -> str:
    """Project text as markdown prose: printable, markdown's punctuation escaped, no mention."""
    return LINKED.sub(r"\1" + ZERO_WIDTH_JOINER, SPECIAL.sub(r"\\\1", printable(text)))


def code_spans(text: str) -> list[tuple[bool, str]]:
    """(is code, text) pieces of `text` as CommonMark reads its code spans: a run of n backticks
    opens one and the next run of exactly n closes it (one space stripped from each end of what
    it holds, when both ends are spaces); a run that nothing closes is literal text."""
    runs = list(BACKTICKS.finditer(text))
    closer: dict[int, int | None] = {}  # run -> the next run of its length
    last: dict[int, int] = {}
    for index in reversed(range(len(runs))):
        length = len(runs[index].group())
        closer[index], last[length] = last.get(length), index
    pieces, start, index = [], 0, 0
    while index < len(runs):
        end = closer[index]
        if end is None:
            index += 1
            continue
        held = text[runs[index].end():runs[end].start()]
        if len(held) > 1 and held[0] == held[-1] == " " and held.strip(" "):
            held = held[1:-1]
        pieces += [(False, text[start:runs[index].start()]), (True, held)]
        start, index = runs[end].end(), end + 1
    pieces.append((False, text[start:]))
    return [(is_code, piece) for is_code, piece in pieces if is_code or piece]


def inline(text: str) -> str:
    """A message as markdown: its code spans kept as code, names shown as code, the rest prose.
    Code next to code is one span: two fences side by side would read as one run of backticks,
    which closes neither (and the first span's text would render as markdown)."""
    pieces: list[tuple[bool, str]] = []
    for is_code, piece in code_spans(printable(text)):
        if is_code:
            pieces.append((True, piece))
            continue
        last = 0
        for name in NAME.finditer(piece):
            pieces += [(False, piece[last:name.start()]), (True, name.group())]
            last = name.end()
        pieces.append((False, piece[last:]))
    out: list[str] = []
    held: list[str] = []  # code pieces not yet written
    for is_code, piece in pieces:
        if is_code:
            held.append(piece)
        elif piece:
            out += [code_span("".join(held))] if held else []
            out.append(plain(piece))
            held = []
    out += [code_span("".join(held))] if held else []
    return "".join(out)


def code_block(text: str, info: str = "") -> str:
    """Lines of project code as a fenced block, each printable (tabs kept): the fence is longer
    than any backtick run in them, so that no line of theirs closes the block. `info`: the
    block's language, ours (`text`)."""
    lines = printable_lines(text)
    longest = max((len(run) for line in lines for run in BACKTICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([fence + info, *lines, fence])
