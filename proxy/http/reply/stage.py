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
reading, judging or salvaging it) goes to the agent as it came; the fault goes on the request's
record (`Faulted`: logged, and for a salvage counted as `analysis_failed`).

The loop only sends, reads and answers: each attempt's status, failure or judged reply is a
step of `steps.py`; a `Retry` carries its next attempt, the body is written from it, and the
record gets its event; nothing here logs, counts or traces.
"""

from __future__ import annotations

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from proxy.dialects import Planned
from proxy.engine.plan.reply import Hold, Judgement, holding, judge, settled
from proxy.http.observe.outcome import Fault, Outcome
from proxy.http.observe.record import Faulted, GateEnded
from proxy.http.observe.usage import is_streaming
from proxy.http.reply.ahead import Ahead, ClientGone
from proxy.http.reply.delivery import Reply, deliver, stopped
from proxy.http.reply.steps import (
    Attempt,
    Deliver,
    Relay,
    Retry,
    after_failure,
    after_reply,
    after_status,
    reads_error,
    unreadable_as_call,
)
from proxy.http.runtime.appkeys import CONTEXT, RECORD
from proxy.http.runtime.tenancy import Timeouts
from proxy.http.upstream.forward import hop_free, relay, send
from proxy.http.upstream.network import UpstreamFailure, next_chunk

__all__ = ["reply_stage"]

_ERROR_READ = 64 * 1024
"""How much of a retry's server error is searched for the reason."""


async def reply_stage(request: web.Request, planned: Planned, headers: CIMultiDict[str]) -> web.StreamResponse:
    """Send the request; act on the reply as `steps` decides, asking again while a gate holds it
    and the agent request's budget of extra generations allows."""
    rules, record = planned.decision.reply, request[RECORD]
    budget = request[CONTEXT].team.engine.policy.reply.max_extra_generations
    headers["Accept-Encoding"] = "identity"
    # not the body written again to see if there is one; a dialect that has no call schema to
    # send (Messages) never sends one: as if refused from the start
    attempt = Attempt(schema=planned.constrained, plain=not planned.incoming.dialect.structured)
    ahead = Ahead(request, planned.incoming.dialect)
    first: Reply | None = None
    while True:
        got = await _attempted(request, planned, _body(planned, attempt), headers, attempt, ahead)
        if isinstance(got, web.StreamResponse):
            return got
        reply = got if isinstance(got, Reply) else None
        step = after_reply(attempt, got.judgement, rules, budget) if isinstance(got, Reply) else got
        if isinstance(step, Retry):
            record.add(step.event)
            first, attempt = first or reply, step.next
        elif isinstance(step, Deliver):
            if reply is None and step.gate is not None:  # our retry refused or failed
                record.add(GateEnded(step.gate))
            return await deliver(request, planned, step, first, reply, ahead)
        else:  # asked again, the model proposed a call made in vain before: the stop rung
            return await stopped(request, planned, first, reply, ahead)


def _body(planned: Planned, attempt: Attempt) -> bytes:
    """What an attempt sends: the agent's request (without the call schema a server refused), or
    its gate's retry (the same: its seed moved on when it is drawn again)."""
    gate = attempt.gate
    if gate is None:
        return (planned.unconstrained() or planned.body) if attempt.plain else planned.body
    return planned.retry(gate, attempt.retries[gate], not attempt.plain, attempt.refusal, int(attempt.redrawn))


