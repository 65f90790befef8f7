"""Where a relayed stream ends for the agent (`upstream.ends.StreamEnd`), as a table: each stream
shape's last event, whole or split anywhere between chunks, and the markers that are no end."""

from __future__ import annotations

import orjson
import pytest
from support import sse_chunks

from proxy.http.upstream.ends import StreamEnd

DONE = b"data: [DONE]\n\n"
RESPONSES_END = (
    b"event: response.completed\ndata: "
    + orjson.dumps({"type": "response.completed", "response": {"id": "r", "output": [{"type": "message"}] * 40}})
    + b"\n\n"
)
ANTHROPIC_END = b'event: message_stop\ndata: {"type": "message_stop"}\n\n'
OLLAMA_END = b'{"model":"m","message":{"role":"assistant","content":""},"done":true,"eval_count":3}\n'


def reached_at(chunks: list[bytes], content_type: str = "text/event-stream") -> int | None:
    """The index of the chunk after which the end is reached, or None."""
    end = StreamEnd(content_type)
    return next((i for i, chunk in enumerate(chunks) if end.feed(chunk)), None)


def every_split(stream: bytes) -> list[list[bytes]]:
    """`stream` in two chunks, cut at every byte."""
    return [[stream[:cut], stream[cut:]] for cut in range(1, len(stream))]


@pytest.mark.parametrize(
    "last",
    [DONE, RESPONSES_END, ANTHROPIC_END, OLLAMA_END],
    ids=["chat", "responses", "anthropic", "ollama"],
)
def test_the_last_event_is_the_end_wherever_the_chunks_are_cut(last: bytes) -> None:
    ndjson = last == OLLAMA_END
    before = b'{"done":false}\n' if ndjson else b"".join(sse_chunks("some words here"))[: -len(DONE)]
    stream = before + last
    for chunks in every_split(stream):
        at = reached_at(chunks, "application/x-ndjson" if ndjson else "text/event-stream; charset=utf-8")
        assert at == 1, (chunks, at)  # never before its last byte: the last event ends the stream


def test_crlf_events_end_too() -> None:
    assert reached_at([b"data: {}\r\n\r\n", b"data: [DONE]\r\n", b"\r\n"]) == 2


def test_a_body_that_is_no_stream_ends_only_at_its_end() -> None:
    """(the relay calls it whole when the upstream ends it)"""
    assert reached_at([b'{"type": "message_stop", "done": true}\n\n'], "application/json") is None


def test_the_end_is_reached_with_the_chunk_that_completes_the_event() -> None:
    chunks = [*sse_chunks("a b")[:-1], b"data: [DO", b"NE]", b"\n", b"\n"]
    assert reached_at(chunks) == len(chunks) - 1  # the blank line that ends the event


@pytest.mark.parametrize(
    "chunks",
    [
        [b'data: {"choices":[{"delta":{"content":"data: [DONE]"}}]}\n\n'],  # the marker inside a model's text
        [b'data: {"choices":[{"delta":{"content":"say \\"done\\": true"}}]}\n\n'],  # escaped in a string
        [b'data: {"choices":[{"delta":{"content":"\\"type\\":\\"message_stop\\""}}]}\n\n'],
        [b'{"model":"m","message":{"content":"x"},"done":false}\n'],  # Ollama, mid-stream
        [b"event: response.completed\n"],  # the event's name before its data
        [b"x" * 200 + b"data: [DONE]\n"],  # not at a line's start, past the carried bytes
        [b"x" * 200, b"data: [DONE]\n"],
        [b"data: [DONE]"],  # its line not ended yet
        [b"data: [DONE]\n"],  # its event not ended yet
    ],
)
def test_what_is_no_end(chunks: list[bytes]) -> None:
    assert reached_at(chunks) is None
