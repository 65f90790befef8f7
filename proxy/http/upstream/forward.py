"""Forwarding: which headers and URL go upstream, and the response relayed back chunk by chunk.

Bytes are never re-encoded here: request bodies go up as given, response bodies come back
as they arrive (the session is built with `auto_decompress=False`, so a gzip body stays
gzip and its `Content-Encoding`/`Content-Length` stay true).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence

import aiohttp
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from proxy.http.observe.marks import marks
from proxy.http.observe.outcome import Outcome
from proxy.http.observe.record import Record
from proxy.http.observe.usage import is_streaming
from proxy.http.runtime.appkeys import CONTEXT, RECORD, SESSION
from proxy.http.upstream.ends import StreamEnd
from proxy.http.upstream.network import UpstreamFailure, next_chunk, open_upstream

__all__ = [
    "HOP_BY_HOP",
    "cut_agent",
    "forward",
    "hop_free",
    "relay",
    "rewritten_headers",
    "send",
    "target_url",
    "upstream_headers",
]

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
"""Headers that describe one connection, never forwarded (RFC 9110 section 7.6.1)."""

_RECOMPUTED = frozenset({"host", "content-length"})


def hop_free(headers: CIMultiDictProxy[str], drop: frozenset[str] = frozenset()) -> CIMultiDict[str]:
    """`headers` without the hop-by-hop ones, those `Connection` names, and `drop`: the upstream's
    response headers as they go to the agent (Content-Length stays: bytes are kept)."""
    dropped = HOP_BY_HOP | drop | set(map(str.strip, headers.get("Connection", "").lower().split(",")))
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in headers.items():
        if name.lower() not in dropped:
            out.add(name, value)
    return out


def upstream_headers(
    incoming: CIMultiDictProxy[str], api_key: str = "", client_authorization: bool = True
) -> CIMultiDict[str]:
    """The agent's headers minus hop-by-hop ones; `Host`/`Content-Length` are set for the upstream.
    `api_key` replaces the agent's Authorization; without one, the agent's goes up only when
    `client_authorization` (see `Runtime.team_for`)."""
    headers = hop_free(incoming, _RECOMPUTED)
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    elif not client_authorization:
        headers.popall("Authorization", None)
    return headers


def target_url(base_url: str, tail: str, query_string: str) -> URL:
    """`base_url` joined with the path below `/v1/`, query string kept byte for byte."""
    url = base_url.rstrip("/") + "/" + tail.lstrip("/")
    if query_string:
        url += "?" + query_string
    return URL(url, encoded=True)


async def relay(
    request: web.Request,
    upstream: aiohttp.ClientResponse,
    held: Sequence[bytes] = (),
    opened: web.StreamResponse | None = None,
    complete: Outcome = Outcome.COMPLETE,
) -> web.StreamResponse:
    """Relay status, headers and body to the agent as the upstream produces them, marked as the
    request's record stands (`marks`); the request ends as `complete` says when all of it went.

    A stream that stalls longer than the idle timeout between chunks, or breaks, has its
    client connection closed (the status line is already sent), so the agent sees a cut
    stream, never a silently truncated "complete" one. An agent that goes away closes the
    upstream response, which stops the generation and frees the connection. `held` chunks,
    already read from `upstream` by the caller, go out first; `opened`: the agent's response,
    already prepared, that the rest goes on.

    Once the stream's last event is out (`ends.StreamEnd`: `[DONE]`...), or the whole body, the
    agent has its reply (`Record.delivered`): leaving then, while the proxy waits for the
    upstream's end or ends its own, is no early leave, and the upstream breaking off then cuts
    nothing the agent needed (its stream is ended properly).
    """
    record, timeouts = request[RECORD], request[CONTEXT].runtime.timeouts
    response, end = opened, StreamEnd(upstream.headers.get("Content-Type", ""))
    chunks = filter(None, held)  # an empty one would read as the end of what is held
    try:
        if response is None:
            headers = hop_free(upstream.headers)
            headers.update(marks(record))
            if is_streaming(upstream.headers):
                headers["X-Accel-Buffering"] = "no"
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason, headers=headers)
            await response.prepare(request)
        while chunk := next(chunks, b"") or await next_chunk(upstream, timeouts):  # what is held goes first
            await response.write(chunk)
            if end.feed(chunk) and record.delivered is None:
                record.end(complete)
                record.delivered = response.status
        record.end(complete)
        record.delivered = response.status
        await response.write_eof()
    except ConnectionResetError:
        upstream.close()
        if record.delivered is None:
            record.end(Outcome.CLIENT_GONE)
    except UpstreamFailure as failure:
        upstream.close()
        if record.delivered is None:
            cut_agent(request)
            record.failed(failure.event())
        elif response is not None:
            record.add(failure.event())  # logged; the agent's reply was whole
            with contextlib.suppress(ConnectionResetError):
                await response.write_eof()
    assert response is not None  # prepare raises only ConnectionResetError, after it is made
    return response


def cut_agent(request: web.BaseRequest) -> None:
    """Close the agent's connection: its status line already went, so a cut stream, never a
    silently truncated "complete" one."""
    if request.transport is not None:
        request.transport.close()


def rewritten_headers(headers: Mapping[str, str], record: Record, streamed: bool) -> CIMultiDict[str]:
    """The upstream's response headers for a body the proxy wrote again: no Content-Length (the
    length is the new body's), our marks as the record stands, and for a stream no buffering by
    a proxy in between."""
    out = CIMultiDict(headers)
    out.popall("Content-Length", None)
    out.update(marks(record))
    if streamed:
        out["X-Accel-Buffering"] = "no"
    return out


async def send(request: web.Request, body: bytes, headers: CIMultiDict[str]) -> aiohttp.ClientResponse:
    """Send this request's body to its team's upstream; return once the response headers are in.

    Paths under `/v1/` go below the upstream's base URL; Ollama's native `/api/*` lives at
    the server's root, beside `/v1`.
    """
    raw = request.rel_url
    context = request[CONTEXT]
    runtime, base = context.runtime, context.team.upstream
    if raw.raw_path.startswith("/api/"):
        url = target_url(base.rstrip("/").removesuffix("/v1"), raw.raw_path.lstrip("/"), raw.raw_query_string)
    else:
        url = target_url(base, raw.raw_path.removeprefix("/v1/"), raw.raw_query_string)
    record, started = request[RECORD], time.perf_counter()
    if record.sent_at is None:  # the first time it goes up counts
        record.sent_at = started
    session = request.app[SESSION]
    upstream = await open_upstream(
        session, request.method, url, headers, body, runtime.timeouts, runtime.tls, context.team.named
    )
    record.upstream_ms = (time.perf_counter() - started) * 1000
    return upstream


async def forward(request: web.Request, body: bytes, headers: CIMultiDict[str]) -> web.StreamResponse:
    """Send `body` upstream and relay the response as it comes."""
    async with await send(request, body, headers) as upstream:
        return await relay(request, upstream)
