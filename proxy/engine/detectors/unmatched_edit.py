"""`unmatched_edit`: an in-place substitution whose text is not in the file it edits.

`sed -i 's/old/new/' f.py` prints nothing and exits 0 whether or not `old` is in the file: the
agent takes it for a change and runs its check again, which fails as before (recovery bench,
`bash` style: a substitution of text an earlier edit had already changed, the test, another
such substitution, the test, until the turns ran out). Where the agent's last read showed the
file whole and it has not changed since, and the substitution is literal (`reading.sed`), the
proxy can tell: the text is not there, nothing changed. Counts such substitutions in the
conversation; fires when the count reaches a rung of the ladder (first `after`, default
`AFTER`: at once, so the agent learns it before it runs the check).

Block: such a substitution proposed while a failure is live is refused (`block`, default on):
asked again with the lines of the file it was meant to match, as the read showed them, held to
an in-place edit of that file where the agent has one shell.

Where another file the agent read has that text (the code's line sent as an edit of its test),
the re-ask names that file and is held to an edit of it.

So is an editor's replace whose text to replace that file, seen whole and unchanged since, does
not have however loosely an editor matches (`replace_refused.absent`: runs of whitespace as one
space, curly quotes as straight): the editor turns it down, and the turn is spent learning so. That
refusal is the block gate's own evidence (`Refusal.owned`), in shadow too, never a hand-back; its
re-ask holds the lines it was meant to match (`writing.meant`). It is no trip: the editor's own
answer says what happened (`refused_edits`, `repeat_failed_call` count what follows). On the
corpus it refuses nothing (report unchanged): a file seen whole, with a failure live, is rare there.

Must never fire on: a substitution whose text is in the file (for a replace: in it but for its
whitespace or quotes, which some editors forgive); a file read in part (`sed -n`,
`head`, a view with a range, unless it printed fewer lines than asked: the file ended) or cut
short by the harness, or changed since it was read; a substitution that is not literal but for
`.` (a back-reference, `*`, a group).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from proxy.engine.detectors.base import Detector, Refusal, Trip, TurnFacts
from proxy.engine.outputs.excerpt import closest_span
from proxy.engine.reading.proposal import Proposal
from proxy.engine.reading.replace_refused import absent
from proxy.engine.reading.sed import sought
from proxy.engine.reading.workspace import same_file
from proxy.engine.state.failure import RepairState
from proxy.engine.state.seen import missed, shown_whole
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.meant import held_edit, meant
from proxy.engine.writing.wording import PREFIX
from proxy.settings.kinds import Action, CallKind, Mode
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "DETECTOR", "NAME"]

NAME = "unmatched_edit"
AFTER = 1
"""Substitutions of text the file does not have, in the conversation, that trip the pattern."""


class Options(Ladder):
    """`[patterns.unmatched_edit]`: the ladder, and the block rung."""

    block: bool = Field(default=True)
    """Refuse such a substitution proposed while a failure is live."""


MODE = Mode.SHADOW
"""Shadow by default: it trips, logs and counts, and says nothing (no trip on the test part or the tune
part: not shown). A policy's `mode = "act"` switches it on."""
OPTIONS = Options(after=AFTER, action=Action.NUDGE, mode=MODE)


@dataclass(frozen=True, slots=True)
class State:
    count: int = 0
    """Substitutions made of text their file did not have."""


def unmatched(command: str | None, writes: tuple[str, ...], repair: RepairState) -> tuple[str, str, str] | None:
    """(the text, the file, the file as last shown whole) of a literal in-place substitution
    whose text that file does not have; None otherwise."""
    found = missed(command, writes[0], repair.seen, repair.whole) if writes else None
    return None if found is None else (found[0], writes[0], found[1])


