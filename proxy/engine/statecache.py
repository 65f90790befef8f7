"""The in-memory state cache: bounded in entries and in bytes (least recently used goes first),
and expiring (TTL), with an optional second level that several processes share (`Tier`).

The cache only saves work: a state missing from it is folded again from the transcript,
with the same result. Each entry's size is estimated when it is stored (`sizer`), so the
bound holds without walking what is cached. Safe to share between threads (large requests
are analysed in worker threads).

With a tier (the workers of one `serve --workers N`), every state stored is also written
there, and a state is taken from there when it is missing here or the tier's is further on
(another worker served the turns since): a conversation whose requests land on different
workers is folded once, not once per worker. (A state that is behind would give the same
result: the fold goes on from it over the turns it has not seen; it only costs more.)
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Generic, Protocol, TypeVar

__all__ = ["StateCache", "Tier"]

V = TypeVar("V")


class Tier(Protocol[V]):
    """A second level of the cache, shared with other processes. Every call is best effort:
    a tier that fails answers None and stores nothing (the state is folded again)."""

    def load(self, key: tuple[str, str], held: V | None) -> V | None:
        """Its copy, when it has one further on than `held` (any, when nothing is held)."""
        ...

    def store(self, key: tuple[str, str], value: V) -> None: ...

    def drop(self, key: tuple[str, str]) -> None: ...


class StateCache(Generic[V]):
    def __init__(
        self,
        max_entries: int,
        ttl_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        max_bytes: int | None = None,
        sizer: Callable[[V], int] | None = None,
        tier: Tier[V] | None = None,
    ) -> None:
        self._entries: OrderedDict[tuple[str, str], tuple[float, V, int]] = OrderedDict()
        self._max = max_entries
        self._ttl = ttl_seconds
        self._clock = clock
        self._max_bytes = max_bytes
        self._sizer = sizer
        self._bytes = 0
        self._lock = threading.Lock()
        self._tier = tier

    @property
    def bytes(self) -> int:
        """The estimated size of everything cached."""
        return self._bytes

    def get(self, key: tuple[str, str]) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and self._clock() - entry[0] > self._ttl:
                self._pop(key)
                entry = None
            if entry is not None:
                self._entries.move_to_end(key)
            held = None if entry is None else entry[1]
        if self._tier is None:
            return held
        found = self._tier.load(key, held)
        if found is None:
            return held
        self._keep(key, found)
        return found

    def put(self, key: tuple[str, str], value: V) -> None:
        self._keep(key, value)
        if self._tier is not None:
            self._tier.store(key, value)

    def _keep(self, key: tuple[str, str], value: V) -> None:
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
        """Take the entry out (of the tier too); what this process held, if anything."""
        if self._tier is not None:
            self._tier.drop(key)
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
