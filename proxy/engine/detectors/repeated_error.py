"""`repeated_error` (legacy): the same failing call returns the same output again.

The blind counter the current-failure model replaces: it keys on (tool, arguments, output)
and cannot tell a thrash from edit-and-retest progress. It runs only when the policy turns
the failure model off; while the model is on, the same-failure streak owns repeated
failures and this pattern stays silent (suppressed, not double-fired).

Must never fire on: a failing call whose output changes; any turn while the failure
model is on.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from proxy.engine.detectors.base import Detector, Trip, TurnFacts
from proxy.engine.outputs.outcome import Outcome
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.wording import PREFIX
from proxy.settings.kinds import Action
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "DETECTOR", "NAME"]

NAME = "repeated_error"
AFTER = 3
"""Identical failing call and output in a row (only with the failure model off)."""
OPTIONS = Ladder(after=AFTER, action=Action.NUDGE)


@dataclass(frozen=True, slots=True)
class State:
    key: str = ""
    count: int = 0


def fold(state: State, facts: TurnFacts, ladder: Ladder, _policy: Policy) -> tuple[State, list[Trip]]:
    failing = [c for c in facts.turn.calls if c.outcome is Outcome.FAIL]
    if not failing:
        return state, []
    first = failing[0]
    key = hashlib.sha256(
        "\x00".join((first.call.name, first.call.raw_arguments, first.result)).encode("utf-8", "replace")
    ).hexdigest()
    state = State(key, state.count + 1 if key == state.key else 1)
    if facts.failure_model:
        return state, []
    action = ladder.action_at(state.count)
    if action is None:
        return state, []
    detail = f"the same failing call returned the same output {state.count} times"
    return state, [facts.trip(DETECTOR, action, detail, state.count)]


def remedy(trip: Trip, context: RemedyContext) -> str:
    head = f"{PREFIX} The same call failed the same way {trip.count} times in a row."
    tail = "Do not send that call again unchanged; change the call or the code it checks first."
    return context.fit(head, "", tail)


DETECTOR = Detector(
    name=NAME,
    initial=State(),
    fold=fold,
    options=OPTIONS,
    remedy=remedy,
    episodic=False,  # failures are not reset by user messages
)
