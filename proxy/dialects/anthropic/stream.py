"""Anthropic Messages, one stream for two replies (see `continued.py`): what of a streamed message
may go to the agent before it is judged, and a later message written as the rest of the first.

What may go ahead is the leading run of whole events that open the message or carry its text (or
thinking): `message_start`, `ping`, a text block's start, deltas and stop; never a `tool_use`
block, `message_delta` (the stop reason) or `message_stop`, so a later message can still follow.
A block's stop that goes ahead is a text block's: a call's start never went. A later message
goes on under the first's `message_start` (its own is dropped): the first's blocks still open are
closed, and the later blocks are numbered on from the first's.
"""

from __future__ import annotations

from typing import Any

from proxy.dialects.anthropic.reply import encode, events_of
from proxy.dialects.continued import rewrite_sse, sse_spans, text_prefix

__all__ = ["ahead", "continued"]

_OPENING = frozenset({"message_start", "ping"})
_TEXT_BLOCKS = frozenset({"text", "thinking", "redacted_thinking"})
_TEXT_DELTAS = frozenset({"text_delta", "thinking_delta", "signature_delta", "citations_delta"})


def _text(payload: Any) -> bool:
    if payload is None:
        return True  # a comment
    kind = payload.get("type") if isinstance(payload, dict) else None
    if kind in _OPENING or kind == "content_block_stop":
        return True
    part = payload.get("content_block") if kind == "content_block_start" else payload.get("delta")
    if kind == "content_block_start":
        return isinstance(part, dict) and part.get("type") in _TEXT_BLOCKS
    return kind == "content_block_delta" and isinstance(part, dict) and part.get("type") in _TEXT_DELTAS


def ahead(data: bytes) -> int:
    """How much of a streamed message is whole events of its opening and its text."""
    return text_prefix(sse_spans(data), _text)


def continued(sent: bytes, later: bytes) -> bytes:
    events = events_of([sent])
    started = [e["index"] for e in events if e.get("type") == "content_block_start" and isinstance(e.get("index"), int)]
    stopped = {e.get("index") for e in events if e.get("type") == "content_block_stop"}
    shift = max(started, default=-1) + 1
    closing = encode([{"type": "content_block_stop", "index": i} for i in started if i not in stopped])

    def change(event: dict[str, Any]) -> dict[str, Any] | None:
        if event.get("type") == "message_start":
            return None
        if isinstance(event.get("index"), int):
            event["index"] += shift
        return event

    return closing + rewrite_sse(later, change)
