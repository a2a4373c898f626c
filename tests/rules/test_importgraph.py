"""SGC705's reading of what importing an upstream module imports (analysis/importgraph.py)."""

from __future__ import annotations

from pathlib import Path

from sglang_contracts.analysis.importgraph import ImportGraph, module_level_statements
from sglang_contracts.infra.cache import RecordCache
from sglang_contracts.sources import open_release
from sglang_contracts.upstream.model import UpstreamModel
from tests.helpers import upstream_tree

MODULE = '''"""Tool calls.

import grammarlib
from docs import example
"""
import os, json as j
from sglang.srt.function_call import (
    base,
    Detector,
)
try:
    import optional_backend
except ImportError:
    optional_backend = None
if True:
    import conditional


def load():
    import lazy
x = """
from prose import nothing
"""
from sglang.srt.function_call.inkling import InklingDetector  # noqa
'''


def test_only_module_level_statements_outside_docstrings_are_read() -> None:
    assert module_level_statements(MODULE).splitlines() == [
        "import os, json as j", "from sglang.srt.function_call import (", "    base,", "    Detector,", ")",
        "from sglang.srt.function_call.inkling import InklingDetector  # noqa"]


def test_packages_reached_through_modules_their_parents_and_cycles(tmp_path: Path) -> None:
    tree = upstream_tree(tmp_path, {
        "sglang/srt/__init__.py": "import srt_init_dep\n",
        "sglang/srt/function_call/__init__.py": "",
        "sglang/srt/function_call/parser.py": MODULE,
        "sglang/srt/function_call/base.py": "import numpy\nfrom sglang.srt.function_call import parser\n",  # a cycle
        "sglang/srt/function_call/inkling.py": "import xgrammar\n",
    }, "0.1.0")
    graph = ImportGraph(UpstreamModel(open_release(str(tree), sglang_repo=None, cache=tmp_path / "cache"), RecordCache(None)))
    start = "sglang.srt.function_call.parser"
    assert graph.packages_reached(start) == {"numpy", "xgrammar", "srt_init_dep"}
    assert graph.packages_reached("sglang.srt.function_call.base") == graph.packages_reached(start)
    assert graph.chain(start, "xgrammar") == (start, "sglang.srt.function_call.inkling")
