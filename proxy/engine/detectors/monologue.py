"""`monologue`: the model keeps sending the same text-only reply, or nothing at all.

Counts consecutive text-only assistant replies whose text is the same once normalised
(case, digits, punctuation and whitespace set aside, so "Step 3." and "step 4" repeat), empty
replies included (an empty reply repeats an empty one); fires when the count reaches a rung
of the ladder (first `after`, default `AFTER`). Whatever user messages come between them
(an agent's own "your reply had no tool call" included), and a person's new message too:
every text-only reply must be followed by a user message for a run to go on. A tool turn
resets it.

Remedy: quote the reply (or say they were empty) and ask for a tool call, or a plain "done"
or "blocked".

A reply the agent answers with its complaint that it made no valid call is
`format_error_loop`'s: the complaint ends the count here.

Must never fire on: replies that differ in words; replies with tool calls between them;
replies the agent rejected for their format.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from proxy.engine.detectors.base import Detector, Trip, TurnFacts
from proxy.engine.detectors.calls import excerpt
from proxy.engine.state.patterns import UserFacts
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.wording import PREFIX
from proxy.settings.kinds import Action, Ask, Mode
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "DETECTOR", "NAME", "normalised"]

NAME = "monologue"
AFTER = 3
"""Text-only assistant replies in a row with the same normalised text (or none) that trip the pattern."""
MODE = Mode.SHADOW
"""Shadow by default: it trips, logs and counts, and says nothing (no trip on the test part or the tune
part: not shown). A policy's `mode = "act"` switches it on."""
OPTIONS = Ladder(after=AFTER, action=Action.NUDGE, mode=MODE)
_NOISE = re.compile(r"[\d\W_]+")


def normalised(text: str) -> str:
    """The words of a reply, lower-cased: numbers, punctuation and spacing do not hide a repeat."""
    return " ".join(_NOISE.sub(" ", text.lower()).split())


@dataclass(frozen=True, slots=True)
class State:
    digest: str = ""
    count: int = 0


def fold(state: State, facts: TurnFacts, ladder: Ladder, _policy: Policy) -> tuple[State, list[Trip]]:
    if facts.turn.turn.calls:
        return State(), []
    words = normalised(facts.turn.text)
    digest = hashlib.blake2b(words.encode(), digest_size=16).hexdigest()
    state = State(digest, state.count + 1 if digest == state.digest else 1)
    action = ladder.action_at(state.count)
    if action is None:
        return state, []
    kind = "text-only reply" if words else "empty reply"
    detail = f"the same {kind} {state.count} times in a row"
    return state, [
        facts.trip(DETECTOR, action, detail, state.count, excerpt=excerpt(" ".join(facts.turn.text.split())))
    ]


def on_user(state: State, facts: UserFacts, _ladder: Ladder, _policy: Policy) -> tuple[State, list[Trip]]:
    """The agent's complaint that the reply made no valid call: that loop is another pattern's."""
    return (State(), []) if facts.complaint else (state, [])


def remedy(trip: Trip, context: RemedyContext) -> str:
    tail = "Do not send it again. Either call a tool to make progress, or say plainly that you are done or blocked."
    if not trip.excerpt:
        return context.fit(
            f"{PREFIX} Your last {trip.count} replies were empty.",
            "",
            "Reply with your next tool call, or say plainly that you are done or blocked.",
        )
    return context.fit(f"{PREFIX} You have sent this same reply {trip.count} times:", trip.excerpt, tail)


DETECTOR = Detector(
    name=NAME,
    initial=State(),
    fold=fold,
    options=OPTIONS,
    remedy=remedy,
    episodic=False,
    on_user=on_user,
    asks=Ask.CALL,
)
