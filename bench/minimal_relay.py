"""The floor: the least an aiohttp relay can do (no header filtering, no analysis, no logging).

Run: python bench/minimal_relay.py PORT UPSTREAM_BASE_URL
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

SESSION = web.AppKey("session", aiohttp.ClientSession)
UPSTREAM = web.AppKey("upstream", str)


async def relay(request: web.Request) -> web.StreamResponse:
    body = await request.read()
    url = request.app[UPSTREAM] + request.path_qs.removeprefix("/v1")
    headers = {"Content-Type": request.headers.get("Content-Type", "application/json")}
    async with request.app[SESSION].request(request.method, url, data=body, headers=headers) as upstream:
        response = web.StreamResponse(
            status=upstream.status, headers={"Content-Type": upstream.headers.get("Content-Type", "")}
        )
        await response.prepare(request)
        async for chunk in upstream.content.iter_any():
            await response.write(chunk)
        await response.write_eof()
        return response


async def session(app: web.Application) -> AsyncIterator[None]:
    async with aiohttp.ClientSession(auto_decompress=False, timeout=aiohttp.ClientTimeout(total=None)) as client:
        app[SESSION] = client
        yield


def main() -> None:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app[UPSTREAM] = sys.argv[2].rstrip("/")
    app.cleanup_ctx.append(session)
    app.router.add_route("*", "/v1/{tail:.*}", relay)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)


if __name__ == "__main__":
    main()
