"""`retread`: call after call the agent has already made, each printing what it printed then.

Reads the run's progress (`state.progress`): each call as its action and its result, normalised,
and whether that pair was seen before in the conversation. An agent that goes back over its own
steps makes calls it has made before and gets the answers it got before: nothing it learns is new.
`ping_pong` names the rounds that repeat exactly with one period; this names the looser shape open-
weight models take: the same exploration replayed after an edit, a round that drifts by a call,
old calls interleaved in a different order (issue 60: the same search and the same file opened
again at line 1, four rounds; a replay of ten calls after each edit). The count is the calls in a
row whose pair was seen before; a call that prints something new (a new call, or an old one whose
output changed: the agent's edits moved something) ends the stretch. Polls neither count nor end
it. Seen at `after` (default `AFTER`), said at the next such call (`confirm`).

Remedy: the calls retraced quoted (shortened to the budget first), and a step not taken before
asked for.

Must never fire on: a call made again whose output changed (re-reading a file after editing it,
re-running a test after a fix); a stretch with a new call in it every few calls (an agent
exploring, now and then checking a result it already had); polling.
"""

from __future__ import annotations

from dataclasses import dataclass

from proxy.engine.detectors.base import Detector, Trip, TurnFacts
from proxy.engine.state.patterns import UserFacts
from proxy.engine.state.progress import episode
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.wording import PREFIX
from proxy.settings.kinds import Action, CallKind, Mode
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "DETECTOR", "NAME"]

NAME = "retread"
AFTER = 6
"""Calls in a row, each a call made before that printed what it printed then."""
MODE = Mode.ACT
"""Acts by default: on the corpus's test part (issue 60, 2026-12-07) judged right 3 of 3 under the
strict rubric, redundant 0 of 3; tune: 45 trips, redundant 3 of 42, the pattern that acted on most
of the open-weight models' loops there (19 of 30). Few test trips: the README says so."""
OPTIONS = Ladder(after=AFTER, action=Action.NUDGE, mode=MODE, confirm=1)
_QUOTED = 6
"""Calls of the stretch quoted in the remedy (the latest)."""
_POLL = CallKind.POLL.value


@dataclass(frozen=True, slots=True)
class State:
    count: int = 0
    """Calls in a row whose (call, output) pair was seen before."""
    since: int = 0
    """The turn the stretch began."""
    start: int = -1
    """The first turn of the episode (a person's new message starts one); -1: none seen yet."""


def fold(state: State, facts: TurnFacts, ladder: Ladder, _policy: Policy) -> tuple[State, list[Trip]]:
    if not facts.turn.calls:
        return state, []
    start = facts.turn.ordinal if state.start < 0 else state.start
    steps = episode(facts.progress.steps, start)
    new = steps[-len(facts.turn.calls) :] if len(facts.turn.calls) <= len(steps) else steps
    trips: list[Trip] = []
    count, since = state.count, state.since
    for step in new:
        if step.kind == _POLL:
            continue
        if not step.seen or not step.result:
            count, since = 0, 0
            continue
        count, since = count + 1, since or step.turn
        action = ladder.action_at(count)
        if action is None:
            continue
        retraced = [s for s in steps if s.turn >= since and s.kind != _POLL][-_QUOTED:]
        trips.append(
            facts.trip(
                DETECTOR,
                action,
                f"{count} calls in a row the agent had made before, each printing what it printed then",
                count,
                subject=f"{count} calls",
                excerpt="\n".join(f"- {s.label}" for s in retraced),
                since=since,
            )
        )
    return State(count, since, start), trips


def on_user(state: State, facts: UserFacts, _ladder: Ladder, _policy: Policy) -> tuple[State, list[Trip]]:
    """The agent's complaint that a reply made no valid call: the model is trying to act, and the
    calls before it are no part of a stretch (a loop of the format's to name)."""
    return (State(start=facts.ordinal + 1), []) if facts.complaint else (state, [])


def remedy(trip: Trip, context: RemedyContext) -> str:
    return context.fit(
        f"{PREFIX} Your last {trip.subject} were all calls you had already made, and each printed exactly "
        "what it printed before. Among them:",  # the quote holds the last six at most, and may be cut to fit
        trip.excerpt,
        "You are going over your own steps again: none of these will tell you anything new. Use what they "
        "showed, and take a step you have not taken yet.",
    )


DETECTOR = Detector(name=NAME, initial=State(), fold=fold, options=OPTIONS, remedy=remedy, on_user=on_user)
