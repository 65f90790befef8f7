"""/metrics moves as expected over a scripted stuck conversation through the real server."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from chat import Chat, edit, test_run
from prometheus_client.parser import text_string_to_metric_families
from support import Upstream, completion, json_reply, policy_toml, post

from proxy.http.runtime.appkeys import RUNTIME

ACTING = completion(
    "", tool_calls=[{"id": "c", "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}}]
)


async def scrape(server: TestServer) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    async with aiohttp.ClientSession() as client, client.get(str(server.make_url("/metrics"))) as resp:
        assert resp.status == 200
        text = await resp.text()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_metrics_follow_a_stuck_conversation(
    make_proxy, upstream: Upstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Requests, trips, injected tokens, done-gate retries, hand-backs and analysis failures are each counted by team."""
    policy = tmp_path / "p.toml"
    policy.write_text(
        policy_toml(
            {
                "patterns.stuck_same_diagnostic": {
                    "after": 3,
                    "action": "nudge",
                    "escalate": [{"at": 4, "action": "halt"}],
                }
            }
        )
    )
    proxy = await make_proxy(policy=str(policy))
    upstream.reply_with(json_reply(ACTING))
    chat = Chat()
    await post(proxy, chat.turn(test_run()).bytes())
    upstream.reply_with(json_reply(completion("Done.")), json_reply(ACTING))
    await post(proxy, chat.turn(edit()).bytes())  # re-verify owed: the "Done." stop is sent back once
    upstream.reply_with(json_reply(ACTING))
    for out in ("@pytest_addition_b", "@pytest_addition_a", "@pytest_addition_b"):
        await post(proxy, chat.turn(test_run(out)).bytes())
    samples = await scrape(proxy)
    assert (
        value(samples, "repair_proxy_requests_total", route="chat", status="200", team="default", model="qwen2.5-coder")
        == 5
    )
    assert (
        value(
            samples,
            "repair_proxy_trips_total",
            pattern="stuck_same_diagnostic",
            action="nudge",
            mode="act",
            team="default",
        )
        == 1
    )
    assert (
        value(
            samples,
            "repair_proxy_trips_total",
            pattern="stuck_same_diagnostic",
            action="halt",
            mode="act",
            team="default",
        )
        == 1
    )
    assert value(samples, "repair_proxy_handbacks_total", reason="stuck_same_diagnostic", team="default") == 1
    assert value(samples, "repair_proxy_gate_retries_total", gate="done", team="default") == 1
    assert value(samples, "repair_proxy_injected_tokens_total", team="default") > 20
    assert value(samples, "repair_proxy_overhead_seconds_count", team="default") == 5
    assert value(samples, "repair_proxy_analysis_failed_total", team="default") == 0

    def boom(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("analysis bug")

    monkeypatch.setattr(proxy.app[RUNTIME].current.teams["default"].engine, "fold", boom)
    await post(proxy, chat.bytes())
    assert value(await scrape(proxy), "repair_proxy_analysis_failed_total", team="default") == 1
