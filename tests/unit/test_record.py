"""The request's record and its one observer, with no server: how a request ends (`Outcome`), the
marks an answer carries, and what the observer makes of a finished record (log lines, metrics)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import structlog

from proxy.engine.plan.reply import Gate
from proxy.http.observe.marks import marks
from proxy.http.observe.metrics import Metrics
from proxy.http.observe.observer import FAULTS, observe
from proxy.http.observe.outcome import Again, Fault, Outcome
from proxy.http.observe.record import Analysed, Armed, Faulted, GateEnded, Record, Retried, Salvaged, UpstreamFailed


def test_every_fault_says_how_it_is_logged() -> None:
    assert set(FAULTS) == set(Fault)


@pytest.mark.parametrize(
    ("ends", "outcome"),
    [
        ((), Outcome.COMPLETE),
        ((Outcome.COMPLETE,), Outcome.COMPLETE),
        ((Outcome.NO_ACTION,), Outcome.NO_ACTION),
        ((Outcome.ANALYSIS_FAILED, Outcome.COMPLETE), Outcome.ANALYSIS_FAILED),
        ((Outcome.ANALYSIS_ABANDONED, Outcome.COMPLETE), Outcome.ANALYSIS_ABANDONED),
        ((Outcome.ANALYSIS_FAILED, Outcome.CLIENT_GONE), Outcome.CLIENT_GONE),
        ((Outcome.ANALYSIS_FAILED, Outcome.UPSTREAM_TIMEOUT), Outcome.UPSTREAM_TIMEOUT),
        ((Outcome.COMPLETE, Outcome.UPSTREAM_BROKE), Outcome.UPSTREAM_BROKE),
    ],
    ids=[
        "nothing said: complete",
        "relayed whole",
        "a gate gave up",
        "the analysis failed, the request relayed whole: the failure is how it ended",
        "past the analysis budget, likewise",
        "the analysis failed, then the agent went away: gone",
        "the analysis failed, then the upstream did not answer: its error",
        "a stream broken off after it began",
    ],
)
def test_how_a_request_ends(ends: tuple[Outcome, ...], outcome: Outcome) -> None:
    record = Record("POST", "/v1/chat/completions")
    for end in ends:
        record.end(end)
    assert record.outcome is outcome


def _decided(conversation: str = "c1", trips: tuple[str, ...] = ()) -> Any:
    """A decision as the marks and the observer read it (its conversation and trips)."""
    new_trips = tuple(
        SimpleNamespace(pattern=SimpleNamespace(name=p), action=SimpleNamespace(value="nudge"), turn=1, count=1)
        for p in trips
    )
    state = SimpleNamespace(
        injections=(), repair=SimpleNamespace(last_diagnostic_signature=None, same_diagnostic_streak=0)
    )
    effects = SimpleNamespace(injected_tokens=0, outcomes=())
    request = SimpleNamespace(conversation=conversation, team="default")
    return SimpleNamespace(request=request, new_trips=new_trips, state=state, effects=effects, halt=None, placed=())


def _analysed(*events: Any, trips: tuple[str, ...] = (), outcome: Outcome = Outcome.COMPLETE) -> Record:
    record = Record("POST", "/v1/chat/completions", "chat")
    record.add(Analysed(_decided(trips=trips)))
    for event in events:
        record.add(event)
    record.end(outcome)
    return record


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        (Record("POST", "/v1/chat/completions"), {}),
        (_analysed(Armed("treated")), {"X-Repair-Conversation": "c1", "X-Repair-Arm": "treated"}),
        (
            _analysed(Armed("holdout"), trips=("stuck", "stuck", "loop")),
            {"X-Repair-Conversation": "c1", "X-Repair-Trips": "stuck,loop", "X-Repair-Arm": "holdout"},
        ),
        (
            _analysed(
                Armed("treated"),
                Retried(Again.GATE, Gate.ACTION, 1),
                Retried(Again.SCHEMA_REFUSED, Gate.ACTION),
                Retried(Again.GATE, Gate.ACTION, 2),
                Retried(Again.GATE, Gate.DONE, 1),
                outcome=Outcome.NO_ACTION,
            ),
            {
                "X-Repair-Conversation": "c1",
                "X-Repair-Arm": "treated",
                "X-Repair-Retries": "action:2,done:1",
                "X-Repair-Outcome": "no_action",
            },
        ),
        (
            _analysed(Armed("treated"), Salvaged("chat", 2)),
            {"X-Repair-Conversation": "c1", "X-Repair-Arm": "treated", "X-Repair-Salvaged": "2"},
        ),
        (
            _analysed(Armed("treated"), outcome=Outcome.HANDBACK),
            {"X-Repair-Conversation": "c1", "X-Repair-Arm": "treated", "X-Repair-Outcome": "incomplete"},
        ),
        (
            _analysed(Armed("treated"), outcome=Outcome.UPSTREAM_ERROR),
            {"X-Repair-Conversation": "c1", "X-Repair-Arm": "treated"},
        ),
    ],
    ids=[
        "not analysed: no marks",
        "analysed: its conversation and arm",
        "its trips, each once, in order",
        "each gate's retries (a resend without the schema is none), and the gate that gave up",
        "calls salvaged",
        "handed back: incomplete",
        "an upstream error relayed: no outcome mark",
    ],
)
def test_the_marks_an_answer_carries(record: Record, expected: dict[str, str]) -> None:
    assert marks(record) == expected


def _sample(metrics: Metrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def test_the_observer_logs_and_counts_what_the_record_says() -> None:
    record = _analysed(
        Armed("treated"),
        Retried(Again.GATE, Gate.ACTION, 1),
        GateEnded(Gate.ACTION),
        Faulted(Fault.SALVAGE_FAILED, ValueError("no"), {"dialect": "chat"}),
        UpstreamFailed(Outcome.UPSTREAM_BROKE, "other", "http://up", "reset"),
        outcome=Outcome.NO_ACTION,
    )
    metrics = Metrics()
    with structlog.testing.capture_logs() as logs:
        observe(record, 200, metrics)
    said = [(e["event"], e["log_level"]) for e in logs]
    assert said == [
        ("repair_gate", "info"),
        ("repair_gate_refused", "warning"),
        ("reply_unreadable", "error"),
        ("upstream_error", "warning"),
        ("request", "info"),
    ]
    line = logs[-1]
    assert (line["end"], line["status"], line["analysed"], line["conversation"]) == ("no_action", 200, True, "c1")
    assert _sample(metrics, "repair_proxy_gate_retries_total", gate="action", team="default") == 1
    assert _sample(metrics, "repair_proxy_reply_outcomes_total", outcome="no_action", team="default") == 1
    assert _sample(metrics, "repair_proxy_analysis_failed_total", team="default") == 1
    assert (
        _sample(metrics, "repair_proxy_upstream_errors_total", code="upstream_broke", cause="other", team="default")
        == 0
    )
    labels = {"route": "chat", "status": "200", "team": "default", "model": "none"}
    assert _sample(metrics, "repair_proxy_requests_total", **labels) == 1


def test_an_agent_gone_is_counted_as_499() -> None:
    record = Record("POST", "/v1/chat/completions", "chat")
    record.end(Outcome.CLIENT_GONE)
    metrics = Metrics()
    with structlog.testing.capture_logs() as logs:
        observe(record, 200, metrics)
    assert (logs[-1]["status"], logs[-1]["end"]) == (499, "client_gone")
    labels = {"route": "chat", "status": "499", "team": "default", "model": "none"}
    assert _sample(metrics, "repair_proxy_requests_total", **labels) == 1
