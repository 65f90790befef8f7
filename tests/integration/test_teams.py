"""Teams: chosen by proxy key, each with its own policy, upstream and state; unknown keys get 401."""

from __future__ import annotations

from pathlib import Path

import openai
import orjson
import pytest
from aiohttp.test_utils import TestServer
from chat import Chat, test_run
from support import Upstream, completion, json_reply, policy_toml, post, sdk, start_upstream

ACTING = completion(
    "", tool_calls=[{"id": "c", "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}}]
)


@pytest.fixture
async def second_upstream() -> Upstream:
    server = await start_upstream()
    yield server  # type: ignore[misc]
    await server.server.close()


@pytest.fixture
async def teams_proxy(make_proxy, upstream: Upstream, second_upstream: Upstream, tmp_path: Path) -> TestServer:
    user_policy = tmp_path / "user.toml"
    user_policy.write_text(policy_toml({"repair": {"placement": "user"}}))
    upstream.reply_with(json_reply(ACTING))
    second_upstream.reply_with(json_reply(ACTING))
    return await make_proxy(
        {
            "team": [
                {"name": "alpha", "keys": ["key-alpha"]},
                {
                    "name": "beta",
                    "keys": ["key-beta"],
                    "policy": str(user_policy),
                    "upstream": second_upstream.base_url,
                    "upstream_key": "sk-beta-upstream",
                },
            ]
        }
    )


def stuck() -> list[bytes]:
    chat = Chat()
    return [
        chat.turn(test_run(out)).bytes() for out in ("@pytest_addition_a", "@pytest_addition_b", "@pytest_addition_a")
    ]


async def test_unknown_key_is_401_in_openai_shape(teams_proxy: TestServer, upstream: Upstream) -> None:
    """With teams configured, a request without a known key never reaches an upstream."""
    status, _headers, body = await post(teams_proxy, b"{}", Authorization="Bearer nope")
    assert status == 401
    assert orjson.loads(body)["error"]["code"] == "invalid_proxy_key"
    async with sdk(teams_proxy, api_key="nope") as client:
        with pytest.raises(openai.AuthenticationError):
            await client.models.list()
    assert upstream.seen == []


async def test_teams_route_to_their_upstream_with_their_key(
    teams_proxy: TestServer, upstream: Upstream, second_upstream: Upstream
) -> None:
    """alpha has no upstream key: its proxy key stays home (no Authorization upstream); beta's
    upstream gets beta's key; the key header stays home."""
    await post(teams_proxy, b"{}", Authorization="Bearer key-alpha")
    await post(teams_proxy, b"{}", Authorization="Bearer agent-own-key", **{"X-Repair-Key": "key-beta"})
    assert [s.headers.get("Authorization") for s in upstream.seen] == [None]
    assert [s.headers["Authorization"] for s in second_upstream.seen] == ["Bearer sk-beta-upstream"]
    assert "X-Repair-Key" not in second_upstream.seen[0].headers


async def test_identical_transcripts_in_two_teams_have_independent_state(
    teams_proxy: TestServer, upstream: Upstream, second_upstream: Upstream
) -> None:
    """alpha's stuck episode does not use up beta's: the same transcript trips in each team, each with its own policy."""
    bodies = stuck()
    for body in bodies:
        _s, alpha, _b = await post(teams_proxy, body, Authorization="Bearer key-alpha")
    _s, beta, _b = await post(teams_proxy, bodies[-1], Authorization="Bearer key-beta")
    assert alpha["X-Repair-Trips"] == "stuck_same_diagnostic"
    assert beta["X-Repair-Trips"] == "stuck_same_diagnostic"
    assert upstream.seen[-1].json()["messages"][-1]["role"] == "system"  # alpha: default placement
    assert second_upstream.seen[-1].json()["messages"][-1]["role"] == "user"  # beta: its own policy


async def test_without_teams_everyone_is_the_default_team(proxy: TestServer, upstream: Upstream) -> None:
    """No [[team]]: any key (or none) is served, as team 'default'."""
    status, _headers, _body = await post(proxy, b"{}")
    assert status == 200


def test_invalid_team_policy_is_a_startup_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """check-config names the bad policy file and key of a team; exit 2."""
    from proxy.cli.main import main

    bad = tmp_path / "bad.toml"
    bad.write_text('[repair]\nplacement = "sideways"\n')
    config = tmp_path / "config.toml"
    config.write_text('[[team]]\nname = "a"\nkeys = ["k"]\npolicy = "bad.toml"\n')
    assert main(["check-config", str(config)], environ={}) == 2
    assert f"{bad}: repair.placement:" in capsys.readouterr().err


def test_duplicate_keys_across_teams_are_refused(tmp_path: Path) -> None:
    """A key that opens two teams is a config error."""
    from proxy.settings.config import load_settings
    from proxy.settings.problems import ConfigError

    config = tmp_path / "config.toml"
    config.write_text('[[team]]\nname = "a"\nkeys = ["k"]\n[[team]]\nname = "b"\nkeys = ["k"]\n')
    with pytest.raises(ConfigError, match="one team only"):
        load_settings(config)
