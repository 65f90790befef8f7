"""What a run has done so far, in counts: the "partial progress" a hand-back reports."""

from __future__ import annotations

from dataclasses import dataclass, replace

from proxy.engine.reading.observe import ObservedTurn
from proxy.settings.kinds import CallKind

__all__ = ["Progress", "fold_progress"]

_MAX_FILES = 12


@dataclass(frozen=True, slots=True)
class Progress:
    tool_turns: int = 0
    edits: int = 0
    """Edits of the code (see `ObservedCall.changed_sources`)."""
    own_edits: int = 0
    """Edits of files the agent made or keeps for itself (a reproduction script, a scratch test)."""
    checks: int = 0
    reads: int = 0
    edited: tuple[str, ...] = ()
    """Files changed, first changed first (at most a dozen kept)."""
    last_check: str = ""

    def describe(self) -> str:
        """One sentence a person can read."""
        files = f" to {', '.join(self.edited)}" if self.edited else ""
        own = f" and {self.own_edits} of the agent's own files" if self.own_edits else ""
        check = f" (last: {self.last_check})" if self.last_check else ""
        return (
            f"{self.tool_turns} tool turn(s): {self.edits} edit(s) of the code{files}{own}, "
            f"{self.checks} check run(s){check}, {self.reads} read(s) and search(es)."
        )


def fold_progress(progress: Progress, turn: ObservedTurn) -> Progress:
    if not turn.calls:
        return progress
    edited = list(progress.edited)
    for call in turn.calls:
        if call.changed_sources:
            target = call.target
            if target and target not in edited and len(edited) < _MAX_FILES:
                edited.append(target)
    checks = [c for c in turn.calls if c.kind is CallKind.VERIFY]
    return replace(
        progress,
        tool_turns=progress.tool_turns + 1,
        edits=progress.edits + sum(1 for c in turn.calls if c.changed_sources),
        own_edits=progress.own_edits
        + sum(1 for c in turn.calls if c.kind is CallKind.EDIT and c.succeeded_mutation and not c.changed_sources),
        checks=progress.checks + len(checks),
        reads=progress.reads + sum(1 for c in turn.calls if c.kind in (CallKind.READ, CallKind.SEARCH)),
        edited=tuple(edited),
        last_check=checks[-1].describe() if checks else progress.last_check,
    )
