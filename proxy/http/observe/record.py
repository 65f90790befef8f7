"""One request as it went: the one enum of how a request ends (`Outcome`), and the typed record
(`Record`) the request's steps add events to as they go.

    the pipeline      the refusal, whose conversation it is (`Identified`), the analysis
                      (`Analysed`, `Armed`), each step of it that held the event loop (`Held`:
                      `runtime.stalls` names the one a stall came from), its faults, the store's
    the reply stage   each retry (`Retried`, `SchemaRefused`, `Redrawn`), a gate ended by the
                      upstream (`GateEnded`), a salvage, a hand-back, how it ended
    the upstream      each request sent (`Sent`, with what its reply used), each failure
    the observer      the finished record: the log lines, the metrics, the span and its
                      events (`observer.py`, `tracing.py`); the `X-Repair-*` marks (`marks.py`)

No step logs, counts or traces: it says what happened, here, in types (structlog's processor
chain is the model: a record carried, turned into output by one observer at the end).
"""

from __future__ import annotations

import contextvars
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from proxy.engine.plan.decide import Decision
from proxy.engine.plan.handback import Handback
from proxy.engine.plan.reply import Gate
from proxy.http.observe.outcome import KEPT, Again, Fault, Outcome
from proxy.http.observe.usage import Usage, UsageReader

__all__ = [
    "CURRENT",
    "Analysed",
    "Armed",
    "Event",
    "Faulted",
    "GateEnded",
    "HandedBack",
    "Held",
    "Identified",
    "Record",
    "Retried",
    "Salvaged",
    "Sent",
    "UpstreamFailed",
    "requested_model",
]


@dataclass(frozen=True, slots=True)
class Faulted:
    fault: Fault
    error: BaseException | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)
    """What the log line says beside it (dialect, path, conversation, the store's error)."""


@dataclass(frozen=True, slots=True)
class Analysed:
    """The analysis's decision: its trips, the instructions it placed, what it costs."""

    decision: Decision
    at: int = field(default_factory=time.time_ns, compare=False)


@dataclass(frozen=True, slots=True)
class Identified:
    """Whose conversation the request is, known once it is read, before it is folded (an analysis
    that fails, is given up or holds the event loop is named by it)."""

    conversation: str


@dataclass(frozen=True, slots=True)
class Held:
    """A synchronous step of the analysis (`step`: `analysis`, `analysis (parse)`, `analysis (plan)`)
    ran on the event loop for `seconds`: nothing else of the worker ran meanwhile. `conversation`:
    whose it was, as known once the step was over."""

    step: str
    seconds: float
    conversation: str | None = None


@dataclass(frozen=True, slots=True)
class Armed:
    """The arm the conversation is in: `treated`, or `holdout` (sent as it came)."""

    arm: str


@dataclass(frozen=True, slots=True)
class Retried:
    """The upstream is asked again, as `why` says: through `gate` (its `attempt`-th retry), or
    the same request again (without the call schema refused, or drawn again)."""

    why: Again
    gate: Gate | None = None
    attempt: int = 0
    at: int = field(default_factory=time.time_ns, compare=False)


@dataclass(frozen=True, slots=True)
class GateEnded:
    """The upstream refused or failed our retry: its gate ends with the first reply."""

    gate: Gate


@dataclass(frozen=True, slots=True)
class Salvaged:
    """The reply wrote `calls` tool calls as text; they went to the agent as real calls, in its
    `dialect`."""

    dialect: str
    calls: int


@dataclass(frozen=True, slots=True)
class HandedBack:
    """The agent got the hand-back instead of a reply: why the run stopped (`hand.reason`, the
    pattern that halted it) and what is still failing."""

    hand: Handback


@dataclass(frozen=True, slots=True)
class UpstreamFailed:
    """The upstream could not be reached, went silent or broke off (`network.UpstreamFailure`)."""

    outcome: Outcome
    cause: str
    origin: str
    error: str
    answered: bool = False
    """The proxy answered the agent with the error (counted in `repair_proxy_upstream_errors`)."""


@dataclass(slots=True)
class Sent:
    """One request sent upstream for the agent's request, filled in as its reply passes."""

    method: str
    host: str
    port: int | None
    started: int = field(default_factory=time.time_ns)
    ended: int | None = None
    status: int | None = None
    error: str | None = None
    """The exception's type, when it failed."""
    reader: UsageReader | None = None
    usage: Usage | None = None

    def finish(self) -> None:
        """Its reply is in, cut short, or failed: what it used is read as far as it came."""
        if self.ended is None:
            self.ended = time.time_ns()
            self.usage = None if self.reader is None else self.reader.usage()


Event = (
    Identified | Analysed | Held | Armed | Retried | GateEnded | Salvaged | HandedBack | Faulted | UpstreamFailed | Sent
)


