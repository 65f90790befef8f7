"""A stall of the event loop is seen (issue #52): its lag is a metric, and a stall is logged once,
with the step that held the loop and its conversation. The proxy serves on 127.0.0.1 in this
test's own loop; the analysis is made to hold the loop on purpose (0.4 s, four times the stall
threshold: a busy machine only makes the lag longer, never shorter)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import structlog
from aiohttp.test_utils import TestServer
from chat import Chat, test_run
from support import Upstream, completion, json_reply, post

from proxy.engine.core import Engine
from proxy.http.runtime.appkeys import METRICS
from proxy.http.runtime.stalls import STALL

HELD = 4 * STALL


def _sample(proxy: TestServer, name: str, **labels: str) -> float:
    value = proxy.app[METRICS].registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


async def test_an_analysis_that_holds_the_loop_is_a_stall_logged_once_with_its_step_and_conversation(
    make_proxy: Any, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = await make_proxy()
    upstream.reply_with(json_reply(completion("ok")))
    fold = Engine.fold

    def held(self: Engine, *args: Any, **kwargs: Any) -> Any:
        until = time.perf_counter() + HELD
        while time.perf_counter() < until:  # the loop's thread, busy
            pass
        return fold(self, *args, **kwargs)

    monkeypatch.setattr(Engine, "fold", held)
    with structlog.testing.capture_logs() as events:
        reply = await post(proxy, Chat().turn(test_run()).bytes(), **{"X-Repair-Conversation": "held-up"})
        for _ in range(40):  # the next look at the loop, at most 2 s on
            if any(e["event"] == "event_loop_stall" for e in events):
                break
            await asyncio.sleep(0.05)
    assert reply.status == 200
    stalls = [e for e in events if e["event"] == "event_loop_stall" and e["step"] == "analysis"]
    assert len(stalls) == 1
    assert stalls[0]["conversation"] == "held-up"
    assert stalls[0]["lag_ms"] >= STALL * 1000 and stalls[0]["step_ms"] >= HELD * 1000
    assert _sample(proxy, "repair_proxy_event_loop_stalls_total", step="analysis") == 1
    count = _sample(proxy, "repair_proxy_event_loop_lag_seconds_count")
    under = _sample(proxy, "repair_proxy_event_loop_lag_seconds_bucket", le="0.25")
    assert count >= 1 and count - under >= 1  # the look that came late is in the lag's buckets past 0.25 s
