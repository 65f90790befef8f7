"""Each request the proxy sends upstream, seen from the upstream session's side (aiohttp's client
tracing, `upstream_trace`): a `Sent` added to the request's record, and its reply's usage read as
the proxy reads its chunks (a tap on the response's body stream, `usage.UsageReader`).

The record is found through a context variable (`record.CURRENT`), set for a request's handler
only; a session request outside one (readiness probes) is not seen. Nothing here raises into the
request: what fails is a `Faulted` on the record.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any, TypeVar

import aiohttp

from proxy.http.observe.outcome import Fault
from proxy.http.observe.record import CURRENT, Faulted, Record, Sent
from proxy.http.observe.usage import UsageReader, is_streaming

__all__ = ["upstream_trace"]

T = TypeVar("T")


class _Tap:
    """The upstream response's body stream, seen chunk by chunk as the proxy reads it."""

    def __init__(self, inner: aiohttp.StreamReader, sent: Sent, record: Record) -> None:
        self._inner = inner
        self._sent = sent
        self._record = record

    async def readany(self) -> bytes:
        chunk = await self._inner.readany()
        sent = self._sent
        try:
            if sent.reader is not None and chunk:
                sent.reader.feed(chunk)
        except Exception as exc:
            self._record.add(Faulted(Fault.USAGE_UNREADABLE, exc))
            sent.reader = None
        if not chunk:
            sent.finish()
        return chunk

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _callback(
    hook: Callable[[Record, T], None],
) -> Callable[[aiohttp.ClientSession, SimpleNamespace, T], Awaitable[None]]:
    """`hook` as one of the session's trace callbacks, for the request being observed."""

    async def callback(_session: aiohttp.ClientSession, _ctx: SimpleNamespace, params: T) -> None:
        record = CURRENT.get()
        if record is None:
            return
        try:
            hook(record, params)
        except Exception as exc:  # never into the request
            record.add(Faulted(Fault.OBSERVING_FAILED, exc, {"hook": hook.__name__}))

    return callback


def _started(record: Record, params: aiohttp.TraceRequestStartParams) -> None:
    """The next request goes upstream: the ones before it are over (cut short: a stream
    released or stopped; what they used counted as far as it was read)."""
    for earlier in record.events:
        if isinstance(earlier, Sent):
            earlier.finish()
    record.add(Sent(params.method, params.url.host or "", params.url.port))


def _answered(record: Record, params: aiohttp.TraceRequestEndParams) -> None:
    sent, response = record.events[-1], params.response  # nothing else is recorded while it is sent
    if not isinstance(sent, Sent):
        return
    sent.status = response.status
    encoded = response.headers.get("Content-Encoding", "identity").lower() != "identity"
    if record.operation is None or response.status >= 300 or encoded:
        return
    sent.reader = UsageReader(streamed=is_streaming(response.headers))
    response.content = _Tap(response.content, sent, record)  # type: ignore[assignment]


def _failed(record: Record, params: aiohttp.TraceRequestExceptionParams) -> None:
    sent = record.events[-1]
    if isinstance(sent, Sent):
        sent.error = type(params.exception).__name__
        sent.finish()


def upstream_trace() -> aiohttp.TraceConfig:
    """The upstream session's callbacks: each request of an observed agent request recorded."""
    config = aiohttp.TraceConfig()
    config.on_request_start.append(_callback(_started))
    config.on_request_end.append(_callback(_answered))
    config.on_request_exception.append(_callback(_failed))
    return config
