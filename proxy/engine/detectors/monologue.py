"""`monologue`: the model keeps sending the same text-only reply.

Counts consecutive text-only assistant replies with the same (whitespace-normalised) text,
whatever user messages come between them (in chat completions every text-only reply must be
followed by a user message for the run to go on); fires when the count reaches a rung of the
ladder (first `after`, default `AFTER`). A tool turn resets it. User messages never start a
new episode.

Remedy: quote the reply and ask for a tool call, or a plain "done" or "blocked".

Must never fire on: replies that differ; replies with tool calls between them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from proxy.engine.detectors.base import Detector, RemedyContext, Trip, TurnFacts
from proxy.engine.detectors.calls import excerpt
from proxy.engine.remedy import PREFIX
from proxy.settings.kinds import Action
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "DETECTOR", "NAME"]

NAME = "monologue"
AFTER = 3
"""Identical text-only assistant replies that trip the pattern."""
LADDER = Ladder(after=AFTER, action=Action.NUDGE)


@dataclass(frozen=True, slots=True)
class State:
    digest: str = ""
    count: int = 0


def fold(state: State, facts: TurnFacts, ladder: Ladder, _policy: Policy) -> tuple[State, list[Trip]]:
    if facts.turn.turn.calls:
        return State(), []
    text = " ".join(facts.turn.text.split())
    if not text:
        return state, []
    digest = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
    state = State(digest, state.count + 1 if digest == state.digest else 1)
    action = ladder.action_at(state.count)
    if action is None:
        return state, []
    detail = f"the same text-only reply {state.count} times in a row"
    return state, [facts.trip(NAME, action, detail, state.count, excerpt=excerpt(text))]


def remedy(trip: Trip, context: RemedyContext) -> str:
    return context.fit(
        f"{PREFIX} You have sent this same reply {trip.count} times:",
        trip.excerpt,
        "Do not send it again. Either call a tool to make progress, or say plainly that you are done or blocked.",
    )


DETECTOR = Detector(name=NAME, initial=State(), fold=fold, ladder=LADDER, remedy=remedy, episodic=False)
