"""What every dialect provides, and the one thing the rest of the proxy knows about it.

A dialect is one module: a translation of its requests into the engine's chat terms and
back (request side), and the shapes of its replies (reply side). The engine never knows
which dialect it serves; the HTTP layer only calls these methods.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from proxy.engine.exchange import Edit, Translation
from proxy.engine.handback import Handback

__all__ = ["Dialect", "StreamWatcher"]

StreamWatcher = Callable[[bytes], bool]
"""Fed raw stream chunks as they arrive; True once the reply is calling a tool."""


class Dialect(Protocol):
    @property
    def name(self) -> str:
        """Short name, for logs (`chat`, `responses`, `ollama`)."""
        ...

    # --- request side ---------------------------------------------------------------

    def read(self, data: dict[str, Any]) -> Translation | None:
        """The request in chat terms; None when it is not analysable (forwarded untouched)."""
        ...

    def write(self, body: bytes, data: dict[str, Any], translation: Translation, edit: Edit) -> bytes:
        """The request with `edit` applied, in this dialect's own shape; `body` is as it came."""
        ...

    # --- reply side -------------------------------------------------------------------

    def reply_acts(self, body: bytes) -> bool:
        """A whole (non-streamed) reply calls a tool."""
        ...

    def stream_watcher(self) -> StreamWatcher:
        """A fresh watcher for one streamed reply."""
        ...

    def handback(self, hand: Handback, model: str, stream: bool) -> tuple[bytes, str]:
        """The incomplete hand-back as this dialect's reply: (body, content type)."""
        ...
