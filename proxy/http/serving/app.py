"""The HTTP layer: the application, its typed keys, its one client session, its middleware."""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import aiohttp
import structlog
from aiohttp import web

from proxy.engine.state.budget import GcAccounting
from proxy.http.observe.attempts import upstream_trace
from proxy.http.observe.metrics import Metrics
from proxy.http.observe.observer import CLIENT_CLOSED_REQUEST, observe
from proxy.http.observe.outcome import Outcome
from proxy.http.observe.record import CURRENT, Record
from proxy.http.observe.tracing import OPERATIONS, TRACING, tracing_from_env
from proxy.http.runtime.appkeys import (
    GC,
    METRICS,
    RECORD,
    RUNTIME,
    SESSION,
    STALLS,
    STORES,
    WORKER,
    RuntimeHolder,
    Stores,
)
from proxy.http.runtime.background import running
from proxy.http.runtime.rundir import Worker, started
from proxy.http.runtime.stalls import Watch, look
from proxy.http.runtime.tenancy import Runtime
from proxy.http.serving.reload import Reloader
from proxy.http.serving.routes import add_routes
from proxy.http.serving.workers import watch_supervisor
from proxy.settings.config import Settings
from proxy.store import backend_of, open_store
from proxy.store.health import StoreHealth, WatchedStore

__all__ = ["CLIENT_CLOSED_REQUEST", "WORKER_HEADER", "make_app", "server_options"]

WORKER_HEADER = "X-Repair-Worker"
"""With several workers, which one answered (its index)."""

log = structlog.get_logger("repair_proxy")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_CARRIED = ("traceparent", "tracestate")
"""The agent's trace context, kept for the request's span."""


@web.middleware
async def observed(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every request recorded as it goes (`observe.record`) and, once it is over, observed: its
    log lines, its metrics, its span (`observe.observer`). While it is in flight, the steps its
    record says held the event loop are looked at (`runtime.stalls`)."""
    operation = OPERATIONS.get(request.path.rstrip("/")) if request.method == "POST" else None
    carrier = {}
    for name in _CARRIED:
        if name in request.headers:
            carrier[name] = request.headers[name]
    record = Record(request.method, request.path, operation, carrier)
    request[RECORD] = record
    token = CURRENT.set(record)
    status = 500
    try:
        with request.app[STALLS].flying(record):
            response = await handler(request)
        status = response.status
        worker = request.app[WORKER]
        if worker.index is not None and not response.prepared:
            response.headers[WORKER_HEADER] = str(worker.index)
        return response
    except web.HTTPException as exc:
        status = exc.status
        raise
    except (asyncio.CancelledError, ConnectionResetError):
        if record.delivered is None:
            record.end(Outcome.CLIENT_GONE)
        else:  # it had its reply whole: what the proxy still did after that is no part of it
            status = record.delivered
        raise
    except BaseException:
        record.end(Outcome.ERROR)
        raise
    finally:
        CURRENT.reset(token)
        log_prompts = request.app[RUNTIME].current.settings.logging.log_prompts
        observe(record, status, request.app[METRICS], request.app.get(TRACING), log_prompts)


async def _client_session(app: web.Application) -> AsyncIterator[None]:
    settings = app[RUNTIME].current.settings
    connector = aiohttp.TCPConnector(limit=settings.upstream.max_connections)
    async with aiohttp.ClientSession(
        connector=connector,
        auto_decompress=False,
        timeout=aiohttp.ClientTimeout(total=None),
        raise_for_status=False,
        trace_configs=[upstream_trace()],
    ) as session:
        app[SESSION] = session
        yield


async def _tracing(app: web.Application) -> AsyncIterator[None]:
    """Spans still batched are exported when the app stops (off the event loop: it blocks)."""
    yield
    await asyncio.to_thread(app[TRACING].shutdown)


async def _stalls(app: web.Application) -> AsyncIterator[None]:
    """The event loop's lag, looked at while the app runs (`runtime.stalls`)."""
    async with running(look(app[STALLS], app[METRICS])):
        yield


async def _ready(app: web.Application) -> None:
    """What the first analysis would otherwise build on the event loop, built before the app takes
    traffic, in a thread: the tokenizer (0.2-0.5 s; see `TokenCounter`). With repair off there is
    nothing to count; a reload that turns it on builds it in the reload's thread (`serving.reload`)."""
    runtime = app[RUNTIME].current
    if runtime.settings.repair.enabled:
        await asyncio.to_thread(runtime.shared.tokens.warm)


async def _gc_accounting(app: web.Application) -> AsyncIterator[None]:
    app[GC].install()
    try:
        yield
    finally:
        app[GC].uninstall()


async def _stores(app: web.Application) -> AsyncIterator[None]:
    location = app[RUNTIME].current.settings.store.verdicts
    opened = open_store(os.path.expanduser(location)) if location else None
    metrics = app[METRICS]
    health = StoreHealth(backend_of(location))
    verdicts = None if opened is None else WatchedStore(opened, health, lambda h: _store_changed(h, metrics))
    metrics.store_up.set(1)
    app[STORES].verdicts, app[STORES].health = verdicts, health
    try:
        yield
    finally:
        if verdicts is not None:
            await verdicts.close()


def _store_changed(health: StoreHealth, metrics: Metrics) -> None:
    """The verdict store began failing (requests go on without memory) or recovered: said once each way."""
    metrics.store_up.set(0 if health.error else 1)
    if health.error:
        log.warning("store_failing", backend=health.backend, error=health.error)
    else:
        log.info("store_recovered", backend=health.backend)


def server_options(settings: Settings) -> dict[str, Any]:
    """How the server treats its clients (for `web.run_app` and test servers alike).

    A connection still waiting for a complete request when `server.header_timeout` passes,
    on arrival or between kept-alive requests, is closed: a slow client cannot hold it. A
    client that goes away cancels its handler, which closes the upstream response.
    """
    return {"keepalive_timeout": settings.server.header_timeout, "handler_cancellation": True}


def make_app(
    runtime: Runtime,
    reloader: Reloader | None = None,
    worker: Worker | None = None,
    environ: Mapping[str, str] | None = None,
) -> web.Application:
    """The proxy application on `runtime`; with a `reloader`, SIGHUP reloads config and policies;
    `worker` says which of several workers this one is. Traces are on when the `OTEL_*`
    variables of `environ` (the process's, by default) ask for them (`tracing`); `ConfigError`
    when they ask for what cannot be."""
    tracer = tracing_from_env(os.environ if environ is None else environ)
    settings = runtime.settings
    app = web.Application(middlewares=[observed], client_max_size=settings.limits.max_body_bytes)
    app[RUNTIME] = RuntimeHolder(runtime)
    app[STORES] = Stores()
    worker = worker or Worker()
    app[WORKER] = worker
    run_dir = worker.run_dir
    app[METRICS] = Metrics(worker.metrics_dir, None if run_dir is None else functools.partial(started, run_dir))
    app[GC] = GcAccounting()
    app[STALLS] = Watch()
    if tracer is not None:
        app[TRACING] = tracer
        app.cleanup_ctx.append(_tracing)
    app.cleanup_ctx.append(_gc_accounting)
    app.cleanup_ctx.append(_stalls)
    app.cleanup_ctx.append(_client_session)
    app.cleanup_ctx.append(_stores)
    if worker.index is not None:
        app.cleanup_ctx.append(watch_supervisor)
    app.on_startup.append(_ready)
    if reloader is not None:
        app.on_startup.append(reloader.install)
    add_routes(app)
    return app
