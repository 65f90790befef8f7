"""Replies the proxy writes itself: errors in the shape of the route's API, and the incomplete
hand-back.

Errors use OpenAI's shape, and Anthropic's under `/v1/messages` (`ANTHROPIC_ERRORS`: the type
each status is), so SDKs raise their usual exceptions. The hand-back is an
ordinary assistant reply in the request's dialect (streamed when the request streamed),
marked `X-Repair-Outcome: incomplete` (`Outcome.HANDBACK`), with the `current_failure` block as
JSON in `X-Repair-Current-Failure`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping

import orjson
from aiohttp import web

from proxy.dialects import Planned
from proxy.engine.plan.handback import Handback
from proxy.http.observe.marks import marks
from proxy.http.observe.outcome import Outcome
from proxy.http.observe.record import HandedBack
from proxy.http.runtime.appkeys import RECORD

__all__ = [
    "ANTHROPIC_ERRORS",
    "CURRENT_FAILURE_HEADER",
    "Rest",
    "anthropic_shaped",
    "error_reply",
    "handback_reply",
    "openai_error",
    "send_whole",
]

CURRENT_FAILURE_HEADER = "X-Repair-Current-Failure"
Rest = Callable[[bytes], Awaitable[web.StreamResponse]]
"""Writes a body as the rest of the agent's open stream."""


def openai_error(status: int, message: str, *, code: str, kind: str = "proxy_error") -> web.Response:
    """A response in OpenAI's error shape, so SDKs raise their own exception types."""
    body = {"error": {"message": message, "type": kind, "code": code, "param": None}}
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json")


ANTHROPIC_ERRORS: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}
"""The error type Anthropic's API gives each status (any other 4xx: `invalid_request_error`,
any other 5xx: `api_error`)."""


def anthropic_shaped(path: str) -> bool:
    """The route is Anthropic's Messages API (`/v1/messages` and below: `count_tokens`, batches)."""
    return path == "/v1/messages" or path.startswith("/v1/messages/")


def error_reply(path: str, status: int, message: str, *, code: str, kind: str, **more: object) -> web.Response:
    """The proxy's own error, in the shape of the route's API: Anthropic's under `/v1/messages`
    (`{"type": "error", "error": {"type", "message"}}`, with the proxy's `code` and `more`),
    OpenAI's elsewhere (its `type` is `kind`)."""
    if not anthropic_shaped(path):
        body: dict[str, object] = {"error": {"message": message, "type": kind, "code": code, "param": None, **more}}
    else:
        fallback = "invalid_request_error" if status < 500 else "api_error"
        error = {"type": ANTHROPIC_ERRORS.get(status, fallback), "message": message, "code": code, **more}
        body = {"type": "error", "error": error}
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json")


async def send_whole(
    request: web.Request, status: int, headers: Mapping[str, str], body: bytes, streamed: bool
) -> web.StreamResponse:
    """A body the proxy wrote, whole: as one response, or as a stream of it (no buffering by a
    proxy in between), the agent's whole reply once written (`Record.delivered`)."""
    if not streamed:
        return web.Response(status=status, body=body, headers=headers)
    response = web.StreamResponse(status=status, headers=headers)
    response.headers["X-Accel-Buffering"] = "no"
    await response.prepare(request)
    await response.write(body)
    request[RECORD].delivered = status
    await response.write_eof()
    return response


async def handback_reply(
    request: web.Request, planned: Planned, hand: Handback, rest: Rest | None = None
) -> web.StreamResponse:
    """The hand-back as the agent's reply, in its dialect, streamed if the request streamed
    (`rest`: written as the rest of the agent's stream, already open: text went ahead)."""
    record = request[RECORD]
    record.add(HandedBack(hand))
    record.end(Outcome.HANDBACK)
    dialect, translation = planned.incoming.dialect, planned.incoming.translation
    stream = translation.stream
    body, content_type = dialect.handback(hand, translation.model, stream)
    if hand.finish_call is not None:  # the agent must be answered with a call: its finish tool's
        calls, ids = [hand.finish_call], [hand.call_id]
        body = dialect.salvaged_stream([body], calls, ids) if stream else dialect.salvaged(body, calls, ids)
    if rest is not None:
        return await rest(body)
    # Header values must be ASCII: json.dumps escapes everything else.
    failure = json.dumps(hand.current_failure, ensure_ascii=True, separators=(",", ":"))
    headers = {**marks(record), CURRENT_FAILURE_HEADER: failure, "Content-Type": content_type}
    if stream:
        headers["Cache-Control"] = "no-cache"
    return await send_whole(request, 200, headers, body, stream)
