"""What a conversation's last splice found, so that the next one walks only what is new.

An agent's next request repeats its last one and adds to it. `SpanMemory` keeps, per
conversation, where the elements of the edited array lay and a hash of that stretch of text;
when the next body has the same text there, those elements are not parsed again. The hash
is a running one (`Walk`): checking the known stretch and extending it over the new elements
reads each byte once.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

from proxy.engine.statecache import StateCache

__all__ = ["Known", "SpanMemory", "Walk", "running_hash"]


@dataclass(frozen=True, slots=True)
class Known:
    """Where the elements of one array lay in a conversation's last spliced body, up to `end`."""

    value_start: int
    end: int
    digest: bytes
    spans: tuple[tuple[int, int], ...]


def running_hash(text: str, start: int, end: int) -> Any:
    """A running hash of `text[start:end]` (SHA-1: fast, and no accidental collision), to be
    extended with what follows."""
    return hashlib.sha1(text[start:end].encode("utf-8", "surrogatepass"), usedforsecurity=False)


def _extend(hasher: Any, text: str, start: int, end: int) -> bytes:
    extended = hasher.copy()
    extended.update(text[start:end].encode("utf-8", "surrogatepass"))
    return extended.digest()  # type: ignore[no-any-return]


SPAN_BYTES = 120
"""What one remembered element costs (a tuple of two ints in a tuple), for the byte bound."""


def known_bytes(known: Known) -> int:
    return 200 + SPAN_BYTES * len(known.spans)


class SpanMemory:
    """What the last splice of each conversation found, so the next one walks only what is new.

    An agent's next request repeats its last one and adds to it: the elements of the edited
    array up to where the last body's ended are reused when a digest of that stretch of text
    matches, and only the elements after it are parsed. Kept in a `StateCache` bounded in
    entries and in bytes (each entry holds a pair of offsets per message: about 100 KB for a
    900-message transcript; least recently used goes first)."""

    def __init__(self, entries: int = 4096, max_bytes: int | None = None) -> None:
        self._cache: StateCache[Known] = StateCache(entries, math.inf, max_bytes=max_bytes, sizer=known_bytes)

    @property
    def bytes(self) -> int:
        """The estimated size of what is kept."""
        return self._cache.bytes

    def recall(self, key: tuple[str, str]) -> Known | None:
        return self._cache.get(key)

    def keep(self, key: tuple[str, str], known: Known) -> None:
        self._cache.put(key, known)


@dataclass(slots=True)
class Walk:
    """An array's elements as found: (start, end, value) each, and the running hash of the
    text from the array's start to the end of the elements known to be unchanged."""

    elements: list[tuple[int, int, Any]]
    hashed_to: int
    hasher: Any

    def digest(self, text: str, start: int) -> bytes:
        """The digest of the text from `start` to the last element's end."""
        end = self.elements[-1][1]
        if self.hasher is None:
            return running_hash(text, start, end).digest()  # type: ignore[no-any-return]
        return _extend(self.hasher, text, self.hashed_to, end)