def fold(state: State, facts: TurnFacts, ladder: Options, _policy: Policy) -> tuple[State, list[Trip]]:
    trips: list[Trip] = []
    for call in facts.turn.calls:
        if call.kind is not CallKind.EDIT:
            continue
        found = unmatched(call.command, tuple(w.path for w in call.writes), facts.before)
        if found is None:
            continue
        state = State(state.count + 1)
        action = ladder.action_at(state.count)
        if action is not None:
            detail = f"{state.count} substitution(s) of text their file does not have"
            trips.append(facts.trip(DETECTOR, action, detail, state.count, subject=call.describe(), excerpt=found[0]))
    return state, trips


def _meant(text: str, path: str, shown: str) -> str:
    span = closest_span(shown, text)
    if span is None:
        return f"Look at what {path} has and substitute text it has."
    return f"The line it was meant to match, exactly as {path} has it:\n{span}"


def remedy(trip: Trip, context: RemedyContext) -> str:
    return context.fit(
        f"{PREFIX} {trip.subject} changed nothing: `{trip.excerpt}` is not in the file as you last saw it.",
        "",
        "Copy the text to replace from the file exactly, then run your check.",
    )


def blocks(_state: State, repair: RepairState, options: Options) -> bool:
    """Armed while a failure is live and some file was last seen whole."""
    return options.block and repair.live and bool(repair.whole)


def futile(_state: State, proposal: Proposal, context: RemedyContext, _options: Options) -> Refusal | None:
    """A literal substitution of text its file, as last seen whole, does not have; or an editor's
    replace of such text (`_replaced`)."""
    if proposal.kind is not CallKind.EDIT:
        return None
    if (refusal := _replaced(proposal, context)) is not None:
        return refusal
    found = unmatched(proposal.command, tuple(w.path for w in proposal.writes), context.repair)
    if found is None:
        return None
    text, path, shown = found
    reason = f"{proposal.describe()} would change nothing: `{text}` is not in {path} as you last saw it whole."
    holder = _holder(proposal.command, path, context.repair)
    if holder is not None:  # the code's text sent to its test (recovery bench, leap: the docstring)
        instead = f"`{text}` is in {holder}, the file that has it: substitute it there."
        return Refusal(NAME, reason, instead, pinned=held_edit(holder, proposal.name, context))
    return Refusal(NAME, reason, _meant(text, path, shown), pinned=held_edit(path, proposal.name, context))


def _replaced(proposal: Proposal, context: RemedyContext) -> Refusal | None:
    """An editor's replace whose text to replace its file, as last seen whole and unchanged since,
    does not have (however loosely matched: `replace_refused.absent`): the editor turns it down. The
    block gate's own evidence; the re-ask carries the lines it was meant to match, held (`meant`)."""
    old = proposal.replaced()
    path = proposal.writes[0].path if len(proposal.writes) == 1 else None
    repair = context.repair
    shown = shown_whole(repair.seen, repair.whole, path) if old is not None and path is not None else None
    if old is None or path is None or shown is None or not absent(old[1], shown):
        return None
    reason = (
        f"{proposal.describe()} would be turned down: its `{old[0]}` is not in {path} as you last saw it whole, "
        "and the file has not changed since."
    )
    instead = meant(proposal, context)
    if instead is None:
        return Refusal(NAME, reason, _meant(old[1], path, shown), owned=True, halts=False)
    return Refusal(NAME, reason, instead[0], pinned=instead[1], owned=True, halts=False)


def _holder(command: str | None, path: str, repair: RepairState) -> str | None:
    """Another file the agent read that has the text the substitution looks for (the most
    recently read first); None when none has."""
    found = sought(command) if command else None
    if found is None:
        return None
    return next((k for k, text in reversed(repair.seen) if not same_file(k, path) and found.found_in(text)), None)


DETECTOR = Detector(
    name=NAME,
    initial=State(),
    fold=fold,
    options=OPTIONS,
    remedy=remedy,
    blocks=blocks,
    futile=futile,
    judges_text=True,
    gate_owned=True,  # an editor's replace of text its file lacks: the block gate's own evidence
    owned_halts=False,
)
