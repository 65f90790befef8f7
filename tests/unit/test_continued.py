"""What of a streamed reply may go ahead of its judgement, and a later reply written as the rest
of one whose text went out, in each dialect, as tables with no server."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from proxy.dialects import continued
from proxy.dialects.chat_reply import ChatReplyWatcher


def sse(*payloads: Any, crlf: bool = False) -> bytes:
    end = b"\r\n\r\n" if crlf else b"\n\n"
    return b"".join(b"data: " + (p if isinstance(p, bytes) else orjson.dumps(p)) + end for p in payloads)


def chunk(delta: dict[str, Any], finish: str | None = None, cid: str = "first") -> dict[str, Any]:
    return {
        "id": cid,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


ROLE = chunk({"role": "assistant", "content": ""})
WORD = chunk({"content": "Let me"})
CALL = chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "bash", "arguments": ""}}]})
FINISH = chunk({}, "stop")
USAGE = {"id": "first", "choices": [], "usage": {"total_tokens": 3}}


@pytest.mark.parametrize(
    ("data", "ahead"),
    [
        (sse(ROLE, WORD), len(sse(ROLE, WORD))),
        (sse(ROLE, WORD) + b'data: {"id":"fi', len(sse(ROLE, WORD))),
        (b": keep-alive\n\n" + sse(WORD), len(b": keep-alive\n\n" + sse(WORD))),
        (sse(WORD, CALL, WORD), len(sse(WORD))),
        (sse(WORD, FINISH), len(sse(WORD))),
        (sse(USAGE), 0),
        (sse(WORD) + b"data: [DONE]\n\n", len(sse(WORD))),
        (sse(ROLE, WORD, crlf=True), len(sse(ROLE, WORD, crlf=True))),
        (b"data: not json\n\n", 0),
    ],
    ids=[
        "whole_text_chunks",
        "half_an_event_stays",
        "a_comment_is_text",
        "nothing_from_a_call_on",
        "the_finish_stays",
        "usage_stays",
        "done_stays",
        "crlf_framing",
        "what_cannot_be_read_stays",
    ],
)
def test_chat_ahead(data: bytes, ahead: int) -> None:
    assert continued.chat_ahead(data) == ahead


def _event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "sequence_number": 0, **fields}


MESSAGE = {"type": "message", "id": "m1", "role": "assistant", "content": []}
FUNCTION = {"type": "function_call", "id": "fc1", "call_id": "c1", "name": "bash", "arguments": ""}


@pytest.mark.parametrize(
    ("events", "ahead_count"),
    [
        (
            [
                _event("response.created", response={}),
                _event("response.output_item.added", output_index=0, item=MESSAGE),
            ],
            2,
        ),
        (
            [
                _event("response.output_text.delta", delta="hi"),
                _event("response.output_item.added", output_index=1, item=FUNCTION),
            ],
            1,
        ),
        ([_event("response.output_text.delta", delta="hi"), _event("response.completed", response={})], 1),
        ([_event("response.function_call_arguments.delta", delta="{")], 0),
    ],
    ids=["the_message_opening", "nothing_from_a_call_item_on", "the_completion_stays", "call_arguments_stay"],
)
def test_responses_ahead(events: list[dict[str, Any]], ahead_count: int) -> None:
    data = sse(*events)
    assert continued.responses_ahead(data) == len(sse(*events[:ahead_count]))


@pytest.mark.parametrize(
    ("lines", "ahead_count"),
    [
        ([{"message": {"role": "assistant", "content": "Let"}, "done": False}], 1),
        ([{"message": {"content": "a"}, "done": False}, {"message": {"content": ""}, "done": True}], 1),
        ([{"message": {"content": "", "tool_calls": [{"function": {"name": "bash"}}]}, "done": False}], 0),
    ],
    ids=["text_lines", "the_last_line_stays", "a_call_stays"],
)
def test_ollama_ahead(lines: list[dict[str, Any]], ahead_count: int) -> None:
    data = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    assert continued.ollama_ahead(data + b'{"message":') == sum(len(orjson.dumps(x)) + 1 for x in lines[:ahead_count])


def test_a_later_chat_reply_continues_under_the_first_id_without_a_second_role() -> None:
    sent = sse(ROLE, WORD)
    later = sse(
        chunk({"role": "assistant", "content": ""}, cid="second"),
        chunk({"content": "I will read it."}, cid="second"),
        chunk(
            {"tool_calls": [{"index": 0, "id": "c2", "function": {"name": "view", "arguments": "{}"}}]}, cid="second"
        ),
        chunk({}, "tool_calls", cid="second"),
        b"[DONE]",
    )
    out = continued.chat(sent, later)
    watcher = ChatReplyWatcher()
    watcher.feed(sent + out)
    assert watcher.view.text == "Let me\n\nI will read it." and watcher.view.calls == ("view",)
    payloads = [orjson.loads(line[6:]) for line in out.split(b"\n\n") if line.startswith(b"data: {")]
    assert {p["id"] for p in payloads} == {"first"}
    assert all("role" not in c["delta"] for p in payloads for c in p["choices"])
    assert out.endswith(b"data: [DONE]\n\n")


def test_a_later_chat_reply_after_no_text_is_not_set_apart() -> None:
    out = continued.chat(sse(ROLE), sse(chunk({"content": "Reading."}, cid="second")))
    assert orjson.loads(out[6:])["choices"][0]["delta"]["content"] == "Reading."


def test_a_later_ollama_reply_sets_its_text_apart_once() -> None:
    sent = b'{"message":{"role":"assistant","content":"Let me"},"done":false}\n'
    later = (
        b'{"message":{"role":"assistant","content":"Reading"},"done":false}\n'
        b'{"message":{"role":"assistant","content":" it."},"done":false}\n'
        b'{"message":{"role":"assistant","content":""},"done":true}\n'
    )
    out = [orjson.loads(line) for line in continued.ollama(sent, later).splitlines()]
    assert [e["message"]["content"] for e in out] == ["\n\nReading", " it.", ""]


def test_a_later_response_is_numbered_on_after_the_items_sent() -> None:
    sent = sse(
        _event("response.created", response={"id": "resp_first"}, sequence_number=0),
        _event("response.output_item.added", output_index=0, item=MESSAGE, sequence_number=1),
        _event("response.output_item.done", output_index=0, item=MESSAGE, sequence_number=2),
    )
    later = sse(
        _event("response.created", response={"id": "resp_later"}, sequence_number=0),
        _event("response.in_progress", response={"id": "resp_later"}, sequence_number=1),
        _event("response.output_item.added", output_index=0, item=FUNCTION, sequence_number=2),
        _event("response.completed", response={"id": "resp_later", "output": [FUNCTION]}, sequence_number=3),
    )
    out = [
        orjson.loads(line[6:]) for line in continued.responses(sent, later).split(b"\n") if line.startswith(b"data: ")
    ]
    assert [e["type"] for e in out] == ["response.output_item.added", "response.completed"]
    assert [e["sequence_number"] for e in out] == [3, 4]
    assert out[0]["output_index"] == 1
    assert out[1]["response"]["id"] == "resp_first" and out[1]["response"]["output"] == [MESSAGE, FUNCTION]
