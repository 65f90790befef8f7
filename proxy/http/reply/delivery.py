"""The end of the reply stage: a reply given to the agent, and what is recorded of it.

ended     the one place a stage's end becomes the request log's, the metrics' and the
          `X-Repair-Outcome` mark (a gate that gave up)
deliver   the reply as it passes: salvaged when it wrote its calls as text, on the
          agent's open stream when its text went ahead (`ahead.py`)
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass

import structlog
from aiohttp import web
from multidict import CIMultiDict

from proxy.dialects import Planned
from proxy.engine.plan.reply import Gate, Judgement
from proxy.http.reply.ahead import Ahead
from proxy.http.reply.steps import Attempt, Deliver, End
from proxy.http.runtime.appkeys import METRICS, REQUEST_LOG
from proxy.http.upstream.forward import RelayEnd, rewritten_headers
from proxy.http.upstream.replies import OUTCOME_HEADER, RETRIES_HEADER, SALVAGED_HEADER

__all__ = ["Reply", "deliver", "ended", "retries"]

log = structlog.get_logger("repair_proxy")


@dataclass(frozen=True, slots=True)
class Reply:
    """A reply read whole (or held whole, when streamed)."""

    status: int
    headers: CIMultiDict[str]
    chunks: list[bytes]
    streamed: bool
    judgement: Judgement


async def _respond(request: web.Request, reply: Reply, body: bytes, marks: Mapping[str, str]) -> web.StreamResponse:
    headers = rewritten_headers(reply.headers, marks, reply.streamed)
    if not reply.streamed:
        return web.Response(status=reply.status, body=body, headers=headers)
    response = web.StreamResponse(status=reply.status, headers=headers)
    await response.prepare(request)
    await response.write(body)
    await response.write_eof()
    return response


def _salvaged(planned: Planned, reply: Reply) -> bytes:
    """The reply with the calls it wrote as text made real, under ids unique to this run (two
    runs of one task never share them, so their histories never look alike to the fold)."""
    calls = reply.judgement.salvaged or ()
    ids = [f"call_rp{secrets.token_hex(8)}_{i}" for i in range(len(calls))]
    dialect = planned.incoming.dialect
    if reply.streamed:
        return dialect.salvaged_stream(reply.chunks, calls, ids)
    return dialect.salvaged(b"".join(reply.chunks), calls, ids)


def retries(attempt: Attempt) -> dict[str, str]:
    """What the gates spent on this agent request: `X-Repair-Retries` (each gate's retries)."""
    if not attempt.retries:
        return {}
    return {RETRIES_HEADER: ",".join(f"{gate.value}:{n}" for gate, n in attempt.retries.items())}


def ended(request: web.Request, planned: Planned, end: End | RelayEnd, gate: Gate | None = None) -> dict[str, str]:
    """The one place a reply stage's end becomes the request log's, the metrics' and the
    `X-Repair-Outcome` mark (a gate that gave up)."""
    request[REQUEST_LOG].end = end.value
    if gate is None or not isinstance(end, End):
        return {}
    request.app[METRICS].reply_outcomes.labels(end.value, planned.decision.request.team).inc()
    return {OUTCOME_HEADER: end.value}


async def deliver(
    request: web.Request,
    planned: Planned,
    reply: Reply,
    step: Deliver,
    marks: dict[str, str],
    ahead: Ahead,
    later: bool,
) -> web.StreamResponse:
    """The reply as it passes: salvaged when it wrote its calls as text, marked when a gate gave
    up on it; on the agent's open stream when text went ahead (a `later` reply as the rest of it)."""
    metrics = request.app[METRICS]
    team = planned.decision.request.team
    marks = {**marks, **ended(request, planned, step.end, step.gate)}
    body = b"".join(reply.chunks)
    if reply.judgement.salvaged:
        try:
            body, later = _salvaged(planned, reply), later or ahead.opened  # written whole: after text, its rest
        except Exception:
            log.exception("reply_unreadable", dialect=planned.incoming.dialect.name)
            metrics.analysis_failed.labels(team).inc()
        else:
            marks[SALVAGED_HEADER] = str(len(reply.judgement.salvaged))
            metrics.salvaged.labels(planned.incoming.dialect.name, team).inc()
            log.info(
                "repair_salvage",
                conversation=planned.decision.request.conversation,
                calls=len(reply.judgement.salvaged),
            )
    if ahead.opened:
        return await ahead.finish(body, later)
    return await _respond(request, reply, body, marks)
