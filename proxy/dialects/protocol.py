"""What every dialect provides, and the one thing the rest of the proxy knows about it.

A dialect is one module: a translation of its requests into the engine's chat terms and
back (request side), and the shapes of its replies (reply side). The engine never knows
which dialect it serves; the HTTP layer only calls these methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from proxy.dialects.spans import SpanMemory
from proxy.engine.plan.handback import Handback
from proxy.engine.plan.reply import ReplyView
from proxy.engine.text.exchange import Edit, Translation
from proxy.engine.text.salvage import SalvagedCall

__all__ = ["Dialect", "ReplyWatcher"]


class ReplyWatcher(Protocol):
    """Fed a streamed reply's raw chunks as they arrive; says what the reply is so far."""

    def feed(self, chunk: bytes) -> None: ...

    @property
    def view(self) -> ReplyView: ...


class Dialect(Protocol):
    @property
    def name(self) -> str:
        """Short name, for logs (`chat`, `responses`, `ollama`, `anthropic`)."""
        ...

    @property
    def structured(self) -> bool:
        """It can ask the server for a reply held to a JSON schema (`structured.py`): a call schema
        an edit asks for is written into the request; without, a request never carries one."""
        ...

    # --- request side ---------------------------------------------------------------

    def read(self, data: dict[str, Any]) -> Translation | None:
        """The request in chat terms; None when it is not analysable (forwarded untouched)."""
        ...

    def write(
        self,
        body: bytes,
        data: dict[str, Any],
        translation: Translation,
        edit: Edit,
        memory: SpanMemory | None = None,
        key: tuple[str, str] = ("", ""),
    ) -> bytes:
        """The request with `edit` applied, in this dialect's own shape; `body` is as it came.
        `memory` keeps what the conversation's (`key`) last write found, to walk less next time."""
        ...

    # --- reply side -------------------------------------------------------------------

    def read_reply(self, body: bytes) -> ReplyView | None:
        """A whole (non-streamed) reply's text and calls; None when it is not a reply (an error body)."""
        ...

    def reply_watcher(self) -> ReplyWatcher:
        """A fresh watcher for one streamed reply (a dialect's watcher class is this)."""
        ...

    def salvaged(self, body: bytes, calls: Sequence[SalvagedCall], ids: Sequence[str]) -> bytes:
        """The whole reply `body` with its text replaced by `calls` (ids given)."""
        ...

    def salvaged_stream(self, held: Sequence[bytes], calls: Sequence[SalvagedCall], ids: Sequence[str]) -> bytes:
        """The streamed reply held in `held`, written again as a stream of `calls`."""
        ...

    def ahead(self, data: bytes) -> int:
        """How much of a streamed reply's `data` (from its start, or from where the last part that
        went ahead ended) is whole events of its text, that may go to the agent before the reply
        is judged: never half an event, a call, or what ends the reply."""
        ...

    def continued(self, sent: bytes, later: bytes) -> bytes:
        """The stream of a `later` reply written as the rest of the one whose start went out
        (`sent`: whole events, text and no call; `continued.py`)."""
        ...

    def handback(self, hand: Handback, model: str, stream: bool) -> tuple[bytes, str]:
        """The incomplete hand-back as this dialect's reply: (body, content type)."""
        ...
