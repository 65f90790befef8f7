"""The routes: health, readiness, metrics, and everything under `/v1/` and `/api/` (the pipeline)."""

from __future__ import annotations

import aiohttp
from aiohttp import web

from proxy.http.admin import add_admin_routes
from proxy.http.appkeys import METRICS, RUNTIME, SESSION, STORES, WORKER
from proxy.http.forward import target_url
from proxy.http.metrics import CONTENT_TYPE_LATEST
from proxy.http.pipeline import proxy_v1
from proxy.http.status import add_status_route

__all__ = ["add_routes"]


async def metrics(request: web.Request) -> web.Response:
    """Prometheus exposition of the app's own registry."""
    return web.Response(body=request.app[METRICS].render(), headers={"Content-Type": CONTENT_TYPE_LATEST})


async def healthz(_request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    """Ready when every worker of the set is running and the upstream answers its models
    endpoint with any status below 500 but 404: a 401 only means it wants a key, while a 404
    there means the base URL is not an OpenAI-compatible one (often: `/v1` left out). The
    verdict store's state is in the detail (`verdict_store`), and a failing one leaves the
    proxy ready: requests go on without memory (see `proxy.store.health`)."""
    settings = request.app[RUNTIME].current.settings
    missing = request.app[WORKER].missing()
    if missing:
        return web.json_response({"status": "unready", "workers_down": missing}, status=503)
    url = target_url(settings.upstream.base_url, "models", "")
    try:
        async with request.app[SESSION].get(
            url,
            timeout=aiohttp.ClientTimeout(total=min(5.0, settings.upstream.connect_timeout * 2)),
            ssl=request.app[RUNTIME].current.tls,
        ) as response:
            ok = response.status < 500
            status = response.status
    except (aiohttp.ClientError, TimeoutError) as exc:
        return web.json_response(
            {
                "status": "unready",
                "upstream": settings.upstream.base_url,
                "error": str(exc) or type(exc).__name__,
                "verdict_store": request.app[STORES].health.detail(),
            },
            status=503,
        )
    answer: dict[str, object] = {"upstream": settings.upstream.base_url, "upstream_status": status}
    answer["verdict_store"] = request.app[STORES].health.detail()
    if status == 404:
        ok = False
        answer["error"] = f"{url} answered 404: is the upstream base URL missing its /v1?"
    return web.json_response({"status": "ready" if ok else "unready", **answer}, status=200 if ok else 503)


def add_routes(app: web.Application) -> None:
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    app.router.add_route("*", "/v1/{tail:.*}", proxy_v1)
    app.router.add_route("*", "/api/{tail:.*}", proxy_v1)
    add_admin_routes(app)
    add_status_route(app)
