"""The drain on SIGTERM: every connection is served or refused at once, whenever it came.

When the worker is asked to stop, its listeners close (the kernel refuses a new connection, and
resets one still queued in a closing listener), and each connection still open gets one of:

    a request being handled, or read whole and waiting for its handler
                                    served in full (within `server.drain_timeout`), then closed
    nothing, or part of a request   reset at once: the client sees ECONNRESET, as for a connection
                                    the kernel resets; nothing of it was served, it may be sent again
    accepted as the listeners closed, handed to the server after (asyncio hands an accepted
    socket over a loop turn later)  reset at once, as it is handed over

aiohttp's own drain marks every connection closing and then drops what arrives on it, so a
request sent on a connection accepted as SIGTERM came was neither read nor refused: its
connection stayed open until the drain ended (seen once in `tests/integration/
test_signals_under_load.py`: a poll sent right after SIGTERM got no answer in 2 s). The same
happens to a connection whose handler had not yet begun to wait for its request when `begin`
looked: marked closing by aiohttp's cleanup, it then waits for a request it will drop (seen again
there, 3 of 13 runs of that file alone). So while the drain goes on, `sweep` resets
every connection that has come to wait with nothing to serve.

Must never: cut a request whose handler runs or that was read whole before the drain; leave
open, while the drain goes on, a connection with nothing to serve on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from typing import Any

import structlog
from aiohttp import web
from aiohttp.web_protocol import RequestHandler

__all__ = ["SWEEP_SECONDS", "Drain", "idle", "refuse"]

log = structlog.get_logger("repair_proxy")
SWEEP_SECONDS = 0.05
"""How often, while the drain goes on, connections that came to wait with nothing to serve are reset."""
_LINGER_OFF = struct.pack("ii", 1, 0)
"""SO_LINGER on, 0 s: closing the socket resets the connection (RST) instead of ending it (FIN)."""


def idle(handler: RequestHandler) -> bool:
    """The connection waits for a request and has none read whole: aiohttp's own test of an idle
    handler (`RequestHandler._process_keepalive`: its waiter pending), with no request queued.
    A handler whose request is being handled, or was read and waits for its turn, is not idle."""
    waiter = getattr(handler, "_waiter", None)
    queued = getattr(handler, "_messages", ())
    return waiter is not None and not waiter.done() and not queued


def refuse(transport: Any) -> None:
    """Reset the connection at once (RST): the client sees it refused, not answered."""
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):  # a Unix socket may not take it: closed all the same
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_OFF)
    transport.abort()


class Drain:
    """Installed on a runner's server before it serves; `begin` when the worker is asked to stop,
    then the runner's own cleanup waits for the requests in flight."""

    def __init__(self, server: web.Server) -> None:
        self._server = server
        self.begun = False
        handed = server.connection_made

        def connection_made(handler: RequestHandler, transport: asyncio.Transport) -> None:
            handed(handler, transport)
            if self.begun:
                refuse(transport)  # accepted before the listeners closed, handed over after

        server.connection_made = connection_made  # type: ignore[method-assign]

    async def begin(self, runner: web.BaseRunner) -> int:
        """Close the listeners and reset every connection not serving a request; how many were."""
        for site in list(runner.sites):
            await site.stop()
        self.begun = True
        for _ in range(2):  # a handler made just before starts waiting for its request
            await asyncio.sleep(0)
        reset = self._reset_idle()
        log.info("draining", served=len(self._server.connections) - reset, refused=reset)
        return reset

    async def sweep(self, every: float = SWEEP_SECONDS) -> None:
        """While the drain goes on (run beside the runner's cleanup, cancelled when it ends): reset
        each connection that has come to wait for a request since `begin` looked. Nothing before
        `begin`."""
        while True:
            await asyncio.sleep(every)
            if self.begun:
                self._reset_idle()

    def _reset_idle(self) -> int:
        """Reset every connection waiting for a request with none read whole; how many."""
        reset = [handler for handler in self._server.connections if idle(handler)]
        for handler in reset:
            if handler.transport is not None:
                refuse(handler.transport)
        return len(reset)
