"""The OpenTelemetry SDK, behind the few calls `tracing` makes: imported only when the `OTEL_*`
variables ask for traces (`tracing.tracing_from_env`), never otherwise.

The provider is the app's own (no global tracer provider is set): its exporter is OTLP over
HTTP/protobuf (`OTEL_TRACES_EXPORTER=otlp`, the default) or the console, configured by the
standard variables, which the SDK reads itself (endpoint, headers, timeout, sampler, batch
sizes, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`). An agent's `traceparent` makes the
request's span a child of the agent's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

__all__ = ["EXPORTERS", "Otel", "Span"]

SCOPE = "repair_proxy"
"""The instrumentation scope the proxy's spans are under."""


def _otlp() -> SpanExporter:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: PLC0415

    return OTLPSpanExporter()


EXPORTERS = {"otlp": _otlp, "console": ConsoleSpanExporter}
"""`OTEL_TRACES_EXPORTER` values the proxy serves (`traces_asked.EXPORTER_NAMES`, in that order)."""


class Otel:
    """The app's tracer: request spans (server side), attempt spans (client side, children)."""

    def __init__(self, processor: SpanProcessor) -> None:
        resource = Resource.create()
        if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
            resource = resource.merge(Resource({SERVICE_NAME: "repair-proxy"}))
        self._provider = TracerProvider(resource=resource)
        self._provider.add_span_processor(processor)
        self._tracer = self._provider.get_tracer(SCOPE)
        self._propagator = TraceContextTextMapPropagator()

    @classmethod
    def of(cls, exporter: str) -> Otel:
        """Spans batched to `exporter` (a key of `EXPORTERS`), as the `OTEL_BSP_*` variables say."""
        return cls(BatchSpanProcessor(EXPORTERS[exporter]()))

    def request_span(self, name: str, headers: Mapping[str, str], attributes: Mapping[str, Any], start: int) -> Span:
        """A proxied request's span, begun at `start` (ns), under the agent's trace when it sent a
        `traceparent`."""
        parent = self._propagator.extract(dict(headers.items()))
        kind = SpanKind.SERVER
        return self._tracer.start_span(name, context=parent, kind=kind, attributes=attributes, start_time=start)

    def attempt_span(self, parent: Span, name: str, attributes: Mapping[str, Any], start: int) -> Span:
        """One request to the upstream, begun at `start` (ns), under its request's span."""
        context = trace.set_span_in_context(parent)
        kind = SpanKind.CLIENT
        return self._tracer.start_span(name, context=context, kind=kind, attributes=attributes, start_time=start)

    @staticmethod
    def failed(span: Span, description: str) -> None:
        span.set_status(Status(StatusCode.ERROR, description))

    def flush(self) -> None:
        self._provider.force_flush()

    def shutdown(self) -> None:
        """Export what is left and stop (blocking: call it off the event loop)."""
        self._provider.shutdown()
