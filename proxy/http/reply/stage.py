"""The reply stage: the model's reply watched as it comes, and acted on when the plan's
reply rules say so (see `proxy/engine/plan/reply.py`):

    salvage   a call written as text goes to the agent as a real call, in its dialect
    gates     a reply that stops too early, finishes on a live failure, or does not act
              mid-task is held, and the upstream asked again with the gate's request

Each gate is bounded by its own attempts; after the last, the reply passes marked with the
gate's outcome (`X-Repair-Outcome`), except that the action gate passes the model's first
reply, as it came, and that a block gate whose retry brought back a call it refuses too, one made
in vain before, ends the run with the incomplete hand-back (the stop rung). A retry
the upstream refuses (an error status) ends the gate: the first reply passes, as after the last
try; our retry's error never reaches the agent. A request or retry whose call schema the
upstream refuses is sent once more without it (and no schema goes up again for that request); a
retry whose reply the server could not read (llama.cpp's 500 on a JSON escape its grammar let
through) is drawn once more, its seed moved on; a retry the upstream fails (unreachable, silent,
broken off) ends its gate the same way. Streamed
replies are held only while they may still be salvaged or gated; once they cannot, what was
held goes out and the rest is relayed as it arrives. While only a call or the reply's end can
be gated (the block rung, the finish gate, the action gate after our instruction), the text
flows to the agent at once (`ahead.py`), and what is delivered in the end goes out on the same
stream; a stop while a re-run is owed is held whole. Upstream errors and compressed bodies are
relayed as they are. Fail-open here too: a reply the proxy cannot read (any exception in
reading, judging or salvaging it) goes to the agent as it came, logged and counted as
`analysis_failed`.
"""

from __future__ import annotations

import aiohttp
import structlog
from aiohttp import web
from multidict import CIMultiDict

from proxy.dialects import Dialect, Planned
from proxy.engine.detectors import Refusal
from proxy.engine.plan.reply import Gate, Hold, Judgement, ReplyRules, holding, judge, settled
from proxy.http.observe.tracing import gate_retry
from proxy.http.pipeline.analysis import remember_stall
from proxy.http.reply.ahead import Ahead, ClientGone
from proxy.http.reply.delivery import Reply, deliver, ended, retries
from proxy.http.reply.steps import (
    Attempt,
    Deliver,
    End,
    Relay,
    Step,
    Stop,
    after_failure,
    after_reply,
    after_status,
    reads_error,
    unreadable_as_call,
)
from proxy.http.runtime.appkeys import CONTEXT, METRICS, Timeouts
from proxy.http.upstream.forward import RelayEnd, broken_end, downstream_headers, is_streaming, relay, send
from proxy.http.upstream.network import UpstreamFailure, next_chunk
from proxy.http.upstream.replies import handback_reply

__all__ = ["reply_stage"]

log = structlog.get_logger("repair_proxy")
_ERROR_READ = 64 * 1024
"""How much of a retry's server error is searched for the reason."""


async def _read_all(upstream: aiohttp.ClientResponse, timeouts: Timeouts) -> list[bytes]:
    chunks = []
    while chunk := await next_chunk(upstream, timeouts):
        chunks.append(chunk)
    return chunks


async def _watch(
    upstream: aiohttp.ClientResponse, timeouts: Timeouts, dialect: Dialect, rules: ReplyRules, ahead: Ahead | None
) -> tuple[list[bytes], Judgement | None]:
    """Hold a stream while it may still be acted on; its text goes `ahead`, when given, while
    only a call or its end can be. (held, None): released, relay the rest; (held, judgement): it
    ended while held (held: what did not go ahead)."""
    watcher = dialect.reply_watcher()
    held: list[bytes] = []
    hold = Hold.REPLY
    while chunk := await next_chunk(upstream, timeouts):
        held.append(chunk)
        try:
            watcher.feed(chunk)
            early = settled(watcher.view, rules)
            if early is not None:
                upstream.close()  # the model ran on past its call: stop the generation
                return held, early
            hold = holding(watcher.view, rules)
        except Exception:
            log.exception("reply_unreadable", dialect=dialect.name)
            hold = Hold.NONE
        if hold is Hold.NONE:
            return held, None
        if hold is Hold.TEXT_AHEAD and ahead is not None:
            held = await ahead.send(upstream, held)
    try:
        return held, judge(watcher.view, rules)
    except Exception:
        log.exception("reply_unreadable", dialect=dialect.name)
        return held, Judgement()


