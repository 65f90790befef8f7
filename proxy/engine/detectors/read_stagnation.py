"""`read_stagnation`: turn after turn of reading and searching, and no change is made.

Reads are keyed by the canonical call (path and range included), so paging through a file
or reading new files is exploration; a read-dominated turn (share `loops.read_share`) with
no successful change that re-reads something already read since the last change is drift.
Fires when drift turns reach a rung of the ladder (first `after`, default `AFTER`), whether
or not any edit ever failed. A successful change resets it.

Remedy: stop reading, state a hypothesis, edit the file read most. `force` pins an edit tool.

Must never fire on: paging through one large file; reading many distinct files and then
editing; a run that keeps editing.
"""

from __future__ import annotations

from dataclasses import dataclass

from proxy.engine.detectors.base import Detector, Levers, RemedyContext, Trip, TurnFacts
from proxy.engine.remedy import PREFIX
from proxy.settings.kinds import Action, CallKind
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "DETECTOR", "NAME"]

NAME = "read_stagnation"
AFTER = 8
"""Tool turns of re-reading and searching without a successful change that trip the pattern."""
LADDER = Ladder(after=AFTER, action=Action.NUDGE)
_READS = frozenset({CallKind.READ, CallKind.SEARCH})
_MAX_PATHS = 64


@dataclass(frozen=True, slots=True)
class State:
    drift: int = 0
    seen: frozenset[str] = frozenset()
    reads: tuple[tuple[str, int], ...] = ()
    """(file, times read) since the last change, most read first."""


def _count(reads: tuple[tuple[str, int], ...], paths: list[str]) -> tuple[tuple[str, int], ...]:
    counts = dict(reads)
    for path in paths:
        counts[path] = counts.get(path, 0) + 1
    return tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:_MAX_PATHS])


def fold(state: State, facts: TurnFacts, ladder: Ladder, policy: Policy) -> tuple[State, list[Trip]]:
    calls = facts.turn.calls
    if not calls:
        return state, []
    if any(c.succeeded_mutation for c in calls):
        return State(), []
    reads = [c for c in calls if c.kind in _READS]
    if len(reads) < policy.loops.read_share * len(calls):
        return state, []
    keys = {c.key for c in reads}
    drifted = bool(keys & state.seen)
    paths = [p for p in (c.target for c in reads if c.kind is CallKind.READ) if p]
    state = State(
        drift=state.drift + (1 if drifted else 0),
        seen=state.seen | keys,
        reads=_count(state.reads, paths),
    )
    action = ladder.action_at(state.drift) if drifted else None
    if action is None:
        return state, []
    most = state.reads[0] if state.reads else None
    detail = f"{state.drift} turns re-reading and searching without a change"
    subject = most[0] if most else ""
    return state, [facts.trip(NAME, action, detail, state.drift, subject=subject)]


def remedy(trip: Trip, context: RemedyContext) -> str:
    target = f"{trip.subject}, the file you have read most" if trip.subject else "the file you have read most"
    return context.fit(
        f"{PREFIX} {trip.count} turns of re-reading and searching without changing anything.",
        "",
        f"Stop reading. State your hypothesis in one sentence, then make a concrete edit to {target}; "
        "or, if something blocks you, stop and say what.",
    )


def force(_trip: Trip, levers: Levers) -> str | None:
    """An edit tool: the next step is a change."""
    return levers.classifier.tool_of_kind(CallKind.EDIT, set(levers.offered))


DETECTOR = Detector(name=NAME, initial=State(), fold=fold, ladder=LADDER, remedy=remedy, force=force)
