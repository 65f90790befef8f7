"""Shared fixtures: a real scripted upstream and the real proxy, both on 127.0.0.1."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer
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
        overrides: dict[str, dict[str, Any]] | None = None,
        policy: str = "",
        upstream_url: str | None = None,
        speaking: bool = True,
    ) -> TestServer:
        server = await start_proxy(upstream_url or upstream.base_url, overrides, policy, speaking)
        started.append(server)
        return server

    yield start
    for server in started:
        await server.close()


@pytest.fixture
async def proxy(make_proxy: StartProxy) -> TestServer:
    """The proxy with repair on and the embedded default policy (under `support.SPEAKING`)."""
    return await make_proxy()


@pytest.fixture
async def proxy_two_retries(make_proxy: StartProxy, tmp_path: Path) -> TestServer:
    """The proxy with a budget of two extra generations per agent request (the default is one):
    for what a gate does on its second try."""
    policy = tmp_path / "two_retries.toml"
    policy.write_text("[reply]\nmax_extra_generations = 2\n")
    return await make_proxy(policy=str(policy))


@pytest.fixture
async def plain_proxy(make_proxy: StartProxy) -> TestServer:
    """The proxy with repair off: byte-transparent."""
    return await make_proxy({"repair": {"enabled": False}})


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server on 127.0.0.1 for this test session (skipped, saying why, when none can be started)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server; .ci/run installs it)")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    workdir = tmp_path_factory.mktemp("redis")
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):  # 10 s at most
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.skip(f"redis-server did not answer on port {port}")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)
