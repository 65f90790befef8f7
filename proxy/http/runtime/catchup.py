"""Conversations caught up beside the traffic, never in a request's path.

A request whose conversation's state has more than `BEHIND` messages of it unread (a conversation
first seen long: after a restart, on another replica, an agent resumed; or one that departs from the
history it was folded from) is not folded while it waits: it goes upstream as it came
(`Outcome.CATCHING_UP`), and its transcript is folded here, a slice at a time on the event loop,
each slice at most `SLICE` seconds of it plus the event it is in, one conversation at a time. Between
two slices the loop is given back: for `PAUSE`, or three times as long as the slice took, while any
request is in flight (the catch-up takes at most a quarter of the loop from them: their steps run in
the pauses), at once when none is. Once all of it is read the state is cached (`Engine.caught_up`), and the
conversation's next request folds only what it adds. A request of the conversation that comes
meanwhile goes up as it came too; what it adds is read by the next.

Measured before (bench/turn_cost.py, 600 messages): the first request of such a conversation
folded on the loop for the whole 100 ms budget (400-600 ms of wall time with two CPU-bound
processes on the machine's two cores), every request in flight waiting as long (`event_loop_stall`),
and the next request read on for about 70 ms more.

Must never: hold the loop more than one slice at a time, or more than a quarter of it while a
request is in flight (measured: eight catch-ups side by side, each taking a 2 ms slice on every turn of the
loop, made each request of another conversation wait 20-30 ms instead of 5); queue one conversation
twice; hold more than `MOST` transcripts at once (past it, a request queues none: its conversation's
next request asks again); outlive the app (cancelled as it stops); raise (a catch-up that fails is
logged, and its conversation read again by a later request).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

import structlog

from proxy.engine.core import Engine
from proxy.engine.plan.decide import Request
from proxy.engine.state.fold import Folding

__all__ = ["BEHIND", "MOST", "PAUSE", "SLICE", "CatchUps"]

log = structlog.get_logger("repair_proxy")

BEHIND = 24
"""Unread messages past which a conversation is caught up beside the traffic instead of in the
request's path: about a dozen turns (an agent adds one each request; a worker of a set that did not
serve a conversation's last few reads on from the state its sibling shared, `store.shared_states`)."""
SLICE = 0.0005
"""Seconds of folding between two looks at the rest of the loop's work: in effect one event (a turn
of a long stuck run costs about 0.7 ms to fold), so that a request whose steps meet a slice on each
turn of the loop waits little for it."""
PAUSE = 0.002
"""Seconds the loop is given back between two slices, at least, while any request is in flight (three
times the slice, if it was longer): their steps run in the pauses. A body sent or read takes a
turn of the loop per socket buffer (a dozen for 760 KB), so a slice on every turn would add up."""
MOST = 8
"""Catch-ups queued at once (each holds its request's parsed transcript); one runs at a time."""

Key = tuple[str, str]


@dataclass(frozen=True, slots=True)
class _Job:
    engine: Engine
    request: Request
    folding: Folding
    charged: contextlib.ExitStack
    """The transcript, charged as held parsed (`Footprint.holding`) from when it is queued to when it is read."""


class CatchUps:
    """The worker's catch-ups, queued by (team, conversation), read one at a time."""

    def __init__(
        self,
        busy: Callable[[], bool] = lambda: False,
        paused: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext,
        most: int = MOST,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.most = most
        self._busy = busy
        """Whether a request of the worker needs the loop now (`Watch.busy`)."""
        self._paused = paused
        """The garbage collector paused meanwhile (`GcAccounting.paused`): a fold of hundreds of turns
        makes objects enough to set off collections of the whole heap, the transcripts queued in it."""
        self._clock = clock
        self._queued: dict[Key, _Job] = {}
        self._worker: asyncio.Task[None] | None = None

    def __contains__(self, key: Key) -> bool:
        return key in self._queued

    def __len__(self) -> int:
        return len(self._queued)

    def start(
        self, engine: Engine, request: Request, folding: Folding, charged: AbstractContextManager[object]
    ) -> bool:
        """Catch `request`'s conversation up beside the traffic (`charged`: its parsed transcript, held
        until it is read). False when it is queued already, or `MOST` are."""
        key = (request.team, request.conversation)
        if key in self._queued or len(self._queued) >= self.most:
            return False
        stack = contextlib.ExitStack()
        stack.enter_context(charged)
        self._queued[key] = _Job(engine, request, folding, stack)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.get_running_loop().create_task(self._work())
        return True

    async def _work(self) -> None:
        while self._queued:
            key, job = next(iter(self._queued.items()))
            try:
                await self._run(job)
            finally:
                job.charged.close()
                self._queued.pop(key, None)

    async def _run(self, job: _Job) -> None:
        folding, clock = job.folding, self._clock
        started, unread = clock(), folding.unread
        try:
            with self._paused():
                slices = await self._steps(folding)
            job.engine.caught_up(job.request, folding)
        except Exception:
            log.exception("catch_up_failed", team=job.request.team, conversation=job.request.conversation)
            return
        log.info(
            "caught_up",
            team=job.request.team,
            conversation=job.request.conversation,
            messages=unread,
            turns=folding.state.turns,
            slices=slices,
            ms=round((clock() - started) * 1000, 1),
        )

    async def _steps(self, folding: Folding) -> int:
        """Fold to the end, a slice at a time; how many slices."""
        clock, slices = self._clock, 0
        while not folding.done:
            begun = clock()
            while not folding.done and clock() - begun < SLICE:
                folding.step()
            slices += 1
            await asyncio.sleep(max(PAUSE, 3 * (clock() - begun)) if self._busy() else 0)
        return slices

    async def close(self) -> None:
        """The catch-up under way cancelled, and awaited; the queue emptied."""
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        for job in self._queued.values():
            job.charged.close()
        self._queued.clear()
