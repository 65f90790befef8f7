"""One message read: its text, whatever shape its content has; a call's arguments, whatever
shape they came in; the calls an assistant message makes, legacy form included. Never raises."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["Message", "arguments_text", "calls_of", "content_text", "is_error_flag", "parse_arguments"]

Message = Mapping[str, Any]


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


def is_error_flag(message: Message) -> bool:
    if message.get("is_error") is True:
        return True
    content = message.get("content")
    if isinstance(content, list):
        return any(isinstance(p, dict) and p.get("is_error") is True for p in content)
    return False


def calls_of(message: Message, index: int) -> list[tuple[str, str, Any]]:
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


def arguments_text(value: Any) -> str:
    """A call's arguments as JSON text, whatever shape they came in (a string as it is, an
    object as JSON, nothing as empty)."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode() if isinstance(value, dict) else ""
