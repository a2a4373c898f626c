"""What the project relies on, per file: the raw facts the scanner extracts.

Facts are plain data (JSON-ready) so a file whose content has not changed is never parsed again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Position:
    line: int
    col: int  # 1-based, as flake8 prints it


@dataclass(frozen=True)
class ImportFact:
    """`import module [as bound]` (name is None) or `from module import name [as bound]`."""

    position: Position  # of the imported name (of the module for `import x`)
    module_position: Position  # of the module in the statement
    module: str  # absolute module path (relative imports already resolved)
    name: str | None
    bound: str  # the local name the statement binds
    guarded: bool = False  # inside `try:` whose handler catches ImportError
    type_checking: bool = False  # under `if TYPE_CHECKING:`
    module_level: bool = True  # visible to other modules as an attribute of this one

    @property
    def target(self) -> str:
        """The dotted path the statement reaches."""
        return self.module if self.name is None else f"{self.module}.{self.name}"

    @property
    def binds(self) -> str:
        """The dotted path of the object the bound name refers to (`import a.b` binds `a`)."""
        if self.name is None and self.bound == self.module.split(".")[0]:
            return self.bound
        return self.target


@dataclass(frozen=True)
class AttributeFact:
    """A dotted chain `root.a.b` read (or written) in the file, rooted at an import-bound name."""

    root: str
    attrs: tuple[str, ...]
    positions: tuple[Position, ...]  # of each attribute in `attrs`
    store: bool = False


@dataclass
class FileFacts:
    path: str  # relative to the project root, POSIX
    module: str  # dotted module name inside the project
    imports: list[ImportFact] = field(default_factory=list)
    attributes: list[AttributeFact] = field(default_factory=list)
    noqa: dict[int, list[str] | None] = field(default_factory=dict)  # line -> codes, None = all
    parse_error: tuple[int, int, str] | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["noqa"] = {str(line): codes for line, codes in self.noqa.items()}
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "FileFacts":
        def position(raw: dict) -> Position:
            return Position(raw["line"], raw["col"])

        imports = [
            ImportFact(**{**raw, "position": position(raw["position"]), "module_position": position(raw["module_position"])})
            for raw in data["imports"]
        ]
        attributes = [
            AttributeFact(
                root=raw["root"],
                attrs=tuple(raw["attrs"]),
                positions=tuple(position(p) for p in raw["positions"]),
                store=raw["store"],
            )
            for raw in data["attributes"]
        ]
        error = data.get("parse_error")
        return cls(
            path=data["path"],
            module=data["module"],
            imports=imports,
            attributes=attributes,
            noqa={int(line): codes for line, codes in data["noqa"].items()},
            parse_error=tuple(error) if error else None,
        )
