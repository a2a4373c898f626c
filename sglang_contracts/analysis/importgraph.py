"""What importing an upstream module imports, transitively: its module-level import statements
(those at column 0, so never under `try`, `if` or a function), followed through every SGLang
module they reach and the packages above each one (importing `a.b.c` runs `a/__init__.py` and
`a/b/__init__.py` first). Read from the release's text, never imported; for SGC705.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import sys
from collections import deque
from dataclasses import dataclass, field

from sglang_contracts.infra.cache import code_fingerprint
from sglang_contracts.infra.shapes import ListOf, Row, TableOf
from sglang_contracts.infra.lines import matches_at_line_start
from sglang_contracts.project.index import PLAIN_IMPORT, from_imports
from sglang_contracts.upstream.model import UpstreamModel, is_upstream


DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def _long_string_spans(text: str) -> list[tuple[int, int]]:
    """Where the triple-quoted strings (docstrings) are, found by plain search: a line in one
    that reads like an import is prose. Each quote's next place is searched again only once
    the scan has passed it (searching both from every string was quadratic in a long file)."""
    spans: list[tuple[int, int]] = []
    following = {quote: text.find(quote) for quote in ('"""', "'''")}
    at = 0
    while True:
        for quote, where in following.items():
            if where != -1 and where < at:
                following[quote] = text.find(quote, at)
        found = [(where, quote) for quote, where in following.items() if where != -1]
        if not found:
            return spans
        start, quote = min(found)
        end = text.find(quote, start + 3)
        end = len(text) if end == -1 else end + 3
        spans.append((start, end))
        at = end


def module_level_statements(text: str) -> str:
    """The import statements at column 0 (never under `try`, `if` or a function), outside
    docstrings, one after another: a few hundred bytes for the patterns to read, not the file."""
    starts = _import_line_starts(text)
    spans = _long_string_spans(text) if starts else []
    begins = [begin for begin, _ in spans]  # in order, never overlapping
    statements = []
    for start in sorted(starts):
        inside = bisect.bisect_right(begins, start) - 1
        if inside >= 0 and start < spans[inside][1]:
            continue
        statements.append(text[start:_statement_end(text, start)])
    return "\n".join(statements)


def _import_line_starts(text: str) -> set[int]:
    """Where the lines that begin with `import ` or `from ` start."""
    starts = {0} if text.startswith(("import ", "from ")) else set()
    for keyword in ("\nimport ", "\nfrom "):
        at = text.find(keyword)
        while at != -1:
            starts.add(at + 1)
            at = text.find(keyword, at + 1)
    return starts


def _statement_end(text: str, start: int) -> int:
    """Where the import statement at `start` ends: its line's end, or its closing parenthesis."""
    end = text.find("\n", start)
    end = len(text) if end == -1 else end
    if "(" in text[start:end] and ")" not in text[start:end]:  # `from x import (\n a,\n b)`
        close = text.find(")", start)
        end = len(text) if close == -1 else close + 1
    return end


@dataclass
class ImportGraph:
    """The module-level imports of one release, read as they are reached. For a published
    release (content that never changes) what was read is kept in the cache for the next run."""

    model: UpstreamModel
    _edges: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=dict)
    _reach: dict[str, frozenset[str]] = field(default_factory=dict)
    _key: str | None = None
    _stored: int = 0

    def __post_init__(self) -> None:
        identity = self.model.release.identity
        if identity:
            self._key = hashlib.sha256(f"import-graph\0{code_fingerprint(sys.modules[__name__])}\0{identity}".encode()).hexdigest()
            stored = self.model.cache.get(self._key, TableOf(Row(ListOf(str), ListOf(str))))
            if stored is not None:
                self._edges = {name: (tuple(edge[0]), tuple(edge[1])) for name, edge in stored.items()}
        self._stored = len(self._edges)

    def save(self) -> None:
        """Keep what was read (once per run, and only when something new was)."""
        if self._key is not None and len(self._edges) > self._stored:
            self.model.cache.put(self._key, {name: [list(a), list(b)] for name, (a, b) in self._edges.items()})
            self._stored = len(self._edges)

    def direct(self, name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(upstream modules importing it runs, existing ones only, its packages above it
        included; third-party top-level packages) of one module's own top level."""
        if name not in self._edges:
            modules, packages = self._read(name)
            parents = {".".join(name.split(".")[:depth]) for depth in range(1, name.count(".") + 1)}
            self._edges[name] = (tuple(sorted(m for m in modules | parents if self.model.module_exists(m))),
                                 tuple(sorted(packages)))
        return self._edges[name]

    def _read(self, name: str) -> tuple[set[str], set[str]]:
        found = self.model.module_text(name)
        if found is None:
            return set(), set()
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

        text = module_level_statements(text)
        for source, names in from_imports(relpath, name, text, module_level=True):
            add(source)
            if is_upstream(source):  # `from sglang.srt.x import y`: y may be a submodule (never a Class)
                modules.update(f"{source}.{n}" for n in names if n != "*" and n[:1].islower()
                               and self.model.module_exists(f"{source}.{n}"))
        for _, match in matches_at_line_start(PLAIN_IMPORT, text):
            for part in match.group(1).split("#")[0].split(";")[0].split(","):
                add(part.split(" as ")[0].strip())
        modules.discard(name)
        return modules, packages - set(sys.stdlib_module_names)

    def packages_reached(self, start: str) -> frozenset[str]:
        """Every third-party package that importing `start` imports. Strongly connected
        components (Tarjan's, iterative) share one answer, and each is computed once per run."""
        if start in self._reach:
            return self._reach[start]
        index: dict[str, int] = {start: 0}
        low: dict[str, int] = {start: 0}
        stack, on_stack = [start], {start}
        work = [(start, iter(self.direct(start)[0]))]
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor in self._reach:
                    continue
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(self.direct(successor)[0])))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    self._settle_component(node, stack, on_stack)
        return self._reach[start]

    def _settle_component(self, node: str, stack: list[str], on_stack: set[str]) -> None:
        """The strongly connected component whose root is `node` popped off Tarjan's stack, and
        the packages its members import, with those of what they import, kept for each."""
        members = []
        while True:
            member = stack.pop()
            on_stack.discard(member)
            members.append(member)
            if member == node:
                break
        packages: set[str] = set()
        for member in members:
            modules, own = self.direct(member)
            packages.update(own)
            for module in modules:
                packages.update(self._reach.get(module, ()))
        for member in members:
            self._reach[member] = frozenset(packages)

    def chain(self, start: str, package: str) -> tuple[str, ...]:
        """The shortest chain of modules from `start` to one that imports `package` itself."""
        parents: dict[str, str | None] = {start: None}
        queue = deque([start])
        while queue:
            module = queue.popleft()
            modules, packages = self.direct(module)
            if package in packages:
                path = [module]
                while parents[path[-1]] is not None:
                    path.append(parents[path[-1]])
                return tuple(reversed(path))
            for successor in modules:
                if successor not in parents:
                    parents[successor] = module
                    queue.append(successor)
        return (start,)
