"""The repair engine through the real proxy server and a real upstream on loopback."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import orjson
import pytest
from aiohttp.test_utils import TestServer
from chat import Chat, edit, test_run, view
from scenario_loader import load, names
from support import STUCK_ACTS, Upstream, completion, json_reply, policy_toml, post, sse_chunks, sse_reply

ACTING = completion(
    "",
    tool_calls=[
        {"id": "call_next", "type": "function", "function": {"name": "execute_bash", "arguments": '{"command": "ls"}'}}
    ],
)


def policy_file(tmp_path: Path, raw: dict[str, dict[str, object]]) -> str:
    if not raw:
        return ""
    path = tmp_path / "policy.toml"
    path.write_text(policy_toml(raw))
    return str(path)


@pytest.mark.parametrize("name", names())
async def test_scenario_through_the_server(make_proxy, upstream: Upstream, tmp_path: Path, name: str) -> None:
    """Each request gets the scenario's trips in X-Repair-Trips; every rewritten prompt is a prefix of the next."""
    scenario = load(name)
    # the scenario's own policy as it stands (its shadowed patterns stay in shadow)
    proxy = await make_proxy(policy=policy_file(tmp_path, scenario.policy_raw), speaking=False)
    upstream.reply_with(json_reply(ACTING))
    halted = []
    for body, turns in scenario.requests_with_turns():
        before = len(upstream.seen)
        status, headers, reply = await post(proxy, body)
        assert status == 200
        expected = list(dict.fromkeys(p for p, _ in scenario.expected_for(turns)))
        if expected:
            assert headers["X-Repair-Trips"].split(",") == expected
        else:
            assert "X-Repair-Trips" not in headers
        if headers.get("X-Repair-Outcome") == "incomplete":
            halted.append(turns[-1])
            assert len(upstream.seen) == before, "a halt answers without calling upstream"
            assert "INCOMPLETE" in orjson.loads(reply)["choices"][0]["message"]["content"]
    assert halted == ([scenario.expect["halt_at"]] if "halt_at" in scenario.expect else [])
    sent = [s.json()["messages"] for s in upstream.seen]
    for earlier, later in pairwise(sent):
        assert later[: len(earlier)] == earlier, "a rewritten prompt must be a prefix of the next"
    # each injecting trip's remedy reaches the upstream once, and stays exactly once; a pattern
    # in shadow places nothing, nor does any pattern on the turn handed back (nothing goes up)
    last = scenario.expect.get("halt_at", 200)
    injecting = [
        t
        for turn in range(1, last)
        for t in scenario.expected_trips(turn)
        if t[1] in ("nudge", "force") and scenario.speaks(t[0])
    ]
    if sent:
        placed = [m for m in sent[-1] if "[repair-proxy]" in str(m.get("content"))]
        assert len(placed) == len(injecting)


@pytest.mark.parametrize("name", names())
async def test_scenario_with_repair_off_is_byte_transparent(make_proxy, upstream: Upstream, name: str) -> None:
    """Repair off: the upstream receives the agent's bytes unchanged for every request of every scenario."""
    proxy = await make_proxy({"repair": {"enabled": False}})
    bodies = load(name).requests()
    for body in bodies:
        await post(proxy, body)
    assert [s.body for s in upstream.seen] == bodies


async def test_nudge_reaches_upstream_with_the_snippet_and_stays_in_place(
    make_proxy, upstream: Upstream, tmp_path: Path
) -> None:
    """After the third same failure the upstream gets the nudge with the snippet; the next request has it at the same place."""
    proxy = await make_proxy(policy=policy_file(tmp_path, STUCK_ACTS))
    upstream.reply_with(json_reply(ACTING))
    chat = Chat().turn(test_run("@pytest_addition_a")).turn(test_run("@pytest_addition_b"))
    await post(proxy, chat.bytes())
    await post(proxy, chat.turn(test_run("@pytest_addition_a")).bytes())
    await post(proxy, chat.turn(view()).bytes())
    third, fourth = upstream.seen[-2].json()["messages"], upstream.seen[-1].json()["messages"]
    nudge = third[-1]
    assert nudge["role"] == "system"
    assert "same failure came back 3 times" in nudge["content"]
    assert "FAILED tests/test_parse.py::test_addition - AssertionError: assert 4 == 3" in nudge["content"]
    assert third[:-1] == chat.messages[: len(third) - 1]
    assert fourth[len(third) - 1] == nudge
    assert fourth[: len(third)] == third


