"""The in-memory state cache: bounded in entries and in bytes (least recently used goes first),
and expiring (TTL); the most recently used entries kept live and the rest packed (`Codec`),
with an optional second level that several processes share (`Tier`).

The cache only saves work: a state missing from it is folded again from the transcript,
with the same result. Each entry's size is estimated when it is stored (`sizer`; a packed
entry's is its length), so the bound holds without walking what is cached. Safe to share
between threads (large requests are analysed in worker threads).

Packed entries are bytes: the garbage collector does not walk them. Kept live (as objects),
a 24-turn state is about 30 objects the collector tracks and a long stuck run's about 110
(each trip, instruction and outcome is one); a full collection walks them all, holding every
request of the process (measured beside the cache: 1,024 live 24-turn states 2.5 ms, 4,000
of them 23 ms; 790 live 1,000-turn stuck runs, 124 KB each, 18-28 ms). So only the `live` most
recently used entries are kept as objects, and no more than `LIVE_SHARE` of the byte bound:
the rest are packed, several times smaller (a 24-turn state is 6 KB packed, about 21 KB
live), unpacked when their conversation comes back (about 30 us at 24 turns, 50 us at 100)
while the least recently used live one is packed.

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
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

__all__ = ["LIVE_SHARE", "PACKED_OVERHEAD", "Codec", "StateCache", "Tier"]

V = TypeVar("V")

Packed = bytes
"""A packed value (named: inside `StateCache`, `bytes` is its property)."""

PACKED_OVERHEAD = 512
"""Bytes a packed entry costs beyond its data: the bytes object, the entry, its key (a tuple of
two strings) and its place in the ordered dict (measured with tracemalloc: about 410, plus
malloc's own header on the bytes)."""
LIVE_SHARE = 0.25
"""The most of the byte bound live entries may take: beyond, the least recently used are
packed. Bytes stand in for the objects a collection walks (about 1 KB of state per object):
at the default bound (171 MiB for states) live 1,000-turn stuck runs stop at about 360 (404 at
192 MiB: a full collection of 4-6 ms, measured), where `live` alone would allow 790 (18-28
ms); and a small bound still holds several times more conversations than it would live."""


class Tier(Protocol[V]):
    """A second level of the cache, shared with other processes. Every call is best effort:
    a tier that fails answers None and stores nothing (the state is folded again)."""

    def load(self, key: tuple[str, str], held: V | None) -> V | None:
        """Its copy, when it has one further on than `held` (any, when nothing is held)."""
        ...

    def store(self, key: tuple[str, str], value: V) -> None: ...

    def drop(self, key: tuple[str, str]) -> None: ...


@dataclass(frozen=True, slots=True)
class Codec(Generic[V]):
    """How values are packed to bytes and back (`unpack` raises `ValueError` on bad bytes)."""

    pack: Callable[[V], bytes]
    unpack: Callable[[bytes], V]


@dataclass(slots=True)
class _Entry(Generic[V]):
    stamp: float
    value: V | None
    packed: bytes | None
    size: int


class StateCache(Generic[V]):
    def __init__(
        self,
        max_entries: int,
        ttl_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        max_bytes: int | None = None,
        sizer: Callable[[V], int] | None = None,
        tier: Tier[V] | None = None,
        codec: Codec[V] | None = None,
        live: int | None = None,
    ) -> None:
        """With a `codec`, only the `live` most recently used entries are kept as objects, and
        only while they take no more than `LIVE_SHARE` of `max_bytes`."""
        self._entries: OrderedDict[tuple[str, str], _Entry[V]] = OrderedDict()
        self._live: OrderedDict[tuple[str, str], None] = OrderedDict()
        """The keys of the entries kept as objects, least recently used first."""
        self._max = max_entries
        self._ttl = ttl_seconds
        self._clock = clock
        self._max_bytes = max_bytes
        self._sizer = sizer
        self._bytes = 0
        self._lock = threading.Lock()
        self._tier = tier
        self._codec = codec
        self._live_max = live if codec is not None and live is not None else None
        self._live_bytes = 0
        self._max_live_bytes = None if max_bytes is None else max_bytes * LIVE_SHARE

    @property
    def bytes(self) -> int:
        """The estimated size of everything cached."""
        return self._bytes

    @property
    def max_bytes(self) -> int | None:
        """The bound on `bytes`, if any."""
        return self._max_bytes

    @property
    def packed(self) -> int:
        """How many entries are kept packed."""
        return len(self._entries) - len(self._live)

    def get(self, key: tuple[str, str]) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and self._clock() - entry.stamp > self._ttl:
                self._pop(key)
                entry = None
            held = None
            if entry is not None:
                self._entries.move_to_end(key)
                held = self._open(key, entry)
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

    def _size(self, value: V) -> int:
        return self._sizer(value) if self._sizer is not None else 0

    def _keep(self, key: tuple[str, str], value: V) -> None:
        size = self._size(value)
        with self._lock:
            self._pop(key)
            self._entries[key] = _Entry(self._clock(), value, None, size)
            self._bytes += size
            self._mark_live(key, size)
            self._evict()

    def resize(self, max_bytes: int) -> None:
        """A new byte bound: past it, the least recently used entries go (and live ones are
        packed past the live share), as when an entry is stored."""
        with self._lock:
            self._max_bytes = max_bytes
            self._max_live_bytes = max_bytes * LIVE_SHARE
            self._pack_past_live_bounds()
            self._evict()

    def _evict(self) -> None:
        """Drop the least recently used entries past the bounds (never the last one). Called
        under the lock."""
        while len(self._entries) > self._max or (
            self._max_bytes is not None and self._bytes > self._max_bytes and len(self._entries) > 1
        ):
            old, _entry = next(iter(self._entries.items()))
            self._pop(old)

    def _open(self, key: tuple[str, str], entry: _Entry[V]) -> V | None:
        """The entry's value, unpacked (and kept live again) when it was packed; None (and the
        entry gone) when its bytes do not unpack. Called under the lock."""
        if entry.packed is None:
            self._mark_live(key, 0)
            return entry.value
        value = self._unpacked(entry.packed)
        if value is None:
            self._pop(key)
            return None
        size = self._size(value)
        self._bytes += size - entry.size
        entry.value, entry.packed, entry.size = value, None, size
        self._mark_live(key, size)
        return value

    def _mark_live(self, key: tuple[str, str], added: int) -> None:
        """`key` is the most recently used live entry (`added`: the bytes it adds to the live
        ones, when it was not live); past the live bounds, the least recently used live entries
        are packed, never the one just used. Called under the lock."""
        if self._live_max is None:
            return
        self._live[key] = None
        self._live.move_to_end(key)
        self._live_bytes += added
        self._pack_past_live_bounds()

    def _pack_past_live_bounds(self) -> None:
        """Pack the least recently used live entries past the live bounds, never the most
        recently used one. Called under the lock."""
        if self._live_max is None:
            return
        assert self._codec is not None
        while len(self._live) > 1 and (
            len(self._live) > self._live_max
            or (self._max_live_bytes is not None and self._live_bytes > self._max_live_bytes)
        ):
            old, _ = self._live.popitem(last=False)
            entry = self._entries[old]
            assert entry.value is not None
            entry.packed = self._codec.pack(entry.value)
            entry.value = None
            self._live_bytes -= entry.size
            size = len(entry.packed) + PACKED_OVERHEAD
            self._bytes += size - entry.size
            entry.size = size

    def pop(self, key: tuple[str, str]) -> V | None:
        """Take the entry out (of the tier too); what this process held, if anything."""
        if self._tier is not None:
            self._tier.drop(key)
        with self._lock:
            entry = self._entries.get(key)
            value = None if entry is None else self._open(key, entry)
            self._pop(key)
            return value

    def _pop(self, key: tuple[str, str]) -> None:
        entry = self._entries.pop(key, None)
        self._live.pop(key, None)
        if entry is not None:
            self._bytes -= entry.size
            if entry.packed is None and self._live_max is not None:
                self._live_bytes -= entry.size

    def __len__(self) -> int:
        return len(self._entries)

    def peek(self, key: tuple[str, str]) -> V | None:
        """The entry's value as held, for a look (admin views): its recency, its packing and the
        tier are left as they are."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or self._clock() - entry.stamp > self._ttl:
                return None
            live, packed = entry.value, entry.packed
        return live if packed is None else self._unpacked(packed)

    def items(self, first: str | None = None, newest: int | None = None) -> Iterator[tuple[tuple[str, str], V]]:
        """The entries not expired, most recently used first: those whose key starts with
        `first` (a team) when given, at most `newest` of them (packed ones are unpacked for the
        caller and stay packed: a look at thousands of them costs 0.1 ms each)."""
        now = self._clock()
        with self._lock:
            entries = [(k, e.stamp, e.value, e.packed) for k, e in reversed(self._entries.items())]
        listed = 0
        for key, stamp, live, packed in entries:
            if (first is not None and key[0] != first) or now - stamp > self._ttl:
                continue
            if newest is not None and listed >= newest:
                return
            value = live if packed is None else self._unpacked(packed)
            if value is not None:
                listed += 1
                yield key, value

    def _unpacked(self, packed: Packed) -> V | None:
        """The value `packed` holds; None when it does not unpack."""
        assert self._codec is not None
        try:
            return self._codec.unpack(packed)
        except ValueError:
            return None
