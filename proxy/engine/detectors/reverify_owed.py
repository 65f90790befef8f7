"""`reverify_owed`: successful edits landed on a live failure and the check was not re-run.

Counts consecutive edit turns that leave a re-verify owed; fires when that count reaches
a rung of the ladder (first `after`, default `AFTER`). Resets once the check is run again.

Remedy: re-run the failing check exactly as it was made. `force` pins the policy's verify
tool, else the tool that ran the failing check.

Must never fire on: edits with no live failure; an edit followed by the re-run in the
same turn; an edit put back as it was before (nothing left to re-verify); edits the check
cannot see (a Python check after edits of Java, Go, Rust... sources only: `unseen_by`; corpus,
SWE-agent on Java, a `python reproduce_bug.py` that raises on purpose, told to be re-run after
edits of TextBuffer.java); edits a later run failed through (its traceback passes through an edited
file: `checks.exercised`, corpus django-12193); anything while `post_edit_reverify` is off.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from proxy.engine.detectors.base import Detector, Forced, Levers, RemedyContext, Trip, TurnFacts
from proxy.engine.detectors.wording import PREFIX, failing_call
from proxy.engine.reading.commands import read_command
from proxy.engine.state.failure import RepairState
from proxy.settings.kinds import Action, CallKind
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "DETECTOR", "NAME"]

NAME = "reverify_owed"
AFTER = 2
"""Consecutive edit turns on a live failure without a re-run before the pattern trips.

At 2, an agent that edits and then re-runs the check is never interrupted; one that stacks
a second edit on an unverified one is told to re-run first (an agent that tries to stop
right after one edit meets the done-gate instead). Every nudge stays in all later prompts,
so 1 costs tokens on long runs."""
OPTIONS = Ladder(after=AFTER, action=Action.NUDGE)


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


@dataclass(frozen=True, slots=True)
class State:
    edit_turns: int = 0
    """Edit turns in a row that left the re-verify owed."""


def fold(state: State, facts: TurnFacts, ladder: Ladder, _policy: Policy) -> tuple[State, list[Trip]]:
    if not facts.failure_model or not facts.after.reverify_owed or unseen_by(facts.after):
        return State(), []
    if not any(c.changed_sources for c in facts.turn.calls):
        return state, []
    state = State(state.edit_turns + 1)
    action = ladder.action_at(state.edit_turns)
    if action is None:
        return state, []
    detail = f"{state.edit_turns} edit turn(s) on a live failure without re-running the failing check"
    return state, [facts.trip(NAME, action, detail, state.edit_turns)]


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
)
