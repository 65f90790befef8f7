"""`no_effect`: edit, run the same command, and it prints what it printed before; again and again.

The agent changes files and runs its reproduction (or its test, or any command it keeps running),
and the run prints an output it has already printed since the agent began changing things:
exactly the last one (the edits are not reaching what runs: another copy of the module is
imported, the edited branch is never taken, a debug print never appears), or one from before
that (a flip-flop: the agent toggles its own script between two wrong versions and the check
alternates between two outputs, so nothing repeats "in a row"). Whatever the exit code: a script
that prints the wrong value and exits 0 loops as surely as a failing test. Any write that landed
counts as a change, a file of the agent's own included (its reproduction script rewritten, and the
same one-line output six times: open-weight models on SWE-agent 0.x). Read from the run's progress
(`state.progress`).

Counts, per command, its runs that printed an output it printed before, each with a write landed
since its previous run; a run that prints something new starts the count again (the edits moved
something). Fires when the count reaches a rung of the ladder: seen at `after` (default `AFTER`),
said once the next run confirms it (`confirm`).

Remedy: the output quoted, and a check that the edited code is what runs asked for before editing
again; for a flip-flop, that the two outputs alternate.

Must never fire on: a run whose output is new (progress, whatever it printed); the same run again
with nothing written between (`repeat_call`'s, or the failure model's); the same failure as the
run before, the same way, after an edit of other files (the failure model's `stuck_same_diagnostic`:
a flip back to an earlier failure is counted here, a failure repeated in a row is not, unless the
write was to the script the run names, which the failure model does not count: the same library
failure while only the agent's reproduction is rewritten); reads, searches and edits themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

from proxy.engine.detectors.base import Detector, Trip, TurnFacts
from proxy.engine.detectors.calls import excerpt
from proxy.engine.state.progress import Step, episode
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.wording import PREFIX
from proxy.settings.kinds import Action, Ask, CallKind, Mode
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "DETECTOR", "NAME"]

NAME = "no_effect"
AFTER = 3
"""Runs, each after a write, that printed an output the command had printed before."""
MODE = Mode.ACT
"""Acts by default: on the corpus's test part (issue 60, 2026-12-07) judged right 2 of 2 under the
strict rubric, redundant 0 of 2 (OpenHands 1.0 with GLM-4.6: edits in one copy of a package while
another ran); tune: 8 trips, redundant 1 of 7. Few trips: the README says so."""
OPTIONS = Ladder(after=AFTER, action=Action.NUDGE, mode=MODE, confirm=1)
_RUNS = frozenset({CallKind.VERIFY.value, CallKind.OTHER.value})
_KEPT_OUTPUTS = 8


@dataclass(frozen=True, slots=True)
class State:
    action: str = ""
    """The command watched (its action digest): the latest run that counted."""
    outputs: tuple[str, ...] = ()
    """What it printed since the agent began changing things (result digests, latest last)."""
    count: int = 0
    """Its runs that printed one of those again, a write landed before each."""
    since: int = 0
    """The turn of its first run of the stretch."""
    flipped: bool = False
    """One of the counted runs went back to an output before the latest: a flip-flop."""
    start: int = -1
    """The first turn of the episode (a person's new message starts one); -1: none seen yet."""


def _previous(steps: tuple[Step, ...], action: str) -> tuple[int, tuple[str, ...]]:
    """The index of the command's previous run among `steps` (the newest excluded) and the files
    written after it (a write that names none: ""); -1 when it did not run before."""
    written: list[str] = []
    for at in range(len(steps) - 2, -1, -1):
        step = steps[at]
        if step.action == action:
            return at, tuple(written)
        if step.wrote:
            written.append(step.target)
    return -1, ()


def _its_own(written: tuple[str, ...], run: Step) -> bool:
    """A file written is one the run names (its script rewritten: the failure model then holds its
    streak, so the same failure again is counted here)."""
    return any(path and _names(run.label, path.rsplit("/", 1)[-1]) for path in written)


def _names(command: str, name: str) -> bool:
    """`name` stands in the command as a file of its own (`parse.py` is not in `test_parse.py`)."""
    at = command.find(name)
    while at != -1:
        before = command[at - 1] if at else " "
        end = at + len(name)
        after = command[end] if end < len(command) else " "
        if not _word(before) and not _word(after):
            return True
        at = command.find(name, at + 1)
    return False


def _word(char: str) -> bool:
    return char.isalnum() or char in "_-"


def _judge(state: State, steps: tuple[Step, ...]) -> tuple[State, bool]:
    """The state after the newest step, a run; whether it counted."""
    run = steps[-1]
    before, written = _previous(steps, run.action)
    if before < 0 or run.action != state.action:
        return State(run.action, (run.result,), 0, run.turn, False, state.start), False
    if not written:
        return state, False  # the same command again with nothing changed: not this pattern's
    previous = steps[before]
    if run.result not in state.outputs:
        kept = (*state.outputs, run.result)[-_KEPT_OUTPUTS:]
        return State(run.action, kept, 0, state.since, False, state.start), False
    if run.failed and run.result == previous.result and not _its_own(written, run):
        return state, False  # the same failure again after an edit, in a row: stuck_same_diagnostic's
    flipped = state.flipped or run.result != previous.result
    return State(run.action, state.outputs, state.count + 1, state.since, flipped, state.start), True


def fold(state: State, facts: TurnFacts, ladder: Ladder, _policy: Policy) -> tuple[State, list[Trip]]:
    if not facts.turn.calls:
        return state, []
    start = facts.turn.ordinal if state.start < 0 else state.start
    state = State(state.action, state.outputs, state.count, state.since, state.flipped, start)
    steps = episode(facts.progress.steps, start)
    first = len(steps) - len(facts.turn.calls)
    trips: list[Trip] = []
    for at, call in enumerate(facts.turn.calls):
        end = first + at + 1
        if end <= 0 or call.kind.value not in _RUNS or not call.command or call.rejected:
            continue
        if not steps[end - 1].result:
            continue  # it printed nothing to compare
        state, counted = _judge(state, steps[:end])
        if not counted:
            continue
        action = ladder.action_at(state.count)
        if action is None:
            continue
        shape = "went back to an output it printed before" if state.flipped else "printed the same output"
        detail = f"after {state.count} writes `{call.command}` {shape}"
        trips.append(
            facts.trip(
                DETECTOR,
                action,
                detail,
                state.count,
                subject=call.describe(),
                excerpt=excerpt(call.result),
                since=state.since,
                arguments=("flip-flop",) if state.flipped else (),
            )
        )
    return state, trips


def remedy(trip: Trip, context: RemedyContext) -> str:
    if "flip-flop" in trip.arguments:
        return context.fit(
            f"{PREFIX} Your last {trip.count} changes only moved {trip.subject} back and forth between "
            "outputs it had already printed; it printed again:",
            trip.excerpt,
            "Stop switching between the same versions. Read the code that produces this output, find why, "
            "and make a change you have not made before.",
        )
    return context.fit(
        f"{PREFIX} Your last {trip.count} changes changed nothing that {trip.subject} prints; it printed:",
        trip.excerpt,
        "Before editing again, check that the code you edit is the code that runs (which file is "
        "imported, whether the changed lines are reached), then change that.",
    )


DETECTOR = Detector(name=NAME, initial=State(), fold=fold, options=OPTIONS, remedy=remedy, asks=Ask.STOP)
