"""A streamed reply's text reaches the agent at once, while only what can still be gated is held:
a call the block rung judges whole, the end of a reply the finish or action gate may send back.
When the stage asks again, the reply the model gives then goes out on the same stream as the rest
of the first. The real `openai` SDK's stream helpers read the result, and the upstream waits
before it sends the call (or the end) until the agent has the text: if the proxy held the text,
that wait would run out and the test would say so."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import openai
import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from chat import OPENHANDS_TOOLS, Chat, test_run
from dialects import body_for, responses_body
from support import Endless, Upstream, chunk_event, completion, json_reply, sdk, sse_reply

RERUN = {"command": "cd /workspace && python -m pytest tests/test_parse.py"}
LOOK = {"command": "view", "path": "/workspace/tests/test_parse.py"}
SAID = "I will run the tests once more to be sure."
THEN = "Let me read the failing test instead."
STUCK = Chat().turn(test_run()).turn(test_run()).turn(test_run())
WAIT = 5.0  # seconds the upstream waits for the agent to have the text; a bound, never reached when right


class TextFirst:
    """The upstream's side of the wait: the stream pauses before chunk `at` until the agent says
    it has the text (`arrived`), or WAIT runs out (recorded in `waited_out`)."""

    def __init__(self, at: int) -> None:
        self.at = at
        self.arrived = asyncio.Event()
        self.waited_out = False

    async def __call__(self, index: int) -> None:
        if index != self.at:
            return
        try:
            await asyncio.wait_for(self.arrived.wait(), WAIT)
        except TimeoutError:
            self.waited_out = True


def chat_stream(text: str, name: str, arguments: dict[str, Any], call_id: str) -> list[bytes]:
    """A streamed chat reply: role, the text word by word, one call in two pieces, finish, usage, [DONE]."""
    base = {"id": f"chatcmpl-{call_id}", "object": "chat.completion.chunk", "created": 1700000000, "model": "m"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return chunk_event(base, delta, finish)

    raw = orjson.dumps(arguments).decode()
    call = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": raw[:10]}}
    return [
        chunk({"role": "assistant", "content": ""}),
        *(chunk({"content": word}) for word in text.replace(" ", " \0").split("\0")),
        chunk({"tool_calls": [call]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": raw[10:]}}]}),
        chunk({}, "tool_calls"),
        b"data: " + orjson.dumps({**base, "choices": [], "usage": {"prompt_tokens": 9, "total_tokens": 9}}) + b"\n\n",
        b"data: [DONE]\n\n",
    ]


def first_call_at(chunks: list[bytes]) -> int:
    return next(i for i, chunk in enumerate(chunks) if b"tool_calls" in chunk)


@pytest.fixture
async def client(proxy: TestServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with sdk(proxy) as opened:
        yield opened


async def _stream(client: openai.AsyncOpenAI, wait: TextFirst, expected: str, chat: Chat = STUCK) -> Any:
    """The agent sends `chat` and reads the stream through the SDK's helper; it tells the upstream
    once `expected` has arrived. The helper's final message."""
    async with client.chat.completions.stream(
        model="m",
        messages=chat.messages,  # type: ignore[arg-type]
        tools=OPENHANDS_TOOLS,  # type: ignore[arg-type]
    ) as stream:
        text = ""
        async for event in stream:
            if event.type == "content.delta":
                text += event.delta
                if text == expected:
                    wait.arrived.set()
        return (await stream.get_final_completion()).choices[0].message


async def test_text_before_a_futile_call_reaches_the_agent_before_the_call_is_judged(
    client: openai.AsyncOpenAI, upstream: Upstream
) -> None:
    """The fourth identical run, after a sentence: the sentence arrives while the upstream is
    still to send the call; the call is refused and the agent's one message is the sentence, the
    model's second answer set apart by a blank line, and its other call."""
    futile = chat_stream(SAID, "execute_bash", RERUN, "call_again")
    wait = TextFirst(first_call_at(futile))
    upstream.reply_with(
        sse_reply(futile, before_each=wait), sse_reply(chat_stream(THEN, "str_replace_editor", LOOK, "call_look"))
    )
    message = await _stream(client, wait, SAID)
    assert not wait.waited_out
    assert message.role == "assistant" and message.content == f"{SAID}\n\n{THEN}"
    calls = message.tool_calls or []
    assert [(c.id, c.function.name, orjson.loads(c.function.arguments)) for c in calls] == [
        ("call_look", "str_replace_editor", LOOK)
    ]
    assert len(upstream.seen) == 2
    assert "Your call was not run" in upstream.seen[1].json()["messages"][-1]["content"]


