"""griffe's next-sibling lookup made linear while the extraction visits (upstream/next_sibling.py):
the same answers and errors as griffe's own, griffe's own put back after, and a module of many
assignments read in time (seventh campaign, P11: 12,000 `vN = N` lines cost 24 s of CPU)."""

from __future__ import annotations

import ast
import inspect
import threading
import time

import griffe
import pytest

from sglang_contracts.upstream.extract import extract_module
from sglang_contracts.upstream.next_sibling import indexed_next_sibling

CODE = '''
"""Module docstring."""
x = 1
"""x's docstring."""
y: int = 2
class C:
    a = 1
    """a's docstring."""
    b = 2
    def __init__(self):
        self.c = 3
        """c's docstring."""
        if True:
            self.d = 4
def f():
    return 1
'''


def _answer(lookup, node: ast.AST) -> object:
    try:
        return lookup(node)
    except griffe.LastNodeError:
        return "last"
    except AttributeError:
        return "no parent"


def _parented(code: str) -> list[ast.AST]:
    tree = ast.parse(code)
    nodes = [tree]
    for node in nodes:  # griffe sets each child's parent as it visits
        nodes.extend(griffe.ast_children(node))
    return nodes


def _tabled(node: ast.AST) -> bool:
    """Whether the indexed lookup kept a table of this node's children on it."""
    return any("next_sibling" in key for key in vars(node))


def test_the_indexed_lookup_answers_as_griffe_does_for_every_node() -> None:
    visitor_module = inspect.getmodule(griffe.Visitor)
    expected = [_answer(griffe.ast_next, node) for node in _parented(CODE)]  # griffe's own, as shipped
    with indexed_next_sibling():
        nodes = _parented(CODE)
        answers = [_answer(visitor_module.ast_next, node) for node in nodes]
    assert [ast.dump(a) if isinstance(a, ast.AST) else a for a in answers] \
        == [ast.dump(e) if isinstance(e, ast.AST) else e for e in expected]
    assert "last" in expected and "no parent" in expected  # both errors were asked
    assert _tabled(nodes[0])  # answered by table


def test_outside_an_extraction_griffe_s_visitor_walks_as_it_ships() -> None:
    visitor_module = inspect.getmodule(griffe.Visitor)
    with indexed_next_sibling():
        with indexed_next_sibling():
            pass
        inside = _parented(CODE)
        visitor_module.ast_next(inside[1])  # still inside the outer block
    outside = _parented(CODE)
    assert visitor_module.ast_next(outside[1]) is outside[2]
    assert _tabled(inside[0]) and not _tabled(outside[0])


def test_another_thread_walks_as_griffe_ships_while_an_extraction_visits() -> None:
    visitor_module = inspect.getmodule(griffe.Visitor)
    elsewhere = _parented(CODE)
    with indexed_next_sibling():
        worker = threading.Thread(target=visitor_module.ast_next, args=(elsewhere[1],))
        worker.start()
        worker.join()
    assert not _tabled(elsewhere[0])


def test_griffe_reads_attribute_docstrings_alike_with_the_indexed_lookup() -> None:
    module = griffe.visit("m", filepath=__file__, code=CODE)
    expected = {path: obj.docstring.value if obj.docstring else None for path, obj in _walk(module)}
    with indexed_next_sibling():
        module = griffe.visit("m", filepath=__file__, code=CODE)
    assert {path: obj.docstring.value if obj.docstring else None for path, obj in _walk(module)} == expected
    assert expected["m.C.a"] == "a's docstring." and expected["m.C.c"] == "c's docstring."


def _walk(obj):
    yield obj.path, obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)


@pytest.mark.parametrize("shape", ["module", "class", "annotated"])
def test_a_module_of_12000_assignments_is_extracted_in_a_few_seconds(shape: str) -> None:
    # Each assignment's docstring was looked for by walking every statement before it: quadratic.
    count = 12_000
    if shape == "class":
        code = "class Big:\n" + "".join(f"    v{i} = {i}\n" for i in range(count))
    else:
        code = "".join(f"v{i}{': int' if shape == 'annotated' else ''} = {i}\n" for i in range(count))
    started = time.process_time()
    record = extract_module("sglang.srt.huge", "sglang/srt/huge.py", code)
    spent = time.process_time() - started
    assert "opaque" not in record
    names = record["classes"]["Big"]["attributes"] if shape == "class" else record["bindings"]
    assert len(names) == count and names[f"v{count - 1}"]["line"] == count + (shape == "class")
    assert spent < 8.0, f"{count} assignments took {spent:.1f} s of CPU"  # a hang bound: 24 s before, 0.6 s now
