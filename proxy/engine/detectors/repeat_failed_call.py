"""`repeat_failed_call`: the same call fails with the same error, again and again.

Counts consecutive failures of one canonical call (tool plus sorted-key arguments) whose
error is the same (the signature of its normalised output); fires when the count reaches a
rung of the ladder (first `after`, default `AFTER`). Covers what the failure model does not
own: a call the tool rejected (a missing or invalid argument), an edit that does not apply,
a read of a file that is not there. Runs only with the failure model on (with it off, the
legacy `repeated_error` counts every repeated failure).

Remedy: quote the error and name the argument to change: one the error mentions, else a
required one the call left out. Never worded as a success.

Must never fire on: a failing check whose failure is the failure model's (a test run failing
the same way is `stuck_same_diagnostic`); a failing call whose error changes; the same call
with a successful call between its failures; different calls failing alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from proxy.engine.detectors.base import Detector, RemedyContext, Trip, TurnFacts
from proxy.engine.detectors.calls import excerpt
from proxy.engine.detectors.wording import PREFIX
from proxy.engine.reading.evidence import evidence
from proxy.engine.reading.outcome import Outcome
from proxy.engine.state.failure import is_check
from proxy.settings.kinds import Action
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "DETECTOR", "NAME"]

NAME = "repeat_failed_call"
AFTER = 3
"""The same call failing with the same error this many times in a row trips the pattern."""
OPTIONS = Ladder(after=AFTER, action=Action.NUDGE)


@dataclass(frozen=True, slots=True)
class State:
    key: str = ""
    error: str = ""
    count: int = 0


def fold(state: State, facts: TurnFacts, ladder: Ladder, _policy: Policy) -> tuple[State, list[Trip]]:
    if not facts.failure_model:
        return State(), []
    trips: list[Trip] = []
    for call in facts.turn.calls:
        owned = call.probe or is_check(call)  # a probe that fails again is the failure model's
        if call.outcome is not Outcome.FAIL or owned:
            state = State()
            continue
        error = evidence(call.result).signature
        same = call.key == state.key and error == state.error
        state = State(call.key, error, state.count + 1 if same else 1)
        action = ladder.action_at(state.count)
        if action is not None:
            detail = f"the same call failed with the same error {state.count} times in a row"
            names = tuple(call.call.arguments or ())
            quote = excerpt(call.result)
            tool = call.call.name
            trips.append(
                facts.trip(
                    NAME,
                    action,
                    detail,
                    state.count,
                    subject=call.describe(),
                    excerpt=quote,
                    tool=tool,
                    arguments=names,
                )
            )
    return state, trips


def _named(argument: str, error: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(argument.lower())}(?![\w-])", error) is not None


def _change(trip: Trip, context: RemedyContext) -> str:
    """What to change: a required argument the call left out (one the error names first), else
    an argument the error names, else its arguments at large."""
    error = trip.excerpt.lower()
    tool = context.offered.get(trip.tool)
    missing = sorted(tool.required - set(trip.arguments)) if tool is not None else []
    missing.sort(key=lambda a: not _named(a, error))
    if missing:
        return f"Add the required argument `{missing[0]}`."
    mentioned = [a for a in trip.arguments if _named(a, error)]
    if mentioned:
        return f"Change `{mentioned[-1]}`: the error is about it."
    return "Change its arguments, or take a different step."


def remedy(trip: Trip, context: RemedyContext) -> str:
    return context.fit(
        f"{PREFIX} This call has failed {trip.count} times in a row with the same error: {trip.subject}",
        trip.excerpt,
        f"Sending it again unchanged will fail the same way. {_change(trip, context)}",
    )


DETECTOR = Detector(name=NAME, initial=State(), fold=fold, options=OPTIONS, remedy=remedy)
