"""A stream the agent got whole is a 200, in the log and the metrics, whatever the agent does after
its last event (issue 63).

The condition behind the 499s seen: the `openai` SDK, iterating a stream plainly, reads `[DONE]`,
drains the rest for at most 0.1 s and closes the connection. A proxy that had relayed `[DONE]` but
was still waiting for the upstream's end of body (or writing its own) saw the agent go: its handler
cancelled, the request counted 499 "client gone" though the agent had every chunk. A small upstream
on a loaded machine is late with its end by that much now and then; here the upstream waits 0.5 s
after its last event before it ends the body, every time, so the window is always open.

The real `serve` process (it cancels a handler whose client left, as in production), the real
SDK's plain `for chunk in client.chat.completions.create(..., stream=True)`, in a thread."""

from __future__ import annotations

import asyncio
import re
import signal
from collections.abc import Sequence
from typing import Any

import aiohttp
import openai
import orjson
import pytest
import structlog
from aiohttp import web
from support import Handler, Upstream, read_json_log, spawn_proxy, sse_chunks, wait_healthy

LATE_END = 0.5
"""Seconds the upstream waits after its last event before it ends the body (the SDK drains 0.1 s)."""


def late_end(chunks: Sequence[bytes], content_type: str = "text/event-stream") -> Handler:
    """An upstream reply that sends every event at once and ends its body `LATE_END` later."""

    async def handler(request: web.Request, _body: bytes) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": content_type})
        await response.prepare(request)
        for chunk in chunks:
            await response.write(chunk)
        await asyncio.sleep(LATE_END)
        await response.write_eof()
        return response

    return handler


def _plain_iteration(port: int) -> str:
    """What the issue's client did: the sync SDK, a plain for loop over the stream."""
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-agent", max_retries=0)
    text = ""
    for chunk in client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True):
        if chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
    client.close()
    return text


async def _requests_by_status(port: int) -> dict[str, float]:
    async with aiohttp.ClientSession() as client, client.get(f"http://127.0.0.1:{port}/metrics") as response:
        text = await response.text()
    found: dict[str, float] = {}
    for line in text.splitlines():
        match = re.match(r"repair_proxy_requests_total\{(.*)\} (\S+)", line)
        if match and 'route="chat"' in match.group(1):
            status = re.search(r'status="(\d+)"', match.group(1))
            assert status is not None
            found[status.group(1)] = found.get(status.group(1), 0.0) + float(match.group(2))
    return found


@pytest.mark.parametrize("repair", [True, False], ids=["repair-on", "repair-off"])
async def test_a_stream_read_whole_by_the_sdk_is_a_200_though_the_upstream_ends_late(
    upstream: Upstream, repair: bool
) -> None:
    upstream.reply_with(late_end(sse_chunks("every word arrived")))
    args = ["--upstream", upstream.base_url] + ([] if repair else ["--no-repair"])
    process, port = await spawn_proxy(*args, stdout=asyncio.subprocess.PIPE, speaking=False)
    assert process.stdout is not None
    events: list[dict[str, object]] = []
    reader = asyncio.create_task(read_json_log(process.stdout, events))
    try:
        await wait_healthy(port)
        for _ in range(3):
            assert await asyncio.to_thread(_plain_iteration, port) == "everywordarrived"
        await asyncio.sleep(LATE_END + 0.2)  # the last request's handler is over
        counted = await _requests_by_status(port)
    finally:
        process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.wait(), 30)
        await reader
    lines = [e for e in events if e["event"] == "request" and e["path"] == "/v1/chat/completions"]
    assert [(e["status"], e["end"]) for e in lines] == [(200, "complete")] * 3
    assert counted == {"200": 3.0}


async def test_an_agent_that_leaves_before_the_last_event_is_still_client_gone(upstream: Upstream) -> None:
    """The must-not side: a stream the agent left before its `[DONE]` (the upstream still
    generating) stays a 499 `client_gone`."""
    chunks = sse_chunks("never finished")

    async def stalls(request: web.Request, _body: bytes) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for chunk in chunks[:3]:
            await response.write(chunk)
        await asyncio.sleep(5)  # the agent leaves meanwhile
        return response

    upstream.reply_with(stalls)
    process, port = await spawn_proxy("--upstream", upstream.base_url, stdout=asyncio.subprocess.PIPE, speaking=False)
    assert process.stdout is not None
    events: list[dict[str, object]] = []
    reader = asyncio.create_task(read_json_log(process.stdout, events))
    try:
        await wait_healthy(port)
        body = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True})
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        async with aiohttp.ClientSession() as client, client.post(url, data=body) as response:
            got = b""
            for _ in range(3):  # the upstream's own comment comes first, alone on a loaded machine
                got += await asyncio.wait_for(response.content.readany(), 5)
                if b"data:" in got:
                    break
            assert b"data:" in got
        for _ in range(50):
            if any(e["event"] == "request" for e in events):
                break
            await asyncio.sleep(0.05)
    finally:
        process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.wait(), 30)
        await reader
    (line,) = [e for e in events if e["event"] == "request" and e["path"] == "/v1/chat/completions"]
    assert (line["status"], line["end"]) == (499, "client_gone")


async def test_an_upstream_that_breaks_off_after_the_last_event_cuts_nothing(
    make_proxy: Any, upstream: Upstream
) -> None:
    """The upstream resets its connection after `[DONE]`, before its end of body: the agent has
    the whole stream, ended properly (its client raises nothing), and the request is a 200
    `complete`; the upstream's break is still logged."""
    chunks = sse_chunks("all of it")

    async def breaks(request: web.Request, _body: bytes) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b"".join(chunks))
        await asyncio.sleep(0.2)
        assert request.transport is not None
        request.transport.abort()
        return response

    upstream.reply_with(breaks)
    proxy = await make_proxy({"repair": {"enabled": False}})
    body = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True})
    with structlog.testing.capture_logs() as events:
        async with (
            aiohttp.ClientSession() as client,
            client.post(proxy.make_url("/v1/chat/completions"), data=body) as r,
        ):
            assert await r.read() == b"".join(chunks)
    (line,) = [e for e in events if e["event"] == "request"]
    assert (line["status"], line["end"]) == (200, "complete")
    assert [e["code"] for e in events if e["event"] == "upstream_error"] == ["upstream_broke"]
