"""Runs of one task share no state through the proxy: each is a branch of its own, whatever ids
the model server gives its calls."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp.test_utils import TestServer
from chat import Chat, edit, test_run
from support import Upstream, completion, json_reply, post

ACTING = completion(
    "",
    tool_calls=[
        {"id": "call_0", "type": "function", "function": {"name": "execute_bash", "arguments": '{"command": "ls"}'}}
    ],
)


def numbered_from_zero(chat: Chat) -> bytes:
    """The run's request as a server numbering call ids from 0 in each reply leaves it."""
    body: dict[str, Any] = orjson.loads(chat.bytes())
    for message in body["messages"]:
        for call in message.get("tool_calls") or []:
            call["id"] = "call_0"
        if message.get("role") == "tool":
            message["tool_call_id"] = "call_0"
    return orjson.dumps(body)


async def test_a_second_run_of_a_task_is_not_told_the_first_runs_streak(proxy: TestServer, upstream: Upstream) -> None:
    """Run A fails the same check three times and is nudged; run B of the same task starts the
    same, edits, and fails once more: B is nudged about nothing, and A's nudge never reaches the
    model in B's requests (what B may get of A is the cross-run memory note, by design)."""
    upstream.reply_with(json_reply(ACTING))
    run_a = Chat()
    trips_a = []
    for output in ("@pytest_addition_a", "@pytest_addition_b", "@pytest_addition_a"):
        reply = await post(proxy, numbered_from_zero(run_a.turn(test_run(output))))
        trips_a.append(reply.headers.get("X-Repair-Trips"))
    assert trips_a == [None, None, "stuck_same_diagnostic"]
    seen_before_b = len(upstream.seen)
    run_b = Chat()
    trips_b = []
    for step in (test_run(), edit(), test_run("@pytest_addition_b")):
        reply = await post(proxy, numbered_from_zero(run_b.turn(step)))
        trips_b.append(reply.headers.get("X-Repair-Trips"))
    assert trips_b == [None, None, None]
    sent_to_model = [s.body for s in upstream.seen[seen_before_b:]]
    assert all(b"came back 3 times" not in body for body in sent_to_model)
    assert b"came back 3 times" in upstream.seen[seen_before_b - 1].body
