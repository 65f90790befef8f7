"""The admin API: a team's conversations, one timeline, verdicts, resets; tokens and their scopes."""

from __future__ import annotations

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from chat import Chat, edit, test_run
from support import Upstream, completion, json_reply

ACTING = completion(
    "", tool_calls=[{"id": "c", "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}}]
)
ROOT_TOKEN = "root-admin-token-0123456789"
ALPHA_TOKEN = "alpha-admin-token-0123456789"


@pytest.fixture
async def admin_proxy(make_proxy, upstream: Upstream) -> TestServer:
    upstream.reply_with(json_reply(ACTING))
    return await make_proxy(
        {
            "admin": {"tokens": [{"token": ROOT_TOKEN, "teams": ["*"]}, {"token": ALPHA_TOKEN, "teams": ["alpha"]}]},
            "team": [{"name": "alpha", "keys": ["key-alpha"]}, {"name": "beta", "keys": ["key-beta"]}],
        }
    )


async def call(
    server: TestServer, method: str, path: str, token: str | None = None, **headers: str
) -> tuple[int, dict[str, object]]:
    if token:
        headers["Authorization"] = f"Bearer {token}"
    async with (
        aiohttp.ClientSession() as client,
        client.request(method, str(server.make_url(path)), headers=headers) as resp,
    ):
        return resp.status, await resp.json()


async def stuck_in(server: TestServer, key: str) -> str:
    chat = Chat()
    conversation = ""
    for step in (test_run(), edit(), test_run("@pytest_addition_b"), edit("a", "b"), test_run()):
        async with (
            aiohttp.ClientSession() as client,
            client.post(
                str(server.make_url("/v1/chat/completions")),
                data=chat.turn(step).bytes(),
                headers={"Authorization": f"Bearer {key}"},
            ) as resp,
        ):
            conversation = resp.headers["X-Repair-Conversation"]
            await resp.read()
    return conversation


async def test_admin_refuses_without_a_token_and_outside_its_scope(admin_proxy: TestServer) -> None:
    """401 without a (valid) token; 403 for a token scoped to another team."""
    assert (await call(admin_proxy, "GET", "/admin/teams/alpha/conversations"))[0] == 401
    assert (await call(admin_proxy, "GET", "/admin/teams/alpha/conversations", "wrong-token-0123456789"))[0] == 401
    assert (await call(admin_proxy, "GET", "/admin/teams/beta/conversations", ALPHA_TOKEN))[0] == 403
    assert (await call(admin_proxy, "GET", "/admin/teams/alpha/conversations", ALPHA_TOKEN))[0] == 200


async def test_admin_is_off_without_configured_tokens(proxy: TestServer) -> None:
    """No [admin] tokens: nothing is served, whatever is sent."""
    assert (await call(proxy, "GET", "/admin/teams/default/conversations", "anything-at-all-0123"))[0] == 401


async def test_admin_lists_state_timeline_and_resets(admin_proxy: TestServer) -> None:
    """A stuck conversation shows its failure, its trip on turn 5 with the injected text; reset forgets it; teams stay apart."""
    conversation = await stuck_in(admin_proxy, "key-alpha")
    status, listing = await call(admin_proxy, "GET", "/admin/teams/alpha/conversations", ALPHA_TOKEN)
    assert status == 200
    [entry] = listing["conversations"]  # type: ignore[index]
    assert entry["conversation"] == conversation
    assert entry["state"]["same_diagnostic_streak"] == 3
    assert entry["last_trips"] == [{"pattern": "stuck_same_diagnostic", "action": "nudge", "shadow": False, "turn": 5}]
    _s, beta = await call(admin_proxy, "GET", "/admin/teams/beta/conversations", ROOT_TOKEN)
    assert beta["conversations"] == []
    _s, detail = await call(admin_proxy, "GET", f"/admin/teams/alpha/conversations/{conversation}", ALPHA_TOKEN)
    timeline = detail["timeline"]  # type: ignore[index]
    assert [t["outcome"] for t in timeline] == ["fail", "neutral", "fail", "neutral", "fail"]
    assert timeline[4]["trips"] == ["stuck_same_diagnostic:nudge"]
    assert "assert 4 == 3" in timeline[4]["injected"][0]
    assert (await call(admin_proxy, "DELETE", f"/admin/teams/alpha/conversations/{conversation}", ALPHA_TOKEN))[1] == {
        "reset": True
    }
    assert (await call(admin_proxy, "GET", f"/admin/teams/alpha/conversations/{conversation}", ALPHA_TOKEN))[0] == 404