@dataclass(slots=True)
class Record:
    """What one request did, in order; filled in as it goes, observed once it is over."""

    method: str
    path: str
    operation: str | None = None
    """The GenAI operation its route is (`chat`, `embeddings`...); None: plain HTTP."""
    carrier: Mapping[str, str] = field(default_factory=dict)
    """The agent's trace context (`traceparent`, `tracestate`)."""
    started: float = field(default_factory=time.perf_counter)
    started_ns: int = field(default_factory=time.time_ns)
    team: str = "default"
    upstream: str | None = None
    """The team's upstream base URL."""
    model: str | None = None
    """The model the request names (model routes only)."""
    outcome: Outcome = Outcome.COMPLETE
    upstream_ms: float | None = None
    read_at: float | None = None
    """When the body was in (`time.perf_counter`)."""
    sent_at: float | None = None
    """When the request first went upstream (its retries are the upstream's time)."""
    analysis_cpu_ms: float = 0.0
    """CPU time the analysis's steps took, each in its own thread, the collector's left out."""
    read: Literal["whole", "in part"] | None = None
    """How the analysis read the body: `whole`, or `in part` (from its conversation's last parse,
    only what it adds parsed); None: not read."""
    delivered: int | None = None
    """The reply's status once the agent has it whole (its stream's last event, or its whole body,
    written: `upstream.ends`). An agent that leaves after that did not leave early (not `client_gone`)."""
    events: list[Event] = field(default_factory=list)

    def add(self, event: Event) -> None:
        self.events.append(event)

    @property
    def overhead_ms(self) -> float:
        """The wall time the proxy added: from the body being in to the request going upstream (or,
        answered by the proxy itself, to now), whatever the request waited for meanwhile: its
        analysis, a worker thread, the verdict store, the event loop, the cores. 0 before the body
        was in (refused)."""
        if self.read_at is None:
            return 0.0
        until = time.perf_counter() if self.sent_at is None else self.sent_at
        return (until - self.read_at) * 1000

    def end(self, outcome: Outcome) -> None:
        """How the request ended; a complete relay keeps why it went up untouched (`KEPT`)."""
        if not (outcome is Outcome.COMPLETE and self.outcome in KEPT):
            self.outcome = outcome

    def failed(self, event: UpstreamFailed) -> None:
        self.add(event)
        self.end(event.outcome)

    @property
    def decision(self) -> Decision | None:
        for event in self.events:
            if isinstance(event, Analysed):
                return event.decision
        return None

    @property
    def arm(self) -> str | None:
        for event in self.events:
            if isinstance(event, Armed):
                return event.arm
        return None

    @property
    def conversation(self) -> str | None:
        """The decision's conversation; before there is one (or with none: the analysis failed or
        was given up), the one the request was read as (`Identified`)."""
        decision = self.decision
        if decision is not None:
            return decision.request.conversation
        for event in self.events:
            if isinstance(event, Identified):
                return event.conversation
        return None

    def used(self) -> tuple[dict[str, int], str | None, tuple[str, ...]]:
        """What the replies said they used, every request sent counted: tokens by kind (input,
        output), the model that answered last, why the last one that said so stopped."""
        tokens: dict[str, int] = {}
        model: str | None = None
        reasons: tuple[str, ...] = ()
        for sent in self.events:
            if not isinstance(sent, Sent):
                continue
            sent.finish()  # cut short (a stream released or stopped): counted as far as it was read
            if sent.usage is None:
                continue
            for kind, count in (("input", sent.usage.input_tokens), ("output", sent.usage.output_tokens)):
                if count is not None:
                    tokens[kind] = tokens.get(kind, 0) + count
            model, reasons = sent.usage.model or model, sent.usage.finish_reasons or reasons
        return tokens, model, reasons


CURRENT: contextvars.ContextVar[Record | None] = contextvars.ContextVar("repair_proxy_record", default=None)
"""The record of the request whose handler's task this is (`attempts.upstream_trace` finds it)."""

MODEL_BODY_LIMIT = 1024 * 1024
"""An unanalysed body is read for its `model` only up to this size."""
_MODEL = re.compile(rb'"model"\s*:\s*"([\w.:/@+-]{0,200})"')
"""A `"model": "name"` member. Inside a string (a message's text) its quotes are escaped, so a
match is a key; where there is more than one (a nested object's), the body is parsed instead."""


def requested_model(body: bytes) -> str | None:
    """The model an unanalysed body names (an analysed one's is its translation's)."""
    if len(body) > MODEL_BODY_LIMIT or not body.lstrip().startswith(b"{"):
        return None
    found = _MODEL.findall(body)
    if len(found) == 1:  # one place names a model: no parse of the whole body for it
        return found[0].decode() if found[0] else None
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    model = data.get("model") if isinstance(data, dict) else None
    return model if isinstance(model, str) and model else None
