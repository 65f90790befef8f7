"""The agent's stream, opened before the reply stage has decided: while all that can still be
gated of a streamed reply is a call or its end (`Hold.TEXT_AHEAD`), its text goes to the agent as
it comes, whole events at a time, and whatever the stage delivers in the end goes out on the same
stream:

    the first reply passes      the rest of it, as it came
    a later reply is given      its stream written as the rest of the first (`Dialect.continued`)
    the upstream breaks off     the agent's connection is cut (never a "complete" stream short)

The response's status and headers leave with the first text, marked as the request's record
stands then, so a gate's outcome and retries, decided later, reach the request log and the
metrics but not `X-Repair-Outcome`.
"""

from __future__ import annotations

import aiohttp
from aiohttp import web

from proxy.dialects import Dialect
from proxy.http.runtime.appkeys import RECORD
from proxy.http.upstream.forward import cut_agent, hop_free, rewritten_headers

__all__ = ["Ahead", "ClientGone"]


class ClientGone(Exception):
    """The agent went away while its stream was open (`response`)."""

    def __init__(self, response: web.StreamResponse) -> None:
        super().__init__("the agent went away")
        self.response = response


class Ahead:
    """One agent request's stream, opened at the first text that may go ahead of the reply's end."""

    def __init__(self, request: web.Request, dialect: Dialect) -> None:
        self._request = request
        self._dialect = dialect
        self._sent = bytearray()
        self.response: web.StreamResponse | None = None
        self.opened = False
        """Text went ahead: the agent's stream is open (`response`)."""

    async def send(self, upstream: aiohttp.ClientResponse, held: list[bytes]) -> list[bytes]:
        """Send what of `held` (read from `upstream`) is whole events of the reply's text; the
        rest (half an event, a call, the reply's end) stays held. `ClientGone`: the agent went away."""
        joined = b"".join(held)
        whole = self._dialect.ahead(joined)
        if not whole:
            return held
        if self.response is None:
            record = self._request[RECORD]
            headers = rewritten_headers(hop_free(upstream.headers), record, streamed=True)
            self.response = web.StreamResponse(status=upstream.status, headers=headers)
            self.opened = True
        try:
            if not self.response.prepared:
                await self.response.prepare(self._request)
            await self.response.write(joined[:whole])
        except ConnectionResetError as gone:
            upstream.close()  # it stops generating
            raise ClientGone(self.response) from gone
        self._sent += joined[:whole]
        return [joined[whole:]] if whole < len(joined) else []

    async def finish(self, rest: bytes, later: bool) -> web.StreamResponse:
        """End the stream with the rest of the first reply, or with a `later` reply's stream
        written as its rest (then the agent has its reply whole: `Record.delivered`). An agent
        gone by then is left gone."""
        assert self.response is not None
        try:
            await self.response.write(self._dialect.continued(bytes(self._sent), rest) if later else rest)
            self._request[RECORD].delivered = self.response.status
            await self.response.write_eof()
        except ConnectionResetError:
            pass
        return self.response

    def cut(self) -> web.StreamResponse:
        """The upstream broke off after text went out: the agent sees a cut stream."""
        assert self.response is not None
        cut_agent(self._request)
        return self.response
