"""Holdout: a share of conversations is analysed and counted but never changed, so the effect can be compared."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from aiohttp.test_utils import TestServer
from chat import Chat, edit, test_run, view
from support import Upstream, completion, json_reply, policy_toml, post

from proxy.cli.report import recovery_table

ACTING = completion(
    "", tool_calls=[{"id": "c", "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}}]
)


async def metrics_text(server: TestServer) -> str:
    async with aiohttp.ClientSession() as client, client.get(str(server.make_url("/metrics"))) as resp:
        return await resp.text()


async def test_holdout_arm_gets_the_agents_bytes_while_trips_are_still_counted(make_proxy, upstream: Upstream) -> None:
    """holdout_percent=100: no request is changed, yet the trip is in the headers and in /metrics."""
    proxy = await make_proxy({"repair": {"holdout_percent": 100}})
    upstream.reply_with(json_reply(ACTING))
    chat = Chat()
    bodies = [
        chat.turn(test_run(out)).bytes() for out in ("@pytest_addition_a", "@pytest_addition_b", "@pytest_addition_a")
    ]
    headers = [(await post(proxy, body)).headers for body in bodies]
    assert [s.body for s in upstream.seen] == bodies
    assert headers[-1]["X-Repair-Trips"] == "stuck_same_diagnostic"
    assert {h["X-Repair-Arm"] for h in headers} == {"holdout"}
    assert (
        'repair_proxy_trips_total{action="nudge",mode="act",pattern="stuck_same_diagnostic",team="default"} 1.0'
        in await metrics_text(proxy)
    )


async def test_outcomes_of_both_arms_are_recorded_and_reported(make_proxy, upstream: Upstream, tmp_path: Path) -> None:
    """Treated: the nudge is followed by a pass (cleared). Holdout: the failure stays for 5 turns (unchanged)."""
    upstream.reply_with(json_reply(ACTING))
    treated = await make_proxy({"repair": {"holdout_percent": 0}})
    chat = Chat(id_prefix="treated")
    for out in ("@pytest_addition_a", "@pytest_addition_b", "@pytest_addition_a"):
        await post(treated, chat.turn(test_run(out)).bytes())
    await post(treated, chat.turn(view("/workspace/tests/test_parse.py"), edit(), test_run("@pytest_pass")).bytes())
    report = recovery_table(await metrics_text(treated))
    assert "treated" in report and "100%" in report

    no_ladder = tmp_path / "p.toml"
    no_ladder.write_text(
        policy_toml({"patterns.stuck_same_diagnostic": {"after": 3, "action": "nudge", "escalate": []}})
    )
    held = await make_proxy({"repair": {"holdout_percent": 100}}, policy=str(no_ladder))
    chat = Chat(id_prefix="held")
    for out in ["@pytest_addition_a", "@pytest_addition_b"] * 4:
        await post(held, chat.turn(test_run(out)).bytes())
    text = await metrics_text(held)
    assert (
        'repair_proxy_trip_outcomes_total{arm="holdout",outcome="unchanged",pattern="stuck_same_diagnostic",team="default"} 1.0'
        in text
    )
    assert "holdout" in recovery_table(text) and "0%" in recovery_table(text)


async def test_a_holdout_run_is_never_counted_as_handed_back(make_proxy, upstream: Upstream) -> None:
    """The holdout arm's runs go on past the rung that would halt a treated run: what followed
    its trips is counted as it happened (the failure stayed), never as a hand-back that did not
    happen; the treated run of the same transcript is handed back once."""
    upstream.reply_with(json_reply(ACTING))
    outputs = ["@pytest_addition_a", "@pytest_addition_b"] * 6
    counts = {}
    for arm, percent in (("holdout", 100), ("treated", 0)):
        proxy = await make_proxy({"repair": {"holdout_percent": percent}})
        chat = Chat(id_prefix=arm)
        for out in outputs:
            response = await post(proxy, chat.turn(test_run(out)).bytes())
            if response.headers.get("X-Repair-Outcome") == "incomplete":
                break
        text = await metrics_text(proxy)
        counts[arm] = {
            outcome: f'arm="{arm}",outcome="{outcome}",pattern="stuck_same_diagnostic",team="default"}}' in text
            for outcome in ("handed_back", "unchanged")
        }
    assert counts["holdout"] == {"handed_back": False, "unchanged": True}
    assert counts["treated"]["handed_back"] is True
