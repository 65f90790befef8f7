"""Classification: what a call does (edit, verify, read, search, poll, finish, other).

Calls are classified by the policy: a tool with a fixed kind, a tool whose kind depends on
one argument, a shell tool whose command is matched against patterns, and for unknown
tools a shell-like argument or a hint in the name. How a call's result came out is
`outcome.py`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from proxy.settings.kinds import CallKind
from proxy.settings.policy import Classification, NameHints, ShellPatterns

__all__ = ["COMMAND_CHARS", "CallClass", "Classifier", "command_of"]

COMMAND_CHARS = 4096
"""How much of a shell command is read to classify it."""
_PRECEDENCE = (CallKind.VERIFY, CallKind.EDIT, CallKind.SEARCH, CallKind.READ, CallKind.POLL, CallKind.FINISH)
_SEGMENT_SPLIT = re.compile(r"\s*(?:&&|\|\||;|\||\n)\s*")
_LEADING_NOISE = re.compile(r"^(?:cd\s+\S+|export\s+\S+|source\s+\S+|(?:\w+=\S*\s+)+|timeout\s+\d+\w?\s+|time\s+)")


@dataclass(frozen=True, slots=True)
class CallClass:
    kind: CallKind
    mutates: bool
    """The call changes the workspace (an edit, or a command segment that writes)."""


def command_of(arguments: Mapping[str, Any] | None, names: tuple[str, ...]) -> str | None:
    """The shell command in a call's arguments (a string, or a list of argv words)."""
    if not arguments:
        return None
    for name in names:
        value = arguments.get(name)
        if isinstance(value, str):
            return value
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            words = list(value)
            if len(words) >= 3 and words[0] in ("bash", "sh", "zsh") and words[1] in ("-c", "-lc"):
                return str(words[2])
            return " ".join(words)
    return None


class Classifier:
    """A policy's classification rules, compiled once."""

    def __init__(self, rules: Classification) -> None:
        self._fixed: dict[str, CallKind] = {}
        self._by_arg: dict[str, tuple[str, dict[str, CallKind]]] = {}
        self._shell: dict[str, str] = {}
        for rule in rules.tools:
            for name in rule.names:
                if rule.command_arg:
                    self._shell[name] = rule.command_arg
                elif rule.arg:
                    self._by_arg[name] = (rule.arg, dict(rule.values))
                elif rule.kind:
                    self._fixed[name] = rule.kind
        self._command_args = rules.command_args
        self._patterns = {
            kind: tuple(re.compile(p) for p in getattr(rules.shell, kind.value))
            for kind in _PRECEDENCE
            if kind.value in ShellPatterns.model_fields
        }
        self._hints = {
            kind: getattr(rules.name_hints, kind.value) for kind in _PRECEDENCE if kind.value in NameHints.model_fields
        }

    def rule_of(self, name: str) -> tuple[CallKind | None, str | None, dict[str, CallKind], str | None]:
        """How a tool is classified: (fixed kind, kind-picking argument, its values, shell argument)."""
        arg, values = self._by_arg.get(name, (None, {}))
        return self._fixed.get(name), arg, values, self._shell.get(name)

    @property
    def command_args(self) -> tuple[str, ...]:
        return self._command_args

    def command(self, name: str, arguments: Mapping[str, Any] | None) -> str | None:
        """The shell command a call runs, when the call is a shell call."""
        if name in self._shell:
            return command_of(arguments, (self._shell[name], *self._command_args))
        if name in self._fixed or name in self._by_arg:
            return None
        return command_of(arguments, self._command_args)

    def classify(self, name: str, arguments: Mapping[str, Any] | None) -> CallClass:
        if name in self._fixed:
            kind = self._fixed[name]
            return CallClass(kind, kind is CallKind.EDIT)
        if name in self._by_arg:
            arg, values = self._by_arg[name]
            value = arguments.get(arg) if arguments else None
            kind = values.get(value, CallKind.OTHER) if isinstance(value, str) else CallKind.OTHER
            return CallClass(kind, kind is CallKind.EDIT)
        command = self.command(name, arguments)
        if command is not None:
            return self.classify_command(command)
        lowered = name.lower()
        for kind in _PRECEDENCE:
            if any(hint in lowered for hint in self._hints.get(kind, ())):
                return CallClass(kind, kind is CallKind.EDIT)
        return CallClass(CallKind.OTHER, False)

    def tool_of_kind(self, kind: CallKind, offered: set[str]) -> str | None:
        """A tool among `offered` that does `kind` by name (fixed kind, or one argument value)."""
        for name in sorted(offered):
            if self._fixed.get(name) is kind:
                return name
        for name in sorted(offered):
            if name in self._by_arg and kind in self._by_arg[name][1].values():
                return name
        return None

    def classify_command(self, command: str) -> CallClass:
        """A shell command's kind: the strongest kind of any segment; mutating if any segment writes.
        Only its first `COMMAND_CHARS` are read."""
        found: set[CallKind] = set()
        for part in _SEGMENT_SPLIT.split(command[:COMMAND_CHARS].strip()):
            segment = _LEADING_NOISE.sub("", part).strip()
            if not segment:
                continue
            for kind, patterns in self._patterns.items():
                if any(p.search(segment) for p in patterns):
                    found.add(kind)
        mutates = CallKind.EDIT in found
        for kind in _PRECEDENCE:
            if kind in found:
                return CallClass(kind, mutates)
        return CallClass(CallKind.OTHER, mutates)
