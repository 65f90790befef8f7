"""`repeat_failed_call`: the same call fails with the same error, again and again.

Counts the failures of one canonical call (tool plus sorted-key arguments) with one result (its
normalised output: `state.progress`) since the last call that changed the workspace: not only in a
row, so the same rejected edit sent again between other tries (open-weight models: the same `edit
95:95` the linter turned down seven times among others) is counted as the loop it is. The count
starts again when a write lands (the call may then fare otherwise). Fires when the count reaches a
rung of the ladder: first seen at `after` (default `AFTER`), said once the agent sends it again
(`confirm`: at three identical failures in a row SWE-agent 0.x's own "DO NOT re-run the same failed
edit" had already turned it, corpus tune). Covers what the failure model does not own: a call the
tool rejected (a missing or invalid argument), an edit that does not apply or that the editor's
syntax check turned down, a read of a file that is not there. Runs only with the failure model on
(with it off, the legacy `repeated_error` counts every repeated failure).

Remedy: quote the error and name the argument to change: one the error mentions, else a
required one the call left out. Never worded as a success.

Block: a call that failed last time (`block` times in a row, default `BLOCK`) proposed again
exactly as it was, with nothing run successfully since, is refused: an edit whose `old_str` was
just reported not found, a read of a file that is not there, a call the tool turned down, a
`sed` its own parser rejected. Its instead names the argument to change. So is an edit that
differs from the one just turned down only in its replacement, where the editor turned that one
down for its text to replace (not in the file, or in it more than once: `reading.replace_refused`):
the file is as it was, so the same text to replace meets the same answer whatever replaces it
(recovery bench, train part: bank seed 2 in the fifteenth run, block off, one `old_str` sent three
times with three replacements, none applied; seen first in the test part's thirtieth run, read
while measuring: trim seed 4, "appears 2 times", then three more replacements of the same text).
Reads between change nothing: such an edit is refused while only reads have run since it was
turned down (shipping seed 8 in the thirty-first run, read while measuring: the same edit,
"appears 2 times", a view, the same edit), unless the file as last shown has the text (once, for a
text that was there more than once). An edit whose
replacement is the text it replaces is left to `pointless_call` (its re-ask says so and holds
one line to change; copies of the lines the proxy asked to change do not count toward a
hand-back there): an editor that turns the copy down ("`new_str` and `old_str` must be
different", OpenHands) would otherwise have it refused here as the agent's own failing call, its
instead "change `new_str`", and the stop rung hand the run back (issue 51). A failing check run
between two tries (the test, failing as before) is no success and does not count as one:
recovery bench, bank: the same unterminated `sed -i 's/.../...'` and the test, four times over.

A call that could not run (`javac: command not found`, a connection refused) counts too, the
failure model never owning it; it is never blocked: a server may come up, a program be
installed, between two tries.

Must never fire on: a failing check whose failure is the failure model's (a test run failing
the same way is `stuck_same_diagnostic`); a failing call whose error changes; the same call
failing again after a write landed between (counted from there); different calls failing alike.
Never refuses: an edit with another text to replace, another file or another option (Claude
Code's `replace_all`, which turns "2 matches" into a replace of both); the same text to replace
after an edit turned down for its replacement ("`new_str` and `old_str` must be different"),
after a call that may have written (an edit that landed, a shell edit that failed, any command
that is no read: `checks.quiet`), or once a read shows the text in the file.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pydantic import Field

from proxy.engine.detectors.base import Detector, Refusal, Trip, TurnFacts
from proxy.engine.detectors.calls import excerpt
from proxy.engine.outputs.evidence import evidence
from proxy.engine.outputs.excerpt import file_text
from proxy.engine.outputs.outcome import Outcome
from proxy.engine.reading.noop import unchanging
from proxy.engine.reading.observe import ObservedCall
from proxy.engine.reading.proposal import Proposal
from proxy.engine.reading.replace_refused import more_than_once, text_refused, without_replacement
from proxy.engine.state.checks import quiet
from proxy.engine.state.failure import RepairState, is_check
from proxy.engine.state.progress import Step, episode
from proxy.engine.writing.context import RemedyContext
from proxy.engine.writing.failed_call import what_to_change
from proxy.engine.writing.meant import meant
from proxy.engine.writing.wording import PREFIX
from proxy.settings.kinds import Action, CallKind
from proxy.settings.policy import Ladder, Policy

__all__ = ["AFTER", "DETECTOR", "NAME"]

NAME = "repeat_failed_call"
AFTER = 3
"""The same call failing with the same error this many times in a row trips the pattern."""


BLOCK = 1
"""Failures in a row of one call, the same way, from which proposing it again unchanged is refused."""


class Options(Ladder):
    """`[patterns.repeat_failed_call]`: the ladder, and the block rung."""

    block: int = Field(default=BLOCK, ge=0)
    """Failures in a row from which the same call proposed again unchanged is refused (0: never)."""


OPTIONS = Options(after=AFTER, action=Action.NUDGE, confirm=1)


@dataclass(frozen=True, slots=True)
class State:
    key: str = ""
    error: str = ""
    count: int = 0
    tool: str = ""
    arguments: tuple[str, ...] = ()
    """The failing call's argument names."""
    quote: str = ""
    """The start of its error, as printed."""
    cannot_run: bool = False
    """It could not run (a program or a server not there): the machine may change under it, so
    it is never refused."""
    turned_down: tuple[tuple[str, str], ...] = ()
    """Edits the editor turned down for their text to replace since the last call that may have
    written (reads between write nothing): each as a digest of the call without its replacement
    (`replace_refused.without_replacement`) and the start of the refusal, the latest last."""
    fired: tuple[tuple[str, int], ...] = ()
    """The (call and result, count) pairs that tripped since the last write that landed: a count
    trips once."""
    start: int = -1
    """The first turn of the episode (a person's new message starts one); -1: none seen yet."""


