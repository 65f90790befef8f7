"""The block rung through the proxy, with the real `openai` SDK as the agent: a futile call the
model proposes never reaches the agent; the model is asked again and the agent gets its other
call, streamed or not. A call that can help passes untouched, with one upstream request."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import openai
import orjson
import pytest
from aiohttp.test_utils import TestServer
from chat import OPENHANDS_TOOLS, Chat, edit, test_run, view
from dialects import body_for
from support import Upstream, chunk_event, completion, json_reply, post, sdk, sse_chunks, sse_reply

from proxy.engine.plan import decide

RERUN = {"command": "cd /workspace && python -m pytest tests/test_parse.py"}
LOOK = {"command": "view", "path": "/workspace/tests/test_parse.py"}
PATHS = {"responses": "/v1/responses", "ollama": "/api/chat"}


def _call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": orjson.dumps(arguments).decode()},
    }


def _replies(stream: bool, *calls: dict[str, Any]) -> list[Any]:
    if stream:
        return [sse_reply(sse_chunks(content="", tool_call=call)) for call in calls]
    return [json_reply(completion("", tool_calls=[call])) for call in calls]


@pytest.fixture
async def client(proxy: TestServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with sdk(proxy) as opened:
        yield opened


async def _ask(client: openai.AsyncOpenAI, chat: Chat, stream: bool) -> tuple[str, dict[str, Any]]:
    """The agent's request; the one call it receives (name, arguments)."""
    kwargs: dict[str, Any] = {"model": "m", "messages": chat.messages, "tools": OPENHANDS_TOOLS}
    if not stream:
        result = await client.chat.completions.create(**kwargs)
        calls = result.choices[0].message.tool_calls or []
        assert len(calls) == 1
        return calls[0].function.name, orjson.loads(calls[0].function.arguments)
    name, arguments = "", ""
    async for chunk in await client.chat.completions.create(stream=True, **kwargs):
        for choice in chunk.choices:
            for delta in choice.delta.tool_calls or []:
                name += (delta.function.name or "") if delta.function else ""
                arguments += (delta.function.arguments or "") if delta.function else ""
    return name, orjson.loads(arguments)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_fourth_identical_run_of_a_failing_check_never_reaches_the_agent(
    client: openai.AsyncOpenAI, upstream: Upstream, stream: bool
) -> None:
    """The check failed the same way three times, nothing changed since; the model proposes it a
    fourth time: the agent gets the model's other call, the model was told why it was asked again."""
    chat = Chat().turn(test_run()).turn(test_run()).turn(test_run())
    upstream.reply_with(
        *_replies(stream, _call("execute_bash", RERUN, "call_again"), _call("str_replace_editor", LOOK, "call_look"))
    )
    received = await _ask(client, chat, stream)
    assert received == ("str_replace_editor", LOOK)
    assert len(upstream.seen) == 2
    retry = upstream.seen[1].json()
    directive = retry["messages"][-1]["content"]
    assert "Your call was not run" in directive and "failed the same way 3 times in a row" in directive
    # asked for the next step's tool alone (the failing test not read yet: the reader): the shell
    # that ran the check is not offered to the re-ask
    assert retry["tool_choice"] == {"type": "function", "function": {"name": "str_replace_editor"}}


