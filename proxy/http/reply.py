"""The reply stage: the model's reply watched as it comes, and acted on when the plan's
reply rules say so (see `proxy/engine/plan/reply.py`):

    salvage   a call written as text goes to the agent as a real call, in its dialect
    gates     a reply that stops too early, finishes on a live failure, or does not act
              mid-task is held, and the upstream asked again with the gate's request

Each gate is bounded by its own attempts; after the last, the reply passes marked with the
gate's outcome (`X-Repair-Outcome`), except that the action gate passes the model's first
reply, as it came. A retry the upstream refuses (an error status) ends the gate: the first
reply passes, as after the last try; our retry's error never reaches the agent. A request or
retry whose call schema the upstream refuses is sent once more without it (and no schema goes
up again for that request). Streamed
replies are held only while they may still be salvaged or gated; once they cannot, what
was held goes out and the rest is relayed as it arrives.
Upstream errors and compressed bodies are relayed as they are. Fail-open here too: a reply
the proxy cannot read (any exception in reading, judging or salvaging it) goes to the agent
as it came, logged and counted as `analysis_failed`.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import aiohttp
import structlog
from aiohttp import web
from multidict import CIMultiDict

from proxy.dialects import Dialect, Planned
from proxy.engine.plan.reply import GATE_OUTCOMES, Gate, Judgement, ReplyRules, holding, judge, settled
from proxy.http.appkeys import CONTEXT, METRICS, REQUEST_LOG
from proxy.http.forward import downstream_headers, is_streaming, relay, send
from proxy.http.replies import OUTCOME_HEADER, RETRIES_HEADER, SALVAGED_HEADER
from proxy.http.upstream import Timeouts, next_chunk

__all__ = ["reply_stage"]

log = structlog.get_logger("repair_proxy")


@dataclass(frozen=True, slots=True)
class _Reply:
    """A reply read whole (or held whole, when streamed)."""

    status: int
    headers: CIMultiDict[str]
    chunks: list[bytes]
    streamed: bool
    judgement: Judgement


async def _read_all(upstream: aiohttp.ClientResponse, timeouts: Timeouts) -> list[bytes]:
    chunks = []
    while chunk := await next_chunk(upstream, timeouts):
        chunks.append(chunk)
    return chunks


async def _watch(
    upstream: aiohttp.ClientResponse, timeouts: Timeouts, dialect: Dialect, rules: ReplyRules
) -> tuple[list[bytes], Judgement | None]:
    """Hold a stream while it may still be acted on. (held, None): released, relay the rest;
    (held, judgement): it ended while held."""
    watcher = dialect.reply_watcher()
    held: list[bytes] = []
    reading = True
    while chunk := await next_chunk(upstream, timeouts):
        held.append(chunk)
        try:
            watcher.feed(chunk)
            early = settled(watcher.view, rules)
            if early is not None:
                upstream.close()  # the model ran on past its call: stop the generation
                return held, early
            reading = holding(watcher.view, rules)
        except Exception:
            log.exception("reply_unreadable", dialect=dialect.name)
            reading = False
        if not reading:
            return held, None
    try:
        return held, judge(watcher.view, rules)
    except Exception:
        log.exception("reply_unreadable", dialect=dialect.name)
        return held, Judgement()


def _judge_whole(body: bytes, dialect: Dialect, rules: ReplyRules) -> Judgement:
    try:
        view = dialect.read_reply(body)
        return judge(view, rules) if view is not None else Judgement()
    except Exception:
        log.exception("reply_unreadable", dialect=dialect.name)
        return Judgement()


async def _respond(request: web.Request, reply: _Reply, body: bytes, marks: Mapping[str, str]) -> web.StreamResponse:
    headers = CIMultiDict(reply.headers)
    headers.popall("Content-Length", None)
    headers.update(marks)
    if not reply.streamed:
        return web.Response(status=reply.status, body=body, headers=headers)
    response = web.StreamResponse(status=reply.status, headers=headers)
    response.headers["X-Accel-Buffering"] = "no"
    await response.prepare(request)
    await response.write(body)
    await response.write_eof()
    return response


def _salvaged(planned: Planned, reply: _Reply) -> bytes:
    """The reply with the calls it wrote as text made real, under ids unique to this run (two
    runs of one task never share them, so their histories never look alike to the fold)."""
    calls = reply.judgement.salvaged or ()
    ids = [f"call_rp{secrets.token_hex(8)}_{i}" for i in range(len(calls))]
    dialect = planned.incoming.dialect
    if reply.streamed:
        return dialect.salvaged_stream(reply.chunks, calls, ids)
    return dialect.salvaged(b"".join(reply.chunks), calls, ids)


async def _deliver(
    request: web.Request, planned: Planned, reply: _Reply, extra: dict[str, str], retries: Counter[Gate]
) -> web.StreamResponse:
    """The reply as it passes: salvaged when it wrote its calls as text, marked when a gate gave up on it."""
    record = request[REQUEST_LOG]
    metrics = request.app[METRICS]
    team = planned.decision.request.team
    marks = dict(extra)
    if retries:
        marks[RETRIES_HEADER] = ",".join(f"{gate.value}:{n}" for gate, n in retries.items())
    body = b"".join(reply.chunks)
    if reply.judgement.salvaged:
        try:
            body = _salvaged(planned, reply)
        except Exception:
            log.exception("reply_unreadable", dialect=planned.incoming.dialect.name)
            metrics.analysis_failed.labels(team).inc()
            return await _respond(request, reply, b"".join(reply.chunks), marks)
        marks[SALVAGED_HEADER] = str(len(reply.judgement.salvaged))
        metrics.salvaged.labels(planned.incoming.dialect.name, team).inc()
        log.info(
            "repair_salvage", conversation=planned.decision.request.conversation, calls=len(reply.judgement.salvaged)
        )
    record.end = "complete"
    if reply.judgement.gate is not None:
        outcome = GATE_OUTCOMES[reply.judgement.gate]
        marks[OUTCOME_HEADER] = outcome
        record.end = outcome
        metrics.reply_outcomes.labels(outcome, team).inc()
    return await _respond(request, reply, body, marks)


async def reply_stage(
    request: web.Request, planned: Planned, headers: CIMultiDict[str], extra: dict[str, str]
) -> web.StreamResponse:
    """Send the request; act on the reply as the rules say, asking again while a gate holds it."""
    rules = planned.decision.reply
    dialect = planned.incoming.dialect
    timeouts = request[CONTEXT].timeouts
    record = request[REQUEST_LOG]
    headers["Accept-Encoding"] = "identity"
    body = planned.body
    retries: Counter[Gate] = Counter()
    first: _Reply | None = None
    gate: Gate | None = None
    attempt = 0
    plain = False  # no call schemas for the rest of this request: the upstream refused one
    while True:
        upstream = await send(request, body, headers)
        async with upstream:
            encoded = upstream.headers.get("Content-Encoding", "identity").lower() != "identity"
            if upstream.status >= 400 and attempt == 0 and not plain and (unconstrained := planned.unconstrained()):
                # the force rung's call schema refused: the request again as it would go without it
                log.warning("repair_schema_refused", status=upstream.status)
                plain, body = True, unconstrained
                continue
            if upstream.status >= 400 and first is not None and gate is not None:
                if not plain and rules.gates[gate].edit.call_schema is not None:
                    # a server that takes no structured output (or not with tool_choice): the
                    # same retry without the schema, and none for the rest of this request
                    log.warning("repair_schema_refused", status=upstream.status)
                    plain, body = True, planned.retry(gate, retries[gate], constrained=False)
                    continue
                # our retry was refused: the agent gets the reply it would have had without the
                # gate, never our error
                log.warning(
                    "repair_gate_refused", status=upstream.status, conversation=planned.decision.request.conversation
                )
                return await _deliver(request, planned, first, extra, retries)
            if upstream.status >= 400 or encoded:
                response, end = await relay(request, upstream, timeouts, extra)
                record.end = end.value
                return response
            out = downstream_headers(upstream.headers)
            if is_streaming(upstream.headers):
                held, judgement = await _watch(upstream, timeouts, dialect, rules)
                if judgement is None:
                    marks = {**extra, RETRIES_HEADER: ",".join(f"{g.value}:{n}" for g, n in retries.items())}
                    response, end = await relay(request, upstream, timeouts, marks if retries else extra, held)
                    record.end = end.value
                    return response
                reply = _Reply(upstream.status, out, held, True, judgement)
            else:
                chunks = await _read_all(upstream, timeouts)
                reply = _Reply(upstream.status, out, chunks, False, _judge_whole(b"".join(chunks), dialect, rules))
        gate = reply.judgement.gate
        if gate is None:
            return await _deliver(request, planned, reply, extra, retries)
        if retries[gate] >= rules.gates[gate].max_attempts:
            if gate is Gate.ACTION and first is not None:
                reply = first  # the model's own reply, not one it gave under the gate's pressure
            return await _deliver(request, planned, reply, extra, retries)
        first = first or reply
        retries[gate] += 1
        attempt += 1
        log.info(
            "repair_gate", gate=gate.value, conversation=planned.decision.request.conversation, attempt=retries[gate]
        )
        request.app[METRICS].gate_retries.labels(gate.value, planned.decision.request.team).inc()
        body = planned.retry(gate, retries[gate], constrained=not plain)
