"""`repeat_output`: one tool keeps returning the same output.

A ring of the last `ring` successful results (an option of its own), as (tool, output digest);
fires when the trailing run of one tool with one digest reaches a rung of the ladder (first
`after`, default `AFTER`) and the run came from more than one distinct call (identical
calls are `repeat_call`'s, so the two never double-fire).

Remedy: quote the output and say another call will return the same.

Must never fire on: results with no payload (empty or whitespace: side-effect tools), which
never enter the ring; an edit's confirmation ("the file has been edited"), the same every
time by design; output that is only what every run prints (pip's warning as root);
failing results, and calls that could not run (`DISCUSSION: command not found`: prose run as a
command; they break a run, never make one); outputs that change.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from proxy.engine.detectors.base import Detector, Trip, TurnFacts
from proxy.engine.detectors.calls import excerpt
from proxy.engine.outputs.envelope import payload
from proxy.engine.outputs.noise import without_noise
from proxy.engine.outputs.outcome import Outcome
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.wording import PREFIX
from proxy.settings.kinds import Action, Mode
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "DETECTOR", "NAME"]

NAME = "repeat_output"
AFTER = 3
"""Consecutive results of one tool with the same output hash that trip the pattern."""
RING = 5
_BREAKS = frozenset({Outcome.FAIL, Outcome.ENVIRONMENT})
"""How many recent successful results are remembered."""


class Options(Ladder):
    """`[patterns.repeat_output]`: the ladder, and how many recent results are remembered."""

    ring: int = Field(default=RING, ge=2)


MODE = Mode.SHADOW
"""Shadow by default: it trips, logs and counts, and says nothing (test part: judged right 4 of 10;
redundant 10 of 13 (routine tracker updates, different searches alike)). A policy's `mode = "act"`
switches it on."""
OPTIONS = Options(after=AFTER, action=Action.NUDGE, mode=MODE, confirm=1)


@dataclass(frozen=True, slots=True)
class State:
    ring: tuple[tuple[str, str, str], ...] = ()
    """(tool, output digest, call key), oldest first."""


def fold(state: State, facts: TurnFacts, ladder: Options, _policy: Policy) -> tuple[State, list[Trip]]:
    trips: list[Trip] = []
    for call in facts.turn.calls:
        if call.outcome in _BREAKS:
            # It failed, or could not run: it breaks a run of outputs (a patch script's "PATCHED",
            # the test failing, another script's "PATCHED"; a module missing, then installed,
            # between two different runs), and never makes one (prose run as a command).
            state = State((*state.ring, (call.call.name, "", call.key))[-ladder.ring :])
            continue
        if call.digest is None or call.mutates or not _says_something(call.output):
            continue
        entry = (call.call.name, call.digest, call.key)
        state = State((*state.ring, entry)[-ladder.ring :])
        run = []
        for tool, digest, key in reversed(state.ring):
            if (tool, digest) != entry[:2]:
                break
            run.append(key)
        action = ladder.action_at(len(run))
        if action is not None and len(set(run)) > 1:
            detail = f"{call.call.name} returned the same output {len(run)} times in a row"
            trips.append(
                facts.trip(
                    DETECTOR,
                    action,
                    detail,
                    len(run),
                    subject=call.call.name,
                    tool=call.call.name,
                    excerpt=excerpt(call.result),
                )
            )
    return state, trips


def _says_something(output: str) -> bool:
    """More than lines every run prints (pip's warning as root, an interpreter's warnings):
    three installs of different packages print the same warning, and say nothing alike."""
    return len(output) > 4000 or bool(payload(without_noise(output)).strip("0 \n"))


def remedy(trip: Trip, context: RemedyContext) -> str:
    return context.fit(
        f"{PREFIX} {trip.subject} has returned the same output {trip.count} times in a row:",
        trip.excerpt,
        f"Calling {trip.subject} again will return the same. Use what you have and move to the next step.",
    )


DETECTOR = Detector(name=NAME, initial=State(), fold=fold, options=OPTIONS, remedy=remedy)
