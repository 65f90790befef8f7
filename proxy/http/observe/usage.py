"""What a reply says it used, read as its chunks pass: the model that answered, its token
counts (`usage`) and why it stopped. Never part of what is relayed: the reader only looks.

One reader per upstream reply, in every shape the proxy forwards:

    chat / completions   JSON (`usage.prompt_tokens`, `choices[].finish_reason`); streamed, the
                         chunk with `finish_reason` and the usage-only chunk `include_usage` asks for
    Responses            JSON (`usage.input_tokens`, `status`); streamed, `response.completed`
    Ollama               JSON or NDJSON (`prompt_eval_count`, `eval_count`, `done_reason`)
    Messages             JSON (`usage.input_tokens`, `stop_reason`); streamed, `message_start`'s
                         input tokens, then `message_delta`'s output tokens and stop reason
    embeddings           JSON (`usage.prompt_tokens`)

A streamed line is parsed only when it can carry any of that (a cheap byte test first), so a
long stream costs a scan, not a JSON parse per chunk; a whole body is kept up to `WHOLE_LIMIT`.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from proxy.dialects.lines import LineScanner

__all__ = ["STREAM_CONTENT_TYPES", "WHOLE_LIMIT", "Usage", "UsageReader", "is_streaming"]

STREAM_CONTENT_TYPES = ("text/event-stream", "application/x-ndjson")
WHOLE_LIMIT = 8 * 1024 * 1024
"""A whole (non-streamed) body larger than this is not read for its usage."""

_WORTH_PARSING = re.compile(
    rb'"usage"\s*:\s*\{|"finish_reason"\s*:\s*"|"type"\s*:\s*"response\.(?:completed|incomplete|failed)"|"done"\s*:\s*true'
    rb'|"stop_reason"\s*:\s*"'
)
"""A streamed line that may say what the reply used (the rest only carry text)."""


@dataclass(frozen=True, slots=True)
class Usage:
    """What one reply said it used; None where it did not say."""

    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish_reasons: tuple[str, ...] = ()


def is_streaming(headers: Mapping[str, str]) -> bool:
    """The body is a stream of lines (SSE or NDJSON), by its content type."""
    return headers.get("Content-Type", "").lower().startswith(STREAM_CONTENT_TYPES)


def _carried(payload: dict[str, Any]) -> dict[str, Any]:
    """What a stream's event carries that says what was used: a Responses event's response, a
    Messages stream's opening message; any other payload is itself."""
    kind = payload.get("type")
    if isinstance(kind, str) and kind.startswith("response.") and isinstance(payload.get("response"), dict):
        return payload["response"]  # type: ignore[no-any-return]
    if kind == "message_start" and isinstance(payload.get("message"), dict):
        return payload["message"]  # type: ignore[no-any-return]
    return payload


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class UsageReader:
    """Fed one reply's raw chunks as they pass (`streamed`: SSE or NDJSON lines; otherwise one
    JSON body); `usage` says what it used so far."""

    def __init__(self, streamed: bool) -> None:
        self._scanner = LineScanner() if streamed else None  # a whole body is read whole, not by lines
        self._whole: list[bytes] | None = None if streamed else []
        self._size = 0
        self._model: str | None = None
        self._input: int | None = None
        self._output: int | None = None
        self._reasons: dict[int, str] = {}

    def feed(self, chunk: bytes) -> None:
        if self._whole is not None:
            self._size += len(chunk)
            if self._size > WHOLE_LIMIT:
                self._whole = None  # too large to keep: its usage goes unread
            else:
                self._whole.append(chunk)
            return
        if self._scanner is None:
            return
        for line in self._scanner.feed(chunk):
            if self._model is not None and not _WORTH_PARSING.search(line):
                continue
            data = line[5:] if line.startswith(b"data:") else line
            data = data.strip()
            if not data.startswith(b"{"):
                continue
            try:
                self._take(orjson.loads(data))
            except orjson.JSONDecodeError:
                continue

    def usage(self) -> Usage:
        """What the reply said it used (a whole body is read here, once it is all in)."""
        if self._whole is not None:
            whole, self._whole = b"".join(self._whole), None
            with contextlib.suppress(orjson.JSONDecodeError):
                self._take(orjson.loads(whole))
        reasons = tuple(dict.fromkeys(map(self._reasons.__getitem__, sorted(self._reasons))))
        return Usage(self._model, self._input, self._output, reasons)

    def _take(self, payload: Any) -> None:
        if not isinstance(payload, dict):
            return
        if payload.get("type") == "message_delta":
            self._message_delta(payload)
            return
        payload = _carried(payload)
        model = payload.get("model")
        if isinstance(model, str) and model:
            self._model = model
        usage = payload.get("usage")
        if isinstance(usage, dict):
            self._input = _count(usage.get("prompt_tokens", usage.get("input_tokens")))
            self._output = _count(usage.get("completion_tokens", usage.get("output_tokens")))
        if payload.get("type") == "message" and isinstance(payload.get("stop_reason"), str):
            self._reasons[0] = payload["stop_reason"]
        if payload.get("done") is True:  # Ollama's last line (or whole reply)
            self._input = _count(payload.get("prompt_eval_count"))
            self._output = _count(payload.get("eval_count"))
            if isinstance(payload.get("done_reason"), str):
                self._reasons[0] = payload["done_reason"]
        for position, choice in enumerate(payload.get("choices") or ()):
            if isinstance(choice, dict) and isinstance(choice.get("finish_reason"), str):
                index = choice.get("index", position)
                self._reasons[index if isinstance(index, int) else position] = choice["finish_reason"]
        if payload.get("object") == "response" and payload.get("status") not in (None, "in_progress", "queued"):
            details = payload.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, dict) else None
            self._reasons[0] = reason if isinstance(reason, str) else str(payload["status"])

    def _message_delta(self, payload: dict[str, Any]) -> None:
        """A Messages stream's `message_delta`: the output tokens so far and why it stopped."""
        usage, delta = payload.get("usage"), payload.get("delta")
        if isinstance(usage, dict) and "output_tokens" in usage:
            self._output = _count(usage["output_tokens"])
        if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
            self._reasons[0] = delta["stop_reason"]
