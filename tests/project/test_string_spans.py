"""Whether a `# noqa` match lies inside a string literal (scanner.string_test): only the nodes
whose lines hold a match are entered, and the answers are those of a walk of the whole tree."""

from __future__ import annotations

import ast

import hypothesmith
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sglang_contracts.project.scanner import string_test


def _string_spans(module: ast.Module) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The definition: the spans of every string literal of the module, by a walk of the whole tree."""
    return [((node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)) for node in ast.walk(module)
            if type(node) is ast.JoinedStr or type(node) is ast.Constant and isinstance(node.value, str)]


def _same_answers(text: str, lines: set[int]) -> None:
    module = ast.parse(text)
    inside = string_test(module, lines)
    spans = _string_spans(module)
    widths = [len(line.encode()) for line in text.splitlines()]
    for line in lines:
        for col in range(widths[line - 1] + 1):
            assert inside(line, col) == any(start <= (line, col) < end for start, end in spans), (line, col)


DECORATED = '''\
@app.get("/health  # noqa: SGC105")
def health():
    return """
    # noqa
    """


@dataclass(repr="x  # noqa")  # noqa: SGC201
class C:
    x: str = f"{1}  # noqa"
'''


def test_a_decorators_strings_are_found_above_their_definition():
    # a definition's position starts at `def`/`class`: its decorators' lines are above it
    _same_answers(DECORATED, set(range(1, DECORATED.count("\n") + 1)))
    inside = string_test(ast.parse(DECORATED), {1, 8})
    assert inside(1, 20) and inside(8, 20) and not inside(8, 30)


@settings(max_examples=15, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(text=hypothesmith.from_node(), picks=st.lists(st.integers(1, 400), max_size=6))
def test_the_answers_are_those_of_a_walk_of_the_whole_tree(text, picks):
    count = len(text.splitlines())
    _same_answers(text, {1 + pick % count for pick in picks} if count else set())
