"""The one observer: a finished request's record turned into its log lines, its metrics and its
span (`tracing.spans`). The only module of the request's path that logs or counts; what it writes
is what the record says, in the order it happened, then the request's own line:

    Analysed       repair_trip (one a trip)            trips, injected tokens, trip outcomes (by arm)
    Retried        repair_gate (gate_retries),
                   repair_schema_refused, repair_call_unreadable (`Again`)
    GateEnded      repair_gate_refused
    Salvaged       repair_salvage                      salvaged
    HandedBack     repair_handback                     handbacks
    Faulted        its fault's line (`FAULTS`)         its fault's counter, if any
    UpstreamFailed upstream_error                      upstream_errors (when the agent got the error)
    Sent           -                                   tokens (what its reply used)
    the outcome    request (`end`)                     requests, latencies; reply_outcomes (a gate gave up)

A hook that fails here is logged (`observing_failed`) and never reaches the agent.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import structlog

from proxy.dialects import ROUTES
from proxy.engine.plan.decide import Decision
from proxy.http.observe.metrics import Metrics
from proxy.http.observe.outcome import GAVE_UP, Again, Fault, Outcome
from proxy.http.observe.record import (
    Analysed,
    Armed,
    Faulted,
    GateEnded,
    HandedBack,
    Record,
    Retried,
    Salvaged,
    UpstreamFailed,
)
from proxy.http.observe.tracing import spans

if TYPE_CHECKING:
    from proxy.http.observe.otel import Otel

__all__ = ["CLIENT_CLOSED_REQUEST", "FAULTS", "observe"]

log = structlog.get_logger("repair_proxy")

CLIENT_CLOSED_REQUEST = 499
"""The status logged and counted when the agent went away before its response was complete
(nginx's convention): never a 500, since nothing failed on the proxy's side."""
QUIET_PATHS = ("/healthz", "/readyz", "/metrics")
"""Paths whose requests are counted but not logged."""
ROUTE_LABELS = {path: "ollama_chat" if dialect.name == "ollama" else dialect.name for path, dialect in ROUTES.items()}
"""Metric labels of the analysed routes (a fixed set, never raw paths)."""


@dataclass(frozen=True, slots=True)
class Said:
    """How a fault is logged and counted."""

    event: str
    level: str
    """`error` (with the exception's traceback), `warning` or `info`."""
    counter: str | None
    """The `Metrics` counter it bumps (by team), if any."""


FAULTS: Mapping[Fault, Said] = {
    Fault.ANALYSIS_FAILED: Said("analysis_failed", "error", "analysis_failed"),
    Fault.ANALYSIS_ABANDONED: Said("analysis_abandoned", "warning", "analysis_abandoned"),
    Fault.CATCHING_UP: Said("catching_up", "info", None),
    Fault.NOT_ANALYSABLE: Said("not_analysable", "info", None),
    Fault.READ_FAILED: Said("reply_unreadable", "error", None),
    Fault.SALVAGE_FAILED: Said("reply_unreadable", "error", "analysis_failed"),
    Fault.HANDBACK_UNWRITABLE: Said("handback_unwritable", "error", "analysis_failed"),
    Fault.STORE_FAILED: Said("store_error", "error", "store_errors"),
    Fault.STORE_FAILING: Said("store_error", "warning", "store_errors"),
    Fault.USAGE_UNREADABLE: Said("usage_unreadable", "error", None),
    Fault.OBSERVING_FAILED: Said("observing_failed", "error", None),
}


StageEvent = Retried | GateEnded | Salvaged
"""What the reply stage did, beside how it ended."""


def observe(record: Record, status: int, metrics: Metrics, otel: Otel | None = None, log_prompts: bool = False) -> None:
    """The finished request, seen: logged, counted, traced. Never raises."""
    if record.outcome is Outcome.CLIENT_GONE:
        status = CLIENT_CLOSED_REQUEST
    for hook in (_events, _request) if otel is None else (_events, _request, _spans):
        try:
            hook(record, status, metrics, otel, log_prompts)
        except Exception:
            log.exception("observing_failed", hook=hook.__name__)


def _events(record: Record, _status: int, metrics: Metrics, _otel: Otel | None, log_prompts: bool) -> None:
    team, decision = record.team, record.decision
    conversation = None if decision is None else decision.request.conversation
    for event in record.events:
        if isinstance(event, Analysed):
            _trips(event.decision, metrics, log_prompts)
        elif isinstance(event, Armed) and decision is not None:
            for settled in decision.effects.outcomes:  # what followed a watched trip, by arm
                outcome = settled.in_arm(event.arm == "holdout")
                metrics.trip_outcomes.labels(event.arm, settled.pattern, outcome, team).inc()
        elif isinstance(event, StageEvent):
            _stage(event, conversation, metrics, team)
        elif isinstance(event, HandedBack):
            _handback(event, conversation, metrics, team, log_prompts)
        elif isinstance(event, Faulted):
            _fault(event, metrics, team)
        elif isinstance(event, UpstreamFailed):
            log.warning(
                "upstream_error", code=event.outcome.value, cause=event.cause, upstream=event.origin, error=event.error
            )
            if event.answered:
                metrics.upstream_errors.labels(event.outcome.value, event.cause, team).inc()
    if record.outcome in GAVE_UP:
        metrics.reply_outcomes.labels(record.outcome.value, team).inc()


def _stage(
    event: StageEvent,
    conversation: str | None,
    metrics: Metrics,
    team: str,
) -> None:
    """What the reply stage did: asked again (and why), ended a gate, salvaged calls."""
    if isinstance(event, Retried) and event.why is Again.SCHEMA_REFUSED:
        log.warning(event.why.value)
    elif isinstance(event, Retried):
        gate = None if event.gate is None else event.gate.value
        if event.why is Again.GATE:
            log.info(event.why.value, gate=gate, conversation=conversation, attempt=event.attempt)
            metrics.gate_retries.labels(gate, team).inc()
        else:
            log.warning(event.why.value, gate=gate, conversation=conversation)
    elif isinstance(event, GateEnded):
        log.warning("repair_gate_refused", gate=event.gate.value, conversation=conversation)
    else:
        log.info("repair_salvage", conversation=conversation, calls=event.calls)
        metrics.salvaged.labels(event.dialect, team).inc()


def _fault(event: Faulted, metrics: Metrics, team: str) -> None:
    said = FAULTS[event.fault]
    exc_info = {} if event.error is None else {"exc_info": event.error}
    getattr(log, said.level)(said.event, **exc_info, **event.fields)
    if said.counter is not None:
        getattr(metrics, said.counter).labels(team).inc()


def _trips(decision: Decision, metrics: Metrics, log_prompts: bool) -> None:
    """One `repair_trip` line a trip, and the counters."""
    team = decision.request.team
    if decision.effects.injected_tokens:
        metrics.injected_tokens.labels(team).inc(decision.effects.injected_tokens)
    repair = decision.state.repair
    signature = repair.last_diagnostic_signature
    for trip in decision.new_trips:
        metrics.trips.labels(trip.pattern.name, trip.action.value, "shadow" if trip.shadow else "act", team).inc()
        said = [i.text for i in decision.state.injections if i.turn == trip.turn and i.pattern == trip.pattern.name]
        log.info(
            "repair_trip",
            injected=said if log_prompts else None,
            pattern=trip.pattern.name,
            action=trip.action.value,
            shadow=trip.shadow,
            team=team,
            conversation=decision.request.conversation,
            turn=trip.turn,
            count=trip.count,
            streak=repair.same_diagnostic_streak,
            signature=signature[:12] if signature else None,
        )


def _handback(event: HandedBack, conversation: str | None, metrics: Metrics, team: str, log_prompts: bool) -> None:
    hand = event.hand
    metrics.handbacks.labels(hand.reason, team).inc()
    failure = dict(hand.current_failure or {})
    if not log_prompts:
        failure.pop("snippet", None)  # tool output: logged only with logging.log_prompts
    log.info("repair_handback", conversation=conversation, current_failure=failure or None, reason=hand.reason)


def _request(record: Record, status: int, metrics: Metrics, _otel: Otel | None, _log_prompts: bool) -> None:
    """The request's line; requests by route (a fixed set of names, never raw paths), status,
    team and model; latencies; what the replies used."""
    path = record.path.rstrip("/")
    route = ROUTE_LABELS.get(path, "other" if record.path.startswith(("/v1/", "/api/")) else "internal")
    label = metrics.model_label(record.model) if record.operation is not None else "none"
    metrics.requests.labels(route, str(status), record.team, label).inc()
    tokens, _model, _reasons = record.used()
    for kind, count in tokens.items():
        metrics.tokens.labels(kind, label, record.team).inc(count)
    analysed = record.decision is not None
    if record.upstream_ms is not None:
        metrics.upstream_seconds.labels(record.team).observe(record.upstream_ms / 1000)
    if analysed:
        metrics.overhead_seconds.labels(record.team).observe(record.overhead_ms / 1000)
    if record.path in QUIET_PATHS:
        return
    decision = record.decision
    fields: dict[str, Any] = {
        "method": record.method,
        "path": record.path,
        "status": status,
        "upstream_ms": None if record.upstream_ms is None else round(record.upstream_ms, 2),
        "overhead_ms": round(record.overhead_ms, 3),
        "analysis_cpu_ms": round(record.analysis_cpu_ms, 3),
        "read": record.read,
        "total_ms": round((time.perf_counter() - record.started) * 1000, 2),
        "conversation": record.conversation,  # known before the analysis: named when it fails too
        "team": record.team,
        "analysed": analysed,
        "trips": [] if decision is None else list(map(attrgetter("pattern.name"), decision.new_trips)),
        "end": record.outcome.value,
    }
    log.info("request", **fields)


def _spans(record: Record, status: int, _metrics: Metrics, otel: Otel | None, _log_prompts: bool) -> None:
    if otel is not None:
        spans(otel, record, status, time.time_ns())
