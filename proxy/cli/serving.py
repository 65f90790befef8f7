"""Serving: one worker process (bind, log that it listens, serve until SIGTERM), alone or one of
the set a supervisor runs (`proxy.cli.supervisor`).
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import platform
import signal
import socket
import time
from collections.abc import Callable
from typing import Any

import structlog
from aiohttp import web

from proxy.cli.sockets import bind, bind_unix
from proxy.http.runtime.background import running
from proxy.http.runtime.rundir import Worker
from proxy.http.serving.app import server_options
from proxy.http.serving.drain import Drain
from proxy.settings.config import Settings

__all__ = ["DUPLICATE_SIGNAL_SECONDS", "keep_freed_memory", "one_malloc_arena", "release_free_memory", "run_worker"]

log = structlog.get_logger("repair_proxy")
_M_ARENA_MAX = -8  # glibc's malloc.h
YOUNG_COLLECTION = 10_000
"""Allocations (net of frees) between two collections of the young generation, in place of Python's
700. A request's parse lives until its reply is sent and is made of containers (about 920 at 600
messages, 760 KB): with 700, a young collection fell inside nearly every parse and analysis, walked
the parse and promoted it, and the older generations were then walked over it too. Measured with
`bench/turn_cost.py` at 600 messages: 0.36 ms of the collector's CPU per request, 0.1 ms with this
bound. Cyclic garbage waits at most this many allocations longer to be found."""


def _glibc(name: str) -> Any | None:
    """glibc's function `name` in this process, or None where malloc is not glibc's."""
    if platform.libc_ver()[0] != "glibc":
        return None
    try:
        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None


def one_malloc_arena() -> bool:
    """Every thread of this process allocates from glibc's main arena (False where malloc is
    not glibc's).

    Large bodies are analysed in worker threads, and glibc gives a thread its own arena: the
    memory freed there after a 546 KB body stays in that arena, apart from the main one.
    Measured (`bench/soak.py --part memory`, 10,000 conversations of 1,000 turns, 64 MB bound):
    RSS 165 MB, then jumps to 174-196 MB from the 3,000th conversation on; with one arena it
    stays at 164-165 MB. Threads here take turns on the interpreter anyway, so sharing the
    arena costs no parallelism; requests small enough to be analysed on the event loop never
    leave its thread."""
    mallopt = _glibc("mallopt")
    return mallopt is not None and bool(mallopt(_M_ARENA_MAX, 1))


_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_BYTES = 32 * 1024 * 1024
"""Allocations at least this large are mapped from the system and unmapped when freed (glibc's
ceiling for the threshold it otherwise moves by itself); smaller ones come from the heap."""
TRIM_BYTES = 2 * MMAP_BYTES
"""Free memory at the heap's top is given back to the system past this (glibc's own ratio)."""


def keep_freed_memory() -> bool:
    """glibc's thresholds fixed at their ceiling (`MMAP_BYTES`, `TRIM_BYTES`): memory freed after
    a request is kept for the next instead of given back (False where malloc is not glibc's).

    Left to itself glibc starts low (128 KB, trim 256 KB) and raises them only after freeing a
    mapped block, so a body and the copies made of it (joined from its chunks, joined again to
    be sent) were given back at the end of every request and faulted in again at the next, at
    about 1 us a page: measured with bench/turn_cost.py at 600 messages (760 KB), about 470 page
    faults per forwarded request (repair off). What is kept is what the largest requests lately
    needed at once; `release_free_memory` still gives it back when the working charge falls."""
    mallopt = _glibc("mallopt")
    return (
        mallopt is not None
        and bool(mallopt(_M_MMAP_THRESHOLD, MMAP_BYTES))
        and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_BYTES))
    )


def release_free_memory() -> bool:
    """Give what glibc's allocator holds free back to the system (`malloc_trim(0)`; False where
    malloc is not glibc's). Called when the working-memory charge falls (`http.footprint`):
    rarely, as it costs about 0.4 ms after a 546 KB body, more after larger ones."""
    malloc_trim = _glibc("malloc_trim")
    return malloc_trim is not None and bool(malloc_trim(0))


def run_worker(app: web.Application, settings: Settings, worker: Worker) -> None:
    """Bind, log `listening`, serve until SIGTERM or SIGINT (in-flight requests get the drain time).
    One of several workers shares the port and also listens on its own socket (see `proxy.http.runtime.rundir`)."""
    sock = bind(settings.server.host, settings.server.port, reuse_port=worker.index is not None)
    # its own socket bound too before it says it listens: a sibling may ask it at once
    socks = [sock] if worker.socket is None else [sock, bind_unix(worker.socket)]
    one_malloc_arena()  # before any thread of this process allocates
    keep_freed_memory()
    # What exists now (modules, classes, functions, the compiled policies: about 35,000 objects)
    # lives as long as the process: out of the collector's full walks, which otherwise pass over
    # it every time (measured: full collections of 18-37 ms over 76,000 tracked objects).
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION, *gc.get_threshold()[1:])
    if worker.index is not None:
        structlog.contextvars.bind_contextvars(worker=worker.index)  # on every log line of this process
    worker.listening()
    log.info(
        "listening",
        host=settings.server.host,
        port=sock.getsockname()[1],
        upstream=settings.upstream.base_url,
        repair=settings.repair.enabled,
    )
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    stop = _Stop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop, signum)
    try:
        loop.run_until_complete(_serve(app, socks, settings, stop.asked))
    finally:  # asked again while draining (GracefulExit, exit 1): what still runs is cut short
        tasks = asyncio.all_tasks(loop)
        for task in tasks:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


async def _serve(app: web.Application, socks: list[socket.socket], settings: Settings, asked: asyncio.Event) -> None:
    """Serve on `socks` until `asked`, then drain (`proxy.http.serving.drain`): the listeners close, each
    connection is served or refused at once, and the requests in flight get the drain time (swept
    meanwhile: a connection that comes to wait with nothing to serve is reset, never left open)."""
    drain_timeout = settings.server.drain_timeout
    options = server_options(settings)
    runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=drain_timeout, **options)
    await runner.setup()
    assert runner.server is not None  # set up
    drain = Drain(runner.server)
    try:
        for sock in socks:
            await web.SockSite(runner, sock).start()
        await asked.wait()
        await drain.begin(runner)
    finally:
        async with running(drain.sweep()):  # what comes to wait with nothing to serve is reset
            await runner.cleanup()


DUPLICATE_SIGNAL_SECONDS = 1.0
"""A second SIGTERM or SIGINT this soon after the first is the same stop delivered twice (see
`_Stop`) and is ignored; a later one stops the worker at once, as a second Ctrl-C does."""


class _Stop:
    """The first SIGTERM or SIGINT stops the worker (`asked`: in-flight requests get the drain time).
    Under systemd (`KillMode=control-group`) or a Ctrl-C in a terminal every process of the set
    gets the signal, and the supervisor passes it on as well: with aiohttp's own handlers that
    second delivery, arriving mid-drain, ended the worker at once (exit 1, streams cut). So one
    within `DUPLICATE_SIGNAL_SECONDS` is logged and ignored; one after it is someone asking
    again, and the worker stops without waiting (exit 1). The supervisor kills a worker still
    running past the drain time either way."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._first: float | None = None
        self.asked = asyncio.Event()

    def __call__(self, signum: int) -> None:
        now = self._clock()
        if self._first is not None and now - self._first < DUPLICATE_SIGNAL_SECONDS:
            log.info("signal_ignored", signal=signal.Signals(signum).name, reason="already stopping")
            return
        if self._first is not None:
            log.warning("stopping_now", signal=signal.Signals(signum).name, reason="asked again while draining")
            raise web.GracefulExit
        self._first = now
        self.asked.set()
