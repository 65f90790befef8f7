"""An upstream that cannot be reached: the agent's error says which kind of failure it was
(`error.cause`: refused, tls, dns, timeout, reset), which upstream (its address, without teams)
and the setting that chose it; with teams, no host, port or address (an agent of a team may sit
outside the upstream's network). Each cause made for real on loopback."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest
from aiohttp import web
from support import Upstream, free_port, post, sdk

CHAT = b'{"model":"m","messages":[{"role":"user","content":"hi"}]}'


def assert_names_no_address(body: bytes, *hosts: str, port: int) -> None:
    text = body.decode()
    for host in ("127.0.0.1", "localhost", *hosts):
        assert host not in text
    assert str(port) not in text


def assert_names_the_upstream(error: dict[str, Any], url: str) -> None:
    """The message names the upstream's address and the setting to change (issue 63)."""
    assert f"the upstream {url}" in error["message"]
    assert "--upstream, REPAIR_PROXY_UPSTREAM or upstream.base_url" in error["message"]


async def failure(make_proxy: Any, url: str, **upstream: Any) -> tuple[int, dict[str, Any], bytes]:
    proxy = await make_proxy({"upstream": upstream} if upstream else None, upstream_url=url)
    reply = await post(proxy, CHAT)
    return reply.status, reply.json()["error"], reply.body


async def test_refused_a_port_nothing_listens_on(make_proxy) -> None:
    port = free_port()
    status, error, _body = await failure(make_proxy, f"http://127.0.0.1:{port}/v1")
    assert (status, error["code"], error["cause"]) == (502, "upstream_unreachable", "refused")
    assert "refused" in error["message"]
    assert_names_the_upstream(error, f"http://127.0.0.1:{port}/v1")


async def test_with_teams_the_error_names_the_team_not_the_address(make_proxy) -> None:
    """An agent of one team learns whose upstream failed and how, not where it is."""
    port = free_port()
    team = {"name": "blue", "keys": ["k-blue"]}
    proxy = await make_proxy({"team": [team]}, upstream_url=f"http://127.0.0.1:{port}/v1")
    reply = await post(proxy, CHAT, Authorization="Bearer k-blue")
    error = reply.json()["error"]
    assert (reply.status, error["cause"]) == (502, "refused")
    assert "team blue's upstream is unreachable" in error["message"] and "upstream.base_url" in error["message"]
    assert_names_no_address(reply.body, port=port)
    async with aiohttp.ClientSession() as client, client.get(proxy.make_url("/readyz")) as response:
        ready = await response.json()  # the operator's view: the address, as its `upstream` field always had
    assert f"the upstream http://127.0.0.1:{port}/v1 is unreachable" in ready["error"]


async def test_dns_a_name_that_cannot_resolve(make_proxy) -> None:
    """`.invalid` never resolves (RFC 6761)."""
    status, error, _body = await failure(make_proxy, "http://model-server.invalid:8000/v1")
    assert (status, error["cause"]) == (502, "dns")
    assert "DNS" in error["message"]
    assert_names_the_upstream(error, "http://model-server.invalid:8000/v1")


async def test_tls_an_https_url_for_a_plain_http_server(make_proxy, upstream: Upstream) -> None:
    port = upstream.server.port
    assert port is not None
    status, error, _body = await failure(make_proxy, f"https://127.0.0.1:{port}/v1")
    assert (status, error["cause"]) == (502, "tls")
    assert "TLS" in error["message"]
    assert_names_the_upstream(error, f"https://127.0.0.1:{port}/v1")
    assert upstream.seen == []


async def test_tls_a_certificate_no_trusted_ca_signed(make_proxy, tmp_path: Path) -> None:
    """A TLS upstream whose certificate comes from a CA of its own, unknown to the proxy: the
    message says it is the certificate, and how to trust a private CA."""
    pytest.importorskip("cryptography", reason="the cryptography package makes the test's certificates")
    from tls import Authority, server_context, start_tls_upstream

    ca = Authority.make(tmp_path)
    tls_upstream = await start_tls_upstream(server_context(ca.issue(tmp_path, "upstream", server=True)))
    try:
        port = tls_upstream.server.port
        assert port is not None
        status, error, _body = await failure(make_proxy, tls_upstream.base_url)
        assert (status, error["cause"]) == (502, "tls")
        assert "certificate" in error["message"] and "SSL_CERT_FILE" in error["message"]
        assert_names_the_upstream(error, tls_upstream.base_url)
        assert tls_upstream.seen == []
    finally:
        await tls_upstream.server.close()


async def test_timeout_an_upstream_that_never_answers(make_proxy, upstream: Upstream) -> None:
    """No headers within `upstream.first_byte_timeout`: 504, cause timeout; seen by the SDK too."""
    never = asyncio.Event()

    async def silent(_request: web.Request, _body: bytes) -> web.StreamResponse:
        await never.wait()
        raise AssertionError("unreachable")

    upstream.reply_with(silent)
    port = upstream.server.port
    assert port is not None
    status, error, _body = await failure(make_proxy, upstream.base_url, first_byte_timeout=0.2)
    assert (status, error["code"], error["cause"]) == (504, "upstream_timeout", "timeout")
    assert f"the upstream {upstream.base_url} sent no response within 0.2s" in error["message"]
    proxy = await make_proxy({"upstream": {"first_byte_timeout": 0.2}})
    async with sdk(proxy) as client:
        with pytest.raises(openai.APIStatusError) as caught:
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 504
    assert isinstance(caught.value.body, dict) and caught.value.body["cause"] == "timeout"


@pytest.fixture
async def resetting_port() -> AsyncIterator[int]:
    """A server on loopback that accepts, reads the request and resets the connection (RST)."""

    async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()

    server = await asyncio.start_server(reset, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1]


async def test_reset_a_connection_cut_before_the_answer(make_proxy, resetting_port: int) -> None:
    status, error, _body = await failure(make_proxy, f"http://127.0.0.1:{resetting_port}/v1")
    assert (status, error["code"], error["cause"]) == (502, "upstream_unreachable", "reset")
    assert_names_the_upstream(error, f"http://127.0.0.1:{resetting_port}/v1")
