"""`refused_edits`: edit after edit turned down, and none lands.

The agent tries to change the code and every try is refused: the editor's syntax check turns it
down ("Your proposed edit has introduced new syntax error(s)... Your changes have NOT been
applied", SWE-agent 0.x), its old text is not in the file, the tool rejects its arguments. Each
try is a different edit, so no call repeats and `repeat_failed_call` never counts it: open-weight
models sent eleven different edits in a row, all refused by the same guard (issue 60). Reads and
other calls between the tries do not end the streak; an edit that lands does, and so does a
person's new message.

Counts the edits refused since the last write that landed; fires when the count reaches a rung of
the ladder: seen at `after` (default `AFTER`), said at the next refused edit (`confirm`).

Remedy: the latest refusal quoted, and one edit asked for, made from the file as it is now: read
the lines first, then replace exactly what is there.

Must never fire on: one or two refused edits and then one that lands (the agent found its way);
edits that land; failing commands that are no edits (a test run, a read of a missing file: the
failure model's, `repeat_failed_call`'s).
"""

from __future__ import annotations

from dataclasses import dataclass

from proxy.engine.detectors.base import Detector, Trip, TurnFacts
from proxy.engine.detectors.calls import excerpt
from proxy.engine.outputs.outcome import Outcome
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.wording import PREFIX
from proxy.settings.kinds import Action, Ask, CallKind, Mode
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "DETECTOR", "NAME"]

NAME = "refused_edits"
AFTER = 4
"""Edits refused since the last one that landed, before the pattern sees a loop."""
MODE = Mode.ACT
"""Acts by default: on the corpus's test part (issue 60, 2026-12-07) judged right 7 of 8 under the
strict rubric, redundant 0 of 8 (Moatless with Claude 3.5, OpenHands 1.0 with GLM-4.6); tune: 35
trips, redundant 2 of 35."""
OPTIONS = Ladder(after=AFTER, action=Action.NUDGE, mode=MODE, confirm=1)


@dataclass(frozen=True, slots=True)
class State:
    count: int = 0
    """Edits refused since the last write that landed."""
    since: int = 0
    """The turn of the first of them."""
    files: tuple[str, ...] = ()
    """The files they were meant for (at most a few, first first)."""


def fold(state: State, facts: TurnFacts, ladder: Ladder, _policy: Policy) -> tuple[State, list[Trip]]:
    trips: list[Trip] = []
    for call in facts.turn.calls:
        if call.succeeded_mutation:
            state = State()
            continue
        if call.kind is not CallKind.EDIT or call.outcome is not Outcome.FAIL:
            continue
        target = call.target or ""
        files = state.files if not target or target in state.files else (*state.files, target)[:4]
        state = State(state.count + 1, state.since or facts.turn.ordinal, files)
        action = ladder.action_at(state.count)
        if action is None:
            continue
        named = ", ".join(state.files) or "the code"
        detail = f"{state.count} edits of {named} refused in a row, none landed"
        trips.append(
            facts.trip(
                DETECTOR,
                action,
                detail,
                state.count,
                subject=named,
                excerpt=excerpt(call.result),
                tool=call.call.name,
                since=state.since,
            )
        )
    return state, trips


def remedy(trip: Trip, context: RemedyContext) -> str:
    return context.fit(
        f"{PREFIX} Your last {trip.count} edits of {trip.subject} were all refused, and none was applied. "
        "The latest refusal:",
        trip.excerpt,
        "Do not send another variant of the same edit. Read the lines you mean to change as the file has "
        "them now, then make one small edit that replaces exactly that text, with its indentation.",
    )


DETECTOR = Detector(name=NAME, initial=State(), fold=fold, options=OPTIONS, remedy=remedy, asks=Ask.CHANGE)
