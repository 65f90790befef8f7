"""The live status page: conversations, their current failure and a timeline of tool turns.

A static page (no data of its own) that reads the admin API with the admin token given in
its URL fragment (`/status#token=...&team=...`, never sent to the server in the URL) and
refreshes itself every two seconds.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from aiohttp import web

__all__ = ["add_status_route"]


@cache
def page() -> str:
    """Read when first asked for (the page is static)."""
    return resources.files("proxy").joinpath("static/status.html").read_text(encoding="utf-8")


async def status_page(_request: web.Request) -> web.Response:
    return web.Response(text=page(), content_type="text/html", headers={"Cache-Control": "no-store"})


def add_status_route(app: web.Application) -> None:
    app.router.add_get("/status", status_page)
