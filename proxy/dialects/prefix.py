"""What a conversation's last request parsed, so that the next one parses only what it adds.

An agent's next request repeats its last one and adds to it. On the client matrix
(`bench/prefix_bytes.py`) nine of eleven clients send each request as the bytes of the one before up
to the end of its transcript (`messages`, or `input`), then the new messages, then the members after
it (the same, but for Codex's); Claude Code rewrites its last message (its prompt-cache mark moves on)
and aider one of its last five: theirs are parsed whole, as before.

    last body   {... "messages": [m1, ..., mk]  , "tools": [...]}
                 <---------- end ------------><------ rest ----->
    next body   {... "messages": [m1, ..., mk, mk+1, ..., mj]  , "tools": [...]}
                 <-- the same bytes (digest) -><-- parsed --><-- the same bytes, or parsed -->

What a parse found is kept (`_Kept`): the members before the transcript, its elements, the members
after, where its last element ends (`end`), a digest of the bytes before (XXH3-128: no accidental
collision in practice; a crafted one could only mislead the reading of the client's own request), and
the bytes after (`rest`). A body with the same bytes before `end` is the kept JSON plus what follows:
whole values after a comma, then `rest` (only the values are parsed), or else the rest of the body
parsed alone as the end of an object whose first member is an array (`seams`). A conversation's first
body is kept as bytes (`_Pending`); the next is parsed whole, and kept with where its transcript ends,
found where the two bodies first differ (the first one's bytes from there must close its transcript
with exactly the members its parse found after it). Measured at 600 messages (745 KB, loaded
machine): 155-160 us against 1.0 ms for one `orjson.loads` of the body; 30 such conversations in
turn, a request's analysis 1.1-1.3 ms at p50 against 1.7-2.0 parsed whole (the first body kept as
bytes, not parsed: kept parsed, 30 of them did not fit the byte share and none was read in part).

Must never: give a body any JSON but its own parse; let a kept element be changed (requests share
them: the engine and the writers treat a request as read-only); keep more than its byte bound (least
recently used first, each entry charged `CHARGE` times the body bytes it stands for).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson
import xxhash

from proxy.dialects.seams import after_members, close_of, common_prefix, last_byte, likely_close, new_elements, tail

__all__ = ["CHARGE", "MIN_BYTES", "ParseMemory"]

MIN_BYTES = 64 * 1024
"""Bodies shorter than this are parsed whole and not kept (their parse costs under 50 us)."""
CHARGE = 1.5
"""Bytes charged per body byte a kept entry stands for: its parsed elements (measured with
tracemalloc: 1.41 times the body for a 600-message transcript), and the bytes it keeps."""
WINDOW = 64
"""Bytes before `end` compared first: a body of another conversation is passed over at once."""


@dataclass(frozen=True, slots=True)
class _Parsed:
    """A body's JSON object around its transcript (`key`), in the body's order."""

    key: str
    before: tuple[tuple[str, Any], ...]
    elements: list[Any]
    after: tuple[tuple[str, Any], ...]

    def data(self) -> dict[str, Any]:
        """The JSON object (its transcript a list of its own: the elements are shared, never the list)."""
        return {**dict(self.before), self.key: list(self.elements), **dict(self.after)}

    @classmethod
    def of(cls, data: dict[str, Any], key: str) -> _Parsed | None:
        keys = list(data)
        if not isinstance(data.get(key), list):
            return None
        at = keys.index(key)
        return cls(key, tuple((k, data[k]) for k in keys[:at]), data[key], tuple((k, data[k]) for k in keys[at + 1 :]))


@dataclass(frozen=True, slots=True)
class _Kept:
    parsed: _Parsed
    end: int
    """Where the transcript's last element ends (the body's bytes before it are digested)."""
    digest: bytes
    window: bytes
    rest: bytes
    """The bytes after `end`: `]` and the members after the transcript."""


@dataclass(frozen=True, slots=True)
class _Pending:
    """A conversation's first body: its bytes, how many elements its transcript has, what follows it."""

    key: str
    body: bytes
    count: int
    after: dict[str, Any]
    probe: int
    """Where its transcript most likely ends: the bytes before it tell its conversation's next body."""


Entry = _Kept | _Pending


def _kept(parsed: _Parsed, body: bytes, end: int, hashed: Any = None, hashed_to: int = 0) -> _Kept:
    """What to keep of a body read up to `end` (its transcript's last element ends there); `hashed`:
    a running hash of its bytes up to `hashed_to`, extended (each byte is read once)."""
    if hashed is None or hashed_to > end:
        hashed, hashed_to = xxhash.xxh3_128(), 0
    hasher = hashed.copy()
    hasher.update(memoryview(body)[hashed_to:end])
    return _Kept(parsed, end, hasher.digest(), body[end - WINDOW : end], body[end:])


