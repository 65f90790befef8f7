"""A call the model proposes, read before anyone runs it: what the block gate judges.

The same reading as a call in the transcript (`classify`, `canonical`), without a result: its
kind, its canonical key (so it can be compared with the calls already made), its shell
command, the files it would write, and the text of each argument.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from proxy.engine.reading.canonical import call_key
from proxy.engine.reading.classify import Classifier
from proxy.engine.reading.commands import Write
from proxy.engine.reading.sed import substitution
from proxy.engine.text.messages import parse_arguments
from proxy.settings.kinds import CallKind

__all__ = ["LEAVES_FILES", "NEW_ARGS", "OLD_ARGS", "Proposal", "change_of", "propose"]

OLD_ARGS = ("old_str", "old_string", "old_text", "search")
"""The arguments in which replace-style editors take the text to replace."""
NEW_ARGS = ("new_str", "new_string", "new_text", "replace")
"""... and the text to put in its place."""
LEAVES_FILES = frozenset({CallKind.READ, CallKind.SEARCH, CallKind.VERIFY, CallKind.POLL})
"""Kinds of call that leave the files as they are (unless a command among them writes)."""


def change_of(arguments: Mapping[str, Any] | None, command: str | None) -> tuple[str, str] | None:
    """What an edit changes, as its arguments say: (the text it replaces, its replacement), each
    stripped, from a replace-style editor's two texts or a literal in-place `sed` substitution;
    None for any other call (a create, a write the proxy cannot read)."""
    given = {k: v for k, v in (arguments or {}).items() if isinstance(v, str)}
    old = next((given[k] for k in OLD_ARGS if k in given), None)
    new = next((given[k] for k in NEW_ARGS if k in given), None)
    if old is not None and new is not None:
        return old.strip(), new.strip()
    found = substitution(command) if command else None
    return (found[0].strip(), found[1].strip()) if found is not None else None


@dataclass(frozen=True, slots=True)
class Proposal:
    name: str
    arguments: Mapping[str, Any] | None
    """Parsed arguments; None when they are not a JSON object."""
    raw: str
    kind: CallKind
    key: str
    """Tool name and sorted-key arguments, as `ObservedCall.key` (volatile keys dropped)."""
    command: str | None
    writes: tuple[Write, ...]
    alone: bool = True
    """The only call its reply proposes (a refusal that takes the whole reply away takes no other)."""

    def describe(self) -> str:
        """`tool {"arg": ...}` or the shell command, as the model wrote it."""
        return f"{self.name}: `{self.command}`" if self.command else f"{self.name} {self.raw}".strip()

    def replaced(self) -> tuple[str, str] | None:
        """A replace-style edit's text to replace: (its argument, its value)."""
        return next(((k, v) for k in OLD_ARGS if (v := self.text(k)) is not None), None)

    def change(self) -> tuple[str, str] | None:
        """What it would change: (the text it replaces, its replacement), stripped (`change_of`)."""
        return change_of(self.arguments, self.command) if self.kind is CallKind.EDIT else None

    def text(self, name: str) -> str | None:
        """One argument's value, when it is text."""
        value = (self.arguments or {}).get(name)
        return value if isinstance(value, str) else None


def propose(name: str, raw: str, classifier: Classifier, volatile: frozenset[str], *, alone: bool = True) -> Proposal:
    """`name` called with the JSON text `raw`, read as the fold would read it once made; `alone`:
    the only call of its reply."""
    arguments, raw_text = parse_arguments(raw)
    cls = classifier.classify(name, arguments)
    return Proposal(
        name,
        arguments,
        raw_text,
        cls.kind,
        call_key(name, arguments, raw_text, volatile),
        classifier.command(name, arguments),
        cls.writes,
        alone,
    )
