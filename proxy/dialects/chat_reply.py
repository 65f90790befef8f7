"""Reading a chat completion's reply: the first choice's text, call names and arguments, whole
(a message) or streamed (deltas fed as they come, `ChatReplyWatcher`)."""

from __future__ import annotations

from typing import Any

import orjson

from proxy.dialects.lines import LineScanner, sse_payloads
from proxy.engine.plan.reply import ReplyView

__all__ = ["ChatReplyWatcher", "arguments_of", "calls_of", "first_choice"]


def calls_of(part: Any) -> tuple[str | None, ...]:
    """The names of the calls in a message or delta (None while a streamed call has no name yet)."""
    if not isinstance(part, dict):
        return ()
    names: list[str | None] = []
    for call in part.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        names.append(name if isinstance(name, str) and name else None)
    legacy = part.get("function_call")
    if isinstance(legacy, dict):
        names.append(legacy.get("name") if isinstance(legacy.get("name"), str) else None)
    return tuple(names)


def arguments_of(part: Any) -> tuple[str, ...]:
    """Each call's arguments in a message or delta, as JSON text ("" where none came)."""
    if not isinstance(part, dict):
        return ()
    found: list[str] = []
    for call in [
        *(part.get("tool_calls") or ()),
        *([part["function_call"]] if isinstance(part.get("function_call"), dict) else []),
    ]:
        function = call.get("function", call) if isinstance(call, dict) else None
        value = function.get("arguments") if isinstance(function, dict) else None
        found.append(
            value if isinstance(value, str) else orjson.dumps(value).decode() if isinstance(value, dict) else ""
        )
    return tuple(found)


def first_choice(payload: Any) -> dict[str, Any] | None:
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not isinstance(choices, list):
        return None
    return next((c for c in choices if isinstance(c, dict) and c.get("index", 0) == 0), None)


class ChatReplyWatcher:
    """A streamed chat reply so far: the first choice's text and calls."""

    def __init__(self) -> None:
        self._scanner = LineScanner()
        self._text = ""
        self._calls: dict[int, str | None] = {}
        self._arguments: dict[int, list[str]] = {}

    def feed(self, chunk: bytes) -> None:
        for payload in sse_payloads(self._scanner, chunk):
            delta = (first_choice(payload) or {}).get("delta")
            if not isinstance(delta, dict):
                continue
            if isinstance(delta.get("content"), str):
                self._text += delta["content"]
            for position, call in enumerate(delta.get("tool_calls") or ()):
                index = call.get("index", position) if isinstance(call, dict) else position
                name = calls_of({"tool_calls": [call]})[0]
                if self._calls.get(index) is None:
                    self._calls[index] = name
                self._arguments.setdefault(index, []).append(arguments_of({"tool_calls": [call]})[0])
            if isinstance(delta.get("function_call"), dict):
                if self._calls.get(0) is None:
                    self._calls[0] = calls_of(delta)[0]
                self._arguments.setdefault(0, []).append(arguments_of(delta)[0])

    @property
    def view(self) -> ReplyView:
        order = sorted(self._calls)
        arguments = tuple("".join(self._arguments.get(i, ())) for i in order)
        return ReplyView(self._text, tuple(self._calls[i] for i in order), arguments)
