"""Version asserts in the project's Python code: `assert torch.__version__ == "2.11.0+cu129"`,
`assert flashinfer.__version__.startswith("0.6")`, `assert transformers.__version__ >= "5.19"`.

A build or CI script asserts the stack it expects; the dependency closure of the new release
(closure/) says whether it still holds (SGC713). Found by pattern, never run.
"""

from __future__ import annotations

import bisect
import re

from sglang_contracts.infra.lines import line_starts
from sglang_contracts.infra.shapes import Row, rows_of

ASSERT = re.compile(
    r"""\bassert\s+\(?\s*(?:[A-Za-z_]\w*\.)*(?P<module>[A-Za-z_]\w*)\.__version__\s*"""
    r"""(?:(?P<op>==|!=|>=|<=|>|<)\s*|\.startswith\(\s*)(?P<q>["'])(?P<version>[^"'\n]{1,60})(?P=q)""")


def may_assert_version(text: str) -> bool:
    return "__version__" in text and "assert" in text


@rows_of(Row(str, int, int, str, str, str, str))
def file_version_asserts(relpath: str, text: str) -> list[list]:
    """[path, line, col, module, operator ("startswith" for a prefix), version, the assert as written] of each."""
    starts = line_starts(text)
    found = []
    for match in ASSERT.finditer(text):
        line = bisect.bisect_right(starts, match.start())
        found.append([relpath, line, match.start() - starts[line - 1] + 1, match.group("module"), match.group("op") or "startswith",
                      match.group("version"), " ".join(match.group().split())])
    return found
