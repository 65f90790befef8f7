"""The reply stage through the real proxy: salvage and the gates, in every dialect, streamed and not."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from chat import OPENHANDS_TOOLS, Chat, test_run, view
from dialects import body_for, responses_body
from replies import DIALECTS, PATHS, REQUIRED, STREAM_TYPES, received, reply, reply_bytes
from support import Upstream, policy_toml, post

FENCED = '```json\n{\n  "name": "execute_bash",\n  "arguments": {\n    "command": "ls -la"\n  }\n}\n```'
FINISH_TOOL = {
    "type": "function",
    "function": {
        "name": "finish",
        "parameters": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
    },
}
MODES = [(d, s) for d in DIALECTS for s in (False, True)]
IDS = [f"{d}-{'stream' if s else 'whole'}" for d, s in MODES]


def reading(tools: list[dict[str, Any]] | None = None) -> Chat:
    """Mid-task (the transcript ends with a tool result), nothing failing."""
    return Chat(tools=tools).turn(view())


def failing(tools: list[dict[str, Any]] | None = None) -> Chat:
    """Mid-task, the test failing."""
    return Chat(tools=tools).turn(test_run())


def sent(upstream: Upstream, index: int) -> dict[str, Any]:
    return upstream.seen[index].json()  # type: ignore[no-any-return]


def last_message(dialect: str, request: dict[str, Any]) -> str:
    if dialect == "responses":
        item = request["input"][-1]
        return str(item["content"])
    return str(request["messages"][-1]["content"])


@pytest.mark.parametrize(("dialect", "stream"), MODES, ids=IDS)
async def test_a_call_written_as_text_reaches_the_agent_as_a_real_call(
    proxy: TestServer, upstream: Upstream, dialect: str, stream: bool
) -> None:
    upstream.reply_with(reply(dialect, FENCED, stream=stream))
    request = body_for(dialect, reading(), stream=stream)
    first = await post(proxy, request, path=PATHS[dialect])
    again = await post(proxy, request, path=PATHS[dialect])
    text, calls = received(dialect, first.body, stream)
    assert first.status == 200 and first.headers["X-Repair-Salvaged"] == "1"
    assert text == ""
    assert [(name, args) for name, args, _ in calls] == [("execute_bash", {"command": "ls -la"})]
    again_text, again_calls = received(dialect, again.body, stream)
    assert (again_text, [c[:2] for c in again_calls]) == (text, [c[:2] for c in calls])
    if dialect != "ollama":  # Ollama's calls carry no ids
        assert calls[0][2].startswith("call_rp")
        assert again_calls[0][2] != calls[0][2], "ids unique to the run: two runs never share a salvaged call's id"


@pytest.mark.parametrize(("dialect", "stream"), MODES, ids=IDS)
@pytest.mark.parametrize("start", ["first_turn", "mid_task"])
@pytest.mark.parametrize(
    "text",
    [
        'I would run {"name": "execute_bash", "arguments": {"command": "ls"}} next.',
        '{"name": "execute_bash", "arguments": {"command": "pytest -',
        "The tests pass now. Done.",
        '{"name": "Ada", "born": 1815}',
        "I would start by reading the failing test, then fix the parser.",
    ],
    ids=["prose_mentioning_json", "cut_off", "final_answer", "json_answer", "prose"],
)
async def test_what_is_not_a_call_passes_byte_for_byte(
    proxy: TestServer, upstream: Upstream, dialect: str, stream: bool, start: str, text: str
) -> None:
    """Neither salvaged nor held, whether the person just gave the task or a tool result came back."""
    upstream.reply_with(reply(dialect, text, stream=stream))
    chat = Chat() if start == "first_turn" else reading()
    got = await post(proxy, body_for(dialect, chat, stream=stream), path=PATHS[dialect])
    assert got.body == b"".join(reply_bytes(dialect, text, stream=stream))
    assert "X-Repair-Salvaged" not in got.headers and "X-Repair-Outcome" not in got.headers
    assert len(upstream.seen) == 1


@pytest.mark.parametrize(("dialect", "stream"), MODES, ids=IDS)
async def test_replies_that_call_tools_pass_byte_for_byte(
    proxy: TestServer, upstream: Upstream, dialect: str, stream: bool
) -> None:
    calls = [("execute_bash", {"command": "ls"})]
    upstream.reply_with(reply(dialect, "", calls, stream=stream))
    got = await post(proxy, body_for(dialect, failing(), stream=stream), path=PATHS[dialect])
    assert got.body == b"".join(reply_bytes(dialect, "", calls, stream=stream))
    assert len(upstream.seen) == 1


@pytest.mark.parametrize(("dialect", "stream"), MODES, ids=IDS)
async def test_an_empty_reply_mid_task_is_asked_again_with_a_call_required(
    proxy: TestServer, upstream: Upstream, dialect: str, stream: bool
) -> None:
    upstream.reply_with(reply(dialect, "", stream=stream), reply(dialect, FENCED, stream=stream))
    got = await post(proxy, body_for(dialect, reading(), stream=stream), path=PATHS[dialect])
    _text, calls = received(dialect, got.body, stream)
    assert [name for name, _, _ in calls] == ["execute_bash"]
    assert got.headers["X-Repair-Retries"] == "action:1" and got.headers["X-Repair-Salvaged"] == "1"
    retry = sent(upstream, 1)
    assert "did not call a tool" in last_message(dialect, retry)
    assert retry.get("tool_choice") == REQUIRED[dialect]


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_the_action_gate_gives_up_with_the_models_own_first_reply(
    proxy_two_retries: TestServer, upstream: Upstream, dialect: str
) -> None:
    upstream.reply_with(reply(dialect, ""))
    got = await post(proxy_two_retries, body_for(dialect, reading(), stream=False), path=PATHS[dialect])
    assert len(upstream.seen) == 3, "two retries, then the reply passes"
    assert got.body == reply_bytes(dialect, "")[0]
    assert got.headers["X-Repair-Outcome"] == "no_action" and got.headers["X-Repair-Retries"] == "action:2"


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_prose_mid_task_passes_when_no_instruction_of_ours_is_unanswered(
    proxy: TestServer, upstream: Upstream, dialect: str
) -> None:
    upstream.reply_with(reply(dialect, "Let me think about the structure of this project first."))
    got = await post(proxy, body_for(dialect, reading(), stream=False), path=PATHS[dialect])
    assert len(upstream.seen) == 1 and "X-Repair-Outcome" not in got.headers


@pytest.mark.parametrize(("dialect", "stream"), MODES, ids=IDS)
async def test_finishing_while_the_check_still_fails_is_sent_back(
    proxy: TestServer, upstream: Upstream, dialect: str, stream: bool
) -> None:
    tools = [*OPENHANDS_TOOLS, FINISH_TOOL]
    upstream.reply_with(
        reply(dialect, "", [("finish", {"message": "Fixed."})], stream=stream),
        reply(dialect, "", [("execute_bash", {"command": "python -m pytest"})], stream=stream),
    )
    got = await post(proxy, body_for(dialect, failing(tools), stream=stream), path=PATHS[dialect])
    _text, calls = received(dialect, got.body, stream)
    assert [name for name, _, _ in calls] == ["execute_bash"]
    assert got.headers["X-Repair-Retries"] == "finish:1"
    retry = sent(upstream, 1)
    assert "Do not finish yet" in last_message(dialect, retry)
    names = [t.get("name") or t["function"]["name"] for t in retry["tools"]]
    assert "finish" not in names and "execute_bash" in names


@pytest.mark.parametrize(("dialect", "stream"), MODES, ids=IDS)
async def test_submitting_through_the_shell_while_the_check_still_fails_is_sent_back(
    proxy: TestServer, upstream: Upstream, dialect: str, stream: bool
) -> None:
    """mini-swe-agent 2.x stops with `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` in its one tool."""
    submit = ("execute_bash", {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"})
    edit = ("execute_bash", {"command": "sed -i 's/a - b/a + b/' calc.py"})
    upstream.reply_with(reply(dialect, "", [submit], stream=stream), reply(dialect, "", [edit], stream=stream))
    got = await post(proxy, body_for(dialect, failing(OPENHANDS_TOOLS[:1]), stream=stream), path=PATHS[dialect])
    _text, calls = received(dialect, got.body, stream)
    assert [args for _, args, _ in calls] == [edit[1]]
    assert got.headers["X-Repair-Retries"] == "finish:1" and len(upstream.seen) == 2
    assert "Do not finish yet" in last_message(dialect, sent(upstream, 1))


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_a_final_answer_on_a_live_failure_passes_marked_complete_failing(
    proxy_two_retries: TestServer, upstream: Upstream, dialect: str
) -> None:
    upstream.reply_with(reply(dialect, "I fixed the bug, the task is complete."))
    got = await post(proxy_two_retries, body_for(dialect, failing(), stream=False), path=PATHS[dialect])
    assert len(upstream.seen) == 3
    assert got.headers["X-Repair-Outcome"] == "complete_failing"
    assert received(dialect, got.body, False)[0] == "I fixed the bug, the task is complete."


async def test_a_final_answer_with_nothing_failing_is_untouched(proxy: TestServer, upstream: Upstream) -> None:
    chat = Chat().turn(test_run("@pytest_pass"))
    upstream.reply_with(reply("chat", "All tests pass. Done."))
    got = await post(proxy, chat.bytes())
    assert got.body == reply_bytes("chat", "All tests pass. Done.")[0] and len(upstream.seen) == 1


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_salvage_and_gates_are_policy_switches(make_proxy, upstream: Upstream, tmp_path, dialect: str) -> None:  # type: ignore[no-untyped-def]
    policy = tmp_path / "p.toml"
    policy.write_text(policy_toml({"reply": {"salvage": False, "action_gate": False}}))
    proxy = await make_proxy(policy=str(policy))
    upstream.reply_with(reply(dialect, FENCED))
    got = await post(proxy, body_for(dialect, reading(), stream=False), path=PATHS[dialect])
    assert got.body == reply_bytes(dialect, FENCED)[0] and len(upstream.seen) == 1


async def test_tool_choice_none_is_never_salvaged(proxy: TestServer, upstream: Upstream) -> None:
    upstream.reply_with(reply("chat", FENCED))
    got = await post(proxy, reading().bytes(tool_choice="none"))
    assert got.body == reply_bytes("chat", FENCED)[0]


async def test_the_sdk_reads_a_salvaged_stream(proxy: TestServer, upstream: Upstream) -> None:
    """The openai SDK's own stream helpers accept the rewritten streams, chat and Responses."""
    chat = reading()
    request = orjson.loads(responses_body(chat))
    async with openai.AsyncOpenAI(base_url=str(proxy.make_url("/v1")), api_key="k", max_retries=0) as client:
        upstream.reply_with(reply("chat", FENCED, stream=True))
        async with client.chat.completions.stream(model="m", messages=chat.messages, tools=chat.tools) as stream:  # type: ignore[arg-type]
            final = await stream.get_final_completion()
        upstream.reply_with(reply("responses", FENCED, stream=True))
        async with client.responses.stream(model="m", input=request["input"], tools=request["tools"]) as events:
            response = await events.get_final_response()
        upstream.reply_with(reply("responses", RUN_ON, stream=True))  # cut short by the proxy
        async with client.responses.stream(model="m", input=request["input"], tools=request["tools"]) as events:
            cut = await events.get_final_response()
    assert [(i.type, getattr(i, "name", None)) for i in cut.output] == [("function_call", "execute_bash")]
    call = final.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert (call.function.name, orjson.loads(call.function.arguments)) == ("execute_bash", {"command": "ls -la"})
    assert [(i.type, getattr(i, "name", None)) for i in response.output] == [("function_call", "execute_bash")]


