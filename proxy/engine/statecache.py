"""The in-memory state cache: bounded (LRU) and expiring (TTL).

The cache only saves work: a state missing from it is folded again from the transcript,
with the same result.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

__all__ = ["StateCache"]

V = TypeVar("V")


class StateCache(Generic[V]):
    def __init__(self, max_entries: int, ttl_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._entries: OrderedDict[tuple[str, str], tuple[float, V]] = OrderedDict()
        self._max = max_entries
        self._ttl = ttl_seconds
        self._clock = clock

    def get(self, key: tuple[str, str]) -> V | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        stamp, value = entry
        if self._clock() - stamp > self._ttl:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def put(self, key: tuple[str, str], value: V) -> None:
        self._entries[key] = (self._clock(), value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    def pop(self, key: tuple[str, str]) -> V | None:
        entry = self._entries.pop(key, None)
        return None if entry is None else entry[1]

    def __len__(self) -> int:
        return len(self._entries)

    def items(self) -> Iterator[tuple[tuple[str, str], V]]:
        now = self._clock()
        for key, (stamp, value) in list(self._entries.items()):
            if now - stamp <= self._ttl:
                yield key, value
