"""Each proxied request observed where platform teams look: an OpenTelemetry span when the
`OTEL_*` variables ask for traces (`tracing_from_env`; nothing of OpenTelemetry is imported
otherwise), and the Prometheus model label and token counts, always.

    proxy_v1 ── observing ──────────── the request's span, `chat {model}` (GenAI conventions),
      │                                 its outcome (`RequestLog.end`, the reply stage's `End`)
      ├─ after analysis: requested      the model, the team, the upstream
      ├─ choose: decided                each trip, and each instruction placed, an event
      ├─ reply stage: gate_retry        the next attempt is that gate's retry (an event)
      └─ the upstream session's trace config (`observed.upstream_trace`)
             each attempt a child span; its reply's usage read as the chunks pass (`usage`)

Only this module and `observed` know of spans; the pipeline and the reply stage call these
hooks at their named steps, and the hooks never raise into the request.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import web
from yarl import URL

from proxy.dialects import Planned
from proxy.engine.plan.decide import Decision
from proxy.http.observe.observed import CURRENT, OBSERVED, Observed, genai_reply, quiet
from proxy.http.observe.traces_asked import not_installed, traces_asked
from proxy.http.runtime.appkeys import CONTEXT, METRICS, REQUEST_LOG
from proxy.http.upstream.forward import RelayEnd

if TYPE_CHECKING:
    from proxy.http.observe.otel import Otel

__all__ = ["OPERATIONS", "TRACING", "decided", "gate_retry", "observing", "requested", "tracing_from_env"]

TRACING: web.AppKey[Otel] = web.AppKey("tracing")
"""The app's tracer; absent while traces are off."""

OPERATIONS = {
    "/v1/chat/completions": "chat",
    "/v1/responses": "chat",
    "/api/chat": "chat",
    "/v1/completions": "text_completion",
    "/api/generate": "text_completion",
    "/v1/embeddings": "embeddings",
    "/api/embed": "embeddings",
}
"""The GenAI operation each model route is (`gen_ai.operation.name`); other paths are plain HTTP."""
MODEL_BODY_LIMIT = 1024 * 1024
"""An unanalysed body is read for its `model` only up to this size."""
_MODEL = re.compile(rb'"model"\s*:\s*"([\w.:/@+-]{0,200})"')
"""A `"model": "name"` member. Inside a string (a message's text) its quotes are escaped, so a
match is a key; where there is more than one (a nested object's), the body is parsed instead."""


