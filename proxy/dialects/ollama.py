"""Ollama's native `/api/chat`: chat-shaped messages (tool calls without ids, arguments as
objects, results with `tool_name`), streaming by default as newline-delimited JSON.

Request side: read and written as chat completions, except that Ollama has no
`tool_choice`, so a forced tool is expressed by the instruction alone. Reply side: a reply
acts when its `message` carries `tool_calls`; the hand-back is an Ollama chat reply (two
NDJSON lines when streamed) with a `repair` block.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from proxy.dialects.chat import read_messages, write_messages
from proxy.dialects.lines import LineScanner, ndjson_payloads
from proxy.dialects.protocol import StreamWatcher
from proxy.engine.exchange import Edit, Translation
from proxy.engine.handback import Handback

__all__ = ["OLLAMA", "Ollama"]


def _acts(message: Any) -> bool:
    return isinstance(message, dict) and bool(message.get("tool_calls"))


class Ollama:
    name = "ollama"

    def read(self, data: dict[str, Any]) -> Translation | None:
        """Ollama streams unless told `"stream": false`."""
        return read_messages(data, streams_by_default=True)

    def write(self, body: bytes, data: dict[str, Any], translation: Translation, edit: Edit) -> bytes:
        return orjson.dumps(write_messages(data, edit, tool_choice=False))

    def reply_acts(self, body: bytes) -> bool:
        try:
            payload = orjson.loads(body)
        except orjson.JSONDecodeError:
            return False
        return isinstance(payload, dict) and _acts(payload.get("message"))

    def stream_watcher(self) -> StreamWatcher:
        scanner = LineScanner()

        def acts(chunk: bytes) -> bool:
            return any(isinstance(e, dict) and _acts(e.get("message")) for e in ndjson_payloads(scanner, chunk))

        return acts

    def handback(self, hand: Handback, model: str, stream: bool) -> tuple[bytes, str]:
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


OLLAMA = Ollama()
