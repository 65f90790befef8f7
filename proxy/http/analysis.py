"""Analysis of one request, fail-open, with cross-run memory.

    parse (dialect) -> engine.fold -> [verdict store: a prior attempt?] -> engine.plan -> write (dialect)

Any exception in the engine or the dialect means the original bytes go upstream untouched:
it is logged as `analysis_failed` and counted, never turned into an error for the agent. So
does running past the analysis budget (`analysis_abandoned`). Large bodies, and bodies whose
newest text is long, are analysed in a worker thread (`http.offload`), so the event loop goes on
serving other requests meanwhile.
Store trouble is logged and counted too, and analysis goes on without memory. What the
decision means beyond this request (a verdict to record or clear, trips to log and count)
is carried out here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

import structlog
from aiohttp import web

from proxy.dialects import Dialect, Incoming, Planned, parse
from proxy.engine.core import Folded
from proxy.engine.plan.decide import Decision
from proxy.engine.state.budget import Budget, BudgetExceeded
from proxy.engine.state.verdict import Verdict
from proxy.engine.text.identity import CONVERSATION_HEADER
from proxy.http.appkeys import CONTEXT, GC, METRICS, REQUEST_LOG, STALLS, STORES
from proxy.http.offload import fresh_chars, in_thread

__all__ = ["analyse", "remember_stall"]

log = structlog.get_logger("repair_proxy")
T = TypeVar("T")


class _Failed(Exception):
    pass


def _guarded(request: web.Request, step: Callable[[], T]) -> T:
    """Run one synchronous step of the analysis, timed; an exception in it is `analysis_failed`,
    running past the budget `analysis_abandoned`."""
    record = request[REQUEST_LOG]
    started = time.perf_counter()
    try:
        return step()
    except BudgetExceeded:
        team = request[CONTEXT].team.name
        log.warning("analysis_abandoned", path=request.path, conversation=request.headers.get(CONVERSATION_HEADER))
        request.app[METRICS].analysis_abandoned.labels(team).inc()
        record.end = "analysis_abandoned"
        raise _Failed from None
    except Exception:
        team = request[CONTEXT].team.name
        log.exception("analysis_failed", path=request.path, conversation=request.headers.get(CONVERSATION_HEADER))
        request.app[METRICS].analysis_failed.labels(team).inc()
        record.end = "analysis_failed"
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
    """Counted and logged, the request going on without memory. The traceback is logged when
    the store begins failing; while it goes on failing, one line per request."""
    health = request.app[STORES].health
    if health.failures <= 1:
        log.exception("store_error", team=team, conversation=conversation)
    else:
        log.warning("store_error", team=team, conversation=conversation, error=health.error)
    request.app[METRICS].store_errors.labels(team).inc()


def _observe(request: web.Request, decision: Decision) -> None:
    """The request log's fields, one `repair_trip` event per trip, and the counters."""
    record = request[REQUEST_LOG]
    record.analysed = True
    record.conversation = decision.request.conversation
    record.trips = tuple(t.pattern for t in decision.new_trips)
    metrics = request.app[METRICS]
    team = decision.request.team
    if decision.effects.injected_tokens:
        metrics.injected_tokens.labels(team).inc(decision.effects.injected_tokens)
    repair = decision.state.repair
    signature = repair.last_diagnostic_signature
    log_prompts = request[CONTEXT].runtime.settings.logging.log_prompts
    for trip in decision.new_trips:
        metrics.trips.labels(trip.pattern, trip.action.value, team).inc()
        said = [i.text for i in decision.state.injections if i.turn == trip.turn and i.pattern == trip.pattern]
        log.info(
            "repair_trip",
            injected=said if log_prompts else None,
            pattern=trip.pattern,
            action=trip.action.value,
            team=team,
            conversation=decision.request.conversation,
            turn=trip.turn,
            count=trip.count,
            streak=repair.same_diagnostic_streak,
            signature=signature[:12] if signature else None,
        )


async def _step(request: web.Request, thread: bool, name: str, step: Callable[[], T]) -> T:
    """One step of the analysis on the event loop (said to hold it, see `http.stalls`), or in a
    worker thread (`http.offload` decides), the collector paused meanwhile (`GcAccounting.paused`)."""
    if not thread:
        record = request[REQUEST_LOG]
        conversation = request.headers.get(CONVERSATION_HEADER)
        with request.app[STALLS].holding(name, lambda: record.conversation or conversation):
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

    def fold_then_plan(read: Callable[[], Incoming | None]) -> tuple[Incoming, Folded, Planned | None] | None:
        budget = Budget.of(seconds, clock)  # in the thread that spends it: its CPU time is the clock
        incoming = read()
        if incoming is None:
            return None
        asked = engine.request(incoming.translation, request.headers, team.name)
        request[REQUEST_LOG].conversation = asked.conversation  # whose it is, known before it is folded
        folded = engine.fold(asked, budget)
        if store is not None and folded.memory_due:
            return incoming, folded, None  # planned once the store has answered
        return incoming, folded, Planned.of(incoming, engine.plan(folded), shared.spans)

    try:
        with shared.footprint.analysing(size):
            if in_thread(size, None):  # parsed there too
                parsed = await _step(request, True, "analysis", lambda: fold_then_plan(lambda: parse(dialect, body)))
            else:
                read = await _step(request, False, "analysis (parse)", lambda: parse(dialect, body))
                fresh = fresh_chars(read.translation.messages) if read is not None else None
                parsed = await _step(request, in_thread(size, fresh), "analysis", lambda: fold_then_plan(lambda: read))
            if parsed is None:
                # not JSON, no transcript, or (Responses) history kept upstream by previous_response_id
                log.info("not_analysable", path=request.path, dialect=dialect.name, team=team.name)
                return None
            incoming, folded, planned = parsed
            if planned is None:
                prior, asked = await _prior(request, folded)
                planned = await _step(
                    request,
                    in_thread(size, None),
                    "analysis (plan)",
                    lambda: Planned.of(incoming, engine.plan(folded, prior, asked=asked), shared.spans),
                )
    except _Failed:
        return None
    decision = planned.decision
    _observe(request, decision)
    await _settle(request, decision)
    return planned