async def test_an_edit_sent_again_after_not_found_is_asked_again_with_the_files_lines_held_in_the_schema(
    client: openai.AsyncOpenAI, upstream: Upstream
) -> None:
    """The same not-found edit proposed again: refused; the re-ask's call schema holds its path
    and text to replace to the lines the view showed, and the agent gets the edit that applies."""
    line = "    return int(a) + int(b) + 1"  # the one line the attempted old_str was meant to match
    tried = {"command": "str_replace", "path": "/workspace/src/parse.py", "old_str": "return a + b + 1", "new_str": "x"}
    fixed = {**tried, "old_str": line, "new_str": "    return int(a) + int(b)"}
    not_found = "ERROR: No replacement was performed, old_str `return a + b + 1` did not appear verbatim in /workspace/src/parse.py."
    shown = f"def parse(s):\n    a, b = s.split('+')\n{line}\n"
    chat = Chat().turn(view(content=shown)).turn(("str_replace_editor", tried, not_found))
    upstream.reply_with(
        *_replies(False, _call("str_replace_editor", tried, "call_same"), _call("str_replace_editor", fixed, "call_ok"))
    )
    assert await _ask(client, chat, False) == ("str_replace_editor", fixed)
    retry = upstream.seen[1].json()
    schema = retry["response_format"]["json_schema"]["schema"]["properties"]["arguments"]["properties"]
    assert schema["old_str"] == {"type": "string", "enum": [line]} and schema["path"] == {
        "enum": ["/workspace/src/parse.py"]
    }


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_a_rerun_after_an_edit_passes_untouched_with_one_upstream_request(
    client: openai.AsyncOpenAI, upstream: Upstream, stream: bool
) -> None:
    chat = Chat().turn(test_run()).turn(test_run()).turn(test_run()).turn(edit())
    upstream.reply_with(*_replies(stream, _call("execute_bash", RERUN, "call_again")))
    assert await _ask(client, chat, stream) == ("execute_bash", RERUN)
    assert len(upstream.seen) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_told_why_its_call_was_refused_a_model_that_proposes_it_again_gets_the_agent_a_hand_back(
    proxy: TestServer, upstream: Upstream, stream: bool
) -> None:
    """Never a loop between proxy and model: refused, asked again with the reason, the model
    proposes the very same call: the agent gets the incomplete hand-back (the stop rung), saying
    why, never the futile call; two upstream requests in all."""
    chat = Chat().turn(test_run()).turn(test_run()).turn(test_run())
    first, again = _call("execute_bash", RERUN, "call_1"), _call("execute_bash", RERUN, "call_2")
    upstream.reply_with(*_replies(stream, first, again))
    raw, text, calls = await _answer(proxy, chat, stream)
    assert raw.headers["X-Repair-Outcome"] == "incomplete" and raw.headers["X-Repair-Retries"] == "block:1"
    assert calls == 0 and "INCOMPLETE" in text
    assert "asked again, the model proposed a call already made in vain" in text
    assert "failed the same way 3 times in a row" in text  # the reason it was refused, quoted
    assert len(upstream.seen) == 2


async def test_a_model_that_answers_a_refused_sed_with_the_test_seen_failing_three_times_is_handed_back(
    proxy: TestServer, upstream: Upstream
) -> None:
    """Recovery bench, bank, one shell: the model alternates a sed that sed rejects and the test
    that fails the same way, each refused, each re-ask answered with the other. The re-ask's call
    was made in vain three times: the agent gets the hand-back."""
    sed = {"command": "cd /workspace && sed -i 's/a + b + 1/if a:\\n    a + b/' src/parse.py"}
    rejected = "sed: -e expression #1, char 30: unterminated `s' command\n[Command finished with exit code 1]"
    chat = Chat().turn(test_run()).turn(test_run()).turn(test_run()).turn(("execute_bash", sed, rejected))
    first, again = _call("execute_bash", sed, "call_sed"), _call("execute_bash", RERUN, "call_test")
    upstream.reply_with(json_reply(completion("", tool_calls=[first])), json_reply(completion("", tool_calls=[again])))
    raw = await _ask_raw(proxy, chat)
    assert raw.headers["X-Repair-Outcome"] == "incomplete" and len(upstream.seen) == 2
    assert "INCOMPLETE" in (raw.parse().choices[0].message.content or "")


