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
    loop = _loop_remedy(trip)
    if loop is not None:
        head, quote, tail = loop
        return _fit(counter, budget, head, quote, tail)
    return counter.trim(f"{PREFIX} {trip.detail}.", budget)


def _loop_remedy(trip: Trip) -> tuple[str, str, str] | None:
    """(head, quoted evidence, next step) for the loop and stagnation patterns."""
    if trip.pattern == "repeat_call":
        return (
            f"{PREFIX} You have made this exact call {trip.count} times in a row: {trip.subject}. "
            "Its result will not change. You already have it:",
            trip.excerpt,
            "Do not call it again. Use that result and take a different next step.",
        )
    if trip.pattern == "repeat_output":
        return (
            f"{PREFIX} {trip.subject} has returned the same output {trip.count} times in a row:",
            trip.excerpt,
            f"Calling {trip.subject} again will return the same. Use what you have and move to the next step.",
        )
    if trip.pattern == "read_stagnation":
        target = f"{trip.subject}, the file you have read most" if trip.subject else "the file you have read most"
        return (
            f"{PREFIX} {trip.count} turns of re-reading and searching without changing anything.",
            "",
            f"Stop reading. State your hypothesis in one sentence, then make a concrete edit to {target}; "
            "or, if something blocks you, stop and say what.",
        )
    if trip.pattern == "ping_pong":
        return (
            f"{PREFIX} You are alternating between {trip.subject}, and neither result changes.",
            "",
            "Stop alternating. Neither call will tell you anything new; take a different step.",
        )
    if trip.pattern == "monologue":
        return (
            f"{PREFIX} You have sent this same reply {trip.count} times:",
            trip.excerpt,
            "Do not send it again. Either call a tool to make progress, or say plainly that you are done or blocked.",
        )
    if trip.pattern == "excessive_polling":
        return (
            f"{PREFIX} You have polled {trip.count} times in a row ({trip.subject}).",
            "",
            "Stop polling. Make one blocking wait with a timeout instead "
            "(for a shell: `timeout 300 <command that waits>`, or the tool's own wait option), then check once.",
        )
    return None


def handback_text(trip: Trip, state: RepairState, turns: int, progress: str = "") -> str:
    """The incomplete hand-back's message: why it stopped, what is failing, what was tried."""
    lines = [
        f"{PREFIX} Stopping here: this run is INCOMPLETE and is being handed back.",
        f"Reason: {trip.pattern} ({trip.detail}), after {turns} turn(s).",
    ]
    if progress:
        lines.append(f"Partial progress: {progress}")
    if state.live:
        lines.append(
            f"Still failing ({state.same_diagnostic_streak} times in a row, "
            f"{state.edits_on_failure} edit(s) did not change it), last seen from {_failing_call(state)}:"
        )
        lines.append(state.snippet)
    else:
        lines.append("No check is failing right now; the run stopped making progress.")
    return "\n".join(lines)
