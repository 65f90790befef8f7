"""Anthropic Messages (`/v1/messages`: Claude Code, and the Anthropic SDKs; served by llama.cpp's
server, vLLM and Ollama): `request` translates `messages` to chat turns, `write` puts an edit
back; `reply` reads messages, whole or streamed, and writes the proxy's own; `stream` lets text
go ahead of a held call and continues a stream with a later message."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from proxy.dialects.anthropic import reply, request, stream, write
from proxy.dialects.changes import applied
from proxy.dialects.spans import SpanMemory
from proxy.dialects.splice import SpliceError, splice
from proxy.engine.plan.handback import Handback
from proxy.engine.plan.reply import ReplyView
from proxy.engine.text.exchange import Edit, Translation
from proxy.engine.text.salvage import SalvagedCall

__all__ = ["ANTHROPIC", "Anthropic"]


class Anthropic:
    name = "anthropic"
    structured = False

    read = staticmethod(request.read)

    def write(
        self,
        body: bytes,
        data: dict[str, Any],
        translation: Translation,
        edit: Edit,
        memory: SpanMemory | None = None,
        key: tuple[str, str] = ("", ""),
    ) -> bytes:
        changes = write.changes(data, edit, translation)
        try:
            return splice(body, changes, memory, key)
        except SpliceError:
            return orjson.dumps(applied(data, changes))

    def read_reply(self, body: bytes) -> ReplyView | None:
        return reply.read_reply(body)

    reply_watcher = reply.Watcher

    def salvaged(self, body: bytes, calls: Sequence[SalvagedCall], ids: Sequence[str]) -> bytes:
        return reply.salvaged(body, calls, ids)

    def salvaged_stream(self, held: Sequence[bytes], calls: Sequence[SalvagedCall], ids: Sequence[str]) -> bytes:
        return reply.salvaged_stream(held, calls, ids)

    def ahead(self, data: bytes) -> int:
        return stream.ahead(data)

    def continued(self, sent: bytes, later: bytes) -> bytes:
        return stream.continued(sent, later)

    def handback(self, hand: Handback, model: str, stream: bool) -> tuple[bytes, str]:
        return reply.handback(hand, model, stream)


ANTHROPIC = Anthropic()
