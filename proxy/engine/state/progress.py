"""Progress, read once for every pattern: what a run has done, call by call, and whether it is
getting anywhere.

Each answered call becomes a `Step`: its action (the call, normalised: the same command, the same
edit of the same lines are one action: `ObservedCall.key`), its result (the normalised output's
digest: `ObservedCall.digest`), what kind of call it was, whether it failed or was turned down,
whether it changed the workspace (an edit that landed, of the sources or of a file of the agent's
own), and whether that (action, result) pair was seen before in the conversation. The loop patterns
read their evidence from the latest steps (`Progress.steps`): a cycle is steps that repeat as a
sequence, a flip-flop a command whose output goes back to one it printed, a failed call that keeps
coming back is the same failing pair again since the last write that landed. A repeated outcome
under changing actions is an agent probing, not a loop: only pairs repeat here, never outcomes
alone.

The counts (`tool_turns`, `edits`, ...) are the "partial progress" a hand-back reports.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import NamedTuple

from proxy.engine.outputs.outcome import Outcome
from proxy.engine.reading.observe import ObservedCall, ObservedTurn
from proxy.settings.kinds import CallKind

__all__ = ["PAIRS_KEPT", "STEPS_KEPT", "Progress", "Step", "episode", "fold_progress", "step_of_call"]

_MAX_FILES = 12
STEPS_KEPT = 48
"""The latest steps kept: enough for a cycle of ten calls to be seen going round four times."""
PAIRS_KEPT = 1024
"""(action, result) pairs remembered as seen; past it the oldest half is forgotten."""
_LABEL = 160
"""Characters of a call's description kept in its step (what a remedy quotes)."""


class Step(NamedTuple):
    """One answered call as progress reads it (a plain tuple: cheap to keep and to pickle)."""

    action: str
    """Digest of the normalised call (`ObservedCall.key`)."""
    result: str
    """Digest of the normalised output; empty when it printed nothing."""
    kind: str
    """Its `CallKind`'s value."""
    failed: bool
    """It failed, could not run, or the tool turned it down."""
    wrote: bool
    """It changed the workspace (an edit or a write that landed, to any file)."""
    seen: bool
    """This (action, result) pair came before in the conversation."""
    turn: int
    label: str
    """The call as the agent wrote it, shortened (`ObservedCall.describe`)."""
    target: str = ""
    """The file it names, if any."""
    tool: str = ""
    """The tool called."""

    @property
    def pair(self) -> tuple[str, str]:
        return (self.action, self.result)


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).hexdigest()


def step_of_call(call: ObservedCall, turn: int, seen: bool = False) -> Step:
    """A call as a step (`seen` filled in by the fold, which knows the conversation's pairs)."""
    failed = call.outcome in (Outcome.FAIL, Outcome.ENVIRONMENT) or call.rejected
    label = call.describe()
    return Step(
        action=_digest(call.key),
        result=call.digest or "",
        kind=call.kind.value,
        failed=failed,
        wrote=call.succeeded_mutation,
        seen=seen,
        turn=turn,
        label=label if len(label) <= _LABEL else label[: _LABEL - 3] + "...",
        target=call.target or "",
        tool=call.call.name,
    )


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
    steps: tuple[Step, ...] = ()
    """The latest `STEPS_KEPT` calls, oldest first."""
    pairs: frozenset[str] = frozenset()
    """The (action, result) pairs seen in the conversation, as `action:result` (see `PAIRS_KEPT`)."""
    writes: int = 0
    """Calls that changed the workspace (any file), in the whole conversation."""

    def describe(self) -> str:
        """One sentence a person can read."""
        files = f" to {', '.join(self.edited)}" if self.edited else ""
        own = f" and {self.own_edits} of the agent's own files" if self.own_edits else ""
        check = f" (last: {self.last_check})" if self.last_check else ""
        return (
            f"{self.tool_turns} tool turn(s): {self.edits} edit(s) of the code{files}{own}, "
            f"{self.checks} check run(s){check}, {self.reads} read(s) and search(es)."
        )

    def since_write(self) -> tuple[Step, ...]:
        """The kept steps after the last one that changed the workspace."""
        steps = self.steps
        for at in range(len(steps) - 1, -1, -1):
            if steps[at].wrote:
                return steps[at + 1 :]
        return steps


def episode(steps: tuple[Step, ...], start: int) -> tuple[Step, ...]:
    """The steps from turn `start` on (a pattern's episode: a person's new message starts one)."""
    if not steps or steps[0].turn >= start:
        return steps
    at = next((i for i, s in enumerate(steps) if s.turn >= start), len(steps))
    return steps[at:]


def _remembered(pairs: frozenset[str], new: list[str]) -> frozenset[str]:
    grown = pairs | frozenset(new)
    if len(grown) <= PAIRS_KEPT:
        return grown
    keep = sorted(grown)[-PAIRS_KEPT // 2 :]  # forgetting is rare (a thousand distinct calls): any half will do
    return frozenset(keep) | frozenset(new)


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
    steps: list[Step] = []
    new: list[str] = []
    for call in turn.calls:
        step = step_of_call(call, turn.ordinal)
        key = f"{step.action}:{step.result}"
        seen = key in progress.pairs or key in new
        steps.append(step._replace(seen=seen) if seen else step)
        new.append(key)
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
        steps=(*progress.steps, *steps)[-STEPS_KEPT:],
        pairs=_remembered(progress.pairs, new),
        writes=progress.writes + sum(1 for s in steps if s.wrote),
    )
