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
from collections.abc import Mapping
from dataclasses import dataclass

import aiohttp
import structlog
from aiohttp import web
from multidict import CIMultiDict

from proxy.dialects import Dialect, Planned
from proxy.engine.detectors import Refusal
from proxy.engine.plan.reply import Gate, Judgement, ReplyRules, holding, judge, settled
from proxy.http.appkeys import CONTEXT, METRICS, REQUEST_LOG
from proxy.http.forward import RelayEnd, downstream_headers, is_streaming, relay, send
from proxy.http.replies import OUTCOME_HEADER, RETRIES_HEADER, SALVAGED_HEADER
from proxy.http.steps import Attempt, Deliver, End, Relay, after_reply, after_status
from proxy.http.tracing import gate_retry
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


def _retries(attempt: Attempt) -> dict[str, str]:
    """What the gates spent on this agent request: `X-Repair-Retries` (each gate's retries)."""
    if not attempt.retries:
        return {}
    return {RETRIES_HEADER: ",".join(f"{gate.value}:{n}" for gate, n in attempt.retries.items())}


def _ended(request: web.Request, planned: Planned, end: End | RelayEnd, gate: Gate | None = None) -> dict[str, str]:
    """The one place a reply stage's end becomes the request log's, the metrics' and the
    `X-Repair-Outcome` mark (a gate that gave up)."""
    request[REQUEST_LOG].end = end.value
    if gate is None or not isinstance(end, End):
        return {}
    request.app[METRICS].reply_outcomes.labels(end.value, planned.decision.request.team).inc()
    return {OUTCOME_HEADER: end.value}


async def _deliver(
    request: web.Request, planned: Planned, reply: _Reply, step: Deliver, marks: dict[str, str]
) -> web.StreamResponse:
    """The reply as it passes: salvaged when it wrote its calls as text, marked when a gate gave up on it."""
    metrics = request.app[METRICS]
    team = planned.decision.request.team
    marks = {**marks, **_ended(request, planned, step.end, step.gate)}
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
    return await _respond(request, reply, body, marks)


async def _answer(request: web.Request, upstream: aiohttp.ClientResponse, planned: Planned) -> _Reply | list[bytes]:
    """The reply read: whole, or a stream held while it may still be acted on; a stream released
    early comes back as what was held (the rest is to be relayed)."""
    dialect, rules, timeouts = planned.incoming.dialect, planned.decision.reply, request[CONTEXT].timeouts
    out = downstream_headers(upstream.headers)
    if is_streaming(upstream.headers):
        held, judgement = await _watch(upstream, timeouts, dialect, rules)
        return held if judgement is None else _Reply(upstream.status, out, held, True, judgement)
    chunks = await _read_all(upstream, timeouts)
    return _Reply(upstream.status, out, chunks, False, _judge_whole(b"".join(chunks), dialect, rules))


async def reply_stage(
    request: web.Request, planned: Planned, headers: CIMultiDict[str], extra: dict[str, str]
) -> web.StreamResponse:
    """Send the request; act on the reply as `steps` decides, asking again while a gate holds it
    and the agent request's budget of extra generations allows."""
    rules = planned.decision.reply
    timeouts = request[CONTEXT].timeouts
    budget = request[CONTEXT].team.engine.policy.reply.max_extra_generations
    conversation = planned.decision.request.conversation
    headers["Accept-Encoding"] = "identity"
    body = planned.body
    attempt = Attempt(schema=planned.unconstrained() is not None)
    first: _Reply | None = None
    held: Refusal | None = None  # why the block gate holds the reply being asked again
    while True:
        upstream = await send(request, body, headers)
        async with upstream:
            encoded = upstream.headers.get("Content-Encoding", "identity").lower() != "identity"
            step = after_status(attempt, upstream.status, encoded)
            if step is None:
                answer = await _answer(request, upstream, planned)
                if isinstance(answer, list):  # released: the rest flows as it comes
                    response, relayed = await relay(request, upstream, timeouts, {**extra, **_retries(attempt)}, answer)
                    _ended(request, planned, relayed)
                    return response
                reply = answer
                step = after_reply(attempt, reply.judgement, rules, budget)
            elif isinstance(step, Relay):
                response, relayed = await relay(request, upstream, timeouts, extra)
                _ended(request, planned, relayed if relayed is not RelayEnd.COMPLETE else step.end)
                return response
        if isinstance(step, Deliver):
            if attempt.gate is not None and step.first:
                log.warning("repair_gate_refused", status=upstream.status, conversation=conversation)
            delivered = first if step.first and first is not None else reply
            return await _deliver(request, planned, delivered, step, {**extra, **_retries(attempt)})
        if isinstance(step, Relay):  # unreachable: relayed above, inside the response's context
            raise AssertionError(step)
        if not step.spends:  # the server takes no call schema: the same request without it
            log.warning("repair_schema_refused", status=upstream.status)
            attempt = attempt.without_schema()
            if step.gate is None:
                body = planned.unconstrained() or planned.body
            else:
                body = planned.retry(step.gate, attempt.retries[step.gate], constrained=False, refusal=held)
            continue
        gate = step.gate
        assert gate is not None
        first = first or reply
        held = reply.judgement.refusal
        attempt = attempt.retried(gate, rules.gates[gate].edit_for(held).call_schema is not None, first.judgement.acts)
        log.info("repair_gate", gate=gate.value, conversation=conversation, attempt=attempt.retries[gate])
        request.app[METRICS].gate_retries.labels(gate.value, planned.decision.request.team).inc()
        gate_retry(request, gate.value)
        body = planned.retry(gate, attempt.retries[gate], constrained=not attempt.plain, refusal=held)