async def test_as_shipped_the_failure_model_trips_in_shadow_and_places_nothing(make_proxy, upstream: Upstream) -> None:
    """The embedded defaults, as a team gets them: the third same failure trips `stuck_same_diagnostic`
    (named in X-Repair-Trips, counted), and the upstream gets the agent's bytes as sent."""
    proxy = await make_proxy(speaking=False)
    upstream.reply_with(json_reply(ACTING))
    chat = Chat().turn(test_run()).turn(test_run("@pytest_addition_b")).turn(test_run())
    _status, headers, _body = await post(proxy, chat.bytes())
    assert headers["X-Repair-Trips"] == "stuck_same_diagnostic"
    assert upstream.seen[-1].body == chat.bytes()


@pytest.mark.parametrize("placement", ["user", "tool_suffix"])
async def test_placement_follows_the_policy(make_proxy, upstream: Upstream, tmp_path: Path, placement: str) -> None:
    """placement=user adds a user message; tool_suffix appends to the turn's last tool result."""
    proxy = await make_proxy(policy=policy_file(tmp_path, {"repair": {"placement": placement}, **STUCK_ACTS}))
    upstream.reply_with(json_reply(ACTING))
    chat = Chat().turn(test_run()).turn(test_run("@pytest_addition_b")).turn(test_run())
    await post(proxy, chat.bytes())
    sent = upstream.seen[-1].json()["messages"]
    if placement == "user":
        assert len(sent) == len(chat.messages) + 1
        assert sent[-1]["role"] == "user" and "[repair-proxy]" in sent[-1]["content"]
    else:
        assert len(sent) == len(chat.messages)
        assert sent[-1]["role"] == "tool"
        assert sent[-1]["content"].startswith(chat.messages[-1]["content"])
        assert "[repair-proxy]" in sent[-1]["content"]


async def test_force_pins_tool_choice_for_one_request(make_proxy, upstream: Upstream, tmp_path: Path) -> None:
    """At the force rungs (5 to 7 same failures) tool_choice names the agent's read tool, on
    those requests only: the ones before carry none, and so does the one after the check passes."""
    proxy = await make_proxy(policy=policy_file(tmp_path, STUCK_ACTS))
    upstream.reply_with(json_reply(ACTING))
    chat = Chat()
    for out in [*["@pytest_addition_a", "@pytest_addition_b"] * 3, "@pytest_pass"]:
        await post(proxy, chat.turn(test_run(out)).bytes())
    choices = [s.json().get("tool_choice") for s in upstream.seen]
    read = {"type": "function", "function": {"name": "str_replace_editor"}}
    assert choices == [None, None, None, None, read, read, None]


async def test_halt_hands_back_incomplete_with_current_failure_header(
    make_proxy, upstream: Upstream, tmp_path: Path
) -> None:
    """A halt answers as an assistant message, with current_failure in X-Repair-Current-Failure; retries halt again."""
    policy = policy_file(
        tmp_path,
        {
            "patterns.stuck_same_diagnostic": {
                "after": 2,
                "action": "nudge",
                "escalate": [{"at": 3, "action": "halt"}],
                "mode": "act",
            }
        },
    )
    proxy = await make_proxy(policy=policy)
    upstream.reply_with(json_reply(ACTING))
    chat = Chat().turn(test_run()).turn(test_run("@pytest_addition_b")).turn(test_run())
    for _ in range(2):  # the same request sent twice halts twice
        status, headers, body = await post(proxy, chat.bytes())
        assert status == 200
        assert headers["X-Repair-Outcome"] == "incomplete"
        failure = json.loads(headers["X-Repair-Current-Failure"])
        assert failure["class"] == "fail" and failure["same_diagnostic_streak"] == 3 and len(failure["signature"]) == 64
        assert "assert 4 == 3" in failure["snippet"]
        reply = orjson.loads(body)
        assert reply["choices"][0]["finish_reason"] == "stop"
        assert "INCOMPLETE" in reply["choices"][0]["message"]["content"]
    assert len(upstream.seen) == 0
    # the agent goes on past the hand-back with a person's message: forwarded normally
    status, headers, _ = await post(proxy, chat.user("Try once more, read the test first.").bytes())
    assert "X-Repair-Outcome" not in headers and len(upstream.seen) == 1


