"""Readiness with and without the upstream (`/readyz?upstream=optional`), and the upstream's
health where an operator sees it: /readyz's detail and `repair_proxy_upstream_errors_total`."""

from __future__ import annotations

from typing import Any

import aiohttp
import openai
import pytest
from aiohttp.test_utils import TestServer
from support import Upstream, free_port, sdk


async def get(proxy: TestServer, path: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as client, client.get(proxy.make_url(path)) as response:
        return response.status, (await response.json() if "json" in response.content_type else await response.text())


async def test_a_healthy_upstream_is_ready_either_way(proxy: TestServer, upstream: Upstream) -> None:
    for path in ("/readyz", "/readyz?upstream=required", "/readyz?upstream=optional"):
        status, body = await get(proxy, path)
        assert (status, body["status"], body["upstream_ready"], body["upstream_status"]) == (200, "ready", True, 200)


async def test_an_upstream_that_is_down_unreadies_only_the_default_mode(make_proxy) -> None:
    """Optional: still ready, the upstream's failure in the detail; agents get the 502 with its
    cause, counted by cause in /metrics."""
    proxy = await make_proxy(upstream_url=f"http://127.0.0.1:{free_port()}/v1")
    status, body = await get(proxy, "/readyz")
    assert (status, body["status"], body["upstream_ready"]) == (503, "unready", False)
    status, body = await get(proxy, "/readyz?upstream=optional")
    assert (status, body["status"], body["upstream_ready"]) == (200, "ready", False)
    assert body["error"] and body["verdict_store"]
    async with sdk(proxy) as client:
        with pytest.raises(openai.InternalServerError) as caught:
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert isinstance(caught.value.body, dict) and caught.value.body["cause"] == "refused"
    _status, metrics = await get(proxy, "/metrics")
    line = 'repair_proxy_upstream_errors_total{cause="refused",code="upstream_unreachable",team="default"} 1.0'
    assert line in metrics


async def test_an_unknown_mode_is_refused(proxy: TestServer) -> None:
    status, body = await get(proxy, "/readyz?upstream=maybe")
    assert status == 400 and "optional" in body["error"]["message"]
    assert body["error"]["type"] == "invalid_request_error" and body["error"]["code"] == "invalid_readiness_mode"


async def test_readyz_says_which_upstream_and_where_it_is_set_never_aiohttps_text(make_proxy) -> None:
    """Before (issue 63): `"error": "Cannot connect to host 127.0.0.1:N ssl:<ssl.SSLContext object at
    0x...> [Connect call failed ...]"`. Now the proxy's own words: the upstream's address, what
    happened (`cause`), and the setting that chose it."""
    port = free_port()
    proxy = await make_proxy(upstream_url=f"http://127.0.0.1:{port}/v1")
    status, body = await get(proxy, "/readyz")
    assert (status, body["upstream"], body["cause"]) == (503, f"http://127.0.0.1:{port}/v1", "refused")
    assert body["error"].startswith(f"the upstream http://127.0.0.1:{port}/v1 is unreachable: connection refused")
    assert "--upstream, REPAIR_PROXY_UPSTREAM or upstream.base_url" in body["error"]
    assert "SSLContext" not in body["error"] and "Cannot connect" not in body["error"]
