"""Hostile and careless input: odd shapes, climbing paths, slow clients, departed clients,
pathological tool output. Each gets a clear answer or a faithful pass-through, nothing lost."""

from __future__ import annotations

import asyncio
import json
import socket

import aiohttp
import openai
import orjson
import pytest
import structlog
from aiohttp import web
from aiohttp.test_utils import TestServer
from chat import Chat, test_run
from support import Upstream, completion, json_reply, post, sse_reply

from proxy.http.runtime.appkeys import METRICS, RUNTIME
from proxy.http.runtime.footprint import WORKING_FACTOR

ACTING = completion(
    "", tool_calls=[{"id": "c", "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}}]
)


def stuck(chat: Chat | None = None) -> Chat:
    chat = chat or Chat()
    for out in ("@pytest_addition_a", "@pytest_addition_b", "@pytest_addition_a"):
        chat.turn(test_run(out))
    return chat


def metric(proxy: TestServer, name: str, **labels: str) -> float:
    value = proxy.app[METRICS].registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


async def test_a_rewrite_keeps_numbers_beyond_64_bits_as_sent(proxy: TestServer, upstream: Upstream) -> None:
    upstream.reply_with(json_reply(ACTING))
    body = stuck().bytes(seed=1).replace(b'"seed":1', b'"seed":18446744073709551616')
    await post(proxy, body)
    sent = upstream.seen[0].body
    assert b'"seed":18446744073709551616' in sent and b"e+19" not in sent
    assert b"[repair-proxy]" in sent, "the request was rewritten"


def codex_items() -> list[dict[str, object]]:
    """A Codex-style stuck transcript: 16 items, 5 of them reasoning with encrypted content."""
    items: list[dict[str, object]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]}
    ]
    outputs = [
        "@pytest_addition_a",
        "@pytest_addition_b",
        "@pytest_addition_a",
        "@pytest_addition_b",
        "@pytest_addition_a",
    ]
    for n, name in enumerate(outputs):
        from chat import output

        items.append({"type": "reasoning", "id": f"rs_{n}", "summary": [], "encrypted_content": f"gAAAA{n}" * 20})
        command = ["bash", "-lc", "cd /workspace && python -m pytest tests/test_parse.py"]
        items.append(
            {
                "type": "function_call",
                "call_id": f"call_{n}",
                "name": "shell",
                "arguments": json.dumps({"command": command}),
            }
        )
        items.append({"type": "function_call_output", "call_id": f"call_{n}", "output": output(name)})
    return items


async def test_a_rewritten_responses_request_keeps_every_item_it_does_not_model(
    proxy: TestServer, upstream: Upstream
) -> None:
    items = codex_items()
    assert len(items) == 16
    tools = [
        {
            "type": "function",
            "name": "shell",
            "parameters": {"type": "object", "properties": {"command": {"type": "array"}}},
        }
    ]
    body = orjson.dumps(
        {"model": "m", "input": items, "tools": tools, "store": False, "include": ["reasoning.encrypted_content"]}
    )
    upstream.reply_with(
        json_reply(b'{"output": [{"type": "function_call", "call_id": "x", "name": "shell", "arguments": "{}"}]}')
    )
    await post(proxy, body, path="/v1/responses")
    sent = upstream.seen[0].body
    received = orjson.loads(sent)["input"]
    injected = [i for i in received if "[repair-proxy]" in str(i.get("content"))]
    assert injected and len(received) == len(items) + len(injected)
    assert [i for i in received if i not in injected] == items
    for item in items:  # every original item byte for byte
        assert orjson.dumps(item) in sent


@pytest.mark.parametrize("odd_id", [["a", "b"], {"id": "x"}, 7, None])
async def test_an_odd_tool_call_id_never_turns_repair_off_for_the_conversation(
    proxy: TestServer, upstream: Upstream, odd_id: object
) -> None:
    upstream.reply_with(json_reply(ACTING))
    chat = Chat()
    chat.messages.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "weird", "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}}
            ],
        }
    )
    chat.messages.append({"role": "tool", "tool_call_id": odd_id, "content": "ok"})
    status, headers, _ = await post(proxy, stuck(chat).bytes())
    assert status == 200 and headers["X-Repair-Trips"] == "stuck_same_diagnostic"
    assert metric(proxy, "repair_proxy_analysis_failed_total", team="default") == 0


@pytest.mark.parametrize(
    "path", ["/v1/../x", "/v1/%2e%2e/x", "/api/../x", "/v1/models/%2E%2E/%2e%2e/admin", "/v1/./models"]
)
async def test_a_path_that_climbs_out_is_refused(proxy: TestServer, upstream: Upstream, path: str) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    head, _, body = (await reader.read()).partition(b"\r\n\r\n")
    writer.close()
    assert head.startswith(b"HTTP/1.1 400")
    assert orjson.loads(body)["error"]["code"] == "invalid_path"
    assert upstream.seen == []


