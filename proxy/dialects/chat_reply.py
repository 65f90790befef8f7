"""Reading a chat completion's reply: the first choice's text, call names and arguments, whole
(a message) or streamed (deltas fed as they come, `ChatReplyWatcher`)."""

from __future__ import annotations

from typing import Any

import orjson

from proxy.dialects.lines import LineScanner, sse_payloads
from proxy.engine.plan.reply import ReplyView

__all__ = ["ChatReplyWatcher", "call_parts", "calls_in", "first_choice"]


def call_parts(call: Any, legacy: bool = False) -> tuple[str | None, str]:
    """One call's name and arguments: an entry of `tool_calls` (named by its `function`), or
    (`legacy`) a `function_call`. The name is None while a streamed call has none yet (a legacy
    call's may be ""); the arguments are JSON text, "" where none came."""
    if not isinstance(call, dict):
        return None, ""
    named = call if legacy else call.get("function")
    name = named.get("name") if isinstance(named, dict) else None
    function = call.get("function", call)
    value = function.get("arguments") if isinstance(function, dict) else None
    arguments = value if isinstance(value, str) else orjson.dumps(value).decode() if isinstance(value, dict) else ""
    return (name if isinstance(name, str) and (name or legacy) else None), arguments


def calls_in(message: dict[str, Any]) -> tuple[tuple[str | None, ...], tuple[str, ...]]:
    """The names and the arguments of a message's calls, in order: its `tool_calls`, then a legacy
    `function_call`."""
    names: list[str | None] = []
    arguments: list[str] = []
    for call in message.get("tool_calls") or ():
        name, given = call_parts(call)
        names.append(name)
        arguments.append(given)
    if isinstance(message.get("function_call"), dict):
        name, given = call_parts(message["function_call"], legacy=True)
        names.append(name)
        arguments.append(given)
    return tuple(names), tuple(arguments)


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
                name, piece = call_parts(call)
                if self._calls.get(index) is None:
                    self._calls[index] = name
                self._arguments.setdefault(index, []).append(piece)
            if isinstance(delta.get("function_call"), dict):
                name, piece = call_parts(delta["function_call"], legacy=True)
                if self._calls.get(0) is None:
                    self._calls[0] = name
                self._arguments.setdefault(0, []).append(piece)

    @property
    def view(self) -> ReplyView:
        order = sorted(self._calls)
        arguments = tuple("".join(self._arguments.get(i, ())) for i in order)
        return ReplyView(self._text, tuple(self._calls[i] for i in order), arguments)
