"""Forwarding: which headers and URL go upstream, and the response relayed back chunk by chunk.

Bytes are never re-encoded here: request bodies go up as given, response bodies come back
as they arrive (the session is built with `auto_decompress=False`, so a gzip body stays
gzip and its `Content-Encoding`/`Content-Length` stay true).
"""

from __future__ import annotations

import enum
import time
from collections.abc import Iterable, Mapping, Sequence

import aiohttp
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from proxy.http.runtime.appkeys import CONTEXT, REQUEST_LOG, SESSION, Timeouts
from proxy.http.upstream.network import UpstreamFailure, next_chunk, open_upstream

__all__ = [
    "HOP_BY_HOP",
    "RelayEnd",
    "downstream_headers",
    "forward",
    "is_streaming",
    "relay",
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
STREAM_CONTENT_TYPES = ("text/event-stream", "application/x-ndjson")


def _connection_tokens(headers: Mapping[str, str]) -> set[str]:
    value = headers.get("Connection", "")
    return {t.strip().lower() for t in value.split(",") if t.strip()}


def _filtered(headers: CIMultiDictProxy[str], drop: Iterable[str]) -> CIMultiDict[str]:
    dropped = HOP_BY_HOP | _connection_tokens(headers) | set(drop)
    return CIMultiDict((k, v) for k, v in headers.items() if k.lower() not in dropped)


def upstream_headers(
    incoming: CIMultiDictProxy[str], api_key: str = "", client_authorization: bool = True
) -> CIMultiDict[str]:
    """The agent's headers minus hop-by-hop ones; `Host`/`Content-Length` are set for the upstream.
    `api_key` replaces the agent's Authorization; without one, the agent's goes up only when
    `client_authorization` (see `Runtime.client_authorization_passes`)."""
    headers = _filtered(incoming, _RECOMPUTED)
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    elif not client_authorization:
        headers.popall("Authorization", None)
    return headers


def downstream_headers(upstream: CIMultiDictProxy[str]) -> CIMultiDict[str]:
    """The upstream's response headers minus hop-by-hop ones (Content-Length stays: bytes are kept)."""
    return _filtered(upstream, ())


def is_streaming(headers: Mapping[str, str]) -> bool:
    ctype = headers.get("Content-Type", "").lower()
    return ctype.startswith(STREAM_CONTENT_TYPES)


def target_url(base_url: str, tail: str, query_string: str) -> URL:
    """`base_url` joined with the path below `/v1/`, query string kept byte for byte."""
    url = base_url.rstrip("/") + "/" + tail.lstrip("/")
    if query_string:
        url += "?" + query_string
    return URL(url, encoded=True)


class RelayEnd(enum.Enum):
    """How a relayed body ended."""

    COMPLETE = "complete"
    CLIENT_GONE = "client_gone"
    """The agent went away; the upstream response was closed (it stops generating)."""
    UPSTREAM_IDLE = "upstream_idle_timeout"
    """The upstream went silent longer than the idle timeout; the agent's connection was cut."""
    UPSTREAM_BROKE = "upstream_broke"
    """The upstream's body broke off; the agent's connection was cut."""


async def relay(
    request: web.BaseRequest,
    upstream: aiohttp.ClientResponse,
    timeouts: Timeouts,
    extra_headers: Mapping[str, str] | None = None,
    held: Sequence[bytes] = (),
    opened: web.StreamResponse | None = None,
) -> tuple[web.StreamResponse, RelayEnd]:
    """Relay status, headers and body to the agent as the upstream produces them.

    A stream that stalls longer than the idle timeout between chunks, or breaks, has its
    client connection closed (the status line is already sent), so the agent sees a cut
    stream, never a silently truncated "complete" one. An agent that goes away closes the
    upstream response, which stops the generation and frees the connection. `held` chunks,
    already read from `upstream` by the caller, go out first; `opened`: the agent's response,
    already prepared, that the rest goes on.
    """
    response = opened or web.StreamResponse(
        status=upstream.status, reason=upstream.reason, headers=downstream_headers(upstream.headers)
    )
    if opened is None:
        if extra_headers:
            response.headers.update(extra_headers)
        if is_streaming(upstream.headers):
            response.headers["X-Accel-Buffering"] = "no"
        try:
            await response.prepare(request)
        except ConnectionResetError:
            upstream.close()
            return response, RelayEnd.CLIENT_GONE
    try:
        for chunk in held:
            await response.write(chunk)
    except ConnectionResetError:
        upstream.close()
        return response, RelayEnd.CLIENT_GONE
    while True:
        try:
            chunk = await next_chunk(upstream, timeouts)
        except UpstreamFailure as failure:
            upstream.close()
            cut_agent(request)
            return response, broken_end(failure)
        if not chunk:
            break
        try:
            await response.write(chunk)
        except ConnectionResetError:
            upstream.close()
            return response, RelayEnd.CLIENT_GONE
    await response.write_eof()
    return response, RelayEnd.COMPLETE


def broken_end(failure: UpstreamFailure) -> RelayEnd:
    """How a stream ends that the upstream broke off or let go silent after the agent had some of it."""
    return RelayEnd.UPSTREAM_IDLE if failure.code == RelayEnd.UPSTREAM_IDLE.value else RelayEnd.UPSTREAM_BROKE


def cut_agent(request: web.BaseRequest) -> None:
    """Close the agent's connection: its status line already went, so a cut stream, never a
    silently truncated "complete" one."""
    if request.transport is not None:
        request.transport.close()


def rewritten_headers(headers: Mapping[str, str], marks: Mapping[str, str], streamed: bool) -> CIMultiDict[str]:
    """The upstream's response headers for a body the proxy wrote again: no Content-Length (the
    length is the new body's), our marks, and for a stream no buffering by a proxy in between."""
    out = CIMultiDict(headers)
    out.popall("Content-Length", None)
    out.update(marks)
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
    base = context.team.upstream
    if raw.raw_path.startswith("/api/"):
        url = target_url(base.rstrip("/").removesuffix("/v1"), raw.raw_path.lstrip("/"), raw.raw_query_string)
    else:
        url = target_url(base, raw.raw_path.removeprefix("/v1/"), raw.raw_query_string)
    started = time.perf_counter()
    session = request.app[SESSION]
    upstream = await open_upstream(session, request.method, url, headers, body, context.timeouts, context.runtime.tls)
    request[REQUEST_LOG].upstream_ms = (time.perf_counter() - started) * 1000
    return upstream


async def forward(
    request: web.Request, body: bytes, headers: CIMultiDict[str], extra: Mapping[str, str] | None = None
) -> web.StreamResponse:
    """Send `body` upstream and relay the response as it comes."""
    upstream = await send(request, body, headers)
    async with upstream:
        response, end = await relay(request, upstream, request[CONTEXT].timeouts, extra)
    request[REQUEST_LOG].end = end.value
    return response
