"""`repeat_call`: the same call succeeds again and again.

The call is compared canonically (tool name plus sorted-key arguments, volatile ids
dropped), so reordered keys do not evade it. Counts successful calls in a row, parallel
calls in one message included; fires when the count reaches a rung of the ladder (first
`after`, default `REPEAT_CALL_AFTER`).

Must never fire on: read, write, read (any distinct call between resets the count); calls
with varied arguments; failing calls (they belong to the failure model and neither count
nor reset); polling tools (exempt, see `excessive_polling`).
"""

from __future__ import annotations

from dataclasses import dataclass

from proxy.classify import Outcome
from proxy.detectors.calls import describe, excerpt, is_poll
from proxy.detectors.types import Trip, TurnFacts
from proxy.policy import Policy

__all__ = ["EPISODIC", "INITIAL", "NAME", "State", "fold"]

NAME = "repeat_call"
EPISODIC = True
"""A person's new message starts a new count."""


@dataclass(frozen=True, slots=True)
class State:
    key: str = ""
    count: int = 0


INITIAL = State()


def fold(state: State, facts: TurnFacts, policy: Policy) -> tuple[State, list[Trip]]:
    trips: list[Trip] = []
    for call in facts.turn.calls:
        if is_poll(call, policy):
            state = State(call.key, 0)
            continue
        if call.outcome is Outcome.FAIL:
            continue
        state = State(call.key, state.count + 1 if call.key == state.key else 1)
        action = policy.patterns.repeat_call.action_at(state.count)
        if action is not None:
            detail = f"the same call succeeded {state.count} times in a row"
            trips.append(
                facts.trip(
                    NAME,
                    action,
                    detail,
                    state.count,
                    subject=describe(call),
                    tool=call.call.name,
                    excerpt=excerpt(call.result),
                )
            )
    return state, trips
