"""Hypothesis strategies for request bodies: agent transcripts from well-formed to hostile, in
chat, Responses and Ollama shapes."""

from __future__ import annotations

import os
from typing import Any

import orjson
from chat import OUTPUTS
from hypothesis import strategies as st

EXPLORE_SCALE = 10


def examples(count: int) -> int:
    """A test's example count: as stated under the `ci` profile, ten times it under `explore`."""
    return count * EXPLORE_SCALE if os.environ.get("HYPOTHESIS_PROFILE") == "explore" else count


FAILURES = [(OUTPUTS / f"{n}.txt").read_text() for n in ("pytest_addition_a", "pytest_addition_b")]
JSON_SCALARS = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=20)
)
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
TOOLS = ["execute_bash", "str_replace_editor", "finish", "nonexistent_tool", ""]
COMMANDS = ["cd /workspace && python -m pytest tests/test_parse.py", "ls", "cat src/parse.py", "sed -i 's/a/b/' x.py"]
OUTPUT = (
    st.sampled_from(FAILURES)
    | st.sampled_from(["", "ok", "ERROR:\nMissing required parameter `path`.", "\x1b]" * 50])
    | st.text(max_size=200)
)
IDS = st.text(min_size=1, max_size=6) | st.integers() | st.lists(st.integers(), max_size=2) | st.none()


@st.composite
def arguments(draw: st.DrawFn) -> Any:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return orjson.dumps({"command": draw(st.sampled_from(COMMANDS))}).decode()
    if kind == 1:
        return orjson.dumps(
            {"command": "str_replace", "path": "/workspace/src/parse.py", "old_str": "a", "new_str": "b"}
        ).decode()
    if kind == 2:
        return draw(st.text(max_size=30))  # malformed
    return draw(JSON)


@st.composite
def chat_messages(draw: st.DrawFn) -> list[Any]:
    messages: list[Any] = [{"role": "system", "content": "agent"}, {"role": "user", "content": "fix the test"}]
    for n in range(draw(st.integers(0, 7))):
        shape = draw(st.integers(0, 9))
        if shape <= 5:  # a tool turn
            calls = draw(st.integers(1, 2))
            ids = [f"call_{n}_{i}" if draw(st.booleans()) or shape < 4 else draw(IDS) for i in range(calls)]
            tool_calls = [
                {
                    "id": i,
                    "type": "function",
                    "function": {"name": draw(st.sampled_from(TOOLS)), "arguments": draw(arguments())},
                }
                for i in ids
            ]
            messages.append({"role": "assistant", "content": draw(st.none() | st.just("")), "tool_calls": tool_calls})
            for i in ids:
                content: Any = draw(OUTPUT) if draw(st.integers(0, 5)) else draw(JSON)
                messages.append({"role": "tool", "tool_call_id": i, "content": content})
        elif shape == 6:
            messages.append({"role": "assistant", "content": draw(st.text(max_size=40))})
        elif shape == 7:
            messages.append({"role": "user", "content": draw(st.sampled_from(["continue", "Please go on."]))})
        else:  # odd entries
            messages.append(draw(JSON | st.fixed_dictionaries({"role": st.text(max_size=6), "content": JSON})))
    return messages


@st.composite
def chat_body(draw: st.DrawFn) -> dict[str, Any]:
    body: dict[str, Any] = {"model": draw(st.text(max_size=8) | JSON), "messages": draw(chat_messages())}
    if draw(st.booleans()):
        body["tools"] = [
            {"type": "function", "function": {"name": t, "parameters": {"type": "object"}}} for t in TOOLS[:3]
        ]
    if draw(st.booleans()):
        body["seed"] = draw(st.integers(-(2**80), 2**80))
    if draw(st.booleans()):
        body["extra"] = draw(JSON)
    return body


def as_responses(body: dict[str, Any]) -> dict[str, Any]:
    """The same transcript as Responses `input` items (odd messages kept as odd items)."""
    items: list[Any] = []
    for m in body["messages"]:
        if not isinstance(m, dict):
            items.append(m)
        elif m.get("role") == "assistant" and isinstance(m.get("tool_calls"), list):
            for c in m["tool_calls"]:
                items.append({"type": "reasoning", "id": "rs", "encrypted_content": "gAAA", "summary": []})
                items.append(
                    {
                        "type": "function_call",
                        "call_id": c["id"],
                        "name": c["function"]["name"],
                        "arguments": c["function"]["arguments"],
                    }
                )
        elif m.get("role") == "tool":
            items.append({"type": "function_call_output", "call_id": m.get("tool_call_id"), "output": m.get("content")})
        else:
            items.append({"type": "message", "role": m.get("role"), "content": m.get("content")})
    out = {k: v for k, v in body.items() if k != "messages"}
    out["input"] = items
    if "tools" in body:
        out["tools"] = [{"type": "function", "name": t["function"]["name"], "parameters": {}} for t in body["tools"]]
    return out


def as_ollama(body: dict[str, Any]) -> dict[str, Any]:
    messages = []
    for m in body["messages"]:
        if isinstance(m, dict) and m.get("role") == "assistant" and isinstance(m.get("tool_calls"), list):
            calls = [
                {"function": {"name": c["function"]["name"], "arguments": _object(c["function"]["arguments"])}}
                for c in m["tool_calls"]
            ]
            messages.append({"role": "assistant", "content": "", "tool_calls": calls})
        elif isinstance(m, dict) and m.get("role") == "tool":
            messages.append({"role": "tool", "content": m.get("content"), "tool_name": "execute_bash"})
        else:
            messages.append(m)
    return {**body, "messages": messages, "stream": False}


def _object(raw: Any) -> Any:
    try:
        return orjson.loads(raw) if isinstance(raw, str) else raw
    except orjson.JSONDecodeError:
        return raw


def as_anthropic(body: dict[str, Any]) -> dict[str, Any]:
    """The same transcript as Anthropic Messages: system messages as `system`, calls as `tool_use`
    blocks, results as `tool_result` blocks, runs of one role as one message (odd messages kept
    as they are: such a body is not analysable)."""
    system: list[str] = []
    messages: list[Any] = []

    def add(role: str, blocks: list[Any]) -> None:
        if messages and isinstance(messages[-1], dict) and messages[-1].get("role") == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})

    for m in body["messages"]:
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool"):
            messages.append(m)
        elif m["role"] == "system":
            system.append(str(m.get("content")))
        elif m["role"] == "tool":
            add(
                "user",
                [{"type": "tool_result", "tool_use_id": str(m.get("tool_call_id")), "content": str(m.get("content"))}],
            )
        elif m["role"] == "user":
            add("user", [{"type": "text", "text": str(m.get("content"))}])
        else:
            text = (
                [{"type": "text", "text": m["content"]}] if isinstance(m.get("content"), str) and m["content"] else []
            )
            calls = m.get("tool_calls") if isinstance(m.get("tool_calls"), list) else []
            uses = [
                {"type": "tool_use", "id": str(c.get("id")), "name": str((c.get("function") or {}).get("name")),
                 "input": _object((c.get("function") or {}).get("arguments")) if isinstance(_object((c.get("function") or {}).get("arguments")), dict) else {}}
                for c in calls if isinstance(c, dict)
            ]  # fmt: skip
            add("assistant", text + uses)
    out = {k: v for k, v in body.items() if k not in ("messages", "seed")}
    out["messages"], out["max_tokens"] = messages, 1024
    if system:
        out["system"] = "\n".join(system)
    if "tools" in body:
        out["tools"] = [{"name": t["function"]["name"], "input_schema": {"type": "object"}} for t in body["tools"]]
    return out
