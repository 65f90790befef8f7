"""The upstream connection: sending a request, reading its body, and every way that fails.

Every network error from the upstream is mapped here and nowhere else (`mapped_errors`, by the
rules of `_failure` and the table `_UNREACHABLE`), into an `UpstreamFailure`: the status the
agent gets back and how the request ends (`Outcome`, its error's `code`). Before the response
headers arrive the failure becomes a proxy-made error in OpenAI's shape; after, the relay cuts
the stream (see `forward.relay`). Messages name the upstream as its team's `UpstreamNamed`
says (without teams its address and the setting that chose it; with teams only the team's, since
its agents may sit outside the network the upstream is in). The origin always goes to the log,
through the failure's `event`, which whoever handles the failure adds to the request's record.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import ssl
from collections.abc import Iterator

import aiohttp
from multidict import CIMultiDict
from yarl import URL

from proxy.http.observe.outcome import Outcome
from proxy.http.observe.record import UpstreamFailed
from proxy.http.runtime.tenancy import Timeouts, UpstreamNamed

__all__ = [
    "Cause",
    "Phase",
    "UpstreamFailure",
    "mapped_errors",
    "next_chunk",
    "open_upstream",
]

_NO_AUTO_HEADERS = ("Accept", "Accept-Encoding", "User-Agent", "Content-Type")


class Phase(enum.Enum):
    """Where in the exchange a failure happened."""

    HEADERS = "headers"
    """Connecting, sending, waiting for the status line and headers."""
    BODY = "body"
    """Reading the response body."""


class Cause(enum.Enum):
    """Which kind of failure it was, named in the agent's error body (`error.cause`) and the log."""

    REFUSED = "refused"
    TLS = "tls"
    DNS = "dns"
    TIMEOUT = "timeout"
    RESET = "reset"
    OTHER = "other"


class UpstreamFailure(Exception):
    """The upstream could not be reached, did not answer in time, or broke off."""

    def __init__(self, status: int, outcome: Outcome, message: str, cause: Cause = Cause.OTHER) -> None:
        super().__init__(message)
        self.status = status
        self.outcome = outcome
        self.message = message
        self.cause = cause
        self.origin = ""
        self.error = ""
        """The upstream's origin and the client error, for the log (never for the agent)."""

    @property
    def code(self) -> str:
        """The agent's `error.code`: how the request ended."""
        return self.outcome.value

    def event(self, answered: bool = False) -> UpstreamFailed:
        """The failure as the request's record keeps it (`answered`: the agent gets the error)."""
        return UpstreamFailed(self.outcome, self.cause.value, self.origin, self.error, answered)


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    """`exc` is a `kind`, or wraps one (aiohttp keeps the OS error as `os_error` or the cause)."""
    seen = (exc, getattr(exc, "os_error", None), exc.__cause__, exc.__context__)
    return any(isinstance(e, kind) for e in seen)


_UNREACHABLE: tuple[tuple[type[BaseException], Cause, str], ...] = (
    (
        aiohttp.ClientConnectorCertificateError,
        Cause.TLS,
        "TLS: its certificate was not accepted (not signed by a CA this proxy trusts, expired, or "
        "not for its name; for a private CA set SSL_CERT_FILE)",
    ),
    (
        aiohttp.ClientSSLError,
        Cause.TLS,
        "TLS: the handshake failed (an https:// URL for a plain-HTTP server, or a client "
        "certificate it wants: upstream.client_cert)",
    ),
    (ssl.SSLError, Cause.TLS, "TLS: it refused the connection (a client certificate it wants: upstream.client_cert?)"),
    (aiohttp.ClientConnectorDNSError, Cause.DNS, "DNS: its host name does not resolve"),
    (ConnectionRefusedError, Cause.REFUSED, "connection refused: nothing listens on its port"),
    (aiohttp.ServerDisconnectedError, Cause.RESET, "the connection was closed before it answered"),
    (ConnectionResetError, Cause.RESET, "the connection was reset before it answered"),
)
"""Client errors before the headers, first match wins: the cause each is and what the agent is
told (after the upstream's name, before the setting that chose it)."""


_RESET_OVER_TLS = (
    "; over TLS, often a server refusing a connection without the client certificate it requires (upstream.client_cert)"
)
"""A server that requires a client certificate may just cut the connection (so do Python's and
aiohttp's): a reset is all the proxy sees, so it says what it may mean."""


