"""Conditions on the installed release (project/gates.py): how the scanner reads them, and
which releases a gated block runs on."""

from __future__ import annotations

from sglang_contracts.project.facts import FileFacts
from sglang_contracts.project.gates import Release, runs_on
from sglang_contracts.project.scanner import scan_source

SOURCE = '''
import sglang
from packaging import version
from importlib.metadata import version as dist_version
from sglang.version import __version__
from app.compat import FLAG
V = version.parse(sglang.__version__)
GE = V >= version.parse("0.5.6")
if GE:
    from sglang.a import x1
else:
    from sglang.a import x2
if not GE and torch_ok():
    from sglang.a import x3
if not (GE and torch_ok()):
    from sglang.a import x4
if "0.5.0" <= __version__ < "0.5.9":
    from sglang.a import x5
if tuple(int(p) for p in dist_version("sglang").split(".")[:2]) >= (0, 6):
    from sglang.a import x6
if FLAG:
    from sglang.a import x7
def f():
    v = version.parse(sglang.__version__)
    if v.release[:2] < (0, 5):
        from sglang.a import x8
try:
    from sglang.b import y
except (ImportError, AttributeError):
    from sglang.c import y
else:
    from sglang.a import x9
try:
    from sglang.b import z
    helper()
except ImportError:
    from sglang.c import z2
'''


def _running(facts: FileFacts, release: Release) -> list[str]:
    kept = []
    for fact in facts.imports:
        gate = next((b.gate for b in reversed(facts.gates)
                     if (b.start.line, b.start.col) <= (fact.position.line, fact.position.col) <= (b.end.line, b.end.col)),
                    None)
        if fact.module.startswith("sglang.") and (gate is None or runs_on(gate, release)):
            kept.append(fact.name)
    return kept


def test_gated_imports_run_on_the_releases_their_conditions_name() -> None:
    facts = scan_source("app/m.py", "app.m", SOURCE)
    assert facts.problem is None
    assert [(c.name, c.gate) for c in facts.conditions] == [("GE", (((">=", "p:0.5.6"),),))]
    # FileFacts survive their JSON form (the facts cache) with their gates.
    assert FileFacts.from_json(facts.to_json()) == facts
    compat = {"app.compat.FLAG": facts.conditions[0].gate}

    def release(version: str | None, b_imports: bool) -> Release:
        return Release(version, lambda module, name: b_imports or module != "sglang.b", compat.get)

    assert _running(facts, release("0.5.5", False)) == ["__version__", "x2", "x3", "x4", "x5", "y", "y", "z", "z2"]
    # "0.5.10" < "0.5.9" as strings: Python compares the raw version so, and so does the gate.
    assert _running(facts, release("0.5.10", True)) == ["__version__", "x1", "x4", "x5", "x7", "y", "x9", "z", "z2"]
    assert _running(facts, release("0.6.1", True)) == ["__version__", "x1", "x4", "x6", "x7", "y", "x9", "z", "z2"]
    # A version that cannot be known decides nothing: every branch is judged.
    assert _running(facts, release(None, True)) == [
        "__version__", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "y", "x9", "z", "z2"]


def test_a_version_in_a_literal_list_runs_on_the_releases_listed() -> None:
    facts = scan_source("app/m.py", "app.m", '''
import sglang as sgl
if sgl.__version__ in ["0.5.4.post2", "0.5.7"]:
    from sglang.a import listed
if sgl.__version__ not in ("0.5.4.post2", "0.5.7"):
    from sglang.a import unlisted
if sgl.__version__ in versions_from_a_file():
    from sglang.a import undecided
''')
    release = lambda version: Release(version, lambda module, name: True)  # noqa: E731
    assert _running(facts, release("0.5.7")) == ["listed", "undecided"]
    assert _running(facts, release("0.5.4")) == ["unlisted", "undecided"]
