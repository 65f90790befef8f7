"""The drain on SIGTERM serves or refuses every connection at once, whenever it came (issue #52:
a request sent on a connection accepted as SIGTERM came was neither read nor refused until the
drain ended). The worker's own serving (`proxy.cli.serving._serve`) runs here in the test's loop,
on a socket on 127.0.0.1, in front of an upstream streaming slowly; `asked` stands for SIGTERM.
Nothing is timed: what is checked is the order of things (refused while a stream still runs)."""

from __future__ import annotations

import asyncio
import errno
import socket
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from support import Upstream, sse_reply

from proxy.cli.serving import _serve
from proxy.cli.sockets import bind
from proxy.http.runtime.background import running
from proxy.http.runtime.tenancy import build_runtime
from proxy.http.serving.app import make_app
from proxy.http.serving.drain import Drain
from proxy.settings.config import load_settings

CHUNKS = [b'data: {"choices":[{"index":0,"delta":{"content":"piece"}}]}\n\n'] * 8 + [b"data: [DONE]\n\n"]
GAP = 0.25


@pytest.fixture
async def serving(upstream: Upstream) -> AsyncIterator[tuple[int, asyncio.Event, asyncio.Task[None]]]:
    """A worker serving on a port of its own until `asked`; awaited (or cancelled) at the end."""
    upstream.reply_with(sse_reply(CHUNKS, gap=GAP))
    settings = load_settings(None, overrides={"upstream": {"base_url": upstream.base_url}, "store": {"verdicts": ""}})
    sock = bind("127.0.0.1", 0, reuse_port=False)
    asked = asyncio.Event()
    served = asyncio.create_task(_serve(make_app(build_runtime(settings)), [sock], settings, asked))
    port = sock.getsockname()[1]
    for _ in range(100):  # until it answers, 10 s at most
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            break
        except OSError:
            await asyncio.sleep(0.1)
    yield port, asked, served
    asked.set()
    await asyncio.wait_for(served, 30)


async def _stream(port: int) -> bytes:
    body = orjson.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]})
    async with (
        aiohttp.ClientSession() as client,
        client.post(f"http://127.0.0.1:{port}/v1/chat/completions", data=body) as response,
    ):
        return await response.read()


async def _refused(port: int) -> None:
    """Until a new connection to the port is refused (the listener closed), polled every 20 ms."""
    while True:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
        except ConnectionRefusedError:
            return
        await asyncio.sleep(0.02)


async def _reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
    """The server reset the connection (a request sent on it then is refused, not left unread);
    False when it answered or ended it (FIN)."""
    try:
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        await writer.drain()
        await reader.read(1024)
    except ConnectionResetError:  # the socket's (ECONNRESET), or asyncio's once it saw it
        return True
    except OSError as exc:
        return exc.errno == errno.ECONNRESET
    finally:
        writer.close()
    return False


async def test_an_idle_connection_is_reset_at_once_and_a_request_in_flight_is_served_in_full(
    serving: tuple[int, asyncio.Event, asyncio.Task[None]],
) -> None:
    port, asked, served = serving
    idle = await asyncio.open_connection("127.0.0.1", port)  # accepted, nothing sent yet
    stream = asyncio.create_task(_stream(port))
    await asyncio.sleep(3 * GAP)  # the stream under way
    asked.set()
    await asyncio.wait_for(_refused(port), 10)  # the drain has begun
    assert await asyncio.wait_for(_reset(*idle), 10)
    assert not stream.done()  # refused while the stream still ran
    assert await asyncio.wait_for(stream, 30) == b"".join(CHUNKS)
    await asyncio.wait_for(served, 30)  # and the drain ended with it


@pytest.fixture
async def bare() -> AsyncIterator[tuple[web.AppRunner, Drain]]:
    """A runner of a one-route app with a `Drain` on its server, and no site yet; cleaned up after."""

    async def hello(_request: web.Request) -> web.Response:
        return web.Response(text="served")

    app = web.Application()
    app.router.add_get("/healthz", hello)
    runner = web.AppRunner(app)
    await runner.setup()
    assert runner.server is not None
    try:
        yield runner, Drain(runner.server)
    finally:
        await runner.cleanup()


async def _listening(runner: web.AppRunner) -> int:
    """A site on a port of its own on 127.0.0.1; its port."""
    sock = socket.create_server(("127.0.0.1", 0))
    await web.SockSite(runner, sock).start()
    return int(sock.getsockname()[1])


async def test_a_connection_handed_over_once_the_drain_began_is_reset_as_it_is_handed_over(
    bare: tuple[web.AppRunner, Drain],
) -> None:
    """What asyncio hands to the server a loop turn after accepting it, when the listeners have
    closed meanwhile: a listener opened after the drain began stands for it here."""
    runner, drain = bare
    assert await drain.begin(runner) == 0  # no site, no connection yet
    reader, writer = await asyncio.open_connection("127.0.0.1", await _listening(runner))
    assert await asyncio.wait_for(_reset(reader, writer), 10)


async def test_a_connection_that_comes_to_wait_during_the_drain_is_reset_by_the_sweep(
    bare: tuple[web.AppRunner, Drain],
) -> None:
    """A handler that had not begun to wait for its request when `begin` looked, then marked closing
    by aiohttp's cleanup (`RequestHandler.close` ran before its waiter existed), waits for a request
    it will drop: nothing answers it until the drain ends (`test_signals_under_load`, 3 of 13 runs
    of that file alone). Made here from an idle connection marked closing without a wake-up,
    after `begin`: a request sent on it goes unanswered, and the sweep resets it."""
    runner, drain = bare
    assert runner.server is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", await _listening(runner))
    waiting: list[Any] = []
    for _ in range(500):  # until its handler waits for a request (5 s at most)
        waiting = [h for h in runner.server.connections if getattr(h, "_waiter", None) is not None]
        if waiting:
            break
        await asyncio.sleep(0.01)
    (handler,) = waiting
    drain.begun = True  # `begin` has looked (and closed the listeners) before this one waited
    handler._close = True  # what `close()` leaves when it ran before the handler's waiter existed
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    await writer.drain()
    with pytest.raises(asyncio.TimeoutError):  # dropped: neither answered nor reset
        await asyncio.wait_for(reader.read(1024), 0.3)
    async with running(drain.sweep(every=0.02)):
        assert await asyncio.wait_for(_reset(reader, writer), 10)
