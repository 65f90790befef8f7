"""OpenAI chat completions (`/v1/chat/completions`): the engine's own terms.

Request side: `messages` and `tools` are the translation as they are; an edit replaces
`messages`, narrows `tools` and sets `tool_choice`. Reply side: the first choice's text and
calls (`tool_calls`, or legacy `function_call`), whole or streamed; salvaged calls written as
`tool_calls` with `finish_reason: "tool_calls"`; the hand-back is a `chat.completion`, or its
chunks ending in `data: [DONE]` when the request streamed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from proxy.dialects import continued
from proxy.dialects.changes import REMOVED, Array, Change, Kept, Value, applied, kept_or_fresh
from proxy.dialects.chat_reply import ChatReplyWatcher, calls_in, first_choice
from proxy.dialects.lines import LineScanner, sse_payloads
from proxy.dialects.spans import SpanMemory
from proxy.dialects.splice import SpliceError, splice
from proxy.dialects.structured import Structured, response_format
from proxy.engine.plan.handback import Handback
from proxy.engine.plan.reply import ReplyView
from proxy.engine.text.exchange import Edit, Translation
from proxy.engine.text.salvage import SalvagedCall

__all__ = [
    "CHAT",
    "Chat",
    "message_changes",
    "read_messages",
    "tool_name",
    "write_messages",
]


def tool_name(tool: Any) -> Any:
    """The function name of a chat-style tool or tool_choice (`{"function": {"name"}}`)."""
    function = tool.get("function") if isinstance(tool, dict) else None
    return function.get("name") if isinstance(function, dict) else None


def read_messages(data: dict[str, Any], streams_by_default: bool = False) -> Translation | None:
    """A body whose transcript is a chat `messages` list (chat completions, Ollama)."""
    messages = data.get("messages")
    if not isinstance(messages, list):
        return None
    tools = data.get("tools")
    stream = data.get("stream") is not False if streams_by_default else data.get("stream") is True
    choice = data.get("tool_choice")
    named = tool_name(choice)
    return Translation(
        messages,
        tools if isinstance(tools, list) else None,
        stream,
        str(data.get("model") or ""),
        choice if isinstance(choice, str) else named if isinstance(named, str) else None,
    )


def message_changes(
    data: dict[str, Any], edit: Edit, *, tool_choice: bool = True, structured: Structured = response_format
) -> dict[str, Change]:
    """What an edit changes in a body whose transcript is `messages`, member by member: each
    message the edit keeps is kept byte for byte (it is the same object as in `data`)."""
    out: dict[str, Change] = {}
    if edit.messages is not None:
        originals = data.get("messages")
        out["messages"] = Array(kept_or_fresh(originals if isinstance(originals, list) else [], edit.messages))
    if edit.tools is not None:
        tools = data.get("tools")
        keep = edit.tools
        out["tools"] = Array(
            [Kept(i) for i, t in enumerate(tools) if isinstance(t, dict) and tool_name(t) in keep]
            if isinstance(tools, list)
            else []
        )
        choice = data.get("tool_choice")
        if isinstance(choice, dict) and tool_name(choice) not in keep:
            out["tool_choice"] = REMOVED
    if tool_choice and edit.tool_choice is not None:
        out["tool_choice"] = Value({"type": "function", "function": {"name": edit.tool_choice}})
    elif tool_choice and edit.require_call:
        out["tool_choice"] = Value("required")
    if tool_choice and edit.seed is not None:  # chat completions' top-level seed (Ollama's is in options)
        out["seed"] = Value(edit.seed)
    if edit.call_schema is not None:
        member, value = structured(edit.call_schema)
        if member not in data:  # never in place of the request's own format
            out[member] = Value(value)
    return out


def write_messages(
    body: bytes,
    data: dict[str, Any],
    edit: Edit,
    *,
    tool_choice: bool = True,
    structured: Structured = response_format,
    memory: SpanMemory | None = None,
    key: tuple[str, str] = ("", ""),
) -> bytes:
    """The body with the edit made: spliced, so what it does not change keeps its bytes (a body
    that cannot be spliced is written whole from its parse)."""
    changes = message_changes(data, edit, tool_choice=tool_choice, structured=structured)
    try:
        return splice(body, changes, memory, key)
    except SpliceError:
        return orjson.dumps(applied(data, changes))


def _tool_calls(calls: Sequence[SalvagedCall], ids: Sequence[str]) -> list[dict[str, Any]]:
    return [
        {"id": call_id, "type": "function", "function": {"name": call.name, "arguments": call.arguments_json}}
        for call, call_id in zip(calls, ids, strict=True)
    ]


def _salvaged_stream(held: Sequence[bytes], calls: Sequence[SalvagedCall], ids: Sequence[str]) -> bytes:
    """The held stream again: its first chunk's identity, the calls, its finish, its usage, [DONE]."""
    scanner = LineScanner()
    payloads = [p for chunk in held for p in sse_payloads(scanner, chunk) if isinstance(p, dict)]
    first = payloads[0] if payloads else {}
    base = {k: first[k] for k in ("id", "object", "created", "model", "system_fingerprint") if k in first}
    base.setdefault("object", "chat.completion.chunk")

    def chunk(delta: dict[str, Any], finish: str | None) -> bytes:
        body = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return b"data: " + orjson.dumps(body) + b"\n\n"

    deltas = [{**call, "index": i} for i, call in enumerate(_tool_calls(calls, ids))]
    usage = [b"data: " + orjson.dumps(p) + b"\n\n" for p in payloads if not p.get("choices") and "usage" in p]
    return b"".join(
        [
            chunk({"role": "assistant", "content": None}, None),
            chunk({"tool_calls": deltas}, None),
            chunk({}, "tool_calls"),
            *usage,
            b"data: [DONE]\n\n",
        ]
    )