async def _unreadable(upstream: aiohttp.ClientResponse, attempt: Attempt, timeouts: Timeouts) -> bool:
    """Whether the server says it could not read the reply it drew, for an error `reads_error`
    says is ours to read."""
    if not reads_error(attempt, upstream.status):
        return False
    body = b""
    while len(body) < _ERROR_READ and (chunk := await next_chunk(upstream, timeouts)):
        body += chunk
    return unreadable_as_call(body[:_ERROR_READ])


def _judge_whole(body: bytes, dialect: Dialect, rules: ReplyRules) -> Judgement:
    try:
        view = dialect.read_reply(body)
        return judge(view, rules) if view is not None else Judgement()
    except Exception:
        log.exception("reply_unreadable", dialect=dialect.name)
        return Judgement()


async def _answer(
    request: web.Request, upstream: aiohttp.ClientResponse, planned: Planned, ahead: Ahead | None
) -> Reply | list[bytes]:
    """The reply read: whole, or a stream held while it may still be acted on (its text sent
    `ahead`, when given, while only a call or its end may be); a stream released early comes
    back as what was held (the rest is to be relayed)."""
    dialect, rules, timeouts = planned.incoming.dialect, planned.decision.reply, request[CONTEXT].timeouts
    out = downstream_headers(upstream.headers)
    if is_streaming(upstream.headers):
        held, judgement = await _watch(upstream, timeouts, dialect, rules, ahead)
        return held if judgement is None else Reply(upstream.status, out, held, True, judgement)
    chunks = await _read_all(upstream, timeouts)
    return Reply(upstream.status, out, chunks, False, _judge_whole(b"".join(chunks), dialect, rules))


async def _try(
    request: web.Request, planned: Planned, body: bytes, headers: CIMultiDict[str], attempt: Attempt, ahead: Ahead
) -> web.StreamResponse | Step | Reply:
    """One request upstream: the agent's response (relayed), the step its status calls for, or
    its reply. Only the agent's own request sends text ahead; a retry is held whole."""
    extra = {**ahead.marks, **retries(attempt)}
    upstream = await send(request, body, headers)
    async with upstream:
        encoded = upstream.headers.get("Content-Encoding", "identity").lower() != "identity"
        unreadable = await _unreadable(upstream, attempt, request[CONTEXT].timeouts)
        step = after_status(attempt, upstream.status, encoded, unreadable)
        if isinstance(step, Relay):
            response, relayed = await relay(request, upstream, request[CONTEXT].timeouts, extra)
            ended(request, planned, relayed if relayed is not RelayEnd.COMPLETE else step.end)
            return response
        if step is not None:
            return step
        try:
            answer = await _answer(request, upstream, planned, ahead if attempt.gate is None else None)
        except ClientGone:
            upstream.close()
            raise
        if isinstance(answer, list):  # released: the rest flows as it comes
            response, relayed = await relay(request, upstream, request[CONTEXT].timeouts, extra, answer, ahead.response)
            ended(request, planned, relayed)
            return response
        return answer


async def _attempted(
    request: web.Request, planned: Planned, body: bytes, headers: CIMultiDict[str], attempt: Attempt, ahead: Ahead
) -> web.StreamResponse | Step | Reply:
    """`_try`, with what fails it turned into what the agent gets: a retry's failure ends its
    gate (`after_failure`); the agent's own request's is the agent's: an error, or its stream
    cut when text already went ahead."""
    try:
        return await _try(request, planned, body, headers, attempt, ahead)
    except ClientGone:
        ended(request, planned, RelayEnd.CLIENT_GONE)
        assert ahead.response is not None
        return ahead.response
    except UpstreamFailure as failure:
        if (failed := after_failure(attempt)) is not None:
            return failed
        if not ahead.opened:
            raise  # nothing went out yet: the agent gets the failure as an error
        ended(request, planned, broken_end(failure))
        return ahead.cut()


def _chosen(step: Deliver, first: Reply | None, reply: Reply | None, ahead: Ahead) -> tuple[Reply, bool]:
    """The reply `step` delivers, and whether it is a later one than the agent's own."""
    delivered = first if step.first and first is not None else reply
    assert delivered is not None  # only a retry (after a first reply) comes back with none
    later = first is not None and delivered is not first
    if ahead.opened and later and first is not None and not (delivered.streamed and delivered.judgement.acts):
        return first, False  # the agent has the first reply's text: a later one follows it only with a call
    return delivered, later


