"""Memos kept from one process to the next: what the checks derive from the whole project, kept
in the cache's records with what it rests on (check/incremental.py kept_placeless)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Codec:
    """How a memo's value is kept from one process to the next: as plain JSON data, and back
    (a decode that raises KeyError, TypeError, ValueError or IndexError has the value computed)."""

    encode: Callable[[Any], Any]
    decode: Callable[[Any], Any]


class KeptMemo(dict):
    """A placeless memo (CheckContext.placeless_memo) that a process of its own fills from the
    last run's records and keeps for the next (incremental.kept_placeless): `read(key)`, the
    value kept under a key (encoded) or None; `write(key, encoded, texts_read)`, one kept with
    the files whose text computing it read."""

    def __init__(self, read: Callable[[str], Any], write: Callable[[str, Any, list[str]], None]) -> None:
        super().__init__()
        self.read, self.write = read, write


class KeptPerReleasePair(ABC):
    """A value of one release pair alone (CheckContext.of_releases) that keeps what it computed
    in the cache for the next process: `keep` is called once the checks of a process have run
    (contracts/base.py run_checks), and writes only what is new."""

    @abstractmethod
    def keep(self) -> None:
        """Write what this process computed that the record does not hold yet."""