def fold(state: State, facts: TurnFacts, ladder: Ladder, _policy: Policy) -> tuple[State, list[Trip]]:
    if not facts.failure_model:
        return state, []
    trips: list[Trip] = []
    start = facts.turn.ordinal if state.start < 0 else state.start
    state = replace(state, start=start)
    steps = episode(facts.progress.steps, start)
    first = len(steps) - len(facts.turn.calls)
    for at, call in enumerate(facts.turn.calls):
        cannot_run = call.outcome is Outcome.ENVIRONMENT  # never the failure model's
        owned = (call.probe or is_check(call)) and not cannot_run  # a probe that fails again is the model's
        if call.succeeded_mutation:
            state = State(start=start)  # a write landed: what failed before may fare otherwise now
            if owned:
                continue
        if owned and call.outcome is Outcome.FAIL:
            continue  # a failing check between two tries changes nothing the failed call met
        if (call.outcome is not Outcome.FAIL and not cannot_run) or owned:
            kept = state.turned_down if quiet((call,)) else ()  # a read writes nothing
            state = replace(state, key="", error="", count=0, turned_down=kept)
            continue
        error = evidence(call.result).signature
        same = call.key == state.key and error == state.error
        names = tuple(call.call.arguments or ())
        quote = excerpt(call.result)
        tool = call.call.name
        count = _recurring(steps[: first + at + 1]) if first >= 0 else state.count + 1
        turned = _turned_down(state.turned_down if quiet((call,)) else (), call, quote)
        state = State(
            call.key, error, state.count + 1 if same else 1, tool, names, quote, cannot_run, turned, state.fired, start
        )
        step = steps[first + at] if first + at < len(steps) else None
        mark = (f"{step.action}:{step.result}" if step else call.key, count)
        action = ladder.action_at(count)
        if action is None or mark in state.fired:
            continue
        state = replace(state, fired=(*state.fired, mark))
        in_a_row = state.count == count
        detail = (
            f"the same call failed with the same error {count} times in a row"
            if in_a_row
            else f"the same call failed with the same error {count} times since the last change that landed"
        )
        trips.append(
            facts.trip(
                DETECTOR,
                action,
                detail,
                count,
                subject=call.describe(),
                excerpt=quote,
                tool=tool,
                arguments=names,
                since=_began(steps[: first + at + 1]),
            )
        )
    return state, trips


_TURNED_DOWN = 4
"""Edits turned down for their text to replace remembered at once (the latest)."""


