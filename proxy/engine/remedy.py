"""What every remedy shares: the marker, the token budget, paths written the agent's way,
the failing call quoted as it was made, and the two texts that belong to no one pattern
(the incomplete hand-back and the cross-run memory note).

Each pattern's own instruction lives in its detector file; each names what is failing and
the concrete next step, and fits the policy's token budget: when it does not, the quoted
evidence is shortened, never the instruction.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from proxy.engine.detectors.base import Trip
from proxy.engine.failure import RepairState
from proxy.engine.tokens import TokenCounter
from proxy.engine.transcript import parse_arguments
from proxy.engine.verdict import Verdict
from proxy.engine.vocabulary import Call, Vocabulary

__all__ = ["PREFIX", "failing_call", "fitter", "handback_text", "memory_text", "resolve_path", "working_dir"]

PREFIX = "[repair-proxy]"
"""Marks every text the proxy adds, so a reader of the transcript can tell it apart."""

_CD = re.compile(r"^\s*cd\s+([^\s;&|]+)")


def fitter(counter: TokenCounter, budget: int) -> Callable[[str, str, str], str]:
    """(head, quote, tail) -> the text within `budget` tokens, the quote shortened first."""

    def fit(head: str, snippet: str, tail: str) -> str:
        text = f"{head}\n{snippet}\n{tail}" if snippet else f"{head}\n{tail}"
        if counter.count(text) <= budget:
            return text
        spare = budget - counter.count(f"{head}\n\n{tail}")
        if spare < 8:
            return counter.trim(f"{head}\n{tail}", budget)
        return f"{head}\n{counter.trim(snippet, spare)}\n{tail}"

    return fit


def resolve_path(path: str, known: Iterable[str], cwd: str) -> str:
    """A path from the evidence, written the way the agent writes paths.

    Runners print paths relative to where they ran; agents often use absolute ones. Use a
    known path that ends with it, else the check's working directory, else a root under
    which the agent's other paths share the first directory.
    """
    if path.startswith("/"):
        return path
    known = [k for k in known if k]
    for candidate in known:
        if candidate == path or candidate.endswith("/" + path):
            return candidate
    if cwd:
        return f"{cwd.rstrip('/')}/{path}"
    first = path.split("/", 1)[0]
    for candidate in known:
        marker = f"/{first}/"
        if candidate.startswith("/") and marker in candidate:
            return candidate[: candidate.index(marker)] + "/" + path
    return path


def working_dir(command: str) -> str:
    """The directory a shell command `cd`s into first, if it does."""
    match = _CD.match(command)
    return match.group(1) if match else ""


def failing_call(state: RepairState, vocabulary: Vocabulary | None = None) -> str:
    """The call that failed, exactly as the agent made it."""
    arguments, _raw = parse_arguments(state.failing_arguments)
    if vocabulary is not None and state.failing_tool in vocabulary.tools and arguments is not None:
        return Call(state.failing_tool, arguments).render()
    if state.failing_command:
        return f"`{state.failing_command}`"
    return f"{state.failing_tool} with {state.failing_arguments}"


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
    lines = [
        f"{PREFIX} Stopping here: this run is INCOMPLETE and is being handed back.",
        f"Reason: {trip.pattern} ({trip.detail}), after {turns} turn(s).",
    ]
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
