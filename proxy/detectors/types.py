"""What every detector takes and returns."""

from __future__ import annotations

from dataclasses import dataclass

from proxy.failure import RepairState
from proxy.observe import ObservedTurn
from proxy.policy import Action

__all__ = ["Trip", "TurnFacts"]


@dataclass(frozen=True, slots=True)
class Trip:
    """One pattern firing on one turn."""

    pattern: str
    action: Action
    detail: str
    """Why, in words generated from the state (never prompt text beyond the failure snippet)."""
    turn: int
    """1-based ordinal of the turn that tripped it."""
    anchor: str
    """Stable id of that turn's end, where its injection is placed in every later request."""
    count: int
    """The pattern's count when it fired (streak, repeats, turns)."""
    subject: str = ""
    """What the pattern is about, as the agent would recognise it (a call, a tool, a file)."""
    excerpt: str = ""
    """A short quote of the evidence (a repeated output, a repeated reply)."""
    tool: str = ""
    """The one tool the pattern is about, when there is one (what `restrict` takes away)."""


@dataclass(frozen=True, slots=True)
class TurnFacts:
    """A folded turn as detectors see it: the turn, and the failure model before and after it."""

    turn: ObservedTurn
    before: RepairState
    after: RepairState
    failure_model: bool
    """The current-failure model is on (it owns repeated failures)."""

    def trip(
        self,
        pattern: str,
        action: Action,
        detail: str,
        count: int,
        *,
        subject: str = "",
        excerpt: str = "",
        tool: str = "",
    ) -> Trip:
        """A trip of `pattern` on this turn."""
        return Trip(pattern, action, detail, self.turn.ordinal, self.turn.anchor, count, subject, excerpt, tool)
