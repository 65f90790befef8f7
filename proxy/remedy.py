"""Remedies: the instruction each trip injects, built from the evidence, never generic advice.

Each text names what is failing (the snippet, the failing test, the command that failed)
and the concrete next step, and fits the policy's token budget: when it does not, the
snippet is shortened, never the instruction.
"""

from __future__ import annotations

import re

from proxy.detectors import Trip
from proxy.failure import RepairState
from proxy.tokens import TokenCounter

__all__ = ["PREFIX", "failing_targets", "handback_text", "remedy_text"]

PREFIX = "[repair-proxy]"
"""Marks every text the proxy adds, so a reader of the transcript can tell it apart."""

_PYTEST_ID = re.compile(r"^(?:FAILED|ERROR) (\S+?\.py)(?:::(\S+))?", re.MULTILINE)
_LOCATION = re.compile(r"^(\S+\.\w+):(\d+):", re.MULTILINE)
_TRACE_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def failing_targets(snippet: str) -> tuple[str | None, str | None]:
    """(file, test) the snippet names as failing, when it names them."""
    match = _PYTEST_ID.search(snippet)
    if match:
        return match.group(1), match.group(2)
    match = _LOCATION.search(snippet)
    if match:
        return match.group(1), None
    frames = _TRACE_FRAME.findall(snippet)
    if frames:
        return frames[-1][0], None
    return None, None


def _failing_call(state: RepairState) -> str:
    if state.failing_command:
        return f"`{state.failing_command}`"
    return f"{state.failing_tool} with {state.failing_arguments}"


def _fit(counter: TokenCounter, budget: int, head: str, snippet: str, tail: str) -> str:
    text = f"{head}\n{snippet}\n{tail}" if snippet else f"{head}\n{tail}"
    if counter.count(text) <= budget:
        return text
    spare = budget - counter.count(f"{head}\n\n{tail}")
    if spare < 8:
        return counter.trim(f"{head}\n{tail}", budget)
    return f"{head}\n{counter.trim(snippet, spare)}\n{tail}"


def remedy_text(trip: Trip, state: RepairState, counter: TokenCounter, budget: int) -> str:
    """The instruction for `trip`, given the failure model as the trip left it."""
    if trip.pattern == "stuck_same_diagnostic":
        file, test = failing_targets(state.snippet)
        target = f"the failing test {test} in {file}" if test and file else (file or "the failing check's source")
        changed = (
            f"your last {state.edits_on_failure} edit(s) did not change it"
            if state.edits_on_failure
            else "running it again without a change will not change it"
        )
        head = (
            f"{PREFIX} The same failure has come back {state.same_diagnostic_streak} times in a row; "
            f"{changed}. Unchanged evidence:"
        )
        tail = (
            f"Do not repeat that fix or edit the same lines again yet. Next action: read {target} "
            f"and the code it exercises, state what is actually wrong, then change approach."
        )
        return _fit(counter, budget, head, state.snippet, tail)
    if trip.pattern == "reverify_owed":
        head = f"{PREFIX} You edited files after this check failed but have not re-run it:"
        tail = f"Before anything else, run exactly {_failing_call(state)} again and read its result."
        return _fit(counter, budget, head, state.snippet, tail)
    if trip.pattern == "repeated_error":
        head = f"{PREFIX} The same call failed the same way {trip.count} times in a row."
        return _fit(
            counter,
            budget,
            head,
            "",
            "Do not send that call again unchanged; change the call or the code it checks first.",
        )
    return counter.trim(f"{PREFIX} {trip.detail}.", budget)


def handback_text(trip: Trip, state: RepairState, turns: int) -> str:
    """The incomplete hand-back's message: what failed, for how long, what was tried."""
    lines = [
        f"{PREFIX} Stopping here: this run is INCOMPLETE and is being handed back.",
        f"Reason: {trip.pattern} ({trip.detail}), after {turns} tool turn(s).",
    ]
    if state.live:
        lines.append(
            f"Still failing ({state.same_diagnostic_streak} times in a row, "
            f"{state.edits_on_failure} edit(s) did not change it), last seen from {_failing_call(state)}:"
        )
        lines.append(state.snippet)
    else:
        lines.append("No check is failing right now; the run stopped making progress.")
    return "\n".join(lines)
