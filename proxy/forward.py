"""Forwarding: one request to the upstream, its response relayed back chunk by chunk.

Bytes are never re-encoded here: request bodies go up as given, response bodies come back
as they arrive (the session is built with `auto_decompress=False`, so a gzip body stays
gzip and its `Content-Encoding`/`Content-Length` stay true).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import aiohttp
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

__all__ = [
    "HOP_BY_HOP",
    "RelayEnd",
    "Timeouts",
    "UpstreamFailure",
    "downstream_headers",
    "is_streaming",
    "next_chunk",
    "open_upstream",
    "relay",
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
_NO_AUTO_HEADERS = ("Accept", "Accept-Encoding", "User-Agent", "Content-Type")
STREAM_CONTENT_TYPES = ("text/event-stream", "application/x-ndjson")


@dataclass(frozen=True, slots=True)
class Timeouts:
    connect: float
    first_byte: float
    idle: float


class UpstreamFailure(Exception):
    """The upstream could not be reached or did not answer in time."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def _connection_tokens(headers: Mapping[str, str]) -> set[str]:
    value = headers.get("Connection", "")
    return {t.strip().lower() for t in value.split(",") if t.strip()}


def _filtered(headers: CIMultiDictProxy[str], drop: Iterable[str]) -> CIMultiDict[str]:
    dropped = HOP_BY_HOP | _connection_tokens(headers) | set(drop)
    return CIMultiDict((k, v) for k, v in headers.items() if k.lower() not in dropped)


def upstream_headers(incoming: CIMultiDictProxy[str], api_key: str = "") -> CIMultiDict[str]:
    """The agent's headers minus hop-by-hop ones; `Host`/`Content-Length` are set for the upstream."""
    headers = _filtered(incoming, _RECOMPUTED)
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
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


async def open_upstream(
    session: aiohttp.ClientSession,
    method: str,
    url: URL,
    headers: CIMultiDict[str],
    body: bytes,
    timeouts: Timeouts,
) -> aiohttp.ClientResponse:
    """Send the request; return once the upstream's status and headers have arrived."""
    timeout = aiohttp.ClientTimeout(total=None, connect=timeouts.connect, sock_connect=timeouts.connect, sock_read=None)
    request = session.request(
        method,
        url,
        headers=headers,
        data=body if body else None,
        timeout=timeout,
        allow_redirects=False,
        skip_auto_headers=_NO_AUTO_HEADERS,
    )
    try:
        return await asyncio.wait_for(request, timeouts.first_byte)
    except aiohttp.ConnectionTimeoutError:
        raise UpstreamFailure(
            504,
            "upstream_connect_timeout",
            f"no connection to the upstream at {url.origin()} within {timeouts.connect:g}s",
        ) from None
    except TimeoutError:
        raise UpstreamFailure(
            504, "upstream_timeout", f"the upstream at {url.origin()} sent no response within {timeouts.first_byte:g}s"
        ) from None
    except aiohttp.ClientError as exc:
        raise UpstreamFailure(
            502, "upstream_unreachable", f"the upstream at {url.origin()} is unreachable: {exc}"
        ) from None


async def next_chunk(upstream: aiohttp.ClientResponse, idle_timeout: float) -> bytes:
    """The next piece of the body as it arrives (b"" at the end); TimeoutError after `idle_timeout`."""
    async with asyncio.timeout(idle_timeout):
        return await upstream.content.readany()


class RelayEnd(enum.Enum):
    """How a relayed body ended."""

    COMPLETE = "complete"
    CLIENT_GONE = "client_gone"
    UPSTREAM_IDLE = "upstream_idle_timeout"
    UPSTREAM_BROKE = "upstream_broke"


async def relay(
    request: web.BaseRequest,
    upstream: aiohttp.ClientResponse,
    idle_timeout: float,
    extra_headers: Mapping[str, str] | None = None,
    held: Sequence[bytes] = (),
) -> tuple[web.StreamResponse, RelayEnd]:
    """Relay status, headers and body to the agent as the upstream produces them.

    A stream that stalls longer than `idle_timeout` between chunks, or breaks, has its
    client connection closed (the status line is already sent), so the agent sees a cut
    stream, never a silently truncated "complete" one. An agent that goes away closes the
    upstream response, which stops the generation and frees the connection. `held` chunks,
    already read from `upstream` by the caller, go out first.
    """
    response = web.StreamResponse(
        status=upstream.status, reason=upstream.reason, headers=downstream_headers(upstream.headers)
    )
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
            chunk = await next_chunk(upstream, idle_timeout)
        except TimeoutError:
            return response, _cut(request, upstream, RelayEnd.UPSTREAM_IDLE)
        except aiohttp.ClientError:
            return response, _cut(request, upstream, RelayEnd.UPSTREAM_BROKE)
        if not chunk:
            break
        try:
            await response.write(chunk)
        except ConnectionResetError:
            upstream.close()
            return response, RelayEnd.CLIENT_GONE
    await response.write_eof()
    return response, RelayEnd.COMPLETE


def _cut(request: web.BaseRequest, upstream: aiohttp.ClientResponse, end: RelayEnd) -> RelayEnd:
    upstream.close()
    if request.transport is not None:
        request.transport.close()
    return end
