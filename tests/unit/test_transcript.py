"""Reading `messages` into turns: every shape agents and servers produce, none of them a crash."""

from __future__ import annotations

from proxy.engine.text.messages import content_text, parse_arguments
from proxy.engine.text.transcript import read_turns


def call(call_id: str, name: str = "bash", arguments: object = '{"command": "ls"}') -> dict[str, object]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_parallel_calls_pair_with_their_results_by_id() -> None:
    """Results answer calls by tool_call_id, whatever their order."""
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call("a"), call("b", "read_file", '{"path": "x"}')]},
        {"role": "tool", "tool_call_id": "b", "content": "file x"},
        {"role": "tool", "tool_call_id": "a", "content": "listing"},
    ]
    turns, users = read_turns(messages)
    assert [(c.id, c.result) for c in turns[0].calls] == [("a", "listing"), ("b", "file x")]
    assert [u.text for u in users] == ["go"]
    assert turns[0].end_index == 3


def test_call_without_result_yet_is_unanswered() -> None:
    """A call whose result has not arrived has result None."""
    turns, _ = read_turns([{"role": "assistant", "tool_calls": [call("a")]}])
    assert turns[0].calls[0].result is None
    assert turns[0].anchor == "msg:0"


def test_content_shapes() -> None:
    """String, null, and arrays of parts (text parts, nested content) all give text."""
    assert content_text("x") == "x"
    assert content_text(None) == ""
    assert content_text([{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {}}, "b"]) == "a\nb"
    assert content_text([{"type": "tool_result", "content": [{"type": "text", "text": "deep"}]}]) == "deep"


def test_malformed_arguments_are_kept_raw() -> None:
    """Two JSON objects glued together (servers merging parallel calls) parse to None, raw kept."""
    parsed, raw = parse_arguments('{"a": 1}{"b": 2}')
    assert parsed is None and raw == '{"a": 1}{"b": 2}'
    assert parse_arguments("") == ({}, "")
    assert parse_arguments({"b": 1, "a": 2})[1] == '{"a":2,"b":1}'
    assert parse_arguments("[1]")[0] is None


def test_legacy_function_call_and_function_role() -> None:
    """A legacy function_call is answered by the following `function` message."""
    messages = [
        {"role": "assistant", "content": None, "function_call": {"name": "bash", "arguments": "{}"}},
        {"role": "function", "name": "bash", "content": "out"},
    ]
    turns, _ = read_turns(messages)
    assert [(c.id, c.name, c.result) for c in turns[0].calls] == [("fn:0", "bash", "out")]


def test_tool_message_without_id_answers_the_first_open_call() -> None:
    """Servers that drop tool_call_id still pair results in order."""
    messages = [{"role": "assistant", "tool_calls": [call("a"), call("b")]}, {"role": "tool", "content": "first"}]
    turns, _ = read_turns(messages)
    assert [c.result for c in turns[0].calls] == ["first", None]


def test_junk_is_skipped_never_raised() -> None:
    """Non-dict messages, unknown roles, orphan tool results, calls that are not objects: skipped."""
    messages: list[object] = [
        None,
        3,
        "text",
        {"role": "wizard", "content": "?"},
        {"role": "tool", "tool_call_id": "zz", "content": "orphan"},
        {"role": "assistant", "tool_calls": ["bad", {"function": "bad"}, call("ok")]},
        {"role": "tool", "tool_call_id": "ok", "content": 5},
    ]
    turns, _ = read_turns(messages)
    assert [c.id for c in turns[0].calls] == ["pos:5:1", "ok"]
    assert turns[0].calls[1].result == "5"


def test_error_flags_on_results() -> None:
    """`is_error` on the message or on a content part marks the result as an error."""
    messages = [
        {"role": "assistant", "tool_calls": [call("a"), call("b")]},
        {"role": "tool", "tool_call_id": "a", "content": "x", "is_error": True},
        {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "y", "is_error": True}]},
    ]
    turns, _ = read_turns(messages)
    assert [c.is_error for c in turns[0].calls] == [True, True]


def test_a_read_from_any_message_on_sees_each_user_message_after_what_a_whole_read_does() -> None:
    """The proxy reads only the messages a request adds; what a user message came after (a result,
    a reply, another user message: `UserMessage.after`) must not depend on where that read began.
    Walked over every scenario's last request, from every message a read can begin at (a turn or a
    user message: never a result, whose call was read before). (Before: the first message
    of each new stretch was read as coming after nothing, so an agent's rejection sent one per
    request in place of a dropped reply never counted as one.)"""
    import orjson
    from scenario_loader import load, names

    walked = 0
    for name in names():
        messages = orjson.loads(load(name).requests()[-1])["messages"]
        whole = {u.message_index: u.after for u in read_turns(messages)[1]}
        for start in range(1, len(messages)):
            if messages[start].get("role") in ("tool", "function"):
                continue
            tail = {u.message_index: u.after for u in read_turns(messages, start)[1]}
            assert tail == {i: a for i, a in whole.items() if i >= start}, (name, start)
            walked += 1
    assert walked > 500
