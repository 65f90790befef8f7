"""Reading streamed replies for the proxy's own decisions, never for relaying.

One line scanner serves both stream formats: server-sent events (`data:` lines, chat and
Responses) and newline-delimited JSON (Ollama). It tolerates what servers send: events
split across reads, `:` comments, `data: [DONE]`, blank lines, lines that are not JSON.
What is relayed is always the original bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

__all__ = ["LineScanner", "ndjson_payloads", "sse_payloads"]


class LineScanner:
    """Feeds on raw bytes; gives back each complete line, without its `\n` (a `\r` before it stays:
    every reader strips what it reads, `sse_payloads`, `ndjson_payloads` and the usage reader alike)."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        *lines, self._pending = (self._pending + chunk).split(b"\n")
        return lines


def sse_payloads(scanner: LineScanner, chunk: bytes) -> Iterator[Any]:
    """Each complete `data:` payload in `chunk` (with what came before it), parsed as JSON."""
    for line in scanner.feed(chunk):
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if not data or data == b"[DONE]":
            continue
        try:
            yield orjson.loads(data)
        except orjson.JSONDecodeError:
            continue


def ndjson_payloads(scanner: LineScanner, chunk: bytes) -> Iterator[Any]:
    """Each complete JSON line in `chunk` (with what came before it)."""
    for line in scanner.feed(chunk):
        if not line.strip():
            continue
        try:
            yield orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
