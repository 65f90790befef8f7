"""Stalls of the event loop: how late it runs what is due, and what held it.

A task of the worker sleeps `TICK` seconds at a time and measures how late it wakes: that lag is
the metric `repair_proxy_event_loop_lag_seconds` (a histogram: every request of the worker, and
`/healthz`, waited as long). A wake-up `STALL` or more late is a stall, logged once
(`event_loop_stall`: how long, and the step that held the loop and its conversation, or
`unknown` when nothing said it was running) and counted by step (`repair_proxy_event_loop_stalls`).

The synchronous steps that run on the loop say so (`Watch.holding`): the analysis of a request
small enough to be analysed there (`analysis`), each step timed; the longest that ran while the
loop was late is the one named.

Must never: log one stall twice, or once per tick of it (one late wake-up is one stall); hold
what it names past the stall it explains (each step it saw is forgotten once a tick has looked).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import structlog

from proxy.http.metrics import Metrics

__all__ = ["STALL", "TICK", "Held", "Watch", "look"]

log = structlog.get_logger("repair_proxy")
TICK = 0.05
"""Seconds between two looks at the loop."""
STALL = 0.1
"""A look this much late or more is a stall: logged and counted."""


@dataclass(frozen=True, slots=True)
class Held:
    """A synchronous step that ran on the loop."""

    step: str
    conversation: str | None
    seconds: float


class Watch:
    """The steps that ran on the loop since the last look (the longest kept)."""

    def __init__(self) -> None:
        self.longest: Held | None = None

    @contextlib.contextmanager
    def holding(self, step: str, conversation: Callable[[], str | None]) -> Iterator[None]:
        """Around a synchronous step on the loop: timed, and kept if it is the longest lately;
        `conversation` is asked once the step is over (it may be what the step found)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            seconds = time.perf_counter() - started
            if self.longest is None or seconds > self.longest.seconds:
                self.longest = Held(step, conversation(), seconds)

    def seen(self) -> Held | None:
        """The longest step since the last look, forgotten as it is given."""
        held, self.longest = self.longest, None
        return held


async def look(watch: Watch, metrics: Metrics) -> None:
    """Every `TICK`, how late the loop woke (runs until cancelled)."""
    loop = asyncio.get_running_loop()
    while True:
        asked = loop.time()
        await asyncio.sleep(TICK)
        lag = max(0.0, loop.time() - asked - TICK)
        metrics.loop_lag.observe(lag)
        held = watch.seen()
        if lag < STALL:
            continue
        step = held.step if held is not None else "unknown"
        metrics.loop_stalls.labels(step).inc()
        log.warning(
            "event_loop_stall",
            lag_ms=round(lag * 1000, 1),
            step=step,
            step_ms=round(held.seconds * 1000, 1) if held is not None else None,
            conversation=held.conversation if held is not None else None,
        )
