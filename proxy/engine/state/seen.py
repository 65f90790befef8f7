"""What the agent's reads have shown of its files, as they are now: what an edit directive
quotes (the lines to replace, exactly as the file has them), and, where a read showed a file
whole, what tells that an edit's text is not in it at all.

    cat f.py, an editor's view of f.py with no range   -> shown, and whole (unless cut short)
    sed -n '1,24p' f.py, head -n 24 f.py: 13 lines out -> the same (the file ended first)
    sed -n '1,24p' f.py, a view with a range, grep      -> shown, in part
    any write of f.py                                   -> forgotten (not an edit that changed nothing)
    a command whose writes cannot be told (inline code, `python apply_fix.py`, `git checkout
    -- f.py`: any command that is no read, search, test run or edit) -> everything forgotten
"""

from __future__ import annotations

import re
from dataclasses import replace

from proxy.engine.outputs.outcome import Outcome
from proxy.engine.reading.commands import read_command
from proxy.engine.reading.observe import ObservedCall
from proxy.engine.reading.sed import sought
from proxy.engine.reading.workspace import among, same_file
from proxy.settings.kinds import CallKind

__all__ = ["MAX_SEEN", "Seen", "missed", "reads_whole", "seen_after", "settled", "shown_whole"]

Seen = tuple[tuple[str, str], ...]
"""(file, what its last read showed), the most recent last."""
MAX_SEEN = 3
"""Files remembered (the most recently read)."""
_SEEN_CHARS = 6000
_PARTIAL_ARGS = frozenset({"view_range", "offset", "limit", "start_line", "end_line", "line", "lines", "range"})
"""An editor's arguments that show part of a file."""
_CUT = ("<output_head>", "<output_tail>", "elided", "truncated", "clipped", "omitted", "[...")
"""What a harness writes where it shortened an output."""
_SED_FIRST = re.compile(r"^1,(\d+)p$")
_TOLD = frozenset({CallKind.READ, CallKind.SEARCH, CallKind.VERIFY, CallKind.EDIT})
"""Calls whose writes can be told: none (reads, searches, checks) or the files they name (edits).
Any other command may write anything, as may inline code (a probe)."""


def reads_whole(call: ObservedCall) -> bool:
    """The read showed its file whole: `cat f` alone (or an editor's view with no range), or its
    first N lines when fewer came out, its output short enough to be kept whole and not
    shortened by the agent's harness."""
    if call.kind is not CallKind.READ or len(call.output) >= _SEEN_CHARS or any(m in call.output for m in _CUT):
        return False
    if call.command is None:
        return not (_PARTIAL_ARGS & set(call.call.arguments or {}))
    segments = read_command(call.command).segments
    if len(segments) != 1:
        return False
    words = segments[0].words
    if segments[0].program != "cat":
        upto = _first_lines(words)
        return upto is not None and len(call.output.rstrip("\n").splitlines()) < upto
    flags = {w for w in words[1:] if w.startswith("-")}
    return len(words) - len(flags) == 2 and flags <= {"-n"}  # `cat [-n] f`


def _first_lines(words: tuple[str, ...]) -> int | None:
    """N of a read of a file's first N lines, `sed -n '1,Np' f` or `head -n N f` (`head -N f`):
    a read that printed fewer lines than that showed the whole file."""
    if len(words) == 4 and words[:2] == ("sed", "-n") and (m := _SED_FIRST.match(words[2])):
        return int(m.group(1))
    if len(words) == 4 and words[:2] == ("head", "-n") and words[2].isdigit():
        return int(words[2])
    if len(words) == 3 and words[0] == "head" and words[1][1:].isdigit() and words[1].startswith("-"):
        return int(words[1][1:])
    return None


def _untold(call: ObservedCall) -> bool:
    """The call may have written files it does not name: inline code, a program of the agent's
    own run (`python apply_fix.py`), any command that is no read, search, check or edit."""
    if call.probe or call.kind not in _TOLD:
        return True
    return call.kind is CallKind.VERIFY and call.command is not None and bool(read_command(call.command).scripts)


def _without(kept: dict[str, str], paths: set[str]) -> dict[str, str]:
    """`kept` less the files `paths` name, however each was written (`sed -i ... leap.py` after
    `cat /work/leap/leap.py`: recovery bench, leap, where the edit directive went on quoting the
    lines the sed had replaced, and the model made the same sed again, matching nothing)."""
    return {p: t for p, t in kept.items() if not among(p, paths)}


def seen_after(seen: Seen, whole: frozenset[str], calls: tuple[ObservedCall, ...]) -> tuple[Seen, frozenset[str]]:
    """What the files read so far showed (and which of them whole), with these calls' reads added
    and their writes forgotten."""
    if not seen and not any(c.kind is CallKind.READ for c in calls):
        return seen, whole
    kept = dict(seen)
    full = set(whole)
    for c in calls:
        if _untold(c):
            kept = {}
        elif c.mutates and not c.no_op and c.outcome is not Outcome.FAIL:
            written = {w.path for w in c.writes} | ({c.target} if c.target else set())
            kept = {} if not written else _without(kept, written)
        elif c.kind is CallKind.READ and c.target and c.outcome is not Outcome.FAIL and c.output.strip():
            kept = _without(kept, {c.target})
            kept[c.target] = c.output[:_SEEN_CHARS]
            (full.add if reads_whole(c) else full.discard)(c.target)
    items = tuple(kept.items())[-MAX_SEEN:]
    return items, frozenset(path for path, _ in items if path in full)


def shown_whole(seen: Seen, whole: frozenset[str], path: str) -> str | None:
    """What the agent's last read of `path` showed, when it showed the file whole (and it has not
    changed since)."""
    known, text = next(((k, t) for k, t in reversed(seen) if same_file(k, path)), ("", None))
    return text if known in whole else None


def missed(command: str | None, path: str | None, seen: Seen, whole: frozenset[str]) -> tuple[str, str] | None:
    """(the text it looks for, the file as last shown whole) of an in-place substitution of text
    its file does not have: it changes nothing. None when it may change something."""
    found = sought(command) if command and path else None
    shown = shown_whole(seen, whole, path) if found is not None and path else None
    return (found.text, shown) if found is not None and shown is not None and not found.found_in(shown) else None


def settled(calls: tuple[ObservedCall, ...], seen: Seen, whole: frozenset[str]) -> tuple[ObservedCall, ...]:
    """The calls, with an edit that substitutes text its file lacks (`missed`) marked as changing
    nothing, while no call before it in the turn may have written."""
    if not whole:  # no file shown whole: nothing to tell a substitution misses
        return calls
    out: list[ObservedCall] = []
    written = False  # some call before in the turn may have written
    for call in calls:
        path = call.writes[0].path if len(call.writes) == 1 else None
        unchanged = call.kind is CallKind.EDIT and not written and missed(call.command, path, seen, whole) is not None
        out.append(replace(call, no_op=True) if unchanged else call)
        written = written or call.kind is not CallKind.READ or call.mutates
    return tuple(out)
