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

from proxy.dialects.changes import REMOVED, Array, Change, Fresh, Kept, Value, applied, materialise
from proxy.dialects.structured import text_format
from proxy.engine.text.exchange import Edit, Translation
from proxy.engine.text.messages import content_text

__all__ = ["SOURCE", "changes", "read", "write"]

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


def _input_items(
    data: dict[str, Any], messages: list[Any], leaves_out: bool = False
) -> tuple[list[Any], list[Kept | Fresh]]:
    """The original `input` items, and the new input: every original item kept, in place (the
    ones no message came from too: reasoning, and anything else not modelled), an edited tool
    output in its item's place, each injected message as a `message` item right after the
    last original item before it."""
    items = data.get("input")
    originals: list[Any] = items if isinstance(items, list) else [{"type": "message", "role": "user", "content": items}]
    after: dict[int, list[Any]] = {}
    edited: dict[int, Any] = {}
    placed: set[int] = set()
    last = -1
    for message in messages:
        sources = message.get(SOURCE) if isinstance(message, dict) else None
        if sources is None:
            after.setdefault(last, []).append(_item(message))
            continue
        placed.update(sources)
        for index in sources:
            item = originals[index]
            content = message.get("content")
            if message.get("role") == "tool" and isinstance(item.get("output"), str) and content != item["output"]:
                edited[index] = {**item, "output": content}
        last = max([last, *sources])
    plan: list[Kept | Fresh] = [Fresh(item) for item in after.get(-1, [])]
    for index in range(len(originals)):
        item = originals[index]
        if leaves_out and index not in placed and isinstance(item, dict) and item.get("type", "message") == "message":
            continue  # a message the edit left out (never an item no message came from)
        plan.append(Fresh(edited[index]) if index in edited else Kept(index))
        plan.extend(Fresh(item) for item in after.get(index, []))
    return originals, plan


def changes(data: dict[str, Any], edit: Edit) -> dict[str, Change]:
    """What an edit changes in a Responses request, member by member."""
    out: dict[str, Change] = {}
    if edit.messages is not None:
        _originals, plan = _input_items(data, edit.messages, edit.leaves_out)
        out["input"] = Array(plan) if isinstance(data.get("input"), list) else Value(_materialise(data, plan))
    if edit.tools is not None:
        tools = data.get("tools") or []
        out["tools"] = Array(
            [Kept(i) for i, t in enumerate(tools) if isinstance(t, dict) and t.get("name") in edit.tools]
        )
        choice = data.get("tool_choice")
        if isinstance(choice, dict) and choice.get("name") not in edit.tools:
            out["tool_choice"] = REMOVED
    if edit.tool_choice is not None:
        out["tool_choice"] = Value({"type": "function", "name": edit.tool_choice})
    elif edit.require_call:
        out["tool_choice"] = Value("required")
    asked = text_format(edit.call_schema, data.get("text")) if edit.call_schema is not None else None
    if asked is not None:
        out[asked[0]] = Value(asked[1])
    return out


def _materialise(data: dict[str, Any], plan: list[Kept | Fresh]) -> list[Any]:
    items = data.get("input")
    originals: list[Any] = items if isinstance(items, list) else [{"type": "message", "role": "user", "content": items}]
    return materialise(originals, plan)


def write(data: dict[str, Any], edit: Edit) -> dict[str, Any]:
    """The edited request as a whole (when its body cannot be spliced)."""
    return applied(data, changes(data, edit))
