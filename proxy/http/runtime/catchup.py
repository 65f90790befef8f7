"""Conversations caught up beside the traffic, never in a request's path.

A request whose conversation's state has more than `BEHIND` messages of it unread (a conversation
first seen long: after a restart, on another replica, an agent resumed; or one that departs from the
history it was folded from) is not folded while it waits: it goes upstream as it came
(`Outcome.CATCHING_UP`), and its transcript is folded here, a slice at a time on the event loop,
each slice at most `SLICE` seconds of it plus the event it is in. Between two slices the loop is
given back: for as long as the slice took while any request is in flight (the catch-up takes at most
half of the loop from them: a request's own steps run in the pauses), at once when none is. Once all
of it is read the state is cached
(`Engine.caught_up`), and the conversation's next request folds only what it adds. A request of
the conversation that comes meanwhile goes up as it came too; what it adds is read by the next.

Measured before (bench/turn_cost.py, 600 messages): the first request of such a conversation
folded on the loop for the whole 100 ms budget (400-600 ms of wall time with two CPU-bound
processes on the machine's two cores), every request in flight waiting as long (`event_loop_stall`),
and the next request read on for about 70 ms more.

Must never: hold the loop more than one slice at a time, or more than half of it while requests
are in flight (a slice after each of a request's steps would make a request that takes twenty turns
of the loop wait twenty slices); run two catch-ups of one conversation;
hold more than `MOST` transcripts at once (past it, a request starts none: its conversation's next
request asks again); outlive the app (cancelled as it stops); raise (a catch-up that fails is
logged and its conversation read again by a later request).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from contextlib import AbstractContextManager

import structlog

from proxy.engine.core import Engine
from proxy.engine.plan.decide import Request
from proxy.engine.state.fold import Folding

__all__ = ["BEHIND", "MOST", "SLICE", "CatchUps"]

log = structlog.get_logger("repair_proxy")

BEHIND = 24
"""Unread messages past which a conversation is caught up beside the traffic instead of in the
request's path: about a dozen turns (an agent adds one each request; a worker of a set that did not
serve a conversation's last few reads on from the state its sibling shared, `store.shared_states`)."""
SLICE = 0.002
"""Seconds of folding between two looks at the rest of the loop's work (a turn of a long stuck run
costs about 0.7 ms to fold)."""
MOST = 8
"""Catch-ups under way at once, each holding its request's parsed transcript."""

Key = tuple[str, str]


class CatchUps:
    """The worker's catch-ups under way, by (team, conversation)."""

    def __init__(
        self, busy: Callable[[], bool] = lambda: False, most: int = MOST, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self.most = most
        self._busy = busy
        """Whether any request is in flight in the worker."""
        self._clock = clock
        self._running: dict[Key, asyncio.Task[None]] = {}

    def __contains__(self, key: Key) -> bool:
        return key in self._running

    def __len__(self) -> int:
        return len(self._running)

    def start(
        self, engine: Engine, request: Request, folding: Folding, charged: AbstractContextManager[object]
    ) -> bool:
        """Catch `request`'s conversation up beside the traffic (`charged`: its working memory,
        held while it runs). False when one is under way for it already, or `MOST` are."""
        key = (request.team, request.conversation)
        if key in self._running or len(self._running) >= self.most:
            return False
        task = asyncio.get_running_loop().create_task(self._run(engine, request, folding, charged))
        self._running[key] = task
        task.add_done_callback(lambda _done: self._running.pop(key, None))
        return True

    async def _run(
        self, engine: Engine, request: Request, folding: Folding, charged: AbstractContextManager[object]
    ) -> None:
        started, clock, slices = self._clock(), self._clock, 0
        unread = folding.unread
        try:
            with charged:
                while not folding.done:
                    begun = clock()
                    while not folding.done and clock() - begun < SLICE:
                        folding.step()
                    slices += 1
                    await asyncio.sleep(clock() - begun if self._busy() else 0)
                engine.caught_up(request, folding)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("catch_up_failed", team=request.team, conversation=request.conversation)
            return
        log.info(
            "caught_up",
            team=request.team,
            conversation=request.conversation,
            messages=unread,
            turns=folding.state.turns,
            slices=slices,
            ms=round((clock() - started) * 1000, 1),
        )

    async def close(self) -> None:
        """Every catch-up under way cancelled, and awaited."""
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
