"""`reverify_owed`: successful edits landed on a live failure and the check was not re-run.

Counts consecutive edit turns that leave a re-verify owed; fires when that count reaches
a rung of the ladder (first `after`, default `REVERIFY_OWED_AFTER`). Resets once the check
is run again.

Must never fire on: edits with no live failure; an edit followed by the re-run in the
same turn; anything while `post_edit_reverify` is off.
"""

from __future__ import annotations

from proxy.detectors.types import Trip, TurnFacts
from proxy.policy import Policy

__all__ = ["EPISODIC", "INITIAL", "NAME", "fold"]

NAME = "reverify_owed"
EPISODIC = False
"""The current-failure model never resets on user messages."""
INITIAL = 0


def fold(state: int, facts: TurnFacts, policy: Policy) -> tuple[int, list[Trip]]:
    if not facts.failure_model or not facts.after.reverify_owed:
        return 0, []
    edited = any(c.succeeded_mutation for c in facts.turn.calls)
    if not edited:
        return state, []
    count = state + 1
    action = policy.patterns.reverify_owed.action_at(count)
    if action is None:
        return count, []
    detail = f"{count} edit turn(s) on a live failure without re-running the failing check"
    return count, [facts.trip(NAME, action, detail, count)]
