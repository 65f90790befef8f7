"""The upstream connection: sending a request, reading its body, and every way that fails.

Every network error from the upstream is mapped here and nowhere else (`mapped_errors`),
into an `UpstreamFailure` with the status and code the agent gets back. Before the response
headers arrive the failure becomes a proxy-made error in OpenAI's shape; after, the relay
cuts the stream (see `forward.relay`). Messages never name the upstream's host: agents may
sit outside the network the upstream is in. The origin goes to the log instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
from collections.abc import Iterator
from dataclasses import dataclass

import aiohttp
import structlog
from multidict import CIMultiDict
from yarl import URL

__all__ = ["Phase", "Timeouts", "UpstreamFailure", "mapped_errors", "next_chunk", "open_upstream"]

log = structlog.get_logger("repair_proxy")

_NO_AUTO_HEADERS = ("Accept", "Accept-Encoding", "User-Agent", "Content-Type")


@dataclass(frozen=True, slots=True)
class Timeouts:
    connect: float
    first_byte: float
    idle: float


class Phase(enum.Enum):
    """Where in the exchange a failure happened."""

    HEADERS = "headers"
    """Connecting, sending, waiting for the status line and headers."""
    BODY = "body"
    """Reading the response body."""


class UpstreamFailure(Exception):
    """The upstream could not be reached, did not answer in time, or broke off."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def _failure(phase: Phase, exc: BaseException, timeouts: Timeouts) -> UpstreamFailure:
    """The failure an upstream error is, by these rules:

    1. No TCP connection within the connect timeout: 504 `upstream_connect_timeout`.
    2. A timeout before the headers: 504 `upstream_timeout` (first-byte timeout).
    3. A timeout while reading the body: 504 `upstream_idle_timeout` (idle gap between chunks).
    4. Any other client error before the headers: 502 `upstream_unreachable`.
    5. Any other client error while reading the body: 502 `upstream_broke`.
    """
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return UpstreamFailure(
            504, "upstream_connect_timeout", f"no connection to the upstream within {timeouts.connect:g}s"
        )
    if isinstance(exc, TimeoutError) and phase is Phase.HEADERS:
        return UpstreamFailure(
            504, "upstream_timeout", f"the upstream sent no response within {timeouts.first_byte:g}s"
        )
    if isinstance(exc, TimeoutError):
        return UpstreamFailure(504, "upstream_idle_timeout", f"the upstream sent nothing for {timeouts.idle:g}s")
    if phase is Phase.HEADERS:
        return UpstreamFailure(502, "upstream_unreachable", "the upstream is unreachable")
    return UpstreamFailure(502, "upstream_broke", "the upstream's reply broke off")


@contextlib.contextmanager
def mapped_errors(phase: Phase, origin: str, timeouts: Timeouts) -> Iterator[None]:
    """Every aiohttp and timeout error inside the block, as an `UpstreamFailure` (logged with the origin)."""
    try:
        yield
    except (TimeoutError, aiohttp.ClientError) as exc:
        failure = _failure(phase, exc, timeouts)
        log.warning("upstream_error", code=failure.code, upstream=origin, error=str(exc) or type(exc).__name__)
        raise failure from None


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
    with mapped_errors(Phase.HEADERS, str(url.origin()), timeouts):
        return await asyncio.wait_for(request, timeouts.first_byte)


async def next_chunk(upstream: aiohttp.ClientResponse, timeouts: Timeouts) -> bytes:
    """The next piece of the body as it arrives (b"" at the end); `UpstreamFailure` when it stalls
    longer than the idle timeout or breaks."""
    with mapped_errors(Phase.BODY, str(upstream.url.origin()), timeouts):
        async with asyncio.timeout(timeouts.idle):
            return await upstream.content.readany()
