"""`excessive_polling`: a polling tool called over and over instead of one blocking wait.

Polling tools (`loops.poll_tools`, or shell commands classified poll) are exempt from
`repeat_call`, because polling is their job; this counts consecutive calls of one polling
tool and fires far later (first `after`, default `POLL_AFTER`).

Must never fire on: polling below the limit; polls interleaved with other work (any
non-poll call resets the count).
"""

from __future__ import annotations

from dataclasses import dataclass

from proxy.detectors.calls import describe, is_poll
from proxy.detectors.types import Trip, TurnFacts
from proxy.policy import Policy

__all__ = ["EPISODIC", "INITIAL", "NAME", "State", "fold"]

NAME = "excessive_polling"
EPISODIC = True


@dataclass(frozen=True, slots=True)
class State:
    tool: str = ""
    count: int = 0


INITIAL = State()


def fold(state: State, facts: TurnFacts, policy: Policy) -> tuple[State, list[Trip]]:
    trips: list[Trip] = []
    for call in facts.turn.calls:
        if not is_poll(call, policy):
            state = INITIAL
            continue
        state = State(call.call.name, state.count + 1 if call.call.name == state.tool else 1)
        action = policy.patterns.excessive_polling.action_at(state.count)
        if action is not None:
            detail = f"{call.call.name} polled {state.count} times in a row"
            trips.append(
                facts.trip(
                    NAME,
                    action,
                    detail,
                    state.count,
                    subject=describe(call),
                    tool=call.call.name,
                )
            )
    return state, trips
