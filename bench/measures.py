"""Measures of a trip that need no judge, read off the recorded run around it.

A replayed trip says what the proxy would have told the agent at that point; the recorded run
says what the agent did without it. Four measures compare the two, each from the run's own
calls and outputs, with no reading of whether the work was right:

    redundant   the agent took the step the instruction asks for (the pattern's `asks`) within
                its next two calls anyway: re-ran a check (`rerun`), changed the code (`change`),
                stopped making the calls the trip names (`stop`: none of them within the next five
                turns; a loop whose calls come back between others had not stopped at the next
                call), its next reply made a call the
                agent took (`call`), read the file the next step names or, all of it read, made
                a change (`step`)
    stale       the failure it cites had been followed by a clean run of the same command or
                script before the trip (exit 0 printed, or no exit code and no error printed;
                a piped command's code is its last stage's, so it is read by its output alone)
    late        turns between the start of the loop it names (`Trip.since`) and the trip
    repeated    the recorded run went on doing what the trip named: a named call again within
                five turns (`stop`), another edit before any check (`rerun`), no change within
                five turns (`change`), the next reply again without a call (`call`), the
                failing check run again within five turns with nothing read or changed (`step`)

"Clean" and "a check" are read here by a rule of their own, plainer than the proxy's, so that a
measure does not agree with the proxy by construction: a run is clean when it printed exit code
0 and no traceback, or printed no exit code and no error, traceback or failure line.

Each measure is None where it does not apply (a gate's held reply asks for nothing the agent
could have done already; a trip that cites no failure is never stale).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from proxy.engine.outputs.outcome import exit_code
from proxy.engine.reading.classify import Classifier
from proxy.engine.reading.observe import ObservedCall, observe
from proxy.engine.reading.workspace import Workspace, same_file
from proxy.engine.text.transcript import read_turns
from proxy.settings.kinds import Ask, CallKind

__all__ = ["NEXT", "Measured", "Tripped", "measure", "observed_turns"]

NEXT = 2
"""Calls after the trip in which the asked step counts as taken anyway."""
AFTER = 5
"""Turns after the trip in which the run's going on as before is looked for."""
CITES_FAILURE = frozenset({"stuck_same_diagnostic", "reverify_owed", "gate:finish", "gate:done"})
"""Trips whose instruction quotes the live failure."""

_ERROR = re.compile(r"^.*\b(?:error|errors|failed|failure|FAIL|Traceback)\b", re.MULTILINE | re.IGNORECASE)
_TRACEBACK = "Traceback (most recent call last)"
_PIPED = re.compile(r"(?<![|>&])\|(?![|&])")
"""A pipe (`a | b`), not an `||`, a `|&` or a `>|`."""


def observed_turns(
    requests: Iterable[list[dict[str, object]]], classifier: Classifier
) -> dict[int, list[ObservedCall]]:
    """Each turn of a run by its ordinal (as the fold numbers them: every assistant turn, its
    calls once answered), with its calls observed the first time their results appear (before
    an agent's history processor shortens them)."""
    turns: dict[int, list[ObservedCall]] = {}
    done: set[int] = set()
    space = Workspace()
    for messages in requests:
        for turn in read_turns(messages)[0]:
            if turn.message_index in done:
                continue
            if turn.calls and all(call.result is None for call in turn.calls):
                continue  # not answered yet
            done.add(turn.message_index)
            ordinal = len(done)
            seen, space = observe(turn, ordinal, classifier, workspace=space)
            turns[ordinal] = list(seen.calls)
    return turns


@dataclass(frozen=True, slots=True)
class Tripped:
    """What the measures need of one trip."""

    pattern: str
    asks: Ask | None
    """None: a gate holding a reply (nothing the agent could have done already)."""
    turn: int
    since: int
    failing_key: str = ""
    failing_scripts: tuple[str, ...] = ()
    step: tuple[CallKind, str | None] | None = None
    """For `step`: the next step's kind and the file a read of it names."""
    acted: bool | None = None
    """For `call`: the model's next reply made a call the agent took (no complaint followed)."""


@dataclass(frozen=True, slots=True)
class Measured:
    redundant: bool | None
    stale: bool | None
    late: int | None
    repeated: bool | None


def _scripts(call: ObservedCall) -> set[str]:
    try:
        words = shlex.split(call.command or "", posix=True)
    except ValueError:
        words = (call.command or "").split()
    return {w for w in words if w.endswith((".py", ".sh", ".java", ".js", ".ts", ".rb"))}


def _same_check(call: ObservedCall, trip: Tripped) -> bool:
    return call.key == trip.failing_key or bool(_scripts(call) & set(trip.failing_scripts))


def clean(call: ObservedCall) -> bool:
    """The plain rule (see the module's docstring): exit 0 and no traceback, or no code and no error.
    A command piped into another (`pytest ... | tail -30`) prints its last stage's exit code, not
    the check's: it is read by its output alone, as one with no code (tune, sqlfluff-1763: a test
    run printing `1 failed` under `<returncode>0</returncode>` was counted a clean run)."""
    output = call.output
    code = exit_code(output)
    if code is not None and not _PIPED.search(call.command or ""):
        return code == 0 and _TRACEBACK not in output
    return _ERROR.search(output) is None


