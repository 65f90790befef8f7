"""The current-failure model: which failure is live and whether anything changed it.

Folded once per turn by `fold_failure`, by these rules:

1. A turn is judged by its first failing check in call order, so a turn that edits and
   re-tests is judged by the re-test, past the edit's own "ok". A check is a call that
   verifies (a test runner, a program file run, a command whose output is a test report:
   `reading.classify`, `reading.observe`), or a probe of inline code run again (an agent
   that re-runs the same `python -c` after its edits uses it as its test; a probe run once
   is an experiment, and its failure is nobody's obligation); not a call the tool rejected
   before running it, and not one that could not run at all (an environment problem:
   `outputs.outcome`). A re-run probe that fails as its last run did counts both runs.
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
from dataclasses import replace

from proxy.engine.outputs.evidence import Pointers, evidence, extract_pointers
from proxy.engine.outputs.excerpt import called_names
from proxy.engine.outputs.outcome import Outcome
from proxy.engine.reading.commands import read_command
from proxy.engine.reading.observe import ObservedCall, ObservedTurn
from proxy.engine.reading.proposal import change_of
from proxy.engine.state.checks import (
    DIAGNOSTIC_KINDS,
    exercised,
    first_failure,
    is_check,
    probes_after,
    quiet,
    restored_from,
    restores,
    rewrites,
)
from proxy.engine.state.repair import MAX_TRIED, SIX_FIELDS, DiagnosticClass, RepairState
from proxy.engine.state.seen import seen_after, settled
from proxy.settings.kinds import LOOKS

__all__ = ["DIAGNOSTIC_KINDS", "SIX_FIELDS", "DiagnosticClass", "RepairState", "fold_failure", "is_check"]

_MAX_FILES = 12
_MAX_READ = 64
_MAX_CALLED = 24
_CALLED_SCAN = 32_000


def _called(pointers: Pointers, output: str) -> tuple[str, ...]:
    """The functions a failure's output points at (see `RepairState.called`)."""
    test = pointers.test_id or ""
    name = re.split(r"[:.\[]", test.rsplit("::", 1)[-1])[0]
    tested = (name.removeprefix("test_"),) if name.startswith("test_") else ()
    return tuple(dict.fromkeys((*tested, *called_names(output[:_CALLED_SCAN]))))[:_MAX_CALLED]


def _tried(tried: tuple[tuple[str, str], ...], calls: tuple[ObservedCall, ...]) -> tuple[tuple[str, str], ...]:
    """`tried` with what the source edits of `calls` changed, as their arguments say."""
    found = [c for c in calls if c.changed_sources and not c.no_op]
    changes = (change_of(c.call.arguments, c.command) for c in found)
    more = tuple(change for change in changes if change is not None and change[0] != change[1])
    return (*tried, *more)[-MAX_TRIED:] if more else tried


def _touched(state: RepairState, calls: tuple[ObservedCall, ...]) -> tuple[frozenset[str], tuple[str, ...], bool]:
    """The live failure's read and edited files, with this turn's added (an edited file put back
    as it was leaves the list), and whether the last change to the sources put files back."""
    read = {c.target for c in calls if c.kind in LOOKS and c.target}
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
    """The failure model after `turn` (pure): by what the turn holds, a failing check (rule 2),
    a clean run of the live failure's check or a passing check (a pass), a check that could not
    run, edits (rule 3), or anything else (rule 4)."""
    calls = settled(turn.calls, state.seen, state.whole)  # a substitution of text not there: no change
    if not calls:
        return state
    state = replace(state, ambient=state.ambient.after(calls))
    failed_at = first_failure(calls, state.probes)
    if failed_at is not None:
        return _failed(state, calls, failed_at, turn.ordinal, post_edit_reverify)
    seen, whole = seen_after(state.seen, state.whole, calls)
    mutated = [i for i, c in enumerate(calls) if c.changed_sources]
    epoch = state.write_epoch + (1 if mutated else 0)
    probes = probes_after(state.probes, calls, state.ambient.lines)
    changes = state.changes.after(calls)
    ambient = state.ambient
    if any(is_check(c, state.probes) and c.outcome is Outcome.PASS for c in calls) or _ran_clean(state, calls):
        passed = DiagnosticClass.PASS
        return RepairState(
            passed, write_epoch=epoch, seen=seen, whole=whole, probes=probes, changes=changes, ambient=ambient
        )
    if not state.live:
        return replace(state, write_epoch=epoch, seen=seen, whole=whole, probes=probes, changes=changes)
    if any(is_check(c, state.probes) and c.outcome is Outcome.ENVIRONMENT for c in calls):
        # the check ran again and could not run here: the failure it showed is not seen any more,
        # and nothing more can be known of it on this machine
        return RepairState(write_epoch=epoch, seen=seen, whole=whole, probes=probes, changes=changes, ambient=ambient)
    read, edited, back = _touched(state, calls)
    rewritten = state.check_rewritten or rewrites(calls, state.failing_scripts)
    undone = back and not edited  # every file changed since the failure put back: nothing to re-verify
    kept = replace(
        state,
        write_epoch=epoch,
        read_since_failure=read,
        edited_since_failure=edited,
        check_rewritten=rewritten,
        seen=seen,
        whole=whole,
        probes=probes,
        put_back=back,
        changes=changes,
        tried=_tried(state.tried, calls),
    )
    if mutated:
        owed = post_edit_reverify and not undone and not exercised(calls[max(mutated) + 1 :], edited)
        return replace(kept, edit_since_failure=not undone, quiet_since_failure=False, reverify_owed=owed)
    return replace(
        kept,
        edit_since_failure=state.edit_since_failure and not undone,
        reverify_owed=state.reverify_owed and not undone and not exercised(calls, edited),
        quiet_since_failure=state.quiet_since_failure and quiet(calls),
    )