RUN_ON = '{"name": "execute_bash", "arguments": {"command": "ls"}}\n\nThe tests pass now. ' + "Done. " * 400


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_a_streamed_call_the_model_runs_on_past_is_cut_short_and_salvaged(
    proxy: TestServer, upstream: Upstream, dialect: str
) -> None:
    """The proxy acts as soon as the model runs on past its call, and stops the generation: the
    made-up rest never reaches the agent, and the upstream is not read to its end."""
    pieces = reply_bytes(dialect, RUN_ON, stream=True)
    written: list[int] = []

    async def slow(request: web.Request, _body: bytes) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": STREAM_TYPES[dialect]})
        await response.prepare(request)
        for n, piece in enumerate(pieces):  # bounded: len(pieces) * 10 ms
            await response.write(piece)
            written.append(n)
            await asyncio.sleep(0.01)
        await response.write_eof()
        return response

    upstream.reply_with(slow)
    got = await post(proxy, body_for(dialect, reading(), stream=True), path=PATHS[dialect])
    text, calls = received(dialect, got.body, True)
    assert [(n, a) for n, a, _ in calls] == [("execute_bash", {"command": "ls"})]
    assert "Done." not in text and got.headers["X-Repair-Salvaged"] == "1"
    await asyncio.sleep(0.3)
    assert len(written) < len(pieces) // 2, "the generation was stopped early"


