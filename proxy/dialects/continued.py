"""One stream, two replies: the text of the model's first reply already went to the agent (while
the block rung holds only calls, text before a call flows at once), the call that followed was
refused, and the reply the model gave when asked again goes out on the same stream, written as
the rest of the first.

    chat       the later reply's chunks under the first's id, without a second `role`
    ollama     the later reply's lines as they are
    responses  the later response's items after the ones sent, numbered on from them; the
               first's `response.created` stands for both, and the completion lists every item
    messages   Anthropic's: `anthropic/stream.py`, on the readers here

In chat and Ollama the later reply's text joins the text already sent, set apart by a blank
line. What may go ahead (`*_ahead`) is the leading run of whole events that carry the reply's
text: never half an event, a call, or what ends the reply (a finish, usage, `[DONE]`, the
completion), so a later reply can still follow.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson

from proxy.dialects.lines import LineScanner, ndjson_payloads, sse_payloads

__all__ = [
    "chat",
    "chat_ahead",
    "ollama",
    "ollama_ahead",
    "responses",
    "responses_ahead",
    "rewrite_sse",
    "sse_spans",
    "text_prefix",
]

_APART = "\n\n"
_UNREADABLE = "unreadable"
"""An event whose data is not JSON: it never goes ahead."""


def _sse_events(data: bytes) -> Iterator[tuple[int, list[bytes], Any]]:
    """Each whole server-sent event in `data` (blank lines between events skipped): where it ends,
    its lines, and its payload (None: no data, a comment; the string "[DONE]"; `_UNREADABLE`:
    data that is not JSON)."""
    start = 0
    while True:
        lf, crlf = data.find(b"\n\n", start), data.find(b"\r\n\r\n", start)
        ends = [at + 2 for at in (lf,) if at >= 0] + [at + 4 for at in (crlf,) if at >= 0]
        if not ends:
            return
        end = min(ends)
        lines = [line for line in data[start:end].replace(b"\r\n", b"\n").split(b"\n") if line]
        payload = b"\n".join(line[5:].strip() for line in lines if line.startswith(b"data:"))
        try:
            parsed = "[DONE]" if payload == b"[DONE]" else orjson.loads(payload) if payload else None
        except orjson.JSONDecodeError:
            parsed = _UNREADABLE
        yield end, lines, parsed
        start = end


def sse_spans(data: bytes) -> Iterator[tuple[int, Any]]:
    return ((end, payload) for end, _lines, payload in _sse_events(data))


def text_prefix(spans: Iterator[tuple[int, Any]], is_text: Callable[[Any], bool]) -> int:
    """Where the leading run of whole events that are the reply's text ends."""
    ahead = 0
    for end, payload in spans:
        if not is_text(payload):
            break
        ahead = end
    return ahead


def _chat_text(payload: Any) -> bool:
    if payload is None:
        return True  # a comment, a keep-alive
    if not isinstance(payload, dict) or not payload.get("choices"):
        return False  # [DONE], usage, an error
    for choice in payload["choices"]:
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if not isinstance(delta, dict) or choice.get("finish_reason") is not None:
            return False
        if delta.get("tool_calls") or delta.get("function_call"):
            return False
    return True


def chat_ahead(data: bytes) -> int:
    """How much of a streamed chat reply is whole chunks of its text: no call, no finish, no usage."""
    return text_prefix(sse_spans(data), _chat_text)


_NOT_TEXT = frozenset(
    {
        "response.completed",
        "response.incomplete",
        "response.failed",
        "error",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
    }
)


def _responses_text(payload: Any) -> bool:
    if payload is None:
        return True
    if not isinstance(payload, dict) or payload.get("type") in _NOT_TEXT:
        return False
    item = payload.get("item")
    return not (isinstance(item, dict) and item.get("type") != "message")


def responses_ahead(data: bytes) -> int:
    """How much of a streamed response is whole events of its messages: no other item, no ending."""
    return text_prefix(sse_spans(data), _responses_text)


def _ollama_lines(data: bytes) -> Iterator[tuple[int, Any]]:
    start = 0
    while (newline := data.find(b"\n", start)) >= 0:
        line = data[start:newline].strip()
        try:
            yield newline + 1, orjson.loads(line) if line else None
        except orjson.JSONDecodeError:
            yield newline + 1, _UNREADABLE
        start = newline + 1


