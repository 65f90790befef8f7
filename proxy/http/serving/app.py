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
    CATCH_UPS,
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
from proxy.http.runtime.catchup import CatchUps
from proxy.http.runtime.rundir import Worker, started
from proxy.http.runtime.stalls import Watch, look
from proxy.http.runtime.tenancy import Runtime, upstream_named
from proxy.http.serving.reload import Reloader
from proxy.http.serving.routes import add_routes
from proxy.http.serving.workers import watch_supervisor
from proxy.http.upstream.probe import probe
from proxy.http.upstream.replies import openai_error
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
        if status < 400:
            raise
        return refused(request, exc)
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


ROUTED = "the OpenAI API under /v1/, Ollama's under /api/, and /healthz, /readyz, /metrics, /status"
"""What this proxy answers (an unknown path's 404 says so)."""


def refused(request: web.Request, exc: web.HTTPException) -> web.Response:
    """An error aiohttp itself would answer in plain text (no route: 404; a method the route does
    not take: 405, its `Allow` header kept), in OpenAI's shape like every error of the proxy's own."""
    said = f"{request.method} {request.path}"
    if exc.status == 404:
        message, code = f"no route for {said}: this proxy serves {ROUTED}", "not_found"
    elif exc.status == 405:
        message, code = (
            f"{said} is not allowed here (allowed: {exc.headers.get('Allow', 'none')})",
            "method_not_allowed",
        )
    else:
        message, code = f"{said}: {exc.reason}", exc.reason.lower().replace(" ", "_")
    response = openai_error(exc.status, message, code=code, kind="invalid_request_error")
    if "Allow" in exc.headers:
        response.headers["Allow"] = exc.headers["Allow"]
    return response


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


async def _ready(app: web.Application) -> AsyncIterator[None]:
    """What the first analysis would otherwise build on the event loop, built before the app takes
    traffic: the tokenizer (0.2-0.5 s; see `TokenCounter`), whether repair is on or not (a reload
    may turn it on; its memory is charged to `store.state_cache_bytes` either way). In a thread,
    and before the loop's watch starts: its native part holds the interpreter (a 250 ms stall
    was logged at start with two workers when the watch already ran)."""
    await asyncio.to_thread(app[RUNTIME].current.shared.tokens.warm)
    yield


async def _said_at_start(app: web.Application) -> None:
    """Each upstream asked once (`upstream.probe`): one that does not answer is a warning naming it
    and the setting that chose it; the proxy serves anyway (a model server may still be starting)."""
    runtime = app[RUNTIME].current
    base, server = runtime.settings.upstream.base_url, upstream_named(runtime.settings)  # the log is the operator's
    upstreams = {team.upstream: server if team.upstream == base else team.named for team in runtime.teams.values()}
    for base_url, named in upstreams.items():
        seen = await probe(app[SESSION], base_url, named, runtime.tls, runtime.settings.upstream.connect_timeout)
        if seen.answers:
            log.info("upstream_answers", upstream=base_url, status=seen.status)
        else:
            log.warning("upstream_not_answering", **seen.detail())


async def _first_probe(app: web.Application) -> AsyncIterator[None]:
    """The upstreams asked while the app starts to serve (by one worker of a set: the first)."""
    async with running(_said_at_start(app)):
        yield


async def _catch_ups(app: web.Application) -> AsyncIterator[None]:
    """Conversations read beside the traffic (`runtime.catchup`): those under way cancelled as the app stops."""
    try:
        yield
    finally:
        await app[CATCH_UPS].close()


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
    probe_at_start: bool = False,
) -> web.Application:
    """The proxy application on `runtime`; with a `reloader`, SIGHUP reloads config and policies;
    `worker` says which of several workers this one is. Traces are on when the `OTEL_*`
    variables of `environ` (the process's, by default) ask for them (`tracing`); `ConfigError`
    when they ask for what cannot be. `probe_at_start` (what `serve` asks): the upstreams are
    asked once as it starts, by the first worker of a set (`upstream.probe`), a warning for one
    that does not answer."""
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
    app[CATCH_UPS] = CatchUps(busy=app[STALLS].busy, paused=app[GC].paused)
    if tracer is not None:
        app[TRACING] = tracer
        app.cleanup_ctx.append(_tracing)
    app.cleanup_ctx.append(_ready)
    app.cleanup_ctx.append(_gc_accounting)
    app.cleanup_ctx.append(_stalls)
    app.cleanup_ctx.append(_catch_ups)
    app.cleanup_ctx.append(_client_session)
    if probe_at_start and worker.index in (None, 0):
        app.cleanup_ctx.append(_first_probe)
    app.cleanup_ctx.append(_stores)
    if worker.index is not None:
        app.cleanup_ctx.append(watch_supervisor)
    if reloader is not None:
        app.on_startup.append(reloader.install)
    add_routes(app)
    return app
