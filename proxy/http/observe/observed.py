"""One proxied request as observed (`Observed`), and each of its attempts at the upstream, seen
from the upstream session's side (`upstream_trace`, aiohttp's client tracing): an attempt's
child span when traces are on, and its reply's usage read as the proxy reads its chunks (a tap
on the response's body stream, `usage.UsageReader`), counted in `repair_proxy_tokens_total`.

The request being observed is found through a context variable, set for its handler's task
only (`tracing.observing`); a session request outside one (readiness probes) is not seen.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import aiohttp
import structlog
from aiohttp import web

from proxy.http.observe.usage import UsageReader
from proxy.http.upstream.forward import is_streaming

if TYPE_CHECKING:
    from proxy.http.observe.metrics import Metrics
    from proxy.http.observe.otel import Otel, Span

__all__ = ["CURRENT", "OBSERVED", "Observed", "genai_reply", "quiet", "upstream_trace"]

log = structlog.get_logger("repair_proxy")
P = ParamSpec("P")
T = TypeVar("T")


@dataclass(slots=True)
class _Attempt:
    """One request to the upstream for the agent's request."""

    observed: Observed
    index: int
    gate: str | None
    span: Span | None
    reader: UsageReader | None = None
    open: bool = True

    def seen(self, chunk: bytes) -> None:
        """A chunk of the reply as it passes (b"": its end)."""
        if self.reader is not None and chunk:
            self.reader.feed(chunk)
        if not chunk:
            self.finish()

    def finish(self) -> None:
        """The reply is in (or was cut off, or the next attempt began): count what it used."""
        if not self.open:
            return
        self.open = False
        if self.reader is not None:
            self.observed.used(self)
        if self.span is not None:
            self.span.end()


class _Tap:
    """The upstream response's body stream, seen chunk by chunk as the proxy reads it."""

    def __init__(self, inner: aiohttp.StreamReader, attempt: _Attempt) -> None:
        self._inner = inner
        self._attempt = attempt

    async def readany(self) -> bytes:
        chunk = await self._inner.readany()
        try:
            self._attempt.seen(chunk)
        except Exception:
            log.exception("usage_unreadable")
            self._attempt.reader = None
        return chunk

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@dataclass(slots=True)
class Observed:
    """What is seen of one proxied request: its model, its attempts, what they used, its span."""

    operation: str | None
    metrics: Metrics
    otel: Otel | None = None
    span: Span | None = None
    label: str = "none"
    """The model as a metric label (bounded: see `Metrics.model_label`)."""
    team: str = "default"
    attempts: list[_Attempt] = field(default_factory=list)
    next_gate: str | None = None
    tokens: dict[str, int] = field(default_factory=dict)
    response_model: str | None = None
    finish_reasons: tuple[str, ...] = ()

    def used(self, attempt: _Attempt) -> None:
        assert attempt.reader is not None
        usage = attempt.reader.usage()
        counts = {"input": usage.input_tokens, "output": usage.output_tokens}
        for kind, count in counts.items():
            if count is not None:
                self.tokens[kind] = self.tokens.get(kind, 0) + count
                self.metrics.tokens.labels(kind, self.label, self.team).inc(count)
        self.response_model = usage.model or self.response_model
        self.finish_reasons = usage.finish_reasons or self.finish_reasons
        if attempt.span is not None:
            attempt.span.set_attributes(genai_reply(usage.model, counts, usage.finish_reasons))


def genai_reply(model: str | None, tokens: Mapping[str, int | None], reasons: tuple[str, ...]) -> dict[str, Any]:
    attributes: dict[str, Any] = {} if model is None else {"gen_ai.response.model": model}
    for kind, count in tokens.items():
        if count is not None:
            attributes[f"gen_ai.usage.{kind}_tokens"] = count
    if reasons:
        attributes["gen_ai.response.finish_reasons"] = reasons
    return attributes


OBSERVED = web.RequestKey("observed", Observed)
CURRENT: contextvars.ContextVar[Observed | None] = contextvars.ContextVar("repair_proxy_observed", default=None)


def quiet(hook: Callable[P, None]) -> Callable[P, None]:
    """An observing hook that logs what it raises and never raises it into the request."""

    @functools.wraps(hook)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            hook(*args, **kwargs)
        except Exception:
            log.exception("observing_failed", hook=hook.__name__)

    return run


def _callback(hook: Callable[[T], None]) -> Callable[[aiohttp.ClientSession, SimpleNamespace, T], Awaitable[None]]:
    """`hook` as one of the session's trace callbacks (quiet)."""
    quiet_hook = quiet(hook)

    async def callback(_session: aiohttp.ClientSession, _ctx: SimpleNamespace, params: T) -> None:
        quiet_hook(params)

    return callback


def _attempt_started(params: aiohttp.TraceRequestStartParams) -> None:
    observed = CURRENT.get()
    if observed is None:
        return
    for earlier in observed.attempts:
        earlier.finish()  # cut short (a stream released or stopped): counted as far as it was read
    gate, observed.next_gate = observed.next_gate, None
    span = None
    if observed.otel is not None and observed.span is not None:
        url = params.url
        attributes: dict[str, Any] = {
            "http.request.method": params.method,
            "server.address": url.host or "",
            "repair_proxy.attempt": len(observed.attempts) + 1,
        }
        if url.port is not None:
            attributes["server.port"] = url.port
        if gate is not None:
            attributes["repair_proxy.gate"] = gate
        span = observed.otel.attempt_span(observed.span, params.method, attributes)
    observed.attempts.append(_Attempt(observed, len(observed.attempts) + 1, gate, span))


def _attempt_answered(params: aiohttp.TraceRequestEndParams) -> None:
    observed = CURRENT.get()
    if observed is None or not observed.attempts:
        return
    attempt, response = observed.attempts[-1], params.response
    if attempt.span is not None:
        attempt.span.set_attribute("http.response.status_code", response.status)
        if response.status >= 400 and observed.otel is not None:
            observed.otel.failed(attempt.span, str(response.status))
    encoded = response.headers.get("Content-Encoding", "identity").lower() != "identity"
    if observed.operation is None or response.status >= 300 or encoded:
        return
    attempt.reader = UsageReader(streamed=is_streaming(response.headers))
    response.content = _Tap(response.content, attempt)  # type: ignore[assignment]


def _attempt_failed(params: aiohttp.TraceRequestExceptionParams) -> None:
    observed = CURRENT.get()
    if observed is None or not observed.attempts:
        return
    attempt = observed.attempts[-1]
    if attempt.span is not None and observed.otel is not None:
        attempt.span.set_attribute("error.type", type(params.exception).__name__)
        observed.otel.failed(attempt.span, type(params.exception).__name__)
    attempt.finish()


def upstream_trace() -> aiohttp.TraceConfig:
    """The upstream session's callbacks: each attempt of an observed request seen."""
    config = aiohttp.TraceConfig()
    config.on_request_start.append(_callback(_attempt_started))
    config.on_request_end.append(_callback(_attempt_answered))
    config.on_request_exception.append(_callback(_attempt_failed))
    return config
