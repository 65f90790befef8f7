"""Reading what a reply used as its chunks pass (`proxy.http.observe.usage`), in every shape forwarded."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from proxy.http.observe.usage import WHOLE_LIMIT, Usage, UsageReader


def sse(*payloads: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + orjson.dumps(p) + b"\n\n" for p in payloads) + b"data: [DONE]\n\n"


def read(body: bytes, streamed: bool, piece: int = 0) -> Usage:
    reader = UsageReader(streamed)
    pieces = [body[i : i + piece] for i in range(0, len(body), piece)] if piece else [body]
    for chunk in pieces:
        reader.feed(chunk)
    return reader.usage()


CHAT_STREAM = sse(
    {"model": "m1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
    {"model": "m1", "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}]},
    {"model": "m1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    {"model": "m1", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}},
)


@pytest.mark.parametrize("piece", [0, 1, 7, 64])
def test_a_chat_stream_read_however_it_is_cut(piece: int) -> None:
    assert read(CHAT_STREAM, True, piece) == Usage("m1", 9, 2, ("stop",))


@pytest.mark.parametrize("piece", [0, 1, 7])
def test_a_stream_with_crlf_line_ends_reads_as_with_lf(piece: int) -> None:
    """A server ending its lines with CRLF: the reader strips the CR the line scanner leaves."""
    assert read(CHAT_STREAM.replace(b"\n", b"\r\n"), True, piece) == Usage("m1", 9, 2, ("stop",))


def test_a_whole_chat_reply() -> None:
    body = orjson.dumps(
        {
            "model": "m2",
            "choices": [{"index": 0, "message": {"content": "x"}, "finish_reason": "length"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4},
        }
    )
    assert read(body, False, 5) == Usage("m2", 3, 4, ("length",))


def test_a_responses_stream_says_it_in_its_completed_event() -> None:
    response = {"object": "response", "model": "m3", "status": "in_progress", "usage": None}
    body = sse(
        {"type": "response.created", "response": response},
        {"type": "response.output_text.delta", "delta": "hi"},
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "usage": {"input_tokens": 5, "output_tokens": 6}},
        },
    )
    assert read(body, True, 11) == Usage("m3", 5, 6, ("completed",))


@pytest.mark.parametrize("piece", [0, 1, 13])
def test_a_messages_stream_says_it_in_its_opening_and_its_delta(piece: int) -> None:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m5", "content": []}
    events = [
        {"type": "message_start", "message": {**message, "usage": {"input_tokens": 12, "output_tokens": 1}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 8},
        },
        {"type": "message_stop"},
    ]
    body = b"".join(b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in events)
    assert read(body, True, piece) == Usage("m5", 12, 8, ("tool_use",))
    whole = {**message, "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 4}}
    assert read(orjson.dumps(whole), False) == Usage("m5", 3, 4, ("end_turn",))


def test_an_incomplete_response_says_why() -> None:
    body = orjson.dumps(
        {
            "object": "response",
            "model": "m3",
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
            "usage": {"input_tokens": 1, "output_tokens": 2},
        }
    )
    assert read(body, False) == Usage("m3", 1, 2, ("max_output_tokens",))


def test_an_ollama_stream_says_it_on_its_last_line() -> None:
    lines = [
        {"model": "llama", "message": {"content": "hi"}, "done": False},
        {
            "model": "llama",
            "message": {"content": ""},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 12,
            "eval_count": 3,
        },
    ]
    body = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    assert read(body, True, 9) == Usage("llama", 12, 3, ("stop",))


def test_embeddings_have_input_tokens_only() -> None:
    body = orjson.dumps({"model": "e", "data": [], "usage": {"prompt_tokens": 8, "total_tokens": 8}})
    assert read(body, False) == Usage("e", 8, None, ())


@pytest.mark.parametrize(
    ("body", "streamed"),
    [
        (b"not json", False),
        (b'{"error": {"message": "x"}}', False),
        (b"data: {broken\n\ndata: [DONE]\n\n", True),
        (orjson.dumps({"usage": {"prompt_tokens": -1, "completion_tokens": True}}), False),
        (orjson.dumps({"type": 3, "choices": "x", "usage": [1]}), False),
    ],
)
def test_what_says_nothing_reads_as_nothing(body: bytes, streamed: bool) -> None:
    assert read(body, streamed) == Usage()


def test_a_whole_body_past_the_limit_is_not_kept() -> None:
    reader = UsageReader(streamed=False)
    reader.feed(b'{"model": "m", "pad": "' + b"x" * WHOLE_LIMIT)
    reader.feed(b'", "usage": {"prompt_tokens": 1}}')
    assert reader.usage() == Usage()


def test_lines_that_only_carry_text_are_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the first, a stream's chunks are parsed only when they may carry usage or a finish reason."""
    parsed: list[bytes] = []
    real = orjson.loads
    monkeypatch.setattr("proxy.http.observe.usage.orjson.loads", lambda data: parsed.append(data) or real(data))
    text = [
        {"model": "m", "choices": [{"index": 0, "delta": {"content": str(i)}, "finish_reason": None}]}
        for i in range(50)
    ]
    end = {"model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    assert read(sse(*text, end), True).finish_reasons == ("stop",)
    assert len(parsed) == 2