def _failure(
    phase: Phase, exc: BaseException, timeouts: Timeouts, named: UpstreamNamed, secure: bool = False
) -> UpstreamFailure:
    """The failure an upstream error is, by these rules:

    1. No TCP connection within the connect timeout: 504 `upstream_connect_timeout`.
    2. A timeout before the headers: 504 `upstream_timeout` (first-byte timeout).
    3. A timeout while reading the body: 504 `upstream_idle_timeout` (idle gap between chunks).
    4. Any other client error before the headers: 502 `upstream_unreachable`, its cause the
       first row of `_UNREACHABLE` it matches (refused, TLS, DNS, reset), else `other`; a reset
       of an https upstream (`secure`) says it may be a client certificate it requires.
    5. Any other client error while reading the body: 502 `upstream_broke`.

    Before the headers, the message names the upstream and says where it is set (`named`).
    """
    setting = f" {named.setting}" if named.setting else ""
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        message = f"no connection to {named.name} within {timeouts.connect:g}s (upstream.connect_timeout).{setting}"
        return UpstreamFailure(504, Outcome.UPSTREAM_CONNECT_TIMEOUT, message, Cause.TIMEOUT)
    if isinstance(exc, TimeoutError) and phase is Phase.HEADERS:
        message = f"{named.name} sent no response within {timeouts.first_byte:g}s (upstream.first_byte_timeout)"
        return UpstreamFailure(504, Outcome.UPSTREAM_TIMEOUT, message, Cause.TIMEOUT)
    if isinstance(exc, TimeoutError):
        message = f"the upstream sent nothing for {timeouts.idle:g}s"
        return UpstreamFailure(504, Outcome.UPSTREAM_IDLE, message, Cause.TIMEOUT)
    if phase is Phase.HEADERS:
        for kind, cause, why in _UNREACHABLE:
            if _caused_by(exc, kind):
                hint = _RESET_OVER_TLS if cause is Cause.RESET and secure else ""
                message = f"{named.name} is unreachable: {why}{hint}.{setting}"
                return UpstreamFailure(502, Outcome.UPSTREAM_UNREACHABLE, message, cause)
        return UpstreamFailure(502, Outcome.UPSTREAM_UNREACHABLE, f"{named.name} is unreachable.{setting}")
    return UpstreamFailure(502, Outcome.UPSTREAM_BROKE, "the upstream's reply broke off")


@contextlib.contextmanager
def mapped_errors(phase: Phase, origin: str, timeouts: Timeouts, named: UpstreamNamed) -> Iterator[None]:
    """Every aiohttp and timeout error inside the block, as an `UpstreamFailure` (with the origin)."""
    try:
        yield
    except (TimeoutError, aiohttp.ClientError) as exc:
        failure = _failure(phase, exc, timeouts, named, origin.startswith("https:"))
        failure.origin, failure.error = origin, str(exc) or type(exc).__name__
        raise failure from None


async def open_upstream(
    session: aiohttp.ClientSession,
    method: str,
    url: URL,
    headers: CIMultiDict[str],
    body: bytes,
    timeouts: Timeouts,
    tls: ssl.SSLContext | None,
    named: UpstreamNamed,
) -> aiohttp.ClientResponse:
    """Send the request (over `tls` to an https upstream); return once the upstream's status and
    headers have arrived (a failure names the upstream as `named` says)."""
    timeout = aiohttp.ClientTimeout(total=None, connect=timeouts.connect, sock_connect=timeouts.connect, sock_read=None)
    request = session.request(
        method,
        url,
        headers=headers,
        data=body if body else None,
        timeout=timeout,
        allow_redirects=False,
        skip_auto_headers=_NO_AUTO_HEADERS,
        ssl=True if tls is None else tls,
    )
    with mapped_errors(Phase.HEADERS, str(url.origin()), timeouts, named):
        return await asyncio.wait_for(request, timeouts.first_byte)


async def next_chunk(upstream: aiohttp.ClientResponse, timeouts: Timeouts) -> bytes:
    """The next piece of the body as it arrives (b"" at the end); `UpstreamFailure` when it stalls
    longer than the idle timeout or breaks."""
    with mapped_errors(Phase.BODY, str(upstream.url.origin()), timeouts, UpstreamNamed()):
        async with asyncio.timeout(timeouts.idle):
            return await upstream.content.readany()
