"""OpenAI chat completions: the engine's own terms, so translation is the identity."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from proxy.dialects.types import Dialect, Edit, Translation
from proxy.handback import Handback, chat_completion, chat_completion_stream
from proxy.sse import SSEScanner, chunk_has_tool_calls, reply_has_tool_calls

__all__ = ["CHAT", "forced_choice", "keep_tools", "read_messages", "tool_name"]


def forced_choice(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name}}


def keep_tools(tools: Any, names: list[str], name_of: Callable[[Any], Any]) -> list[Any]:
    return [t for t in tools if isinstance(t, dict) and name_of(t) in names] if isinstance(tools, list) else []


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


def read(data: dict[str, Any]) -> Translation | None:
    return read_messages(data)


def write(data: dict[str, Any], translation: Translation, edit: Edit) -> dict[str, Any]:
    out = dict(data)
    if edit.messages is not None:
        out["messages"] = edit.messages
    if edit.tools is not None:
        out["tools"] = keep_tools(data.get("tools"), edit.tools, tool_name)
        choice = out.get("tool_choice")
        if isinstance(choice, dict) and tool_name(choice) not in edit.tools:
            out.pop("tool_choice")
    if edit.tool_choice is not None:
        out["tool_choice"] = forced_choice(edit.tool_choice)
    return out


def stream_watcher() -> Callable[[bytes], bool]:
    scanner = SSEScanner()
    return lambda chunk: any(chunk_has_tool_calls(event) for event in scanner.feed(chunk))


def handback(hand: Handback, model: str, stream: bool) -> tuple[bytes, str]:
    if stream:
        return chat_completion_stream(hand, model), "text/event-stream"
    return chat_completion(hand, model), "application/json"


CHAT = Dialect("chat", read, write, reply_has_tool_calls, stream_watcher, handback)
