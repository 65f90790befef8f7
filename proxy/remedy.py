"""Remedies: the instruction each trip injects, built from the evidence, never generic advice.

Each text names what is failing (the snippet, the failing test, the command that failed)
and the concrete next step, and fits the policy's token budget: when it does not, the
snippet is shortened, never the instruction.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from proxy.detectors import Trip
from proxy.failure import RepairState
from proxy.store import Verdict
from proxy.tokens import TokenCounter
from proxy.transcript import parse_arguments
from proxy.vocabulary import Call, Vocabulary

__all__ = ["PREFIX", "handback_text", "memory_text", "remedy_text", "resolve_path"]

PREFIX = "[repair-proxy]"
"""Marks every text the proxy adds, so a reader of the transcript can tell it apart."""

_CD = re.compile(r"^\s*cd\s+([^\s;&|]+)")


def _fit(counter: TokenCounter, budget: int, head: str, snippet: str, tail: str) -> str:
    text = f"{head}\n{snippet}\n{tail}" if snippet else f"{head}\n{tail}"
    if counter.count(text) <= budget:
        return text
    spare = budget - counter.count(f"{head}\n\n{tail}")
    if spare < 8:
        return counter.trim(f"{head}\n{tail}", budget)
    return f"{head}\n{counter.trim(snippet, spare)}\n{tail}"


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


def _cwd(command: str) -> str:
    match = _CD.match(command)
    return match.group(1) if match else ""


def _stuck_next_step(state: RepairState, vocabulary: Vocabulary | None) -> tuple[str, str | None]:
    """(what to read and why, the exact call) for a stuck failure: the failing test, else the
    failure's source line, whichever has not been read since the failure appeared."""
    known = [*state.read_since_failure, *state.edited_since_failure]
    cwd = _cwd(state.failing_command)
    p = state.pointers
    options: list[tuple[str, int | None, str]] = []
    if p.test_file:
        line = p.source_line if p.source_file == p.test_file else None
        options.append((p.test_file, line, f"the failing test {p.test_id}" if p.test_id else "the failing test"))
    if p.source_file and p.source_file != p.test_file:
        options.append(
            (
                p.source_file,
                p.source_line,
                f"line {p.source_line} where it fails" if p.source_line else "where it fails",
            )
        )
    if not options and p.source_file:
        options.append((p.source_file, p.source_line, "where it fails"))
    if not options:
        return "the failing check's source and the code it exercises", None
    unread = [o for o in options if resolve_path(o[0], known, cwd) not in state.read_since_failure]
    path, line, why = (unread or options)[-1 if not unread else 0]
    full = resolve_path(path, known, cwd)
    call = vocabulary.read(full, line) if vocabulary is not None else None
    return f"{why} in {full}", call.render() if call is not None else None


def _failing_call(state: RepairState, vocabulary: Vocabulary | None = None) -> str:
    """The call that failed, exactly as the agent made it."""
    arguments, _raw = parse_arguments(state.failing_arguments)
    if vocabulary is not None and state.failing_tool in vocabulary.tools and arguments is not None:
        return Call(state.failing_tool, arguments).render()
    if state.failing_command:
        return f"`{state.failing_command}`"
    return f"{state.failing_tool} with {state.failing_arguments}"


def remedy_text(
    trip: Trip, state: RepairState, counter: TokenCounter, budget: int, vocabulary: Vocabulary | None = None
) -> str:
    """The instruction for `trip`, given the failure model as the trip left it and the agent's
    own tools, so the next step is an exact call it can make."""
    if trip.pattern == "stuck_same_diagnostic":
        changed = (
            f"your last {state.edits_on_failure} edit(s) did not change it"
            if state.edits_on_failure
            else "running it again without a change will not change it"
        )
        head = f"{PREFIX} The same failure came back {state.same_diagnostic_streak} times in a row; {changed}:"
        what, call = _stuck_next_step(state, vocabulary)
        edited = ", ".join(p.rsplit("/", 1)[-1] for p in state.edited_since_failure)
        hold = f"Do not edit {edited} again yet." if edited else "Do not repeat the same fix."
        # Measured (bench/efficacy.py): naming the exact call and asking for that call alone
        # changed the next action far more often than advice or a bare JSON object did.
        step = f"Next, read {what}: {call}. Reply with that tool call only." if call else f"Next, read {what}."
        return _fit(counter, budget, head, state.snippet, f"{hold} {step}")
    if trip.pattern == "reverify_owed":
        head = f"{PREFIX} You edited files after this check failed and have not re-run it:"
        call = _failing_call(state, vocabulary)
        tail = f"Before anything else, re-run it exactly: {call}. Reply with that tool call only."
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


def memory_text(verdict: Verdict, counter: TokenCounter, budget: int) -> str:
    """The note a new run of a task gets about the attempt that stalled before it."""
    patterns = ", ".join(verdict.patterns) or "no progress"
    if verdict.failing_class == "fail" and verdict.snippet:
        head = (
            f"{PREFIX} A previous attempt at this task stalled ({patterns}): the same failure came back "
            f"{verdict.streak} times and {verdict.edits_unchanged} edit(s) did not change it:"
        )
        tail = "Do not repeat that attempt's fix. Find out why this failure persists before you edit."
        return _fit(counter, budget, head, verdict.snippet, tail)
    head = f"{PREFIX} A previous attempt at this task stalled ({patterns}) without making progress."
    return _fit(counter, budget, head, "", "Take a different approach from the start.")


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