CHAT_MODES = [(d, s) for d in ("chat", "responses") for s in (False, True)]


@pytest.mark.parametrize(
    ("dialect", "stream"), CHAT_MODES, ids=[f"{d}-{'stream' if s else 'whole'}" for d, s in CHAT_MODES]
)
@pytest.mark.parametrize("choice", ["required", "auto"])
async def test_a_handback_to_an_agent_that_must_call_is_its_finish_call(
    make_proxy, upstream: Upstream, tmp_path, dialect: str, stream: bool, choice: str
) -> None:
    """With `tool_choice: "required"` (smolagents' tool-calling agent) a plain message is refused
    by the agent, so the hand-back is a call of its finish tool carrying the text; with `auto`
    it stays a message."""
    policy = tmp_path / "p.toml"
    policy.write_text(policy_toml({"patterns.stuck_same_diagnostic": {"after": 2, "action": "halt", "escalate": []}}))
    proxy = await make_proxy(policy=str(policy))
    chat = Chat(tools=[*OPENHANDS_TOOLS, FINISH_TOOL]).turn(test_run()).turn(test_run("@pytest_addition_b"))
    data = orjson.loads(body_for(dialect, chat, stream=stream))
    data["tool_choice"] = choice
    got = await post(proxy, orjson.dumps(data), path=PATHS[dialect])
    assert upstream.seen == [] and got.headers["X-Repair-Outcome"] == "incomplete"
    text, calls = received(dialect, got.body, stream)
    if choice == "auto":
        assert calls == [] and "INCOMPLETE" in text
    else:
        assert [(name, list(args)) for name, args, _ in calls] == [("finish", ["message"])]
        assert "INCOMPLETE" in calls[0][1]["message"]


