"""The current-failure model: which failure is live and whether anything changed it.

Folded once per turn by `fold_failure`, by these rules:

1. A turn is judged by its first failing check in call order, so a turn that edits and
   re-tests is judged by the re-test, past the edit's own "ok". A check is a call that
   verifies (a test runner, a program file run, a command whose output is a test report:
   `reading.classify`, `reading.observe`), or a probe of inline code run again (an agent
   that re-runs the same `python -c` after its edits uses it as its test; a probe run once
   is an experiment, and its failure is nobody's obligation); not a call the tool rejected
   before running it, and not one that could not run at all (an environment problem:
   `reading.outcome`). A re-run probe that fails as its last run did counts both runs.
2. A failure with the live failure's signature extends the streak, even across edits; a
   different signature starts a new streak at 1; a passing check clears the model. When the
   agent rewrote the check itself since (the script the failing command runs), the same
   failure again holds the streak: that is a new way of reproducing it, not a repeat. So does
   the same failure once the agent put the files it changed back as they were (`git checkout
   -- f.py`, a kept copy copied back): that is the failure without its changes, and the edits
   before it are not edits that failed to change it. A failure that arose with the agent's
   changes in place and is seen with every one of them put back predates its work (`predates`).
3. A successful edit of the sources with no check after it, on a live failure, keeps the
   model and owes a re-verify. An edit's own success is not verification, and a write to a
   file of the agent's own (a script it created, a backup, a temporary file:
   `reading.workspace`) is no edit of the sources.
4. Anything else (reads, searches, failed edits, probes, other commands) leaves the model
   as it is: only a pass or a new signature changes the live failure. A check that could not
   run at all (an environment problem) leaves no failure live and nothing owed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum

from proxy.engine.reading.commands import read_command
from proxy.engine.reading.evidence import Pointers, evidence, extract_pointers
from proxy.engine.reading.excerpt import called_names
from proxy.engine.reading.observe import ObservedCall, ObservedTurn
from proxy.engine.reading.outcome import Outcome
from proxy.engine.reading.workspace import same_file
from proxy.engine.state.checks import (
    DIAGNOSTIC_KINDS,
    READS,
    Changes,
    exercised,
    first_failure,
    is_check,
    probes_after,
    quiet,
    restored_from,
    restores,
    rewrites,
)
from proxy.engine.state.seen import Seen, seen_after, settled, shown_whole

__all__ = ["DIAGNOSTIC_KINDS", "SIX_FIELDS", "DiagnosticClass", "RepairState", "fold_failure", "is_check"]

_MAX_FILES = 12
_MAX_READ = 64
_MAX_CALLED = 24
_CALLED_SCAN = 32_000


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
    failing_key: str = ""
    """The failing call as `ObservedCall.key` (tool and sorted-key arguments): what a proposal of
    the same call again is compared with."""
    edits_on_failure: int = 0
    """Successful edits since this failure first appeared that did not change it."""
    pointers: Pointers = field(default_factory=Pointers)
    """The failing test and location the live failure's latest output states (else the last stated)."""
    read_since_failure: frozenset[str] = frozenset()
    """Files read since the live failure first appeared."""
    edited_since_failure: tuple[str, ...] = ()
    """Files changed since the live failure first appeared, in order."""
    failing_scripts: tuple[str, ...] = ()
    """The program files the failing command runs (the check, when it is the agent's script)."""
    check_rewritten: bool = False
    """One of `failing_scripts` was written since the failure was last seen."""
    called: tuple[str, ...] = ()
    """Functions the live failure points at: its test's name less `test_`, then the names called
    in its output, in order (at most `_MAX_CALLED`)."""
    seen: Seen = ()
    """The files read whole or in part, each with what its last read showed (`state.seen`),
    dropped when the file changes: what an edit directive quotes."""
    whole: frozenset[str] = frozenset()
    """Of `seen`, the files whose last read showed them whole."""
    probes: tuple[tuple[str, str], ...] = ()
    """Probes run so far (the most recent `checks.MAX_PROBES`): each call's key and the signature its
    last run failed with (empty: it did not fail)."""
    quiet_since_failure: bool = False
    """Since the live failure was last seen, only reads, searches and edits that changed nothing
    ran: nothing that could change what the failing check sees."""
    put_back: bool = False
    """Since the live failure was last seen, the agent put the files it had changed back as they
    were (`checks.restores`), and edited nothing after: the same failure next is the code without
    its changes, not one more that failed to change it."""
    changes: Changes = field(default_factory=Changes)
    """The source files changed and not put back over the whole conversation (`checks.Changes`)."""

    @property
    def live(self) -> bool:
        return self.last_diagnostic_class is DiagnosticClass.FAIL

    @property
    def predates(self) -> bool:
        """The live failure first appeared on the agent's changes and was seen with every one of
        them put back (`Changes.predates`): it is there without the agent's work, and not a failure
        the agent began from (corpus, sphinx-8035: a docutils warning that failed a test on the
        repository as it was, which the proxy told the agent to change the code for)."""
        signature = self.last_diagnostic_signature
        return self.live and signature is not None and self.changes.predates(signature)

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

    def shown_whole(self, path: str) -> str | None:
        """What the agent's last read of `path` showed, when it showed the file whole and it has
        not changed since."""
        return shown_whole(self.seen, self.whole, path)

    def shown(self, path: str) -> str | None:
        """What the agent's last read of `path` showed, when it read it and has not changed it
        since (paths compared as the agent wrote them, relative or absolute)."""
        return next((text for known, text in reversed(self.seen) if same_file(known, path)), None)


