"""What the agent's reads have shown of its files, as they are now: what an edit directive
quotes (the lines to replace, exactly as the file has them), and, where a read showed a file
whole, what tells that an edit's text is not in it at all.

    cat f.py, an editor's view of f.py with no range   -> shown, and whole (unless cut short)
    sed -n '1,24p' f.py, a view with a range, grep      -> shown, in part
    any write of f.py (or a command whose writes cannot be told) -> forgotten
"""

from __future__ import annotations

from proxy.engine.reading.commands import read_command
from proxy.engine.reading.observe import ObservedCall
from proxy.engine.reading.outcome import Outcome
from proxy.settings.kinds import CallKind

__all__ = ["MAX_SEEN", "Seen", "reads_whole", "seen_after"]

Seen = tuple[tuple[str, str], ...]
"""(file, what its last read showed), the most recent last."""
MAX_SEEN = 3
"""Files remembered (the most recently read)."""
_SEEN_CHARS = 6000
_PARTIAL_ARGS = frozenset({"view_range", "offset", "limit", "start_line", "end_line", "line", "lines", "range"})
"""An editor's arguments that show part of a file."""
_CUT = ("<output_head>", "<output_tail>", "elided", "truncated", "clipped", "omitted", "[...")
"""What a harness writes where it shortened an output."""


def reads_whole(call: ObservedCall) -> bool:
    """The read showed its file whole: `cat f` alone (or an editor's view with no range), its
    output short enough to be kept whole and not shortened by the agent's harness."""
    if call.kind is not CallKind.READ or len(call.output) >= _SEEN_CHARS or any(m in call.output for m in _CUT):
        return False
    if call.command is None:
        return not (_PARTIAL_ARGS & set(call.call.arguments or {}))
    segments = read_command(call.command).segments
    if len(segments) != 1 or segments[0].program != "cat":
        return False
    flags = {w for w in segments[0].words[1:] if w.startswith("-")}
    return len(segments[0].words) - len(flags) == 2 and flags <= {"-n"}  # `cat [-n] f`


def seen_after(seen: Seen, whole: frozenset[str], calls: tuple[ObservedCall, ...]) -> tuple[Seen, frozenset[str]]:
    """What the files read so far showed (and which of them whole), with these calls' reads added
    and their writes forgotten."""
    if not any(c.kind is CallKind.READ or c.mutates for c in calls):
        return seen, whole
    kept = dict(seen)
    full = set(whole)
    for c in calls:
        if c.mutates and c.outcome is not Outcome.FAIL:
            written = {w.path for w in c.writes} | ({c.target} if c.target else set())
            kept = {} if not written else {p: t for p, t in kept.items() if p not in written}
        elif c.kind is CallKind.READ and c.target and c.outcome is not Outcome.FAIL and c.output.strip():
            kept.pop(c.target, None)
            kept[c.target] = c.output[:_SEEN_CHARS]
            (full.add if reads_whole(c) else full.discard)(c.target)
    items = tuple(kept.items())[-MAX_SEEN:]
    return items, frozenset(path for path, _ in items if path in full)
