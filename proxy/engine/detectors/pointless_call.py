"""`pointless_call`: a call that cannot do anything, whatever the state of the work.

Two shapes, both seen from a small model asked for an edit: an edit that changes nothing (its
replacement the text it replaces, `new_str` equal to `old_str` or `sed -i 's/x == 0/x == 0/' f.py`;
or a substitution looking for a line break, which sed never sees: `reading.noop`), and an
argument that is still a template's placeholder (`<the wrong code, exactly as in the file>`,
`git checkout <commit-hash>`: a bracketed phrase of words joined by spaces or hyphens, standing
alone). Counts such calls in the conversation; fires when the count reaches a rung of the
ladder (first `after`, default `AFTER`).

Block: once the model has made `block` such calls (default `BLOCK`), a reply proposing another
is refused: it is asked again, told which argument is empty of meaning. (Not from the first:
the rung would be armed, and a streamed call held, on every reply while a failure is live. The
first one is no change to the failure model: the failing check run after it is refused as run
again with nothing changed, `stuck_same_diagnostic`.)

Must never fire on: edits that change something; angle brackets in code (`<div>`, `Vec<u8>`,
`a <b`), in a shell's redirections (`< input.txt`) or in text that is no argument of a call.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from proxy.engine.detectors.base import Detector, Refusal, Trip, TurnFacts
from proxy.engine.reading.noop import Nothing, unchanging, undoing
from proxy.engine.reading.proposal import OLD_ARGS, Proposal
from proxy.engine.state.failure import RepairState
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.failure_reads import step_of
from proxy.engine.writing.meant import held_in_place, kept, meant
from proxy.engine.writing.wording import PREFIX
from proxy.settings.kinds import Action, CallKind, Mode
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "BLOCK", "DETECTOR", "NAME", "pointless"]

NAME = "pointless_call"
AFTER = 2
"""Pointless calls in the conversation that trip the pattern."""
BLOCK = 1
"""Pointless calls made, from which another proposed is refused."""
_PLACEHOLDER = re.compile(r"(?:^|[\s'\"=(])<([a-z]+(?:[ _-][a-z]+){1,8}(?:[.,][^<>\n=\"'0-9]{0,40})?)>(?=$|[\s'\")])")
"""A bracketed phrase of two lowercase words or more, standing alone: `<commit-hash>`, `<the wrong
code, ...>`; not `<div>`, `<a href="x">`, `<function f at 0x1>`, `Vec<u8>` or a Java generic
(`<T extends JsonTemplate>`)."""


class Options(Ladder):
    """`[patterns.pointless_call]`: the ladder, and the block rung."""

    block: int = Field(default=BLOCK, ge=0)
    """Pointless calls made, from which another proposed is refused (0: never)."""


MODE = Mode.SHADOW
"""Shadow by default: it trips, logs and counts, and says nothing (test part: its trips judged right 6
of 10, redundant 6 of 11 (the next call was already a real edit); its refusals (the block gate)
judged right 10 of 10 act on their own). A policy's `mode = "act"` switches it on."""
OPTIONS = Options(after=AFTER, action=Action.NUDGE, mode=MODE)


def pointless(
    kind: CallKind, arguments: Mapping[str, Any] | None, tried: tuple[tuple[str, str], ...] = ()
) -> Nothing | None:
    """Why a call cannot do anything (an edit that changes nothing, or that undoes the last edit
    made on the live failure, `tried`'s last: A -> B -> A; a placeholder left in an argument), or None."""
    if (why := unchanging(kind, arguments) or undoing(kind, arguments, tried[-1] if tried else None)) is not None:
        return why
    given = {k: v for k, v in (arguments or {}).items() if isinstance(v, str)}
    for name, value in given.items():
        if found := _PLACEHOLDER.search(value[:20_000]):
            return Nothing(f"its `{name}` still holds a placeholder, <{found.group(1)}>, not the real text")
    return None


