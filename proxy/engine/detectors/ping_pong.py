"""`ping_pong`: a short cycle of calls going round, A, B, A, B, ... or A, B, C, A, B, C, ..., and
no result changes.

Tracks the stretch of calls that repeats with a period of two to four distinct calls, each call's
output equal to its previous occurrence; counts the cycles gone round and fires when the count
reaches a rung of the ladder (first `after`, default `AFTER`: three times round), then again at
each later rung (`RESTRICT_AT`: the cycle's tool taken away for one request, where it has one and
it is not the agent's only tool). A cycle of one call is `repeat_call`'s. Never a hand-back by
default: on the corpus a run that went round a cycle of two reads six times was then resolved
(coder, django-11039).

Remedy: name the calls of the cycle and ask for a different step.

Must never fire on: A, B, C, D, E (no call comes back); a cycle whose results change (the agent
is watching something move); failing checks (the failure model's), which break the stretch; a
cycle broken by another call. Other calls that fail the same way each time go round like any
(SWE-agent's `open` of two paths that do not exist, turn after turn: corpus, gson-1391).
"""

from __future__ import annotations

from dataclasses import dataclass

from proxy.engine.detectors.base import Detector, RemedyContext, Trip, TurnFacts
from proxy.engine.detectors.wording import PREFIX
from proxy.engine.reading.outcome import Outcome
from proxy.settings.kinds import Action, CallKind, Mode
from proxy.settings.policy import Ladder, Policy, Rung

__all__ = ["AFTER", "DETECTOR", "NAME", "RESTRICT_AT"]

NAME = "ping_pong"
AFTER = 3
"""Times round a cycle of two to four calls, results unchanged, that trip the pattern (A,B six calls)."""
RESTRICT_AT = 5
"""Times round at which the cycle's tool is taken away for one request: told at three, it kept going."""
MODE = Mode.SHADOW
"""Shadow by default: it trips, logs and counts, and says nothing (no trip on the test part: not shown
right on agents its rule was not written against). A policy's `mode = "act"` switches it on."""
OPTIONS = Ladder(after=AFTER, action=Action.NUDGE, escalate=(Rung(at=RESTRICT_AT, action=Action.RESTRICT),), mode=MODE)
PERIODS = (2, 3, 4)
_KEPT = 8

Entry = tuple[str, str | None, str]
"""A call as (key, output digest, description)."""


@dataclass(frozen=True, slots=True)
class State:
    last: tuple[Entry, ...] = ()
    """The latest calls, oldest first (at most `_KEPT`)."""
    period: int = 0
    """The cycle's length; 0: no cycle going."""
    run: int = 0
    """Calls of the stretch that repeats with that period."""


def _cycle(last: tuple[Entry, ...]) -> int:
    """The shortest period (two to four) with which the newest call closes a cycle of distinct
    calls, its output as when it was last made; 0: none."""
    newest = last[-1]
    for period in PERIODS:
        if len(last) > period and last[-1 - period][:2] == newest[:2]:
            keys = {entry[0] for entry in last[-period:]}
            if len(keys) == period:
                return period
    return 0


def fold(state: State, facts: TurnFacts, ladder: Ladder, _policy: Policy) -> tuple[State, list[Trip]]:
    trips: list[Trip] = []
    for call in facts.turn.calls:
        if call.outcome is Outcome.FAIL and call.kind is CallKind.VERIFY:
            state = State()
            continue
        last = (*state.last, (call.key, call.digest, call.describe()))[-_KEPT:]
        period = state.period
        if period and len(last) > period and last[-1 - period][:2] == last[-1][:2]:
            run = state.run + 1
        else:
            period = _cycle(last)
            run = period + 1 if period else 0
        state = State(last, period, run)
        if not period or run % period:
            continue
        action = ladder.action_at(run // period)
        if action is not None:
            subject = " and ".join(entry[2] for entry in last[-period:])
            tools = {entry[0].split("\x00", 1)[0] for entry in last[-period:]}
            detail = f"a cycle of {period} calls went round {run // period} times with unchanged results"
            tool = next(iter(tools)) if len(tools) == 1 else ""
            trips.append(
                facts.trip(NAME, action, detail, run // period, subject=subject, tool=tool, since=_began(facts, run))
            )
    return state, trips


def _began(facts: TurnFacts, run: int) -> int:
    """The turn the stretch began on, counting one call a turn (what most agents make)."""
    return max(1, facts.turn.ordinal - run + 1)


def remedy(trip: Trip, context: RemedyContext) -> str:
    return context.fit(
        f"{PREFIX} You are going round in a cycle: {trip.subject}, again and again, and no result changes.",
        "",
        "Stop the cycle. None of these calls will tell you anything new; take a different step.",
    )


DETECTOR = Detector(name=NAME, initial=State(), fold=fold, options=OPTIONS, remedy=remedy)
