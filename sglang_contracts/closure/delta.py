"""What moves between the closures of two releases, and the chain that brings each move.

A package moves when the version its closure pins (or, unpinned, the range asked of it)
differs between the releases, or when it comes or goes. A move seen alike on several
platforms is one move naming them. The stack's heavy parts (torch, the CUDA libraries,
flashinfer, transformers, triton) are flagged `key`: the markdown report lists them first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sglang_contracts.requirements import parse_specifier

if TYPE_CHECKING:  # a replay reads the delta without the closure's machinery
    from sglang_contracts.closure.walk import Closure

KEY_PACKAGE = re.compile(r"torch|torchvision|torchaudio|triton|transformers|flashinfer.*|nvidia-.*|cuda-.*|sglang-kernel")
PYTHON_MINORS = range(8, 17)  # the Pythons a closure's Requires-Python headers are read at


@dataclass(frozen=True)
class Move:
    name: str
    old: str | None  # "2.30.7", ">=4.10.0", "(any version)"; None: not in the old closure
    new: str | None  # None: not in the new closure
    chain: str  # what brings it: the new closure's chain, or the old one's for a package gone
    platforms: tuple[str, ...]

    @property
    def key(self) -> bool:
        return bool(KEY_PACKAGE.fullmatch(self.name))

    def to_json(self) -> dict[str, Any]:
        return {"package": self.name, "old": self.old, "new": self.new, "chain": self.chain,
                "platforms": list(self.platforms), "key": self.key}


@dataclass
class ClosureDelta:
    old: str  # the releases, as reports name them
    new: str
    moves: list[Move] = field(default_factory=list)
    python: tuple[str, str] | None = None  # the Pythons every package of each closure installs on, when they differ
    sizes: tuple[int, int] = (0, 0)  # packages in each closure (the first platform's)
    notes: list[str] = field(default_factory=list)  # what could not be read: the index, a package's metadata
    # Whether the closure reaches past SGLang's own pins: an index was to be read, or (with
    # `package-index = "none"`, the cache only) the cache held some pin's metadata. Without,
    # the moves are SGLang's pins alone, which SGC701 already reports: no markdown section.
    transitive: bool = True
    # Whether an index was to be read (any `package-index` but "none"). The JSON document is an
    # object only then: with "none" it stays the list whatever a (shared) cache holds, the one
    # shape CI jobs, editors and the test suite that set "none" parse.
    index_read: bool = True
    unread: str = ""  # with "none": the one line naming the pins the cache did not hold
    cuda_build: str = ""  # the CUDA build the closures are read for, and where the project names it
    build_unread: str = ""  # the one line saying which of the build's packages were not read

    @property
    def reported(self) -> bool:
        return self.transitive and bool(self.moves or self.python)

    def to_json(self) -> dict[str, Any]:
        return {"old": self.old, "new": self.new, "moves": [move.to_json() for move in self.moves],
                "python": list(self.python) if self.python else None, "sizes": list(self.sizes), "notes": self.notes,
                "transitive": self.transitive, "index_read": self.index_read, "unread": self.unread,
                "cuda_build": self.cuda_build, "build_unread": self.build_unread}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ClosureDelta":
        moves = [Move(str(m["package"]), _text(m["old"]), _text(m["new"]), str(m["chain"]),
                      tuple(map(str, m["platforms"]))) for m in data["moves"]]
        python = data["python"]
        old_size, new_size = data["sizes"]
        return cls(str(data["old"]), str(data["new"]), moves, (str(python[0]), str(python[1])) if python else None,
                   (int(old_size), int(new_size)), [str(note) for note in data["notes"]], bool(data["transitive"]),
                   bool(data.get("index_read", True)), str(data.get("unread", "")), str(data.get("cuda_build", "")),
                   str(data.get("build_unread", "")))


def _text(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError("not a string")
    return value


def spelled_in(closure: Closure, name: str) -> str | None:
    """How the closure fixes `name`: its exact version, else the ranges asked of it."""
    if name not in closure.needs:
        return None
    version = closure.version(name)
    if version is not None:
        return version
    ranges = sorted({need.specifier for need in closure.needs[name] if need.specifier})
    return ",".join(ranges) or "(any version)"


MOST_NAMED = 4  # the packages named as the ones that drop a Python


def _excluding(closure: Closure, minor: int) -> list[str]:
    return [who for who, spec in closure.requires_python.items()
            if (parsed := parse_specifier(spec)) is not None and not parsed.contains(f"3.{minor}")]


def pythons(closure: Closure) -> tuple[str, list[int]]:
    """(the Pythons every package of the closure installs on, spelled; their minors)."""
    admitted = [minor for minor in PYTHON_MINORS if not _excluding(closure, minor)]
    if not admitted:
        return "none", []
    spelled = f"3.{admitted[0]}" + (" and later" if admitted[-1] == PYTHON_MINORS[-1] else f" to 3.{admitted[-1]}")
    return spelled, admitted


def _python_move(old: Closure, new: Closure) -> tuple[str, str] | None:
    """The Pythons of each closure where they differ, the new side naming what drops the Pythons
    the old one installed on (sglang's own `Requires-Python` first)."""
    (was, old_minors), (now, new_minors) = pythons(old), pythons(new)
    if was == now:
        return None
    dropping: list[str] = []
    for minor in sorted(set(old_minors) - set(new_minors)):
        dropping += [who for who in _excluding(new, minor) if who not in dropping]
    named = ", ".join(dropping[:MOST_NAMED]) + (f" and {len(dropping) - MOST_NAMED} more" if len(dropping) > MOST_NAMED else "")
    return was, f"{now} ({named})" if named else now


def _merge_moves(merged: dict[tuple[str, str | None, str | None], Move], platform: str, old_closure: Closure,
                 new_closure: Closure) -> None:
    """Add one platform's moves to `merged`: a move seen on another platform gains this one."""
    for name in sorted(set(old_closure.needs) | set(new_closure.needs)):
        was, now = spelled_in(old_closure, name), spelled_in(new_closure, name)
        if was == now:
            continue
        bringing = new_closure.first(name, old_closure) or old_closure.first(name, new_closure)
        chain = bringing.path() if bringing is not None else name
        seen = merged.get((name, was, now))
        merged[name, was, now] = Move(name, was, now, seen.chain if seen else chain,
                                      (*seen.platforms, platform) if seen else (platform,))


def closure_delta(old: dict[str, Closure], new: dict[str, Closure], old_label: str, new_label: str) -> ClosureDelta:
    """The moves between the closures of each platform both were computed for."""
    merged: dict[tuple[str, str | None, str | None], Move] = {}
    for platform, new_closure in new.items():
        old_closure = old.get(platform)
        if old_closure is not None:
            _merge_moves(merged, platform, old_closure, new_closure)
    delta = ClosureDelta(old_label, new_label, sorted(merged.values(), key=lambda m: (not m.key, m.name)))
    if old and new:
        first_old, first_new = next(iter(old.values())), next(iter(new.values()))
        delta.sizes = (len(first_old.needs), len(first_new.needs))
        delta.python = _python_move(first_old, first_new)
    return delta
