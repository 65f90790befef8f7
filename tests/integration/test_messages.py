"""Anthropic Messages (`/v1/messages`) through the real proxy, with Claude-Code-shaped runs (its
`Bash`, `Edit`, `Read` tools, its reminders and system message: `claude_code.py`), the real
`anthropic` SDK and a real aiohttp upstream on loopback."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import anthropic
import orjson
import pytest
import structlog
from aiohttp import web
from aiohttp.test_utils import TestServer
from claude_code import TASK, ClaudeCode, edit, pytest_run, read
from replies import reply, reply_bytes
from support import Upstream, free_port, json_reply, policy_toml, post, sse_reply

PATH = "/v1/messages?beta=true"  # as Claude Code sends it
ACTS = {"patterns.stuck_same_diagnostic": {"mode": "act"}}
NOTE = "[repair-proxy]"


def client(proxy: TestServer, **options: Any) -> anthropic.AsyncAnthropic:
    """The real SDK pointed at the proxy, as Claude Code is (`ANTHROPIC_BASE_URL`, a dummy key)."""
    return anthropic.AsyncAnthropic(base_url=str(proxy.make_url("")), api_key="sk-dummy", max_retries=0, **options)


async def preset_proxy(
    make_proxy: Any, tmp_path: Path, patterns: dict[str, Any] | None = None, **more: Any
) -> TestServer:
    """The proxy on the `claude_code` preset as shipped (every pattern in its own mode), `patterns` over it."""
    policy = tmp_path / "claude_code.toml"
    policy.write_text('extends = "claude_code"\n' + policy_toml(patterns or {}))
    return await make_proxy(more or None, policy=str(policy), speaking=False)  # type: ignore[no-any-return]


def sdk_args(run: ClaudeCode) -> dict[str, Any]:
    """A run's request as the SDK's arguments (`stream` is the method's; fewer tokens than Claude
    Code asks for, as the SDK refuses a whole reply that may take more than ten minutes)."""
    body = run.body(max_tokens=4096)
    del body["stream"]
    return body


def stripped(value: Any) -> Any:
    """A request without Claude Code's `cache_control` markers (it moves its one marker to the
    newest block on every request; the prompt a server renders is the same without them)."""
    if isinstance(value, dict):
        return {k: stripped(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [stripped(v) for v in value]
    return value


def valid_messages(body: dict[str, Any], client_system_messages: int) -> None:
    """What Messages asks of a transcript: user and assistant take turns (a system message of the
    client's own between them aside), a user message's `tool_result` blocks come first, every
    `tool_use` is answered in the next turn; and no `system` message the client did not send."""
    turns = [m for m in body["messages"] if m["role"] != "system"]
    assert sum(m["role"] == "system" for m in body["messages"]) == client_system_messages
    assert [m["role"] for m in turns] == ["user", "assistant"] * (len(turns) // 2) + ["user"] * (len(turns) % 2)
    for before, message in zip([None, *turns], turns, strict=False):
        blocks = message["content"] if isinstance(message["content"], list) else []
        kinds = [b["type"] for b in blocks]
        results = kinds.count("tool_result")
        assert kinds[:results] == ["tool_result"] * results, kinds
        asked = [b["id"] for b in (before or {}).get("content", []) if isinstance(b, dict) and b["type"] == "tool_use"]
        assert [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"] == asked


def notes(body: dict[str, Any]) -> list[tuple[int, int, str]]:
    """Where each instruction of the proxy's sits: (message, block, text)."""
    return [
        (i, j, block["text"])
        for i, message in enumerate(body["messages"])
        if isinstance(message["content"], list)
        for j, block in enumerate(message["content"])
        if block.get("type") == "text" and NOTE in block["text"]
    ]


async def test_with_nothing_to_say_the_bytes_are_the_same_both_ways(proxy: TestServer, upstream: Upstream) -> None:
    """A run that works (it reads, edits): the upstream gets the agent's bytes, the agent the
    upstream's; the answer says which conversation it was read as."""
    answer = reply_bytes("anthropic", "", [("Bash", {"command": "python -m pytest"})])[0]
    upstream.reply_with(json_reply(answer))
    run = ClaudeCode().turn(read()).turn(edit())
    body = run.bytes(stream=False)
    got = await post(proxy, body, path=PATH)
    assert got.status == 200 and got.body == answer
    assert (
        upstream.seen[0].body == body
        and upstream.seen[0].path == "/v1/messages"
        and upstream.seen[0].query == "beta=true"
    )
    assert got.headers["X-Repair-Conversation"] and "X-Repair-Trips" not in got.headers


async def test_a_stream_with_nothing_to_say_is_relayed_as_it_comes(proxy: TestServer, upstream: Upstream) -> None:
    """The upstream sends the message's opening and its first words, then waits until the agent
    has them before it ends the message: a proxy that held the stream would make it wait in vain."""
    pieces = reply_bytes("anthropic", "The function adds one too many. I will fix it.", stream=True)
    ending = next(i for i, p in enumerate(pieces) if b"message_delta" in p)
    arrived, waited_out = asyncio.Event(), []

    async def wait(index: int) -> None:
        if index == ending:
            try:
                await asyncio.wait_for(arrived.wait(), 5)
            except TimeoutError:
                waited_out.append(index)

    upstream.reply_with(sse_reply(pieces, before_each=wait))
    body = ClaudeCode().turn(read()).bytes()
    received = b""
    async with aiohttp.ClientSession() as session, session.post(str(proxy.make_url(PATH)), data=body) as response:
        assert response.headers["X-Repair-Conversation"] and response.headers["X-Accel-Buffering"] == "no"
        async for chunk in response.content.iter_any():
            received += chunk
            if b"text_delta" in received:
                arrived.set()
    assert not waited_out, "the agent had nothing before the message ended"
    assert received == b"".join(pieces) and upstream.seen[0].body == body


async def test_as_shipped_a_stuck_run_trips_in_shadow_and_nothing_changes(
    make_proxy: Any, upstream: Upstream, tmp_path: Path
) -> None:
    """The `claude_code` preset as shipped: the third same failure names `stuck_same_diagnostic` in
    `X-Repair-Trips`, and every request goes upstream as the agent sent it."""
    proxy = await preset_proxy(make_proxy, tmp_path)
    upstream.reply_with(reply("anthropic", "", [("Bash", {"command": "python -m pytest"})], stream=True))
    run, trips, conversations = ClaudeCode(), [], set()
    for step in (pytest_run(), edit(), pytest_run(), edit("a + b", "a + b + 0"), pytest_run()):
        body = run.turn(step).bytes()
        got = await post(proxy, body, path=PATH)
        assert upstream.seen[-1].body == body
        assert got.body == b"".join(
            reply_bytes("anthropic", "", [("Bash", {"command": "python -m pytest"})], stream=True)
        )
        trips.append(got.headers.get("X-Repair-Trips"))
        conversations.add(got.headers["X-Repair-Conversation"])
    assert trips == [None, None, None, None, "stuck_same_diagnostic"]
    assert len(conversations) == 1


async def test_an_acting_pattern_instructs_as_valid_messages_and_the_next_prompt_extends_it(
    make_proxy: Any, upstream: Upstream, tmp_path: Path
) -> None:
    """With `stuck_same_diagnostic` acting, the third same failure (two edits did not change it)
    reaches the upstream with the instruction quoting it: a text block right after the turn's
    `tool_result`, in the same user message; roles still take turns. The agent's next request
    goes up as the instructed one and its new turn (the instruction kept in place)."""
    proxy = await preset_proxy(make_proxy, tmp_path, ACTS)
    upstream.reply_with(reply("anthropic", "", [("Read", {"file_path": "/workspace/src/parse.py"})], stream=True))
    run = ClaudeCode()
    async with client(proxy) as sdk:
        for step in (pytest_run(), edit(), pytest_run(), edit("a + b", "a + b + 0"), pytest_run(), read()):
            body = sdk_args(run.turn(step))
            async with sdk.messages.stream(**body) as stream:
                message = await stream.get_final_message()
            assert [b.type for b in message.content] == ["tool_use"]
            assert stream.response.headers["X-Repair-Conversation"]
    sent = [seen.json() for seen in upstream.seen]
    assert [notes(s) for s in sent[:4]] == [[], [], [], []]
    instructed, after = sent[4], sent[5]
    ((where, block, text),) = notes(instructed)
    assert (where, block) == (len(instructed["messages"]) - 1, 1), "after the turn's one tool_result"
    assert "assert 4 == 3" in text
    valid_messages(instructed, client_system_messages=1)
    valid_messages(after, client_system_messages=1)
    assert stripped(after["messages"][: len(instructed["messages"])]) == stripped(instructed["messages"])
    assert len(after["messages"]) == len(instructed["messages"]) + 2
    assert instructed["system"] == run.system and instructed["tools"] == body["tools"]


async def test_the_hand_back_is_a_message_the_sdk_reads_whole_and_streamed(
    make_proxy: Any, upstream: Upstream, tmp_path: Path
) -> None:
    halts = {"patterns.stuck_same_diagnostic": {"mode": "act", "after": 2, "action": "halt", "escalate": []}}
    proxy = await preset_proxy(make_proxy, tmp_path, halts)
    run = ClaudeCode().turn(pytest_run()).turn(pytest_run("@pytest_addition_b"))
    body = sdk_args(run)
    async with client(proxy) as sdk:
        whole = await sdk.messages.with_raw_response.create(**body)
        async with sdk.messages.stream(**body) as stream:
            streamed = await stream.get_final_message()
            headers = stream.response.headers
    assert upstream.seen == []
    message = await whole.parse()
    assert whole.headers["X-Repair-Outcome"] == "incomplete" and headers["X-Repair-Outcome"] == "incomplete"
    assert message.stop_reason == "end_turn" and "INCOMPLETE" in message.content[0].text  # type: ignore[union-attr]
    assert streamed.content[0].text == message.content[0].text  # type: ignore[union-attr]
    assert "assert 4 == 3" in streamed.content[0].text  # type: ignore[union-attr]
    assert json.loads(whole.headers["X-Repair-Current-Failure"])["same_diagnostic_streak"] == 2


async def test_a_call_written_as_text_reaches_the_sdk_as_a_tool_use(proxy: TestServer, upstream: Upstream) -> None:
    written = '```json\n{"name": "Bash", "arguments": {"command": "ls -la"}}\n```'
    upstream.reply_with(reply("anthropic", written, stream=True))
    body = sdk_args(ClaudeCode().turn(read()))
    async with client(proxy) as sdk, sdk.messages.stream(**body) as stream:
        message = await stream.get_final_message()
        assert stream.response.headers["X-Repair-Salvaged"] == "1"
    (use,) = message.content
    assert use.type == "tool_use" and use.name == "Bash" and use.input == {"command": "ls -la"}
    assert message.stop_reason == "tool_use"


async def test_text_before_a_refused_call_goes_ahead_and_the_next_answer_continues_the_stream(
    proxy: TestServer, upstream: Upstream
) -> None:
    """The fourth identical run of a failing check, after a sentence: the sentence reaches the SDK
    before the call is judged; the call is refused, and the model's next answer (another sentence
    and a read) goes on in the same message, its blocks numbered after the first's."""
    said, then = "I will run the tests once more.", "Let me read the code instead."
    rerun = pytest_run()[1]
    futile = reply_bytes("anthropic", said, [("Bash", rerun)], stream=True)
    call_at = next(i for i, p in enumerate(futile) if b'"tool_use"' in p and b"content_block_start" in p)
    arrived, waited_out = asyncio.Event(), []

    async def wait(index: int) -> None:
        if index == call_at:
            try:
                await asyncio.wait_for(arrived.wait(), 5)
            except TimeoutError:
                waited_out.append(index)

    upstream.reply_with(
        sse_reply(futile, before_each=wait),
        reply("anthropic", then, [("Read", {"file_path": "/workspace/src/parse.py"})], stream=True),
    )
    body = sdk_args(ClaudeCode().turn(pytest_run()).turn(pytest_run()).turn(pytest_run()))
    text = ""
    async with client(proxy) as sdk, sdk.messages.stream(**body) as stream:
        async for event in stream:
            if event.type == "text":
                text += event.text
                if text == said:
                    arrived.set()
        message = await stream.get_final_message()
    assert not waited_out
    assert [b.type for b in message.content] == ["text", "text", "tool_use"]
    assert message.content[0].text == said and message.content[1].text == then  # type: ignore[union-attr]
    assert message.content[2].name == "Read" and message.stop_reason == "tool_use"  # type: ignore[union-attr]
    refused = upstream.seen[1].json()
    assert "Your call was not run" in notes(refused)[-1][2]
    valid_messages(refused, client_system_messages=1)


async def test_the_task_is_the_persons_request_not_claude_codes_reminders(
    make_proxy: Any, upstream: Upstream, tmp_path: Path
) -> None:
    """A stuck run leaves a verdict; the same request on another day (another date reminder) is
    told about it; another request with the same reminders is not."""
    proxy = await preset_proxy(make_proxy, tmp_path, ACTS, store={"verdicts": str(tmp_path / "v.sqlite3")})
    upstream.reply_with(reply("anthropic", "", [("Bash", {"command": "python -m pytest"})]))
    one = ClaudeCode(prefix="one")
    for step in (pytest_run(), edit(), pytest_run(), edit("a + b", "a + b + 0"), pytest_run()):
        await post(proxy, one.turn(step).bytes(stream=False), path=PATH)
    other = ClaudeCode(task="Add a subtract function to src/parse.py.", prefix="two")
    await post(proxy, other.bytes(stream=False), path=PATH)
    assert notes(upstream.seen[-1].json()) == []
    again = ClaudeCode(date="2026-12-07", prefix="three")
    await post(proxy, again.bytes(stream=False), path=PATH)
    sent = upstream.seen[-1].json()
    ((where, block, text),) = notes(sent)
    assert (where, block) == (0, 3) and "A previous attempt at this task stalled" in text
    assert sent["messages"][0]["content"][2]["text"] == TASK
    valid_messages(sent, client_system_messages=1)


BAD = {
    "malformed_body": b'{"model": "m", "messages": [{"role": "user", "content": "hi"}',
    "tool_result_without_tool_use": orjson.dumps(
        {
            "model": "m",
            "max_tokens": 64,
            "messages": [
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "ok"}]}
            ],
        }
    ),
    "unknown_block_type": orjson.dumps(
        {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": [{"type": "hologram", "data": "x"}]}]}
    ),
    "unknown_role": orjson.dumps(
        {"model": "m", "max_tokens": 64, "messages": [{"role": "developer", "content": "hi"}]}
    ),
}


