"""`read_stagnation`: turn after turn of reading and searching, and no change is made.

Counts consecutive turns that only read and search (at least `read_share` of their calls, an
option of its own) with no successful change; fires when that run reaches a rung of the ladder
(first `after`, default `AFTER`) once it has re-read something it already read in the run (reads
are keyed by the canonical call, path and range included) within its last `reread_within`
turns, or later, on the turn it does. Whether or not any edit ever failed. A successful change,
or a turn that does something else (runs a check, a command), ends the run; so does the agent's
complaint that a reply made no valid call (the model tried to act and its edit was turned down
for its format: a mini-swe-agent run grepping between six rejected edit attempts is not stuck
reading).

Remedy: stop reading, state a hypothesis, make the edit it calls for (no file named: that is
the agent's finding). `force` pins an edit tool.

A read is keyed by its call and what it showed: a stateful editor's `scroll_down` that shows
the next page each time is paging, not re-reading.

Block: within such a run, once it has re-read something, a read of a named file proposed again
exactly as one of the last `block` turns made it (the same file, the same range: nothing has
been written since) is refused: it says the same; the re-ask names the live failure's next step.
Navigation that names no file (`goto`, `scroll_down`) is never refused. The block gate's own
evidence (`Refusal.owned`), in shadow too, never a hand-back in shadow: what it claims is read off
the transcript (recovery bench, train part: such a read proposed 6 times in the defaults arm of the
twelfth to twentieth runs, leap and vowels, each passed on and showing what it showed; seen in the
test part's thirtieth, read while measuring: vat seed 5, the test and the code viewed in turn,
three rounds, to the end of its turns). On the corpus it refuses
nothing (no recorded reply proposes such a read in a tool-call run; text-protocol agents are not
judged: `judges_text` is off).

Must never fire on: paging through one large file; reading many distinct files and then
editing; a straight trail of new reads after one early re-read; a run that keeps editing; a
role whose own prompt forbids it to edit the code (a multi-agent scaffold's locator or tester:
`text.roles`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pydantic import Field

from proxy.engine.detectors.base import Detector, Forced, Levers, Refusal, Trip, TurnFacts
from proxy.engine.reading.proposal import Proposal
from proxy.engine.state.failure import RepairState
from proxy.engine.state.patterns import UserFacts
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.failure_reads import next_call, next_step, step_of
from proxy.engine.writing.wording import PREFIX
from proxy.settings.kinds import LOOKS, Action, Ask, CallKind, Mode
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "DETECTOR", "NAME"]

NAME = "read_stagnation"
AFTER = 3
"""Consecutive read-or-search-only turns without a change (one of them a re-read) that trip the pattern.
Judged on real runs (bench/trajectories.py --within 4): at 8, 8 of 49 judged trips were on
explorations that were converging (the agents edited within a few turns); at 10, 4 of 42."""
READ_SHARE = 0.75
"""A turn is read-dominated when at least this share of its calls read or search."""


REREAD_WITHIN = 5
"""The run's latest re-read is among its last this many turns: it is going back over what it read
now, not once early on. Judged on real runs (bench/trajectories.py --within 4, the runs with a
judged trip): with a re-read at any distance 59 right, 9 wrong, 1 unclear fired; within 5, 56, 5
and 0 (gone: a directory walked down level by level after one repeated `find_file`, gson-1787; a
search repeated while finding the file, then a straight read of it, dubbo-9187, jackson-4265; and
three right ones, wandering whose one re-read was early)."""

BLOCK = 2
"""Turns back within which the same read, proposed again with nothing written since, is refused."""


class Options(Ladder):
    """`[patterns.read_stagnation]`: the ladder, what makes a turn read-dominated, the block rung."""

    read_share: float = Field(default=READ_SHARE, gt=0, le=1)
    """A turn is read-dominated when at least this share of its calls read or search."""
    reread_within: int = Field(default=REREAD_WITHIN, ge=1)
    """The latest re-read is among the run's last this many turns."""
    block: int = Field(default=BLOCK, ge=0)
    """How many turns back a read proposed again exactly is refused, within a run of reads (0: never)."""


MODE = Mode.SHADOW
"""Shadow by default: it trips, logs and counts, and says nothing (no trip on the test part: not shown
right on agents its rule was not written against). A policy's `mode = "act"` switches it on."""
OPTIONS = Options(after=AFTER, action=Action.NUDGE, mode=MODE, confirm=1)
_MAX_PATHS = 64
_MAX_KEYS = 256
_NEAR = 4
"""Turns back within which a read made again is a short cycle's (ping_pong's), not a revisit."""
_RECENT = 4
"""Reads remembered in one run (a longer run still sees re-reads of these)."""


@dataclass(frozen=True, slots=True)
class State:
    run: int = 0
    """Read-only turns in a row."""
    seen: frozenset[str] = frozenset()
    reread_at: int = 0
    """The run's turn of its latest re-read (0: none yet)."""
    fired: frozenset[int] = frozenset()
    """Rungs already fired in this run."""
    reads: tuple[tuple[str, int], ...] = ()
    """(file, times read) in this run, most read first."""
    recent: tuple[tuple[str, ...], ...] = ()
    """The run's last few turns' reads of a named file (keys), oldest first."""
    revisits: int = 0
    """Turns of the run that read again something it had read, showing the same thing."""
    began: int = 0
    """The turn the run began."""
    last: tuple[frozenset[str], ...] = ()
    """The last `_NEAR` turns' reads (with what they showed): a read of one of them again is the
    loop of one to four calls that repeat_call and ping_pong name, not a revisit counted here."""

    @property
    def reread(self) -> bool:
        """The run has gone back over something it read."""
        return self.reread_at > 0


