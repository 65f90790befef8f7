"""`stuck_same_diagnostic`: the same failure keeps coming back, edits or not.

Fires when the same-signature streak *advances* to a rung of the pattern's ladder (first
`after`, default `STUCK_SAME_DIAGNOSTIC_AFTER`), so once per stuck episode and per rung,
on the request that carries that failure.

Must never fire on: edit, different error, edit, different error (progress resets the
streak to 1); a streak held at the threshold by an edit-only turn (it did not advance).
"""

from __future__ import annotations

from proxy.detectors.types import Trip, TurnFacts
from proxy.policy import Policy

__all__ = ["EPISODIC", "INITIAL", "NAME", "fold"]

NAME = "stuck_same_diagnostic"
EPISODIC = False
"""The current-failure model never resets on user messages."""
INITIAL = None


def fold(state: None, facts: TurnFacts, policy: Policy) -> tuple[None, list[Trip]]:
    before, after = facts.before.same_diagnostic_streak, facts.after.same_diagnostic_streak
    if not facts.failure_model or after <= before:
        return state, []
    action = policy.patterns.stuck_same_diagnostic.action_at(after)
    if action is None:
        return state, []
    detail = (
        f"the same failure came back {after} times in a row; "
        f"{facts.after.edits_on_failure} edit(s) since it appeared did not change it"
    )
    return state, [facts.trip(NAME, action, detail, after)]