def _ollama_text(payload: Any) -> bool:
    if payload is None:
        return True
    message = payload.get("message") if isinstance(payload, dict) else None
    return isinstance(message, dict) and not payload.get("done") and not message.get("tool_calls")


def ollama_ahead(data: bytes) -> int:
    """How much of a streamed Ollama reply is whole lines of its text: no call, not the last line."""
    return text_prefix(_ollama_lines(data), _ollama_text)


def rewrite_sse(stream: bytes, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> bytes:
    """`stream` with each JSON event's payload changed (None: the event dropped); every other
    event and line as it was."""
    out: list[bytes] = []
    ended = stream if stream.endswith((b"\n\n", b"\r\n\r\n")) else stream + b"\n\n"  # its last event too
    for _end, lines, payload in _sse_events(ended):
        if not lines:
            continue
        kept = lines
        if isinstance(payload, dict):
            changed = change(payload)
            if changed is None:
                continue
            kept = [*(line for line in lines if not line.startswith(b"data:")), b"data: " + orjson.dumps(changed)]
        out.append(b"\n".join(kept) + b"\n\n")
    return b"".join(out)


class _Apart:
    """Sets the later reply's text apart from the text already sent, once."""

    def __init__(self, sent_text: str) -> None:
        self._pending = bool(sent_text.strip())

    def __call__(self, text: Any) -> Any:
        if not self._pending or not isinstance(text, str) or not text:
            return text
        self._pending = False
        return _APART + text.lstrip("\n")


def _sent_chat(sent: bytes) -> tuple[Any, str]:
    """The first reply's id and the text it sent."""
    payloads = [p for p in sse_payloads(LineScanner(), sent) if isinstance(p, dict)]
    text = []
    for payload in payloads:
        for choice in payload.get("choices") or ():
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                text.append(delta["content"])
    return (payloads[0].get("id") if payloads else None), "".join(text)


def chat(sent: bytes, later: bytes) -> bytes:
    first_id, text = _sent_chat(sent)
    apart = _Apart(text)

    def change(payload: dict[str, Any]) -> dict[str, Any]:
        if first_id is not None and "id" in payload:
            payload["id"] = first_id
        for choice in payload.get("choices") or ():
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if isinstance(delta, dict):
                delta.pop("role", None)
                if "content" in delta:
                    delta["content"] = apart(delta["content"])
        return payload

    return rewrite_sse(later, change)


def ollama(sent: bytes, later: bytes) -> bytes:
    said = (e.get("message") for e in ndjson_payloads(LineScanner(), sent) if isinstance(e, dict))
    apart = _Apart("".join(m["content"] for m in said if isinstance(m, dict) and isinstance(m.get("content"), str)))
    out = []
    for line in later.splitlines(keepends=True):
        try:
            event = orjson.loads(line) if line.strip() else None
        except orjson.JSONDecodeError:
            event = None
        message = event.get("message") if isinstance(event, dict) else None
        if not isinstance(message, dict) or not message.get("content"):
            out.append(line)
            continue
        message["content"] = apart(message["content"])
        out.append(orjson.dumps(event) + b"\n")
    return b"".join(out)


def responses(sent: bytes, later: bytes) -> bytes:
    events = [e for e in sse_payloads(LineScanner(), sent) if isinstance(e, dict)]
    created: dict[str, Any] = next((e["response"] for e in events if isinstance(e.get("response"), dict)), {})
    indexes = [e["output_index"] for e in events if isinstance(e.get("output_index"), int)]
    shift = max(indexes, default=-1) + 1
    items = [e["item"] for e in events if e.get("type") == "response.output_item.done" and "item" in e]
    numbers = [e["sequence_number"] for e in events if isinstance(e.get("sequence_number"), int)]
    number = iter(range(max(numbers, default=-1) + 1, 1 << 62))

    def change(event: dict[str, Any]) -> dict[str, Any] | None:
        if event.get("type") in ("response.created", "response.in_progress"):
            return None
        if isinstance(event.get("output_index"), int):
            event["output_index"] += shift
        if "sequence_number" in event:
            event["sequence_number"] = next(number)
        response = event.get("response")
        if isinstance(response, dict):
            output = response.get("output")
            later_items = output if isinstance(output, list) else []
            event["response"] = {**response, "output": [*items, *later_items]}
            if "id" in created:
                event["response"]["id"] = created["id"]
        return event

    return rewrite_sse(later, change)
