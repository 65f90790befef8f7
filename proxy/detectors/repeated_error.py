"""`repeated_error` (legacy): the same failing call returns the same output again.

The blind counter the current-failure model replaces: it keys on (tool, arguments, output)
and cannot tell a thrash from edit-and-retest progress. It runs only when the policy turns
the failure model off; while the model is on, `stuck_same_diagnostic` owns repeated
failures and this pattern stays silent (suppressed, not double-fired).

Must never fire on: a failing call whose output changes; any turn while the failure
model is on.
"""

from __future__ import annotations

import hashlib

from proxy.classify import Outcome
from proxy.detectors.types import Trip, TurnFacts
from proxy.policy import Policy

__all__ = ["EPISODIC", "INITIAL", "NAME", "fold"]

NAME = "repeated_error"
EPISODIC = False
"""Failures are not reset by user messages."""
INITIAL: tuple[str, int] = ("", 0)


def fold(state: tuple[str, int], facts: TurnFacts, policy: Policy) -> tuple[tuple[str, int], list[Trip]]:
    failing = [c for c in facts.turn.calls if c.outcome is Outcome.FAIL]
    if not failing:
        return state, []
    first = failing[0]
    key = hashlib.sha256(
        "\x00".join((first.call.name, first.call.raw_arguments, first.result)).encode("utf-8", "replace")
    ).hexdigest()
    count = state[1] + 1 if key == state[0] else 1
    if facts.failure_model:
        return (key, count), []
    action = policy.patterns.repeated_error.action_at(count)
    if action is None:
        return (key, count), []
    detail = f"the same failing call returned the same output {count} times"
    return (key, count), [facts.trip(NAME, action, detail, count)]
