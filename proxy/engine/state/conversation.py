"""A conversation's state: everything the fold keeps between requests.

Frozen, and derived from the transcript alone, so it is the same on any replica and after a
restart; the state cache only saves re-folding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from proxy.engine.reading.workspace import Workspace
from proxy.engine.state.failure import RepairState
from proxy.engine.state.patterns import DetectorStates, Trip
from proxy.engine.state.progress import Progress
from proxy.settings.kinds import Placement

__all__ = [
    "FOLDED_IDS",
    "INJECTIONS_KEPT",
    "OUTCOMES_KEPT",
    "TIMELINE_TURNS",
    "TRIPS_KEPT",
    "USER_TEXTS_KEPT",
    "WATCH_TURNS",
    "ConversationState",
    "Cursor",
    "Injection",
    "TimelineEntry",
    "TimelineRow",
    "TripOutcome",
    "Watch",
    "approx_bytes",
]

FOLDED_IDS = 512
"""Calls remembered as folded (the most recent), each by its id and content (`call_identity`):
enough to resume after any compaction."""
TRIPS_KEPT = 256
OUTCOMES_KEPT = 64
USER_TEXTS_KEPT = 256
INJECTIONS_KEPT = 256
"""Beyond these, a long conversation's state keeps only the most recent: its size is bounded
whatever the run's length (the admin API, status page and verdicts need no more)."""
WATCH_TURNS = 5
"""Turns after a watched trip within which a changed or cleared failure counts as recovery."""
TIMELINE_TURNS = 200
"""Turns of the timeline kept per conversation (the admin API and status page show them)."""


@dataclass(frozen=True, slots=True)
class Injection:
    """An instruction placed after a turn; re-inserted there in every later request."""

    anchor: str
    pattern: str
    text: str
    placement: Placement
    turn: int


TimelineRow = tuple[int, tuple[str, ...], str, str, int, tuple[str, ...]]
"""A `TimelineEntry`'s fields as a plain tuple: what the state keeps, one per turn. A tuple of
strings and numbers leaves the garbage collector's sight after its first collection and
pickles without a Python call (`codec`), where an object per turn did neither: in a
100-turn state the timeline was 100 of its 155 tracked objects."""


class TimelineEntry(NamedTuple):
    """One folded turn as an operator sees it (`TimelineEntry(*row)` of a `TimelineRow`)."""

    turn: int
    calls: tuple[str, ...]
    """Each call as `kind:tool`."""
    outcome: str
    """`fail`, `pass` (a check's verdict), or `neutral`."""
    signature: str
    """Prefix of the live failure's signature after the turn."""
    streak: int
    trips: tuple[str, ...]
    """`pattern:action` of what fired on this turn."""


@dataclass(frozen=True, slots=True)
class Watch:
    """A trip whose aftermath is being watched."""

    pattern: str
    turn: int
    signature: str


@dataclass(frozen=True, slots=True)
class TripOutcome:
    """What happened after a watched trip: `cleared`, `changed`, `unchanged` or `handed_back`."""

    pattern: str
    turn: int
    outcome: str

    def in_arm(self, holdout: bool) -> str:
        """The outcome as it happened in the conversation's arm: a holdout run is never handed
        back (its requests go up as sent), so where a treated run would have been, its failure
        simply stayed: `unchanged`."""
        return "unchanged" if holdout and self.outcome == "handed_back" else self.outcome


@dataclass(frozen=True, slots=True)
class Cursor:
    """How far the state has read: the message count, a digest of the last messages read (see
    `history`), and how many messages the request it was read from had."""

    count: int
    digest: str
    seen: int = 0


@dataclass(frozen=True, slots=True)
class ConversationState:
    repair: RepairState = field(default_factory=RepairState)
    detectors: DetectorStates = field(default_factory=DetectorStates)
    turns: int = 0
    """Turns folded so far."""
    folded: tuple[str, ...] = ()
    """The last `FOLDED_IDS` calls folded, each as `reading.canonical.call_identity`."""
    cursor: Cursor | None = None
    trips: tuple[Trip, ...] = ()
    """The last `TRIPS_KEPT` trips."""
    tripped: frozenset[str] = frozenset()
    """Every pattern that ever tripped in the conversation (what a verdict names)."""
    injections: tuple[Injection, ...] = ()
    last_anchor: str = ""
    """Anchor of the last turn folded."""
    progress: Progress = field(default_factory=Progress)
    user_texts: tuple[str, ...] = ()
    """Digests of the last `USER_TEXTS_KEPT` user messages: a text not among them is a person's new message."""
    memory_checked: bool = False
    """The verdict store was asked about this conversation's task (once per conversation)."""
    timeline: tuple[TimelineRow, ...] = ()
    """The last `TIMELINE_TURNS` turns (see `entries`)."""
    watches: tuple[Watch, ...] = ()
    outcomes: tuple[TripOutcome, ...] = ()
    """The last `OUTCOMES_KEPT` outcomes."""
    outcomes_total: int = 0
    last_action_turn: int = 0
    """Ordinal of the last turn with tool calls (an instruction placed at or after it is unanswered)."""
    episode_start: int = 0
    """Turns folded when the person last sent a new message (instructions before it belong to an old episode)."""
    protocol: str = ""
    """The text protocol the agent's last call was written in (`text.protocols`); empty: tool calls."""
    workspace: Workspace = field(default_factory=Workspace)
    read_only: bool = False
    """The agent's system prompt forbids editing the repository's code (`text.roles`): a role
    whose job is to read, never told to edit."""
    """The files the agent created and the ones it found (what tells a source edit from its own file's)."""

    def entries(self) -> tuple[TimelineEntry, ...]:
        """The timeline, each turn with its fields named."""
        return tuple(TimelineEntry(*row) for row in self.timeline)


_BASE_BYTES = 6000
_PER_ENTRY = {"timeline": 320, "folded": 75, "trips": 380, "outcomes": 120, "user_texts": 110, "watches": 150}


def approx_bytes(state: ConversationState) -> int:
    """About how much memory `state` holds: what the state cache counts against its byte bound.

    A fixed part, plus each bounded collection by its length and the text it quotes
    (calibrated against tracemalloc in tests/unit/test_statecache.py)."""
    size = _BASE_BYTES + sum(per * len(getattr(state, name)) for name, per in _PER_ENTRY.items())
    size += sum(220 + len(i.text) for i in state.injections)
    repair = state.repair
    size += 2 * (len(repair.snippet) + len(repair.failing_command) + len(repair.failing_arguments))
    size += 90 * (len(repair.read_since_failure) + len(repair.edited_since_failure))
    size += sum(150 + len(path) + 2 * len(shown) for path, shown in repair.seen)
    size += 90 * (len(state.workspace.created) + len(state.workspace.known))
    progress = state.progress
    size += sum(420 + len(step.label) + len(step.target) for step in progress.steps) + 90 * len(progress.pairs)
    return size + sum(_detector_bytes(value) for value in state.detectors.values.values())


def _detector_bytes(value: object) -> int:
    """A detector's state: its fields, collections counted by length."""
    size = 200
    for name in getattr(value, "__slots__", ()):
        field_value = getattr(value, name, None)
        if isinstance(field_value, tuple | frozenset):
            size += 120 * len(field_value)
    return size
