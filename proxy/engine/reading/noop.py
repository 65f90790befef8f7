"""An edit that changes nothing: its replacement is the very text it replaces, or it looks for
what it cannot find.

Read from the call's arguments alone, before it runs or after: a replace-style editor's
`new_str` equal to its `old_str`, or a literal in-place `sed` substitution whose two sides are
equal (`sed -i 's/x == 0/x == 0/' f.py`, see `sed`). Seen from a small model asked for an edit;
whatever the tool answers, the file is as it was, so the failure model counts no change and the
block rung refuses the call.

    str_replace {"old_str": "a - b", "new_str": "a - b"}   -> the reason
    bash {"command": "sed -i 's/a - b/a - b/' calc.py"}    -> the reason
    bash {"command": "sed -i 's/a - b/a + b/' calc.py"}    -> None
    bash {"command": "sed -i 's/a\\nb/c/' calc.py"}        -> the reason (a line break sed never sees)

The reason is typed (`Nothing`): a copy (the two sides equal) is told apart from a pattern that can
never match by a field, not by how its sentence ends; the block rung's re-ask says "that replaced
the lines with themselves" only to a copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from proxy.engine.reading.proposal import NEW_ARGS, OLD_ARGS, change_of
from proxy.engine.reading.sed import never_matches, substitution
from proxy.settings.kinds import CallKind

__all__ = ["Nothing", "unchanging", "undoing"]


@dataclass(frozen=True, slots=True)
class Nothing:
    """Why a call can do nothing."""

    reason: str
    """Said to the model, after "because" or "cannot do anything:"."""
    copy: bool = False
    """Its replacement is the very text it replaces (not a pattern that matches nothing)."""
    undo: bool = False
    """It puts back what the last edit replaced (A -> B -> A: `undoing`)."""


def unchanging(kind: CallKind, arguments: Mapping[str, Any] | None) -> Nothing | None:
    """Why an edit changes nothing (its replacement is the text it replaces, or its sed pattern
    can match nothing), or None (it may change something, or it is no edit)."""
    if kind is not CallKind.EDIT:
        return None
    given = {k: v for k, v in (arguments or {}).items() if isinstance(v, str)}
    old = next((given[k] for k in OLD_ARGS if k in given), None)
    new = next((given[k] for k in NEW_ARGS if k in given), None)
    if old is not None and new is not None and old == new:
        return Nothing("its replacement is the very text it replaces: it changes nothing", copy=True)
    for value in given.values():
        if (sub := substitution(value)) is not None and sub[0] == sub[1]:
            return Nothing(
                f"its substitution writes `{sub[0]}` in place of the very same text: it changes nothing", copy=True
            )
        if never_matches(value):
            return Nothing(
                "its pattern holds `\\n`, a line break, and sed reads a file one line at a time without it: "
                "it matches nothing (substitute within one line)"
            )
    return None


def undoing(kind: CallKind, arguments: Mapping[str, Any] | None, last: tuple[str, str] | None) -> Nothing | None:
    """Why an edit changes nothing the failing check needs: it undoes `last`, the last edit made
    on the live failure ((the text it replaced, its replacement), stripped: `RepairState.tried`),
    putting back the text the failure was seen with (A -> B -> A). None for any other edit. Of 44
    answers to the held edit on the project's held-out tasks, 8 were such moves undoing each other
    (`int`/`float`, `* factor`/`/ factor`: issue 61); refused as a copy is."""
    if kind is not CallKind.EDIT or last is None:
        return None
    given = {k: v for k, v in (arguments or {}).items() if isinstance(v, str)}
    change = change_of(given, None) or next((c for v in given.values() if (c := change_of(None, v))), None)
    if change is None or change != (last[1], last[0]) or last[0] == last[1]:
        return None
    why = f"it undoes the last edit: it puts back `{last[0]}`, and the failure was seen with that text"
    return Nothing(why, undo=True)