def _a_check(call: ObservedCall, trip: Tripped) -> bool:
    return call.kind is CallKind.VERIFY or _same_check(call, trip)


def _edit(call: ObservedCall) -> bool:
    return call.changed_sources


_LOOKS = frozenset({CallKind.READ, CallKind.SEARCH})


def _reads(call: ObservedCall, path: str | None) -> bool:
    """A read of `path` (any read when the step names no file)."""
    if call.kind not in _LOOKS:
        return False
    if path is None:
        return True
    target = call.target or ""
    mentioned = path in (call.command or "") or path in call.call.raw_arguments
    return mentioned or (bool(target) and same_file(target, path))


def _named(turns: dict[int, list[ObservedCall]], trip: Tripped) -> set[str]:
    if trip.pattern == "stuck_same_diagnostic" and trip.failing_key:
        return {trip.failing_key}
    keys = {c.key for c in turns.get(trip.turn, [])}
    if trip.pattern in ("ping_pong", "retread"):  # every call of the round or stretch (since: where it began)
        keys |= {c.key for t in range(max(trip.since, trip.turn - 10), trip.turn) for c in turns.get(t, [])}
    return keys


def _after(turns: dict[int, list[ObservedCall]], turn: int, span: int) -> list[list[ObservedCall]]:
    return [turns[t] for t in range(turn + 1, turn + 1 + span) if t in turns]


def measure(turns: dict[int, list[ObservedCall]], trip: Tripped) -> Measured:
    """The four measures of one trip (see the module's docstring)."""
    later = _after(turns, trip.turn, AFTER)
    following = [c for calls in later for c in calls]
    nxt = following[:NEXT]
    redundant: bool | None = None
    repeated: bool | None = None
    if trip.asks is not None and later:
        if trip.asks is Ask.RERUN:
            redundant = any(_a_check(c, trip) for c in nxt)
            first = next((i for i, c in enumerate(following) if _a_check(c, trip)), len(following))
            repeated = any(_edit(c) for c in following[:first])
        elif trip.asks is Ask.CHANGE:
            redundant = any(_edit(c) for c in nxt)
            repeated = not any(_edit(c) for c in following)
        elif trip.asks is Ask.STOP:
            named = _named(turns, trip)
            repeated = any(c.key in named for c in following)
            redundant = bool(nxt) and not repeated
        elif trip.asks is Ask.STEP and trip.step is not None:
            kind, path = trip.step
            took = _edit if kind is CallKind.EDIT else (lambda c: _reads(c, path))
            redundant = any(took(c) for c in nxt)
            rerun = next((i for i, c in enumerate(following) if _same_check(c, trip)), None)
            repeated = rerun is not None and not any(_edit(c) or c.kind in _LOOKS for c in following[:rerun])
    if trip.asks is Ask.CALL and trip.acted is not None:
        redundant = trip.acted
        repeated = not trip.acted
    stale: bool | None = None
    if trip.pattern in CITES_FAILURE and trip.failing_key:
        runs = [c for t in range(1, trip.turn + 1) for c in turns.get(t, []) if _same_check(c, trip)]
        stale = bool(runs) and clean(runs[-1])
    late = trip.turn - trip.since if trip.since else None
    return Measured(redundant, stale, late, repeated)


LOOP_TURNS = 5
"""Repeated turns that make a stretch a loop (`loops`)."""
LOOP_GAP = 1
"""Turns that are not repeats a loop may hold between two that are (a probe made once inside it)."""


def loops(turns: dict[int, list[ObservedCall]]) -> list[tuple[int, int]]:
    """The run's loops by a plain rule, as (first, last) turn: stretches of at least `LOOP_TURNS`
    turns each of whose calls (call and output, normalised) the run had already made and seen, with
    at most `LOOP_GAP` other turns between two of them. What the recall of the loop patterns is
    measured against (a loop is acted on when an acting trip lands in its first half): a plain
    rule of its own, no pattern's state."""
    seen: set[tuple[str, str | None]] = set()
    repeated: list[int] = []
    for ordinal in sorted(turns):
        pairs = [(c.key, c.digest) for c in turns[ordinal]]
        if pairs and all(p in seen for p in pairs):
            repeated.append(ordinal)
        seen.update(pairs)
    found: list[tuple[int, int]] = []
    stretch: list[int] = []
    for ordinal in repeated:
        if stretch and ordinal - stretch[-1] > LOOP_GAP + 1:
            if len(stretch) >= LOOP_TURNS:
                found.append((stretch[0], stretch[-1]))
            stretch = []
        stretch.append(ordinal)
    if len(stretch) >= LOOP_TURNS:
        found.append((stretch[0], stretch[-1]))
    return found
