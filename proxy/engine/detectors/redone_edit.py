"""`redone_edit`: an edit made again while its file is as the same edit left it.

An edit ran (its tool did not turn it down), then only reads, searches and checks ran, and the
same edit comes again: the file is as the first one left it, so the second changes nothing (its
`old_str` or its substitution's pattern is gone, or it writes the text that is there) or makes the
change twice. On the recovery bench a small model did this in a cycle (the same `sed -i`, the
test, `cat`, the same `sed -i` ...) until its turns ran out. The same edit is the same change of
the same file however its path is written (an editor's replace by its two texts, `trim.py` then
its absolute path: trim seed 2; any other edit by its canonical call); another replace of the file
that neither puts back the replaced text nor changes the written one leaves it as made (the stuck
start's two edits of one file, the first made again: pages seed 2). Counts such repeats in the
episode, other calls between (the same call at once is `repeat_call`'s); fires when the count
reaches a rung of the ladder (first `after`, default `AFTER`).

Block: the same edit proposed again while only reads, searches and checks ran since it was made
(`block` times made, default `BLOCK`: its first repeat), and a check failed after it, is refused:
asked again, told that the file is as that edit left it and what failure it left, for a different
change. The block gate's own evidence (`Refusal.owned`), in shadow too: what it claims is read off
the transcript, as a no-op edit's is; in shadow it never hands the run back (`owned_halts`).

Must never fire on: the same edit where the file, read since, still shows the text it replaces; the
same edit after anything else wrote its file (an edit of it that may put the text back or change
what the edit wrote, a `git checkout`) or after a call whose writes cannot be told (`python
apply_fix.py`, inline code, `git stash`); a write of another command's output (`git diff f >
patch.txt`) made again after any other edit (what it writes changed with the files it reads); an
edit whose file cannot be told (an editor's `edit 12:14` where the transcript does not say which
file is open); an edit the tool turned down or that failed (`repeat_failed_call`'s); a different
edit of the file; any edit while no check has failed since it was made (for the block rung).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import xxhash
from pydantic import Field

from proxy.engine.detectors.base import Detector, Refusal, Trip, TurnFacts
from proxy.engine.outputs.outcome import Outcome
from proxy.engine.reading.commands import read_command
from proxy.engine.reading.observe import ObservedCall
from proxy.engine.reading.proposal import LEAVES_FILES, NEW_ARGS, OLD_ARGS, Proposal
from proxy.engine.reading.sed import substitution
from proxy.engine.reading.workspace import same_file
from proxy.engine.state.failure import RepairState, is_check
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.failure_reads import step_of
from proxy.engine.writing.meant import held_change, held_edit
from proxy.engine.writing.wording import PREFIX, expected_behaviour
from proxy.settings.kinds import Action, CallKind, Mode
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "BLOCK", "DETECTOR", "NAME"]

NAME = "redone_edit"
AFTER = 2
"""Edits made again on a file as they left it, in the episode, that trip the pattern."""
BLOCK = 1
"""Times an edit was made, from which proposing it again, its file as it left it, is refused."""
_MAX_MADE = 8
"""Edits remembered at once (the most recent)."""
_REPLACED_CHARS = 200
_ALONE = frozenset({CallKind.EDIT, CallKind.READ, CallKind.SEARCH, CallKind.VERIFY})
"""What a shell command that is such an edit may do besides (`sed -i ... && cat f`)."""


class Options(Ladder):
    """`[patterns.redone_edit]`: the ladder, and the block rung."""

    block: int = Field(default=BLOCK, ge=0)
    """Times an edit was made from which proposing it again, its file as it left it, is refused (0: never)."""


MODE = Mode.SHADOW
"""Shadow by default: it trips, logs and counts, and says nothing (no trip on the test part or the tune
part: not shown). A policy's `mode = "act"` switches it on."""
OPTIONS = Options(after=AFTER, action=Action.NUDGE, mode=MODE)


@dataclass(frozen=True, slots=True)
class Made:
    """An edit made, its files not written since."""

    key: str
    """A digest of the edit's canonical call (`ObservedCall.key`)."""
    paths: tuple[str, ...]
    replaced: str
    """The first line of the text it replaces (empty: it writes whole)."""
    times: int
    """How often it was made, with nothing but reads, searches and checks between."""
    failed_after: bool = False
    """A check failed after it was last made: it did not fix what it was for."""
    derived: bool = False
    """It writes another command's output (`git diff f > patch.txt`): made again after another
    edit, it writes something else."""
    texts: tuple[str, str] | None = None
    """A replace's two texts, whole (None: another kind of edit, or texts too long to keep)."""