def _count(reads: tuple[tuple[str, int], ...], paths: list[str]) -> tuple[tuple[str, int], ...]:
    counts = dict(reads)
    for path in paths:
        counts[path] = counts.get(path, 0) + 1
    return tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:_MAX_PATHS])


def fold(state: State, facts: TurnFacts, ladder: Options, _policy: Policy) -> tuple[State, list[Trip]]:
    calls = facts.turn.calls
    if not calls or facts.read_only:
        return state, []
    reads = [c for c in calls if c.kind in LOOKS]
    if any(c.succeeded_mutation for c in calls) or len(reads) < ladder.read_share * len(calls):
        return State(), []
    keys = {f"{c.key}\x00{c.digest}" for c in reads}  # the same read showing something else is paging
    paths = [p for p in (c.target for c in reads if c.kind is CallKind.READ) if p]
    near = frozenset().union(*state.last)
    reread = bool(keys & state.seen)
    again = bool((keys & state.seen) - near)  # a read of the last few turns again: repeat_call's, ping_pong's
    state = State(
        run=state.run + 1,
        seen=state.seen | keys if len(state.seen) < _MAX_KEYS else state.seen,
        reread_at=state.run + 1 if reread else state.reread_at,
        fired=state.fired,
        reads=_count(state.reads, paths),
        recent=(*state.recent, tuple(sorted(c.key for c in reads if c.kind is CallKind.READ and c.target)))[-_RECENT:],
        revisits=state.revisits + (1 if again else 0),
        began=state.began or facts.turn.ordinal,
        last=(*state.last, frozenset(keys))[-_NEAR:],
    )
    reached = [n for n in ladder.counts if n <= state.revisits and n not in state.fired] if again else []
    if not reached:
        return state, []
    action = ladder.action_at(max(reached))
    state = replace(state, fired=state.fired | set(reached))
    if action is None:
        return state, []
    detail = (
        f"{state.run} turns of reading and searching without a change, {state.revisits} of them going back "
        "over what was read (the same read showing the same thing)"
    )
    subject = state.reads[0][0] if state.reads else ""
    return state, [facts.trip(DETECTOR, action, detail, state.run, subject=subject, since=state.began)]


def on_user(state: State, facts: UserFacts, _ladder: Options, _policy: Policy) -> tuple[State, list[Trip]]:
    """A complaint that the last reply made no valid call ends the run (the model tried to act)."""
    return (State(), []) if facts.complaint else (state, [])


def remedy(trip: Trip, context: RemedyContext) -> str:
    # No file is named: which one the fix belongs in is the agent's finding, not ours. Named by
    # how often it was read, it was wrong on judged real runs (a directory listed, a file read
    # twice while ruling it out, a tie broken by name).
    return context.fit(
        f"{PREFIX} {trip.count} turns of re-reading and searching without changing anything.",
        "",
        "Stop reading. State your hypothesis in one sentence, then make the concrete edit it calls for "
        "in the file it points to; or, if something blocks you, stop and say what.",
    )


def force(_trip: Trip, levers: Levers) -> Forced | None:
    """An edit tool: the next step is a change."""
    return Forced.of(levers.classifier.tool_of_kind(CallKind.EDIT, set(levers.offered)), CallKind.EDIT)


def blocks(state: State, _repair: RepairState, options: Options) -> bool:
    """A run of reads is on and has gone back over what it read once already (the first re-read
    passes: only an agent that re-reads is held to it)."""
    return bool(options.block) and state.reread and bool(state.recent)


def futile(state: State, proposal: Proposal, context: RemedyContext, options: Options) -> Refusal | None:
    """The same read as in the last `block` turns of the run: the file has not changed. The re-ask
    names the live failure's next step where that is another call (as `repeat_call`'s does)."""
    if proposal.kind is not CallKind.READ or not any(proposal.key in keys for keys in state.recent[-options.block :]):
        return None
    reason = f"{proposal.describe()} was read in the last {options.block} turns, and nothing has been written since."
    instead, pinned = "Use what it showed: make the change you have in mind, or run the check.", None
    if context.repair.live:
        found = step_of(context.repair)
        call = next_call(found, context.vocabulary, context.repair.failing_tool)
        if call is not None and call.name == proposal.name and (proposal.arguments or {}) == call.arguments:
            call = None  # the failure's next step is this very read: no step to name but the change
        if call is not None:
            instead, pinned = next_step(found, context.vocabulary, hold=False), call
    return Refusal(NAME, reason, instead, pinned=pinned, owned=True, halts=False)


DETECTOR = Detector(
    name=NAME,
    initial=State(),
    fold=fold,
    options=OPTIONS,
    remedy=remedy,
    force=force,
    on_user=on_user,
    blocks=blocks,
    futile=futile,
    asks=Ask.CHANGE,
    gate_owned=True,  # the same read with nothing written since: the block gate's own evidence
    owned_halts=False,
)