def tracing_from_env(environ: Mapping[str, str]) -> Otel | None:
    """The tracer the `OTEL_*` variables ask for, None when they ask for none; `ConfigError` (one
    line at start) when they ask for what cannot be: an exporter not served, or a missing SDK
    (`traces_asked`, which a supervisor checks once before its workers start)."""
    asked = traces_asked(environ)
    if asked is None:
        return None
    try:
        from proxy.http.observe.otel import Otel  # noqa: PLC0415 - only when traces are asked for

        if asked.exporter == "otlp":
            import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401, PLC0415
    except ImportError as exc:  # found but failing as imported (a dependency of the SDK missing)
        raise not_installed(asked, str(exc.name or exc)) from None
    return Otel.of(asked.exporter)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def observing(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Run the request's handler observed: its span from arrival to its last byte."""
    operation = OPERATIONS.get(request.path.rstrip("/")) if request.method == "POST" else None
    observed = Observed(operation, request.app[METRICS], request.app.get(TRACING))
    request[OBSERVED] = observed
    if observed.otel is not None:
        attributes = {"http.request.method": request.method, "url.path": request.path}
        if operation is not None:
            attributes["gen_ai.operation.name"] = operation
        observed.span = observed.otel.request_span(operation or request.method, request.headers, attributes)
    token = CURRENT.set(observed)
    status: int | None = None
    end: str | None = None
    try:
        response = await handler(request)
        status = response.status
        return response
    except (asyncio.CancelledError, ConnectionResetError):
        end = RelayEnd.CLIENT_GONE.value
        raise
    except web.HTTPException as exc:
        status = exc.status
        raise
    except BaseException:
        end, status = "error", 500
        raise
    finally:
        CURRENT.reset(token)
        _finish(observed, end or request[REQUEST_LOG].end, status)


@quiet
def _finish(observed: Observed, end: str, status: int | None) -> None:
    for attempt in observed.attempts:
        attempt.finish()
    span = observed.span
    if span is None:
        return
    span.set_attribute("repair_proxy.outcome", end)
    if status is not None:
        span.set_attribute("http.response.status_code", status)
    if observed.operation is not None:
        span.set_attributes(genai_reply(observed.response_model, observed.tokens, observed.finish_reasons))
    if status is not None and status >= 500 and observed.otel is not None:
        observed.otel.failed(span, end)
    span.end()


def _requested_model(body: bytes, analysed: Planned | None) -> str | None:
    if analysed is not None:
        return analysed.incoming.translation.model or None
    if len(body) > MODEL_BODY_LIMIT or not body.lstrip().startswith(b"{"):
        return None
    found = _MODEL.findall(body)
    if len(found) == 1:  # one place names a model: no parse of the whole body for it
        return found[0].decode() if found[0] else None
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    model = data.get("model") if isinstance(data, dict) else None
    return model if isinstance(model, str) and model else None


@quiet
def requested(request: web.Request, body: bytes, analysed: Planned | None) -> None:
    """Once the request is read and analysed: its model, its team, where it goes."""
    observed = request.get(OBSERVED)
    if observed is None or observed.operation is None:
        return
    context = request[CONTEXT]
    model = _requested_model(body, analysed)
    observed.team = context.team.name
    observed.label = observed.metrics.model_label(model)
    if observed.span is None:
        return
    upstream = URL(context.team.upstream)
    attributes: dict[str, Any] = {"repair_proxy.team": observed.team, "server.address": upstream.host or ""}
    if upstream.port is not None:
        attributes["server.port"] = upstream.port
    if model is not None:
        attributes["gen_ai.request.model"] = model
        observed.span.update_name(f"{observed.operation} {model}")
    if analysed is not None:
        attributes["repair_proxy.conversation"] = analysed.decision.request.conversation
    observed.span.set_attributes(attributes)


@quiet
def decided(request: web.Request, decision: Decision, arm: str) -> None:
    """The analysis's decision, as the request's span's events: each trip (pattern, action) and
    each instruction placed in the request sent (none in the holdout arm)."""
    observed = request.get(OBSERVED)
    span = None if observed is None else observed.span
    if span is None:
        return
    span.set_attribute("repair_proxy.arm", arm)
    actions = {}
    for trip in decision.new_trips:
        actions[(trip.turn, trip.pattern)] = trip.action.value
        event = {"repair_proxy.pattern": trip.pattern, "repair_proxy.action": trip.action.value}
        span.add_event("repair_proxy.trip", {**event, "repair_proxy.turn": trip.turn, "repair_proxy.count": trip.count})
    if arm == "holdout" or decision.halt is not None:
        return
    for placed in decision.placed:
        action = actions.get((placed.turn, placed.pattern))
        if action is not None:  # placed for a trip of this request (not one re-inserted)
            event = {"repair_proxy.pattern": placed.pattern, "repair_proxy.action": action}
            span.add_event("repair_proxy.injection", {**event, "repair_proxy.placement": placed.placement.value})


@quiet
def gate_retry(request: web.Request, gate: str) -> None:
    """The reply stage asks the upstream again through `gate`: the next attempt is its retry."""
    observed = request.get(OBSERVED)
    if observed is None:
        return
    observed.next_gate = gate
    if observed.span is not None:
        observed.span.add_event("repair_proxy.gate_retry", {"repair_proxy.gate": gate})
