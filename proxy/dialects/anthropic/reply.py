"""Anthropic Messages, reply side: a message's text and calls, whole or streamed; salvaged calls
written as `tool_use` blocks; the incomplete hand-back as a message.

A streamed message is a sequence of typed server-sent events: `message_start`, then per content
block `content_block_start`, its `content_block_delta`s (`text_delta`, `input_json_delta`,
`thinking_delta`, ...) and `content_block_stop`, then `message_delta` (the `stop_reason` and
output tokens) and `message_stop`; `ping` may come anywhere. A stream written anew keeps the
original's `message_start` (its id, model and input tokens) and its usage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from proxy.dialects.lines import LineScanner, sse_payloads
from proxy.engine.plan.handback import Handback
from proxy.engine.plan.reply import ReplyView
from proxy.engine.text.salvage import SalvagedCall

__all__ = ["Watcher", "encode", "events_of", "handback", "read_reply", "salvaged", "salvaged_stream"]


def _arguments(block: dict[str, Any]) -> str:
    value = block.get("input")
    return orjson.dumps(value).decode() if isinstance(value, dict) else ""


def _name(block: dict[str, Any]) -> str | None:
    name = block.get("name")
    return name if isinstance(name, str) and name else None


def read_reply(body: bytes) -> ReplyView | None:
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    content = payload.get("content") if isinstance(payload, dict) and payload.get("type") == "message" else None
    if not isinstance(content, list):
        return None
    blocks = [b for b in content if isinstance(b, dict)]
    text = "".join(b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str))
    calls = [b for b in blocks if b.get("type") == "tool_use"]
    return ReplyView(text, tuple(map(_name, calls)), tuple(map(_arguments, calls)))


class Watcher:
    """A streamed message so far: its text, its calls' names and their arguments as they come."""

    def __init__(self) -> None:
        self._scanner = LineScanner()
        self._text = ""
        self._calls: dict[int, str | None] = {}
        self._arguments: dict[int, list[str]] = {}

    def feed(self, chunk: bytes) -> None:
        for event in sse_payloads(self._scanner, chunk):
            if not isinstance(event, dict):
                continue
            kind, index = event.get("type"), event.get("index")
            if kind == "content_block_start" and isinstance(block := event.get("content_block"), dict):
                if block.get("type") == "tool_use" and isinstance(index, int):
                    self._calls[index] = _name(block)
                    given = block.get("input")
                    self._arguments[index] = [_arguments(block)] if isinstance(given, dict) and given else []
            elif kind == "content_block_delta" and isinstance(delta := event.get("delta"), dict):
                if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
                    self._text += delta["text"]
                elif delta.get("type") == "input_json_delta" and isinstance(delta.get("partial_json"), str):
                    self._arguments.setdefault(index if isinstance(index, int) else -1, []).append(
                        delta["partial_json"]
                    )

    @property
    def view(self) -> ReplyView:
        order = sorted(self._calls)
        arguments = tuple("".join(self._arguments.get(i, ())) for i in order)
        return ReplyView(self._text, tuple(self._calls[i] for i in order), arguments)


def _tool_uses(calls: Sequence[SalvagedCall], ids: Sequence[str]) -> list[dict[str, Any]]:
    return [
        {"type": "tool_use", "id": call_id, "name": call.name, "input": dict(call.arguments)}
        for call, call_id in zip(calls, ids, strict=True)
    ]


def salvaged(body: bytes, calls: Sequence[SalvagedCall], ids: Sequence[str]) -> bytes:
    """The message with its text blocks replaced by the calls (at the first text's place)."""
    payload = orjson.loads(body)
    content = [b for b in payload.get("content") or () if isinstance(b, dict)]
    at = next((i for i, b in enumerate(content) if b.get("type") == "text"), len(content))
    kept = [b for b in content if b.get("type") != "text"]
    payload["content"] = [*kept[:at], *_tool_uses(calls, ids), *kept[at:]]
    payload["stop_reason"], payload["stop_sequence"] = "tool_use", None
    return orjson.dumps(payload)


def events_of(held: Sequence[bytes]) -> list[dict[str, Any]]:
    scanner = LineScanner()
    return [e for chunk in held for e in sse_payloads(scanner, chunk) if isinstance(e, dict)]


def encode(events: Sequence[dict[str, Any]]) -> bytes:
    """Events as Messages streams them: an `event:` line naming each, then its data."""
    return b"".join(b"event: " + str(e.get("type")).encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in events)


def _call_events(calls: Sequence[SalvagedCall], ids: Sequence[str], first: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for offset, block in enumerate(_tool_uses(calls, ids)):
        index = first + offset
        delta = {"type": "input_json_delta", "partial_json": orjson.dumps(block["input"]).decode()}
        events += [
            {"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]
    return events


def _ending(events: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """`message_delta` saying the message stopped for its calls (the original's usage kept), and
    `message_stop`."""
    last: dict[str, Any] = next((e for e in reversed(events) if e.get("type") == "message_delta"), {})
    usage = last.get("usage") if isinstance(last.get("usage"), dict) else {"output_tokens": 0}
    delta = {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": usage}
    return [delta, {"type": "message_stop"}]


def salvaged_stream(held: Sequence[bytes], calls: Sequence[SalvagedCall], ids: Sequence[str]) -> bytes:
    """The held stream's `message_start`, the calls as `tool_use` blocks, and its ending."""
    events = events_of(held)
    start = next((e for e in events if e.get("type") == "message_start"), None)
    if start is None:
        start = {"type": "message_start", "message": _message(f"msg_{ids[0] if ids else 'salvaged'}", "", [], None)}
    return encode([start, *_call_events(calls, ids, 0), *_ending(events)])


def _message(message_id: str, model: str, content: list[Any], stop: str | None) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


def handback(hand: Handback, model: str, stream: bool) -> tuple[bytes, str]:
    """The hand-back as a message, with a `repair` member; streamed, every event a client's
    stream reader expects."""
    message_id = f"msg_repair_{hand.conversation[:16]}_{hand.turn}"
    repair = {"outcome": "incomplete", "reason": hand.reason, "current_failure": hand.current_failure}
    if not stream:
        whole = {**_message(message_id, model, [{"type": "text", "text": hand.text}], "end_turn"), "repair": repair}
        return orjson.dumps(whole), "application/json"
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": _message(message_id, model, [], None)},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": hand.text}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 0},
            "repair": repair,
        },
        {"type": "message_stop"},
    ]
    return encode(events), "text/event-stream"
