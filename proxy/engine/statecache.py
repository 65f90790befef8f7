"""The in-memory state cache: bounded in entries and in bytes (least recently used goes first),
and expiring (TTL).

The cache only saves work: a state missing from it is folded again from the transcript,
with the same result. Each entry's size is estimated when it is stored (`sizer`), so the
bound holds without walking what is cached. Safe to share between threads (large requests
are analysed in worker threads).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

__all__ = ["StateCache"]

V = TypeVar("V")


class StateCache(Generic[V]):
    def __init__(
        self,
        max_entries: int,
        ttl_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        max_bytes: int | None = None,
        sizer: Callable[[V], int] | None = None,
    ) -> None:
        self._entries: OrderedDict[tuple[str, str], tuple[float, V, int]] = OrderedDict()
        self._max = max_entries
        self._ttl = ttl_seconds
        self._clock = clock
        self._max_bytes = max_bytes
        self._sizer = sizer
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def bytes(self) -> int:
        """The estimated size of everything cached."""
        return self._bytes

    def get(self, key: tuple[str, str]) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            stamp, value, _size = entry
            if self._clock() - stamp > self._ttl:
                self._pop(key)
                return None
            self._entries.move_to_end(key)
            return value

    def put(self, key: tuple[str, str], value: V) -> None:
        size = self._sizer(value) if self._sizer is not None else 0
        with self._lock:
            self._pop(key)
            self._entries[key] = (self._clock(), value, size)
            self._bytes += size
            while len(self._entries) > self._max or (
                self._max_bytes is not None and self._bytes > self._max_bytes and len(self._entries) > 1
            ):
                _key, (_stamp, _value, evicted) = self._entries.popitem(last=False)
                self._bytes -= evicted

    def pop(self, key: tuple[str, str]) -> V | None:
        with self._lock:
            return self._pop(key)

    def _pop(self, key: tuple[str, str]) -> V | None:
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        self._bytes -= entry[2]
        return entry[1]

    def __len__(self) -> int:
        return len(self._entries)

    def items(self) -> Iterator[tuple[tuple[str, str], V]]:
        now = self._clock()
        with self._lock:
            entries = list(self._entries.items())
        for key, (stamp, value, _size) in entries:
            if now - stamp <= self._ttl:
                yield key, value
