"""A conversation's state: everything the fold keeps between requests.

Frozen, and derived from the transcript alone, so it is the same on any replica and after a
restart; the state cache only saves re-folding.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from proxy.engine.detectors import DetectorStates, Trip
from proxy.engine.failure import RepairState
from proxy.engine.progress import Progress
from proxy.settings.kinds import Placement

__all__ = [
    "TIMELINE_TURNS",
    "WATCH_TURNS",
    "ConversationState",
    "Cursor",
    "Injection",
    "TimelineEntry",
    "TripOutcome",
    "Watch",
]

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


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    """One folded turn as an operator sees it."""

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


@dataclass(frozen=True, slots=True)
class Cursor:
    """How far the state has read: the message count and a digest of the last message read."""

    count: int
    digest: str


@dataclass(frozen=True, slots=True)
class ConversationState:
    repair: RepairState = field(default_factory=RepairState)
    detectors: DetectorStates = field(default_factory=DetectorStates)
    turns: int = 0
    """Turns folded so far."""
    folded: frozenset[str] = frozenset()
    """`tool_call_id`s already folded."""
    cursor: Cursor | None = None
    trips: tuple[Trip, ...] = ()
    injections: tuple[Injection, ...] = ()
    last_anchor: str = ""
    """Anchor of the last turn folded."""
    progress: Progress = field(default_factory=Progress)
    user_texts: frozenset[str] = frozenset()
    """Digests of the user messages seen: a text not among them is a person's new message."""
    memory_checked: bool = False
    """The verdict store was asked about this conversation's task (once per conversation)."""
    timeline: tuple[TimelineEntry, ...] = ()
    """The last `TIMELINE_TURNS` turns."""
    watches: tuple[Watch, ...] = ()
    outcomes: tuple[TripOutcome, ...] = ()
    last_action_turn: int = 0
    """Ordinal of the last turn with tool calls (an instruction placed at or after it is unanswered)."""
    episode_start: int = 0
    """Turns folded when the person last sent a new message (instructions before it belong to an old episode)."""
