"""A pass-through option's default spelled comparably across releases and declaration shapes
(SGC509 said "default from [] to msgspec.field(default_factory=list)": the same empty list)."""

from __future__ import annotations

import pytest

from sglang_contracts.upstream.commandline import Option, default_spelled


def option(default: str, action: str = "store") -> Option:
    return Option(strings=("--x",), dest="x", default=default, action=action)


@pytest.mark.parametrize(("declared", "spelled"), [
    ("[]", "[]"), ("field(default_factory=list)", "[]"), ("dataclasses.field(default_factory=list)", "[]"),
    ("msgspec.field(default_factory=list)", "[]"), ("msgspec.field(default_factory=lambda: [])", "[]"),
    ("msgspec.field(default_factory=dict)", "{}"), ("field(default_factory=lambda: ['a'])", "['a']"),
    ("msgspec.field(default=8)", "8"), ("field(default=None, name='y')", "None"),
    ("field(default_factory=make_list)", "make_list()"), ("8", "8"), ("field(", "field("),
])
def test_a_default_is_what_the_field_gives(declared: str, spelled: str) -> None:
    assert default_spelled(option(declared)) == spelled


def test_argparse_implicit_defaults() -> None:
    assert [default_spelled(option("", action)) for action in ("store_true", "store_false", "store")] == \
        ["False", "True", "None"]
