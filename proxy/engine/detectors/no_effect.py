"""`no_effect`: edit, run the same check, the same output; again and again.

The agent changes the code and runs its reproduction, and the reproduction prints exactly what it
printed before the change, whatever its exit code: the edits are not reaching what runs (another
copy of the module is imported, the edited branch is never taken, a debug print never appears).
A failure that comes back unchanged is the failure model's (`stuck_same_diagnostic`); this is the
same loop where the run does not fail: a script that prints the wrong value and exits 0.

Counts, per command, the runs that printed the same output as its previous run with a successful
change of the sources between them; fires when the count reaches a rung of the ladder (first
`after`, default `AFTER`: three edits in a row that changed nothing the run prints).

Remedy: say that the last edits changed nothing the run prints, and ask to check that the edited
code is the code that runs before editing again.

Must never fire on: a run whose output changed (progress, whatever it printed); the same run again
with nothing changed between (`repeat_call`'s); failing runs (`stuck_same_diagnostic`'s); a run of
another command between (each command's count is its own, and only the latest command is watched);
reads, searches and edits themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

from proxy.engine.detectors.base import Detector, RemedyContext, Trip, TurnFacts
from proxy.engine.detectors.calls import excerpt
from proxy.engine.detectors.wording import PREFIX
from proxy.engine.reading.outcome import Outcome
from proxy.settings.kinds import Action, Ask, CallKind, Mode
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "DETECTOR", "NAME"]

NAME = "no_effect"
AFTER = 3
"""Edits in a row that left the same run printing the same output."""
MODE = Mode.SHADOW
"""Shadow by default: it trips, logs and counts, and says nothing (test part: judged right 2 of 3 (too
few to earn it); tune: 4 trips). A policy's `mode = "act"` switches it on."""
OPTIONS = Ladder(after=AFTER, action=Action.NUDGE, mode=MODE, confirm=1)
_RUNS = frozenset({CallKind.VERIFY, CallKind.OTHER})


@dataclass(frozen=True, slots=True)
class State:
    key: str = ""
    """The command watched: the latest run."""
    digest: str | None = None
    """What it printed last."""
    edited: bool = False
    """The sources changed since it last ran."""
    count: int = 0
    """Runs in a row that printed the same after a change."""
    since: int = 0


def fold(state: State, facts: TurnFacts, ladder: Ladder, _policy: Policy) -> tuple[State, list[Trip]]:
    trips: list[Trip] = []
    for call in facts.turn.calls:
        if call.changed_sources and call.kind is not CallKind.VERIFY:
            state = State(state.key, state.digest, True, state.count, state.since)
            continue
        if call.kind not in _RUNS or not call.command or call.digest is None or call.rejected:
            continue
        if call.outcome in (Outcome.FAIL, Outcome.ENVIRONMENT):
            state = State()
            continue
        if call.key != state.key:
            state = State(call.key, call.digest, False, 0, facts.turn.ordinal)
            continue
        if call.digest != state.digest:
            state = State(call.key, call.digest, False, 0, facts.turn.ordinal)
            continue
        if not state.edited:
            continue  # the same run again with nothing changed: repeat_call's
        state = State(call.key, call.digest, False, state.count + 1, state.since)
        action = ladder.action_at(state.count)
        if action is not None:
            detail = f"{state.count} edits in a row left `{call.command}` printing the same output"
            trips.append(
                facts.trip(
                    NAME,
                    action,
                    detail,
                    state.count,
                    subject=call.describe(),
                    excerpt=excerpt(call.result),
                    since=state.since,
                )
            )
    return state, trips


def remedy(trip: Trip, context: RemedyContext) -> str:
    return context.fit(
        f"{PREFIX} Your last {trip.count} edits changed nothing that {trip.subject} prints; it printed:",
        trip.excerpt,
        "Before editing again, check that the code you edit is the code that runs (which file is "
        "imported, whether the changed lines are reached), then change that.",
    )


DETECTOR = Detector(name=NAME, initial=State(), fold=fold, options=OPTIONS, remedy=remedy, asks=Ask.STOP)
