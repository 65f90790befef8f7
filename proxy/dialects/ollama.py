"""Ollama's native `/api/chat`: chat-shaped messages (tool calls without ids, arguments as
objects, results with `tool_name`), streaming by default as newline-delimited JSON.

Request side: read and written as chat completions, except that Ollama has no
`tool_choice`, so a forced tool is expressed by the instruction alone. Reply side: the
`message`'s text and `tool_calls`, whole or line by line; salvaged calls written as
`tool_calls` with arguments as objects; the hand-back is an Ollama chat reply (two NDJSON
lines when streamed) with a `repair` block.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import orjson

from proxy.dialects import continued
from proxy.dialects.chat import read_messages, write_messages
from proxy.dialects.lines import LineScanner, ndjson_payloads
from proxy.dialects.spans import SpanMemory
from proxy.dialects.structured import ollama_format
from proxy.engine.plan.handback import Handback
from proxy.engine.plan.reply import ReplyView
from proxy.engine.text.exchange import Edit, Translation
from proxy.engine.text.salvage import SalvagedCall

__all__ = ["OLLAMA", "Ollama"]


def _names(message: dict[str, Any]) -> list[str | None]:
    names: list[str | None] = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        names.append(name if isinstance(name, str) and name else None)
    return names


def _arguments(message: dict[str, Any]) -> list[str]:
    """Each call's arguments (an object in Ollama's shape) as JSON text."""
    found: list[str] = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        value = function.get("arguments") if isinstance(function, dict) else None
        found.append(
            orjson.dumps(value).decode() if isinstance(value, dict) else value if isinstance(value, str) else ""
        )
    return found


class _Watcher:
    def __init__(self) -> None:
        self._scanner = LineScanner()
        self._text = ""
        self._calls: list[str | None] = []
        self._arguments: list[str] = []

    def feed(self, chunk: bytes) -> None:
        for event in ndjson_payloads(self._scanner, chunk):
            message = event.get("message") if isinstance(event, dict) else None
            if not isinstance(message, dict):
                continue
            if isinstance(message.get("content"), str):
                self._text += message["content"]
            self._calls.extend(_names(message))
            self._arguments.extend(_arguments(message))

    @property
    def view(self) -> ReplyView:
        return ReplyView(self._text, tuple(self._calls), tuple(self._arguments))


def _tool_calls(calls: Sequence[SalvagedCall]) -> list[dict[str, Any]]:
    return [{"function": {"name": call.name, "arguments": dict(call.arguments)}} for call in calls]


class Ollama:
    name = "ollama"
    structured = True

    def read(self, data: dict[str, Any]) -> Translation | None:
        """Ollama streams unless told `"stream": false`."""
        return read_messages(data, streams_by_default=True)

    def write(
        self,
        body: bytes,
        data: dict[str, Any],
        translation: Translation,
        edit: Edit,
        memory: SpanMemory | None = None,
        key: tuple[str, str] = ("", ""),
    ) -> bytes:
        return write_messages(body, data, edit, tool_choice=False, structured=ollama_format, memory=memory, key=key)

    def read_reply(self, body: bytes) -> ReplyView | None:
        try:
            payload = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        message = payload.get("message") if isinstance(payload, dict) else None
        if not isinstance(message, dict):
            return None
        content = message.get("content")
        return ReplyView(
            content if isinstance(content, str) else "", tuple(_names(message)), tuple(_arguments(message))
        )

    reply_watcher = _Watcher

    def salvaged(self, body: bytes, calls: Sequence[SalvagedCall], ids: Sequence[str]) -> bytes:
        payload = orjson.loads(body)
        payload["message"] = {**payload["message"], "content": "", "tool_calls": _tool_calls(calls)}
        return orjson.dumps(payload)

    def salvaged_stream(self, held: Sequence[bytes], calls: Sequence[SalvagedCall], ids: Sequence[str]) -> bytes:
        """One line carrying the calls, then the held stream's last (`done`) line without its text."""
        scanner = LineScanner()
        events = [e for chunk in held for e in ndjson_payloads(scanner, chunk) if isinstance(e, dict)]
        first = events[0] if events else {}
        last: dict[str, Any] = next((e for e in reversed(events) if e.get("done")), {"done": True})
        call_line = {k: first[k] for k in ("model", "created_at") if k in first}
        call_line.update(message={"role": "assistant", "content": "", "tool_calls": _tool_calls(calls)}, done=False)
        message = last.get("message")
        final = {
            **last,
            "message": {**(message if isinstance(message, dict) else {"role": "assistant"}), "content": ""},
        }
        return orjson.dumps(call_line) + b"\n" + orjson.dumps(final) + b"\n"

    def ahead(self, data: bytes) -> int:
        return continued.ollama_ahead(data)

    def continued(self, sent: bytes, later: bytes) -> bytes:
        return continued.ollama(sent, later)

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