@dataclass(frozen=True, slots=True)
class State:
    count: int = 0
    """Pointless calls made in the conversation."""
    own: int = 0
    """Of them, the agent's own: not a copy of the lines the proxy itself asked to have changed
    (`_asked`). Only these count toward the stop rung (`Refusal.times`): a hand-back is for the
    agent's loop, never for the proxy's own remedy answered badly (issue 51: the forced edit
    quoted a whole function, the model copied it, the re-ask got the same copy, and the run was
    handed back at turn 5 of 10 on both seeds of the easiest task)."""


def _asked(arguments: Mapping[str, Any] | None, before: RepairState) -> bool:
    """The edit's text to replace is what the proxy's held edit offered at that point: the lines
    the failure points at, whole or one of them (`writing.failure_reads.Step`: `lines`, `pointed`)."""
    given = {k: v for k, v in (arguments or {}).items() if isinstance(v, str)}
    old = next((given[k] for k in OLD_ARGS if k in given), None)
    if not old or not before.live:
        return False
    step = step_of(before)
    return old.strip() == (step.lines or "").strip() or old in step.pointed


def fold(state: State, facts: TurnFacts, ladder: Options, _policy: Policy) -> tuple[State, list[Trip]]:
    trips: list[Trip] = []
    for call in facts.turn.calls:
        why = pointless(call.kind, call.call.arguments, facts.before.tried if facts.before.live else ())
        if why is None:
            continue
        state = State(state.count + 1, state.own + (not _asked(call.call.arguments, facts.before)))
        action = ladder.action_at(state.count)
        if action is not None:
            detail = f"{state.count} calls that cannot do anything: the last one, because {why.reason}"
            trips.append(facts.trip(DETECTOR, action, detail, state.count, subject=call.describe(), excerpt=why.reason))
    return state, trips


def remedy(trip: Trip, context: RemedyContext) -> str:
    return context.fit(
        f"{PREFIX} {trip.subject} could not do anything: {trip.excerpt}.",
        "",
        "Write the real text: copy the lines to replace from the file as it is now (view it first if "
        "you have not), and write the new lines in full.",
    )


def blocks(state: State, _repair: RepairState, options: Options) -> bool:
    return bool(options.block) and state.count >= options.block


def futile(state: State, proposal: Proposal, context: RemedyContext, _options: Options) -> Refusal | None:
    """A no-op edit or a placeholder; where its text to replace is not in the file either, the
    re-ask carries the lines it meant (or a look at the file), held by the schema (`writing.meant`);
    where it is, that text kept and held, the replacement asked for (`writing.meant.kept`)."""
    repair = context.repair
    why = pointless(proposal.kind, proposal.arguments, repair.tried if repair.live else ())
    if why is None:
        return None
    reason = f"{proposal.describe()} cannot do anything: {why.reason}."
    instead = meant(proposal, context)
    if instead is None and (instead := kept(proposal, context)) is not None and why.copy:
        # Said so, once: the re-ask holds one of the lines, its replacement any text but that line.
        reason = f"{proposal.describe()}: that replaced the lines with themselves, which changes nothing."
    if instead is None:  # one shell: held to an in-place edit of the file (of the code, for its test)
        return Refusal(
            NAME,
            reason,
            "Write the real text: the lines to replace exactly as the file has them now, and the new lines in full.",
            pinned=held_in_place(proposal, context),
            times=state.own,
            owned=why.copy or why.undo,
        )
    return Refusal(NAME, reason, instead[0], pinned=instead[1], times=state.own, owned=why.copy or why.undo)


DETECTOR = Detector(
    name=NAME,
    initial=State(),
    fold=fold,
    options=OPTIONS,
    remedy=remedy,
    blocks=blocks,
    futile=futile,
    episodic=False,
    judges_text=True,
    gate_owned=True,  # its no-op edits: the block gate's own evidence (`Refusal.owned`)
)
