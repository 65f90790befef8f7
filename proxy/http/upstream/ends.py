"""Where a relayed stream ends for the agent: the event after which it has the reply whole.

    chat, completions (SSE)     `data: [DONE]`
    Responses (SSE)             the `response.completed`, `response.incomplete` or `response.failed` event
    Anthropic Messages (SSE)    the `message_stop` event
    Ollama (NDJSON)             the line with `"done": true`
    any other body              its end (known when the upstream ends it)

An SDK stops reading there: the `openai` SDK, iterating a stream, reads `[DONE]`, drains what
follows for at most 0.1 s and closes the connection. What the proxy does after that event (wait
for the upstream's end of body, end its own) is no part of the agent's reply, so an agent that
leaves then has not left early (see `forward.relay`). A marker is read only outside a JSON string
(never `\\"done\\": true` in a model's text), and only once its line is complete.

Must never: call a stream whole before its last event is out (an agent that leaves mid-stream is
`client_gone`); parse what passes (a byte search per chunk, C speed, nothing kept but the tail).
"""

from __future__ import annotations

import re

from proxy.http.observe.usage import STREAM_CONTENT_TYPES

__all__ = ["StreamEnd"]

_LAST = re.compile(
    rb"^data: ?\[DONE\]"
    rb"|(?<!\\)\"type\"\s*:\s*\"(?:response\.(?:completed|incomplete|failed)|message_stop)\""
    rb"|(?<!\\)\"done\"\s*:\s*true",
    re.MULTILINE,
)
"""A stream's last event, in each shape above: read in its `data:` line (an SSE `event:` line comes
before the data it names)."""
_WORDS = (b"[DONE]", b"response.", b"message_stop", b'"done"')
"""What each marker has: a chunk with none of them is not searched (a substring test is cheaper)."""
_CARRIED = 64
"""Bytes of the line still open searched with the next chunk: a marker split between two chunks is
found. Longer, its last bytes are kept behind a byte that starts no line (`^` must not match there)."""


class StreamEnd:
    """Fed what is written to the agent, chunk by chunk; `reached` once the stream's last event is
    out whole: its marker seen, and what was written since ends the event (a blank line in SSE, the
    line in NDJSON). A body that is no stream (by its content type) is whole only at its end."""

    def __init__(self, content_type: str) -> None:
        kind = content_type.lower()
        self._stream = kind.startswith(STREAM_CONTENT_TYPES)
        self._ending = b"\n" if "ndjson" in kind else b"\n\n"
        self._tail = b""
        self._marked = False
        self.reached = False

    def feed(self, chunk: bytes) -> bool:
        """Take the next chunk written; whether the end is reached now."""
        if not chunk or self.reached or not self._stream:
            return self.reached
        joined = self._tail + chunk
        if not self._marked and any(word in joined for word in _WORDS):
            self._marked = _LAST.search(joined) is not None
        self.reached = self._marked and joined[-4:].replace(b"\r", b"").endswith(self._ending)
        open_line = joined[joined.rfind(b"\n") + 1 :]
        self._tail = (open_line if len(open_line) <= _CARRIED else b"\0" + open_line[-_CARRIED:]) or joined[
            -4:
        ]  # a line just ended: what ended it, for an event's end split between chunks
        return self.reached
