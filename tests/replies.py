"""Model replies in each dialect, as real servers send them, whole and streamed; and what an
agent reads out of a reply it received."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web
from support import Handler

DIALECTS = ("chat", "responses", "ollama", "anthropic")
PATHS = {
    "chat": "/v1/chat/completions",
    "responses": "/v1/responses",
    "ollama": "/api/chat",
    "anthropic": "/v1/messages",
}
STRUCTURED = ("chat", "responses", "ollama")
"""The dialects that carry a call schema (Messages has none: its retries ask by `tool_choice` alone)."""
REQUIRED = {"chat": "required", "responses": "required", "ollama": None, "anthropic": {"type": "any"}}
"""The `tool_choice` a request that requires a call carries in each dialect (Ollama has none)."""
STREAM_TYPES = {
    "chat": "text/event-stream",
    "responses": "text/event-stream",
    "ollama": "application/x-ndjson",
    "anthropic": "text/event-stream",
}


def _sse(payload: dict[str, Any], event: bool = False) -> bytes:
    head = b"event: " + payload["type"].encode() + b"\n" if event else b""
    return head + b"data: " + orjson.dumps(payload) + b"\n\n"


def _chat(text: str, calls: list[tuple[str, dict[str, Any]]], stream: bool) -> list[bytes]:
    base = {"id": "chatcmpl-up", "created": 1700000000, "model": "m"}
    tool_calls = [
        {"id": f"call_up{i}", "type": "function", "function": {"name": n, "arguments": orjson.dumps(a).decode()}}
        for i, (n, a) in enumerate(calls)
    ]
    finish = "tool_calls" if calls else "stop"
    if not stream:
        message: dict[str, Any] = {"role": "assistant", "content": text or (None if calls else "")}
        if calls:
            message["tool_calls"] = tool_calls
        choice = {"index": 0, "message": message, "finish_reason": finish}
        usage = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
        return [orjson.dumps({**base, "object": "chat.completion", "choices": [choice], "usage": usage})]

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return _sse({**base, "object": "chat.completion.chunk", "choices": [choice]})

    out = [chunk({"role": "assistant", "content": None if calls else ""})]
    out += [chunk({"content": text[i : i + 7]}) for i in range(0, len(text), 7)]
    out += [chunk({"tool_calls": [{"index": i, **c}]}) for i, c in enumerate(tool_calls)]
    out.append(chunk({}, finish))
    usage = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    out.append(_sse({**base, "object": "chat.completion.chunk", "choices": [], "usage": usage}))
    return [*out, b"data: [DONE]\n\n"]


def _responses(text: str, calls: list[tuple[str, dict[str, Any]]], stream: bool) -> list[bytes]:
    message = {
        "type": "message",
        "id": "msg_up",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    items = [
        {"type": "function_call", "id": f"fc_up{i}", "call_id": f"call_up{i}", "name": n,
         "arguments": orjson.dumps(a).decode(), "status": "completed"}
        for i, (n, a) in enumerate(calls)
    ]  # fmt: skip
    output = items if calls else [message]
    response = {"id": "resp_up", "object": "response", "created_at": 1700000000, "model": "m", "tools": [],
                "parallel_tool_calls": True, "tool_choice": "auto", "usage": None}  # fmt: skip
    if not stream:
        return [orjson.dumps({**response, "status": "completed", "output": output})]
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**response, "status": "in_progress", "output": []}},
        {"type": "response.in_progress", "response": {**response, "status": "in_progress", "output": []}},
    ]
    if calls:
        for i, item in enumerate(items):
            events += [
                {"type": "response.output_item.added", "output_index": i, "item": {**item, "arguments": "", "status": "in_progress"}},
                {"type": "response.function_call_arguments.delta", "item_id": item["id"], "output_index": i, "delta": item["arguments"]},
                {"type": "response.function_call_arguments.done", "item_id": item["id"], "output_index": i, "arguments": item["arguments"]},
                {"type": "response.output_item.done", "output_index": i, "item": item},
            ]  # fmt: skip
    else:
        where = {"item_id": "msg_up", "output_index": 0, "content_index": 0}
        part = {"type": "output_text", "text": text, "annotations": []}
        events += [
            {"type": "response.output_item.added", "output_index": 0, "item": {**message, "status": "in_progress", "content": []}},
            {"type": "response.content_part.added", **where, "part": {**part, "text": ""}},
            *({"type": "response.output_text.delta", **where, "delta": text[i : i + 7], "logprobs": []} for i in range(0, len(text), 7)),
            {"type": "response.output_text.done", **where, "text": text, "logprobs": []},
            {"type": "response.content_part.done", **where, "part": part},
            {"type": "response.output_item.done", "output_index": 0, "item": message},
        ]  # fmt: skip
    events.append({"type": "response.completed", "response": {**response, "status": "completed", "output": output}})
    return [_sse({**e, "sequence_number": n}, event=True) for n, e in enumerate(events)]


def _ollama(text: str, calls: list[tuple[str, dict[str, Any]]], stream: bool) -> list[bytes]:
    base = {"model": "m", "created_at": "2026-11-22T00:00:00Z"}
    tool_calls = [{"function": {"name": n, "arguments": a}} for n, a in calls]
    final = {**base, "done": True, "done_reason": "stop", "eval_count": 3}
    if not stream:
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = tool_calls
        return [orjson.dumps({**final, "message": message})]
    lines = [
        {**base, "message": {"role": "assistant", "content": text[i : i + 7]}, "done": False}
        for i in range(0, len(text), 7)
    ]
    if calls:
        lines.append({**base, "message": {"role": "assistant", "content": "", "tool_calls": tool_calls}, "done": False})
    lines.append({**final, "message": {"role": "assistant", "content": ""}})
    return [orjson.dumps(line) + b"\n" for line in lines]


def _anthropic(text: str, calls: list[tuple[str, dict[str, Any]]], stream: bool) -> list[bytes]:
    """As Anthropic's API streams a message: `message_start`, a `ping`, each block's start,
    deltas (text in pieces, a call's input as JSON in two) and stop, `message_delta`, `message_stop`."""
    uses = [{"type": "tool_use", "id": f"call_up{i}", "name": n, "input": a} for i, (n, a) in enumerate(calls)]
    content = ([{"type": "text", "text": text}] if text else []) + uses
    stop = "tool_use" if calls else "end_turn"
    message = {"id": "msg_up", "type": "message", "role": "assistant", "model": "m", "content": content,
               "stop_reason": stop, "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 3}}  # fmt: skip
    if not stream:
        return [orjson.dumps(message)]
    opening = {**message, "content": [], "stop_reason": None, "usage": {"input_tokens": 5, "output_tokens": 1}}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": opening}, {"type": "ping"}]
    index = 0
    if text:
        events.append({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
        events += [
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text[i : i + 7]}}
            for i in range(0, len(text), 7)
        ]
        events.append({"type": "content_block_stop", "index": 0})
        index = 1
    for offset, use in enumerate(uses):
        at, arguments = index + offset, orjson.dumps(use["input"]).decode()
        events.append({"type": "content_block_start", "index": at, "content_block": {**use, "input": {}}})
        for part in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]):
            events.append({"type": "content_block_delta", "index": at, "delta": {"type": "input_json_delta", "partial_json": part}})  # fmt: skip
        events.append({"type": "content_block_stop", "index": at})
    events.append({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 3}})  # fmt: skip
    events.append({"type": "message_stop"})
    return [_sse(e, event=True) for e in events]


