"""`ping_pong`: two calls alternate, A, B, A, B, ..., and neither result changes.

Tracks the run of calls (not failing checks) that alternate between two distinct call keys where
each call's output equals its previous occurrence; fires when the run reaches a rung of the
ladder (first `after`, default `AFTER`).

Remedy: name both calls and ask for a different step.

Must never fire on: A, B, C, A, B, C (three calls); an alternation whose results change;
failing checks (the failure model's), which break the run. Other calls that fail the same way
each time alternate like any (SWE-agent's `open` of two paths that do not exist, turn after
turn: corpus, gson-1391).
"""

from __future__ import annotations

from dataclasses import dataclass

from proxy.engine.detectors.base import Detector, RemedyContext, Trip, TurnFacts
from proxy.engine.detectors.wording import PREFIX
from proxy.engine.reading.outcome import Outcome
from proxy.settings.kinds import Action, CallKind
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "DETECTOR", "NAME"]

NAME = "ping_pong"
AFTER = 6
"""Calls alternating between two call keys, results unchanged, that trip the pattern."""
OPTIONS = Ladder(after=AFTER, action=Action.NUDGE)


@dataclass(frozen=True, slots=True)
class State:
    last: tuple[tuple[str, str | None, str], ...] = ()
    """The last two calls as (key, output digest, description)."""
    run: int = 0


def fold(state: State, facts: TurnFacts, ladder: Ladder, _policy: Policy) -> tuple[State, list[Trip]]:
    trips: list[Trip] = []
    for call in facts.turn.calls:
        if call.outcome is Outcome.FAIL and call.kind is CallKind.VERIFY:
            state = State()
            continue
        entry = (call.key, call.digest, call.describe())
        last = state.last
        if len(last) == 2 and entry[:2] == last[0][:2] and entry[0] != last[1][0] and state.run >= 2:
            run = state.run + 1
        elif last and entry[0] != last[-1][0]:
            run = 2
        else:
            run = 1
        state = State((*last, entry)[-2:], run)
        action = ladder.action_at(run) if run >= 2 else None
        if action is not None:
            subject = f"{state.last[0][2]} and {state.last[1][2]}"
            detail = f"two calls alternated {run} times with unchanged results"
            trips.append(facts.trip(NAME, action, detail, run, subject=subject))
    return state, trips


def remedy(trip: Trip, context: RemedyContext) -> str:
    return context.fit(
        f"{PREFIX} You are alternating between {trip.subject}, and neither result changes.",
        "",
        "Stop alternating. Neither call will tell you anything new; take a different step.",
    )


DETECTOR = Detector(name=NAME, initial=State(), fold=fold, options=OPTIONS, remedy=remedy)
