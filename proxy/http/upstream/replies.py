"""Replies the proxy writes itself: errors in OpenAI's shape, and the incomplete hand-back.

Errors use OpenAI's shape so SDKs raise their usual exceptions. The hand-back is an
ordinary assistant reply in the request's dialect (streamed when the request streamed),
marked `X-Repair-Outcome: incomplete`, with the `current_failure` block as JSON in
`X-Repair-Current-Failure`.
"""

from __future__ import annotations

import json

import orjson
import structlog
from aiohttp import web

from proxy.dialects import Planned
from proxy.engine.plan.handback import Handback
from proxy.engine.text.identity import CONVERSATION_HEADER
from proxy.http.reply.ahead import Ahead
from proxy.http.runtime.appkeys import CONTEXT, METRICS, REQUEST_LOG

__all__ = [
    "ARM_HEADER",
    "CONVERSATION_HEADER",
    "CURRENT_FAILURE_HEADER",
    "OUTCOME_HEADER",
    "RETRIES_HEADER",
    "SALVAGED_HEADER",
    "TRIPS_HEADER",
    "handback_reply",
    "openai_error",
]

log = structlog.get_logger("repair_proxy")

OUTCOME_HEADER = "X-Repair-Outcome"
"""`incomplete` (a hand-back), or a gate's outcome when a reply passed after its last try:
`complete_unverified` (done), `complete_failing` (finish), `no_action` (action)."""
SALVAGED_HEADER = "X-Repair-Salvaged"
"""How many tool calls written as text were turned into real calls."""
RETRIES_HEADER = "X-Repair-Retries"
"""The gates that asked the upstream again, and how often (`action:1,done:2`)."""
CURRENT_FAILURE_HEADER = "X-Repair-Current-Failure"
TRIPS_HEADER = "X-Repair-Trips"
"""The patterns that fired on this request, in planning order."""
ARM_HEADER = "X-Repair-Arm"
"""`treated` or `holdout`."""


def openai_error(status: int, message: str, *, code: str, kind: str = "proxy_error") -> web.Response:
    """A response in OpenAI's error shape, so SDKs raise their own exception types."""
    body = {"error": {"message": message, "type": kind, "code": code, "param": None}}
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json")


def _headers(hand: Handback) -> dict[str, str]:
    # Header values must be ASCII: json.dumps escapes everything else.
    return {
        OUTCOME_HEADER: "incomplete",
        CURRENT_FAILURE_HEADER: json.dumps(hand.current_failure, ensure_ascii=True, separators=(",", ":")),
    }


async def handback_reply(
    request: web.Request, planned: Planned, hand: Handback, extra: dict[str, str], ahead: Ahead | None = None
) -> web.StreamResponse:
    """The hand-back as the agent's reply, in its dialect, streamed if the request streamed (on
    the agent's open stream, written as the rest of it, when text already went `ahead`); the one
    place a hand-back becomes the request log's end, a metric and a log line."""
    decision, dialect, translation = planned.decision, planned.incoming.dialect, planned.incoming.translation
    request[REQUEST_LOG].end = "handback"
    request.app[METRICS].handbacks.labels(hand.reason, decision.request.team).inc()
    failure = dict(hand.current_failure or {})
    if not request[CONTEXT].runtime.settings.logging.log_prompts:
        failure.pop("snippet", None)  # tool output: logged only with logging.log_prompts
    conversation = decision.request.conversation
    log.info("repair_handback", conversation=conversation, current_failure=failure or None, reason=hand.reason)
    stream = translation.stream
    headers = {**extra, **_headers(hand)}
    body, content_type = dialect.handback(hand, translation.model, stream)
    if hand.finish_call is not None:  # the agent must be answered with a call: its finish tool's
        calls, ids = [hand.finish_call], [hand.call_id]
        body = dialect.salvaged_stream([body], calls, ids) if stream else dialect.salvaged(body, calls, ids)
    if ahead is not None and ahead.opened:
        return await ahead.finish(body, later=True)
    if not stream:
        return web.Response(body=body, headers=headers, content_type=content_type)
    response = web.StreamResponse(
        status=200,
        headers={**headers, "Content-Type": content_type, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
    await response.prepare(request)
    await response.write(body)
    await response.write_eof()
    return response