async def _stopped(
    request: web.Request, planned: Planned, refusal: Refusal, first: Reply, marks: dict[str, str], ahead: Ahead
) -> web.StreamResponse:
    """The stop rung: the hand-back instead of the reply, the run's verdict stored as a stall.
    Fail-open: a hand-back that cannot be written gives the agent the model's first reply, marked
    `futile`, as if the rung were off."""
    stop = planned.decision.reply.stop
    try:
        if stop is None:
            raise AssertionError("the stop rung is not armed")
        hand = stop(refusal)
    except Exception:
        log.exception("handback_unwritable", conversation=planned.decision.request.conversation)
        request.app[METRICS].analysis_failed.labels(planned.decision.request.team).inc()
        return await deliver(request, planned, first, Deliver(End.FUTILE, True, Gate.BLOCK), marks, ahead, False)
    ended(request, planned, End.HANDBACK, Gate.BLOCK)
    response = await handback_reply(request, planned, hand, marks, ahead)
    await remember_stall(request, planned.decision)
    return response


async def reply_stage(
    request: web.Request, planned: Planned, headers: CIMultiDict[str], extra: dict[str, str]
) -> web.StreamResponse:
    """Send the request; act on the reply as `steps` decides, asking again while a gate holds it
    and the agent request's budget of extra generations allows."""
    rules = planned.decision.reply
    budget = request[CONTEXT].team.engine.policy.reply.max_extra_generations
    conversation = planned.decision.request.conversation
    headers["Accept-Encoding"] = "identity"
    body = planned.body
    attempt = Attempt(schema=planned.constrained)  # not the body written again to see if there is one
    ahead = Ahead(request, planned.incoming.dialect, extra)
    first: Reply | None = None
    held: Refusal | None = None  # why the block gate holds the reply being asked again
    while True:
        outcome = await _attempted(request, planned, body, headers, attempt, ahead)
        if isinstance(outcome, web.StreamResponse):
            return outcome
        reply = outcome if isinstance(outcome, Reply) else None
        step = after_reply(attempt, reply.judgement, rules, budget) if reply is not None else outcome
        assert not isinstance(step, Reply)
        if isinstance(step, Deliver):
            if reply is None:
                log.warning("repair_gate_refused", gate=step.gate, conversation=conversation)
            delivered, later = _chosen(step, first, reply, ahead)
            return await deliver(request, planned, delivered, step, {**extra, **retries(attempt)}, ahead, later)
        if isinstance(step, Stop):  # asked again, the model proposed a call made in vain before
            assert reply is not None and reply.judgement.refusal is not None and first is not None
            marks = {**extra, **retries(attempt)}
            return await _stopped(request, planned, reply.judgement.refusal, first, marks, ahead)
        if isinstance(step, Relay):  # unreachable: relayed in `_try`, inside the response's context
            raise AssertionError(step)
        if step.redraw:  # the server could not read the reply it drew: the same retry, drawn again
            assert step.gate is not None
            log.warning("repair_call_unreadable", gate=step.gate.value, conversation=conversation)
            attempt = attempt.drawn_again()
            body = planned.retry(step.gate, attempt.retries[step.gate], not attempt.plain, held, redraw=1)
            continue
        if not step.spends:  # the server takes no call schema: the same request without it
            log.warning("repair_schema_refused")
            attempt = attempt.without_schema()
            if step.gate is None:
                body = planned.unconstrained() or planned.body
            else:
                body = planned.retry(step.gate, attempt.retries[step.gate], constrained=False, refusal=held)
            continue
        gate = step.gate
        assert gate is not None and reply is not None
        first = first or reply
        held = reply.judgement.refusal
        attempt = attempt.retried(gate, rules.gates[gate].edit_for(held).call_schema is not None, first.judgement.acts)
        log.info("repair_gate", gate=gate.value, conversation=conversation, attempt=attempt.retries[gate])
        request.app[METRICS].gate_retries.labels(gate.value, planned.decision.request.team).inc()
        gate_retry(request, gate.value)
        body = planned.retry(gate, attempt.retries[gate], not attempt.plain, held, redraw=int(attempt.redrawn))