async def test_a_hand_back_after_text_went_ahead_ends_the_agents_stream_with_it(
    client: openai.AsyncOpenAI, upstream: Upstream
) -> None:
    """The sentence went ahead, the call was refused, and asked again the model proposed the same
    call: the agent's one message is its sentence and the hand-back after it, no call."""
    futile = chat_stream(SAID, "execute_bash", RERUN, "call_again")
    wait = TextFirst(first_call_at(futile))
    upstream.reply_with(
        sse_reply(futile, before_each=wait), sse_reply(chat_stream("", "execute_bash", RERUN, "call_same"))
    )
    message = await _stream(client, wait, SAID)
    assert not wait.waited_out
    assert message.content.startswith(f"{SAID}\n\n") and "INCOMPLETE" in message.content
    assert not message.tool_calls
    assert len(upstream.seen) == 2


async def test_text_before_a_call_that_can_help_flows_and_the_stream_is_byte_for_byte(
    proxy: TestServer, upstream: Upstream
) -> None:
    """The block rung is armed (the check failed) but the call reads the failing test: the text
    goes at once, the call after it is judged and passes, the agent's bytes are the upstream's."""
    chunks = chat_stream(SAID, "str_replace_editor", LOOK, "call_look")
    wait = TextFirst(first_call_at(chunks))
    upstream.reply_with(sse_reply(chunks, before_each=wait))
    url = str(proxy.make_url("/v1/chat/completions"))
    got = b""
    async with aiohttp.ClientSession() as session, session.post(url, data=body_for("chat", STUCK, stream=True)) as resp:
        async for piece in resp.content.iter_any():
            got += piece
            if SAID.rsplit(maxsplit=1)[-1].encode() in got:
                wait.arrived.set()
    assert not wait.waited_out
    assert got == b"".join(chunks)
    assert len(upstream.seen) == 1


async def test_an_ollama_stream_sends_its_text_first_and_the_other_call_after_it(
    proxy: TestServer, upstream: Upstream
) -> None:
    def lines(text: str, name: str, arguments: dict[str, Any]) -> list[bytes]:
        said = [
            orjson.dumps({"model": "m", "message": {"role": "assistant", "content": w}, "done": False}) + b"\n"
            for w in text.replace(" ", " \0").split("\0")
        ]
        call = {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": name, "arguments": arguments}}],
        }
        return [
            *said,
            orjson.dumps({"model": "m", "message": call, "done": False}) + b"\n",
            b'{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}\n',
        ]

    futile = lines(SAID, "execute_bash", RERUN)
    wait = TextFirst(len(futile) - 2)
    upstream.reply_with(sse_reply(futile, before_each=wait), sse_reply(lines(THEN, "str_replace_editor", LOOK)))
    url = str(proxy.make_url("/api/chat"))
    got = b""
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=body_for("ollama", STUCK, stream=True)) as resp,
    ):
        async for piece in resp.content.iter_any():
            got += piece
            if SAID.rsplit(maxsplit=1)[-1].encode() in got:
                wait.arrived.set()
    assert not wait.waited_out
    events = [orjson.loads(line) for line in got.splitlines()]
    assert "".join(e["message"]["content"] for e in events) == f"{SAID}\n\n{THEN}"
    assert [c["function"]["name"] for e in events for c in e["message"].get("tool_calls", [])] == ["str_replace_editor"]
    assert len(upstream.seen) == 2


def responses_stream(text: str, arguments: dict[str, Any], call_id: str) -> list[bytes]:
    """A streamed response as OpenAI sends one: a message item with the text, then a call item."""
    response = {"id": f"resp_{call_id}", "object": "response", "created_at": 1, "model": "m", "output": []}
    message = {"type": "message", "id": f"msg_{call_id}", "role": "assistant", "status": "in_progress", "content": []}
    part = {"type": "output_text", "text": "", "annotations": []}
    done_part = {**part, "text": text}
    done_message = {**message, "status": "completed", "content": [done_part]}
    raw = orjson.dumps(arguments).decode()
    call = {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": "execute_bash", "arguments": ""}
    done_call = {**call, "arguments": raw, "status": "completed"}
    at_text = {"item_id": message["id"], "output_index": 0, "content_index": 0}
    at_call = {"item_id": call["id"], "output_index": 1}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**response, "status": "in_progress"}},
        {"type": "response.in_progress", "response": {**response, "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": message},
        {"type": "response.content_part.added", **at_text, "part": part},
        *({"type": "response.output_text.delta", **at_text, "delta": w, "logprobs": []} for w in text.split(" ")),
        {"type": "response.output_text.done", **at_text, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **at_text, "part": done_part},
        {"type": "response.output_item.done", "output_index": 0, "item": done_message},
        {"type": "response.output_item.added", "output_index": 1, "item": {**call, "status": "in_progress"}},
        {"type": "response.function_call_arguments.delta", **at_call, "delta": raw},
        {"type": "response.function_call_arguments.done", **at_call, "arguments": raw},
        {"type": "response.output_item.done", "output_index": 1, "item": done_call},
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "output": [done_message, done_call]},
        },
    ]
    return [
        b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps({**e, "sequence_number": n}) + b"\n\n"
        for n, e in enumerate(events)
    ]