def _completion(hand: Handback, model: str) -> bytes:
    return orjson.dumps(
        {
            "id": hand.completion_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": hand.text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            "repair": {"outcome": "incomplete", "reason": hand.reason, "current_failure": hand.current_failure},
        }
    )


def _completion_stream(hand: Handback, model: str) -> bytes:
    created = int(time.time())

    def chunk(delta: Mapping[str, object], finish: str | None) -> bytes:
        body = {
            "id": hand.completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return b"data: " + orjson.dumps(body) + b"\n\n"

    return (
        chunk({"role": "assistant", "content": ""}, None)
        + chunk({"content": hand.text}, None)
        + chunk({}, "stop")
        + b"data: [DONE]\n\n"
    )


class Chat:
    name = "chat"
    structured = True

    read = staticmethod(read_messages)

    def write(
        self,
        body: bytes,
        data: dict[str, Any],
        translation: Translation,
        edit: Edit,
        memory: SpanMemory | None = None,
        key: tuple[str, str] = ("", ""),
    ) -> bytes:
        return write_messages(body, data, edit, memory=memory, key=key)

    def read_reply(self, body: bytes) -> ReplyView | None:
        try:
            payload = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        message = (first_choice(payload) or {}).get("message")
        if not isinstance(message, dict):
            return None
        content = message.get("content")
        return ReplyView(content if isinstance(content, str) else "", *calls_in(message))

    reply_watcher = ChatReplyWatcher

    def salvaged(self, body: bytes, calls: Sequence[SalvagedCall], ids: Sequence[str]) -> bytes:
        payload = orjson.loads(body)
        choice = first_choice(payload)
        assert choice is not None and isinstance(choice.get("message"), dict)
        choice["message"] = {**choice["message"], "content": None, "tool_calls": _tool_calls(calls, ids)}
        choice["finish_reason"] = "tool_calls"
        return orjson.dumps(payload)

    def salvaged_stream(self, held: Sequence[bytes], calls: Sequence[SalvagedCall], ids: Sequence[str]) -> bytes:
        return _salvaged_stream(held, calls, ids)

    def ahead(self, data: bytes) -> int:
        return continued.chat_ahead(data)

    def continued(self, sent: bytes, later: bytes) -> bytes:
        return continued.chat(sent, later)

    def handback(self, hand: Handback, model: str, stream: bool) -> tuple[bytes, str]:
        if stream:
            return _completion_stream(hand, model), "text/event-stream"
        return _completion(hand, model), "application/json"


CHAT = Chat()
