"""`excessive_polling`: a polling tool called over and over instead of one blocking wait.

Polling tools (`loops.poll_tools`, or shell commands classified poll) are exempt from
`repeat_call`, because polling is their job; this counts consecutive calls of one polling
tool and fires far later (first `after`, default `AFTER`).

Remedy: one blocking wait with a timeout, then check once.

Must never fire on: polling below the limit; polls interleaved with other work (any
non-poll call resets the count).
"""

from __future__ import annotations

from dataclasses import dataclass

from proxy.engine.detectors.base import Detector, Trip, TurnFacts
from proxy.engine.detectors.calls import is_poll
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.wording import PREFIX
from proxy.settings.kinds import Action, Mode
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "DETECTOR", "NAME"]

NAME = "excessive_polling"
AFTER = 10
"""Consecutive calls of a polling tool that trip the pattern."""
MODE = Mode.SHADOW
"""Shadow by default: it trips, logs and counts, and says nothing (no trip on the test part or the tune
part: not shown). A policy's `mode = "act"` switches it on."""
OPTIONS = Ladder(after=AFTER, action=Action.NUDGE, mode=MODE)


@dataclass(frozen=True, slots=True)
class State:
    tool: str = ""
    count: int = 0


def fold(state: State, facts: TurnFacts, ladder: Ladder, policy: Policy) -> tuple[State, list[Trip]]:
    trips: list[Trip] = []
    for call in facts.turn.calls:
        if not is_poll(call, policy):
            state = State()
            continue
        state = State(call.call.name, state.count + 1 if call.call.name == state.tool else 1)
        action = ladder.action_at(state.count)
        if action is not None:
            detail = f"{call.call.name} polled {state.count} times in a row"
            trips.append(
                facts.trip(DETECTOR, action, detail, state.count, subject=call.describe(), tool=call.call.name)
            )
    return state, trips


def remedy(trip: Trip, context: RemedyContext) -> str:
    return context.fit(
        f"{PREFIX} You have polled {trip.count} times in a row ({trip.subject}).",
        "",
        "Stop polling. Make one blocking wait with a timeout instead "
        "(for a shell: `timeout 300 <command that waits>`, or the tool's own wait option), then check once.",
    )


DETECTOR = Detector(name=NAME, initial=State(), fold=fold, options=OPTIONS, remedy=remedy)
