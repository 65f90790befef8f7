"""A reply meant as a tool call that is none, and the constrained retry that answers it,
through the real proxy in every dialect, streamed and not.

Must trip: a call to a tool not offered, a call missing a required key, the tools' declaration
echoed back (what Qwen2.5-Coder-1.5B on llama.cpp writes on a fresh task), from the first turn.
Must not: prose, a final answer, JSON that is no call (`{"name": "Ada", "born": 1815}`), on
the first turn or mid-task: `test_reply_stage.py::test_what_is_not_a_call_passes_byte_for_byte`.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from chat import Chat, test_run, view
from dialects import body_for
from replies import DIALECTS, PATHS, REQUIRED, STRUCTURED, received, reply, reply_bytes
from support import Upstream, policy_toml, post

MODES = [(d, s) for d in DIALECTS for s in (False, True)]
IDS = [f"{d}-{'stream' if s else 'whole'}" for d, s in MODES]
ECHO = (
    '<tools>\n{"type": "function", "function": {"name": "execute_bash", "description": "Run a command.", '
    '"parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}\n'
    "</tools>"
)
MISCALLS = {
    "unknown_tool": '{"name": "python", "arguments": {"command": "pytest"}}',
    "missing_required_key": '```json\n{"name": "execute_bash", "arguments": {}}\n```',
    "echoed_declaration": ECHO,
}
CONSTRAINED = '{"name": "execute_bash", "arguments": {"command": "python -m pytest"}}'


def schema_sent(dialect: str, request: dict[str, Any]) -> Any:
    """The call schema a retry asks the reply to follow, where the dialect carries it."""
    if dialect == "chat":
        return (request.get("response_format") or {}).get("json_schema", {}).get("schema")
    if dialect == "responses":
        return (request.get("text") or {}).get("format", {}).get("schema")
    return request.get("format")


@pytest.mark.parametrize(("dialect", "stream"), MODES, ids=IDS)
@pytest.mark.parametrize("miscall", list(MISCALLS.values()), ids=list(MISCALLS))
async def test_a_reply_meant_as_a_call_is_asked_again_from_the_first_turn(
    proxy: TestServer, upstream: Upstream, dialect: str, stream: bool, miscall: str
) -> None:
    upstream.reply_with(reply(dialect, miscall, stream=stream), reply(dialect, CONSTRAINED, stream=stream))
    got = await post(proxy, body_for(dialect, Chat(), stream=stream), path=PATHS[dialect])
    text, calls = received(dialect, got.body, stream)
    assert text == "" and [(n, a) for n, a, _ in calls] == [("execute_bash", {"command": "python -m pytest"})]
    assert got.headers["X-Repair-Retries"] == "action:1" and got.headers["X-Repair-Salvaged"] == "1"
    retry = upstream.seen[1].json()
    assert retry.get("tool_choice") == REQUIRED[dialect]
    if dialect not in STRUCTURED:
        return
    schema = schema_sent(dialect, retry)
    names = [o["properties"]["name"]["enum"][0] for o in schema["anyOf"]]
    assert names == ["execute_bash", "str_replace_editor"]
    assert schema["anyOf"][0]["properties"]["arguments"]["required"] == ["command"]
    assert schema_sent(dialect, upstream.seen[0].json()) is None, "the agent's own request is not constrained"


@pytest.mark.parametrize(("dialect", "stream"), MODES, ids=IDS)
async def test_when_every_retry_misses_the_first_reply_passes_as_it_came(
    proxy_two_retries: TestServer, upstream: Upstream, dialect: str, stream: bool
) -> None:
    first = MISCALLS["unknown_tool"]
    upstream.reply_with(reply(dialect, first, stream=stream), reply(dialect, ECHO, stream=stream))
    got = await post(proxy_two_retries, body_for(dialect, Chat(), stream=stream), path=PATHS[dialect])
    assert len(upstream.seen) == 3, "two retries, then the first reply"
    assert got.body == b"".join(reply_bytes(dialect, first, stream=stream))
    assert got.headers["X-Repair-Outcome"] == "no_action"


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_a_retry_the_upstream_refuses_ends_the_gate_with_the_first_reply(
    proxy: TestServer, upstream: Upstream, dialect: str
) -> None:
    """A server that takes no structured output answers the retry with an error: the agent never sees it."""

    async def refuse(request: web.Request, raw: bytes) -> web.StreamResponse:
        return web.json_response({"error": {"message": "response_format is not supported"}}, status=400)

    first = MISCALLS["unknown_tool"]
    upstream.reply_with(reply(dialect, first), refuse)
    got = await post(proxy, body_for(dialect, Chat(), stream=False), path=PATHS[dialect])
    assert got.status == 200 and got.body == reply_bytes(dialect, first)[0]
    assert got.headers["X-Repair-Outcome"] == "no_action"
    if dialect not in STRUCTURED:
        assert len(upstream.seen) == 2, "the retry, refused: no schema to leave out of it"
        return
    assert len(upstream.seen) == 3, "the retry, then the same retry without the schema, both refused"
    assert schema_sent(dialect, upstream.seen[1].json()) is not None
    assert schema_sent(dialect, upstream.seen[2].json()) is None


@pytest.mark.parametrize("dialect", DIALECTS)
async def test_a_retry_that_fails_at_the_server_ends_the_gate_without_asking_a_third_time(
    proxy: TestServer, upstream: Upstream, dialect: str
) -> None:
    """A server error on our retry, for a reason not ours to read: the schema was taken and a
    generation may have been spent. The agent gets the model's first reply; the retry is not
    sent again (without the schema it came back as prose)."""

    async def broken(request: web.Request, raw: bytes) -> web.StreamResponse:
        return web.json_response(
            {"error": {"code": 500, "message": "slot unavailable", "type": "server_error"}}, status=500
        )

    first = MISCALLS["unknown_tool"]
    upstream.reply_with(reply(dialect, first), broken, reply(dialect, "I would run the tests."))
    got = await post(proxy, body_for(dialect, Chat(), stream=False), path=PATHS[dialect])
    assert got.status == 200 and got.body == reply_bytes(dialect, first)[0]
    assert got.headers["X-Repair-Outcome"] == "no_action"
    assert len(upstream.seen) == 2
    assert (schema_sent(dialect, upstream.seen[1].json()) is not None) == (dialect in STRUCTURED)


UNREADABLE = "The model produced output that does not match the expected peg-native format"
"""llama.cpp's 500 when the reply its grammar let the model write does not parse (recovery bench,
vowels seed 0: a `\\'` in a held sed script; the same request with the next seed was read)."""


def _llama_cpp(dialect: str, answer: Any) -> Any:
    """A server that fails the way llama.cpp 11434 did on one draw: the first retry's reply is
    unreadable, the next draw is the call."""
    drawn = [0]

    async def respond(request: web.Request, raw: bytes) -> web.StreamResponse:
        drawn[0] += 1
        if drawn[0] == 1:
            error = {"code": 500, "message": UNREADABLE, "type": "server_error"}
            return web.json_response({"error": error}, status=500)
        return await answer(request, raw)

    return respond


@pytest.mark.parametrize("dialect", STRUCTURED)  # llama.cpp's 500 of a reply held to a schema
async def test_a_retry_whose_reply_the_server_cannot_read_is_drawn_again(
    proxy: TestServer, upstream: Upstream, dialect: str
) -> None:
    """The same retry, once more: the agent gets the call, and nothing of the failed draw."""
    server = _llama_cpp(dialect, reply(dialect, CONSTRAINED))
    upstream.reply_with(reply(dialect, MISCALLS["unknown_tool"]), server, server)
    got = await post(proxy, body_for(dialect, Chat(), stream=False), path=PATHS[dialect])
    _text, calls = received(dialect, got.body, False)
    assert got.status == 200 and [(n, a) for n, a, _ in calls] == [("execute_bash", {"command": "python -m pytest"})]
    assert got.headers["X-Repair-Retries"] == "action:1" and len(upstream.seen) == 3
    assert upstream.seen[2].json() == upstream.seen[1].json(), "no seed pinned: the same retry, drawn again"


async def test_a_pinned_seed_is_moved_on_for_the_second_draw(proxy: TestServer, upstream: Upstream) -> None:
    server = _llama_cpp("chat", reply("chat", CONSTRAINED))
    upstream.reply_with(reply("chat", MISCALLS["unknown_tool"]), server, server)
    got = await post(proxy, Chat().bytes(seed=7), path=PATHS["chat"])
    assert got.status == 200 and len(upstream.seen) == 3
    first, retry, again = (r.json() for r in upstream.seen)
    assert (first["seed"], retry["seed"], again["seed"]) == (7, 7, 8)
    assert {k: v for k, v in again.items() if k != "seed"} == {k: v for k, v in retry.items() if k != "seed"}


@pytest.mark.parametrize("dialect", STRUCTURED)  # llama.cpp's 500 of a reply held to a schema
async def test_a_retry_unreadable_when_drawn_again_too_ends_the_gate_with_the_first_reply(
    proxy: TestServer, upstream: Upstream, dialect: str
) -> None:
    """Drawn again, the reply is unreadable again: once, never a loop; the first reply."""

    async def unreadable(request: web.Request, raw: bytes) -> web.StreamResponse:
        return web.json_response({"error": {"code": 500, "message": UNREADABLE, "type": "server_error"}}, status=500)

    first = MISCALLS["unknown_tool"]
    upstream.reply_with(reply(dialect, first), unreadable, unreadable, unreadable)
    got = await post(proxy, body_for(dialect, Chat(), stream=False), path=PATHS[dialect])
    assert got.status == 200 and got.body == reply_bytes(dialect, first)[0]
    assert got.headers["X-Repair-Outcome"] == "no_action" and len(upstream.seen) == 3


@pytest.mark.parametrize("dialect", STRUCTURED)
async def test_a_retry_whose_schema_is_refused_goes_again_without_it(
    proxy: TestServer, upstream: Upstream, dialect: str
) -> None:
    """A server that takes `tool_choice` but not structured output beside it (as vLLM may): the
    retry without the schema still gets the call, and no later retry of the request carries one."""
    calls = reply(dialect, "", [("execute_bash", {"command": "python -m pytest"})])

    async def strict(request: web.Request, raw: bytes) -> web.StreamResponse:
        if schema_sent(dialect, orjson.loads(raw)) is not None:
            return web.json_response({"error": {"message": "structured output is not supported here"}}, status=400)
        return await calls(request, raw)

    upstream.reply_with(reply(dialect, ECHO), strict)
    got = await post(proxy, body_for(dialect, Chat(), stream=False), path=PATHS[dialect])
    _text, received_calls = received(dialect, got.body, False)
    assert got.status == 200 and [n for n, _, _ in received_calls] == ["execute_bash"]
    assert got.headers["X-Repair-Retries"] == "action:1" and len(upstream.seen) == 3


@pytest.mark.parametrize(
    ("dialect", "own"),
    [
        ("chat", {"response_format": {"type": "json_object"}}),
        ("responses", {"text": {"format": {"type": "json_object"}, "verbosity": "low"}}),
        ("ollama", {"format": "json"}),
    ],
)
async def test_a_request_with_its_own_format_keeps_it_in_the_retry(
    proxy: TestServer, upstream: Upstream, dialect: str, own: dict[str, Any]
) -> None:
    upstream.reply_with(reply(dialect, MISCALLS["unknown_tool"]), reply(dialect, CONSTRAINED))
    await post(proxy, body_for(dialect, Chat(), stream=False, **own), path=PATHS[dialect])
    retry = upstream.seen[1].json()
    assert {key: retry[key] for key in own} == own


@pytest.mark.parametrize("dialect", STRUCTURED)
async def test_responses_text_settings_stay_beside_the_call_format(
    proxy: TestServer, upstream: Upstream, dialect: str
) -> None:
    own = {"text": {"verbosity": "low"}} if dialect == "responses" else {}
    upstream.reply_with(reply(dialect, ECHO), reply(dialect, CONSTRAINED))
    await post(proxy, body_for(dialect, Chat(), stream=False, **own), path=PATHS[dialect])
    retry = upstream.seen[1].json()
    assert schema_sent(dialect, retry) is not None
    if dialect == "responses":
        assert retry["text"]["verbosity"] == "low"


async def test_constrained_retries_are_a_policy_switch(make_proxy, upstream: Upstream, tmp_path) -> None:  # type: ignore[no-untyped-def]
    policy = tmp_path / "p.toml"
    policy.write_text(policy_toml({"reply": {"constrain_calls": False}}))
    proxy = await make_proxy(policy=str(policy))
    upstream.reply_with(reply("chat", ECHO), reply("chat", CONSTRAINED))
    await post(proxy, Chat().bytes())
    retry = upstream.seen[1].json()
    assert retry["tool_choice"] == "required" and "response_format" not in retry


async def test_without_salvage_no_retry_is_constrained(make_proxy, upstream: Upstream, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The JSON text would reach the agent as prose: no schema unless salvage can read it back."""
    policy = tmp_path / "p.toml"
    policy.write_text(policy_toml({"reply": {"salvage": False}}))
    proxy = await make_proxy(policy=str(policy))
    upstream.reply_with(reply("chat", ECHO), reply("chat", "", [("execute_bash", {"command": "ls"})]))
    got = await post(proxy, Chat().bytes())
    assert got.headers["X-Repair-Retries"] == "action:1"
    assert "response_format" not in upstream.seen[1].json()
    assert orjson.loads(got.body)["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "execute_bash"


async def test_a_force_request_whose_schema_is_refused_goes_again_without_it(
    proxy: TestServer, upstream: Upstream
) -> None:
    """At the force rung the request carries the call's schema; a server that refuses structured
    output gets the same request without it, and the agent the reply to that."""

    async def refuse(request: web.Request, raw: bytes) -> web.StreamResponse:
        return web.json_response({"error": {"message": "response_format is not supported"}}, status=400)

    chat = Chat().turn(test_run()).turn(view("/workspace/tests/test_parse.py"), view("/workspace/parse.py"))
    for _ in range(4):
        chat = chat.turn(test_run())
    upstream.reply_with(refuse, reply("chat", "", [("str_replace_editor", {"command": "view", "path": "x"})]))
    got = await post(proxy, chat.bytes())
    assert got.status == 200 and got.headers["X-Repair-Trips"] == "stuck_same_diagnostic"
    first, second = upstream.seen[0].json(), upstream.seen[1].json()
    assert "response_format" in first and "response_format" not in second
    assert {k: v for k, v in first.items() if k != "response_format"} == second
