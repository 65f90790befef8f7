"""Stalls of the event loop: how late it runs what is due, and what held it.

A task of the worker sleeps `TICK` seconds at a time and measures how late it wakes: that lag is
the metric `repair_proxy_event_loop_lag_seconds` (a histogram: every request of the worker, and
`/healthz`, waited as long). A wake-up `STALL` or more late is a stall, logged once
(`event_loop_stall`: how long, and the step that held the loop and its conversation, or
`unknown` when nothing said it was running) and counted by step (`repair_proxy_event_loop_stalls`).

The synchronous steps that run on the loop say so on their request's record (`record.Held`: the
analysis of a request analysed there, each step timed); the watch looks at the records of the
requests in flight (`Watch.flying`, around each request's handling), and the longest step that
ran since the last look is the one named. The request's path only adds the event: what is logged
and counted of a stall is said here, by the worker's own task.

Must never: log one stall twice, or once per tick of it (one late wake-up is one stall); hold
what it names past the stall it explains (each step it saw is forgotten once a tick has looked,
each record once its request is over); miss a step whose request ended before the next look.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

import structlog

from proxy.http.observe.metrics import Metrics
from proxy.http.observe.record import Held, Record

__all__ = ["STALL", "TICK", "Watch", "look"]

log = structlog.get_logger("repair_proxy")
TICK = 0.05
"""Seconds between two looks at the loop."""
STALL = 0.1
"""A look this much late or more is a stall: logged and counted."""


class Watch:
    """The records of the requests in flight, and the longest step on the loop since the last look."""

    def __init__(self) -> None:
        self.longest: Held | None = None
        self._flying: dict[int, tuple[Record, int]] = {}
        """Each request in flight: its record, and how many of its events were looked at."""

    @contextlib.contextmanager
    def flying(self, record: Record) -> Iterator[None]:
        """Around a request's handling: the steps its record says held the loop are looked at,
        the last of them as it ends (a request may end before the next look)."""
        self._flying[id(record)] = (record, 0)
        try:
            yield
        finally:
            _record, looked = self._flying.pop(id(record))
            self._take(record, looked)

    def busy(self) -> bool:
        """Whether any request is in flight (a reply relayed needs the loop as each piece arrives, too:
        measured, a catch-up that paused only while requests were read, analysed or sent doubled what
        another conversation's requests waited for it, 2.6 ms at p50 instead of 1.3)."""
        return bool(self._flying)

    def _take(self, record: Record, looked: int) -> int:
        """The steps among `record`'s events from `looked` on, the longest kept; how many it has."""
        events = record.events
        upto = len(events)  # a worker thread of the request may add one meanwhile: read next time
        for event in events[looked:upto]:
            if isinstance(event, Held) and (self.longest is None or event.seconds > self.longest.seconds):
                self.longest = event
        return upto

    def seen(self) -> Held | None:
        """The longest step since the last look, forgotten as it is given."""
        for key, (record, looked) in list(self._flying.items()):
            self._flying[key] = (record, self._take(record, looked))
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