async def test_halt_streams_when_the_request_streamed(make_proxy, upstream: Upstream, tmp_path: Path) -> None:
    """The hand-back is SSE chat chunks ending in [DONE] when the agent asked for a stream."""
    policy = policy_file(
        tmp_path, {"patterns.stuck_same_diagnostic": {"after": 2, "action": "halt", "escalate": [], "mode": "act"}}
    )
    proxy = await make_proxy(policy=policy)
    chat = Chat().turn(test_run()).turn(test_run("@pytest_addition_b"))
    status, headers, body = await post(proxy, chat.bytes(stream=True))
    assert status == 200
    assert headers["Content-Type"].startswith("text/event-stream")
    events = [line[6:] for line in body.decode().split("\n\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    text = "".join((orjson.loads(e)["choices"][0]["delta"].get("content") or "") for e in events[:-1])
    assert "INCOMPLETE" in text


async def test_handback_after_success_reports_no_stale_failure(make_proxy, upstream: Upstream, tmp_path: Path) -> None:
    """A run whose check passed, then stalls on something else, hands back with current_failure null."""
    policy = policy_file(
        tmp_path,
        {
            "patterns.reverify_owed": {
                "after": 1,
                "action": "nudge",
                "escalate": [{"at": 2, "action": "halt"}],
                "mode": "act",
            }
        },
    )
    proxy = await make_proxy(policy=policy)
    upstream.reply_with(json_reply(ACTING))
    chat = Chat().turn(test_run()).turn(edit(), test_run("@pytest_pass")).turn(test_run("@pytest_addition_other_value"))
    chat.turn(edit("a", "b")).turn(view()).turn(view())  # edited, then moved on twice without the re-run
    _status, headers, _body = await post(proxy, chat.bytes())
    assert headers["X-Repair-Outcome"] == "incomplete"
    failure = json.loads(headers["X-Repair-Current-Failure"])
    assert "assert -1 == 3" in failure["snippet"]  # the live failure, never the one that passed
    assert "assert 4 == 3" not in failure["snippet"]


async def test_done_gate_sends_a_premature_stop_back(proxy: TestServer, upstream: Upstream) -> None:
    """While a re-verify is owed, a reply without tool calls is re-asked with the re-verify forced."""
    upstream.reply_with(json_reply(completion("All fixed, I'm done.")), json_reply(ACTING))
    chat = Chat().turn(test_run()).turn(edit())
    status, headers, body = await post(proxy, chat.bytes())
    assert status == 200
    assert len(upstream.seen) == 2
    retry = upstream.seen[1].json()
    assert retry["tool_choice"] == {"type": "function", "function": {"name": "execute_bash"}}
    assert "Do not stop yet" in retry["messages"][-1]["content"]
    assert "python -m pytest tests/test_parse.py" in retry["messages"][-1]["content"]
    assert body == ACTING
    assert "X-Repair-Outcome" not in headers


async def test_done_gate_gives_up_after_max_attempts(proxy_two_retries: TestServer, upstream: Upstream) -> None:
    """After max_verify_attempts the stop passes through marked complete_unverified."""
    stop = completion("Done.")
    upstream.reply_with(json_reply(stop))
    chat = Chat().turn(test_run()).turn(edit())
    _status, headers, body = await post(proxy_two_retries, chat.bytes())
    assert len(upstream.seen) == 3  # first try + max_verify_attempts (2)
    assert headers["X-Repair-Outcome"] == "complete_unverified"
    assert body == stop


async def test_done_gate_streaming_holds_only_until_a_tool_call(proxy: TestServer, upstream: Upstream) -> None:
    """A streamed stop is held and re-asked; the streamed tool call that follows is relayed byte for byte."""
    call = {"id": "c1", "type": "function", "function": {"name": "execute_bash", "arguments": '{"command":"pytest"}'}}
    acting = sse_chunks(tool_call=call)
    upstream.reply_with(sse_reply(sse_chunks("I am done")), sse_reply(acting))
    chat = Chat().turn(test_run()).turn(edit())
    status, headers, body = await post(proxy, chat.bytes(stream=True))
    assert status == 200
    assert body == b"".join(acting)
    assert len(upstream.seen) == 2
    assert "X-Repair-Outcome" not in headers


async def test_no_gate_when_nothing_is_owed(proxy: TestServer, upstream: Upstream) -> None:
    """A stop with no re-verify owed goes straight through, one upstream call."""
    upstream.reply_with(json_reply(completion("Done.")))
    chat = Chat().turn(test_run()).turn(edit(), test_run("@pytest_pass"))
    _status, headers, _body = await post(proxy, chat.bytes())
    assert len(upstream.seen) == 1
    assert "X-Repair-Outcome" not in headers


async def test_every_analysed_response_names_its_conversation(proxy: TestServer, upstream: Upstream) -> None:
    """X-Repair-Conversation is stable across a conversation's requests and honours the agent's header."""
    chat = Chat().turn(view())
    _s, first, _b = await post(proxy, chat.bytes())
    _s, second, _b = await post(proxy, chat.turn(view()).bytes())
    _s, named, _b = await post(proxy, chat.bytes(), **{"X-Repair-Conversation": "my-run-7"})
    assert first["X-Repair-Conversation"] == second["X-Repair-Conversation"]
    assert named["X-Repair-Conversation"] == "my-run-7"


async def test_reverify_force_pins_the_failing_tool(make_proxy, upstream: Upstream, tmp_path: Path) -> None:
    """reverify_owed with `force` sets tool_choice to the tool that ran the failing check."""
    policy = policy_file(
        tmp_path, {"patterns.reverify_owed": {"after": 1, "action": "force", "escalate": [], "mode": "act"}}
    )
    proxy = await make_proxy(policy=policy)
    upstream.reply_with(json_reply(ACTING))
    chat = Chat().turn(test_run()).turn(edit()).turn(view())  # moved on from the edit without the re-run
    _status, headers, _body = await post(proxy, chat.bytes())
    sent = upstream.seen[-1].json()
    assert headers["X-Repair-Trips"] == "reverify_owed"
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "execute_bash"}}
    assert "python -m pytest tests/test_parse.py" in sent["messages"][-1]["content"]


