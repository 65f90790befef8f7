"""State is a function of the transcript: workers or replicas that each see only some of a
conversation's requests decide every request as one that saw them all."""

from __future__ import annotations

import pytest
from chat import Chat, edit, test_run, view
from scenario_loader import acting, analyse, engine, load, names

from proxy.dialects import Planned


def decisions(requests: list[bytes], engines: int, scenario_policy: object) -> list[Planned]:
    """Each request planned by engine `i % engines`, each engine with its own state cache."""
    pool = [engine(scenario_policy) for _ in range(engines)]  # type: ignore[arg-type]
    planned = []
    for i, body in enumerate(requests):
        result = analyse(pool[i % len(pool)], body)
        assert result is not None
        planned.append(result)
    return planned


@pytest.mark.parametrize("name", names())
@pytest.mark.parametrize("engines", [2, 3])
def test_a_conversation_spread_over_engines_is_decided_as_by_one(name: str, engines: int) -> None:
    """Same bytes upstream and same hand-backs, whichever engine saw which request. Each trip is
    reported on the request that follows its turn; an engine that first meets the conversation
    on a request that brings no new turn (a person's message after it) cannot know that request
    was made, and reports the latest turn's trips again: at least once, never lost."""
    scenario = load(name)
    requests = scenario.requests_with_turns()
    one = decisions([body for body, _ in requests], 1, scenario.policy)
    spread = decisions([body for body, _ in requests], engines, scenario.policy)
    for alone, shared, (_body, turns) in zip(one, spread, requests, strict=True):
        assert shared.body == alone.body
        assert (shared.decision.halt is None) == (alone.decision.halt is None)
        reported = [(t.pattern.name, t.turn) for t in shared.decision.new_trips]
        if turns:
            assert reported == [(t.pattern.name, t.turn) for t in alone.decision.new_trips]
            assert shared.decision.effects == alone.decision.effects


def test_a_cold_fold_reports_only_the_latest_turns_trips_and_quotes_each_as_it_stood() -> None:
    """An engine that sees a stuck conversation for the first time, two turns after the trip,
    reports no new trip, and places the remedy written at the trip's turn (its streak then)."""
    chat = Chat().turn(test_run()).turn(edit()).turn(test_run()).turn(edit("a + b", "a + b + 0")).turn(test_run())
    bodies = [chat.bytes(), chat.turn(test_run()).bytes(), chat.turn(view()).bytes()]  # streak 3, then 4
    warm = engine(acting("stuck_same_diagnostic"))
    for body in bodies:
        first = analyse(warm, body)
    cold = analyse(engine(acting("stuck_same_diagnostic")), bodies[-1])
    assert first is not None and cold is not None
    assert cold.decision.new_trips == ()
    assert cold.body == first.body
    assert b"came back 3 times" in cold.body
    assert b"came back 4 times" not in cold.body
