"""`stuck_same_diagnostic`: the same failure keeps coming back, edits or not.

Fires when the same-signature streak *advances* to a rung of the pattern's ladder (first
`after`, default `AFTER`), so once per stuck episode and per rung, on the request that
carries that failure.

Remedy: the failure quoted, the files edited in vain named, and one exact next call in the
agent's own tools: read the failing test, then the line where it fails, then the code the test
exercises (by the runner's naming convention), whichever has not been read since the failure
appeared; once all of it has been read, make a different change than the one that failed.
`force` pins a read tool, or an edit tool once everything is read; `restrict` takes the pure
edit tools away for one request. Watched (what follows is recorded per arm) and remembered (a
verdict is stored for the next run).

Block: only while nothing that could change what the check sees ran since its last failure
(only reads, searches and edits that changed nothing: no edit, install, script rewritten or
other command, which may write where the proxy cannot see). From a streak of `block` (default
`BLOCK`), the failing check proposed again unchanged (a tool call or one written in the agent's
text) is refused: run again it fails again. From a streak of `block_quiet` (default
`BLOCK_QUIET`: the first failure) only where the re-ask can be narrowed to the next step's tool,
or held to the next step's exact call (`writing.failure_reads.next_call`).

Must never fire on: edit, different error, edit, different error (progress resets the
streak to 1); a streak held at the threshold by an edit-only turn (it did not advance); the
same failure seen again once the edited files were put back as they were (`git checkout --
f.py`, a kept copy copied back: the failure without the agent's changes, `state.checks`);
short of the hand-back, a failure seen with every file the agent changed put back (it is there
without the agent's work: `RepairState.predates`, corpus sphinx-8035).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from proxy.engine.detectors.base import Detector, Forced, Levers, Refusal, Trip, TurnFacts
from proxy.engine.outputs.outcome import Outcome
from proxy.engine.reading.proposal import Proposal
from proxy.engine.state.failure import RepairState
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.failure_reads import (
    expected,
    next_call,
    next_kind,
    next_step,
    quoted_failure,
    step_of,
    step_tool,
)
from proxy.engine.writing.wording import PREFIX
from proxy.settings.kinds import Action, Ask, CallKind, Mode
from proxy.settings.policy import Ladder, Policy, Rung

__all__ = ["AFTER", "DETECTOR", "FORCE_AT", "HALT_AT", "NAME"]

NAME = "stuck_same_diagnostic"
AFTER = 3
"""Same-signature failures in a row before the pattern trips."""
FORCE_AT = 5
"""Streak at which the nudge escalates to `force`; every same failure after it forces the next
step again, until `HALT_AT`. Measured on Qwen2.5-Coder-1.5B (bench/recovery.py): with one force
rung the model read the code at 5, then re-ran the same failing check at 6 and 7 without a
change and was handed back at 8; nothing asked it for the edit in between."""
HALT_AT = 8
"""Streak at which the run is handed back as incomplete."""
BLOCK = 3
"""Streak from which the failing check proposed again, with nothing changed since, is refused."""
BLOCK_QUIET = 1
"""Streak from which the failing check proposed again, with only reads and searches since, is refused."""


class Options(Ladder):
    """`[patterns.stuck_same_diagnostic]`: the ladder, and the block rung."""

    exact: bool = False
    """Count only failures that print exactly what the one before printed (its whole output,
    normalised, not only the failure's signature): an agent whose debug prints change the output
    each time is probing, not stuck."""

    block: int = Field(default=BLOCK, ge=0)
    """Streak from which the failing check proposed again, nothing edited since, is refused (0: never)."""
    block_quiet: int = Field(default=BLOCK_QUIET, ge=0)
    """Streak from which the failing check proposed again, only reads run since, is refused (0: never)."""


MODE = Mode.SHADOW
"""Shadow by default: it trips, logs and counts, and says nothing (test part: judged right 2 of 10
(strict rubric); the agents had already stopped editing to investigate). A policy's `mode = "act"`
switches it on."""
OPTIONS = Options(
    after=AFTER,
    action=Action.NUDGE,
    escalate=(
        *(Rung(at=at, action=Action.FORCE) for at in range(FORCE_AT, HALT_AT)),
        Rung(at=HALT_AT, action=Action.HALT),
    ),
    mode=MODE,
)


@dataclass(frozen=True, slots=True)
class State:
    digest: str = ""
    """What the failing check printed last (its normalised output's digest)."""
    exact: int = 0
    """Failures of the streak in a row that printed exactly what the one before printed."""


def _printed(facts: TurnFacts) -> str:
    """The digest of what the failing check printed this turn."""
    key = facts.after.failing_key
    for call in facts.turn.calls:
        if call.key == key and call.outcome is Outcome.FAIL:
            return call.digest or ""
    return ""


def fold(state: State, facts: TurnFacts, ladder: Options, _policy: Policy) -> tuple[State, list[Trip]]:
    before, after = facts.before.same_diagnostic_streak, facts.after.same_diagnostic_streak
    if not facts.failure_model or after <= before:
        return (State() if after == 0 else state), []
    printed = _printed(facts)
    exact = state.exact + 1 if after > 1 and printed and printed == state.digest else 1
    state = State(printed, exact)
    count = exact if ladder.exact else after
    action = ladder.action_at(count)
    if action is None or (facts.after.predates and action is not Action.HALT):
        return state, []  # a failure there without the agent's work: no change of its is asked for
    detail = (
        f"the same failure came back {after} times in a row; "
        f"{facts.after.edits_on_failure} edit(s) since it appeared did not change it"
    )
    return state, [facts.trip(DETECTOR, action, detail, after, since=facts.after.failing_since)]


def remedy(_trip: Trip, context: RemedyContext) -> str:
    state = context.repair
    changed = (
        f"your last {state.edits_on_failure} edit(s) did not change it"
        if state.edits_on_failure
        else "running it again without a change will not change it"
    )
    head = f"{PREFIX} The same failure came back {state.same_diagnostic_streak} times in a row; {changed}"
    found = step_of(state)
    step = next_step(found, context.vocabulary, stated=False)
    quoted = quoted_failure(found)
    if quoted is None:  # the code to change quoted: what is expected of it said, shortened before the step
        return context.fit(f"{head}.", expected(found), step)
    return context.fit(f"{head}:", quoted, step)


def blocks(_state: State, repair: RepairState, options: Options) -> bool:
    """The failing check has failed `block` times in a row, or `block_quiet` times, and only
    reads, searches and edits that changed nothing ran since (a command the proxy cannot see
    into may have written: a `python - <<EOF` that rewrites a file, a `git restore`)."""
    if not repair.live or repair.predates or repair.edit_since_failure or not repair.quiet_since_failure:
        return False
    streak = repair.same_diagnostic_streak
    return (bool(options.block_quiet) and streak >= options.block_quiet) or (
        bool(options.block) and streak >= options.block
    )


def futile(_state: State, proposal: Proposal, context: RemedyContext, options: Options) -> Refusal | None:
    """The failing check again, unchanged: it fails the same way. Before the streak reaches `block`,
    only where the re-ask can be narrowed to another tool, or held to the next step's exact call
    (asked in words, Qwen2.5-Coder-1.5B proposed the same run again every time: recovery bench,
    `bash` style)."""
    repair = context.repair
    if proposal.key != repair.failing_key:
        return None
    found = step_of(repair)
    tool = step_tool(found, context.vocabulary, proposal.name)
    pinned = next_call(found, context.vocabulary, proposal.name)
    if tool is None and pinned is None and not (options.block and repair.same_diagnostic_streak >= options.block):
        return None
    streak = repair.same_diagnostic_streak
    reason = (
        f"{proposal.describe()} just failed, and nothing has changed since: run again, it fails the same way."
        if streak == 1
        else f"{proposal.describe()} failed the same way {streak} times in a row, and nothing has changed since: "
        "run again, it fails again."
    )
    return Refusal(
        NAME,
        reason,
        next_step(found, context.vocabulary),
        tool,
        pinned,
        times=streak,
        # the rung's own, whatever this pattern's mode: with only reads (or nothing) since the check
        # failed, its result is known. Corpus: no refusal left on either part (its one, after an
        # install in the same reply, judged wrong and gone); recovery bench at 4660f18 (streak >= 3
        # only): 24 of the defaults' 46 wasted turns were these re-runs at a streak of one or two
        owned=True,
    )


def force(_trip: Trip, levers: Levers) -> Forced | None:
    """The next step's exact call where the remedy names one (`next_call`: the read, the look, the
    held edit), its arguments held as the remedy names them; else a tool of its kind."""
    found = step_of(levers.repair)
    kind = next_kind(found)
    call = next_call(found, levers.vocabulary, levers.repair.failing_tool)
    if call is not None and call.name in levers.offered:
        return Forced.exactly(call, kind)
    return Forced.of(levers.classifier.tool_of_kind(kind, set(levers.offered)), kind)


def restrict(_trip: Trip, levers: Levers) -> frozenset[str]:
    """The pure edit tools: no further edit until the failure is understood."""
    return frozenset(n for n in levers.offered if levers.classifier.rule_of(n)[0] is CallKind.EDIT)


DETECTOR = Detector(
    name=NAME,
    initial=State(),
    fold=fold,
    options=OPTIONS,
    remedy=remedy,
    episodic=False,  # the current-failure model never resets on user messages
    force=force,
    restrict=restrict,
    watched=True,
    remembered=True,
    blocks=blocks,
    futile=futile,
    gate_owned=True,  # the failing check again with nothing but reads since it failed
    # ... but in shadow that refusal never hands the run back: the hand-back is this pattern's rung (the
    # 1.5B model, re-proposing the check after reading the test and the code, was handed back at its
    # third turn of ten: recovery bench, pages seed 1, at 8261ddb)
    owned_halts=False,
    judges_text=True,
    asks=Ask.STEP,
    names_next_step=True,
)
