"""A finished request's record as OpenTelemetry spans, when the `OTEL_*` variables ask for traces
(`tracing_from_env`; nothing of OpenTelemetry is imported otherwise):

    the request      `chat {model}` (GenAI conventions), from its arrival to its last byte, under
                     the agent's trace when it sent a `traceparent`: its team, upstream, arm,
                     conversation, outcome (`Outcome`), the model that answered and the tokens used
      events         each trip and each instruction placed (`Analysed`), each gate's retry (`Retried`)
      children       each request sent upstream (`Sent`): its status, its gate, what its reply used

Built once the request is over, with the times the record kept: no span is open while the
request runs, and nothing here is called by the pipeline or the reply stage.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aiohttp import web
from yarl import URL

from proxy.engine.plan.decide import Decision
from proxy.http.observe.outcome import Again
from proxy.http.observe.record import Analysed, Record, Retried, Sent
from proxy.http.observe.traces_asked import not_installed, traces_asked

if TYPE_CHECKING:
    from proxy.http.observe.otel import Otel, Span

__all__ = ["OPERATIONS", "TRACING", "genai_reply", "spans", "tracing_from_env"]

TRACING: web.AppKey[Otel] = web.AppKey("tracing")
"""The app's tracer; absent while traces are off."""

OPERATIONS = {
    "/v1/chat/completions": "chat",
    "/v1/responses": "chat",
    "/api/chat": "chat",
    "/v1/messages": "chat",
    "/v1/completions": "text_completion",
    "/api/generate": "text_completion",
    "/v1/embeddings": "embeddings",
    "/api/embed": "embeddings",
}
"""The GenAI operation each model route is (`gen_ai.operation.name`); other paths are plain HTTP."""


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


def genai_reply(model: str | None, tokens: Mapping[str, int | None], reasons: tuple[str, ...]) -> dict[str, Any]:
    attributes: dict[str, Any] = {} if model is None else {"gen_ai.response.model": model}
    for kind, count in tokens.items():
        if count is not None:
            attributes[f"gen_ai.usage.{kind}_tokens"] = count
    if reasons:
        attributes["gen_ai.response.finish_reasons"] = reasons
    return attributes


def _requested(record: Record) -> dict[str, Any]:
    """What the request asked of which upstream (model routes only)."""
    attributes: dict[str, Any] = {"repair_proxy.team": record.team}
    if record.upstream is not None:
        upstream = URL(record.upstream)
        attributes["server.address"] = upstream.host or ""
        if upstream.port is not None:
            attributes["server.port"] = upstream.port
    if record.model is not None:
        attributes["gen_ai.request.model"] = record.model
    if (conversation := record.conversation) is not None:
        attributes["repair_proxy.conversation"] = conversation
    return attributes


def _decided(span: Span, decision: Decision, arm: str | None, at: int) -> None:
    """Each trip (pattern, action) and each instruction placed in the request sent (none in the
    holdout arm, nor with a hand-back)."""
    actions = {}
    for trip in decision.new_trips:
        actions[(trip.turn, trip.pattern.name)] = trip.action.value
        event: dict[str, Any] = {"repair_proxy.pattern": trip.pattern.name, "repair_proxy.action": trip.action.value}
        event |= {"repair_proxy.turn": trip.turn, "repair_proxy.count": trip.count, "repair_proxy.shadow": trip.shadow}
        span.add_event("repair_proxy.trip", event, timestamp=at)
    if arm == "holdout" or decision.halt is not None:
        return
    for placed in decision.placed:
        action = actions.get((placed.turn, placed.pattern))
        if action is not None:  # placed for a trip of this request (not one re-inserted)
            event = {"repair_proxy.pattern": placed.pattern, "repair_proxy.action": action}
            event["repair_proxy.placement"] = placed.placement.value
            span.add_event("repair_proxy.injection", event, timestamp=at)


def _attempt(otel: Otel, parent: Span, sent: Sent, index: int, gate: str | None, ended: int) -> None:
    attributes: dict[str, Any] = {
        "http.request.method": sent.method,
        "server.address": sent.host,
        "repair_proxy.attempt": index,
    }
    if sent.port is not None:
        attributes["server.port"] = sent.port
    if gate is not None:
        attributes["repair_proxy.gate"] = gate
    span = otel.attempt_span(parent, sent.method, attributes, sent.started)
    if sent.status is not None:
        span.set_attribute("http.response.status_code", sent.status)
        if sent.status >= 400:
            otel.failed(span, str(sent.status))
    if sent.error is not None:
        span.set_attribute("error.type", sent.error)
        otel.failed(span, sent.error)
    if sent.usage is not None:
        counts = {"input": sent.usage.input_tokens, "output": sent.usage.output_tokens}
        span.set_attributes(genai_reply(sent.usage.model, counts, sent.usage.finish_reasons))
    span.end(end_time=sent.ended or ended)


def spans(otel: Otel, record: Record, status: int | None, ended: int) -> None:
    """The request's span and its children, from its record (`ended`: its last byte, in ns)."""
    name = record.method if record.operation is None else record.operation
    attributes: dict[str, Any] = {"http.request.method": record.method, "url.path": record.path}
    if record.operation is not None:
        attributes["gen_ai.operation.name"] = record.operation
        attributes |= _requested(record)
        name = f"{record.operation} {record.model}" if record.model is not None else name
    span = otel.request_span(name, record.carrier, attributes, record.started_ns)
    arm, gate, index = record.arm, None, 0
    tokens, model, reasons = record.used()
    if arm is not None:
        span.set_attribute("repair_proxy.arm", arm)
    for event in record.events:
        if isinstance(event, Analysed):
            _decided(span, event.decision, arm, event.at)
        elif isinstance(event, Retried) and event.gate is not None and event.why is Again.GATE:
            gate = event.gate.value
            span.add_event("repair_proxy.gate_retry", {"repair_proxy.gate": gate}, timestamp=event.at)
        elif isinstance(event, Sent):
            index += 1
            _attempt(otel, span, event, index, gate, ended)
            gate = None
    span.set_attribute("repair_proxy.outcome", record.outcome.value)
    if status is not None:
        span.set_attribute("http.response.status_code", status)
    if record.operation is not None:
        span.set_attributes(genai_reply(model, tokens, reasons))
    if status is not None and status >= 500:
        otel.failed(span, record.outcome.value)
    span.end(end_time=ended)
