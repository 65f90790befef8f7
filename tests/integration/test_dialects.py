"""The Responses API and Ollama's native chat get the same repair as chat completions."""

from __future__ import annotations

import aiohttp
import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from chat import Chat, edit, test_run
from dialects import body_for, responses_body
from support import Upstream, json_reply, post, sdk, sse_reply

PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "ollama": "/api/chat"}
RESPONSE_CALL = orjson.dumps(
    {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": "m",
        "output": [{"type": "function_call", "call_id": "c9", "name": "execute_bash", "arguments": "{}"}],
    }
)
OLLAMA_CALL = orjson.dumps(
    {
        "model": "m",
        "message": {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "execute_bash", "arguments": {}}}],
        },
        "done": True,
    }
)
CHAT_CALL = orjson.dumps(
    {
        "id": "x",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c9", "type": "function", "function": {"name": "execute_bash", "arguments": "{}"}}
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
    }
)
ACTING = {"chat": CHAT_CALL, "responses": RESPONSE_CALL, "ollama": OLLAMA_CALL}


def injected(dialect: str, seen: object) -> list[str]:
    data = orjson.loads(seen.body)  # type: ignore[attr-defined]
    if dialect == "responses":
        return [
            i["content"]
            for i in data["input"]
            if i.get("type") == "message" and "[repair-proxy]" in str(i.get("content"))
        ]
    return [m["content"] for m in data["messages"] if "[repair-proxy]" in str(m.get("content"))]


@pytest.mark.parametrize("dialect", ["chat", "responses", "ollama"])
async def test_same_stuck_scenario_same_trips_in_every_dialect(
    proxy: TestServer, upstream: Upstream, dialect: str
) -> None:
    """fail, edit, fail, edit, fail: the third failure trips in each dialect, and the nudge sits in that dialect's own shape."""
    upstream.reply_with(json_reply(ACTING[dialect]))
    chat = Chat()
    trips = []
    for step in (test_run(), edit(), test_run("@pytest_addition_b"), edit("a", "b"), test_run()):
        _status, headers, _body = await post(proxy, body_for(dialect, chat.turn(step)), path=PATHS[dialect])
        trips.append(headers.get("X-Repair-Trips"))
    assert trips == [None, None, None, None, "stuck_same_diagnostic"]
    assert upstream.seen[-1].path == PATHS[dialect]
    notes = injected(dialect, upstream.seen[-1])
    assert len(notes) == 1 and "assert 4 == 3" in notes[0]
    if dialect == "responses":
        items = orjson.loads(upstream.seen[-1].body)["input"]
        assert items[-1]["type"] == "message" and items[-1]["role"] == "system"
        assert items[:-1] == orjson.loads(body_for(dialect, chat))["input"]  # every original item kept as it was


@pytest.mark.parametrize("dialect", ["responses", "ollama"])
async def test_streams_are_byte_identical_when_nothing_is_injected(
    proxy: TestServer, upstream: Upstream, dialect: str
) -> None:
    """Responses typed SSE events and Ollama NDJSON lines pass through unchanged, and so do the requests."""
    if dialect == "responses":
        chunks = [
            b'event: response.created\ndata: {"type":"response.created","sequence_number":0}\n\n',
            b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"hi"}\n\n',
            b'event: response.completed\ndata: {"type":"response.completed"}\n\n',
        ]
        content_type = "text/event-stream"
    else:
        chunks = [
            b'{"model":"m","message":{"role":"assistant","content":"h"},"done":false}\n',
            b'{"model":"m","message":{"role":"assistant","content":"i"},"done":false}\n',
            b'{"model":"m","done":true,"done_reason":"stop"}\n',
        ]
        content_type = "application/x-ndjson"

    async def stream(request: web.Request, _body: bytes) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": content_type})
        await response.prepare(request)
        for chunk in chunks:
            await response.write(chunk)
        await response.write_eof()
        return response

    upstream.reply_with(stream)
    body = body_for(dialect, Chat().turn(test_run()), stream=True)
    status, headers, received = await post(proxy, body, path=PATHS[dialect])
    assert status == 200 and received == b"".join(chunks)
    assert upstream.seen[0].body == body
    assert headers["X-Accel-Buffering"] == "no"


