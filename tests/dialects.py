"""The same conversation in the four dialects: chat completions, Responses input items, Ollama
/api/chat, Anthropic Messages."""

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


def anthropic_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "name": t["function"]["name"],
            "description": t["function"].get("description", ""),
            "input_schema": t["function"]["parameters"],
        }
        for t in tools
    ]


def messages_body(chat: Chat, **extra: Any) -> bytes:
    """Chat messages as Anthropic Messages: the system message as `system`, calls as `tool_use`
    blocks, each run of results (and a user message after them) as one user message of
    `tool_result` blocks (and a text block), so roles alternate."""
    system = ""
    messages: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})

    for message in chat.messages:
        role = message["role"]
        if role == "system":
            system = message["content"]
        elif role == "assistant":
            blocks = [{"type": "text", "text": message["content"]}] if message.get("content") else []
            blocks += [
                {
                    "type": "tool_use",
                    "id": call["id"],
                    "name": call["function"]["name"],
                    "input": orjson.loads(call["function"]["arguments"]),
                }
                for call in message.get("tool_calls", [])
            ]
            add("assistant", blocks)
        elif role == "tool":
            add(
                "user", [{"type": "tool_result", "tool_use_id": message["tool_call_id"], "content": message["content"]}]
            )
        else:
            add("user", [{"type": "text", "text": message["content"]}])
    body = {"model": chat.model, "max_tokens": 1024, "system": system, "messages": messages}
    body["tools"] = anthropic_tools(chat.tools)
    return orjson.dumps({**body, **extra})


def body_for(dialect: str, chat: Chat, **extra: Any) -> bytes:
    """The conversation as a request body in `dialect` (`chat`, `responses`, `ollama` or `anthropic`)."""
    if dialect == "anthropic":
        return messages_body(chat, **extra)
    if dialect == "responses":
        return responses_body(chat, **extra)
    if dialect == "ollama":
        return ollama_body(chat, **extra)
    return chat.bytes(**extra)