@pytest.mark.parametrize("name", list(BAD))
async def test_bad_input_is_forwarded_untouched_and_logged_not_analysable(
    proxy: TestServer, upstream: Upstream, name: str
) -> None:
    """The server says what is wrong with it, in its own words; the proxy never does, nor fails."""
    error = orjson.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}})
    upstream.reply_with(json_reply(error, status=400))
    with structlog.testing.capture_logs() as events:
        got = await post(proxy, BAD[name], path=PATH)
    assert upstream.seen[0].body == BAD[name]
    assert got.status == 400 and got.body == error and "X-Repair-Conversation" not in got.headers
    assert [e["dialect"] for e in events if e["event"] == "not_analysable"] == ["anthropic"]


@pytest.mark.parametrize("path", ["/v1/messages/count_tokens?beta=true", "/v1/messages/batches"])
async def test_the_rest_of_messages_is_forwarded_untouched(proxy: TestServer, upstream: Upstream, path: str) -> None:
    body = ClaudeCode().turn(pytest_run()).turn(pytest_run()).turn(pytest_run()).bytes()
    upstream.reply_with(json_reply(b'{"input_tokens": 1234}'))
    got = await post(proxy, body, path=path)
    assert got.body == b'{"input_tokens": 1234}' and "X-Repair-Conversation" not in got.headers
    assert upstream.seen[0].body == body and upstream.seen[0].path == path.split("?", maxsplit=1)[0]


