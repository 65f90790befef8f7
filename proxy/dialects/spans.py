"""What a conversation's last splice found, so that the next one walks only what is new.

An agent's next request repeats its last one and adds to it. `SpanMemory` keeps, per
conversation, where the elements of the edited array lay and a hash of that stretch of text;
when the next body has the same text there, those elements are not parsed again. The hash
is a running one (`Walk`): checking the known stretch and extending it over the new elements
reads each byte once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import xxhash

from proxy.dialects.prefix import ParseMemory
from proxy.engine.state.cache import StateCache

__all__ = ["Known", "SpanMemory", "Walk", "running_hash"]


@dataclass(frozen=True, slots=True)
class Known:
    """Where the elements of one array lay in a conversation's last spliced body, up to `end`."""

    value_start: int
    end: int
    digest: bytes
    spans: tuple[tuple[int, int, None], ...]
    """Each element's (start, end, None): the shape a `Walk` lists elements in, with no value
    (a known element is not parsed again), so a walk takes them over as they are."""


def _utf8(text: str, start: int, end: int, raw: bytes | None) -> bytes | memoryview:
    """`text[start:end]` in UTF-8: from `raw`, the text's bytes, when given (an ASCII text's
    bytes lie at its offsets: nothing is copied), else encoded."""
    if raw is not None:
        return memoryview(raw)[start:end]
    return text[start:end].encode("utf-8", "surrogatepass")


def running_hash(text: str, start: int, end: int, raw: bytes | None = None) -> Any:
    """A running hash of `text[start:end]` (`raw`: see `_utf8`), to be extended with what follows.

    XXH3-128: no accidental collision in practice, and it runs at memory speed (a 60 KB body
    in about 2 us, where SHA-1 took 28 us: it runs on every request). It is not a defence
    against a crafted collision, and needs none: the text is the client's own request, and a
    collision could only make the splice of that same request keep bytes it changed."""
    return xxhash.xxh3_128(_utf8(text, start, end, raw))


def _extend(hasher: Any, text: str, start: int, end: int, raw: bytes | None) -> bytes:
    extended = hasher.copy()
    extended.update(_utf8(text, start, end, raw))
    return extended.digest()  # type: ignore[no-any-return]


SPAN_BYTES = 144
"""What one remembered element costs (a tuple of two ints and None, in a tuple), for the byte bound
(measured with tracemalloc: about 136 when its offsets are past the small-int cache)."""


def known_bytes(known: Known) -> int:
    return 200 + SPAN_BYTES * len(known.spans)


class SpanMemory:
    """What the last splice and the last parse of each conversation found, so the next ones walk
    only what is new.

    An agent's next request repeats its last one and adds to it: the elements of the edited
    array up to where the last body's ended are reused when a digest of that stretch of text
    matches, and only the elements after it are parsed. Kept in a `StateCache` bounded in
    entries and in bytes (each entry holds a pair of offsets per message: about 100 KB for a
    900-message transcript; least recently used goes first). The last parses (`parses`:
    `prefix.ParseMemory`, about 1.5 times a body each) take `PARSES_SHARE` of the byte bound."""

    def __init__(self, entries: int = 4096, max_bytes: int | None = None) -> None:
        self._max_bytes = max_bytes
        spans, parses = _split(max_bytes)
        self._cache: StateCache[Known] = StateCache(entries, math.inf, max_bytes=spans, sizer=known_bytes)
        self.parses = ParseMemory(parses)

    @property
    def bytes(self) -> int:
        """The estimated size of what is kept."""
        return self._cache.bytes + self.parses.charged

    @property
    def max_bytes(self) -> int | None:
        return self._max_bytes

    def resize(self, max_bytes: int) -> None:
        """A new byte bound; the least recently used entries past it go."""
        self._max_bytes = max_bytes
        spans, parses = _split(max_bytes)
        self._cache.resize(max_bytes if spans is None else spans)
        self.parses.resize(parses)

    def recall(self, key: tuple[str, str]) -> Known | None:
        return self._cache.get(key)

    def keep(self, key: tuple[str, str], known: Known) -> None:
        self._cache.put(key, known)


PARSES_SHARE = 0.75
"""Of a span memory's byte bound, what its last parses may take (a parse is kept whole: about 1.1 MB
for a 600-message, 760 KB body, where its spans take 86 KB)."""
UNBOUNDED_PARSES = 64 * 1024 * 1024
"""The last parses' bound in a span memory given none (replay, benchmarks, tests)."""


def _split(max_bytes: int | None) -> tuple[int | None, int]:
    """The spans' and the parses' shares of a byte bound."""
    if max_bytes is None:
        return None, UNBOUNDED_PARSES
    parses = int(max_bytes * PARSES_SHARE)
    return max_bytes - parses, parses


@dataclass(slots=True)
class Walk:
    """An array's elements as found: (start, end, value) each, and the running hash of the
    text from the array's start to the end of the elements known to be unchanged."""

    elements: list[tuple[int, int, Any]]
    hashed_to: int
    hasher: Any
    reused: tuple[tuple[int, int, None], ...] = ()
    """The known elements taken over from the last body (the first elements)."""

    def spans(self) -> tuple[tuple[int, int, None], ...]:
        """Every element's (start, end, None), for the next request's `Known`."""
        fresh = self.elements[len(self.reused) :]
        return self.reused + tuple((start, end, None) for start, end, _value in fresh)

    def digest(self, text: str, start: int, raw: bytes | None = None) -> bytes:
        """The digest of the text from `start` to the last element's end (`raw`: see `_utf8`)."""
        end = self.elements[-1][1]
        if self.hasher is None:
            return running_hash(text, start, end, raw).digest()  # type: ignore[no-any-return]
        return _extend(self.hasher, text, self.hashed_to, end, raw)
