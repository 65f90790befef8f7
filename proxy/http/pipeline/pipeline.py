"""One request under `/v1/` or `/api/`, as its steps:

    admit (the path, the team's key) -> read -> analyse (with memory)
        -> choose: holdout | hand-back | reply stage | forward

Only POSTs to the analysed routes (`dialects.ROUTES`) with repair on are analysed; every
other request is forwarded as it came. Proxy-made errors use OpenAI's shape (Anthropic's under
`/v1/messages`: `replies.error_reply`); a request the proxy refuses ends as its `Outcome` says
(`REFUSALS`: the status, code and kind it is answered with).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

from aiohttp import web
from multidict import CIMultiDict

from proxy.dialects import ROUTES, Planned
from proxy.http.observe.outcome import Outcome
from proxy.http.observe.record import Armed, requested_model
from proxy.http.pipeline.analysis import analyse, remember_stall
from proxy.http.reply.stage import reply_stage
from proxy.http.runtime.appkeys import CONTEXT, RECORD, RUNTIME, Context
from proxy.http.upstream.forward import forward, upstream_headers
from proxy.http.upstream.network import UpstreamFailure
from proxy.http.upstream.replies import error_reply, handback_reply

__all__ = ["REFUSALS", "proxy_v1"]

REFUSALS: Mapping[Outcome, tuple[int, str, str]] = {
    Outcome.PATH_REFUSED: (400, "invalid_path", "invalid_request_error"),
    Outcome.NO_KEY: (401, "missing_proxy_key", "authentication_error"),
    Outcome.UNKNOWN_KEY: (401, "invalid_proxy_key", "authentication_error"),
    Outcome.BODY_TIMEOUT: (408, "request_timeout", "invalid_request_error"),
    Outcome.BODY_TOO_LARGE: (413, "request_too_large", "invalid_request_error"),
}
"""Each refusal's status, error code and error type. A body refused is not read to its end: the
connection is closed after the answer."""


class Refused(Exception):
    """The request is answered by the proxy itself, ending as `outcome` says."""

    def __init__(self, request: web.Request, outcome: Outcome, message: str) -> None:
        super().__init__(message)
        status, code, kind = REFUSALS[outcome]
        self.outcome = outcome
        self.response = error_reply(request.path, status, message, code=code, kind=kind)
        if outcome in (Outcome.BODY_TIMEOUT, Outcome.BODY_TOO_LARGE):
            self.response.force_close()


def _admitted(request: web.Request) -> CIMultiDict[str]:
    """The headers the request goes upstream with, once admitted: its team is the one whose key it
    carries (everyone is `default` without teams), and its path stays below `/v1/` or `/api/` (one
    with a `.` or `..` segment, as sent or percent-encoded, could climb out of it upstream, with the
    team's key attached). The team's upstream key replaces the agent's Authorization; without one,
    a proxy key in it is not sent on (`Runtime.team_for`), nor ever the proxy's key header."""
    segments = request.path.split("/")
    if "." in segments or ".." in segments:
        message = "the request path has a '.' or '..' segment; send a normalised path below /v1/ or /api/"
        raise Refused(request, Outcome.PATH_REFUSED, message)
    runtime = request.app[RUNTIME].current
    team, passes = runtime.team_for(request.headers)
    if team is None:
        header = runtime.settings.server.key_header
        given = request.headers.get(header) or request.headers.get("Authorization", "")[7:].strip()
        what = "no team of this proxy has that key" if given else "this proxy needs a team's proxy key and got none"
        how = f"send it as 'Authorization: Bearer <key>' or in the {header} header"
        raise Refused(request, Outcome.UNKNOWN_KEY if given else Outcome.NO_KEY, f"{what}: {how}")
    request[CONTEXT] = Context(runtime, team)
    record = request[RECORD]
    record.team, record.upstream = team.name, team.upstream
    headers = upstream_headers(request.headers, team.upstream_key, passes)
    headers.popall(runtime.settings.server.key_header, None)
    return headers


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
        seconds = settings.server.body_timeout
        message = f"the request body stopped arriving for {seconds:g}s (server.body_timeout)"
        raise Refused(request, Outcome.BODY_TIMEOUT, message) from None
    if too_large:
        message = f"request body is larger than this proxy's limit of {limit} bytes (limits.max_body_bytes)"
        raise Refused(request, Outcome.BODY_TOO_LARGE, message)
    return b"".join(chunks)


async def _choose(
    request: web.Request, body: bytes, headers: CIMultiDict[str], analysed: Planned | None
) -> web.StreamResponse:
    """Holdout (analysed, sent as it came), hand-back (no upstream call), the reply stage
    (salvage and gates, when the reply rules have anything to watch), or forward."""
    if analysed is None:
        return await forward(request, body, headers)
    decision, record = analysed.decision, request[RECORD]
    arm = "holdout" if request[CONTEXT].team.holdout(decision.request.conversation) else "treated"
    record.add(Armed(arm))
    if arm == "holdout":
        return await forward(request, body, headers)
    if decision.halt is not None:
        return await handback_reply(request, analysed, decision.halt)
    if not decision.reply.active:
        return await forward(request, analysed.body, headers)
    response = await reply_stage(request, analysed, headers)
    if record.outcome is Outcome.HANDBACK:  # the stop rung: the run stalled, though its request did not say so
        await remember_stall(request, decision)
    return response


async def proxy_v1(request: web.Request) -> web.StreamResponse:
    record = request[RECORD]
    try:
        headers = _admitted(request)
        body = await _read(request)
        record.read_at = time.perf_counter()
    except Refused as refused:
        record.end(refused.outcome)
        return refused.response
    settings = request[CONTEXT].runtime.settings
    dialect = ROUTES.get(request.path.rstrip("/")) if request.method == "POST" else None
    analysed = await analyse(request, body, dialect) if settings.repair.enabled and dialect is not None else None
    if analysed is not None:
        record.model = analysed.incoming.translation.model or None
    elif record.operation is not None:
        record.model = requested_model(body)
    try:
        return await _choose(request, body, headers, analysed)
    except UpstreamFailure as failure:
        record.failed(failure.event(answered=True))
        return _failed(request, failure)


def _failed(request: web.Request, failure: UpstreamFailure) -> web.Response:
    """An upstream failure in the route's error shape, with its class in `error.cause` (refused,
    tls, dns, timeout, reset, other): what to fix is known without the proxy's log."""
    path, cause = request.path, failure.cause.value
    return error_reply(path, failure.status, failure.message, code=failure.code, kind="upstream_error", cause=cause)
