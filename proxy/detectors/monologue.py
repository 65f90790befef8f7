"""`monologue`: the model keeps sending the same text-only reply.

Counts consecutive text-only assistant replies with the same (whitespace-normalised) text,
whatever user messages come between them (in chat completions every text-only reply must be
followed by a user message for the run to go on); fires when the count reaches a rung of the
ladder (first `after`, default `MONOLOGUE_AFTER`). A tool turn resets it.

Must never fire on: replies that differ; replies with tool calls between them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from proxy.detectors.calls import excerpt
from proxy.detectors.types import Trip, TurnFacts
from proxy.policy import Policy

__all__ = ["EPISODIC", "INITIAL", "NAME", "State", "fold"]

NAME = "monologue"
EPISODIC = False
"""User messages never reset it."""


@dataclass(frozen=True, slots=True)
class State:
    digest: str = ""
    count: int = 0


INITIAL = State()


def fold(state: State, facts: TurnFacts, policy: Policy) -> tuple[State, list[Trip]]:
    if facts.turn.turn.calls:
        return INITIAL, []
    text = " ".join(facts.turn.text.split())
    if not text:
        return state, []
    digest = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
    state = State(digest, state.count + 1 if digest == state.digest else 1)
    action = policy.patterns.monologue.action_at(state.count)
    if action is None:
        return state, []
    detail = f"the same text-only reply {state.count} times in a row"
    trip = facts.trip(NAME, action, detail, state.count, excerpt=excerpt(text))
    return state, [trip]
