"""A trip carries the pattern that made it, the registered detector itself: the engine calls its
hooks through it; a pickled state (the shared states, the packed cache) carries only its name and
reads back the same object; what operators see (the log lines, the metrics, the trips header)
names it as before."""

from __future__ import annotations

import copy
import pickle
from dataclasses import replace
from functools import cache

import pytest
import structlog
from chat import stuck_requests
from scenario_loader import acting, analyse, engine, load, names

from proxy.engine.detectors import REGISTRY, pattern_of, registered
from proxy.engine.state.codec import pack, unpack
from proxy.engine.state.conversation import ConversationState
from proxy.http.observe.marks import marks
from proxy.http.observe.metrics import Metrics
from proxy.http.observe.observer import observe
from proxy.http.observe.outcome import Outcome
from proxy.http.observe.record import Analysed, Record

STUCK = "stuck_same_diagnostic"
BYTES_PER_TRIP = 10
"""What a trip may add to a pickled state over one naming its pattern by a string. Measured at
the change on the 50 scenario states with trips (98 trips, 276 KB pickled): 387 bytes more in
all, at most 9 a trip: 6 for each pattern the trips name (its first trip; the others refer back
to it), and 3 where the pattern's memo entry pushes a later back-reference past index 255."""


@cache
def tripped_states() -> dict[str, ConversationState]:
    """Each scenario's state after its last request, where it holds trips."""
    out = {}
    for name in names():
        scenario = load(name)
        eng, state = engine(scenario.policy), None
        for body in scenario.requests():
            planned = analyse(eng, body)
            state = planned.decision.state if planned is not None else state
        if state is not None and state.trips:
            out[name] = state
    return out


def test_the_scenarios_give_states_with_trips_of_most_patterns() -> None:
    tripped = {t.pattern for state in tripped_states().values() for t in state.trips}
    assert len(tripped_states()) >= 40
    assert len(tripped) >= len(REGISTRY) - 2, sorted(p.name for p in tripped)


def test_a_trip_carries_the_registered_detector() -> None:
    for state in tripped_states().values():
        for trip in state.trips:
            assert trip.pattern is registered(trip.pattern.name) is pattern_of(trip)
            assert any(trip.pattern is p for p in REGISTRY)


@pytest.mark.parametrize("how", ["codec", "pickle", "deepcopy"])
def test_a_state_with_trips_comes_back_with_the_same_pattern_objects(how: str) -> None:
    back = {
        "codec": lambda s: unpack(pack(s)),
        "pickle": lambda s: pickle.loads(pickle.dumps(s, pickle.HIGHEST_PROTOCOL)),
        "deepcopy": copy.deepcopy,
    }[how]
    for name, state in tripped_states().items():
        read = back(state)
        assert read == state, name
        assert all(a.pattern is b.pattern for a, b in zip(read.trips, state.trips, strict=True)), name


def test_a_pickled_trip_carries_its_patterns_name_and_no_more() -> None:
    """Against the same state with each trip's pattern a string (as before the object): at most
    `BYTES_PER_TRIP` more a trip, and nothing of the detector but its name in the bytes."""
    for name, state in tripped_states().items():
        packed = pack(state)
        as_named = replace(state, trips=tuple(replace(t, pattern=t.pattern.name) for t in state.trips))
        assert len(packed) - len(pack(as_named)) <= BYTES_PER_TRIP * len(state.trips), name
        assert not [w for w in (b"detectors.base", b"registered", b"remedy") if w in packed], name


def test_what_operators_see_names_each_trip_as_before() -> None:
    """The request line's trips, the `repair_trip` line, the trips counter's label and the
    X-Repair-Trips header: the pattern's name, as they always were."""
    eng = engine(acting(STUCK))
    decisions = [p.decision for body in stuck_requests() if (p := analyse(eng, body)) is not None]
    decision = next(d for d in decisions if d.new_trips)
    record = Record("POST", "/v1/chat/completions", "chat")
    record.add(Analysed(decision))
    record.end(Outcome.COMPLETE)
    metrics = Metrics()
    with structlog.testing.capture_logs() as logs:
        observe(record, 200, metrics)
    action = decision.new_trips[0].action.value
    assert [e["pattern"] for e in logs if e["event"] == "repair_trip"] == [STUCK]
    assert next(e for e in logs if e["event"] == "request")["trips"] == [STUCK]
    labels = {"pattern": STUCK, "action": action, "mode": "act", "team": "default"}
    assert metrics.registry.get_sample_value("repair_proxy_trips_total", labels) == 1
    assert marks(record)["X-Repair-Trips"] == STUCK
