"""The OpenAI Responses API (`/v1/responses`): `input` items translated to chat turns and back.

`message` items become messages, consecutive `function_call` items one assistant message
with tool calls, `function_call_output` items tool results (paired by `call_id`);
`instructions` is the system text. Every translated message remembers the items it came
from, so writing back keeps each original item as it was and places new instructions as
`message` items between them. A request with `previous_response_id` keeps its history
upstream, out of the proxy's sight: it is not analysable and goes through untouched.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from proxy.dialects.lines import LineScanner, sse_payloads
from proxy.dialects.protocol import StreamWatcher
from proxy.engine.exchange import Edit, Translation
from proxy.engine.handback import Handback
from proxy.engine.transcript import content_text

__all__ = ["RESPONSES", "Responses"]

SOURCE = "_src"
"""Key on translated messages: the `input` indices they came from (never sent upstream)."""


def _tools(tools: Any) -> list[Any] | None:
    if not isinstance(tools, list):
        return None
    return [
        {"type": "function", "function": {"name": t.get("name"), "parameters": t.get("parameters", {})}}
        for t in tools
        if isinstance(t, dict) and t.get("type") == "function" and isinstance(t.get("name"), str)
    ]


def _read(data: dict[str, Any]) -> Translation | None:
    if data.get("previous_response_id"):
        return None
    items = data.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    if not isinstance(items, list):
        return None
    messages: list[Any] = []
    instructions = data.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions, SOURCE: []})
    open_calls: dict[str, Any] | None = None
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "function_call":
            call = {
                "id": item.get("call_id") or item.get("id") or f"pos:{index}:0",
                "type": "function",
                "function": {"name": item.get("name", ""), "arguments": item.get("arguments", "")},
            }
            if open_calls is None:
                open_calls = {"role": "assistant", "content": None, "tool_calls": [], SOURCE: []}
                messages.append(open_calls)
            open_calls["tool_calls"].append(call)
            open_calls[SOURCE].append(index)
            continue
        open_calls = None
        if kind == "function_call_output":
            output = item.get("output")
            text = output if isinstance(output, str) else content_text(output)
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": text, SOURCE: [index]})
        elif kind == "message":
            messages.append(
                {"role": item.get("role", "user"), "content": content_text(item.get("content")), SOURCE: [index]}
            )
    return Translation(messages, _tools(data.get("tools")), data.get("stream") is True, str(data.get("model") or ""))


def _item(message: dict[str, Any]) -> dict[str, Any]:
    role = message.get("role")
    return {
        "type": "message",
        "role": role if role in ("user", "system", "developer") else "system",
        "content": message.get("content"),
    }


def _write(data: dict[str, Any], edit: Edit) -> dict[str, Any]:
    out = dict(data)
    if edit.messages is not None:
        items = data.get("input")
        originals: list[Any] = (
            items if isinstance(items, list) else [{"type": "message", "role": "user", "content": items}]
        )
        rebuilt: list[Any] = []
        for message in edit.messages:
            sources = message.get(SOURCE) if isinstance(message, dict) else None
            if sources is None:
                rebuilt.append(_item(message))
                continue
            for index in sources:
                item = originals[index]
                if (
                    message.get("role") == "tool"
                    and isinstance(item.get("output"), str)
                    and message["content"] != item["output"]
                ):
                    item = {**item, "output": message["content"]}
                rebuilt.append(item)
        out["input"] = rebuilt
    if edit.tools is not None:
        out["tools"] = [t for t in data.get("tools") or [] if isinstance(t, dict) and t.get("name") in edit.tools]
        choice = out.get("tool_choice")
        if isinstance(choice, dict) and choice.get("name") not in edit.tools:
            out.pop("tool_choice")
    if edit.tool_choice is not None:
        out["tool_choice"] = {"type": "function", "name": edit.tool_choice}
    return out


def _reply_acts(body: bytes) -> bool:
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    output = payload.get("output") if isinstance(payload, dict) else None
    return isinstance(output, list) and any(isinstance(i, dict) and i.get("type") == "function_call" for i in output)


def _event_acts(event: Any) -> bool:
    if not isinstance(event, dict):
        return False
    kind = event.get("type", "")
    item = event.get("item")
    return kind.startswith("response.function_call_arguments") or (
        isinstance(item, dict) and item.get("type") == "function_call"
    )


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


def _handback(hand: Handback, model: str, stream: bool) -> tuple[bytes, str]:
    if not stream:
        return orjson.dumps(_response(hand, model, "completed", hand.text)), "application/json"
    message_id = f"msg_{hand.completion_id}"
    events: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": _response(hand, model, "in_progress", "")}),
        (
            "response.output_item.added",
            {
                "output_index": 0,
                "item": {
                    "type": "message",
                    "id": message_id,
                    "status": "in_progress",
                    "role": "assistant",
                    "content": [],
                },
            },
        ),
        (
            "response.output_text.delta",
            {"item_id": message_id, "output_index": 0, "content_index": 0, "delta": hand.text},
        ),
        (
            "response.output_text.done",
            {"item_id": message_id, "output_index": 0, "content_index": 0, "text": hand.text},
        ),
        ("response.completed", {"response": _response(hand, model, "completed", hand.text)}),
    ]
    body = b"".join(
        b"event: "
        + name.encode()
        + b"\ndata: "
        + orjson.dumps({"type": name, "sequence_number": n, **payload})
        + b"\n\n"
        for n, (name, payload) in enumerate(events)
    )
    return body, "text/event-stream"


class Responses:
    name = "responses"

    def read(self, data: dict[str, Any]) -> Translation | None:
        return _read(data)

    def write(self, body: bytes, data: dict[str, Any], translation: Translation, edit: Edit) -> bytes:
        return orjson.dumps(_write(data, edit))

    def reply_acts(self, body: bytes) -> bool:
        return _reply_acts(body)

    def stream_watcher(self) -> StreamWatcher:
        scanner = LineScanner()

        def acts(chunk: bytes) -> bool:
            return any(_event_acts(event) for event in sse_payloads(scanner, chunk))

        return acts

    def handback(self, hand: Handback, model: str, stream: bool) -> tuple[bytes, str]:
        return _handback(hand, model, stream)


RESPONSES = Responses()
