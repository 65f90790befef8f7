"""Reading replies for the proxy's own decisions, never for relaying.

Tolerates everything servers send: events split across reads, `:` comments, `data: [DONE]`,
final `usage` chunks with empty or null `choices`, `reasoning` deltas, whole tool calls in
one delta. What is relayed is always the original bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

__all__ = ["SSEScanner", "chunk_has_tool_calls", "reply_has_tool_calls"]


def _has_calls(part: Any) -> bool:
    return isinstance(part, dict) and bool(part.get("tool_calls") or part.get("function_call"))


def chunk_has_tool_calls(payload: Any) -> bool:
    """A streamed chat chunk that starts or continues a tool call."""
    choices = payload.get("choices") if isinstance(payload, dict) else None
    return isinstance(choices, list) and any(isinstance(c, dict) and _has_calls(c.get("delta")) for c in choices)


def reply_has_tool_calls(body: bytes) -> bool:
    """A whole chat completion whose message calls a tool (unparseable: False)."""
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    choices = payload.get("choices") if isinstance(payload, dict) else None
    return isinstance(choices, list) and any(isinstance(c, dict) and _has_calls(c.get("message")) for c in choices)


class SSEScanner:
    """Feeds on raw bytes; yields each complete `data:` payload parsed as JSON."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> Iterator[Any]:
        self._pending += chunk
        *lines, self._pending = self._pending.split(b"\n")
        for raw in lines:
            line = raw.rstrip(b"\r")
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if not data or data == b"[DONE]":
                continue
            try:
                yield orjson.loads(data)
            except orjson.JSONDecodeError:
                continue
