"""The Responses API, request side: `input` items translated to chat turns and back.

`message` items become messages, consecutive `function_call` items one assistant message
with tool calls, `function_call_output` items tool results (paired by `call_id`);
`instructions` is the system text. Every translated message remembers the items it came
from, so writing back keeps each original item as it was and places new instructions as
`message` items between them. A request with `previous_response_id` keeps its history
upstream, out of the proxy's sight: it is not analysable and goes through untouched.
"""

from __future__ import annotations

from typing import Any

from proxy.engine.exchange import Edit, Translation
from proxy.engine.transcript import content_text

__all__ = ["SOURCE", "read", "write"]

SOURCE = "_src"
"""Key on translated messages: the `input` indices they came from (never sent upstream)."""


def _tools(tools: Any) -> list[Any] | None:
    if not isinstance(tools, list):
        return None
    return [
        {"type": "function", "function": {"name": t.get("name"), "parameters": t.get("parameters", {})}}
        for t in tools
        if isinstance(t, dict) and t.get("type") == "function" and isinstance(t.get("name"), str)
    ]


def read(data: dict[str, Any]) -> Translation | None:
    if data.get("previous_response_id"):
        return None
    items = data.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    if not isinstance(items, list):
        return None
    messages: list[Any] = []
    instructions = data.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions, SOURCE: []})
    open_calls: dict[str, Any] | None = None
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "function_call":
            call = {
                "id": item.get("call_id") or item.get("id") or f"pos:{index}:0",
                "type": "function",
                "function": {"name": item.get("name", ""), "arguments": item.get("arguments", "")},
            }
            if open_calls is None:
                open_calls = {"role": "assistant", "content": None, "tool_calls": [], SOURCE: []}
                messages.append(open_calls)
            open_calls["tool_calls"].append(call)
            open_calls[SOURCE].append(index)
            continue
        open_calls = None
        if kind == "function_call_output":
            output = item.get("output")
            text = output if isinstance(output, str) else content_text(output)
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": text, SOURCE: [index]})
        elif kind == "message":
            messages.append(
                {"role": item.get("role", "user"), "content": content_text(item.get("content")), SOURCE: [index]}
            )
    choice = data.get("tool_choice")
    named = choice.get("name") if isinstance(choice, dict) else None
    return Translation(
        messages,
        _tools(data.get("tools")),
        data.get("stream") is True,
        str(data.get("model") or ""),
        choice if isinstance(choice, str) else named if isinstance(named, str) else None,
    )


def _item(message: dict[str, Any]) -> dict[str, Any]:
    role = message.get("role")
    return {
        "type": "message",
        "role": role if role in ("user", "system", "developer") else "system",
        "content": message.get("content"),
    }


def write(data: dict[str, Any], edit: Edit) -> dict[str, Any]:
    out = dict(data)
    if edit.messages is not None:
        items = data.get("input")
        originals: list[Any] = (
            items if isinstance(items, list) else [{"type": "message", "role": "user", "content": items}]
        )
        rebuilt: list[Any] = []
        for message in edit.messages:
            sources = message.get(SOURCE) if isinstance(message, dict) else None
            if sources is None:
                rebuilt.append(_item(message))
                continue
            for index in sources:
                item = originals[index]
                if (
                    message.get("role") == "tool"
                    and isinstance(item.get("output"), str)
                    and message["content"] != item["output"]
                ):
                    item = {**item, "output": message["content"]}
                rebuilt.append(item)
        out["input"] = rebuilt
    if edit.tools is not None:
        out["tools"] = [t for t in data.get("tools") or [] if isinstance(t, dict) and t.get("name") in edit.tools]
        choice = out.get("tool_choice")
        if isinstance(choice, dict) and choice.get("name") not in edit.tools:
            out.pop("tool_choice")
    if edit.tool_choice is not None:
        out["tool_choice"] = {"type": "function", "name": edit.tool_choice}
    elif edit.require_call:
        out["tool_choice"] = "required"
    return out
