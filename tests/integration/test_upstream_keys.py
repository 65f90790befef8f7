"""Which Authorization goes upstream (issue 28): a team's proxy key never does unless the team
opts in (`forward_client_key`); the team's upstream key, else the server's `upstream.api_key`,
replaces it; without either, no Authorization at all. Without teams the agent's own key passes
through (there are no proxy keys to keep home). A real upstream records what it got; the agent
is the real `openai` SDK."""

from __future__ import annotations

from typing import Any

from support import Upstream, sdk

MESSAGES: Any = [{"role": "user", "content": "hi"}]


def team(name: str, key: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "keys": [key], **extra}


async def authorization_seen(proxy: Any, upstream: Upstream, api_key: str, **headers: str) -> str | None:
    """What the upstream's Authorization was for one chat request the SDK sent with `api_key`."""
    before = len(upstream.seen)
    async with sdk(proxy, api_key=api_key, default_headers=headers) as client:
        await client.chat.completions.create(model="m", messages=MESSAGES)
    (seen,) = upstream.seen[before:]
    return seen.headers.get("Authorization")


async def test_a_proxy_key_never_goes_upstream_by_default(make_proxy, upstream: Upstream) -> None:
    """A team without an upstream key, on a server without one: the upstream sees no
    Authorization, neither the proxy key in Authorization nor in any form."""
    proxy = await make_proxy({"team": [team("alpha", "rp-alpha-secret")]})
    assert await authorization_seen(proxy, upstream, "rp-alpha-secret") is None
    assert all(b"rp-alpha-secret" not in v.encode() for s in upstream.seen for v in s.headers.values())


async def test_the_servers_upstream_key_replaces_a_proxy_key(make_proxy, upstream: Upstream) -> None:
    proxy = await make_proxy({"upstream": {"api_key": "sk-server"}, "team": [team("alpha", "rp-alpha")]})
    assert await authorization_seen(proxy, upstream, "rp-alpha") == "Bearer sk-server"


async def test_the_teams_upstream_key_wins_over_the_servers(make_proxy, upstream: Upstream) -> None:
    proxy = await make_proxy(
        {"upstream": {"api_key": "sk-server"}, "team": [team("alpha", "rp-alpha", upstream_key="sk-alpha")]}
    )
    assert await authorization_seen(proxy, upstream, "rp-alpha") == "Bearer sk-alpha"


async def test_a_team_that_opts_in_forwards_its_key(make_proxy, upstream: Upstream) -> None:
    """`forward_client_key = true`: the old behaviour, for an upstream that itself knows the keys."""
    proxy = await make_proxy({"team": [team("alpha", "rp-alpha", forward_client_key=True), team("beta", "rp-beta")]})
    assert await authorization_seen(proxy, upstream, "rp-alpha") == "Bearer rp-alpha"
    assert await authorization_seen(proxy, upstream, "rp-beta") is None


async def test_the_agents_own_key_passes_when_the_proxy_key_is_in_the_key_header(
    make_proxy, upstream: Upstream
) -> None:
    """The proxy key in `X-Repair-Key`, the upstream's key in Authorization: the latter is no
    proxy key and goes up as sent; the key header stays home. Another team's proxy key put in
    Authorization does not."""
    proxy = await make_proxy({"team": [team("alpha", "rp-alpha"), team("beta", "rp-beta")]})
    seen = await authorization_seen(proxy, upstream, "sk-agents-own", **{"X-Repair-Key": "rp-alpha"})
    assert seen == "Bearer sk-agents-own"
    assert "X-Repair-Key" not in upstream.seen[-1].headers
    assert await authorization_seen(proxy, upstream, "rp-beta", **{"X-Repair-Key": "rp-alpha"}) is None


async def test_without_teams_the_agents_key_passes_through(proxy, upstream: Upstream) -> None:
    """Transparency: no proxy keys configured, the agent's Authorization is the upstream's."""
    assert await authorization_seen(proxy, upstream, "sk-agent-upstream") == "Bearer sk-agent-upstream"


async def test_without_teams_the_servers_key_replaces_the_agents(make_proxy, upstream: Upstream) -> None:
    proxy = await make_proxy({"upstream": {"api_key": "sk-server"}})
    assert await authorization_seen(proxy, upstream, "sk-agent") == "Bearer sk-server"
