"""The incomplete hand-back: what the proxy answers with when it stops a run, and the note a
later run of the same task gets about an attempt that stalled (cross-run memory).

Only the content: each dialect writes it in its own reply shape, and the HTTP layer adds
its headers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from proxy.engine.detectors.base import Refusal, Trip
from proxy.engine.state.failure import RepairState
from proxy.engine.state.verdict import Verdict
from proxy.engine.text.salvage import SalvagedCall
from proxy.engine.text.tokens import TokenCounter
from proxy.engine.writing.wording import PREFIX, failing_call, fitter

__all__ = ["Handback", "handback_text", "memory_text", "refused_text"]


@dataclass(frozen=True, slots=True)
class Handback:
    text: str
    """The assistant message: why the run stopped, what is still failing, what was tried."""
    reason: str
    """The pattern that halted the run."""
    current_failure: Mapping[str, object] | None
    """`{class, signature, snippet, same_diagnostic_streak}`, or None when nothing is failing."""
    conversation: str
    turn: int
    finish_call: SalvagedCall | None = None
    """The hand-back as a call that ends the agent's run, carrying `text` (see `decide._finish_call`):
    its shell tool running the policy's `repair.handback_command` (mini-swe-agent), or, when the
    request requires a tool call, its finish tool (smolagents' `final_answer`): such an agent
    refuses a plain message, and its user never sees it."""

    @property
    def call_id(self) -> str:
        """A deterministic id for `finish_call`."""
        return f"call_repair_{self.conversation[:16]}_{self.turn}"

    @property
    def completion_id(self) -> str:
        """A deterministic id for the reply (the same request halts with the same id)."""
        return f"chatcmpl-repair-{self.conversation[:16]}-{self.turn}"


def memory_text(verdict: Verdict, counter: TokenCounter, budget: int) -> str:
    """The note a new run of a task gets about the attempt that stalled before it."""
    fit = fitter(counter, budget)
    patterns = ", ".join(verdict.patterns) or "no progress"
    if verdict.failing_class == "fail" and verdict.snippet:
        head = (
            f"{PREFIX} A previous attempt at this task stalled ({patterns}): the same failure came back "
            f"{verdict.streak} times and {verdict.edits_unchanged} edit(s) did not change it:"
        )
        tail = "Do not repeat that attempt's fix. Find out why this failure persists before you edit."
        return fit(head, verdict.snippet, tail)
    head = f"{PREFIX} A previous attempt at this task stalled ({patterns}) without making progress."
    return fit(head, "", "Take a different approach from the start.")


def handback_text(trip: Trip, state: RepairState, turns: int, progress: str = "") -> str:
    """The incomplete hand-back's message: why it stopped, what is failing, what was tried."""
    return _text(f"{trip.pattern.name} ({trip.detail}), after {turns} turn(s).", state, progress)


def refused_text(refusal: Refusal, state: RepairState, turns: int, progress: str = "") -> str:
    """The hand-back's message when the model, asked again (told why its call was refused, or
    asked for a call at all), proposed one made in vain before."""
    reason = (
        f"{refusal.pattern} (asked again, the model proposed a call already made in vain), "
        f"after {turns} turn(s):\n{refusal.reason.strip()}"
    )
    return _text(reason, state, progress)


def _text(reason: str, state: RepairState, progress: str) -> str:
    lines = [f"{PREFIX} Stopping here: this run is INCOMPLETE and is being handed back.", f"Reason: {reason}"]
    if progress:
        lines.append(f"Partial progress: {progress}")
    if state.live:
        lines.append(
            f"Still failing ({state.same_diagnostic_streak} times in a row, "
            f"{state.edits_on_failure} edit(s) did not change it), last seen from {failing_call(state)}:"
        )
        lines.append(state.snippet)
    else:
        lines.append("No check is failing right now; the run stopped making progress.")
    return "\n".join(lines)
