"""What analysis holds in memory, kept within `store.state_cache_bytes`.

The bound is shared out, in this order:

1. The tokenizer: `TOKENIZER_BYTES`, charged from the start, whether it is loaded yet or not.
2. Working memory: `WORKING_FACTOR` times the most body bytes analysed at once, lately, plus
   `HELD_FACTOR` times the bytes of the transcripts held parsed meanwhile (queued to be caught
   up beside the traffic: parsed already, and charged as such while they wait).
   Parsing and planning a body allocates several times its size, and glibc keeps what is
   freed for the next request rather than giving it back (giving it back after every large
   request costs about 1.7 ms of trimming and page faults: see the README). Never more than
   `MAX_WORKING_SHARE` of what the tokenizer leaves: bodies past that are analysed anyway, and
   the process may then go over the bound by the difference.
3. The rest: conversation states (3/4) and message spans (1/4). When the working charge
   grows, both caches shrink to their new share, least recently used first.

"Lately" is the last `WORKING_WINDOW` analyses: when all of them stay below the charged peak,
the charge falls to their largest, the caches get the room back, and the process is asked to
give its free memory back to the system (`release`; glibc's `malloc_trim` in a worker), once.
So one large body shrinks the caches for a while, not for the process's life.

So the process's memory stays within its idle footprint plus the bound, however many
conversations come and however large their transcripts grow, up to bodies of about
`MAX_WORKING_SHARE` x (bound - tokenizer) / `WORKING_FACTOR` (8.5 MB at the default bound).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from proxy.dialects import SpanMemory
from proxy.dialects.prefix import CHARGE
from proxy.engine.state.cache import StateCache
from proxy.engine.state.conversation import ConversationState
from proxy.engine.text.tokens import TOKENIZER_BYTES

__all__ = ["HELD_FACTOR", "MAX_WORKING_SHARE", "WORKING_FACTOR", "WORKING_WINDOW", "Footprint", "Shares"]

WORKING_FACTOR = 20
"""Bytes of working memory charged per body byte analysed. Measured (`serve`, VmRSS, the cache
bounded far above what it held): one worker's first body of 546 KB, 1,092 KB or 2,185 KB left
8.5, 13.6 and 29.6 MB beyond what a small body leaves (the tokenizer and parsers): 12.5 to 15.6
times; the next bodies of the same size up to 2.7 MB more (fragmentation, about 2.5 times the
body). Bodies under 200 KB leave under 1 MB."""
HELD_FACTOR = CHARGE
"""Bytes charged per body byte of a transcript held parsed while it waits to be caught up: what a
kept parse is charged (`dialects.prefix.CHARGE`: 1.41 times the body, measured with tracemalloc). Charged as a
body analysed (`WORKING_FACTOR`), the eight a worker may queue took 119 MB at 600 messages, and the
last parses' share fell to 18 MB for the next `WORKING_WINDOW` analyses: fewer than the thirty
conversations of `bench/turn_cost.py`, so each of them, read least recently used, was parsed whole."""
MAX_WORKING_SHARE = 0.75
"""The most of the bound past the tokenizer that working memory is charged: the caches keep
at least the rest (they only save work: a state not cached is folded again)."""
WORKING_WINDOW = 1000
"""Analyses after which the working charge falls to the largest among them, when that is less."""


@dataclass(frozen=True, slots=True)
class Shares:
    """The working memory charged, and the byte bounds of the two caches."""

    working: int
    states: int
    spans: int

    @classmethod
    def of(cls, bound: int, working: int) -> Shares:
        """The shares of `bound` once the tokenizer is charged and `working` bytes (at most
        `MAX_WORKING_SHARE` of what the tokenizer leaves)."""
        rest = bound - TOKENIZER_BYTES
        charged = min(working, int(rest * MAX_WORKING_SHARE))
        left = rest - charged
        spans = left // 4
        return cls(charged, left - spans, spans)


class Footprint:
    """Charges each analysed body's working memory against the bound (see the module). Used
    from the event loop only; the caches it resizes take their own locks."""

    def __init__(
        self,
        bound: int,
        states: StateCache[ConversationState],
        spans: SpanMemory,
        release: Callable[[], object] | None = None,
    ) -> None:
        self._bound = bound
        self._states = states
        self._spans = spans
        self._release = release
        self._in_flight = 0
        """The working bytes charged for what is analysed or held now."""
        self._peak = 0
        """The most working bytes charged at once that the charge stands for."""
        self._window_peak = 0
        self._window_count = 0
        self._shares = Shares.of(bound, 0)

    @property
    def working(self) -> int:
        """The working memory charged: the most charged at once lately (`WORKING_FACTOR` per body
        byte analysed, `HELD_FACTOR` per byte of a transcript held), up to its share."""
        return self._shares.working

    @contextmanager
    def analysing(self, size: int) -> Iterator[None]:
        """Around the analysis of a body of `size` bytes (bodies analysed at the same time add
        up); the caches shrink first when this is the most charged at once so far."""
        working = size * WORKING_FACTOR
        self._in_flight += working
        self._window_peak = max(self._window_peak, self._in_flight)
        self._window_count += 1
        try:
            if self._in_flight > self._peak:
                self._charge(self._in_flight)
            elif self._window_count >= WORKING_WINDOW:
                if self._window_peak < self._peak:
                    self._charge(self._window_peak)
                    if self._release is not None:  # what the larger bodies left free goes back to the system
                        self._release()
                self._window_peak, self._window_count = self._in_flight, 0
            yield
        finally:
            self._in_flight -= working

    @contextmanager
    def holding(self, size: int) -> Iterator[None]:
        """Around a transcript of a body of `size` bytes held parsed (a catch-up's, from when it is
        queued to when it is read): its parse, not the working memory of parsing it (that was the
        request's, charged as it was analysed). No analysis: the window does not count it."""
        held = int(size * HELD_FACTOR)
        self._in_flight += held
        self._window_peak = max(self._window_peak, self._in_flight)
        try:
            if self._in_flight > self._peak:
                self._charge(self._in_flight)
            yield
        finally:
            self._in_flight -= held

    def _charge(self, peak: int) -> None:
        self._peak = peak
        self._shares = Shares.of(self._bound, peak)
        self._states.resize(self._shares.states)
        self._spans.resize(self._shares.spans)
