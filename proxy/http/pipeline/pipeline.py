"""One request under `/v1/` or `/api/`, as its steps:

    check the path -> authenticate -> read -> analyse (with memory)
        -> choose: holdout | hand-back | reply stage | forward

Only POSTs to the analysed routes (`dialects.ROUTES`) with repair on are analysed; every
other request is forwarded as it came. Proxy-made errors use OpenAI's shape.
"""

from __future__ import annotations

import asyncio

import orjson
import structlog
from aiohttp import web
from multidict import CIMultiDict

from proxy.dialects import ROUTES, Planned
from proxy.engine.text.identity import CONVERSATION_HEADER
from proxy.http.observe.tracing import decided, observing, requested
from proxy.http.pipeline.analysis import analyse
from proxy.http.reply.stage import reply_stage
from proxy.http.runtime.appkeys import CONTEXT, METRICS, REQUEST_LOG, RUNTIME, Context
from proxy.http.runtime.tenancy import Team
from proxy.http.upstream.forward import forward, upstream_headers
from proxy.http.upstream.network import UpstreamFailure
from proxy.http.upstream.replies import ARM_HEADER, TRIPS_HEADER, handback_reply, openai_error

__all__ = ["proxy_v1"]

log = structlog.get_logger("repair_proxy")


class Refused(Exception):
    """The request is answered by the proxy itself, with `response`."""

    def __init__(self, response: web.Response) -> None:
        self.response = response


def _check_path(request: web.Request) -> None:
    """Only what is below `/v1/` or `/api/` is forwarded: a path with a `.` or `..` segment (as
    sent, or percent-encoded) could climb out of it upstream, with the team's key attached."""
    segments = request.path.split("/")
    if "." in segments or ".." in segments:
        request[REQUEST_LOG].end = "path_refused"
        raise Refused(
            openai_error(
                400,
                "the request path has a '.' or '..' segment; send a normalised path below /v1/ or /api/",
                code="invalid_path",
                kind="invalid_request_error",
            )
        )


def _authenticate(request: web.Request) -> Team:
    """The team whose key the request carries (everyone is `default` without teams)."""
    runtime = request.app[RUNTIME].current
    team = runtime.team_for(request.headers)
    if team is None:
        header = runtime.settings.server.key_header
        given = request.headers.get(header) or request.headers.get("Authorization", "")[7:].strip()
        request[REQUEST_LOG].end = "unknown_key" if given else "no_key"
        what = "no team of this proxy has that key" if given else "this proxy needs a team's proxy key and got none"
        raise Refused(
            openai_error(
                401,
                f"{what}: send it as 'Authorization: Bearer <key>' or in the {header} header",
                code="invalid_proxy_key" if given else "missing_proxy_key",
                kind="authentication_error",
            )
        )
    request[CONTEXT] = Context(runtime, team)
    request[REQUEST_LOG].team = team.name
    return team


async def _read(request: web.Request) -> bytes:
    """The whole body, refusing (before reading it all) anything over `limits.max_body_bytes`,
    and a body that goes silent longer than `server.body_timeout` (408)."""
    settings = request[CONTEXT].runtime.settings
    limit = settings.limits.max_body_bytes
    too_large = request.content_length is not None and request.content_length > limit
    chunks: list[bytes] = []  # joined once at the end: no buffer grown (and copied) chunk by chunk
    size = 0
    try:
        while not too_large:
            async with asyncio.timeout(settings.server.body_timeout):
                chunk = await request.content.readany()
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            too_large = size > limit
    except TimeoutError:
        request[REQUEST_LOG].end = "body_timeout"
        response = openai_error(
            408,
            f"the request body stopped arriving for {settings.server.body_timeout:g}s (server.body_timeout)",
            code="request_timeout",
            kind="invalid_request_error",
        )
        response.force_close()
        raise Refused(response) from None
    if too_large:
        request[REQUEST_LOG].end = "body_too_large"
        response = openai_error(
            413,
            f"request body is larger than this proxy's limit of {limit} bytes (limits.max_body_bytes)",
            code="request_too_large",
            kind="invalid_request_error",
        )
        response.force_close()
        raise Refused(response)
    return b"".join(chunks)


async def _choose(
    request: web.Request, body: bytes, headers: CIMultiDict[str], analysed: Planned | None
) -> web.StreamResponse:
    """Holdout (analysed, sent as it came), hand-back (no upstream call), the reply stage
    (salvage and gates, when the reply rules have anything to watch), or forward."""
    if analysed is None:
        return await forward(request, body, headers)
    decision = analysed.decision
    team = request[CONTEXT].team
    extra = {CONVERSATION_HEADER: decision.request.conversation}
    if decision.new_trips:
        extra[TRIPS_HEADER] = ",".join(dict.fromkeys(t.pattern for t in decision.new_trips))
    arm = "holdout" if team.holdout(decision.request.conversation) else "treated"
    extra[ARM_HEADER] = arm
    decided(request, decision, arm)
    for settled in decision.effects.outcomes:
        outcome = settled.in_arm(arm == "holdout")
        request.app[METRICS].trip_outcomes.labels(arm, settled.pattern, outcome, team.name).inc()
    if arm == "holdout":
        return await forward(request, body, headers, extra)
    if decision.halt is not None:
        return await _handback(request, analysed, extra)
    if decision.reply.active:
        return await reply_stage(request, analysed, headers, extra)
    return await forward(request, analysed.body, headers, extra)


async def _handback(request: web.Request, analysed: Planned, extra: dict[str, str]) -> web.StreamResponse:
    hand = analysed.decision.halt
    assert hand is not None
    return await handback_reply(request, analysed, hand, extra)


async def proxy_v1(request: web.Request) -> web.StreamResponse:
    return await observing(request, _proxy)


async def _proxy(request: web.Request) -> web.StreamResponse:
    try:
        _check_path(request)
        team = _authenticate(request)
        body = await _read(request)
    except Refused as refused:
        return refused.response
    runtime = request[CONTEXT].runtime
    settings = runtime.settings
    passes = runtime.client_authorization_passes(team, request.headers)
    headers = upstream_headers(request.headers, team.upstream_key, passes)
    headers.popall(settings.server.key_header, None)
    dialect = ROUTES.get(request.path.rstrip("/")) if request.method == "POST" else None
    analysed = await analyse(request, body, dialect) if settings.repair.enabled and dialect is not None else None
    requested(request, body, analysed)
    try:
        return await _choose(request, body, headers, analysed)
    except UpstreamFailure as failure:
        request[REQUEST_LOG].end = failure.code
        request.app[METRICS].upstream_errors.labels(failure.code, failure.cause.value, team.name).inc()
        return _failed(failure)


def _failed(failure: UpstreamFailure) -> web.Response:
    """An upstream failure in OpenAI's error shape, with its class in `error.cause` (refused, tls,
    dns, timeout, reset, other): what to fix is known without the proxy's log."""
    error = {
        "message": failure.message,
        "type": "upstream_error",
        "code": failure.code,
        "param": None,
        "cause": failure.cause.value,
    }
    return web.Response(status=failure.status, body=orjson.dumps({"error": error}), content_type="application/json")