BUILDERS = {"chat": _chat, "responses": _responses, "ollama": _ollama, "anthropic": _anthropic}


def reply_bytes(
    dialect: str, text: str = "", calls: list[tuple[str, dict[str, Any]]] | None = None, stream: bool = False
) -> list[bytes]:
    """The body (one piece, or stream chunks) a server sends for this reply."""
    return BUILDERS[dialect](text, calls or [], stream)


def reply(
    dialect: str, text: str = "", calls: list[tuple[str, dict[str, Any]]] | None = None, stream: bool = False
) -> Handler:
    """An upstream handler answering with this reply."""
    pieces = reply_bytes(dialect, text, calls, stream)

    async def handler(request: web.Request, _body: bytes) -> web.StreamResponse:
        return await send(request, dialect, pieces, stream)

    return handler


async def send(request: web.Request, dialect: str, pieces: list[bytes], stream: bool) -> web.StreamResponse:
    """A reply's pieces (`reply_bytes`) as the server sends them: whole, or streamed."""
    if not stream:
        return web.Response(body=pieces[0], content_type="application/json")
    response = web.StreamResponse(headers={"Content-Type": STREAM_TYPES[dialect]})
    await response.prepare(request)
    for piece in pieces:
        await response.write(piece)
    await response.write_eof()
    return response


