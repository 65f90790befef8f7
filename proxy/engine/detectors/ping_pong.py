"""`ping_pong`: the agent goes round a cycle of calls, and every result comes back as before.

Reads the run's progress (`state.progress`: each call as an action and its result, normalised).
The newest calls form a cycle of period `p` (two to `MAX_PERIOD` calls) when each of them is the
very call made `p` calls before, with the same result: A, B, A, B, ... or a longer round such as
open, edit, test, open, edit, test, ... in which a call may come twice (A, B, A, C, A, B, A, C).
The shortest such period is the cycle's, and a round of one call is `repeat_call`'s. The count is
the calls that repeated the round so far; the cycle is sure once `after` of them did (default
`AFTER`) and a whole round came back, and its count then climbs one a call. Like every loop
pattern it waits for the agent's next call to go round again before it speaks (`confirm`), then
climbs its ladder: the tool taken away (`RESTRICT_AT`, where the round has one tool and it is not
the agent's only tool; otherwise the next rung, here none: the instruction again). Never a
hand-back by default: on the corpus a run that went round a two-call cycle of rejected edits six
times was then resolved (tune, coder django-11039).

Remedy: the calls of the round quoted (shortened to the budget first, never the instruction), and
a different step asked for.

Must never fire on: A, B, C, D, E (no call comes back); a round whose results change (the agent is
watching something move, or its edits change what its check prints); calls that come back between
different ones (A, B, A, C, A, D: no round repeats); a cycle broken by another call; rounds with a
reply the agent turned down for its form between them (`on_user`).
"""

from __future__ import annotations

from dataclasses import dataclass

from proxy.engine.detectors.base import Detector, Trip, TurnFacts
from proxy.engine.state.patterns import UserFacts
from proxy.engine.state.progress import Step, episode
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.wording import PREFIX
from proxy.settings.kinds import Action, Mode
from proxy.settings.policy import Ladder, Policy, Rung

__all__ = ["AFTER", "DETECTOR", "MAX_PERIOD", "NAME", "RESTRICT_AT", "cycle"]

NAME = "ping_pong"
AFTER = 4
"""Calls that repeat the round (each the call one period back, with its result) for the cycle to be
sure, a whole round at least: A, B, A, B, A, B; or two rounds of a longer cycle."""
RESTRICT_AT = AFTER + 4
"""The cycle's tool taken away for one request, four calls round after the cycle was sure."""
MAX_PERIOD = 10
"""The longest round looked for (a cycle of ten calls: read, edit, test, ... of open-weight models)."""
MODE = Mode.SHADOW
"""Shadow by default until measured on agents its rule was not written against."""
OPTIONS = Ladder(
    after=AFTER,
    action=Action.NUDGE,
    escalate=(Rung(at=RESTRICT_AT, action=Action.RESTRICT),),
    mode=MODE,
    confirm=1,
)


@dataclass(frozen=True, slots=True)
class State:
    period: int = 0
    """The period of the cycle being counted; 0: none."""
    count: int = 0
    """The count it last reached (a trip fires as the count reaches a rung, once)."""
    start: int = -1
    """The first turn of the episode (a person's new message starts one: the state goes back to
    `initial`, and the calls before it are no part of a cycle); -1: not yet seen a turn."""


def cycle(steps: tuple[Step, ...], max_period: int = MAX_PERIOD) -> tuple[int, int]:
    """(period, repeated): the shortest period, two to `max_period`, with which the newest steps
    repeat the steps one period before them (action and result), at least a whole round, and how
    many trailing steps do; (0, 0) when none does. A round of one action is no cycle here."""
    size = len(steps)
    for period in range(2, max_period + 1):
        if size < 2 * period:
            break
        if steps[-1].pair != steps[-1 - period].pair:
            continue
        repeated = 0
        while repeated < size - period and steps[-1 - repeated].pair == steps[-1 - repeated - period].pair:
            repeated += 1
        if repeated < period:
            continue
        if len({s.action for s in steps[-period:]}) < 2:
            continue  # one call over and over: repeat_call's
        return period, repeated
    return 0, 0


def fold(state: State, facts: TurnFacts, ladder: Ladder, _policy: Policy) -> tuple[State, list[Trip]]:
    if not facts.turn.calls:
        return state, []
    start = facts.turn.ordinal if state.start < 0 else state.start
    state = State(state.period, state.count, start)
    steps = episode(facts.progress.steps, start)
    trips: list[Trip] = []
    # each call of the turn is one more step round: judge the cycle as of each of them
    ends = range(len(steps) - len(facts.turn.calls) + 1, len(steps) + 1)
    for end in ends:
        period, repeated = cycle(steps[:end])
        if not period:
            state = State(start=start)
            continue
        sure = max(ladder.after, period)
        if repeated < sure:
            state = State(period, 0, start)
            continue
        count = ladder.after + repeated - sure
        if period == state.period and count <= state.count:
            continue
        state = State(period, count, start)
        action = ladder.action_at(count)
        if action is None:
            continue
        round_ = steps[end - period : end]
        tools = {s.tool for s in round_}
        detail = f"a cycle of {period} calls went round {(repeated + period) // period} times with unchanged results"
        trips.append(
            facts.trip(
                DETECTOR,
                action,
                detail,
                count,
                subject=f"{period} calls",
                excerpt="\n".join(f"- {s.label}" for s in round_),
                tool=next(iter(tools)) if len(tools) == 1 else "",
                since=steps[end - period - repeated].turn,
            )
        )
    return state, trips


def on_user(state: State, facts: UserFacts, _ladder: Ladder, _policy: Policy) -> tuple[State, list[Trip]]:
    """A reply the agent turned down for its form (its complaint that the reply made no valid call)
    between rounds: the model is trying to act, a loop of the format's to name (`format_error_loop`);
    the rounds before it are no part of a cycle (corpus tune, gpt-5-nano sphinx-8056: the same reads
    between six edits refused for their format)."""
    if not facts.complaint:
        return state, []
    return State(start=facts.ordinal + 1), []


def remedy(trip: Trip, context: RemedyContext) -> str:
    return context.fit(
        f"{PREFIX} You are going round in a cycle of {trip.subject}, again and again, and every result "
        "comes back as before:",
        trip.excerpt,
        "Stop the cycle: none of these calls will tell you anything new. Take a different step.",
    )


DETECTOR = Detector(name=NAME, initial=State(), fold=fold, options=OPTIONS, remedy=remedy, on_user=on_user)