def _turned_down(kept: tuple[tuple[str, str], ...], call: ObservedCall, quote: str) -> tuple[tuple[str, str], ...]:
    """`kept` (emptied by the caller after a call that may have written: `checks.quiet`) with a failed
    call added where the editor turned it down for its text to replace."""
    digest = without_replacement(call.call.name, call.call.arguments) if text_refused(call.result) else ""
    if not digest:
        return kept
    return (*(k for k in kept if k[0] != digest), (digest, quote))[-_TURNED_DOWN:]


def _recurring(steps: tuple[Step, ...]) -> int:
    """How many times the newest step's call failed with its result since the last write that
    landed (the newest included)."""
    newest = steps[-1] if steps else None
    if newest is None:
        return 0
    count = 0
    for step in reversed(steps):
        if step.wrote:
            break
        count += step.pair == newest.pair
    return count


def _began(steps: tuple[Step, ...]) -> int:
    """The turn of the first of those failures."""
    newest = steps[-1]
    turn = newest.turn
    for step in reversed(steps):
        if step.wrote:
            break
        if step.pair == newest.pair:
            turn = step.turn
    return turn


def remedy(trip: Trip, context: RemedyContext) -> str:
    change = what_to_change(trip.tool, trip.arguments, trip.excerpt, context)
    times = "in a row" if "in a row" in trip.detail else "since your last change that landed"
    return context.fit(
        f"{PREFIX} This call has failed {trip.count} times {times} with the same error: {trip.subject}",
        trip.excerpt,
        f"Sending it again unchanged will fail the same way. {change}",
    )


def _findable(proposal: Proposal, quote: str, context: RemedyContext) -> bool:
    """The file as the agent last saw it has the edit's text to replace (for a refusal of a text
    there more than once: once): something the proxy did not see changed it, the editor may take it."""
    old = proposal.replaced()
    path = proposal.writes[0].path if len(proposal.writes) == 1 else None
    shown = context.repair.shown(path) if path is not None else None
    if old is None or shown is None:
        return False
    found = file_text(shown).count(old[1])
    return found == 1 if more_than_once(quote) else found > 0


def blocks(state: State, _repair: RepairState, options: Options) -> bool:
    """The last call failed, `block` times in a row the same way (and it did run); or an edit was
    turned down for its text to replace, and nothing that may write has run since."""
    if not options.block:
        return False
    return (state.count >= options.block and not state.cannot_run) or bool(state.turned_down)


def futile(state: State, proposal: Proposal, context: RemedyContext, _options: Options) -> Refusal | None:
    """The call that just failed, proposed again exactly as it was; or, where the editor turned
    it down for its text to replace, an edit differing from it only in its replacement."""
    if unchanging(proposal.kind, proposal.arguments) is not None:
        return None  # a copy is `pointless_call`'s to refuse
    digest = without_replacement(proposal.name, proposal.arguments) if proposal.kind is CallKind.EDIT else ""
    turned = next((q for d, q in reversed(state.turned_down) if digest and d == digest), None)
    if state.count >= 1 and proposal.key == state.key:
        quote = state.quote
        times = "last time" if state.count == 1 else f"the last {state.count} times"
        again = "Sent again unchanged, it fails the same way."
        reason = f"{proposal.describe()} failed {times} with:\n{quote}\n{again}"
    elif turned is not None and not _findable(proposal, turned, context):
        quote, old = turned, proposal.replaced()
        argument = old[0] if old is not None else "the text to replace"
        reason = (
            f"{proposal.describe()} has the `{argument}` of an edit that was turned down with:\n{quote}\n"
            f"Nothing has changed the file since: with `{argument}` as it is, any replacement fails the same way."
        )
    else:
        return None
    # Not the lines it meant where the text is there more than once: any lines of it are too (the
    # closest span of `return a - b`, twice in the file, is `    return a - b`, twice as well).
    instead = meant(proposal, context) if not more_than_once(quote) else None
    times_made = max(state.count, 1)
    if instead is None:
        names = tuple(proposal.arguments or ()) if turned is not None else state.arguments
        return Refusal(NAME, reason, what_to_change(proposal.name, names, quote, context), times=times_made)
    return Refusal(NAME, reason, instead[0], pinned=instead[1], times=times_made)


DETECTOR = Detector(name=NAME, initial=State(), fold=fold, options=OPTIONS, remedy=remedy, blocks=blocks, futile=futile)
