"""The API dialects the proxy analyses, each a translation to and from the engine's chat terms.

One module per dialect behind the `protocol.Dialect` interface; `ROUTES` says which path
speaks which. `parse` reads a body once for the engine and keeps what is needed to write
the edited request back in the dialect's own shape; `Planned` is a request with its
decision written in that shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import orjson

from proxy.dialects.anthropic import ANTHROPIC
from proxy.dialects.chat import CHAT
from proxy.dialects.ollama import OLLAMA
from proxy.dialects.prefix import ParseMemory
from proxy.dialects.protocol import Dialect, ReplyWatcher
from proxy.dialects.responses import RESPONSES
from proxy.dialects.spans import SpanMemory
from proxy.dialects.splice import SpliceError, loads_piecewise
from proxy.engine.core import Engine
from proxy.engine.detectors import Refusal
from proxy.engine.plan.decide import Decision
from proxy.engine.plan.reply import Gate
from proxy.engine.text.exchange import Edit, Translation

__all__ = [
    "ANTHROPIC",
    "CHAT",
    "OLLAMA",
    "RESPONSES",
    "ROUTES",
    "Dialect",
    "Incoming",
    "Planned",
    "ReplyWatcher",
    "SpanMemory",
    "parse",
    "plan_offline",
]

ROUTES: Mapping[str, Dialect] = {
    "/v1/chat/completions": CHAT,
    "/v1/responses": RESPONSES,
    "/api/chat": OLLAMA,
    "/v1/messages": ANTHROPIC,
}
"""Analysed routes (POST) and the dialect each speaks; every other path is forwarded untouched."""


@dataclass(frozen=True, slots=True)
class Incoming:
    """A request body read once: its bytes, its JSON and its translation."""

    dialect: Dialect
    body: bytes
    data: dict[str, Any]
    translation: Translation
    in_part: bool = False
    """Read from its conversation's last parse, only what it adds parsed (`prefix.ParseMemory`)."""

    def write(self, edit: Edit | None, memory: SpanMemory | None = None, key: tuple[str, str] = ("", "")) -> bytes:
        """The body to send: the original bytes when nothing is edited."""
        if edit is None:
            return self.body
        return self.dialect.write(self.body, self.data, self.translation, edit, memory, key)


LARGE_BODY = 1024 * 1024
"""Bodies at least this large are parsed piece by piece (see `splice.loads_piecewise`)."""


TRANSCRIPTS = {"chat": "messages", "ollama": "messages", "responses": "input", "anthropic": "messages"}
"""Each dialect's transcript member: a body that repeats the last one of its conversation and adds
to it is read from what the last parse found (`prefix.ParseMemory`)."""


def parse(dialect: Dialect, body: bytes, memory: ParseMemory | None = None) -> Incoming | None:
    """The body as `dialect` reads it; None when it is not JSON or not an analysable transcript.
    With a `memory`, a body that extends one parsed lately is read from its parse (only what it
    adds is parsed), and a body parsed whole is kept for the next."""
    key = TRANSCRIPTS.get(dialect.name)
    data, in_part = (None, False) if memory is None or key is None else memory.read(body, key)
    if data is None:
        try:
            data = loads_piecewise(body) if len(body) >= LARGE_BODY else orjson.loads(body)
        except (orjson.JSONDecodeError, SpliceError):
            return None
        if memory is not None and key is not None and isinstance(data, dict):
            memory.keep(body, data, key)
    translation = dialect.read(data) if isinstance(data, dict) else None
    return None if translation is None else Incoming(dialect, body, data, translation, in_part)


@dataclass(frozen=True, slots=True)
class Planned:
    """A request with the engine's decision applied, in the request's own dialect."""

    incoming: Incoming
    decision: Decision
    body: bytes
    """What goes upstream: the original bytes unless the decision edits the request."""

    @classmethod
    def of(cls, incoming: Incoming, decision: Decision, memory: SpanMemory | None = None) -> Planned:
        key = (decision.request.team, decision.request.conversation)
        return cls(incoming, decision, incoming.write(decision.edit, memory, key))

    @property
    def constrained(self) -> bool:
        """The edit asks for a call schema and the dialect writes it (`unconstrained` has a body to
        send without it)."""
        edit = self.decision.edit
        return edit is not None and edit.call_schema is not None and self.incoming.dialect.structured

    def unconstrained(self) -> bytes | None:
        """The request without the call schema its edit asks for (for a server that refuses
        structured output); None when it asks for none."""
        edit = self.decision.edit
        if edit is None or edit.call_schema is None:
            return None
        return self.incoming.write(replace(edit, call_schema=None))

    def retry(
        self, gate: Gate, attempt: int = 1, constrained: bool = True, refusal: Refusal | None = None, redraw: int = 0
    ) -> bytes:
        """The request a gate sends instead when it holds the reply (written when needed); from
        its second attempt on (from its first, for the block gate: its reply was a call the model
        should not make again), a seed the request pins is moved on by one per attempt, or the
        same body would draw the same reply again; `redraw` moves it further (a reply the server
        could not read, drawn again). Not `constrained`: without the call schema (for a server
        that refused it). `refusal`: why the block gate holds it."""
        edit = self.decision.reply.gates[gate].edit_for(refusal)
        if not constrained:
            edit = replace(edit, call_schema=None)
        seed = self.incoming.data.get("seed")
        moved = (attempt if gate is Gate.BLOCK else attempt - 1) + redraw
        if moved > 0 and isinstance(seed, int) and not isinstance(seed, bool):
            edit = replace(edit, seed=seed + moved)
        return self.incoming.write(edit)


def plan_offline(
    engine: Engine,
    dialect: Dialect,
    body: bytes,
    headers: Mapping[str, str],
    team: str = "default",
    memory: SpanMemory | None = None,
) -> Planned | None:
    """Parse, fold and plan with no verdict store (replay, benchmarks, tests); None: not analysable."""
    incoming = parse(dialect, body, None if memory is None else memory.parses)
    if incoming is None:
        return None
    return Planned.of(incoming, engine.decide(incoming.translation, headers, team), memory)
