"""Shared fixtures: a real scripted upstream and the real proxy, both on 127.0.0.1."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

sys.path.insert(0, str(Path(__file__).parent))

from support import Upstream, start_proxy, start_upstream

StartProxy = Callable[..., Awaitable[TestServer]]


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    server = await start_upstream()
    try:
        yield server
    finally:
        await server.server.close()


@pytest.fixture
async def make_proxy(upstream: Upstream) -> AsyncIterator[StartProxy]:
    started: list[TestServer] = []

    async def start(
        overrides: dict[str, dict[str, Any]] | None = None, policy: str = "", upstream_url: str | None = None
    ) -> TestServer:
        server = await start_proxy(upstream_url or upstream.base_url, overrides, policy)
        started.append(server)
        return server

    yield start
    for server in started:
        await server.close()


@pytest.fixture
async def proxy(make_proxy: StartProxy) -> TestServer:
    """The proxy with repair on and the embedded default policy."""
    return await make_proxy()


@pytest.fixture
async def plain_proxy(make_proxy: StartProxy) -> TestServer:
    """The proxy with repair off: byte-transparent."""
    return await make_proxy({"repair": {"enabled": False}})
