"""The transcript: a chat request's `messages` read as typed turns.

A turn is one assistant message and the tool results that answer its calls, paired by
`tool_call_id`. Anything odd (null or array content, parallel calls, calls with no result
yet, legacy `function_call` / `function` role, unknown roles, malformed arguments) is
normal input here: it is read as well as it can be and never raises.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["Message", "ToolCall", "Turn", "UserMessage", "content_text", "parse_arguments", "read_turns"]

Message = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call and, once answered, its result."""

    id: str
    name: str
    arguments: Mapping[str, Any] | None
    """Parsed arguments; None when the JSON is malformed or not an object."""
    raw_arguments: str
    result: str | None
    """The answering tool message's text; None while unanswered."""
    is_error: bool = False
    result_index: int | None = None
    """Index in `messages` of the answering tool message."""


@dataclass(frozen=True, slots=True)
class Turn:
    """An assistant message with its answered calls, or a text-only reply."""

    message_index: int
    text: str
    calls: tuple[ToolCall, ...]

    @property
    def anchor(self) -> str:
        """Stable id of the turn's end: its last answered call (or its position when text-only)."""
        answered = [c for c in self.calls if c.result is not None]
        return answered[-1].id if answered else f"msg:{self.message_index}"

    @property
    def end_index(self) -> int:
        """Index in `messages` of the turn's last message (its last result, or itself)."""
        indices = [c.result_index for c in self.calls if c.result_index is not None]
        return max(indices, default=self.message_index)


@dataclass(frozen=True, slots=True)
class UserMessage:
    message_index: int
    text: str


def content_text(content: Any) -> str:
    """Text of a message `content`: a string, null, or an array of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                text = part.get("text")
                if isinstance(text, str):
                    parts.append(text)
                elif isinstance(part.get("content"), (str, list)):
                    parts.append(content_text(part.get("content")))
        return "\n".join(parts)
    if isinstance(content, dict):
        text = content.get("text")
        return text if isinstance(text, str) else ""
    return str(content)


def parse_arguments(raw: Any) -> tuple[Mapping[str, Any] | None, str]:
    """Arguments as a mapping (or None when malformed) and as the raw string sent."""
    if isinstance(raw, dict):
        return raw, orjson.dumps(raw, option=orjson.OPT_SORT_KEYS).decode()
    if not isinstance(raw, str):
        return None, "" if raw is None else str(raw)
    if not raw.strip():
        return {}, raw
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None, raw
    return (parsed if isinstance(parsed, dict) else None), raw


def _is_error_flag(message: Message) -> bool:
    if message.get("is_error") is True:
        return True
    content = message.get("content")
    if isinstance(content, list):
        return any(isinstance(p, dict) and p.get("is_error") is True for p in content)
    return False


def _calls_of(message: Message, index: int) -> list[tuple[str, str, Any]]:
    """(id, name, raw arguments) of an assistant message's calls, legacy form included."""
    calls: list[tuple[str, str, Any]] = []
    tool_calls = message.get("tool_calls")
    if isinstance(tool_calls, list):
        for position, call in enumerate(tool_calls):
            if not isinstance(call, dict):
                continue
            function = call.get("function")
            function = function if isinstance(function, dict) else {}
            name = function.get("name")
            call_id = call.get("id")
            calls.append(
                (
                    call_id if isinstance(call_id, str) and call_id else f"pos:{index}:{position}",
                    name if isinstance(name, str) else "",
                    function.get("arguments"),
                )
            )
    legacy = message.get("function_call")
    if not calls and isinstance(legacy, dict):
        name = legacy.get("name")
        calls.append((f"fn:{index}", name if isinstance(name, str) else "", legacy.get("arguments")))
    return calls


def read_turns(messages: Sequence[Any], start: int = 0) -> tuple[list[Turn], list[UserMessage]]:
    """Turns and user messages of `messages[start:]`, in order.

    Results are paired by `tool_call_id`; a legacy `function` message answers the nearest
    open legacy call; a `tool` message without an id answers the first open call.
    """
    turns: list[Turn] = []
    users: list[UserMessage] = []
    open_turn: tuple[int, str, list[tuple[str, str, Any]]] | None = None
    results: dict[str, tuple[str, bool, int]] = {}

    def close() -> None:
        if open_turn is None:
            return
        index, text, calls = open_turn
        built: list[ToolCall] = []
        for call_id, name, raw in calls:
            arguments, raw_text = parse_arguments(raw)
            answer = results.get(call_id)
            built.append(
                ToolCall(
                    id=call_id,
                    name=name,
                    arguments=arguments,
                    raw_arguments=raw_text,
                    result=None if answer is None else answer[0],
                    is_error=False if answer is None else answer[1],
                    result_index=None if answer is None else answer[2],
                )
            )
        turns.append(Turn(message_index=index, text=text, calls=tuple(built)))

    for index in range(start, len(messages)):
        message = messages[index]
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "assistant":
            close()
            results = {}
            open_turn = (index, content_text(message.get("content")), _calls_of(message, index))
        elif role in ("tool", "function"):
            if open_turn is None:
                continue
            pending = [c[0] for c in open_turn[2] if c[0] not in results]
            call_id = message.get("tool_call_id")
            if not (isinstance(call_id, str) and call_id in pending):
                call_id = pending[0] if pending else None
            if call_id is not None:
                results[call_id] = (content_text(message.get("content")), _is_error_flag(message), index)
        elif role == "user":
            close()
            open_turn = None
            users.append(UserMessage(index, content_text(message.get("content"))))
        # system, developer and unknown roles carry no turn
    close()
    return turns, users
