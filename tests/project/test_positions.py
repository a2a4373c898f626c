"""Positions are flake8's: 1-based lines, 1-based character columns, at the name itself."""

from sglang_contracts.project.scanner import scan_source

SOURCE = '''\
from sglang.srt.layers import RMSNorm
from .  local import thing
import sglang.srt.utils as utils
label = "é"; utils.helper_gone(RMSNorm)


class Norm(RMSNorm):
    async  def forward(self, x):
        return self.weight


def patched(self, x):
    return (
        utils
        .nested
        .gone
    )


RMSNorm.forward_cuda = patched
'''


def facts():
    return scan_source("pkg/mod.py", "pkg.mod", SOURCE, ("pkg",))


def test_import_positions_point_at_the_names():
    imports = {fact.bound: fact for fact in facts().imports}
    assert (imports["RMSNorm"].position.line, imports["RMSNorm"].position.col) == (1, 31)
    assert (imports["RMSNorm"].module_position.line, imports["RMSNorm"].module_position.col) == (1, 6)
    assert (imports["thing"].module_position.line, imports["thing"].module_position.col) == (2, 9)
    assert (imports["utils"].position.line, imports["utils"].position.col) == (3, 8)


def test_columns_count_characters_after_non_ascii_text():
    chain = next(fact for fact in facts().attributes if fact.attrs == ("helper_gone",))
    # "é" is two bytes in UTF-8 and one character: the column counts characters.
    assert (chain.positions[0].line, chain.positions[0].col) == (4, 20)
    call = next(fact for fact in facts().calls if fact.callee.types == ("C:utils.helper_gone",))
    assert [(arg.kind, arg.name, arg.position.col) for arg in call.args] == [("pos", "RMSNorm", 32)]


def test_definitions_and_attributes_point_at_their_names():
    found = facts()
    norm = found.classes[0]
    assert (norm.position.line, norm.position.col) == (7, 7)
    assert (norm.methods[0].position.line, norm.methods[0].position.col) == (8, 16)
    read = next(fact for fact in found.reads if fact.attr == "weight")
    assert (read.position.line, read.position.col) == (9, 21)
    nested = next(fact for fact in found.attributes if fact.attrs == ("nested", "gone"))
    assert [(p.line, p.col) for p in nested.positions] == [(15, 10), (16, 10)]
    patch = next(fact for fact in found.patches if fact.kind == "replace")
    assert (patch.position.line, patch.position.col) == (20, 9)
    assert [(f.name, f.position.line, f.position.col) for f in found.functions] == [("patched", 12, 5)]


def test_a_file_that_does_not_parse_gives_where_and_why():
    broken = scan_source("pkg/bad.py", "pkg.bad", "def f(:\n    pass\n", ("pkg",))
    assert broken.parse_error is not None and broken.parse_error[0] == 1
    assert broken.parse_error[2]  # CPython's message


def test_a_noqa_pattern_in_a_string_s_text_is_no_comment() -> None:
    """`f(b="# noqa: SGC201")` silenced the line's findings (campaign 13, R05): only a comment
    is one, as ruff reads them; one after the string, and one on a line inside no string, are."""
    text = ('f(1, b="# noqa: SGC201")\n'
            'f(1, b=2); s = "see #noqa"\n'
            's = """\n# noqa\n"""\n'
            'f(1, b="é # noqa")  # noqa: SGC202\n'
            'f(1, b=f"{s} # noqa")\n'
            'f(1, b=2)  # noqa\n')
    assert scan_source("m.py", "m", text).noqa == {6: ["SGC202"], 8: None}