async def test_a_responses_stream_continues_with_the_later_items_numbered_on(
    proxy: TestServer, upstream: Upstream
) -> None:
    """In the Responses API the later reply's items follow the ones sent; the SDK's stream helper
    builds one response of them all, under the first response's id."""
    futile = responses_stream("Running the tests again.", RERUN, "c_again")
    wait = TextFirst(next(i for i, c in enumerate(futile) if b'"function_call"' in c))
    better = responses_stream("Reading the test first.", {"command": "cat tests/test_parse.py"}, "c_look")
    upstream.reply_with(sse_reply(futile, before_each=wait), sse_reply(better))
    request = orjson.loads(responses_body(STUCK))
    async with (
        sdk(proxy) as client,
        client.responses.stream(model="m", input=request["input"], tools=request["tools"]) as events,
    ):
        numbers = []
        async for event in events:
            numbers.append(event.sequence_number)
            if event.type == "response.output_text.done":
                wait.arrived.set()
        final = await events.get_final_response()
    assert not wait.waited_out
    assert numbers == list(range(len(numbers)))
    assert final.id == "resp_c_again"
    assert [item.type for item in final.output] == ["message", "message", "function_call"]
    assert final.output_text == "Running the tests again.Reading the test first."
    call = final.output[-1]
    assert call.type == "function_call" and orjson.loads(call.arguments) == {"command": "cat tests/test_parse.py"}
    assert len(upstream.seen) == 2


async def _cut_off(request: web.Request, _body: bytes) -> web.StreamResponse:
    """An upstream that drops the connection before it answers."""
    assert request.transport is not None
    request.transport.close()
    await asyncio.sleep(0.05)
    return web.Response()


async def test_a_retry_the_upstream_drops_gives_the_agent_the_first_reply_after_its_text(
    client: openai.AsyncOpenAI, upstream: Upstream
) -> None:
    """Fail-open: the re-ask never came back; the agent's stream ends with the model's own call,
    after the text it already had."""
    futile = chat_stream(SAID, "execute_bash", RERUN, "call_again")
    wait = TextFirst(first_call_at(futile))
    upstream.reply_with(sse_reply(futile, before_each=wait), _cut_off)
    message = await _stream(client, wait, SAID)
    assert not wait.waited_out
    assert message.content == SAID
    assert [(c.id, orjson.loads(c.function.arguments)) for c in message.tool_calls or []] == [("call_again", RERUN)]
    assert len(upstream.seen) == 2


async def test_a_retry_the_upstream_drops_gives_the_agent_the_first_whole_reply(
    client: openai.AsyncOpenAI, upstream: Upstream
) -> None:
    """The same, not streamed: before, the dropped retry reached the agent as a 502 and the
    model's reply was lost."""
    first = {
        "id": "call_again",
        "type": "function",
        "function": {"name": "execute_bash", "arguments": orjson.dumps(RERUN).decode()},
    }
    upstream.reply_with(json_reply(completion("", tool_calls=[first])), _cut_off)
    result = await client.chat.completions.with_raw_response.create(
        model="m",
        messages=STUCK.messages,  # type: ignore[arg-type]
        tools=OPENHANDS_TOOLS,  # type: ignore[arg-type]
    )
    assert result.headers["X-Repair-Outcome"] == "futile"
    assert [c.id for c in result.parse().choices[0].message.tool_calls or []] == ["call_again"]
    assert len(upstream.seen) == 2


