"""Routes: health, readiness, and everything under `/v1/` (chat completions analysed).

agent -> read body -> (chat + repair on?) -> analyse -> halt | done-gate | forward -> relay
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import aiohttp
import structlog
from aiohttp import web
from multidict import CIMultiDict

from proxy.dialects import CHAT, OLLAMA, RESPONSES, Dialect
from proxy.engine import Analysis, Gate
from proxy.errors import openai_error
from proxy.forward import (
    RelayEnd,
    Timeouts,
    UpstreamFailure,
    downstream_headers,
    is_streaming,
    next_chunk,
    open_upstream,
    relay,
    target_url,
    upstream_headers,
)
from proxy.handback import OUTCOME_HEADER
from proxy.identity import CONVERSATION_HEADER
from proxy.keys import METRICS, REQUEST_LOG, RUNTIME, SESSION, STORES
from proxy.metrics import CONTENT_TYPE_LATEST
from proxy.tenancy import Runtime, Team

__all__ = ["add_routes"]

TRIPS_HEADER = "X-Repair-Trips"
ARM_HEADER = "X-Repair-Arm"
DIALECTS: dict[str, Dialect] = {"/v1/chat/completions": CHAT, "/v1/responses": RESPONSES, "/api/chat": OLLAMA}
"""Analysed routes (POST) and the dialect each speaks; every other path is forwarded untouched."""

log = structlog.get_logger("repair_proxy")


class BodyTooLarge(Exception):
    pass


async def read_body(request: web.Request, limit: int) -> bytes:
    """The whole request body, refusing (before reading it all) anything over `limit`."""
    if request.content_length is not None and request.content_length > limit:
        raise BodyTooLarge
    buffer = bytearray()
    async for chunk in request.content.iter_any():
        buffer += chunk
        if len(buffer) > limit:
            raise BodyTooLarge
    return bytes(buffer)


@dataclass(frozen=True, slots=True)
class Context:
    """What this request runs under, fixed when it arrives (a reload does not change it)."""

    runtime: Runtime
    team: Team


CONTEXT = web.RequestKey("context", Context)


def _timeouts(request: web.Request) -> Timeouts:
    upstream = request[CONTEXT].runtime.settings.upstream
    return Timeouts(upstream.connect_timeout, upstream.first_byte_timeout, upstream.idle_timeout)


async def _open(request: web.Request, body: bytes, headers: CIMultiDict[str]) -> aiohttp.ClientResponse:
    raw = request.rel_url
    base = request[CONTEXT].team.upstream
    if raw.raw_path.startswith("/api/"):  # Ollama's native API lives at the server's root, beside /v1
        url = target_url(base.rstrip("/").removesuffix("/v1"), raw.raw_path.lstrip("/"), raw.raw_query_string)
    else:
        url = target_url(base, raw.raw_path.removeprefix("/v1/"), raw.raw_query_string)
    started = time.perf_counter()
    upstream = await open_upstream(request.app[SESSION], request.method, url, headers, body, _timeouts(request))
    request[REQUEST_LOG].upstream_ms = (time.perf_counter() - started) * 1000
    return upstream


async def _forward(
    request: web.Request, body: bytes, headers: CIMultiDict[str], extra: dict[str, str] | None = None
) -> web.StreamResponse:
    upstream = await _open(request, body, headers)
    async with upstream:
        response, end = await relay(request, upstream, _timeouts(request).idle, extra)
    request[REQUEST_LOG].end = end.value
    return response


def _analyse(request: web.Request, body: bytes, dialect: Dialect) -> Analysis | None:
    """Fail-open: any exception in analysis means the original bytes go upstream untouched."""
    record = request[REQUEST_LOG]
    started = time.perf_counter()
    try:
        team = request[CONTEXT].team
        analysis = team.engine.analyse(body, request.headers, team=team.name, dialect=dialect)
    except Exception:
        log.exception("analysis_failed", path=request.path, conversation=request.headers.get(CONVERSATION_HEADER))
        request.app[METRICS].analysis_failed.labels(request[CONTEXT].team.name).inc()
        record.end = "analysis_failed"
        return None
    finally:
        record.overhead_ms = (time.perf_counter() - started) * 1000
    if analysis is not None:
        record.analysed = True
        record.conversation = analysis.conversation
        record.trips = tuple(t.pattern for t in analysis.new_trips)
        signature = analysis.state.repair.last_diagnostic_signature
        metrics = request.app[METRICS]
        turns = {t.turn for t in analysis.new_trips}
        new_text = [i.text for i in analysis.state.injections if i.turn in turns]
        if new_text:
            metrics.injected_tokens.labels(analysis.team).inc(sum(team.engine.tokens.count(t) for t in new_text))
        for trip in analysis.new_trips:
            metrics.trips.labels(trip.pattern, trip.action.value, analysis.team).inc()
            log.info(
                "repair_trip",
                pattern=trip.pattern,
                action=trip.action.value,
                team=analysis.team,
                conversation=analysis.conversation,
                turn=trip.turn,
                count=trip.count,
                streak=analysis.state.repair.same_diagnostic_streak,
                signature=signature[:12] if signature else None,
            )
    return analysis


async def proxy_v1(request: web.Request) -> web.StreamResponse:
    runtime = request.app[RUNTIME].current
    settings = runtime.settings
    team = runtime.team_for(request.headers)
    if team is None:
        request[REQUEST_LOG].end = "unknown_key"
        return openai_error(
            401,
            "no team of this proxy has that key: send it as 'Authorization: Bearer <key>' "
            f"or in the {settings.server.key_header} header",
            code="invalid_proxy_key",
            kind="authentication_error",
        )
    request[CONTEXT] = Context(runtime, team)
    request[REQUEST_LOG].team = team.name
    try:
        body = await read_body(request, settings.limits.max_body_bytes)
    except BodyTooLarge:
        request[REQUEST_LOG].end = "body_too_large"
        response = openai_error(
            413,
            f"request body is larger than this proxy's limit of {settings.limits.max_body_bytes} bytes "
            "(limits.max_body_bytes)",
            code="request_too_large",
            kind="invalid_request_error",
        )
        response.force_close()
        return response
    headers = upstream_headers(request.headers, team.upstream_key)
    headers.popall(settings.server.key_header, None)
    analysis = None
    dialect = DIALECTS.get(request.path.rstrip("/")) if request.method == "POST" else None
    if settings.repair.enabled and dialect is not None:
        analysis = _analyse(request, body, dialect)
        if analysis is None and request[REQUEST_LOG].end != "analysis_failed":
            # not JSON, no transcript, or (Responses) history kept upstream by previous_response_id
            log.info("not_analysable", path=request.path, dialect=dialect.name, team=team.name)
    try:
        if analysis is None:
            return await _forward(request, body, headers)
        extra = {CONVERSATION_HEADER: analysis.conversation}
        if analysis.new_trips:
            extra[TRIPS_HEADER] = ",".join(dict.fromkeys(t.pattern for t in analysis.new_trips))
        analysis = await _memory(request, analysis)
        arm = "holdout" if team.holdout(analysis.conversation) else "treated"
        extra[ARM_HEADER] = arm
        for settled in analysis.new_outcomes:
            request.app[METRICS].trip_outcomes.labels(arm, settled.pattern, settled.outcome, team.name).inc()
        if arm == "holdout":  # analysed, logged and counted; the request goes up as the agent sent it
            return await _forward(request, body, headers, extra)
        if analysis.halt is not None:
            return await _handback(request, analysis, extra)
        if analysis.gate is not None:
            headers["Accept-Encoding"] = "identity"
            return await _gated(request, analysis, analysis.gate, headers, extra)
        return await _forward(request, analysis.body, headers, extra)
    except UpstreamFailure as failure:
        request[REQUEST_LOG].end = failure.code
        return openai_error(failure.status, failure.message, code=failure.code, kind="upstream_error")


async def _memory(request: web.Request, analysis: Analysis) -> Analysis:
    """Cross-run memory around the analysis: look up a prior attempt's verdict on a run's first
    requests, store this run's verdict when it stalls, clear it when a check passes. Store
    trouble is logged and counted, never turned into an error for the agent."""
    store = request.app[STORES].verdicts
    if store is None:
        return analysis
    team = request[CONTEXT].team
    try:
        if analysis.memory_due:
            analysis = team.engine.remember(analysis, await store.get(analysis.team, analysis.task))
        if analysis.record_verdict:
            await store.put(analysis.verdict(time.time()))
        elif analysis.clear_verdict:
            await store.clear(analysis.team, analysis.task)
    except Exception:
        log.exception("store_error", team=analysis.team, conversation=analysis.conversation)
        request.app[METRICS].store_errors.labels(analysis.team).inc()
    return analysis


async def _handback(request: web.Request, analysis: Analysis, extra: dict[str, str]) -> web.StreamResponse:
    handback = analysis.halt
    assert handback is not None
    request[REQUEST_LOG].end = "handback"
    request.app[METRICS].handbacks.labels(handback.reason, analysis.team).inc()
    log.info(
        "repair_handback",
        conversation=analysis.conversation,
        current_failure=handback.current_failure,
        reason=handback.reason,
    )
    headers = {**extra, **handback.headers()}
    body, content_type = analysis.parsed.dialect.handback(handback, analysis.model, analysis.stream)
    if analysis.stream:
        response = web.StreamResponse(
            status=200,
            headers={**headers, "Content-Type": content_type, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
        await response.prepare(request)
        await response.write(body)
        await response.write_eof()
        return response
    return web.Response(body=body, headers=headers, content_type=content_type)


async def _gated(
    request: web.Request, analysis: Analysis, gate: Gate, headers: CIMultiDict[str], extra: dict[str, str]
) -> web.StreamResponse:
    """The done-gate: a reply that tries to stop while a re-verify is owed is sent back.

    Streaming replies are held only until the first tool-call delta shows the model is
    acting; from then on they are relayed as they arrive.
    """
    body = analysis.body
    idle = _timeouts(request).idle
    record = request[REQUEST_LOG]
    for attempt in range(gate.max_attempts + 1):
        last = attempt == gate.max_attempts
        upstream = await _open(request, body, headers)
        async with upstream:
            encoded = upstream.headers.get("Content-Encoding", "identity").lower() != "identity"
            if upstream.status >= 400 or encoded:
                response, end = await relay(request, upstream, idle, extra)
                record.end = end.value
                return response
            if is_streaming(upstream.headers):
                held, acting = await _hold_until_acting(upstream, idle, analysis.parsed.dialect)
                if acting or last:
                    marks = {} if acting else {OUTCOME_HEADER: "complete_unverified"}
                    response, end = await relay(request, upstream, idle, {**extra, **marks}, held)
                    record.end = "complete_unverified" if marks and end is RelayEnd.COMPLETE else end.value
                    return response
            else:
                whole = await _read_all(upstream, idle)
                acting = analysis.parsed.dialect.reply_acts(whole)
                if acting or last:
                    marks = {} if acting else {OUTCOME_HEADER: "complete_unverified"}
                    out = downstream_headers(upstream.headers)
                    out.popall("Content-Length", None)
                    out.update({**extra, **marks})
                    record.end = "complete_unverified" if marks else "complete"
                    return web.Response(status=upstream.status, body=whole, headers=out)
        log.info("repair_done_gate", conversation=analysis.conversation, attempt=attempt + 1)
        request.app[METRICS].done_gate_retries.labels(analysis.team).inc()
        body = gate.retry_body
    raise AssertionError("unreachable: the last attempt always returns")


async def _next_chunk(upstream: aiohttp.ClientResponse, idle: float) -> bytes:
    try:
        return await next_chunk(upstream, idle)
    except TimeoutError:
        raise UpstreamFailure(504, "upstream_idle_timeout", f"the upstream sent nothing for {idle:g}s") from None
    except aiohttp.ClientError as exc:
        raise UpstreamFailure(502, "upstream_broke", f"the upstream's reply broke off: {exc}") from None


async def _read_all(upstream: aiohttp.ClientResponse, idle: float) -> bytes:
    buffer = bytearray()
    while chunk := await _next_chunk(upstream, idle):
        buffer += chunk
    return bytes(buffer)


async def _hold_until_acting(
    upstream: aiohttp.ClientResponse, idle: float, dialect: Dialect
) -> tuple[list[bytes], bool]:
    """Read a stream until it shows a tool call (acting) or ends (trying to stop)."""
    acts = dialect.stream_watcher()
    held: list[bytes] = []
    while chunk := await _next_chunk(upstream, idle):
        held.append(chunk)
        if acts(chunk):
            return held, True
    return held, False


async def metrics(request: web.Request) -> web.Response:
    """Prometheus exposition of the app's own registry."""
    return web.Response(body=request.app[METRICS].render(), headers={"Content-Type": CONTENT_TYPE_LATEST})


async def healthz(_request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    """Ready when the upstream answers at all (any HTTP status below 500)."""
    settings = request.app[RUNTIME].current.settings
    url = target_url(settings.upstream.base_url, "models", "")
    try:
        async with request.app[SESSION].get(
            url, timeout=aiohttp.ClientTimeout(total=min(5.0, settings.upstream.connect_timeout * 2))
        ) as response:
            ok = response.status < 500
            status = response.status
    except (aiohttp.ClientError, TimeoutError) as exc:
        return web.json_response(
            {"status": "unready", "upstream": settings.upstream.base_url, "error": str(exc) or type(exc).__name__},
            status=503,
        )
    return web.json_response(
        {"status": "ready" if ok else "unready", "upstream": settings.upstream.base_url, "upstream_status": status},
        status=200 if ok else 503,
    )


def add_routes(app: web.Application) -> None:
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    app.router.add_route("*", "/v1/{tail:.*}", proxy_v1)
    app.router.add_route("*", "/api/{tail:.*}", proxy_v1)
