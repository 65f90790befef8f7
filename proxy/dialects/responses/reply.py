"""The Responses API, reply side: the text and calls of a response, whole or streamed; salvaged
calls written as `function_call` output items; the incomplete hand-back as a response.

A streamed response is a sequence of typed events (`response.created`, `output_item.added`,
`output_text.delta`, ..., `response.completed`); a rewritten stream keeps every event that is
not about the replaced message, in order, and numbers them again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import orjson

from proxy.dialects.lines import LineScanner, sse_payloads
from proxy.engine.plan.handback import Handback
from proxy.engine.plan.reply import ReplyView
from proxy.engine.text.salvage import SalvagedCall

__all__ = ["Watcher", "handback", "read_reply", "salvaged", "salvaged_stream"]

_MESSAGE_EVENTS = frozenset(
    {
        "response.content_part.added",
        "response.content_part.done",
        "response.output_text.delta",
        "response.output_text.done",
        "response.output_text.annotation.added",
        "response.refusal.delta",
        "response.refusal.done",
    }
)
_FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})


def _text_of(item: dict[str, Any]) -> str:
    parts = item.get("content")
    if not isinstance(parts, list):
        return ""
    return "".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))


def read_reply(body: bytes) -> ReplyView | None:
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    output = payload.get("output") if isinstance(payload, dict) else None
    if not isinstance(output, list):
        return None
    items = [i for i in output if isinstance(i, dict)]
    text = "".join(_text_of(i) for i in items if i.get("type") == "message")
    calls = tuple(i.get("name") if isinstance(i.get("name"), str) else None for i in items if _is_call(i))
    arguments = tuple(str(i.get("arguments") or "") for i in items if _is_call(i))
    return ReplyView(text, calls, arguments)


def _is_call(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "function_call"


class Watcher:
    def __init__(self) -> None:
        self._scanner = LineScanner()
        self._text = ""
        self._calls: dict[str, str | None] = {}
        self._arguments: dict[str, list[str]] = {}

    def feed(self, chunk: bytes) -> None:
        for event in sse_payloads(self._scanner, chunk):
            if not isinstance(event, dict):
                continue
            kind = event.get("type")
            if kind == "response.output_text.delta" and isinstance(event.get("delta"), str):
                self._text += event["delta"]
            elif kind == "response.output_item.added" and _is_call(event.get("item")):
                name = event["item"].get("name")
                self._calls[str(event.get("output_index"))] = name if isinstance(name, str) and name else None
            elif isinstance(kind, str) and kind.startswith("response.function_call_arguments"):
                index = str(event.get("output_index"))
                self._calls.setdefault(index, None)
                if kind.endswith(".delta") and isinstance(event.get("delta"), str):
                    self._arguments.setdefault(index, []).append(event["delta"])
                elif kind.endswith(".done") and isinstance(event.get("arguments"), str):
                    self._arguments[index] = [event["arguments"]]

    @property
    def view(self) -> ReplyView:
        arguments = tuple("".join(self._arguments.get(i, ())) for i in self._calls)
        return ReplyView(self._text, tuple(self._calls.values()), arguments)


def _call_items(calls: Sequence[SalvagedCall], ids: Sequence[str], status: str = "completed") -> list[dict[str, Any]]:
    return [
        {
            "type": "function_call",
            "id": f"fc_{call_id}",
            "call_id": call_id,
            "name": call.name,
            "arguments": call.arguments_json if status == "completed" else "",
            "status": status,
        }
        for call, call_id in zip(calls, ids, strict=True)
    ]


def _replace_messages(output: Any, calls: list[dict[str, Any]]) -> list[Any]:
    """`output` with its message items replaced by `calls` (at the first message's place)."""
    items = output if isinstance(output, list) else []
    at = next((i for i, item in enumerate(items) if isinstance(item, dict) and item.get("type") == "message"), None)
    kept = [item for item in items if not (isinstance(item, dict) and item.get("type") == "message")]
    at = len(kept) if at is None else at
    return [*kept[:at], *calls, *kept[at:]]


def salvaged(body: bytes, calls: Sequence[SalvagedCall], ids: Sequence[str]) -> bytes:
    payload = orjson.loads(body)
    payload["output"] = _replace_messages(payload.get("output"), _call_items(calls, ids))
    if "output_text" in payload:
        payload["output_text"] = ""
    return orjson.dumps(payload)


def _events(held: Sequence[bytes]) -> list[dict[str, Any]]:
    scanner = LineScanner()
    return [e for chunk in held for e in sse_payloads(scanner, chunk) if isinstance(e, dict)]


def _encode(events: Sequence[dict[str, Any]]) -> bytes:
    numbered = [{**e, "sequence_number": n} if "sequence_number" in e else e for n, e in enumerate(events)]
    return b"".join(
        b"event: " + str(e.get("type")).encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in numbered
    )


def _call_events(calls: Sequence[SalvagedCall], ids: Sequence[str], first_index: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    started, done = _call_items(calls, ids, "in_progress"), _call_items(calls, ids)
    for offset, (opening, item) in enumerate(zip(started, done, strict=True)):
        index = first_index + offset
        where = {"item_id": item["id"], "output_index": index}
        events += [
            {"type": "response.output_item.added", "sequence_number": 0, "output_index": index, "item": opening},
            {
                "type": "response.function_call_arguments.delta",
                "sequence_number": 0,
                **where,
                "delta": item["arguments"],
            },
            {
                "type": "response.function_call_arguments.done",
                "sequence_number": 0,
                **where,
                "arguments": item["arguments"],
            },
            {"type": "response.output_item.done", "sequence_number": 0, "output_index": index, "item": item},
        ]
    return events


def salvaged_stream(held: Sequence[bytes], calls: Sequence[SalvagedCall], ids: Sequence[str]) -> bytes:
    """The held events without the message's, the calls' events where the message was; a stream
    cut short (the model ran on past its call) gets its `response.completed`."""
    out: list[dict[str, Any]] = []
    inserted = finished = False
    created: dict[str, Any] = {}
    for event in _events(held):
        kind = event.get("type")
        item = event.get("item")
        if kind == "response.created" and isinstance(event.get("response"), dict):
            created = event["response"]
        about_message = kind in _MESSAGE_EVENTS or (
            kind in ("response.output_item.added", "response.output_item.done")
            and isinstance(item, dict)
            and item.get("type") == "message"
        )
        if (about_message or kind in _FINAL_EVENTS) and not inserted:
            index = event.get("output_index")
            out += _call_events(calls, ids, index if isinstance(index, int) else 0)
            inserted = True
        if about_message:
            continue
        if kind in _FINAL_EVENTS and isinstance(event.get("response"), dict):
            finished = True
            response = dict(event["response"])
            response["output"] = _replace_messages(response.get("output"), _call_items(calls, ids))
            out.append({**event, "response": response})
        else:
            out.append(event)
    if not inserted:
        out += _call_events(calls, ids, 0)
    if not finished:
        response = {**created, "status": "completed", "output": _call_items(calls, ids)}
        out.append({"type": "response.completed", "sequence_number": 0, "response": response})
    return _encode(out)


def _response(hand: Handback, model: str, status: str, text: str) -> dict[str, Any]:
    message = {
        "type": "message",
        "id": f"msg_{hand.completion_id}",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    return {
        "id": f"resp_{hand.completion_id}",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": model,
        "output": [message] if text else [],
        "usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
        "metadata": {"repair_outcome": "incomplete", "repair_reason": hand.reason},
    }


def handback(hand: Handback, model: str, stream: bool) -> tuple[bytes, str]:
    """The hand-back as a response; streamed, every event a client's stream reader expects."""
    if not stream:
        return orjson.dumps(_response(hand, model, "completed", hand.text)), "application/json"
    message_id = f"msg_{hand.completion_id}"
    where = {"item_id": message_id, "output_index": 0, "content_index": 0}
    part = {"type": "output_text", "text": hand.text, "annotations": []}
    item = {"type": "message", "id": message_id, "role": "assistant"}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": _response(hand, model, "in_progress", "")},
        {"type": "response.in_progress", "response": _response(hand, model, "in_progress", "")},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "status": "in_progress", "content": []},
        },
        {"type": "response.content_part.added", **where, "part": {**part, "text": ""}},
        {"type": "response.output_text.delta", **where, "delta": hand.text},
        {"type": "response.output_text.done", **where, "text": hand.text},
        {"type": "response.content_part.done", **where, "part": part},
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**item, "status": "completed", "content": [part]},
        },
        {"type": "response.completed", "response": _response(hand, model, "completed", hand.text)},
    ]
    return _encode([{**e, "sequence_number": 0} for e in events]), "text/event-stream"