async def test_a_stream_that_breaks_after_its_text_went_ahead_is_cut_for_the_agent(
    proxy: TestServer, upstream: Upstream
) -> None:
    """Never a "complete" stream short: the upstream breaks off after the text, before its call;
    the agent's connection is cut, and it reads an error, not an ending."""
    chunks = chat_stream(SAID, "execute_bash", RERUN, "call_again")
    wait = TextFirst(first_call_at(chunks))

    async def breaks(request: web.Request, body: bytes) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for index, chunk in enumerate(chunks):
            await wait(index)
            if index == wait.at:
                break
            await response.write(chunk)
        assert request.transport is not None
        request.transport.close()
        return response

    upstream.reply_with(breaks)
    url = str(proxy.make_url("/v1/chat/completions"))
    got = b""
    async with aiohttp.ClientSession() as session, session.post(url, data=body_for("chat", STUCK, stream=True)) as resp:
        assert resp.status == 200
        with pytest.raises(aiohttp.ClientPayloadError):
            async for piece in resp.content.iter_any():
                got += piece
                if SAID.rsplit(maxsplit=1)[-1].encode() in got:
                    wait.arrived.set()
    assert not wait.waited_out
    assert got == b"".join(chunks[: wait.at])


def prose_stream(text: str) -> list[bytes]:
    """A streamed chat reply of text alone: role, the words, finish, [DONE]."""
    base = {"id": "chatcmpl-prose", "object": "chat.completion.chunk", "created": 1700000000, "model": "m"}
    words = [chunk_event(base, {"content": w}) for w in text.replace(" ", " \0").split("\0")]
    opening = chunk_event(base, {"role": "assistant", "content": ""})
    return [opening, *words, chunk_event(base, {}, "stop"), b"data: [DONE]\n\n"]


FAILING = Chat().turn(test_run())
CLAIM = "The parser is fixed now."


async def test_a_final_answer_on_a_live_failure_goes_ahead_and_the_call_asked_for_follows_it(
    client: openai.AsyncOpenAI, upstream: Upstream
) -> None:
    """The finish gate holds only the end of a text-only reply: the agent reads the claim as it
    comes; the reply ends without a call while the check fails, the model is asked again, and its
    call closes the same message."""
    first = prose_stream(CLAIM)
    wait = TextFirst(len(first) - 2)  # the finish chunk waits for the agent to have the text
    upstream.reply_with(
        sse_reply(first, before_each=wait), sse_reply(chat_stream(THEN, "execute_bash", RERUN, "call_rerun"))
    )
    message = await _stream(client, wait, CLAIM, FAILING)
    assert not wait.waited_out
    assert message.content == f"{CLAIM}\n\n{THEN}"
    assert [c.id for c in message.tool_calls or []] == ["call_rerun"]
    assert len(upstream.seen) == 2


async def test_when_the_gate_gives_up_after_text_went_ahead_the_agent_has_the_first_answer_alone(
    client: openai.AsyncOpenAI, upstream: Upstream
) -> None:
    """Asked again, the model answers with text again: the agent's message is its first answer,
    ended as it came; the second text is not added to it."""
    first = prose_stream(CLAIM)
    wait = TextFirst(len(first) - 2)
    upstream.reply_with(sse_reply(first, before_each=wait), sse_reply(prose_stream("Really, it is done.")))
    message = await _stream(client, wait, CLAIM, FAILING)
    assert not wait.waited_out
    assert message.content == CLAIM and not message.tool_calls
    assert len(upstream.seen) == 2


async def test_an_agent_that_leaves_while_text_goes_ahead_stops_the_generation(
    proxy: TestServer, upstream: Upstream
) -> None:
    """The agent goes away after the first words: the upstream's response is torn down at the
    next piece of text the proxy cannot deliver, long before the reply's end."""
    base = {"id": "chatcmpl-long", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    talks_on = Endless(
        lambda i: chunk_event(base, {"role": "assistant", "content": ""} if i == 0 else {"content": f"word{i} "})
    )
    upstream.reply_with(talks_on)
    url = str(proxy.make_url("/v1/chat/completions"))
    async with aiohttp.ClientSession() as session:
        resp = await session.post(url, data=body_for("chat", STUCK, stream=True))
        got = b""
        while b"word2" not in got:
            got += await asyncio.wait_for(resp.content.readany(), WAIT)
        resp.close()
    await asyncio.wait_for(talks_on.stopped.wait(), WAIT)
    at_stop = len(talks_on.written)
    assert at_stop < 50, "the upstream kept generating after the agent left"
    await asyncio.sleep(0.3)
    assert len(talks_on.written) == at_stop
