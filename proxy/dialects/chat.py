"""OpenAI chat completions (`/v1/chat/completions`): the engine's own terms.

Request side: `messages` and `tools` are the translation as they are; an edit replaces
`messages`, narrows `tools` and pins `tool_choice`. Reply side: a reply acts when a message
or a streamed delta carries `tool_calls` (or legacy `function_call`); the hand-back is a
`chat.completion`, or its chunks ending in `data: [DONE]` when the request streamed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import orjson

from proxy.dialects.lines import LineScanner, sse_payloads
from proxy.dialects.protocol import StreamWatcher
from proxy.engine.exchange import Edit, Translation
from proxy.engine.handback import Handback

__all__ = ["CHAT", "Chat", "read_messages", "tool_name", "write_messages"]


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
    return Translation(messages, tools if isinstance(tools, list) else None, stream, str(data.get("model") or ""))


def write_messages(data: dict[str, Any], edit: Edit, *, tool_choice: bool = True) -> dict[str, Any]:
    """`data` with the edit applied to `messages`, `tools` and (when the API has it) `tool_choice`."""
    out = dict(data)
    if edit.messages is not None:
        out["messages"] = edit.messages
    if edit.tools is not None:
        tools = data.get("tools")
        keep = edit.tools
        out["tools"] = (
            [t for t in tools if isinstance(t, dict) and tool_name(t) in keep] if isinstance(tools, list) else []
        )
        choice = out.get("tool_choice")
        if isinstance(choice, dict) and tool_name(choice) not in keep:
            out.pop("tool_choice")
    if tool_choice and edit.tool_choice is not None:
        out["tool_choice"] = {"type": "function", "function": {"name": edit.tool_choice}}
    return out


def _has_calls(part: Any) -> bool:
    return isinstance(part, dict) and bool(part.get("tool_calls") or part.get("function_call"))


def _chunk_acts(payload: Any) -> bool:
    """A streamed chunk that starts or continues a tool call."""
    choices = payload.get("choices") if isinstance(payload, dict) else None
    return isinstance(choices, list) and any(isinstance(c, dict) and _has_calls(c.get("delta")) for c in choices)


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

    def read(self, data: dict[str, Any]) -> Translation | None:
        return read_messages(data)

    def write(self, body: bytes, data: dict[str, Any], translation: Translation, edit: Edit) -> bytes:
        return orjson.dumps(write_messages(data, edit))

    def reply_acts(self, body: bytes) -> bool:
        try:
            payload = orjson.loads(body)
        except orjson.JSONDecodeError:
            return False
        choices = payload.get("choices") if isinstance(payload, dict) else None
        return isinstance(choices, list) and any(isinstance(c, dict) and _has_calls(c.get("message")) for c in choices)

    def stream_watcher(self) -> StreamWatcher:
        scanner = LineScanner()

        def acts(chunk: bytes) -> bool:
            return any(_chunk_acts(payload) for payload in sse_payloads(scanner, chunk))

        return acts

    def handback(self, hand: Handback, model: str, stream: bool) -> tuple[bytes, str]:
        if stream:
            return _completion_stream(hand, model), "text/event-stream"
        return _completion(hand, model), "application/json"


CHAT = Chat()
