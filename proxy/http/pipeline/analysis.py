"""Analysis of one request, fail-open, with cross-run memory.

    parse (dialect) -> engine.fold -> [verdict store: a prior attempt?] -> engine.plan -> write (dialect)

Any exception in the engine or the dialect means the original bytes go upstream untouched:
the request's record says so (`Outcome.ANALYSIS_FAILED`, with the exception), never the agent.
So does running past the analysis budget (`analysis_abandoned`). Large bodies are analysed in a
worker thread, so the event loop goes on serving other requests meanwhile.
Store trouble goes on the record too, and analysis goes on without memory. What the decision
means beyond this request (a verdict to record or clear) is carried out here; its trips and
instructions are the record's (`Analysed`), for the observer to log and count.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from aiohttp import web

from proxy.dialects import Dialect, Incoming, Planned, parse
from proxy.engine.core import Folded
from proxy.engine.plan.decide import Decision
from proxy.engine.state.budget import Budget, BudgetExceeded
from proxy.engine.state.verdict import Verdict
from proxy.engine.text.identity import CONVERSATION_HEADER
from proxy.http.observe.outcome import Fault, Outcome
from proxy.http.observe.record import Analysed, Faulted
from proxy.http.runtime.appkeys import CONTEXT, GC, RECORD, STORES

__all__ = ["analyse", "remember_stall"]

T = TypeVar("T")


class _Failed(Exception):
    pass


OFFLOAD_BYTES = 1024 * 1024
"""Bodies at least this large are analysed in a worker thread. A smaller one is analysed in a few
ms (about 2.5 ms of CPU at 760 KB), and the hand-off costs about 0.3 ms of CPU per request on a
2-core machine (two cross-thread wake-ups, the collector paused and then walking the parse):
measured with `bench/turn_cost.py` at 600 messages, 760 KB, CPU per request 6.6 -> 6.1 ms with
this bound at 1 MB instead of 256 KB. What the thread bought the event loop at that size was
little: the worker holds the interpreter for most of the analysis (the loop waited up to 1.2-4 ms
for it, measured, against the analysis's 2.5 ms on the loop itself)."""


def _guarded(request: web.Request, step: Callable[[], T]) -> T:
    """Run one synchronous step of the analysis, timed; an exception in it is `analysis_failed`,
    running past the budget `analysis_abandoned`."""
    record = request[RECORD]
    started = time.perf_counter()
    try:
        return step()
    except Exception as exc:
        abandoned = isinstance(exc, BudgetExceeded)
        fields = {"path": request.path, "conversation": request.headers.get(CONVERSATION_HEADER)}
        record.add(
            Faulted(Fault.ANALYSIS_ABANDONED, None, fields)
            if abandoned
            else Faulted(Fault.ANALYSIS_FAILED, exc, fields)
        )
        record.end(Outcome.ANALYSIS_ABANDONED if abandoned else Outcome.ANALYSIS_FAILED)
        raise _Failed from None
    finally:
        record.overhead_ms += (time.perf_counter() - started) * 1000


async def _prior(request: web.Request, folded: Folded) -> tuple[Verdict | None, bool]:
    """A prior attempt's verdict for this task, and whether the store was asked at all."""
    store = request.app[STORES].verdicts
    if store is None or not folded.memory_due:
        return None, False
    try:
        return await store.get(folded.request.team, folded.request.task), True
    except Exception:
        _store_error(request, folded.request.team, folded.request.conversation)
        return None, False


async def _settle(request: web.Request, decision: Decision) -> None:
    """Store this run's verdict when it stalled; clear the task's verdict when a check passed."""
    store = request.app[STORES].verdicts
    effects = decision.effects
    if store is None or not (effects.record_verdict or effects.clear_verdict):
        return
    try:
        if effects.record_verdict:
            await store.put(decision.verdict(time.time()))
        else:
            await store.clear(decision.request.team, decision.request.task)
    except Exception:
        _store_error(request, decision.request.team, decision.request.conversation)


async def remember_stall(request: web.Request, decision: Decision) -> None:
    """Store this run's verdict: the reply stage handed it back (the block gate's stop rung), so
    it stalled, though nothing in its request said so yet."""
    await _settle(request, replace(decision, effects=replace(decision.effects, record_verdict=True)))


def _store_error(request: web.Request, team: str, conversation: str) -> None:
    """The request goes on without memory. The traceback is kept when the store begins failing;
    while it goes on failing, its error (one line per request)."""
    health, error = request.app[STORES].health, sys.exc_info()[1]
    fields = {"team": team, "conversation": conversation}
    if health.failures <= 1:
        request[RECORD].add(Faulted(Fault.STORE_FAILED, error, fields))
    else:
        request[RECORD].add(Faulted(Fault.STORE_FAILING, None, {**fields, "error": health.error}))


async def _step(request: web.Request, size: int, step: Callable[[], T]) -> T:
    """Small bodies are analysed on the event loop; large ones in a worker thread, the collector
    paused meanwhile (see `GcAccounting.paused`)."""
    if size < OFFLOAD_BYTES:
        return _guarded(request, step)

    def offloaded() -> T:
        with request.app[GC].paused():
            return _guarded(request, step)

    return await asyncio.to_thread(offloaded)


async def analyse(request: web.Request, body: bytes, dialect: Dialect) -> Planned | None:
    """The decision for this request and the bytes to send; None: send the original bytes.
    When the verdict store is not to be asked (none, or asked already for this conversation),
    the request is planned in the same step as it is folded: one step, not two (a body in a
    worker thread goes there once)."""
    context = request[CONTEXT]
    team = context.team
    engine = team.engine
    seconds = context.runtime.settings.limits.analysis_budget_ms / 1000
    clock = request.app[GC].work_clock
    size = len(body)
    shared = context.runtime.shared
    store = request.app[STORES].verdicts

    def fold_then_plan() -> tuple[Incoming, Folded, Planned | None] | None:
        budget = Budget.of(seconds, clock)  # in the thread that spends it: its CPU time is the clock
        incoming = parse(dialect, body)
        if incoming is None:
            return None
        folded = engine.fold(engine.request(incoming.translation, request.headers, team.name), budget)
        if store is not None and folded.memory_due:
            return incoming, folded, None  # planned once the store has answered
        return incoming, folded, Planned.of(incoming, engine.plan(folded), shared.spans)

    try:
        with shared.footprint.analysing(size):
            parsed = await _step(request, size, fold_then_plan)
            if parsed is None:
                # not JSON, no transcript, or (Responses) history kept upstream by previous_response_id
                request[RECORD].add(
                    Faulted(
                        Fault.NOT_ANALYSABLE, None, {"path": request.path, "dialect": dialect.name, "team": team.name}
                    )
                )
                return None
            incoming, folded, planned = parsed
            if planned is None:
                prior, asked = await _prior(request, folded)
                planned = await _step(
                    request, size, lambda: Planned.of(incoming, engine.plan(folded, prior, asked=asked), shared.spans)
                )
    except _Failed:
        return None
    request[RECORD].add(Analysed(planned.decision))
    await _settle(request, planned.decision)
    return planned
