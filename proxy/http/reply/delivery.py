"""The end of the reply stage: the reply the agent gets, or the hand-back instead.

deliver   the reply `Deliver` chose (this one, or the first), as it passes: salvaged when it
          wrote its calls as text, on the agent's open stream when its text went ahead
          (`ahead.py`), marked as the record stands (`observe.marks`)
stopped   the stop rung: the hand-back instead of the reply (fail-open: the first reply, `futile`)
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from aiohttp import web
from multidict import CIMultiDict

from proxy.dialects import Planned
from proxy.engine.plan.reply import Gate, Judgement
from proxy.http.observe.outcome import Fault, Outcome
from proxy.http.observe.record import Faulted, Salvaged
from proxy.http.reply.ahead import Ahead
from proxy.http.reply.steps import Deliver
from proxy.http.runtime.appkeys import RECORD
from proxy.http.upstream.forward import rewritten_headers
from proxy.http.upstream.replies import handback_reply, send_whole

__all__ = ["Reply", "deliver", "stopped"]


@dataclass(frozen=True, slots=True)
class Reply:
    """A reply read whole (or held whole, when streamed)."""

    status: int
    headers: CIMultiDict[str]
    chunks: list[bytes]
    streamed: bool
    judgement: Judgement


def _salvaged(planned: Planned, reply: Reply) -> bytes:
    """The reply with the calls it wrote as text made real, under ids unique to this run (two
    runs of one task never share them, so their histories never look alike to the fold)."""
    calls = reply.judgement.salvaged or ()
    ids = [f"call_rp{secrets.token_hex(8)}_{i}" for i in range(len(calls))]
    dialect = planned.incoming.dialect
    if reply.streamed:
        return dialect.salvaged_stream(reply.chunks, calls, ids)
    return dialect.salvaged(b"".join(reply.chunks), calls, ids)


def _chosen(step: Deliver, first: Reply | None, reply: Reply | None, ahead: Ahead) -> tuple[Reply, bool]:
    """The reply `step` delivers, and whether it is a later one than the agent's own."""
    delivered = first if (step.first or reply is None) and first is not None else reply
    if delivered is None:  # a retry comes back with no reply only after a first one
        raise AssertionError("no reply to deliver")
    later = first is not None and delivered is not first
    if ahead.opened and later and first is not None and not (delivered.streamed and delivered.judgement.acts):
        return first, False  # the agent has the first reply's text: a later one follows it only with a call
    return delivered, later


async def deliver(
    request: web.Request, planned: Planned, step: Deliver, first: Reply | None, reply: Reply | None, ahead: Ahead
) -> web.StreamResponse:
    """The reply as it passes: salvaged when it wrote its calls as text, marked when a gate gave
    up on it; on the agent's open stream when text went ahead (a later reply as the rest of it)."""
    record, dialect = request[RECORD], planned.incoming.dialect
    delivered, later = _chosen(step, first, reply, ahead)
    record.end(step.end)
    body = b"".join(delivered.chunks)
    if delivered.judgement.salvaged:
        try:
            body, later = _salvaged(planned, delivered), later or ahead.opened  # written whole: after text, its rest
        except Exception as exc:
            record.add(Faulted(Fault.SALVAGE_FAILED, exc, {"dialect": dialect.name}))
        else:
            record.add(Salvaged(dialect.name, len(delivered.judgement.salvaged)))
    if ahead.opened:
        return await ahead.finish(body, later)
    headers = rewritten_headers(delivered.headers, record, delivered.streamed)
    return await send_whole(request, delivered.status, headers, body, delivered.streamed)


async def stopped(
    request: web.Request, planned: Planned, first: Reply | None, reply: Reply | None, ahead: Ahead
) -> web.StreamResponse:
    """The stop rung: the hand-back instead of `reply`, whose call the block gate refuses (the
    pipeline stores the run's verdict as a stall). Fail-open: a hand-back that cannot be written
    gives the agent the model's first reply, marked `futile`, as if the rung were off."""
    stop, refusal = planned.decision.reply.stop, None if reply is None else reply.judgement.refusal
    try:
        if stop is None or refusal is None:
            raise AssertionError("the stop rung is not armed")
        hand = stop(refusal)
    except Exception as exc:
        conversation = planned.decision.request.conversation
        request[RECORD].add(Faulted(Fault.HANDBACK_UNWRITABLE, exc, {"conversation": conversation}))
        return await deliver(request, planned, Deliver(Outcome.FUTILE, True, Gate.BLOCK), first, reply, ahead)
    if not ahead.opened:
        return await handback_reply(request, planned, hand)
    return await handback_reply(request, planned, hand, lambda body: ahead.finish(body, later=True))