async def test_previous_response_id_is_forwarded_untouched(proxy: TestServer, upstream: Upstream) -> None:
    """History kept upstream is invisible to the proxy: not analysed, bytes unchanged."""
    upstream.reply_with(json_reply(RESPONSE_CALL))
    chat = Chat()
    for step in (test_run(), test_run("@pytest_addition_b"), test_run()):
        chat.turn(step)
    body = responses_body(chat, previous_response_id="resp_earlier")
    _status, headers, _ = await post(proxy, body, path=PATHS["responses"])
    assert upstream.seen[0].body == body
    assert "X-Repair-Conversation" not in headers


@pytest.mark.parametrize("dialect", ["responses", "ollama"])
@pytest.mark.parametrize("stream", [False, True])
async def test_handback_speaks_each_dialect(
    make_proxy, upstream: Upstream, tmp_path, dialect: str, stream: bool
) -> None:
    """A halt answers in the dialect's own reply shape, streamed or not."""
    from support import policy_toml

    policy = tmp_path / "p.toml"
    policy.write_text(policy_toml({"patterns.stuck_same_diagnostic": {"after": 2, "action": "halt", "escalate": []}}))
    proxy = await make_proxy(policy=str(policy))
    chat = Chat().turn(test_run()).turn(test_run("@pytest_addition_b"))
    status, headers, body = await post(proxy, body_for(dialect, chat, stream=stream), path=PATHS[dialect])
    assert status == 200 and headers["X-Repair-Outcome"] == "incomplete"
    assert upstream.seen == []
    if dialect == "responses" and not stream:
        reply = orjson.loads(body)
        assert reply["object"] == "response" and "INCOMPLETE" in reply["output"][0]["content"][0]["text"]
    elif dialect == "responses":
        events = [orjson.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: ")]
        assert [e["type"] for e in events][-1] == "response.completed"
        assert any("INCOMPLETE" in e.get("delta", "") for e in events)
    elif not stream:
        reply = orjson.loads(body)
        assert reply["done"] is True and "INCOMPLETE" in reply["message"]["content"]
    else:
        lines = [orjson.loads(line) for line in body.splitlines()]
        assert lines[-1]["done"] is True and "INCOMPLETE" in lines[0]["message"]["content"]


@pytest.mark.parametrize("dialect", ["responses", "ollama"])
async def test_done_gate_speaks_each_dialect(proxy: TestServer, upstream: Upstream, dialect: str) -> None:
    """A premature stop in the dialect's shape is sent back; the call that follows is relayed."""
    stop = {
        "responses": orjson.dumps(
            {
                "object": "response",
                "output": [
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}
                ],
            }
        ),
        "ollama": orjson.dumps({"model": "m", "message": {"role": "assistant", "content": "Done."}, "done": True}),
    }[dialect]
    upstream.reply_with(json_reply(stop), json_reply(ACTING[dialect]))
    chat = Chat().turn(test_run()).turn(edit())
    _status, _headers, body = await post(proxy, body_for(dialect, chat), path=PATHS[dialect])
    assert len(upstream.seen) == 2 and body == ACTING[dialect]
    retry = orjson.loads(upstream.seen[1].body)
    if dialect == "responses":
        assert retry["tool_choice"] == {"type": "function", "name": "execute_bash"}
        assert "Do not stop yet" in retry["input"][-1]["content"]
    else:
        assert "tool_choice" not in retry  # Ollama has none: the instruction alone
        assert "Do not stop yet" in retry["messages"][-1]["content"]