async def _attempted(
    request: web.Request, planned: Planned, body: bytes, headers: CIMultiDict[str], attempt: Attempt, ahead: Ahead
) -> web.StreamResponse | Deliver | Retry | Reply:
    """One request upstream: the agent's response (relayed), the step its status calls for, or
    its reply. Only the agent's own request sends text ahead; a retry is held whole. What fails
    it is turned into what the agent gets: a retry's failure ends its gate (`after_failure`); the
    agent's own request's is the agent's: an error, or its stream cut when text already went ahead."""
    record, timeouts = request[RECORD], request[CONTEXT].runtime.timeouts
    try:
        async with await send(request, body, headers) as upstream:
            encoded = upstream.headers.get("Content-Encoding", "identity").lower() != "identity"
            unreadable = reads_error(attempt, upstream.status) and await _unreadable(upstream, timeouts)
            step = after_status(attempt, upstream.status, encoded, unreadable)
            if isinstance(step, Relay):
                return await relay(request, upstream, complete=step.end)
            if step is not None:
                return step
            if not is_streaming(upstream.headers):
                return await _whole(request, upstream, planned)
            answer = await _watch(request, upstream, planned, ahead if attempt.gate is None else None)
            if isinstance(answer, Reply):
                return answer
            return await relay(request, upstream, answer, ahead.response)  # released: the rest as it comes
    except ClientGone as gone:
        record.end(Outcome.CLIENT_GONE)
        return gone.response
    except UpstreamFailure as failure:
        if (failed := after_failure(attempt)) is not None:
            record.add(failure.event())
            return failed
        if ahead.response is None:
            raise  # nothing went out yet: the agent gets the failure as an error
        record.failed(failure.event())
        return ahead.cut()


async def _unreadable(upstream: aiohttp.ClientResponse, timeouts: Timeouts) -> bool:
    """Whether the server says it could not read the reply it drew (for an error `reads_error`
    says is ours to read)."""
    body = b""
    while len(body) < _ERROR_READ and (chunk := await next_chunk(upstream, timeouts)):
        body += chunk
    return unreadable_as_call(body[:_ERROR_READ])


async def _whole(request: web.Request, upstream: aiohttp.ClientResponse, planned: Planned) -> Reply:
    """The reply read whole, and judged (one the proxy cannot read, as nothing to act on)."""
    dialect, timeouts = planned.incoming.dialect, request[CONTEXT].runtime.timeouts
    chunks = []
    while chunk := await next_chunk(upstream, timeouts):
        chunks.append(chunk)
    try:
        view = dialect.read_reply(b"".join(chunks))
        judgement = judge(view, planned.decision.reply) if view is not None else Judgement()
    except Exception as exc:
        request[RECORD].add(Faulted(Fault.READ_FAILED, exc, {"dialect": dialect.name}))
        judgement = Judgement()
    return Reply(upstream.status, hop_free(upstream.headers), chunks, False, judgement)


async def _watch(
    request: web.Request, upstream: aiohttp.ClientResponse, planned: Planned, ahead: Ahead | None
) -> Reply | list[bytes]:
    """A stream held while it may still be acted on, its text sent `ahead` (when given) while only a
    call or its end can be: what was held (not sent ahead) once it is released (the rest is to be
    relayed), or the reply, when it ended while held (its chunks: what did not go ahead)."""
    dialect, rules, timeouts = planned.incoming.dialect, planned.decision.reply, request[CONTEXT].runtime.timeouts
    record, watcher = request[RECORD], dialect.reply_watcher()
    held: list[bytes] = []
    judgement: Judgement | None = None
    while chunk := await next_chunk(upstream, timeouts):
        held.append(chunk)
        try:
            watcher.feed(chunk)
            judgement = settled(watcher.view, rules)
            if judgement is not None:
                upstream.close()  # the model ran on past its call: stop the generation
                break
            hold = holding(watcher.view, rules)
        except Exception as exc:
            record.add(Faulted(Fault.READ_FAILED, exc, {"dialect": dialect.name}))
            hold = Hold.NONE
        if hold is Hold.NONE:
            return held
        if hold is Hold.TEXT_AHEAD and ahead is not None:
            held = await ahead.send(upstream, held)
    if judgement is None:
        try:
            judgement = judge(watcher.view, rules)
        except Exception as exc:
            record.add(Faulted(Fault.READ_FAILED, exc, {"dialect": dialect.name}))
            judgement = Judgement()
    return Reply(upstream.status, hop_free(upstream.headers), held, True, judgement)
