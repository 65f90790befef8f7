"""Anthropic Messages, request side: `messages` translated to chat turns.

An assistant message becomes one chat message: its `text` blocks the content, its `tool_use`
blocks `tool_calls` (arguments as JSON text); `thinking` blocks are left out. A user message
becomes a chat `tool` message per `tool_result` block (its content a string or blocks; images
skipped; `is_error` kept) and a user message per run of its other blocks, with the blocks a
framework wrote (only `<system-reminder>`-style tagged blocks: Claude Code's) left out, so the
person's request is the task and a reminder is never a new message of theirs. `system` (a
string or text blocks) is the system message. Every translated message remembers where it came
from (`SOURCE`: the message, and the block its turn ends at), for `write.py` to put an edit back.

A `system` message among `messages` (Claude Code 2.1 sends its environment so, right after the
first user message) is a system message. Not analysable (None, forwarded untouched): `messages`
not a list, any other role, content neither a string nor blocks, a block of a type Messages does
not have, a `tool_result` answering no earlier `tool_use`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from proxy.engine.text.exchange import Translation
from proxy.engine.text.messages import content_text
from proxy.engine.text.textcalls import is_framework_context

__all__ = ["SOURCE", "read"]

SOURCE = "_src"
"""Key on translated messages: (message index, block index or -1 for the whole message), and for
a tool result its text as read (to find what an edit appended). Never sent upstream."""
_TEXT_BLOCKS = frozenset({"text"})
_CALL_BLOCKS = frozenset({"tool_use", "tool_result"})
_SKIPPED_BLOCKS = frozenset(
    {
        "image",
        "document",
        "search_result",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "web_search_tool_result",
        "web_fetch_tool_result",
        "code_execution_tool_result",
        "bash_code_execution_tool_result",
        "text_editor_code_execution_tool_result",
        "tool_search_tool_result",
        "mcp_tool_use",
        "mcp_tool_result",
        "container_upload",
    }
)
"""Block types Messages has that carry nothing the engine reads (the server's own tools run on
Anthropic's side; images and documents are not text)."""
_CHOICES = {"auto": "auto", "any": "required", "none": "none"}


class _Unreadable(Exception):
    """The body is not a Messages transcript this reader trusts (forwarded untouched)."""


def _system_text(system: Any) -> str:
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return content_text([b for b in system if isinstance(b, dict) and b.get("type") == "text"])
    return ""


def _block_type(block: Any) -> str:
    kind = block.get("type") if isinstance(block, dict) else None
    if kind in _CALL_BLOCKS or kind in _TEXT_BLOCKS or kind in _SKIPPED_BLOCKS:
        return str(kind)
    raise _Unreadable(f"a content block of type {kind!r}")


def _said(blocks: list[Any]) -> str:
    """The person's text in a run of blocks: text blocks a framework did not write."""
    texts = [b.get("text") for b in blocks if b.get("type") == "text"]
    return "\n".join(t for t in texts if isinstance(t, str) and t.strip() and not is_framework_context(t))


@dataclass
class _Reader:
    out: list[Any] = field(default_factory=list)
    called: set[str] = field(default_factory=set)

    def assistant(self, index: int, content: list[Any]) -> None:
        text = "\n".join(b["text"] for b in content if _block_type(b) == "text" and isinstance(b.get("text"), str))
        calls = []
        for block in content:
            if block.get("type") != "tool_use":
                continue
            call_id = block.get("id")
            if isinstance(call_id, str):
                self.called.add(call_id)
            arguments = block.get("input")
            raw = orjson.dumps(arguments).decode() if isinstance(arguments, dict) else ""
            calls.append({"id": call_id, "type": "function", "function": {"name": block.get("name"), "arguments": raw}})
        message: dict[str, Any] = {"role": "assistant", "content": text or None, SOURCE: (index, -1)}
        if calls:
            message["tool_calls"] = calls
        self.out.append(message)

    def user(self, index: int, content: list[Any]) -> None:
        run: list[Any] = []
        for position, block in enumerate(content):
            if _block_type(block) != "tool_result":
                run.append(block)
                continue
            self._said(index, position - 1, run)
            run = []
            call_id = block.get("tool_use_id")
            if call_id not in self.called:
                raise _Unreadable(f"a tool_result for {call_id!r}, which no earlier tool_use made")
            inner = block.get("content")
            text = inner if isinstance(inner, str) else content_text(_texts(inner))
            self.out.append(
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "content": text,
                    "is_error": block.get("is_error") is True,
                    SOURCE: (index, position, text),
                }
            )
        self._said(index, len(content) - 1, run)

    def _said(self, index: int, last: int, run: list[Any]) -> None:
        text = _said(run)
        if text:
            self.out.append({"role": "user", "content": text, SOURCE: (index, last)})


def _texts(content: Any) -> list[Any]:
    """A tool result's blocks that carry text (an image says nothing the engine reads)."""
    return [b for b in content if isinstance(b, dict) and b.get("type") == "text"] if isinstance(content, list) else []


def _tools(tools: Any) -> list[Any] | None:
    if not isinstance(tools, list):
        return None
    return [
        {
            "type": "function",
            "function": {"name": t["name"], "description": t.get("description", ""), "parameters": t["input_schema"]},
        }
        for t in tools
        if isinstance(t, dict) and isinstance(t.get("name"), str) and isinstance(t.get("input_schema"), dict)
    ]


def _choice(choice: Any) -> str | None:
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind == "tool":
        name = choice.get("name")
        return name if isinstance(name, str) else None
    return _CHOICES.get(kind) if isinstance(kind, str) else None


def read(data: dict[str, Any]) -> Translation | None:
    messages = data.get("messages")
    if not isinstance(messages, list):
        return None
    reader = _Reader()
    system = _system_text(data.get("system"))
    if system:
        reader.out.append({"role": "system", "content": system, SOURCE: (-1, -1)})
    try:
        for index, message in enumerate(messages):
            role = message.get("role") if isinstance(message, dict) else None
            content = message.get("content") if isinstance(message, dict) else None
            if role not in ("user", "assistant", "system"):
                raise _Unreadable(f"a message with role {role!r}")
            if role == "system":  # Claude Code's environment, between its first messages
                reader.out.append({"role": "system", "content": _system_text(content), SOURCE: (index, -1)})
            elif isinstance(content, str):
                reader.out.append({"role": role, "content": content, SOURCE: (index, -1)})
            elif not isinstance(content, list) or not all(isinstance(b, dict) for b in content):
                raise _Unreadable("a message whose content is neither a string nor blocks")
            elif role == "assistant":
                reader.assistant(index, content)
            else:
                reader.user(index, content)
    except _Unreadable:
        return None
    return Translation(
        reader.out, _tools(data.get("tools")), data.get("stream") is True, str(data.get("model") or ""),
        _choice(data.get("tool_choice")),
    )  # fmt: skip