async def test_rewritten_request_has_a_true_content_length(make_proxy, upstream: Upstream, tmp_path: Path) -> None:
    """After a rewrite the upstream's Content-Length is the new body's length."""
    proxy = await make_proxy(policy=policy_file(tmp_path, STUCK_ACTS))
    upstream.reply_with(json_reply(ACTING))
    chat = Chat().turn(test_run()).turn(test_run("@pytest_addition_b")).turn(test_run())
    await post(proxy, chat.bytes())
    seen = upstream.seen[-1]
    assert len(seen.body) > len(chat.bytes())
    assert int(seen.headers["Content-Length"]) == len(seen.body)


async def test_restrict_removes_the_repeated_tool_for_one_request(
    make_proxy, upstream: Upstream, tmp_path: Path
) -> None:
    """`restrict` on repeat_call takes that tool out of `tools` on the tripping request only."""
    policy = policy_file(
        tmp_path,
        {"patterns.repeat_call": {"after": 3, "action": "restrict", "escalate": [], "mode": "act", "confirm": 0}},
    )
    proxy = await make_proxy(policy=policy)
    upstream.reply_with(json_reply(ACTING))
    chat = Chat()
    for _ in range(4):
        await post(proxy, chat.turn(view()).bytes())
    offered = [[t["function"]["name"] for t in s.json()["tools"]] for s in upstream.seen]
    assert offered == [["execute_bash", "str_replace_editor"]] * 2 + [["execute_bash"]] + [
        ["execute_bash", "str_replace_editor"]
    ]
    assert "exact call 3 times" in upstream.seen[2].json()["messages"][-1]["content"]


async def test_restrict_never_leaves_a_request_without_tools(make_proxy, upstream: Upstream, tmp_path: Path) -> None:
    """When the repeated tool is the only one offered, restrict takes nothing away: with no rung
    above it, the instruction alone."""
    policy = policy_file(
        tmp_path,
        {"patterns.repeat_call": {"after": 3, "action": "restrict", "escalate": [], "mode": "act", "confirm": 0}},
    )
    proxy = await make_proxy(policy=policy)
    only = [{"type": "function", "function": {"name": "str_replace_editor", "parameters": {"type": "object"}}}]
    chat = Chat(tools=only)
    for _ in range(3):
        await post(proxy, chat.turn(view()).bytes())
    assert all(seen.json()["tools"] == only for seen in upstream.seen)
    assert any("exact call 3 times" in str(seen.json()["messages"]) for seen in upstream.seen)