async def test_a_handback_command_ends_the_run_through_the_agents_shell(
    make_proxy, upstream: Upstream, tmp_path
) -> None:
    """mini-swe-agent ends a run when a command prints its submit marker first: with
    `repair.handback_command` set, the hand-back is its shell tool running that command and
    printing the hand-back after it; run for real, the output is the marker, then the text."""
    import subprocess

    policy = tmp_path / "p.toml"
    policy.write_text(
        policy_toml(
            {
                "repair": {"handback_command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"},
                "patterns.stuck_same_diagnostic": {"after": 2, "action": "halt", "escalate": []},
            }
        )
    )
    proxy = await make_proxy(policy=str(policy))
    chat = Chat(tools=OPENHANDS_TOOLS).turn(test_run()).turn(test_run("@pytest_addition_b"))
    got = await post(proxy, chat.bytes(), path=PATHS["chat"])
    assert upstream.seen == [] and got.headers["X-Repair-Outcome"] == "incomplete"
    _text, calls = received("chat", got.body, False)
    [(name, arguments, _id)] = calls
    assert name == "execute_bash"
    ran = subprocess.run(["bash", "-c", arguments["command"]], capture_output=True, text=True, check=True)
    first, _, rest = ran.stdout.partition("\n")
    assert first == "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
    assert rest.startswith("[repair-proxy] Stopping here: this run is INCOMPLETE")


NAG = "Your last reply had no tool call. Continue with the task: call one of the tools."


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_the_action_retry_shows_the_model_the_task_not_its_idle_replies(
    proxy: TestServer, upstream: Upstream, dialect: str
) -> None:
    """After two replies that did not act, each answered by the agent's nudge, the retry is the
    transcript without them, in every dialect; the agent gets the call it produced."""
    echo = "<tools>\n{'type': 'function'}\n</tools>"
    chat = Chat().say(echo).user(NAG).say(echo).user(NAG)
    upstream.reply_with(reply(dialect, echo), reply(dialect, "", [("execute_bash", {"command": "ls"})]))
    got = await post(proxy, body_for(dialect, chat, stream=False), path=PATHS[dialect])
    _text, calls = received(dialect, got.body, False)
    assert [name for name, _, _ in calls] == ["execute_bash"]
    retry = upstream.seen[1].body
    assert b"<tools>" not in retry and NAG.encode() not in retry
    assert b"Your reply did not call a tool" in retry


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_a_pinned_seed_moves_on_with_each_later_retry(
    proxy_two_retries: TestServer, upstream: Upstream, dialect: str
) -> None:
    """The same body with the same seed draws the same reply: from its second attempt on, the
    action gate's retry moves a chat request's seed on by one (Responses has none; Ollama keeps
    its own in `options`, left as sent)."""
    upstream.reply_with(reply(dialect, ""))
    data = orjson.loads(body_for(dialect, reading(), stream=False))
    data["seed"] = 7
    got = await post(proxy_two_retries, orjson.dumps(data), path=PATHS[dialect])
    assert got.headers["X-Repair-Retries"] == "action:2"
    seeds = [sent(upstream, i).get("seed") for i in range(3)]
    assert seeds == ([7, 7, 8] if dialect == "chat" else [7, 7, 7])


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_by_default_one_agent_request_costs_at_most_one_extra_generation(
    proxy: TestServer, upstream: Upstream, dialect: str
) -> None:
    """Every gate together gets one extra generation per agent request by default: the empty
    reply is asked again once, then the model's own reply passes, marked, and the answer says
    what was spent."""
    upstream.reply_with(reply(dialect, ""))
    got = await post(proxy, body_for(dialect, reading(), stream=False), path=PATHS[dialect])
    assert len(upstream.seen) == 2
    assert got.headers["X-Repair-Retries"] == "action:1"
    assert got.headers["X-Repair-Outcome"] == "no_action"
