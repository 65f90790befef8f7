"""Upstream TLS: a private CA trusted through `SSL_CERT_FILE`, and a client certificate
(`upstream.client_cert` / `client_key`, or their environment variables) for an upstream that
requires one. Real TLS servers on loopback with certificates made in the test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from support import Upstream, completion, post, sdk

from proxy.http.runtime.tenancy import build_runtime
from proxy.http.serving.app import make_app
from proxy.settings.config import load_settings
from proxy.settings.problems import ConfigError

pytest.importorskip("cryptography", reason="the cryptography package makes the test's certificates")
from tls import Authority, Issued, server_context, start_tls_upstream

CHAT = b'{"model":"m","messages":[{"role":"user","content":"hi"}]}'


@pytest.fixture
def ca(tmp_path: Path) -> Authority:
    return Authority.make(tmp_path)


@pytest.fixture
def trusted(ca: Authority, monkeypatch: pytest.MonkeyPatch) -> Authority:
    """The proxy trusts the test CA the way README tells an operator to: SSL_CERT_FILE."""
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.issued.cert))
    return ca


@pytest.fixture
async def mtls_upstream(trusted: Authority, tmp_path: Path) -> AsyncIterator[Upstream]:
    """An https upstream that requires a client certificate the test CA issued, and answers with
    the common name of the one it got."""
    context = server_context(trusted.issue(tmp_path, "upstream", server=True), client_ca=trusted)
    server = await start_tls_upstream(context)

    async def who(request: web.Request, _body: bytes) -> web.StreamResponse:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        subject = dict(pair[0] for pair in (peer or {}).get("subject", ()))
        return web.Response(body=completion(subject.get("commonName", "nobody")), content_type="application/json")

    server.reply_with(who)
    yield server
    await server.server.close()


@pytest.fixture
def client_cert(trusted: Authority, tmp_path: Path) -> Issued:
    return trusted.issue(tmp_path, "proxy-client", server=False)


async def test_a_private_ca_is_trusted_through_ssl_cert_file(make_proxy, trusted: Authority, tmp_path: Path) -> None:
    upstream = await start_tls_upstream(server_context(trusted.issue(tmp_path, "upstream", server=True)))
    try:
        proxy = await make_proxy(upstream_url=upstream.base_url)
        async with sdk(proxy) as client:
            reply = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "ok"
        assert len(upstream.seen) == 1
    finally:
        await upstream.server.close()


async def test_an_upstream_requiring_a_client_certificate_gets_the_configured_one(
    make_proxy, mtls_upstream: Upstream, client_cert: Issued
) -> None:
    overrides = {"upstream": {"client_cert": str(client_cert.cert), "client_key": str(client_cert.key)}}
    proxy = await make_proxy(overrides, upstream_url=mtls_upstream.base_url)
    async with sdk(proxy) as client:
        reply = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "proxy-client"


async def test_without_the_client_certificate_the_error_points_at_it(make_proxy, mtls_upstream: Upstream) -> None:
    """This server (like many) cuts a connection without a client certificate: the proxy only
    sees a reset (its cause) and says what that may mean over TLS."""
    proxy = await make_proxy(upstream_url=mtls_upstream.base_url)
    reply = await post(proxy, CHAT)
    assert reply.status == 502
    assert reply.json()["error"]["cause"] == "reset"
    assert "upstream.client_cert" in reply.json()["error"]["message"]
    assert mtls_upstream.seen == []


async def test_the_environment_sets_the_client_certificate(
    mtls_upstream: Upstream, client_cert: Issued, tmp_path: Path
) -> None:
    """REPAIR_PROXY_UPSTREAM_CLIENT_CERT / _KEY, as a deployment mounts them; here the key and the
    certificate in one file, with no key setting, works too."""
    both = tmp_path / "both.pem"
    both.write_bytes(client_cert.cert.read_bytes() + client_cert.key.read_bytes())
    for environ in (
        {
            "REPAIR_PROXY_UPSTREAM_CLIENT_CERT": str(client_cert.cert),
            "REPAIR_PROXY_UPSTREAM_CLIENT_KEY": str(client_cert.key),
        },
        {"REPAIR_PROXY_UPSTREAM_CLIENT_CERT": str(both)},
    ):
        settings = load_settings(
            None,
            environ={"REPAIR_PROXY_UPSTREAM": mtls_upstream.base_url, "REPAIR_PROXY_VERDICTS": "", **environ},
        )
        server = TestServer(make_app(build_runtime(settings)), host="127.0.0.1")
        await server.start_server()
        try:
            reply = await post(server, CHAT)
        finally:
            await server.close()
        assert reply.status == 200
        assert reply.json()["choices"][0]["message"]["content"] == "proxy-client"


def test_an_unusable_client_certificate_is_a_config_error(tmp_path: Path, client_cert: Issued) -> None:
    """Refused when the settings are built (at start, at reload, by check-config), naming the key."""
    cases: list[dict[str, Any]] = [
        {"client_cert": str(tmp_path / "missing.crt")},
        {"client_cert": str(client_cert.cert), "client_key": str(client_cert.cert)},
    ]
    for upstream in cases:
        with pytest.raises(ConfigError) as caught:
            build_runtime(load_settings(None, overrides={"upstream": upstream, "store": {"verdicts": ""}}))
        assert [p.key for p in caught.value.problems] == ["upstream.client_cert"]
    with pytest.raises(ConfigError) as caught:
        load_settings(None, overrides={"upstream": {"client_key": str(client_cert.key)}})
    assert "client_key" in str(caught.value)
