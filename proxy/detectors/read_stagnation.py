"""`read_stagnation`: turn after turn of reading and searching, and no change is made.

Reads are keyed by the canonical call (path and range included), so paging through a file
or reading new files is exploration; a read-dominated turn (share `loops.read_share`) with
no successful change that re-reads something already read since the last change is drift.
Fires when drift turns reach a rung of the ladder (first `after`, default
`READ_STAGNATION_AFTER`), whether or not any edit ever failed. A successful change resets it.

Must never fire on: paging through one large file; reading many distinct files and then
editing; a run that keeps editing.
"""

from __future__ import annotations

from dataclasses import dataclass

from proxy.detectors.types import Trip, TurnFacts
from proxy.policy import CallKind, Policy

__all__ = ["EPISODIC", "INITIAL", "NAME", "State", "fold"]

NAME = "read_stagnation"
EPISODIC = True
_READS = frozenset({CallKind.READ, CallKind.SEARCH})
_MAX_PATHS = 64


@dataclass(frozen=True, slots=True)
class State:
    drift: int = 0
    seen: frozenset[str] = frozenset()
    reads: tuple[tuple[str, int], ...] = ()
    """(file, times read) since the last change, most read first."""


INITIAL = State()


def _count(reads: tuple[tuple[str, int], ...], paths: list[str]) -> tuple[tuple[str, int], ...]:
    counts = dict(reads)
    for path in paths:
        counts[path] = counts.get(path, 0) + 1
    return tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:_MAX_PATHS])


def fold(state: State, facts: TurnFacts, policy: Policy) -> tuple[State, list[Trip]]:
    calls = facts.turn.calls
    if not calls:
        return state, []
    if any(c.succeeded_mutation for c in calls):
        return INITIAL, []
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
    action = policy.patterns.read_stagnation.action_at(state.drift) if drifted else None
    if action is None:
        return state, []
    most = state.reads[0] if state.reads else None
    detail = f"{state.drift} turns re-reading and searching without a change"
    subject = most[0] if most else ""
    return state, [facts.trip(NAME, action, detail, state.drift, subject=subject)]
