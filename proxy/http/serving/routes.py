"""The routes: health, readiness, metrics, and everything under `/v1/` and `/api/` (the pipeline)."""

from __future__ import annotations

from aiohttp import web

from proxy.http.observe.metrics import CONTENT_TYPE_LATEST
from proxy.http.pipeline.pipeline import proxy_v1
from proxy.http.runtime.appkeys import METRICS, RUNTIME, SESSION, STORES, WORKER
from proxy.http.runtime.tenancy import upstream_named
from proxy.http.serving.admin import add_admin_routes
from proxy.http.serving.status import add_status_route
from proxy.http.upstream.probe import probe
from proxy.http.upstream.replies import openai_error

__all__ = ["add_routes"]


async def metrics(request: web.Request) -> web.Response:
    """Prometheus exposition of the app's own registry."""
    return web.Response(body=request.app[METRICS].render(), headers={"Content-Type": CONTENT_TYPE_LATEST})


async def healthz(_request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


READINESS_MODES = ("required", "optional")
"""`/readyz?upstream=...`: whether this replica's readiness includes the upstream (the default),
or only the proxy itself (every worker up): then an upstream that is down leaves the replica in
its Service, and agents get a 502 saying why instead of no answer."""


async def _upstream_detail(request: web.Request) -> tuple[bool, dict[str, object]]:
    """Whether the server's upstream answers (`upstream.probe`), and what was seen."""
    runtime = request.app[RUNTIME].current
    settings = runtime.settings
    named = upstream_named(settings)  # the server's upstream (its address is in the detail anyway)
    seen = await probe(
        request.app[SESSION], settings.upstream.base_url, named, runtime.tls, settings.upstream.connect_timeout
    )
    return seen.answers, seen.detail()


async def readyz(request: web.Request) -> web.Response:
    """Ready when every worker of the set is running and, unless `?upstream=optional`, the upstream
    answers (see `_upstream_detail`); the upstream's state is in the detail either way
    (`upstream_ready`), and so is the verdict store's (`verdict_store`): a failing one leaves the
    proxy ready, requests go on without memory (see `proxy.store.health`)."""
    mode = request.query.get("upstream", "required")
    if mode not in READINESS_MODES:
        message = f"upstream={mode!r}: one of {', '.join(READINESS_MODES)}"
        return openai_error(400, message, code="invalid_readiness_mode", kind="invalid_request_error")
    missing = request.app[WORKER].missing()
    if missing:
        return web.json_response({"status": "unready", "workers_down": missing}, status=503)
    upstream_ready, detail = await _upstream_detail(request)
    ok = upstream_ready or mode == "optional"
    answer = {"status": "ready" if ok else "unready", **detail, "upstream_ready": upstream_ready}
    answer["verdict_store"] = request.app[STORES].health.detail()
    return web.json_response(answer, status=200 if ok else 503)


def add_routes(app: web.Application) -> None:
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    app.router.add_route("*", "/v1/{tail:.*}", proxy_v1)
    app.router.add_route("*", "/api/{tail:.*}", proxy_v1)
    add_admin_routes(app)
    add_status_route(app)
