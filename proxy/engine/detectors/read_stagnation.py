"""`read_stagnation`: turn after turn of reading and searching, and no change is made.

Counts consecutive turns that only read and search (at least `read_share` of their calls,
an option of its own) with no successful change; fires when that run reaches a rung of the ladder (first
`after`, default `AFTER`) once it has re-read something it already read in the run (reads
are keyed by the canonical call, path and range included), or later, on the turn it first
does. Whether or not any edit ever failed. A successful change, or a turn that does
something else (runs a check, a command), ends the run.

Remedy: stop reading, state a hypothesis, edit the file read most. `force` pins an edit tool.

Must never fire on: paging through one large file; reading many distinct files and then
editing; a run that keeps editing.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from proxy.engine.detectors.base import Detector, Forced, Levers, RemedyContext, Trip, TurnFacts
from proxy.engine.detectors.wording import PREFIX
from proxy.settings.kinds import Action, CallKind
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "DETECTOR", "NAME"]

NAME = "read_stagnation"
AFTER = 8
"""Consecutive read-or-search-only turns without a change (one of them a re-read) that trip the pattern."""
READ_SHARE = 0.75
"""A turn is read-dominated when at least this share of its calls read or search."""


class Options(Ladder):
    """`[patterns.read_stagnation]`: the ladder, and what makes a turn read-dominated."""

    read_share: float = Field(default=READ_SHARE, gt=0, le=1)
    """A turn is read-dominated when at least this share of its calls read or search."""


OPTIONS = Options(after=AFTER, action=Action.NUDGE)
_READS = frozenset({CallKind.READ, CallKind.SEARCH})
_MAX_PATHS = 64
_MAX_KEYS = 256
"""Reads remembered in one run (a longer run still sees re-reads of these)."""


@dataclass(frozen=True, slots=True)
class State:
    run: int = 0
    """Read-only turns in a row."""
    seen: frozenset[str] = frozenset()
    reread: bool = False
    fired: frozenset[int] = frozenset()
    """Rungs already fired in this run."""
    reads: tuple[tuple[str, int], ...] = ()
    """(file, times read) in this run, most read first."""


def _count(reads: tuple[tuple[str, int], ...], paths: list[str]) -> tuple[tuple[str, int], ...]:
    counts = dict(reads)
    for path in paths:
        counts[path] = counts.get(path, 0) + 1
    return tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:_MAX_PATHS])


def fold(state: State, facts: TurnFacts, ladder: Options, _policy: Policy) -> tuple[State, list[Trip]]:
    calls = facts.turn.calls
    if not calls:
        return state, []
    reads = [c for c in calls if c.kind in _READS]
    if any(c.succeeded_mutation for c in calls) or len(reads) < ladder.read_share * len(calls):
        return State(), []
    keys = {c.key for c in reads}
    paths = [p for p in (c.target for c in reads if c.kind is CallKind.READ) if p]
    state = State(
        run=state.run + 1,
        seen=state.seen | keys if len(state.seen) < _MAX_KEYS else state.seen,
        reread=state.reread or bool(keys & state.seen),
        fired=state.fired,
        reads=_count(state.reads, paths),
    )
    reached = [n for n in ladder.counts if n <= state.run and n not in state.fired] if state.reread else []
    if not reached:
        return state, []
    action = ladder.action_at(max(reached))
    state = State(state.run, state.seen, state.reread, state.fired | set(reached), state.reads)
    if action is None:
        return state, []
    detail = f"{state.run} turns of reading and searching without a change, going back over what was read"
    subject = state.reads[0][0] if state.reads else ""
    return state, [facts.trip(NAME, action, detail, state.run, subject=subject)]


def remedy(trip: Trip, context: RemedyContext) -> str:
    target = f"{trip.subject}, the file you have read most" if trip.subject else "the file you have read most"
    return context.fit(
        f"{PREFIX} {trip.count} turns of re-reading and searching without changing anything.",
        "",
        f"Stop reading. State your hypothesis in one sentence, then make a concrete edit to {target}; "
        "or, if something blocks you, stop and say what.",
    )


def force(_trip: Trip, levers: Levers) -> Forced | None:
    """An edit tool: the next step is a change."""
    return Forced.of(levers.classifier.tool_of_kind(CallKind.EDIT, set(levers.offered)), CallKind.EDIT)


DETECTOR = Detector(name=NAME, initial=State(), fold=fold, options=OPTIONS, remedy=remedy, force=force)