SIX_FIELDS = tuple(f.name for f in fields(RepairState))[:6]
"""The current-failure model's own fields (the first six), in the order they are shown."""


def _called(pointers: Pointers, output: str) -> tuple[str, ...]:
    """The functions a failure's output points at (see `RepairState.called`)."""
    test = pointers.test_id or ""
    name = re.split(r"[:.\[]", test.rsplit("::", 1)[-1])[0]
    tested = (name.removeprefix("test_"),) if name.startswith("test_") else ()
    return tuple(dict.fromkeys((*tested, *called_names(output[:_CALLED_SCAN]))))[:_MAX_CALLED]


def _touched(state: RepairState, calls: tuple[ObservedCall, ...]) -> tuple[frozenset[str], tuple[str, ...], bool]:
    """The live failure's read and edited files, with this turn's added (an edited file put back
    as it was leaves the list), and whether the last change to the sources put files back."""
    read = {c.target for c in calls if c.kind in READS and c.target}
    edited, back = list(state.edited_since_failure), state.put_back
    for call in calls:
        if restores(call):
            edited, undid = restored_from(edited, call)
            back = back or undid
        elif call.changed_sources:
            back = False
            edited += [call.target] if call.target and call.target not in edited else []
    known = state.read_since_failure
    read_all = known | frozenset(p for p in read if p) if len(known) < _MAX_READ else known
    return read_all, tuple(edited[-_MAX_FILES:]), back


