"""The Messages dialect, as tables: what a request reads as, where an edit goes, what a reply says,
what of a stream goes ahead and how a later message continues it."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from proxy.dialects import ANTHROPIC
from proxy.dialects.anthropic import reply, stream
from proxy.dialects.anthropic.request import SOURCE
from proxy.engine.plan.handback import Handback
from proxy.engine.text.exchange import Edit
from proxy.engine.text.salvage import SalvagedCall
from proxy.http.upstream.replies import anthropic_shaped

USE = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest -q"}}
RESULT = {"type": "tool_result", "tool_use_id": "t1", "content": "1 failed", "is_error": True}
REMINDER = {"type": "text", "text": "<system-reminder>\nToday's date is 2026-12-06.\n</system-reminder>"}


def body(*messages: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 64, "messages": list(messages), **more}


def chat_view(data: dict[str, Any]) -> list[dict[str, Any]]:
    translation = ANTHROPIC.read(data)
    assert translation is not None
    return [{k: v for k, v in m.items() if k != SOURCE} for m in translation.messages]


def test_a_transcript_reads_as_chat_turns() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    second = {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "/w/a.py"}}
    data = body(
        {"role": "user", "content": [REMINDER, {"type": "text", "text": "Fix the test."}]},
        {"role": "system", "content": "# Environment"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}, {"type": "text", "text": "Running."}, USE, second]},
        {"role": "user", "content": [RESULT, {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "def f(): pass"}, image]}, REMINDER]},
        system=[{"type": "text", "text": "You are Claude Code."}, {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        tools=[{"name": "Bash", "description": "Run.", "input_schema": {"type": "object"}}, {"type": "web_search_20250305", "name": "web_search"}],
        tool_choice={"type": "any"},
        stream=True,
    )  # fmt: skip
    assert chat_view(data) == [
        {"role": "system", "content": "You are Claude Code.\nBe brief."},
        {"role": "user", "content": "Fix the test."},
        {"role": "system", "content": "# Environment"},
        {
            "role": "assistant",
            "content": "Running.",
            "tool_calls": [
                {"id": "t1", "type": "function", "function": {"name": "Bash", "arguments": '{"command":"pytest -q"}'}},
                {"id": "t2", "type": "function", "function": {"name": "Read", "arguments": '{"file_path":"/w/a.py"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "1 failed", "is_error": True},
        {"role": "tool", "tool_call_id": "t2", "content": "def f(): pass", "is_error": False},
    ]
    translation = ANTHROPIC.read(data)
    assert translation is not None and translation.stream and translation.tool_choice == "required"
    assert translation.tools == [
        {"type": "function", "function": {"name": "Bash", "description": "Run.", "parameters": {"type": "object"}}}
    ]


@pytest.mark.parametrize(
    "data",
    [
        {"model": "m", "messages": "hi"},
        body({"role": "developer", "content": "hi"}),
        body({"role": "user", "content": 7}),
        body({"role": "user", "content": [{"type": "hologram"}]}),
        body({"role": "user", "content": [RESULT]}),
        body({"role": "assistant", "content": [USE]}, {"role": "user", "content": [{**RESULT, "tool_use_id": "t9"}]}),
        body({"role": "user", "content": ["a string where a block goes"]}),
    ],
    ids=["messages_not_a_list", "unknown_role", "content_a_number", "unknown_block", "result_before_any_call", "result_of_no_call", "block_not_an_object"],
)  # fmt: skip
def test_what_is_not_a_messages_transcript_is_not_analysable(data: dict[str, Any]) -> None:
    assert ANTHROPIC.read(data) is None


def written(data: dict[str, Any], edit_of: Any, **edit: Any) -> dict[str, Any]:
    """The body with the edit made: `edit_of(messages)` gives the edited chat messages."""
    translation = ANTHROPIC.read(data)
    assert translation is not None
    raw = orjson.dumps(data)
    out = ANTHROPIC.write(raw, data, translation, Edit(messages=edit_of(list(translation.messages)), **edit))
    return orjson.loads(out)  # type: ignore[no-any-return]


def note(text: str = "[repair-proxy] Re-run the test.") -> dict[str, Any]:
    return {"role": "system", "content": text}


def test_an_instruction_after_a_turn_goes_right_after_its_results_before_the_reminder() -> None:
    data = body(
        {"role": "user", "content": "Fix it."},
        {"role": "assistant", "content": [USE]},
        {"role": "user", "content": [RESULT, REMINDER]},
    )
    out = written(data, lambda m: [*m, note()])
    assert out["messages"][:2] == data["messages"][:2]
    assert out["messages"][2]["content"] == [
        RESULT,
        {"type": "text", "text": "[repair-proxy] Re-run the test."},
        REMINDER,
    ]


def test_an_instruction_after_a_reply_without_calls_goes_to_the_next_user_turn_or_its_own() -> None:
    said = {"role": "assistant", "content": [{"type": "text", "text": "Done, I think."}]}
    data = body({"role": "user", "content": "Fix it."}, said, {"role": "user", "content": "Are the tests green?"})
    out = written(data, lambda m: [m[0], m[1], note(), m[2]])
    assert out["messages"][2]["content"] == [
        {"type": "text", "text": "[repair-proxy] Re-run the test."},
        {"type": "text", "text": "Are the tests green?"},
    ]
    last = written(body({"role": "user", "content": "Fix it."}, said), lambda m: [*m, note()])
    assert last["messages"][2] == {
        "role": "user",
        "content": [{"type": "text", "text": "[repair-proxy] Re-run the test."}],
    }


def test_an_instruction_appended_to_a_result_stays_in_it() -> None:
    blocks = {**RESULT, "content": [{"type": "text", "text": "1 failed"}]}
    for result, expected in (
        (RESULT, "1 failed\n\n[repair-proxy] x"),
        (blocks, [{"type": "text", "text": "1 failed"}, {"type": "text", "text": "[repair-proxy] x"}]),
    ):
        data = body(
            {"role": "user", "content": "Fix it."},
            {"role": "assistant", "content": [USE]},
            {"role": "user", "content": [result]},
        )
        out = written(data, lambda m: [*m[:-1], {**m[-1], "content": m[-1]["content"] + "\n\n[repair-proxy] x"}])
        assert out["messages"][2]["content"][0]["content"] == expected


def test_a_retry_that_leaves_out_an_idle_reply_and_its_nudge_keeps_roles_taking_turns() -> None:
    idle = {"role": "assistant", "content": [{"type": "text", "text": "Let me think."}]}
    data = body(
        {"role": "user", "content": "Fix it."}, {"role": "assistant", "content": [USE]}, {"role": "user", "content": [RESULT]},
        idle, {"role": "user", "content": "Please go on."}, idle, {"role": "user", "content": "Please go on."},
    )  # fmt: skip
    out = written(data, lambda m: [*m[:3], note()], leaves_out=True)
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "user"]
    assert out["messages"][2]["content"][-1]["text"] == "[repair-proxy] Re-run the test."


@pytest.mark.parametrize(
    ("edit", "more", "choice"),
    [
        ({"tool_choice": "Bash"}, {}, {"type": "tool", "name": "Bash"}),
        ({"require_call": True}, {}, {"type": "any"}),
        ({"tool_choice": "Bash"}, {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}}, {"type": "tool", "name": "Bash", "disable_parallel_tool_use": True}),
        ({"tool_choice": "Bash"}, {"thinking": {"type": "adaptive"}}, None),
        ({"require_call": True}, {"thinking": {"type": "enabled", "budget_tokens": 1024}}, None),
        ({"tools": ["Read"]}, {"tool_choice": {"type": "tool", "name": "Bash"}}, None),
    ],
    ids=["force", "a_call", "parallel_setting_kept", "not_with_adaptive_thinking", "not_with_thinking", "restricted_away"],
)  # fmt: skip
def test_what_a_call_is_asked_for_with(edit: dict[str, Any], more: dict[str, Any], choice: Any) -> None:
    tools = [{"name": "Bash", "input_schema": {"type": "object"}}, {"name": "Read", "input_schema": {"type": "object"}}]
    data = body({"role": "user", "content": "Fix it."}, tools=tools, **more)
    out = written(data, lambda m: m, **edit, call_schema={"type": "object"})
    assert out.get("tool_choice") == choice
    assert "output_format" not in out and "response_format" not in out
    if "tools" in edit:
        assert [t["name"] for t in out["tools"]] == ["Read"]


def sse(*events: dict[str, Any]) -> bytes:
    return reply.encode(list(events))


START = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [], "usage": {"input_tokens": 9, "output_tokens": 1}}}  # fmt: skip
TEXT = [
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Running."}},
    {"type": "content_block_stop", "index": 0},
]
CALL = [
    {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"comm'}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": 'and": "ls"}'}},
    {"type": "content_block_stop", "index": 1},
]  # fmt: skip
END = [
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 7}},
    {"type": "message_stop"},
]


def test_a_streamed_message_read_as_it_comes_in_any_cut() -> None:
    whole = sse(START, {"type": "ping"}, *TEXT, *CALL, *END)
    for cut in (1, 7, 50, len(whole) // 2):
        watcher = ANTHROPIC.reply_watcher()
        for at in range(0, len(whole), cut):
            watcher.feed(whole[at : at + cut])
        assert (watcher.view.text, watcher.view.calls, watcher.view.arguments) == (
            "Running.",
            ("Bash",),
            ('{"command": "ls"}',),
        )
    message = {**START["message"], "content": [{"type": "text", "text": "Running."}, USE], "stop_reason": "tool_use"}
    view = ANTHROPIC.read_reply(orjson.dumps(message))
    assert view is not None and (view.text, view.calls) == ("Running.", ("Bash",))
    assert ANTHROPIC.read_reply(b'{"type": "error", "error": {"type": "overloaded_error"}}') is None


def test_what_may_go_ahead_is_the_opening_and_the_text_never_a_call_or_the_end() -> None:
    opening = sse(START, {"type": "ping"}, *TEXT)
    assert stream.ahead(opening + sse(*CALL, *END)) == len(opening)
    assert stream.ahead(opening + sse(*END)) == len(opening)
    assert stream.ahead(opening[:-3]) == len(sse(START, {"type": "ping"}, *TEXT[:2]))  # never half an event


def test_a_later_message_continues_the_stream_after_the_text_that_went() -> None:
    sent = sse(START, *TEXT[:2])  # the text block is still open
    later = sse({**START, "message": {**START["message"], "id": "msg_2"}}, *TEXT, *CALL, *END)
    events = reply.events_of([sent + stream.continued(sent, later)])
    assert [e["type"] for e in events].count("message_start") == 1
    assert [(e["type"], e.get("index")) for e in events if e["type"].startswith("content_block_s")] == [
        ("content_block_start", 0), ("content_block_stop", 0), ("content_block_start", 1), ("content_block_stop", 1),
        ("content_block_start", 2), ("content_block_stop", 2),
    ]  # fmt: skip


def test_calls_written_as_text_become_tool_use_blocks_whole_and_streamed() -> None:
    calls, ids = [SalvagedCall("Bash", {"command": "ls"})], ["call_rp1"]
    message = {**START["message"], "content": [{"type": "text", "text": '{"name": "Bash"}'}], "stop_reason": "end_turn"}
    whole = orjson.loads(ANTHROPIC.salvaged(orjson.dumps(message), calls, ids))
    assert whole["content"] == [{"type": "tool_use", "id": "call_rp1", "name": "Bash", "input": {"command": "ls"}}]
    assert whole["stop_reason"] == "tool_use"
    held = [sse(START, *TEXT, *END)]
    watcher = ANTHROPIC.reply_watcher()
    watcher.feed(ANTHROPIC.salvaged_stream(held, calls, ids))
    assert (watcher.view.text, watcher.view.calls, watcher.view.arguments) == ("", ("Bash",), ('{"command":"ls"}',))
    events = reply.events_of([ANTHROPIC.salvaged_stream(held, calls, ids)])
    assert (
        events[0] == START
        and events[-2]["delta"]["stop_reason"] == "tool_use"
        and events[-2]["usage"] == {"output_tokens": 7}
    )


@pytest.mark.parametrize("streamed", [False, True])
def test_the_hand_back_is_a_message(streamed: bool) -> None:
    hand = Handback("[repair-proxy] Stopping here: INCOMPLETE", "stuck_same_diagnostic", None, "c" * 24, 3)
    body_out, content_type = ANTHROPIC.handback(hand, "qwen", streamed)
    if not streamed:
        message = orjson.loads(body_out)
        assert content_type == "application/json" and message["type"] == "message"
        assert message["content"] == [{"type": "text", "text": hand.text}] and message["stop_reason"] == "end_turn"
        return
    assert content_type == "text/event-stream"
    assert [e["type"] for e in reply.events_of([body_out])] == [
        "message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("path", "shaped"),
    [
        ("/v1/messages", True),
        ("/v1/messages/count_tokens", True),
        ("/v1/messagesx", False),
        ("/v1/chat/completions", False),
    ],
)
def test_the_routes_whose_errors_are_anthropics(path: str, shaped: bool) -> None:
    assert anthropic_shaped(path) is shaped
