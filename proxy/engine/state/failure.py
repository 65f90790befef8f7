"""The current-failure model: which failure is live and whether anything changed it.

Folded once per turn by `fold_failure`, by these rules:

1. A turn is judged by its first failing diagnostic result in call order (a verification,
   or a command that is neither a read, a search, a poll nor an edit; not a call the tool
   rejected before running it), so a turn that edits and re-tests is judged by the
   re-test, past the edit's own "ok".
2. A failure with the live failure's signature extends the streak, even across edits; a
   different signature starts a new streak at 1; a passing verification clears the model.
3. A successful edit with no verification after it, on a live failure, keeps the model
   and owes a re-verify. An edit's own success is not verification.
4. Anything else (reads, searches, failed edits, other successful commands) leaves the
   model as it is: only a pass or a new signature changes the live failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from enum import StrEnum

from proxy.engine.reading.evidence import Pointers, evidence, extract_pointers
from proxy.engine.reading.observe import ObservedCall, ObservedTurn
from proxy.engine.reading.outcome import Outcome
from proxy.settings.kinds import CallKind

__all__ = ["DIAGNOSTIC_KINDS", "SIX_FIELDS", "DiagnosticClass", "RepairState", "fold_failure"]

_MAX_FILES = 12
_MAX_READ = 64
DIAGNOSTIC_KINDS = frozenset({CallKind.VERIFY, CallKind.OTHER})
"""Calls whose failures are evidence about the work (not a missing file or a bad edit)."""


def _plain(value: object) -> object:
    return value.value if isinstance(value, StrEnum) else value


class DiagnosticClass(StrEnum):
    PASS = "pass"
    FAIL = "fail"


@dataclass(frozen=True, slots=True)
class RepairState:
    """The six fields of the current-failure model, plus what remedies quote."""

    last_diagnostic_class: DiagnosticClass | None = None
    last_diagnostic_signature: str | None = None
    write_epoch: int = 0
    same_diagnostic_streak: int = 0
    edit_since_failure: bool = False
    reverify_owed: bool = False
    snippet: str = ""
    """The live failure's evidence as printed."""
    failing_tool: str = ""
    failing_command: str = ""
    """The call that produced the live failure: its tool and its shell command (or raw arguments)."""
    failing_arguments: str = ""
    edits_on_failure: int = 0
    """Successful edits since this failure first appeared that did not change it."""
    pointers: Pointers = field(default_factory=Pointers)
    """The failing test and failure location the live failure's output states."""
    read_since_failure: frozenset[str] = frozenset()
    """Files read since the live failure first appeared."""
    edited_since_failure: tuple[str, ...] = ()
    """Files changed since the live failure first appeared, in order."""

    @property
    def live(self) -> bool:
        return self.last_diagnostic_class is DiagnosticClass.FAIL

    def as_dict(self) -> dict[str, object]:
        """The six fields, as replay and the admin API show them."""
        return {name: _plain(getattr(self, name)) for name in SIX_FIELDS}

    def current_failure(self) -> dict[str, object] | None:
        """The hand-back's `current_failure` block; None when nothing is failing."""
        if not self.live:
            return None
        return {
            "class": DiagnosticClass.FAIL.value,
            "signature": self.last_diagnostic_signature,
            "snippet": self.snippet,
            "same_diagnostic_streak": self.same_diagnostic_streak,
        }


SIX_FIELDS = tuple(f.name for f in fields(RepairState))[:6]
"""The current-failure model's own fields (the first six), in the order they are shown."""


def _first_failure(calls: tuple[ObservedCall, ...]) -> int | None:
    for index, call in enumerate(calls):
        if call.kind in DIAGNOSTIC_KINDS and call.outcome is Outcome.FAIL and not call.rejected:
            return index
    return None


def _touched(state: RepairState, calls: tuple[ObservedCall, ...]) -> tuple[frozenset[str], tuple[str, ...]]:
    """The live failure's read and edited files, with this turn's added."""
    read = {c.target for c in calls if c.kind in (CallKind.READ, CallKind.SEARCH) and c.target}
    edited = [c.target for c in calls if c.succeeded_mutation and c.target]
    edited_all = (
        *state.edited_since_failure,
        *(p for p in dict.fromkeys(edited) if p not in state.edited_since_failure),
    )
    known = state.read_since_failure
    read_all = known | frozenset(p for p in read if p) if len(known) < _MAX_READ else known
    return read_all, edited_all[-_MAX_FILES:]


def fold_failure(state: RepairState, turn: ObservedTurn, post_edit_reverify: bool = True) -> RepairState:
    """The failure model after `turn` (pure)."""
    calls = turn.calls
    if not calls:
        return state
    read, edited = _touched(state, calls)
    mutated = [i for i, c in enumerate(calls) if c.succeeded_mutation]
    epoch = state.write_epoch + (1 if mutated else 0)
    failed_at = _first_failure(calls)

    if failed_at is not None:
        failing = calls[failed_at]
        found = evidence(failing.result)
        same = state.live and found.signature == state.last_diagnostic_signature
        if not same:  # a new failure: what was read or edited for the old one does not count
            read, edited = _touched(RepairState(), calls[failed_at + 1 :])
        # An edit after the failing check in the same turn has not been re-verified yet.
        edited_after = any(i > failed_at for i in mutated)
        edited_before = any(i < failed_at for i in mutated)
        return RepairState(
            last_diagnostic_class=DiagnosticClass.FAIL,
            last_diagnostic_signature=found.signature,
            write_epoch=epoch,
            same_diagnostic_streak=state.same_diagnostic_streak + 1 if same else 1,
            edit_since_failure=edited_after,
            reverify_owed=edited_after and post_edit_reverify,
            snippet=found.snippet,
            failing_tool=failing.call.name,
            failing_command=failing.command or "",
            failing_arguments=failing.call.raw_arguments,
            edits_on_failure=(
                state.edits_on_failure + (1 if state.edit_since_failure or edited_before else 0) if same else 0
            ),
            pointers=state.pointers if same else extract_pointers(failing.result),
            read_since_failure=read,
            edited_since_failure=edited,
        )
    if any(c.kind is CallKind.VERIFY and c.outcome is Outcome.PASS for c in calls):
        return RepairState(last_diagnostic_class=DiagnosticClass.PASS, write_epoch=epoch)
    if not state.live:
        return replace(state, write_epoch=epoch)
    if mutated:
        return replace(
            state,
            write_epoch=epoch,
            edit_since_failure=True,
            reverify_owed=post_edit_reverify,
            read_since_failure=read,
            edited_since_failure=edited,
        )
    return replace(state, write_epoch=epoch, read_since_failure=read, edited_since_failure=edited)