def fold_failure(state: RepairState, turn: ObservedTurn, post_edit_reverify: bool = True) -> RepairState:
    """The failure model after `turn` (pure)."""
    calls = settled(turn.calls, state.seen, state.whole)  # a substitution of text not there: no change
    if not calls:
        return state
    read, edited, back = _touched(state, calls)
    seen, whole = seen_after(state.seen, state.whole, calls)
    mutated = [i for i, c in enumerate(calls) if c.changed_sources]
    epoch = state.write_epoch + (1 if mutated else 0)
    failed_at = first_failure(calls, state.probes)
    probes = probes_after(state.probes, calls)
    until = len(calls) if failed_at is None else failed_at + 1  # a check may write its script first
    rewritten = state.check_rewritten or rewrites(calls[:until], state.failing_scripts)

    if failed_at is not None:
        failing = calls[failed_at]
        found = evidence(failing.result)
        same = state.live and found.signature == state.last_diagnostic_signature
        again = failing.probe and not same and (failing.key, found.signature) in state.probes
        _, edited_at, undone = _touched(state, calls[: failed_at + 1])
        at_check = state.changes.after(calls[: failed_at + 1]).saw(found.signature)
        back = _touched(replace(state, edited_since_failure=edited_at, put_back=False), calls[failed_at + 1 :])[2]
        # the check itself was rewritten, or the sources put back as they were before the
        # agent's changes: a new reproduction, or the failure without those changes, no repeat
        held = same and (rewritten or undone)
        latest = extract_pointers(failing.result)
        kept = same and latest.empty
        pointers = state.pointers if kept else latest
        if not same:  # a new failure: what was read or edited for the old one does not count
            read, edited, back = _touched(RepairState(), calls[failed_at + 1 :])
        # An edit after the failing check in the same turn has not been re-verified yet.
        edited_after = any(i > failed_at for i in mutated)
        edited_before = any(i < failed_at for i in mutated)
        return RepairState(
            last_diagnostic_class=DiagnosticClass.FAIL,
            last_diagnostic_signature=found.signature,
            write_epoch=epoch,
            same_diagnostic_streak=(state.same_diagnostic_streak + (0 if held else 1) if same else 2 if again else 1),
            edit_since_failure=edited_after,
            reverify_owed=edited_after and post_edit_reverify,
            snippet=found.snippet,
            failing_tool=failing.call.name,
            failing_command=failing.command or "",
            failing_arguments=failing.call.raw_arguments,
            failing_key=failing.key,
            edits_on_failure=(
                state.edits_on_failure + (1 if (state.edit_since_failure or edited_before) and not undone else 0)
                if same
                else 0
            ),
            pointers=pointers,
            called=state.called if kept else _called(pointers, failing.result),
            read_since_failure=read,
            edited_since_failure=edited,
            failing_scripts=read_command(failing.command).scripts if failing.command else (),
            check_rewritten=rewrites(calls[failed_at + 1 :], read_command(failing.command).scripts)
            if failing.command
            else False,
            seen=seen,
            whole=whole,
            probes=probes,
            quiet_since_failure=quiet(calls[failed_at + 1 :]),
            put_back=back,
            changes=at_check.after(calls[failed_at + 1 :]),
        )
    changes = state.changes.after(calls)
    if any(is_check(c, state.probes) and c.outcome is Outcome.PASS for c in calls):
        passed = DiagnosticClass.PASS
        return RepairState(passed, write_epoch=epoch, seen=seen, whole=whole, probes=probes, changes=changes)
    if not state.live:
        return replace(state, write_epoch=epoch, seen=seen, whole=whole, probes=probes, changes=changes)
    if any(is_check(c, state.probes) and c.outcome is Outcome.ENVIRONMENT for c in calls):
        # the check ran again and could not run here: the failure it showed is not seen any more,
        # and nothing more can be known of it on this machine
        return RepairState(write_epoch=epoch, seen=seen, whole=whole, probes=probes, changes=changes)
    undone = back and not edited  # every file changed since the failure put back: nothing to re-verify
    if mutated:
        return replace(
            state,
            write_epoch=epoch,
            edit_since_failure=not undone,
            quiet_since_failure=False,
            reverify_owed=post_edit_reverify and not undone and not exercised(calls[max(mutated) + 1 :], edited),
            put_back=back,
            read_since_failure=read,
            edited_since_failure=edited,
            check_rewritten=rewritten,
            seen=seen,
            whole=whole,
            probes=probes,
            changes=changes,
        )
    return replace(
        state,
        write_epoch=epoch,
        edit_since_failure=state.edit_since_failure and not undone,
        reverify_owed=state.reverify_owed and not undone and not exercised(calls, edited),
        read_since_failure=read,
        edited_since_failure=edited,
        check_rewritten=rewritten,
        seen=seen,
        whole=whole,
        probes=probes,
        quiet_since_failure=state.quiet_since_failure and quiet(calls),
        put_back=back,
        changes=changes,
    )
