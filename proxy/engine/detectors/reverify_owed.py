"""`reverify_owed`: successful edits landed on a live failure and the check was not re-run.

Counts the turns of other work (neither an edit nor a re-run of the check) since the last edit
that left a re-verify owed: the agent moved on without re-running. Fires when that count reaches a
rung of the ladder (first `after`, default `AFTER`). Resets once the check is run again; another
edit starts the count again (a change made in several steps is not moving on), and so does a try
at one that wrote nothing (`ObservedCall.tries_source`: an editor call that failed, an inline
program whose guarded write did not run): the agent is still making its change. A turn of inline
experiments only (`python -c`, `python - <<EOF`: `ObservedCall.probe`) neither counts nor resets:
the agent is finding out what its change needs, or trying the change its own way; nor does a turn
spent on the failing check's own script (rewriting it, removing it, looking at it): the agent is
preparing the re-run.

Remedy: re-run the failing check exactly as it was made. `force` pins the policy's verify
tool, else the tool that ran the failing check.

Must never fire on: edits with no live failure; an edit followed by the re-run in the same turn;
the turns between two halves of one edit (edit, look, edit); tries at the next edit that wrote
nothing (corpus, mswea1 sphinx-7748: three `python3 - <<'PY'` programs whose `if old in s:` write
did not run, then the re-run, which the trip would have asked for); inline experiments between
two edits (mswea2 pvlib-1606, astropy-14182: `python -c "import scipy.misc; print(hasattr(...))"`,
then the next edit and the re-run); work on the check's own script after the edit (OpenHands 0.15
django-10880: a `create` of reproduce_issue.py turned down, `rm`, the `create` again, then the
re-run); an edit put back as it was before
(nothing left to re-verify); edits the check cannot see (a Python check after edits of Java, Go,
Rust... sources only: `unseen_by`; corpus, SWE-agent on Java, a `python reproduce_bug.py` that
raises on purpose, told to be re-run after edits of TextBuffer.java); edits a later run failed
through (its traceback passes through an edited file: `checks.exercised`, corpus django-12193);
anything while `post_edit_reverify` is off.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from proxy.engine.detectors.base import Detector, Forced, Levers, Trip, TurnFacts
from proxy.engine.reading.commands import read_command
from proxy.engine.reading.workspace import same_file
from proxy.engine.state.failure import RepairState
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.wording import PREFIX, failing_call
from proxy.settings.kinds import Action, Ask, CallKind, Mode
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "DETECTOR", "NAME"]

NAME = "reverify_owed"
AFTER = 3
"""Turns of other work (no edit, no re-run) after the last unverified edit before the pattern trips:
the agent moved on. Between two halves of one edit, or an edit and a look at it, it is silent.
Measured on the corpus's tune part (bench/trajectories.py, --part tune): counting stacked edit
turns (2, the old rule), 23 trips, 13 of 21 redundant (the agent re-ran the check within its next
two calls anyway); counting turns of other work, at 1: 63 trips, 34 of 62 redundant; at 2: 27,
11 of 26; at 3: 14, 7 of 14; at 3, with tries at an edit and inline experiments not counted as other
work (and two misread commands read right, `shell.words`): 7, 2 of 6 (at 2: 19, 8 of 18; at 4: 4,
2 of 4); and with work on the check's own script not counted either: 6, 1 of 5. Agents re-run
when they are ready; the done gate holds the one move that matters (a finish while the re-run is
owed). Hence shadow by default (`MODE`)."""
MODE = Mode.SHADOW
"""It counts and is replayed, and says nothing, until it is measured right on agents its rule was not
written against (redundant at most 20%): see the README's pattern table."""
OPTIONS = Ladder(after=AFTER, action=Action.NUDGE, mode=MODE)


_PYTHON = frozenset({"python", "python3", "pytest", "py.test"})
_AROUND = frozenset({"cd", "echo", "head", "tail", "tee", "grep", "sort", "true", "export", "printf"})
"""Commands in a check's pipeline that run nothing of the project's."""
_UNIMPORTABLE = frozenset(
    {".java", ".kt", ".kts", ".scala", ".groovy", ".go", ".rs", ".cs", ".swift", ".rb", ".php", ".ts", ".tsx", ".js"}
)
"""Sources no Python program imports or builds by running it (C and C++ left out: an extension
built by the check itself would see them)."""


def unseen_by(repair: RepairState) -> bool:
    """Every file edited since the failure is a source in a language the failing check cannot
    load: it runs only Python (`python x.py`, `pytest`), and the edits are Java, Go, Rust..."""
    edited = repair.edited_since_failure
    if not edited or not repair.failing_command:
        return False
    runs = [s for s in read_command(repair.failing_command).segments if s.program not in _AROUND]
    python = bool(runs) and all(s.program in _PYTHON or (s.script or "").endswith(".py") for s in runs)
    return python and all(posixpath.splitext(path)[1] in _UNIMPORTABLE for path in edited)


def _on_the_check(target: str | None, repair: RepairState) -> bool:
    """`target` is a script the failing check runs (the agent rewriting or looking at its check)."""
    return target is not None and any(same_file(target, script) for script in repair.failing_scripts)


@dataclass(frozen=True, slots=True)
class State:
    edits: int = 0
    """Edit turns since the re-verify fell due."""
    away: int = 0
    """Turns since the last edit that neither edited nor re-ran the check: the agent moved on."""
    since: int = 0
    """The turn of the first edit the check has not seen."""


def fold(state: State, facts: TurnFacts, ladder: Ladder, _policy: Policy) -> tuple[State, list[Trip]]:
    if not facts.failure_model or not facts.after.reverify_owed or unseen_by(facts.after):
        return State(), []
    turn = facts.turn
    if any(c.changed_sources for c in turn.calls):
        return State(state.edits + 1, 0, state.since or turn.ordinal), []
    if any(c.tries_source for c in turn.calls):
        return State(state.edits, 0, state.since or turn.ordinal), []  # still making its change
    if turn.calls and all(c.probe or _on_the_check(c.target, facts.after) for c in turn.calls):
        return state, []  # an experiment, or work on the check's own script: not moving on
    state = State(state.edits, state.away + 1, state.since or turn.ordinal)
    action = ladder.action_at(state.away)
    if action is None:
        return state, []
    detail = (
        f"{state.edits} edit turn(s) on a live failure, then {state.away} turn(s) of other work "
        "without re-running the failing check"
    )
    return state, [facts.trip(DETECTOR, action, detail, state.away, since=state.since)]


def remedy(_trip: Trip, context: RemedyContext) -> str:
    head = f"{PREFIX} You edited files after this check failed and have not re-run it:"
    call = failing_call(context.repair, context.vocabulary)
    tail = f"Before anything else, re-run it exactly: {call}. Reply with that tool call only."
    return context.fit(head, context.repair.snippet, tail)


def force(_trip: Trip, levers: Levers) -> Forced | None:
    """The tool that re-runs the check: the policy's `verify_tool`, else the one that failed."""
    return Forced.of(levers.rerun_tool(), CallKind.VERIFY)


DETECTOR = Detector(
    name=NAME,
    initial=State(),
    fold=fold,
    options=OPTIONS,
    remedy=remedy,
    episodic=False,  # the current-failure model never resets on user messages
    force=force,
    asks=Ask.RERUN,
)