async def test_a_hand_back_that_cannot_be_written_gives_the_agent_the_models_first_reply(
    proxy: TestServer, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fail-open: the stop rung's hand-back raises while it is written; the agent gets the model's
    own first reply, marked `futile`, as if the rung were off."""

    def broken(*_args: Any) -> str:
        raise RuntimeError("hand-back text")

    monkeypatch.setattr(decide, "refused_text", broken)
    chat = Chat().turn(test_run()).turn(test_run()).turn(test_run())
    first, again = _call("execute_bash", RERUN, "call_1"), _call("execute_bash", RERUN, "call_2")
    upstream.reply_with(json_reply(completion("", tool_calls=[first])), json_reply(completion("", tool_calls=[again])))
    raw = await _ask_raw(proxy, chat)
    assert raw.headers["X-Repair-Outcome"] == "futile"
    assert [c.id for c in raw.parse().choices[0].message.tool_calls or []] == ["call_1"]


async def test_with_futile_again_pass_the_models_first_reply_passes_marked(
    make_proxy: Callable[..., Awaitable[TestServer]], upstream: Upstream, tmp_path: Path
) -> None:
    """`[reply] futile_again = "pass"`: the same call proposed again, the agent gets the model's
    own first reply, marked `futile`."""
    policy = tmp_path / "pass.toml"
    policy.write_text('[reply]\nfutile_again = "pass"\n')
    proxy = await make_proxy(policy=str(policy))
    chat = Chat().turn(test_run()).turn(test_run()).turn(test_run())
    first, again = _call("execute_bash", RERUN, "call_1"), _call("execute_bash", RERUN, "call_2")
    upstream.reply_with(json_reply(completion("", tool_calls=[first])), json_reply(completion("", tool_calls=[again])))
    raw = await _ask_raw(proxy, chat)
    assert raw.headers["X-Repair-Outcome"] == "futile"
    assert raw.headers["X-Repair-Retries"] == "block:1"
    calls = raw.parse().choices[0].message.tool_calls or []
    assert [c.id for c in calls] == ["call_1"]
    assert len(upstream.seen) == 2


async def test_a_reask_answered_with_a_call_made_in_vain_once_passes_the_first_reply_marked(
    proxy: TestServer, upstream: Upstream
) -> None:
    """Refused, asked again, the model proposes a different call that is futile too, but made in
    vain once only (an edit that changes nothing, after one already made): no hand-back yet; the
    agent gets the model's own first reply, marked `futile`."""
    noop = {"command": "str_replace", "path": "/workspace/src/parse.py", "old_str": "a + b", "new_str": "a + b"}
    chat = Chat().turn(test_run()).turn(test_run()).turn(test_run()).turn(("str_replace_editor", noop, "No change."))
    first, again = _call("execute_bash", RERUN, "call_1"), _call("str_replace_editor", noop, "call_2")
    upstream.reply_with(json_reply(completion("", tool_calls=[first])), json_reply(completion("", tool_calls=[again])))
    raw = await _ask_raw(proxy, chat)
    assert raw.headers["X-Repair-Outcome"] == "futile"
    assert [c.id for c in raw.parse().choices[0].message.tool_calls or []] == ["call_1"]
    assert len(upstream.seen) == 2


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_asked_for_a_call_after_prose_a_model_that_answers_with_its_third_noop_edit_is_handed_back(
    proxy: TestServer, upstream: Upstream, stream: bool
) -> None:
    """Recovery bench, OpenHands style, bank seed 1: the test fails, the editor's `str_replace`
    came back with `new_str` equal to `old_str` twice; the model answers in prose, a stop while the
    test still fails, so the finish gate asks for a call (with `pointless_call` in shadow by default
    there is no unanswered nudge to make it the action gate's), and the answer is the same edit that
    changes nothing. The agent gets the hand-back, not a third no-op edit: two upstream requests,
    the gate's one retry."""
    noop = {"command": "str_replace", "path": "/workspace/src/parse.py", "old_str": "a + b", "new_str": "a + b"}
    edited = "The file /workspace/src/parse.py has been edited."
    chat = Chat().turn(test_run()).turn(("str_replace_editor", noop, edited)).turn(test_run())
    chat = chat.turn(("str_replace_editor", noop, edited))
    prose = "To fix it, change the addition in parse so that it returns the sum."
    again = _call("str_replace_editor", noop, "call_noop")
    if stream:
        upstream.reply_with(sse_reply(sse_chunks(content=prose)), *_replies(True, again))
    else:
        upstream.reply_with(json_reply(completion(prose)), *_replies(False, again))
    raw, text, calls = await _answer(proxy, chat, stream)
    assert len(upstream.seen) == 2
    if stream:  # the prose reached the agent as it came; the hand-back follows it in the same reply
        assert text.startswith("To") and text.index("sum.") < text.index("INCOMPLETE")
    else:
        assert raw.headers["X-Repair-Outcome"] == "incomplete" and raw.headers["X-Repair-Retries"] == "finish:1"
    assert calls == 0 and "INCOMPLETE" in text and "proposed a call already made in vain" in text
    assert "its replacement is the very text it replaces" in text  # why that call cannot help


async def _answer(proxy: TestServer, chat: Chat, stream: bool) -> tuple[Any, str, int]:
    """The answer to `chat` through the `openai` SDK, streamed or not: (the raw response, for its
    headers; the text the agent got; how many calls)."""
    async with sdk(proxy) as client:
        kwargs: dict[str, Any] = {"model": "m", "messages": chat.messages, "tools": OPENHANDS_TOOLS}
        if not stream:
            raw = await client.chat.completions.with_raw_response.create(**kwargs)
            message = raw.parse().choices[0].message
            return raw, message.content or "", len(message.tool_calls or [])
        raw = await client.chat.completions.with_raw_response.create(stream=True, **kwargs)
        text, calls = "", 0
        async for chunk in raw.parse():
            for choice in chunk.choices:
                text += choice.delta.content or ""
                calls += len(choice.delta.tool_calls or [])
        return raw, text, calls


async def _ask_raw(proxy: TestServer, chat: Chat) -> Any:
    """The whole answer to `chat` through the `openai` SDK, headers and all."""
    async with sdk(proxy) as client:
        return await client.chat.completions.with_raw_response.create(
            model="m",
            messages=chat.messages,
            tools=OPENHANDS_TOOLS,  # type: ignore[arg-type]
        )


def _responses_call(arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {
        "object": "response",
        "status": "completed",
        "model": "m",
        "output": [
            {
                "type": "function_call",
                "call_id": call_id,
                "name": "execute_bash",
                "arguments": orjson.dumps(arguments).decode(),
            }
        ],
    }


def _ollama_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": "m",
        "message": {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": name, "arguments": arguments}}],
        },
        "done": True,
    }


@pytest.mark.parametrize("dialect", ["responses", "ollama"])
async def test_the_responses_and_ollama_dialects_block_the_same_call(
    proxy: TestServer, upstream: Upstream, dialect: str
) -> None:
    """The same futile rerun in the dialect's own shape: refused, asked again, the other call relayed."""
    chat = Chat().turn(test_run()).turn(test_run()).turn(test_run())
    if dialect == "responses":
        futile, better = (
            _responses_call(RERUN, "c_again"),
            _responses_call({"command": "cat tests/test_parse.py"}, "c_look"),
        )
    else:
        futile, better = _ollama_call("execute_bash", RERUN), _ollama_call("str_replace_editor", LOOK)
    upstream.reply_with(json_reply(orjson.dumps(futile)), json_reply(orjson.dumps(better)))
    status, headers, body = await post(proxy, body_for(dialect, chat), path=PATHS[dialect])
    assert status == 200 and orjson.loads(body) == better
    assert len(upstream.seen) == 2 and headers["X-Repair-Retries"] == "block:1"
    retry = orjson.loads(upstream.seen[1].body)
    last = retry["input"][-1] if dialect == "responses" else retry["messages"][-1]
    assert "Your call was not run" in str(last["content"])


@pytest.mark.parametrize("dialect", ["responses", "ollama"])
async def test_the_responses_and_ollama_dialects_hand_back_a_call_proposed_again_after_its_refusal(
    proxy: TestServer, upstream: Upstream, dialect: str
) -> None:
    """The stop rung in the dialect's own shape: the same futile rerun, refused, proposed again:
    the agent gets the hand-back as an assistant message of its dialect, no call."""
    chat = Chat().turn(test_run()).turn(test_run()).turn(test_run())
    if dialect == "responses":
        futile, again = _responses_call(RERUN, "c_1"), _responses_call(RERUN, "c_2")
    else:
        futile, again = _ollama_call("execute_bash", RERUN), _ollama_call("execute_bash", RERUN)
    upstream.reply_with(json_reply(orjson.dumps(futile)), json_reply(orjson.dumps(again)))
    status, headers, body = await post(proxy, body_for(dialect, chat), path=PATHS[dialect])
    assert status == 200 and headers["X-Repair-Outcome"] == "incomplete" and len(upstream.seen) == 2
    answer = orjson.loads(body)
    if dialect == "responses":
        assert [item["type"] for item in answer["output"]] == ["message"]
        text = answer["output"][0]["content"][0]["text"]
    else:
        assert not answer["message"].get("tool_calls")
        text = answer["message"]["content"]
    assert "INCOMPLETE" in text and "proposed a call already made in vain" in text


async def test_a_streamed_ollama_rerun_is_refused_and_the_other_call_streams_whole(
    proxy: TestServer, upstream: Upstream
) -> None:
    """Ollama streams NDJSON: the futile call is held until complete, refused, and the re-asked
    stream reaches the agent byte for byte."""
    futile = [
        b'{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"execute_bash","arguments":'
        + orjson.dumps(RERUN)
        + b'}}]},"done":false}\n',
        b'{"done":true}\n',
    ]
    better = [
        b'{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"str_replace_editor","arguments":'
        + orjson.dumps(LOOK)
        + b'}}]},"done":false}\n',
        b'{"done":true}\n',
    ]
    upstream.reply_with(sse_reply(futile), sse_reply(better))
    chat = Chat().turn(test_run()).turn(test_run()).turn(test_run())
    status, _headers, body = await post(proxy, body_for("ollama", chat, stream=True), path=PATHS["ollama"])
    assert status == 200 and body == b"".join(better)
    assert len(upstream.seen) == 2


async def test_a_reask_answered_with_nothing_gives_the_agent_the_models_own_call(
    proxy: TestServer, upstream: Upstream
) -> None:
    """Refused, asked again, the model answers empty: the agent gets the call it first made,
    marked `futile`, never an empty reply (seen 23 times in 51 turns on the recovery bench)."""
    chat = Chat().turn(test_run()).turn(test_run()).turn(test_run())
    first = _call("execute_bash", RERUN, "call_1")
    upstream.reply_with(json_reply(completion("", tool_calls=[first])), json_reply(completion("")))
    raw = await _ask_raw(proxy, chat)
    assert raw.headers["X-Repair-Outcome"] == "futile"
    assert [c.id for c in raw.parse().choices[0].message.tool_calls or []] == ["call_1"]
    assert len(upstream.seen) == 2


FAILED_RUN = (
    "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n"
    '  File "/testbed/reproduce.py", line 4, in <module>\n    assert add(1, 1) == 2\nAssertionError\n</output>'
)


def _text_chunks(text: str) -> list[bytes]:
    """A streamed text reply in pieces of a few characters, spaces kept, then its end."""
    base = {"id": "chatcmpl-text", "object": "chat.completion.chunk", "created": 1700000000, "model": "m"}
    pieces = [chunk_event(base, {"role": "assistant", "content": ""})]
    pieces += [chunk_event(base, {"content": text[at : at + 7]}) for at in range(0, len(text), 7)]
    return [*pieces, chunk_event(base, {}, "stop"), b"data: [DONE]\n\n"]


def _text_agent_messages() -> list[dict[str, Any]]:
    """A mini-swe-agent 1.x conversation (calls written as one ```bash block, results as user
    messages): its reproduction script failed the same way three times, nothing changed."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent. Reply with one ```bash block."},
        {"role": "user", "content": "Fix the bug in src/calc.py described in the issue."},
    ]
    for _ in range(3):
        messages += [
            {"role": "assistant", "content": "THOUGHT: run it.\n\n```bash\npython reproduce.py\n```"},
            {"role": "user", "content": FAILED_RUN},
        ]
    return messages


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_an_agent_that_writes_its_calls_as_text_never_gets_the_fourth_identical_run(
    client: openai.AsyncOpenAI, upstream: Upstream, stream: bool
) -> None:
    """The same rung for an agent with no tools that writes its commands in its replies: the
    fourth identical run, written as a fenced block, is refused; the model is asked again for one
    command in the agent's format and the agent gets that reply's text."""
    again, other = (
        "THOUGHT: again.\n\n```bash\npython reproduce.py\n```",
        "THOUGHT: look.\n\n```bash\ncat src/calc.py\n```",
    )
    if stream:
        upstream.reply_with(sse_reply(_text_chunks(again)), sse_reply(_text_chunks(other)))
    else:
        upstream.reply_with(json_reply(completion(again)), json_reply(completion(other)))
    kwargs: dict[str, Any] = {"model": "m", "messages": _text_agent_messages()}
    if stream:
        text = ""
        async for chunk in await client.chat.completions.create(stream=True, **kwargs):
            text += "".join(choice.delta.content or "" for choice in chunk.choices)
    else:
        text = (await client.chat.completions.create(**kwargs)).choices[0].message.content or ""
    assert text == other
    assert len(upstream.seen) == 2
    directive = upstream.seen[1].json()["messages"][-1]["content"]
    assert "Your call was not run" in directive and "Reply with exactly one fenced block" in directive