async def test_the_proxys_own_errors_are_in_anthropics_shape(make_proxy: Any, upstream: Upstream) -> None:
    """An unreachable upstream, a team key missing, a body too large: the SDK raises its own
    exception for each, reading the `error.type` Anthropic's API would send."""
    gone = await make_proxy(upstream_url=f"http://127.0.0.1:{free_port()}/v1")
    body = sdk_args(ClaudeCode().turn(read()))
    async with client(gone) as sdk:
        with pytest.raises(anthropic.InternalServerError) as unreachable:
            await sdk.messages.create(**body)
    assert unreachable.value.status_code == 502
    assert unreachable.value.body == {  # type: ignore[comparison-overlap]
        "type": "error",
        "error": {
            "type": "api_error",
            "message": unreachable.value.body["error"]["message"],  # type: ignore[index]
            "code": "upstream_unreachable",
            "cause": "refused",
        },
    }
    teams = await make_proxy({"team": [{"name": "a", "keys": ["sk-team-a"]}]})
    async with client(teams) as sdk:
        with pytest.raises(anthropic.AuthenticationError) as unknown:
            await sdk.messages.create(**body)
    assert unknown.value.status_code == 401 and unknown.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]
    small = await make_proxy({"limits": {"max_body_bytes": 1024}})
    got = await post(small, orjson.dumps(body), path=PATH)
    assert got.status == 413 and got.json() == {
        "type": "error",
        "error": {"type": "request_too_large", "message": got.json()["error"]["message"], "code": "request_too_large"},
    }
    chat = await post(small, b"{" + b" " * 2048 + b"}")
    assert chat.json()["error"]["type"] == "invalid_request_error" and "type" not in chat.json()  # OpenAI's, as before


async def test_an_upstream_error_reaches_the_agent_as_the_upstream_sent_it(
    proxy: TestServer, upstream: Upstream
) -> None:
    overloaded = orjson.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})

    async def busy(_request: web.Request, _body: bytes) -> web.StreamResponse:
        return web.Response(status=529, body=overloaded, content_type="application/json")

    upstream.reply_with(busy)
    got = await post(proxy, ClaudeCode().turn(pytest_run()).bytes(), path=PATH)
    assert got.status == 529 and got.body == overloaded
