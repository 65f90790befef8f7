"""Whether an upstream answers: asked once at start (a warning naming it when it does not; the proxy
starts anyway) and at every `/readyz`.

It answers when its models endpoint (`{base}/models`) answers with any status below 500 but 404:
a 401 only means it wants a key; a 404 there means the base URL is no OpenAI-compatible one
(often: `/v1` left out). A network error is read by `network.mapped_errors`, as a request's would
be: what is said names the upstream and the setting that chose it (`UpstreamNamed`), never
aiohttp's own text (`ssl:<ssl.SSLContext object at 0x...>`).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

import aiohttp

from proxy.http.runtime.tenancy import Timeouts, UpstreamNamed
from proxy.http.upstream.forward import target_url
from proxy.http.upstream.network import Cause, Phase, UpstreamFailure, mapped_errors

__all__ = ["PROBE_AGENT", "PROBE_SECONDS", "Probed", "probe"]

PROBE_SECONDS = 5.0
"""The longest a probe waits for an answer (less when `upstream.connect_timeout` is shorter)."""
PROBE_AGENT = "repair-proxy (upstream probe)"
"""The probe's `User-Agent`: the upstream's log says who asks."""


@dataclass(frozen=True, slots=True)
class Probed:
    """What a probe of `upstream` (its base URL) saw."""

    upstream: str
    answers: bool
    status: int | None = None
    """The models endpoint's status, when it answered at all."""
    error: str = ""
    """Why it does not answer (or what its answer means), in the proxy's words."""
    cause: str | None = None
    """Why it could not be reached (`network.Cause`), when it could not."""

    def detail(self) -> dict[str, object]:
        """As `/readyz` shows it."""
        shown: dict[str, object] = {"upstream": self.upstream}
        if self.status is not None:
            shown["upstream_status"] = self.status
        if self.error:
            shown["error"] = self.error
        if self.cause is not None:
            shown["cause"] = self.cause
        return shown


async def probe(
    session: aiohttp.ClientSession, base_url: str, named: UpstreamNamed, tls: ssl.SSLContext, connect_timeout: float
) -> Probed:
    """Ask `base_url`'s models endpoint once (over `tls` when https)."""
    url = target_url(base_url, "models", "")
    seconds = min(PROBE_SECONDS, connect_timeout * 2)
    setting = f" {named.setting}" if named.setting else ""
    try:
        with mapped_errors(
            Phase.HEADERS, str(url.origin()), Timeouts(min(connect_timeout, seconds), seconds, seconds), named
        ):
            async with session.get(
                url, headers={"User-Agent": PROBE_AGENT}, timeout=aiohttp.ClientTimeout(total=seconds), ssl=tls
            ) as response:
                status = response.status
    except UpstreamFailure as failure:
        error = failure.message
        if failure.cause is Cause.TIMEOUT:
            error = f"{named.name} did not answer {url} within {seconds:g}s.{setting}"
        return Probed(base_url, False, error=error, cause=failure.cause.value)
    if status == 404:
        return Probed(
            base_url, False, status, f"{url} answered 404: is the upstream base URL missing its /v1?{setting}"
        )
    if status >= 500:
        return Probed(base_url, False, status, f"{named.name} answered {status} at {url}")
    return Probed(base_url, True, status)
