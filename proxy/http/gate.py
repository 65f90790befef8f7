"""The done-gate: a reply that tries to stop while a re-run of the failing check is owed is
not passed on; the upstream is asked again with the gate's request, at most `max_attempts`
times, and after that the reply goes through marked `complete_unverified`.

Streamed replies are held only until the first tool-call delta shows the model is acting;
from then on they are relayed as they arrive. Non-streamed replies are read whole (they
arrive whole anyway). Upstream errors and compressed bodies are relayed as they are.
"""

from __future__ import annotations

import aiohttp
import structlog
from aiohttp import web
from multidict import CIMultiDict

from proxy.dialects import Dialect, Planned
from proxy.http.appkeys import CONTEXT, METRICS, REQUEST_LOG
from proxy.http.forward import RelayEnd, downstream_headers, is_streaming, relay, send
from proxy.http.replies import OUTCOME_HEADER
from proxy.http.upstream import Timeouts, next_chunk

__all__ = ["UNVERIFIED", "gated"]

log = structlog.get_logger("repair_proxy")

UNVERIFIED = "complete_unverified"
"""The outcome of a reply passed on after the gate's last try, still without the re-run."""


async def _read_all(upstream: aiohttp.ClientResponse, timeouts: Timeouts) -> bytes:
    buffer = bytearray()
    while chunk := await next_chunk(upstream, timeouts):
        buffer += chunk
    return bytes(buffer)


async def _hold_until_acting(
    upstream: aiohttp.ClientResponse, timeouts: Timeouts, dialect: Dialect
) -> tuple[list[bytes], bool]:
    """Read a stream until it shows a tool call (acting) or ends (trying to stop)."""
    acts = dialect.stream_watcher()
    held: list[bytes] = []
    while chunk := await next_chunk(upstream, timeouts):
        held.append(chunk)
        if acts(chunk):
            return held, True
    return held, False


async def gated(
    request: web.Request, analysed: Planned, headers: CIMultiDict[str], extra: dict[str, str]
) -> web.StreamResponse:
    """Send the request; while the reply tries to stop, ask again with the gate's request."""
    gate = analysed.decision.gate
    assert gate is not None and analysed.retry is not None
    dialect = analysed.incoming.dialect
    timeouts = request[CONTEXT].timeouts
    record = request[REQUEST_LOG]
    body = analysed.body
    headers["Accept-Encoding"] = "identity"
    for attempt in range(gate.max_attempts + 1):
        last = attempt == gate.max_attempts
        upstream = await send(request, body, headers)
        async with upstream:
            encoded = upstream.headers.get("Content-Encoding", "identity").lower() != "identity"
            if upstream.status >= 400 or encoded:
                response, end = await relay(request, upstream, timeouts, extra)
                record.end = end.value
                return response
            if is_streaming(upstream.headers):
                held, acting = await _hold_until_acting(upstream, timeouts, dialect)
                if acting or last:
                    marks = {} if acting else {OUTCOME_HEADER: UNVERIFIED}
                    response, end = await relay(request, upstream, timeouts, {**extra, **marks}, held)
                    record.end = UNVERIFIED if marks and end is RelayEnd.COMPLETE else end.value
                    return response
            else:
                whole = await _read_all(upstream, timeouts)
                acting = dialect.reply_acts(whole)
                if acting or last:
                    marks = {} if acting else {OUTCOME_HEADER: UNVERIFIED}
                    out = downstream_headers(upstream.headers)
                    out.popall("Content-Length", None)
                    out.update({**extra, **marks})
                    record.end = UNVERIFIED if marks else RelayEnd.COMPLETE.value
                    return web.Response(status=upstream.status, body=whole, headers=out)
        log.info("repair_done_gate", conversation=analysed.decision.request.conversation, attempt=attempt + 1)
        request.app[METRICS].done_gate_retries.labels(analysed.decision.request.team).inc()
        body = analysed.retry
    raise AssertionError("unreachable: the last attempt always returns")
