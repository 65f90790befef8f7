"""The OpenAI Responses API (`/v1/responses`): `request` translates `input` items to chat
turns and back; `reply` reads responses, whole or streamed, and writes the proxy's own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from proxy.dialects import continued
from proxy.dialects.responses import reply, request
from proxy.dialects.spans import SpanMemory
from proxy.dialects.splice import SpliceError, splice
from proxy.engine.plan.handback import Handback
from proxy.engine.plan.reply import ReplyView
from proxy.engine.text.exchange import Edit, Translation
from proxy.engine.text.salvage import SalvagedCall

__all__ = ["RESPONSES", "Responses"]


class Responses:
    name = "responses"
    structured = True

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
        try:
            return splice(body, request.changes(data, edit), memory, key)
        except SpliceError:
            return orjson.dumps(request.write(data, edit))

    def read_reply(self, body: bytes) -> ReplyView | None:
        return reply.read_reply(body)

    reply_watcher = reply.Watcher

    def salvaged(self, body: bytes, calls: Sequence[SalvagedCall], ids: Sequence[str]) -> bytes:
        return reply.salvaged(body, calls, ids)

    def salvaged_stream(self, held: Sequence[bytes], calls: Sequence[SalvagedCall], ids: Sequence[str]) -> bytes:
        return reply.salvaged_stream(held, calls, ids)

    def ahead(self, data: bytes) -> int:
        return continued.responses_ahead(data)

    def continued(self, sent: bytes, later: bytes) -> bytes:
        return continued.responses(sent, later)

    def handback(self, hand: Handback, model: str, stream: bool) -> tuple[bytes, str]:
        return reply.handback(hand, model, stream)


RESPONSES = Responses()
