"""Ollama's native `/api/chat`: chat-shaped messages (tool calls without ids, arguments as
objects, results with `tool_name`), streaming by default as newline-delimited JSON."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import orjson

from proxy.dialects import chat
from proxy.dialects.chat import read_messages
from proxy.dialects.types import Dialect, Edit, Translation
from proxy.handback import Handback

__all__ = ["OLLAMA"]


def read(data: dict[str, Any]) -> Translation | None:
    """Ollama streams unless told `"stream": false`."""
    return read_messages(data, streams_by_default=True)


def write(data: dict[str, Any], translation: Translation, edit: Edit) -> dict[str, Any]:
    """As chat completions, except that Ollama has no `tool_choice`: a forced tool is
    expressed by the instruction alone."""
    return chat.write(data, translation, replace(edit, tool_choice=None))


def _acts(message: Any) -> bool:
    return isinstance(message, dict) and bool(message.get("tool_calls"))


def reply_acts(body: bytes) -> bool:
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    return isinstance(payload, dict) and _acts(payload.get("message"))


def stream_watcher() -> Callable[[bytes], bool]:
    pending = b""

    def feed(chunk: bytes) -> bool:
        nonlocal pending
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(event, dict) and _acts(event.get("message")):
                return True
        return False

    return feed


def handback(hand: Handback, model: str, stream: bool) -> tuple[bytes, str]:
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    final = {
        "model": model,
        "created_at": created,
        "message": {"role": "assistant", "content": "" if stream else hand.text},
        "done": True,
        "done_reason": "stop",
        "repair": {"outcome": "incomplete", "reason": hand.reason, "current_failure": hand.current_failure},
    }
    if not stream:
        return orjson.dumps(final), "application/json"
    first = {
        "model": model,
        "created_at": created,
        "message": {"role": "assistant", "content": hand.text},
        "done": False,
    }
    return orjson.dumps(first) + b"\n" + orjson.dumps(final) + b"\n", "application/x-ndjson"


OLLAMA = Dialect("ollama", read, write, reply_acts, stream_watcher, handback)
