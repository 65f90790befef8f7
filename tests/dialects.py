"""The same conversation in the three dialects: chat completions, Responses input items, Ollama /api/chat."""

from __future__ import annotations

from typing import Any

import orjson
from chat import Chat


def responses_body(chat: Chat, **extra: Any) -> bytes:
    """Chat messages as Responses `input` items; the system message becomes `instructions`."""
    items: list[dict[str, Any]] = []
    instructions = ""
    for message in chat.messages:
        role = message["role"]
        if role == "system":
            instructions = message["content"]
        elif role == "assistant":
            for call in message.get("tool_calls", []):
                f = call["function"]
                items.append(
                    {"type": "function_call", "call_id": call["id"], "name": f["name"], "arguments": f["arguments"]}
                )
            if message.get("content") and not message.get("tool_calls"):
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": message["content"]}],
                    }
                )
        elif role == "tool":
            items.append(
                {"type": "function_call_output", "call_id": message["tool_call_id"], "output": message["content"]}
            )
        else:
            items.append(
                {"type": "message", "role": role, "content": [{"type": "input_text", "text": message["content"]}]}
            )
    tools = [
        {"type": "function", "name": t["function"]["name"], "parameters": t["function"]["parameters"]}
        for t in chat.tools
    ]
    return orjson.dumps({"model": chat.model, "instructions": instructions, "input": items, "tools": tools, **extra})


def ollama_body(chat: Chat, **extra: Any) -> bytes:
    """Chat messages as Ollama sends them: calls without ids, arguments as objects, results with tool_name."""
    messages: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for message in chat.messages:
        if message["role"] == "assistant" and message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                names[call["id"]] = call["function"]["name"]
                calls.append(
                    {
                        "function": {
                            "name": call["function"]["name"],
                            "arguments": orjson.loads(call["function"]["arguments"]),
                        }
                    }
                )
            messages.append({"role": "assistant", "content": "", "tool_calls": calls})
        elif message["role"] == "tool":
            messages.append(
                {"role": "tool", "content": message["content"], "tool_name": names[message["tool_call_id"]]}
            )
        else:
            messages.append({"role": message["role"], "content": message["content"] or ""})
    return orjson.dumps({"model": chat.model, "messages": messages, "tools": chat.tools, "stream": False, **extra})


def body_for(dialect: str, chat: Chat, **extra: Any) -> bytes:
    """The conversation as a request body in `dialect` (`chat`, `responses` or `ollama`)."""
    if dialect == "responses":
        return responses_body(chat, **extra)
    if dialect == "ollama":
        return ollama_body(chat, **extra)
    return chat.bytes(**extra)
