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
parsed alone as the end of an object whose first member is an array. A conversation's first body is
kept whole (`_Pending`): the next finds `end` where the two first differ, and the first body's bytes
from there must close its transcript with exactly the members the parse found after it. Measured at
600 messages (745 KB): 155-160 us against 1.0 ms for one `orjson.loads` of the body (loaded machine).

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

__all__ = ["CHARGE", "MIN_BYTES", "ParseMemory"]

MIN_BYTES = 64 * 1024
"""Bodies shorter than this are parsed whole and not kept (their parse costs under 50 us)."""
CHARGE = 1.5
"""Bytes charged per body byte a kept entry stands for: its parsed elements (measured with
tracemalloc: 1.41 times the body for a 600-message transcript), and the bytes it keeps."""
WINDOW = 64
"""Bytes before `end` compared first: a body of another conversation is passed over at once."""
_WS = b" \t\r\n"


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
    parsed: _Parsed
    body: bytes


Entry = _Kept | _Pending


def _new_elements(between: bytes) -> list[Any] | None:
    """The values of `between` (nothing, or a comma then whole values), or None."""
    stripped = between.strip(_WS)
    if not stripped:
        return []
    try:
        values = orjson.loads(b"[" + stripped[1:] + b"]") if stripped.startswith(b",") else None
    except orjson.JSONDecodeError:
        return None
    return values if isinstance(values, list) else None


def _after_members(rest: bytes) -> dict[str, Any] | None:
    """The members `rest` closes the transcript with (`]`, then `, "k": v ... }` or `}`), or None."""
    stripped = rest.strip(_WS)
    tail = stripped[1:].lstrip(_WS) if stripped.startswith(b"]") else b""
    if tail == b"}":
        return {}
    if not tail.startswith(b","):
        return None
    try:
        members = orjson.loads(b"{" + tail[1:])
    except orjson.JSONDecodeError:
        return None
    return members if isinstance(members, dict) else None


def _common_prefix(first: bytes, second: bytes) -> int:
    """How many leading bytes `first` and `second` share (compared in place, halving)."""
    low, high = 0, min(len(first), len(second))
    view = memoryview(first)
    while low < high:
        middle = (low + high + 1) // 2
        if second.startswith(view[low:middle], low):
            low = middle
        else:
            high = middle - 1
    return low


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
        """Bodies read from a kept parse so far."""
        self._lock = threading.Lock()  # bodies of 1 MB or more are parsed in worker threads

    @property
    def charged(self) -> int:
        """What the kept entries are charged, in bytes."""
        return self._bytes

    def resize(self, max_bytes: int) -> None:
        with self._lock:
            self._max_bytes = max_bytes
            self._evict()

    def read(self, body: bytes, key: str) -> dict[str, Any] | None:
        """`body`'s JSON object when it extends a kept parse (kept on: the next body reads on from it),
        else None (parse it whole, then `keep`)."""
        if len(body) < self._min_bytes:
            return None
        with self._lock:
            entries = list(reversed(self._entries.items()))
        for number, (entry, charged) in entries:
            if entry.parsed.key != key:
                continue
            found = _from_kept(entry, body) if isinstance(entry, _Kept) else _from_pending(entry, body)
            if found is None:
                continue
            kept, data = found
            with self._lock:
                if self._entries.pop(number, None) is not None:
                    self._bytes -= charged
                self._add(kept, len(body))
                self.hits += 1
            return data
        return None

    def keep(self, body: bytes, data: dict[str, Any], key: str) -> None:
        """A body parsed whole: kept, for its conversation's next body to find where it ends."""
        parsed = _Parsed.of(data, key) if len(body) >= self._min_bytes else None
        if parsed is not None:
            with self._lock:
                self._add(_Pending(parsed, body), len(body))

    def _add(self, entry: Entry, size: int) -> None:
        """Keep `entry`, standing for a body of `size` bytes (a pending one keeps the body too)."""
        charged = int(CHARGE * size) + (len(entry.body) if isinstance(entry, _Pending) else 0)
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
    last = entry.body
    if len(body) < len(last) or not body.startswith(memoryview(last)[:WINDOW]):
        return None
    end = _last_byte(last, _common_prefix(last, body)) + 1  # where the two first differ, whitespace left out
    rest = last[end:]
    if end < WINDOW or _after_members(rest) != dict(entry.parsed.after):
        return None  # the first body does not end its transcript there
    return _extended(entry, entry.parsed, body, end, rest)


def _extended(
    entry: Entry, parsed: _Parsed, body: bytes, end: int, rest: bytes, hashed: Any = None
) -> tuple[Entry, dict[str, Any]] | None:
    """The body read as `parsed` (its bytes up to `end`, checked) plus what follows, and what to keep
    of it: the elements between `end` and the kept `rest` when the body ends with it; else the rest of
    the body parsed alone (the members after the transcript changed: Codex's do), and where the
    transcript ends found again (when it cannot be, `entry` is kept as it was: the next body reads on
    from the same end)."""
    close = len(body) - len(rest)
    new = _new_elements(body[end:close]) if close >= end and body.endswith(rest) else None
    after = parsed.after
    if new is None:
        found = _tail(body, end, parsed.key)
        if found is None:
            return None
        new, members = found
        after, close = tuple(members.items()), _close(body, end, new, members)
    grown = _Parsed(parsed.key, parsed.before, [*parsed.elements, *new], after)
    if close < 0:
        return entry, grown.data()
    return _kept(grown, body, _last_byte(body, close) + 1, hashed, end if hashed is not None else 0), grown.data()


_NUL_KEY = b'"\\u0000"'


def _tail(body: bytes, end: int, key: str) -> tuple[list[Any], dict[str, Any]] | None:
    """The elements after `end` and the members after the transcript, parsed from the rest of the body
    alone, as the members of an object whose first member is an array: what a whole parse would give
    of them (None: the rest is no end of a transcript, or names the transcript again)."""
    tail = body[end:].lstrip(_WS)
    if _NUL_KEY in tail:
        return None
    if tail.startswith(b","):
        tail = tail[1:]
    elif not tail.startswith(b"]"):
        return None
    try:
        members = orjson.loads(b'{"\\u0000":[' + tail)
    except orjson.JSONDecodeError:
        return None
    new = members.pop("\x00", None) if isinstance(members, dict) else None
    if not isinstance(new, list) or key in members:
        return None
    return new, members


def _close(body: bytes, end: int, new: list[Any], after: dict[str, Any]) -> int:
    """Where the transcript's `]` is, past `end`, given what follows it (-1: not found)."""
    if not after:
        at = _last_byte(body, len(body))
        at = _last_byte(body, at) if at >= 0 and body[at] == ord("}") else -1
        return at if at >= end and body[at] == ord("]") else -1
    needle = orjson.dumps(next(iter(after)))  # the first member after it, as JSON writes its key
    at = body.find(needle, end)
    while at >= 0:
        comma = _last_byte(body, at)
        close = _last_byte(body, comma) if comma >= 0 and body[comma] == ord(",") else -1
        if close >= end and body[close] == ord("]") and _new_elements(body[end:close]) == new:
            return close
        at = body.find(needle, at + 1)
    return -1


def _last_byte(body: bytes, before: int) -> int:
    """The index of the last byte before `before` that is not whitespace (-1: none)."""
    at = before - 1
    while at >= 0 and body[at] in _WS:
        at -= 1
    return at