@dataclass(frozen=True, slots=True)
class State:
    made: tuple[Made, ...] = ()
    """The edits whose files are as they left them."""
    count: int = 0
    """Edits made again, in the episode."""
    last: str = ""
    """A digest of the last call made (an edit made again at once is `repeat_call`'s to count)."""

    def find(self, digest: str, paths: tuple[str, ...]) -> Made | None:
        """The same edit (`_digest` of its key) made before on the same file (an editor's
        `edit 1:1` of whatever file is open is the same call on another file once another is open)."""
        return next((m for m in self.made if m.key == digest and _overlaps(m.paths, paths)), None)


def _digest(key: str) -> str:
    """Kept instead of the call, which can be a whole file's text (`cat > f.py <<EOF ...`)."""
    return xxhash.xxh3_64_hexdigest(key.encode("utf-8", "replace"))


_KEPT_TEXT = 4_000  # longer texts are not kept: any other edit of the file forgets the edit


def _texts(arguments: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """An editor replace's text to replace and its replacement, as given; None for any other call."""
    given = {k: v for k, v in (arguments or {}).items() if isinstance(v, str)}
    old = next((given[k] for k in OLD_ARGS if k in given), None)
    new = next((given[k] for k in NEW_ARGS if k in given), None)
    return (old, new) if old is not None and new is not None else None


def _identity(name: str, arguments: Mapping[str, Any] | None, key: str) -> str:
    """The edit, whatever the spelling of its path: an editor replace by its tool and two texts
    (the file is compared apart, `same_file`), any other call by its canonical key."""
    texts = _texts(arguments)
    return _digest(key if texts is None else f"{name}\x00{texts[0].strip()}\x00{texts[1].strip()}")


def _left(made: Made, paths: tuple[str, ...], texts: tuple[str, str] | None) -> bool:
    """`made` still stands after an edit of `paths` with `texts`."""
    return not made.derived and (not _overlaps(made.paths, paths) or _untouched(made, texts))


def _untouched(made: Made, texts: tuple[str, str] | None) -> bool:
    """Another replace of `made`'s file leaves it as made: it neither puts back nor replaces again
    the text `made` replaced (landed, it shows the text was back), nor changes the text it wrote."""
    if made.texts is None or texts is None or not all(t.strip() for t in (*made.texts, texts[0])):
        return False
    (old, new), (later_old, later_new) = made.texts, texts
    return old not in later_new and old not in later_old and new not in later_old and later_old not in new


def _replaced(arguments: Mapping[str, Any] | None, command: str | None) -> str:
    """The first line of the text an edit replaces (`old_str`, a literal `sed` pattern); empty
    when it names none."""
    given = arguments or {}
    text = next((v for k in OLD_ARGS if isinstance(v := given.get(k), str)), None)
    if text is None and command and (sub := substitution(command)) is not None:
        text = sub[0]
    return next((line.strip()[:_REPLACED_CHARS] for line in (text or "").splitlines() if line.strip()), "")


def _shows_again(made: Made, call: ObservedCall) -> bool:
    """A read of the edit's file shows the text it replaces: it may apply again (something the
    proxy cannot see put the text back)."""
    target = call.target
    return (
        call.kind is CallKind.READ
        and target is not None
        and bool(made.replaced)
        and any(same_file(target, p) for p in made.paths)
        and made.replaced in call.output
    )


def _edit(call: ObservedCall) -> tuple[str, ...] | None:
    """The files of an edit that ran, when they can be told and it does nothing else that writes."""
    if call.kind is not CallKind.EDIT or call.rejected or call.outcome is Outcome.FAIL or not call.writes:
        return None
    if call.segments and not call.segments <= _ALONE:
        return None
    return tuple(w.path for w in call.writes)


_LITERAL = frozenset({"echo", "printf"})


def _derived(command: str | None) -> bool:
    """The command writes a file whole with another command's output (`git diff > patch.txt`,
    `cat a.py > b.py`), not with text it carries (`echo`, `printf`, a here-document)."""
    if not command:
        return False
    return any(
        w.whole and s.program not in _LITERAL and not s.stdin for s in read_command(command).segments for w in s.writes
    )


def _quiet(call: ObservedCall) -> bool:
    """Leaves the files as they are, as far as can be told: a read, a search, a check that runs no
    program file and no code given inline (`python fix.py` may write anything)."""
    if call.kind not in LEAVES_FILES or call.mutates or call.probe:
        return False
    command = read_command(call.command) if call.command else None
    return command is None or not (command.scripts or command.inline)


def _overlaps(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    return any(same_file(x, y) for x in a for y in b)


def fold(state: State, facts: TurnFacts, ladder: Options, _policy: Policy) -> tuple[State, list[Trip]]:
    trips: list[Trip] = []
    for call in facts.turn.calls:
        key = _identity(call.call.name, call.call.arguments, call.key)
        paths = _edit(call)
        if paths is None:
            made = tuple(m for m in state.made if not _shows_again(m, call)) if _quiet(call) else ()
            if made and is_check(call) and call.outcome is Outcome.FAIL:
                made = tuple(replace(m, failed_after=True) for m in made)
            state = State(made, state.count, key)
            continue
        before = state.find(key, paths)
        texts = _texts(call.call.arguments)
        kept = tuple(m for m in state.made if m.key != key and _left(m, paths, texts))
        replaced = _replaced(call.call.arguments, call.command)
        times = before.times + 1 if before else 1
        whole = texts if texts is not None and len(texts[0]) + len(texts[1]) <= _KEPT_TEXT else None
        this = Made(key, paths, replaced, times, derived=_derived(call.command), texts=whole)
        kept = kept[-_MAX_MADE + 1 :]
        at_once = state.last == key
        state = State((*kept, this), state.count, key)
        if before is None or at_once:
            continue
        state = State(state.made, state.count + 1, key)
        action = ladder.action_at(state.count)
        if action is not None:
            detail = f"{state.count} edit(s) made again on a file as the same edit had left it"
            trips.append(facts.trip(DETECTOR, action, detail, state.count, subject=call.describe(), excerpt=paths[0]))
    return state, trips


def remedy(trip: Trip, context: RemedyContext) -> str:
    return context.fit(
        f"{PREFIX} {trip.subject} was made again, and nothing had changed {trip.excerpt} since it was first made: "
        "made again, an edit changes nothing, or makes its change twice.",
        "",
        "Look at the file as it is now, and make a different change.",
    )


def _refusable(made: Made, options: Options) -> bool:
    return made.failed_after and made.times >= options.block


def blocks(state: State, repair: RepairState, options: Options) -> bool:
    """Armed while a failure is live and came back after such an edit (a working agent's edits,
    and an edit not yet checked, never hold its replies)."""
    return bool(options.block) and repair.live and any(_refusable(m, options) for m in state.made)


def futile(state: State, proposal: Proposal, context: RemedyContext, options: Options) -> Refusal | None:
    """The edit made before, proposed again as it was, its file as that edit left it."""
    made = state.find(
        _identity(proposal.name, proposal.arguments, proposal.key), tuple(w.path for w in proposal.writes)
    )
    if proposal.kind is not CallKind.EDIT or made is None or not _refusable(made, options):
        return None
    path = made.paths[0]
    reason = (
        f"{proposal.describe()} was made before, and only reads and checks have run since: {path} is as "
        "that edit left it, so made again it changes nothing, or makes its change twice."
    )
    repair = context.repair
    pinned = held_edit(path, proposal.name, context) if repair.shown(path) is not None else None  # a file seen
    # With an editor, held to the file as it is now (asked in words, the model's right change came
    # back "old_str not found" twice: issue 61); with one shell, to an in-place edit of it (`held_edit`).
    change = held_change(path, proposal.name, context) if pinned is None else None
    held = f" {change[0]}" if change is not None else ""
    if repair.live and repair.snippet:
        said = expected_behaviour(repair, step_of(repair).lines)  # what the failure expects, not only its output
        step = f"Make a different change to {path}, one that makes the code do what is expected.{held}"
        instead = context.fit("The failure it left:", said or repair.snippet, step)
    else:
        instead = f"Make a different change to {path}, or another step.{held}"
    return Refusal(NAME, reason, instead, pinned=change[1] if change is not None else pinned, owned=True)


DETECTOR = Detector(
    name=NAME,
    initial=State(),
    fold=fold,
    options=OPTIONS,
    remedy=remedy,
    blocks=blocks,
    futile=futile,
    judges_text=True,
    gate_owned=True,  # an edit made again on its file as it left it: the block gate's own evidence
    owned_halts=False,
)
