"""What importing an upstream module imports, transitively: its module-level import statements
(those at column 0, so never under `try`, `if` or a function), followed through every SGLang
module they reach and the packages above each one (importing `a.b.c` runs `a/__init__.py` and
`a/b/__init__.py` first). Read from the release's text, never imported; for SGC705.
"""

from __future__ import annotations

import re
import sys
from collections import deque
from dataclasses import dataclass, field

from sglang_contracts.project.index import PLAIN_IMPORT, from_imports
from sglang_contracts.upstream.model import UpstreamModel, is_upstream


DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
TRIPLE_QUOTED = re.compile(r'"""(?:[^\\]|\\.)*?"""|\'\'\'(?:[^\\]|\\.)*?\'\'\'', re.S)


def _without_long_strings(text: str) -> str:
    """The text with each triple-quoted string (a docstring) blanked but for its line breaks:
    a line in one that reads like an import is prose."""
    if '"""' not in text and "\'\'\'" not in text:
        return text
    return TRIPLE_QUOTED.sub(lambda match: "\n" * match.group().count("\n"), text)


@dataclass
class ImportGraph:
    """The module-level imports of one release, read as they are reached."""

    model: UpstreamModel
    _edges: dict[str, tuple[frozenset[str], frozenset[str]]] = field(default_factory=dict)
    _closures: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)

    def direct(self, name: str) -> tuple[frozenset[str], frozenset[str]]:
        """(upstream modules, third-party top-level packages) a module's own top level imports."""
        if name not in self._edges:
            self._edges[name] = self._read(name)
        return self._edges[name]

    def _read(self, name: str) -> tuple[frozenset[str], frozenset[str]]:
        found = self.model.module_text(name)
        if found is None:
            return frozenset(), frozenset()
        relpath, text = found
        modules: set[str] = set()
        packages: set[str] = set()

        def add(module: str) -> None:
            if not DOTTED.fullmatch(module):
                return
            if is_upstream(module):
                modules.add(module)
            elif module.split(".")[0] != "__future__":
                packages.add(module.split(".")[0])

        text = _without_long_strings(text)
        for source, names in from_imports(relpath, name, text, module_level=True):
            add(source)
            if is_upstream(source):  # `from sglang.srt.x import y`: y may be a submodule
                modules.update(f"{source}.{n}" for n in names if n != "*" and self.model.module_exists(f"{source}.{n}"))
        for match in PLAIN_IMPORT.finditer(text):
            if text[match.start()] == "i":  # at column 0, not indented under a block
                for part in match.group(1).split("#")[0].split(";")[0].split(","):
                    imported = part.split(" as ")[0].strip()
                    if DOTTED.fullmatch(imported):
                        add(imported)
        return frozenset(m for m in modules if m != name), frozenset(packages - set(sys.stdlib_module_names))

    def packages_reached(self, start: str) -> dict[str, tuple[str, ...]]:
        """Every third-party package importing `start` imports, with the chain of upstream
        modules through which it is first reached (breadth first: the shortest chain)."""
        if start in self._closures:
            return self._closures[start]
        reached: dict[str, tuple[str, ...]] = {}
        chains: dict[str, tuple[str, ...]] = {start: (start,)}
        queue = deque([start])
        while queue:
            module = queue.popleft()
            modules, packages = self.direct(module)
            for package in sorted(packages):
                reached.setdefault(package, chains[module])
            parents = {".".join(module.split(".")[:depth]) for depth in range(1, module.count(".") + 1)}
            for nxt in sorted(modules | parents):
                if nxt not in chains and self.model.module_exists(nxt):
                    chains[nxt] = (*chains[module], nxt)
                    queue.append(nxt)
        self._closures[start] = reached
        return reached