def _ran_clean(state: RepairState, calls: tuple[ObservedCall, ...]) -> bool:
    """The live failure's own check ran again (the same call, or a run of the same script) and
    printed no failure: the failure it showed is gone, whether or not the run printed a pass
    (a reproduction script that prints its results, SWE-agent's output with no exit code:
    corpus, django-11019, a `python reproduce.py` whose TypeError was gone, cited four turns on)."""
    if not state.live:
        return False
    return any(
        c.outcome is Outcome.NEUTRAL and not c.rejected and is_check(c, state.probes) and _reruns(c, state)
        for c in calls
    )


def _reruns(call: ObservedCall, state: RepairState) -> bool:
    """`call` runs the live failure's check: the same call, or a command running the same script."""
    if call.key == state.failing_key:
        return True
    scripts = read_command(call.command).scripts if call.command else ()
    return bool(scripts) and bool(state.failing_scripts) and set(scripts) == set(state.failing_scripts)


def _failed(
    state: RepairState, calls: tuple[ObservedCall, ...], failed_at: int, ordinal: int, post_edit_reverify: bool
) -> RepairState:
    """Rules 1 and 2: the turn's first failing check, the same failure again or a new one."""
    read, edited, back = _touched(state, calls)
    seen, whole = seen_after(state.seen, state.whole, calls)
    mutated = [i for i, c in enumerate(calls) if c.changed_sources]
    rewritten = state.check_rewritten or rewrites(calls[: failed_at + 1], state.failing_scripts)
    failing = calls[failed_at]
    found = evidence(failing.result, state.ambient.lines)
    same = state.live and found.signature == state.last_diagnostic_signature
    again = failing.probe and not same and (failing.key, found.signature) in state.probes
    _, edited_at, undone = _touched(state, calls[: failed_at + 1])
    at_check = state.changes.after(calls[: failed_at + 1])
    back = _touched(replace(state, edited_since_failure=edited_at, put_back=False), calls[failed_at + 1 :])[2]
    # the check itself was rewritten, or the sources put back as they were before the agent's
    # changes: a new reproduction, or the failure without those changes, no repeat
    held = same and (rewritten or undone)
    latest = extract_pointers(failing.result)
    kept = same and latest.empty
    if not same:  # a new failure: what was read or edited for the old one does not count
        read, edited, back = _touched(RepairState(), calls[failed_at + 1 :])
    # An edit after the failing check in the same turn has not been re-verified yet.
    edited_after = any(i > failed_at for i in mutated)
    edited_before = any(i < failed_at for i in mutated)
    scripts = read_command(failing.command).scripts if failing.command else ()
    return RepairState(
        last_diagnostic_class=DiagnosticClass.FAIL,
        last_diagnostic_signature=found.signature,
        write_epoch=state.write_epoch + (1 if mutated else 0),
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
        pointers=state.pointers if kept else latest,
        called=state.called if kept else _called(latest, failing.result),
        read_since_failure=read,
        edited_since_failure=edited,
        failing_scripts=scripts,
        check_rewritten=rewrites(calls[failed_at + 1 :], scripts) if failing.command else False,
        seen=seen,
        whole=whole,
        probes=probes_after(state.probes, calls, state.ambient.lines),
        ambient=state.ambient,
        quiet_since_failure=quiet(calls[failed_at + 1 :]),
        put_back=back,
        failing_since=state.failing_since if same else ordinal,
        changes=at_check.saw(found.signature).after(calls[failed_at + 1 :]),
        tried=_tried(state.tried, calls) if same else _tried((), calls[failed_at + 1 :]),
    )
