"""What a request waits for (issue 64), through the proxy on 127.0.0.1.

A conversation first seen long (after a restart, on another replica) is read beside the traffic:
its request goes up as it came at once (`catching_up`), no other request waits behind its reading,
and its next request is analysed, reading only what it adds. The analysis budget is wall time the
request waits, not CPU time, and `overhead_ms` is the wall time the proxy added. Before: the first
request of a 600-message conversation was folded on the event loop for the whole 100 ms budget of
CPU time (400-600 ms of wall time on a busy machine), every request of the worker waiting as long
(bench/turn_cost.py)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import structlog
from aiohttp.test_utils import TestServer
from chat import Chat, edit, test_run, view
from support import Upstream, completion, json_reply, post

from proxy.engine.core import Engine
from proxy.engine.state.fold import Folding
from proxy.http.runtime.appkeys import CATCH_UPS, RUNTIME
from proxy.http.runtime.catchup import BEHIND
from proxy.http.runtime.footprint import HELD_FACTOR, WORKING_FACTOR

ACTING = completion(
    "", tool_calls=[{"id": "c", "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}}]
)
"""A reply that acts (the gates let it through)."""


def _long_chat(turns: int, prefix: str = "call") -> Chat:
    chat = Chat(id_prefix=prefix)
    for index in range(turns):
        chat.turn((view, test_run, edit)[index % 3]())
    return chat


async def _caught_up(proxy: TestServer, seconds: float = 20.0) -> None:
    until = time.monotonic() + seconds
    while len(proxy.app[CATCH_UPS]) and time.monotonic() < until:
        await asyncio.sleep(0.01)
    assert not len(proxy.app[CATCH_UPS]), "the catch-up did not end"


def _lines(events: list[dict[str, Any]], event: str) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == event]


async def test_a_conversation_first_seen_long_goes_up_at_once_and_its_next_request_reads_only_what_it_adds(
    proxy: TestServer, upstream: Upstream
) -> None:
    upstream.reply_with(json_reply(ACTING))
    chat = _long_chat(40)
    assert len(chat.messages) > BEHIND
    first = chat.bytes()
    with structlog.testing.capture_logs() as events:
        status, headers, _ = await post(proxy, first)
        assert status == 200 and upstream.seen[-1].body == first  # as it came
        assert "X-Repair-Trips" not in headers
        await _caught_up(proxy)
        status, _, _ = await post(proxy, chat.turn(test_run()).bytes())
    assert status == 200
    ends = [e["end"] for e in _lines(events, "request")]
    assert ends == ["catching_up", "complete"]
    assert _lines(events, "catching_up")[0]["unread"] == len(chat.messages) - 2
    caught = _lines(events, "caught_up")
    assert len(caught) == 1 and caught[0]["turns"] == 40
    assert _lines(events, "request")[1]["analysed"] is True
    assert not _lines(events, "analysis_abandoned")
    engine = proxy.app[RUNTIME].current.teams["default"].engine
    conversation = _lines(events, "request")[1]["conversation"]
    kept = engine.cache.get(("default", conversation))
    at_once = Engine.of(engine.policy)
    whole = at_once.fold(at_once.request(_translation(chat.bytes()), {}))
    assert kept is not None and kept.turns == whole.state.turns == 41
    assert kept.repair == whole.state.repair and kept.detectors == whole.state.detectors


def _translation(body: bytes) -> Any:
    from proxy.dialects import CHAT, parse

    incoming = parse(CHAT, body)
    assert incoming is not None
    return incoming.translation


async def test_no_request_waits_behind_a_conversation_being_caught_up(
    proxy: TestServer, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each turn of the long history is made to take 20 ms: 800 ms of reading in all, which on
    the request's path (or in one piece on the loop) every request of the worker would wait through."""
    upstream.reply_with(json_reply(ACTING))
    step = Folding.step

    def slow(self: Folding) -> None:
        until = time.perf_counter() + 0.02
        step(self)
        while time.perf_counter() < until:  # the loop's thread, busy
            pass

    monkeypatch.setattr(Folding, "step", slow)
    with structlog.testing.capture_logs() as events:
        started = time.perf_counter()
        await post(proxy, _long_chat(40, "long").bytes())
        first = time.perf_counter() - started
        other = Chat(id_prefix="other").turn(test_run())
        started = time.perf_counter()
        status, _, _ = await post(proxy, other.bytes())
        second = time.perf_counter() - started
        still = len(proxy.app[CATCH_UPS])  # the long one is still being read
        await _caught_up(proxy)
    assert status == 200 and still == 1
    assert first < 0.8 and second < 0.8  # neither waited for the 800 ms of reading
    ends = [e["end"] for e in _lines(events, "request")]
    assert ends == ["catching_up", "complete"]  # the other conversation was analysed, beside it