class ParseMemory:
    """The last parse of each conversation lately seen, bounded in bytes, and what reads a body from it."""

    def __init__(self, max_bytes: int, entries: int = 256, min_bytes: int = MIN_BYTES) -> None:
        self._max_bytes = max_bytes
        self._min_bytes = min_bytes
        self._most = entries
        self._entries: OrderedDict[int, tuple[Entry, int]] = OrderedDict()
        self._bytes = 0
        self._next = 0
        self.hits = 0
        """Bodies read from a kept parse so far (parsed in part)."""
        self._lock = threading.Lock()  # bodies of 1 MB or more are parsed in worker threads

    @property
    def charged(self) -> int:
        """What the kept entries are charged, in bytes."""
        return self._bytes

    def resize(self, max_bytes: int) -> None:
        with self._lock:
            self._max_bytes = max_bytes
            self._evict()

    def read(self, body: bytes, key: str) -> tuple[dict[str, Any] | None, bool]:
        """`body`'s JSON object when it extends a kept parse (kept on: the next body reads on from it),
        else None (parse it whole, then `keep`); and whether only what the body adds was parsed (False
        for a conversation's second body, parsed whole to find where its transcript ends)."""
        if len(body) < self._min_bytes:
            return None, False
        with self._lock:
            entries = list(reversed(self._entries.items()))
        for number, (entry, charged) in entries:
            if (entry.key if isinstance(entry, _Pending) else entry.parsed.key) != key:
                continue
            found = _from_kept(entry, body) if isinstance(entry, _Kept) else _from_pending(entry, body)
            if found is None:
                continue
            kept, data = found
            with self._lock:
                if self._entries.pop(number, None) is not None:
                    self._bytes -= charged
                self._add(kept, len(body))
                self.hits += isinstance(entry, _Kept)
            return data, isinstance(entry, _Kept)
        return None, False

    def keep(self, body: bytes, data: dict[str, Any], key: str) -> None:
        """A body parsed whole: kept, for its conversation's next body to find where it ends."""
        parsed = _Parsed.of(data, key) if len(body) >= self._min_bytes else None
        if parsed is not None:
            with self._lock:
                after = dict(parsed.after)
                probe = max(WINDOW, last_byte(body, likely_close(body, after)) + 1)
                self._add(_Pending(key, body, len(parsed.elements), after, probe), len(body))

    def _add(self, entry: Entry, size: int) -> None:
        """Keep `entry`, standing for a body of `size` bytes (a pending one keeps the body, no parse)."""
        charged = len(entry.body) if isinstance(entry, _Pending) else int(CHARGE * size)
        self._next += 1
        self._entries[self._next] = (entry, charged)
        self._bytes += charged
        self._evict()

    def _evict(self) -> None:
        while self._entries and (self._bytes > self._max_bytes or len(self._entries) > self._most):
            _number, (_entry, charged) = self._entries.popitem(last=False)
            self._bytes -= charged


def _from_kept(entry: _Kept, body: bytes) -> tuple[Entry, dict[str, Any]] | None:
    end = entry.end
    if len(body) <= end or not body.startswith(entry.window, end - WINDOW):
        return None
    hashed = xxhash.xxh3_128(memoryview(body)[:end])
    if hashed.digest() != entry.digest:
        return None
    return _extended(entry, entry.parsed, body, end, entry.rest, hashed)


def _from_pending(entry: _Pending, body: bytes) -> tuple[Entry, dict[str, Any]] | None:
    """The next body of a conversation seen once: parsed whole, and kept with where its transcript ends
    (found where the two bodies first differ: the first one's transcript must close there)."""
    last, probe = entry.body, entry.probe
    if len(body) < len(last) or not body.startswith(memoryview(last)[probe - WINDOW : probe], probe - WINDOW):
        return None
    end = last_byte(last, common_prefix(last, body)) + 1  # where the two first differ, whitespace left out
    rest = last[end:]
    if end < WINDOW or after_members(rest) != entry.after:
        return None
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    parsed = _Parsed.of(data, entry.key) if isinstance(data, dict) else None
    if parsed is None or len(parsed.elements) < entry.count:
        return None
    close = len(body) - len(rest)
    if not (close >= end and body.endswith(rest)):
        close = close_of(body, end, parsed.elements[entry.count :], dict(parsed.after))
    return (entry if close < 0 else _kept(parsed, body, last_byte(body, close) + 1)), data


def _extended(
    entry: Entry, parsed: _Parsed, body: bytes, end: int, rest: bytes, hashed: Any = None
) -> tuple[Entry, dict[str, Any]] | None:
    """The body read as `parsed` (its bytes up to `end`, checked) plus what follows, and what to keep
    of it: the elements between `end` and the kept `rest` when the body ends with it; else the rest of
    the body parsed alone (the members after the transcript changed: Codex's do), and where the
    transcript ends found again (when it cannot be, `entry` is kept as it was: the next body reads on
    from the same end)."""
    close = len(body) - len(rest)
    new = new_elements(body[end:close]) if close >= end and body.endswith(rest) else None
    after = parsed.after
    if new is None:
        found = tail(body, end, parsed.key)
        if found is None:
            return None
        new, members = found
        after, close = tuple(members.items()), close_of(body, end, new, members)
    grown = _Parsed(parsed.key, parsed.before, [*parsed.elements, *new], after)
    if close < 0:
        return entry, grown.data()
    return _kept(grown, body, last_byte(body, close) + 1, hashed, end if hashed is not None else 0), grown.data()
