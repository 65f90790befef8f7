"""What a worker builds for its first instruction is built before it takes traffic, and a reload
is built off the event loop (issue 63): nothing on the request path holds the loop, so `/healthz`
answers in under 100 ms meanwhile and no `event_loop_stall` is logged.

Before: the tokenizer was built when the first instruction was counted, on the loop (0.2-0.7 s:
the demo printed the stall every run), and a reload compiled its policies there (107-118 ms
measured on a busy machine)."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import structlog
from aiohttp.test_utils import TestServer
from chat import Chat, test_run
from support import Upstream, completion, json_reply, post, read_json_log, spawn_proxy, wait_healthy

from proxy.http.runtime.appkeys import RUNTIME
from proxy.http.runtime.tenancy import Runtime, build_runtime
from proxy.http.serving.app import make_app, server_options
from proxy.http.serving.reload import KEPT_IN_PLACE, Reloader
from proxy.settings.config import load_settings

HEALTHY_MS = 100.0
"""The bar for `/healthz` while the worker analyses (issue 63)."""
ACTING = completion(
    "", tool_calls=[{"id": "c", "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}}]
)
"""A reply with a call: no gate of the reply stage asks again."""
STUCK = Chat().turn(test_run()).turn(test_run()).turn(test_run())
"""Three runs of one failing test: the failure model's pattern, acting, places its first instruction."""


async def _slowest_healthz(url: str, during: Callable[[], Awaitable[Any]]) -> tuple[Any, float]:
    """What `during` returns, and the slowest of the `/healthz` answers polled (every 10 ms) while it
    ran, in ms (and for 0.3 s after: the next look at the loop)."""
    slowest = 0.0
    done = asyncio.Event()

    async def poll() -> None:
        nonlocal slowest
        async with aiohttp.ClientSession() as client:
            while not done.is_set():
                started = time.perf_counter()
                async with client.get(url) as response:
                    assert response.status == 200
                slowest = max(slowest, (time.perf_counter() - started) * 1000)
                await asyncio.sleep(0.01)

    poller = asyncio.create_task(poll())
    try:
        await asyncio.sleep(0.05)  # the poller's connection is open and kept
        result = await during()
        await asyncio.sleep(0.3)
    finally:
        done.set()
        await poller
    return result, slowest


async def test_a_fresh_workers_first_instruction_holds_nothing_up(upstream: Upstream) -> None:
    """A real `serve` process, fresh: its first request places an instruction (the upstream gets
    it) while `/healthz` is polled; every answer comes in under 100 ms and the log has no stall."""
    upstream.reply_with(json_reply(completion("ok")))
    process, port = await spawn_proxy("--upstream", upstream.base_url, stdout=asyncio.subprocess.PIPE)
    assert process.stdout is not None
    events: list[dict[str, object]] = []
    reader = asyncio.create_task(read_json_log(process.stdout, events))
    try:
        await wait_healthy(port)
        reply, slowest = await _slowest_healthz(
            f"http://127.0.0.1:{port}/healthz",
            lambda: post(f"http://127.0.0.1:{port}", STUCK.bytes(), **{"X-Repair-Conversation": "first"}),
        )
    finally:
        process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.wait(), 30)
        await reader
    assert reply.status == 200
    sent = upstream.seen[-1].json()["messages"]
    assert any("[repair-proxy]" in str(m.get("content")) for m in sent), "the request placed an instruction"
    assert [e for e in events if e["event"] == "event_loop_stall"] == []
    assert slowest < HEALTHY_MS, f"/healthz took {slowest:.0f} ms while the first instruction was placed"


async def test_a_reload_is_built_off_the_event_loop(
    upstream: Upstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reload's build made to take 0.4 s on purpose (four times the stall threshold): `/healthz`
    still answers in under 100 ms meanwhile, no stall is logged, and the new runtime is swapped in."""
    settings = load_settings(None, overrides={"upstream": {"base_url": upstream.base_url}, "store": {"verdicts": ""}})
    reloader = Reloader(None, {}, {"upstream": {"base_url": upstream.base_url}, "store": {"verdicts": ""}})
    app = make_app(build_runtime(settings), reloader)
    rebuild = Runtime.rebuild

    def slow(self: Runtime, new: Any) -> Runtime:
        until = time.perf_counter() + 0.4
        while time.perf_counter() < until:  # the building thread, busy
            pass
        return rebuild(self, new)

    monkeypatch.setattr(Runtime, "rebuild", slow)
    server = TestServer(app, host="127.0.0.1")
    options = {k: v for k, v in server_options(settings).items() if k != "handler_cancellation"}
    await server.start_server(**options)
    try:
        before = app[RUNTIME].current
        with structlog.testing.capture_logs() as events:
            swapped, slowest = await _slowest_healthz(str(server.make_url("/healthz")), lambda: reloader.reload(app))
        assert swapped and app[RUNTIME].current is not before
        assert [e for e in events if e["event"] == "event_loop_stall"] == []
        assert slowest < HEALTHY_MS, f"/healthz took {slowest:.0f} ms during the reload"
    finally:
        await server.close()


async def test_a_reload_that_puts_an_acting_pattern_in_shadow_says_its_instructions_stay(
    upstream: Upstream, tmp_path: Path
) -> None:
    """The failure model's pattern acting, an instruction placed; a reload puts it in shadow: the
    `reloaded` line names it (`now_shadow`) and says what it placed stays in place, as it does."""
    policy = tmp_path / "policy.toml"
    policy.write_text('[patterns.stuck_same_diagnostic]\nmode = "act"\n')
    overrides = {
        "upstream": {"base_url": upstream.base_url},
        "store": {"verdicts": ""},
        "repair": {"policy": str(policy)},
    }
    settings = load_settings(None, overrides=overrides)
    reloader = Reloader(None, {}, overrides)
    app = make_app(build_runtime(settings), reloader)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        upstream.reply_with(json_reply(ACTING))
        await post(server, STUCK.bytes())
        placed = [m for m in upstream.seen[-1].json()["messages"] if "[repair-proxy]" in str(m.get("content"))]
        assert placed
        policy.write_text('[patterns.stuck_same_diagnostic]\nmode = "shadow"\n')
        with structlog.testing.capture_logs() as events:
            assert await reloader.reload(app)
        (reloaded,) = [e for e in events if e["event"] == "reloaded"]
        assert reloaded["now_shadow"] == {"default": ["stuck_same_diagnostic"]}
        assert reloaded["placed_instructions"] == KEPT_IN_PLACE
        await post(server, Chat().turn(test_run()).turn(test_run()).turn(test_run()).turn(test_run()).bytes())
        sent = upstream.seen[-1].json()["messages"]
        assert [m for m in sent if "[repair-proxy]" in str(m.get("content"))] == placed  # as the line says
        policy.write_text('[patterns.stuck_same_diagnostic]\nmode = "shadow"\n# unchanged\n')
        with structlog.testing.capture_logs() as events:
            assert await reloader.reload(app)
        (reloaded,) = [e for e in events if e["event"] == "reloaded"]
        assert "now_shadow" not in reloaded  # nothing moved this time
    finally:
        await server.close()