async def test_the_budget_is_wall_time_the_request_waits_and_the_rest_is_read_beside(
    make_proxy: Any, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fold is made to wait 150 ms without using the CPU (a budget of CPU time would not see it):
    past the 100 ms budget the request goes up as it came, and the turns left are read beside it."""
    proxy = await make_proxy({"limits": {"analysis_budget_ms": 100}})
    upstream.reply_with(json_reply(ACTING))
    chat = _long_chat(4)
    step = Folding.step
    held = {"once": True}

    def waits(self: Folding) -> None:
        if held["once"] and self.state.turns == 2:
            held["once"] = False
            time.sleep(0.15)  # the thread waits: no CPU time passes
        step(self)

    monkeypatch.setattr(Folding, "step", waits)
    with structlog.testing.capture_logs() as events:
        await post(proxy, chat.bytes())
        await _caught_up(proxy)
        await post(proxy, chat.turn(test_run()).bytes())
    requests = _lines(events, "request")
    assert [r["end"] for r in requests] == ["analysis_abandoned", "complete"]
    assert requests[0]["analysis_cpu_ms"] < 100 <= requests[0]["overhead_ms"]
    assert _lines(events, "caught_up")[0]["turns"] == 4  # the turns after the overrun, read beside
    assert requests[1]["analysed"] is True


async def test_overhead_ms_is_the_wall_time_the_proxy_added(
    proxy: TestServer, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream.reply_with(json_reply(ACTING))
    plan = Engine.plan

    def waits(self: Engine, *args: Any, **kwargs: Any) -> Any:
        time.sleep(0.05)
        return plan(self, *args, **kwargs)

    monkeypatch.setattr(Engine, "plan", waits)
    with structlog.testing.capture_logs() as events:
        await post(proxy, Chat().turn(test_run()).bytes())
    line = _lines(events, "request")[0]
    assert line["overhead_ms"] >= 50 > line["analysis_cpu_ms"]
    assert line["overhead_ms"] <= line["total_ms"]


async def test_conversations_queued_to_be_caught_up_are_charged_as_held_not_as_analysed(
    proxy: TestServer, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three first seen long, queued at once (each turn's reading made slow, so they wait): the
    working charge is one body analysed and three held, not three analysed. Charged as analyses,
    eight queued 600-message catch-ups shrank the last parses' share below thirty conversations,
    and every one of their bodies was then parsed whole (bench/turn_cost.py, 808b083)."""
    upstream.reply_with(json_reply(ACTING))
    step = Folding.step

    def slow(self: Folding) -> None:
        time.sleep(0.005)
        step(self)

    monkeypatch.setattr(Folding, "step", slow)
    footprint = proxy.app[RUNTIME].current.shared.footprint
    bodies = [_long_chat(40, f"queued{n}").bytes() for n in range(3)]
    with structlog.testing.capture_logs() as events:
        for body in bodies:
            await post(proxy, body)
        queued, working = len(proxy.app[CATCH_UPS]), footprint.working
        await _caught_up(proxy)
    assert [e["end"] for e in _lines(events, "request")] == ["catching_up"] * 3
    assert queued >= 2
    largest = max(len(body) for body in bodies)
    assert working <= WORKING_FACTOR * largest + HELD_FACTOR * sum(len(body) for body in bodies)
    assert working < WORKING_FACTOR * 2 * min(len(body) for body in bodies)


async def test_the_request_line_says_whether_the_body_was_read_from_its_conversations_last_parse(
    proxy: TestServer, upstream: Upstream
) -> None:
    """A conversation's first body is kept as bytes and its second parsed whole (where its transcript
    ends is found from the two); from the third on only what a body adds is parsed. The line says
    which, so a bound too small for the conversations in turn (each body parsed whole) shows in the log."""
    upstream.reply_with(json_reply(ACTING))
    chat = Chat(system="You are a careful coding agent. " * 2500)  # past prefix.MIN_BYTES
    with structlog.testing.capture_logs() as events:
        for _ in range(3):
            status, _, _ = await post(proxy, chat.turn(test_run()).bytes())
            assert status == 200
        await post(proxy, b'{"model": "m", "messages": "not a list"}')
    assert [line.get("read") for line in _lines(events, "request")] == ["whole", "whole", "in part", None]