Calls = list[list[Any]]


def _payloads(dialect: str, body: bytes, stream: bool) -> list[Any]:
    if not stream:
        return [orjson.loads(body)]
    if dialect == "ollama":
        return [orjson.loads(line) for line in body.splitlines() if line.strip()]
    lines = [line[5:].strip() for line in body.splitlines() if line.startswith(b"data:")]
    return [orjson.loads(line) for line in lines if line != b"[DONE]"]


def _read_chat(payloads: list[Any]) -> tuple[str, Calls]:
    text, calls = "", []
    for p in payloads:
        for choice in p.get("choices") or []:
            part = choice.get("message") or choice.get("delta") or {}
            text += part.get("content") or ""
            for call in part.get("tool_calls") or []:
                if call.get("id"):
                    calls.append([call["function"]["name"], call["function"].get("arguments", ""), call["id"]])
                else:
                    calls[-1][1] += call["function"].get("arguments", "")
    return text, calls


def _read_ollama(payloads: list[Any]) -> tuple[str, Calls]:
    text, calls = "", []
    for p in payloads:
        message = p.get("message") or {}
        text += message.get("content") or ""
        calls += [[c["function"]["name"], c["function"]["arguments"], ""] for c in message.get("tool_calls") or []]
    return text, calls


def _read_responses(payloads: list[Any], stream: bool) -> tuple[str, Calls]:
    text, calls = "", []
    for p in payloads:
        if stream and p.get("type") != "response.completed":
            continue
        for item in (p.get("response") or p)["output"]:
            if item["type"] == "message":
                text += "".join(c["text"] for c in item["content"])
            elif item["type"] == "function_call":
                calls.append([item["name"], item["arguments"], item["call_id"]])
    return text, calls


def _read_anthropic(payloads: list[Any], stream: bool) -> tuple[str, Calls]:
    if not stream:
        content = payloads[0]["content"]
        text = "".join(b["text"] for b in content if b["type"] == "text")
        return text, [[b["name"], b["input"], b["id"]] for b in content if b["type"] == "tool_use"]
    text, calls, at = "", [], {}
    for p in payloads:
        block, delta = p.get("content_block") or {}, p.get("delta") or {}
        if p["type"] == "content_block_start" and block.get("type") == "tool_use":
            at[p["index"]] = len(calls)
            calls.append([block["name"], "", block["id"]])
        elif delta.get("type") == "text_delta":
            text += delta["text"]
        elif delta.get("type") == "input_json_delta":
            calls[at[p["index"]]][1] += delta["partial_json"]
    return text, [[n, a or "{}", i] for n, a, i in calls]


def received(dialect: str, body: bytes, stream: bool) -> tuple[str, list[tuple[str, dict[str, Any], str]]]:
    """What an agent reads out of the reply it got: (text, [(tool, arguments, call id)])."""
    payloads = _payloads(dialect, body, stream)
    if dialect == "anthropic":
        text, calls = _read_anthropic(payloads, stream)
    elif dialect == "chat":
        text, calls = _read_chat(payloads)
    elif dialect == "ollama":
        text, calls = _read_ollama(payloads)
    else:
        text, calls = _read_responses(payloads, stream)
    return text, [(n, orjson.loads(a) if isinstance(a, str) else a, i) for n, a, i in calls]
