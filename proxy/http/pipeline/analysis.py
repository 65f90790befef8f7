"""Analysis of one request, fail-open, with cross-run memory.

    parse (dialect) -> engine.fold -> [verdict store: a prior attempt?] -> engine.plan -> write (dialect)

Any exception in the engine or the dialect means the original bytes go upstream untouched:
the request's record says so (`Outcome.ANALYSIS_FAILED`, with the exception), never the agent.
So does running past the analysis budget (`analysis_abandoned`): wall time from the analysis's
start, what the request waits. A conversation whose state is far behind the request (first seen
long) is not folded in its path at all: the request goes up as it came (`catching_up`) and the
conversation is caught up beside the traffic (`runtime.catchup`); so is the rest of a fold that ran
past the budget. Large bodies, and bodies whose newest text is long, are analysed in a worker
thread (`pipeline.offload`), so the event loop goes on serving other requests meanwhile; each
step analysed on the loop goes on the record (`Held`: `runtime.stalls` names the one that held
the loop when it stalls), and each step's CPU time (`analysis_cpu_ms`).
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
from typing import Any, TypeVar

from aiohttp import web

from proxy.dialects import Dialect, Incoming, Planned, parse
from proxy.engine.core import Behind, Engine, Folded
from proxy.engine.plan.decide import Decision, Request
from proxy.engine.state.budget import Budget, BudgetExceeded
from proxy.engine.state.fold import Folding
from proxy.engine.state.verdict import Verdict
from proxy.engine.text.identity import CONVERSATION_HEADER
from proxy.http.observe.outcome import Fault, Outcome
from proxy.http.observe.record import Analysed, Faulted, Held, Identified
from proxy.http.pipeline.offload import fresh_chars, in_thread
from proxy.http.runtime.appkeys import CATCH_UPS, CONTEXT, GC, RECORD, STORES
from proxy.http.runtime.catchup import BEHIND

__all__ = ["analyse", "remember_stall"]

T = TypeVar("T")


class _Failed(Exception):
    pass


def _guarded(request: web.Request, step: Callable[..., T], *args: Any) -> T:
    """Run one synchronous step of the analysis, its CPU time counted; an exception in it is
    `analysis_failed`, running past the budget `analysis_abandoned` (`Behind` is the caller's)."""
    record = request[RECORD]
    clock = request.app[GC].work_clock
    started = clock()
    try:
        return step(*args)
    except Behind:
        raise
    except Exception as exc:
        abandoned = isinstance(exc, BudgetExceeded)
        fields = {"path": request.path, "conversation": record.conversation or request.headers.get(CONVERSATION_HEADER)}
        record.add(
            Faulted(Fault.ANALYSIS_ABANDONED, None, fields)
            if abandoned
            else Faulted(Fault.ANALYSIS_FAILED, exc, fields)
        )
        record.end(Outcome.ANALYSIS_ABANDONED if abandoned else Outcome.ANALYSIS_FAILED)
        raise _Failed(exc) from None
    finally:
        record.analysis_cpu_ms += (clock() - started) * 1000


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


async def _step(request: web.Request, thread: bool, name: str, step: Callable[..., T], *args: Any) -> T:
    """`step(*args)`, one step of the analysis, on the event loop (said on the record to hold it:
    `Held`, with its conversation as known once it is over), or in a worker thread
    (`pipeline.offload` decides), the collector paused meanwhile (`GcAccounting.paused`)."""
    if not thread:
        record = request[RECORD]
        started = time.perf_counter()
        try:
            return _guarded(request, step, *args)
        finally:
            conversation = record.conversation or request.headers.get(CONVERSATION_HEADER)
            record.add(Held(name, time.perf_counter() - started, conversation))

    def offloaded() -> T:
        with request.app[GC].paused():
            return _guarded(request, step, *args)

    return await asyncio.to_thread(offloaded)


async def analyse(request: web.Request, body: bytes, dialect: Dialect) -> Planned | None:
    """The decision for this request and the bytes to send; None: send the original bytes.
    When the verdict store is not to be asked (none, or asked already for this conversation),
    the request is planned in the same step as it is folded: one step, not two (a body in a
    worker thread goes there once)."""
    context = request[CONTEXT]
    team = context.team
    engine = team.engine
    budget = Budget.of(context.runtime.settings.limits.analysis_budget_ms / 1000)  # wall time, from now
    size = len(body)
    shared = context.runtime.shared
    parses = shared.spans.parses
    store = request.app[STORES].verdicts
    whose: list[Request] = []  # whose request it is, once read

    def fold_then_plan(incoming: Incoming | None) -> tuple[Incoming, Folded, Planned | None] | None:
        if incoming is None:
            return None
        request[RECORD].read = "in part" if incoming.in_part else "whole"
        whose.append(engine.request(incoming.translation, request.headers, team.name))
        request[RECORD].add(Identified(whose[0].conversation))  # whose it is, known before it is folded
        folded = engine.fold(whose[0], budget, behind=BEHIND)
        if store is not None and folded.memory_due:
            return incoming, folded, None  # planned once the store has answered
        return incoming, folded, Planned.of(incoming, engine.plan(folded), shared.spans)

    try:
        with shared.footprint.analysing(size):
            # parsed from what it adds to its conversation's last body, only (`dialects.parse`)
            if in_thread(size, None):  # parsed there too
                parsed = await _step(request, True, "analysis", lambda: fold_then_plan(parse(dialect, body, parses)))
            else:
                read = await _step(request, False, "analysis (parse)", parse, dialect, body, parses)
                fresh = fresh_chars(read.translation.messages) if read is not None else None
                parsed = await _step(request, in_thread(size, fresh), "analysis", fold_then_plan, read)
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
                    request,
                    in_thread(size, None),
                    "analysis (plan)",
                    lambda: Planned.of(incoming, engine.plan(folded, prior, asked=asked), shared.spans),
                )
    except Behind as behind:
        started = _catch_up(request, engine, behind.request, behind.folding, size)
        fields = {"conversation": behind.request.conversation, "unread": behind.folding.unread, "started": started}
        request[RECORD].add(Faulted(Fault.CATCHING_UP, None, fields))
        request[RECORD].end(Outcome.CATCHING_UP)
        return None
    except _Failed as failed:
        if isinstance(failed.args[0], BudgetExceeded) and whose:  # the rest of the fold, beside the traffic
            _catch_up(request, engine, whose[0], engine.folding(whose[0]), size)
        return None
    request[RECORD].add(Analysed(planned.decision))
    await _settle(request, planned.decision)
    return planned


def _catch_up(request: web.Request, engine: Engine, asked: Request, folding: Folding, size: int) -> bool:
    """The conversation caught up beside the traffic (False: one is under way for it, or as many as
    a worker runs at once), its transcript charged as held parsed meanwhile."""
    charged = request[CONTEXT].runtime.shared.footprint.holding(size)
    return request.app[CATCH_UPS].start(engine, asked, folding, charged)