async def test_an_encoded_slash_in_a_model_id_still_passes(proxy: TestServer, upstream: Upstream) -> None:
    upstream.reply_with(json_reply(b'{"id": "org/model"}'))
    async with aiohttp.ClientSession() as client, client.get(str(proxy.make_url("/v1/models/org%2Fmodel"))) as r:
        assert r.status == 200
    assert upstream.seen[0].path in ("/v1/models/org%2Fmodel", "/v1/models/org/model")


async def test_proxy_made_errors_name_the_upstream_and_its_setting(make_proxy, upstream: Upstream) -> None:  # type: ignore[no-untyped-def]
    """502 (nothing listens) and 504 (no answer in time): the agent learns what and which upstream,
    and where it is set (issue 63; with teams the address stays out: test_upstream_failures)."""
    unreachable = await make_proxy(upstream_url="http://127.0.0.1:9/v1")
    status, _, body = await post(unreachable, b"{}")
    message = orjson.loads(body)["error"]["message"]
    assert status == 502 and "the upstream http://127.0.0.1:9/v1 is unreachable" in message
    assert "--upstream, REPAIR_PROXY_UPSTREAM or upstream.base_url" in message

    async def silent(_request: web.Request, _body: bytes) -> web.StreamResponse:
        await asyncio.sleep(2)
        return web.Response(text="late")

    upstream.reply_with(silent)
    slow = await make_proxy({"upstream": {"first_byte_timeout": 0.2}})
    status, _, body = await post(slow, b"{}")
    assert status == 504 and orjson.loads(body)["error"]["code"] == "upstream_timeout"
    assert f"the upstream {upstream.base_url} sent no response" in orjson.loads(body)["error"]["message"]


async def test_a_client_gone_mid_stream_is_counted_499_not_500(proxy: TestServer, upstream: Upstream) -> None:
    async def endless(request: web.Request, _body: bytes) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for i in range(200):  # bounded: 10 s at most
            await response.write(b'data: {"n": %d}\n\n' % i)
            await asyncio.sleep(0.05)
        return response

    upstream.reply_with(endless)
    async with aiohttp.ClientSession() as client:
        response = await client.post(str(proxy.make_url("/v1/models")), data=b"{}")
        await response.content.readany()
        response.close()
    for _ in range(100):  # until the proxy has finished with the request (5 s at most)
        if metric(proxy, "repair_proxy_requests_total", route="other", status="499", team="default", model="none"):
            break
        await asyncio.sleep(0.05)
    assert metric(proxy, "repair_proxy_requests_total", route="other", status="499", team="default", model="none") == 1
    assert metric(proxy, "repair_proxy_requests_total", route="other", status="500", team="default", model="none") == 0


MARKER = "ZEBRA-7f31-TOOL-OUTPUT-MARKER"


@pytest.mark.parametrize("log_prompts", [False, True])
async def test_tool_output_reaches_the_logs_only_with_log_prompts(
    make_proxy, upstream: Upstream, log_prompts: bool
) -> None:  # type: ignore[no-untyped-def]
    proxy = await make_proxy({"logging": {"log_prompts": log_prompts}})
    upstream.reply_with(json_reply(ACTING))
    failing = (
        "E       AssertionError: " + MARKER + "\nFAILED tests/test_parse.py::test_addition - AssertionError\n1 failed"
    )
    chat = Chat()
    with structlog.testing.capture_logs() as events:
        for _ in range(8):  # to the hand-back
            await post(proxy, chat.turn(test_run(failing)).bytes())
    text = json.dumps(events, default=str)
    assert any(e["event"] == "repair_handback" for e in events)
    assert (MARKER in text) is log_prompts


async def test_a_slow_client_cannot_hold_a_connection(make_proxy) -> None:  # type: ignore[no-untyped-def]
    proxy = await make_proxy({"server": {"header_timeout": 0.5}})
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
        loop = asyncio.get_running_loop()
        started = loop.time()
        closed = False
        for _ in range(40):  # trickle a header line every 0.1 s, 4 s at most
            await asyncio.sleep(0.1)
            try:
                sock.sendall(b"X-Slow: 1\r\n")
            except OSError:
                closed = True
                break
        assert closed and loop.time() - started < 3


async def test_a_body_that_stops_arriving_gets_408(make_proxy, upstream: Upstream) -> None:  # type: ignore[no-untyped-def]
    proxy = await make_proxy({"server": {"body_timeout": 0.3}})
    reader, writer = await asyncio.open_connection("127.0.0.1", proxy.port)
    writer.write(b'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"messages":')
    await writer.drain()
    head = await asyncio.wait_for(reader.read(4096), 5)  # the answer, at once (the socket then lingers)
    writer.close()
    assert head.startswith(b"HTTP/1.1 408") and b"Connection: close" in head
    assert upstream.seen == []


async def test_past_the_analysis_budget_the_request_goes_up_as_it_came(make_proxy, upstream: Upstream) -> None:  # type: ignore[no-untyped-def]
    proxy = await make_proxy({"limits": {"analysis_budget_ms": 0.0001}})
    upstream.reply_with(json_reply(ACTING))
    body = stuck().bytes()
    status, _, _ = await post(proxy, body)
    assert status == 200 and upstream.seen[0].body == body
    assert metric(proxy, "repair_proxy_analysis_abandoned_total", team="default") == 1