async def test_sdk_responses_create_streaming_and_not(proxy: TestServer, upstream: Upstream) -> None:
    """The real openai SDK's responses.create works through the proxy, streamed and not."""
    upstream.reply_with(
        json_reply(
            orjson.dumps(
                {
                    "id": "resp_1",
                    "object": "response",
                    "created_at": 1,
                    "status": "completed",
                    "model": "m",
                    "output": [
                        {
                            "type": "message",
                            "id": "msg_1",
                            "status": "completed",
                            "role": "assistant",
                            "content": [{"type": "output_text", "text": "hello", "annotations": []}],
                        }
                    ],
                    "parallel_tool_calls": True,
                    "tool_choice": "auto",
                    "tools": [],
                }
            )
        ),
        sse_reply(
            [
                b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"hel","sequence_number":1,"logprobs":[]}\n\n',
                b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"lo","sequence_number":2,"logprobs":[]}\n\n',
            ]
        ),
    )
    async with sdk(proxy) as client:
        result = await client.responses.create(model="m", input="say hello")
        text = ""
        async for event in await client.responses.create(model="m", input="say hello", stream=True):
            if event.type == "response.output_text.delta":
                text += event.delta
    assert result.output_text == "hello"
    assert text == "hello"
    assert [s.path for s in upstream.seen] == ["/v1/responses", "/v1/responses"]


async def test_other_ollama_paths_pass_through(proxy: TestServer, upstream: Upstream) -> None:
    """/api/tags and friends go to the upstream's root untouched."""
    upstream.reply_with(json_reply(b'{"models":[]}'))
    async with aiohttp.ClientSession() as client, client.get(str(proxy.make_url("/api/tags"))) as resp:
        assert resp.status == 200 and await resp.read() == b'{"models":[]}'
    assert upstream.seen[0].path == "/api/tags"


@pytest.mark.parametrize("dialect", ["responses", "ollama"])
async def test_streaming_done_gate_holds_only_until_a_call(proxy: TestServer, upstream: Upstream, dialect: str) -> None:
    """Streamed: a stop is held and re-asked; the stream that calls a tool is relayed byte for byte."""
    if dialect == "responses":
        stop = [
            b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"Done."}\n\n',
            b'event: response.completed\ndata: {"type":"response.completed"}\n\n',
        ]
        acting = [
            b'event: response.output_item.added\ndata: {"type":"response.output_item.added","item":{"type":"function_call","name":"execute_bash"}}\n\n',
            b'event: response.completed\ndata: {"type":"response.completed"}\n\n',
        ]
    else:
        stop = [b'{"message":{"role":"assistant","content":"Done."},"done":false}\n', b'{"done":true}\n']
        acting = [
            b'{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"execute_bash","arguments":{}}}]},"done":false}\n',
            b'{"done":true}\n',
        ]
    upstream.reply_with(sse_reply(stop), sse_reply(acting))
    chat = Chat().turn(test_run()).turn(edit())
    status, headers, body = await post(proxy, body_for(dialect, chat, stream=True), path=PATHS[dialect])
    assert status == 200 and body == b"".join(acting)
    assert len(upstream.seen) == 2 and "X-Repair-Outcome" not in headers


async def test_a_streamed_responses_handback_reads_whole_in_the_sdks_stream_helper(
    make_proxy, upstream: Upstream, tmp_path
) -> None:
    """Codex and the SDK's `responses.stream()` build the reply from the item and content-part
    events: the hand-back carries every one of them, so the helper's final response holds the
    text (before, the helper raised IndexError and Codex ended the turn showing nothing)."""
    from support import policy_toml

    policy = tmp_path / "p.toml"
    policy.write_text(policy_toml({"patterns.stuck_same_diagnostic": {"after": 2, "action": "halt", "escalate": []}}))
    proxy = await make_proxy(policy=str(policy))
    request = orjson.loads(responses_body(Chat().turn(test_run()).turn(test_run("@pytest_addition_b"))))
    async with (
        sdk(proxy) as client,
        client.responses.stream(
            model="m", input=request["input"], instructions=request.get("instructions") or None, tools=request["tools"]
        ) as events,
    ):
        kinds = [event.type async for event in events]
        final = await events.get_final_response()
    assert upstream.seen == []
    assert "response.output_item.done" in kinds and "response.content_part.done" in kinds
    assert final.status == "completed" and "INCOMPLETE" in final.output_text