async def test_a_large_body_is_analysed_off_the_event_loop_and_still_repaired(
    proxy: TestServer, upstream: Upstream
) -> None:
    upstream.reply_with(json_reply(ACTING))
    chat = Chat(system="You are a careful coding agent. " + "Be thorough. " * 30000)
    _status, headers, _ = await post(proxy, stuck(chat).bytes())
    assert len(upstream.seen[0].body) > 256 * 1024
    assert headers["X-Repair-Trips"] == "stuck_same_diagnostic"


async def test_an_analysed_body_is_charged_its_working_memory_against_the_byte_bound(
    make_proxy, upstream: Upstream
) -> None:  # type: ignore[no-untyped-def]
    upstream.reply_with(json_reply(ACTING))
    body = stuck().bytes()
    analysing, plain = await make_proxy(), await make_proxy({"repair": {"enabled": False}})
    for proxy in (analysing, plain):
        await post(proxy, body)
    charged = [p.app[RUNTIME].current.shared.footprint.working for p in (analysing, plain)]
    assert charged == [WORKING_FACTOR * len(body), 0]  # not by a proxy that only relays


async def test_an_unreadable_streamed_reply_passes_as_it_came(proxy: TestServer, upstream: Upstream) -> None:
    """A Responses stream whose event types are not strings: no 500, the bytes go through."""
    events = [
        b'event: x\ndata: {"type": ["response.output_text.delta"], "delta": 1}\n\n',
        b'data: {"type": {"a": 1}}\n\n',
    ]
    upstream.reply_with(sse_reply(events))
    from dialects import responses_body

    status, _, body = await post(proxy, responses_body(Chat().turn(test_run()), stream=True), path="/v1/responses")
    assert status == 200 and body == b"".join(events)


def breaking(chunks: list[bytes]) -> object:
    """An upstream that sends `chunks`, then drops the connection mid-stream."""

    async def handler(request: web.Request, _body: bytes) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for chunk in chunks:
            await response.write(chunk)
        assert request.transport is not None
        request.transport.abort()
        return response

    return handler


async def test_a_stream_that_breaks_is_never_passed_off_as_complete(
    plain_proxy: TestServer, upstream: Upstream
) -> None:
    """Relayed: the SDK sees the break as an error, not a clean end."""
    from support import sdk, sse_chunks

    upstream.reply_with(breaking(sse_chunks("one two three")[:3]))  # type: ignore[arg-type]
    async with sdk(plain_proxy) as client:
        with pytest.raises(Exception) as caught:
            stream = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            async for _chunk in stream:
                pass
    assert isinstance(caught.value, openai.APIConnectionError), "a cut stream, never a clean end"


async def test_a_held_stream_that_breaks_is_a_502_the_sdk_raises(proxy: TestServer, upstream: Upstream) -> None:
    """Held by the reply stage (nothing sent yet): the agent gets the proxy's 502 in OpenAI's shape."""
    from support import sdk, sse_chunks

    upstream.reply_with(breaking(sse_chunks("")[:2]))  # type: ignore[arg-type]
    chat = Chat().turn(test_run())
    async with sdk(proxy) as client:
        with pytest.raises(Exception) as caught:
            stream = await client.chat.completions.create(
                model="m", messages=chat.messages, tools=chat.tools, stream=True
            )  # type: ignore[arg-type]
            async for _chunk in stream:
                pass
    assert getattr(caught.value, "status_code", None) == 502 and getattr(caught.value, "code", None) == "upstream_broke"


async def test_a_path_the_proxy_does_not_serve_is_an_openai_shaped_404(proxy: TestServer) -> None:
    """`/foo` answered aiohttp's plain `404: Not Found` (issue 63); now the proxy's own error in
    OpenAI's shape, saying what it serves. The SDK pointed at the root instead of `/v1` (a
    newcomer's mistake) raises its own `NotFoundError`, with that message."""
    async with aiohttp.ClientSession() as client, client.get(proxy.make_url("/foo")) as response:
        assert response.status == 404 and response.content_type == "application/json"
        error = (await response.json())["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert (error["type"], error["code"], error["param"]) == ("invalid_request_error", "not_found", None)
    assert error["message"].startswith("no route for GET /foo:") and "/v1/" in error["message"]
    async with openai.AsyncOpenAI(base_url=str(proxy.make_url("")), api_key="k", max_retries=0) as client:
        with pytest.raises(openai.NotFoundError) as caught:
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert "no route for POST /chat/completions" in caught.value.message


async def test_a_method_a_route_does_not_take_is_an_openai_shaped_405(proxy: TestServer) -> None:
    async with aiohttp.ClientSession() as client, client.post(proxy.make_url("/healthz")) as response:
        assert response.status == 405 and "GET" in response.headers["Allow"]
        error = (await response.json())["error"]
    assert (error["code"], error["type"]) == ("method_not_allowed", "invalid_request_error")
    assert "POST /healthz is not allowed here" in error["message"]
