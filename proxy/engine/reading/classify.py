"""Classification: what a call does (edit, verify, read, search, poll, finish, other), and
which files it writes.

Calls are classified by the policy: a tool with a fixed kind, a tool whose kind depends on
one argument, a shell tool whose command is read by its structure (`commands.py`) and its
segments matched against the policy's patterns, and for unknown tools a shell-like argument
or a hint in the name. A shell command that runs a program file (`python repro.py`,
`./tests/runtests.py`) is a check, like a test runner; one that runs code given inline
(`python -c`, `python - <<EOF`) is a probe, never a check by its name. Files written are
found by structure (redirections, `tee`, `cp`, `sed -i`, an editor's `create`), never by a
`>` inside a quoted program. How a call's result came out is `outputs/outcome.py`'s; whether a write
changed the sources or only a scratch file of the agent's is the workspace's (`workspace.py`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from proxy.engine.reading.commands import Segment, Write, read_command
from proxy.engine.reading.pywrites import Guarded
from proxy.settings.kinds import LOOKS, CallKind
from proxy.settings.policy import Classification, NameHints, ShellPatterns

__all__ = ["COMMAND_CHARS", "PATH_ARGS", "CallClass", "Classifier", "command_of"]

COMMAND_CHARS = 4096
"""How much of a shell command is read to classify it."""
_FILTERS = frozenset(
    {"tail", "head", "grep", "egrep", "fgrep", "rg", "sort", "uniq", "wc", "cut", "awk", "sed", "tr", "nl"}
    | {"column", "cat", "less", "more", "tac", "fold", "fmt", "jq", "tee"}
)
"""Programs that, reading a pipe, print a part or a form of what came in (`tee` also writes the
files it names: a segment that writes is never a filter)."""
_PRECEDENCE = (CallKind.VERIFY, CallKind.EDIT, CallKind.SEARCH, CallKind.READ, CallKind.POLL, CallKind.FINISH)
_BY_PROGRAM = (CallKind.FINISH, CallKind.SEARCH, CallKind.READ, CallKind.POLL)
"""Kinds a segment has by the program it starts with: its patterns name the program."""
PATH_ARGS = ("path", "file_path", "filename", "file", "target_file", "absolute_path", "filepath")
"""The arguments in which tools name the file they act on, first found first. Its readers add their
own: the file an editor writes may be a notebook (`notebook_path`), what a call reads a directory
(`dir_path`); the agent's vocabulary takes these alone (a directory lister is no file reader)."""
_WRITTEN_ARGS = (*PATH_ARGS, "notebook_path")
_WHOLE_VALUES = frozenset({"create", "write", "overwrite"})
_WHOLE_NAMES = ("write", "create")


@dataclass(frozen=True, slots=True)
class CallClass:
    kind: CallKind
    mutates: bool
    """The call changes files (an edit, or a command that writes one)."""
    writes: tuple[Write, ...] = ()
    """The files it writes, when they can be told (an edit whose target is unknown has none)."""
    probe: bool = False
    """A command that runs code given inline: an experiment, not a check by its name."""
    segments: frozenset[CallKind] = frozenset()
    """A shell command's segments' kinds (`pip install -e . && cat setup.py` is read by its `cat`, and
    installs; a filter reading a pipe after another program is none of them); empty for any other call."""
    guarded: tuple[Guarded, ...] = ()
    """The files its inline Python program writes under an `if`, if its output tells that ran
    (`pywrites.Guarded`, judged when the call is observed)."""


def _editor_writes(name: str, arguments: Mapping[str, Any] | None, value: str | None = None) -> tuple[Write, ...]:
    """The file an editing tool writes: whole when it creates or writes a file, else in place."""
    path = next((v for k in _WRITTEN_ARGS if isinstance(v := (arguments or {}).get(k), str) and v), None)
    if path is None:
        return ()
    whole = value in _WHOLE_VALUES if value is not None else any(w in name.lower() for w in _WHOLE_NAMES)
    return (Write(path, whole),)


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


def _filters(segment: Segment) -> bool:
    """A segment that only filters what the one before it printed (`| tail -20`, `| grep -v warn`):
    it reads no file, so beside a program that is no read or search it gives the command no kind of
    its own (`gradle build | tail -20` runs the build and reads nothing; `pip install -e . | tail
    -2` installs; before, their `tail` made them reads). After a read or a search it is one too:
    `cat f.py | grep foo` searches, as before."""
    return segment.piped and not segment.writes and segment.program in _FILTERS


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
            for kind in (*_PRECEDENCE, CallKind.OTHER)
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
            edits = kind is CallKind.EDIT
            return CallClass(kind, edits, _editor_writes(name, arguments) if edits else ())
        if name in self._by_arg:
            arg, values = self._by_arg[name]
            value = arguments.get(arg) if arguments else None
            kind = values.get(value, CallKind.OTHER) if isinstance(value, str) else CallKind.OTHER
            edits = kind is CallKind.EDIT
            chosen = value if isinstance(value, str) else None
            return CallClass(kind, edits, _editor_writes(name, arguments, chosen) if edits else ())
        command = self.command(name, arguments)
        if command is not None:
            return self.classify_command(command)
        lowered = name.lower()
        for kind in _PRECEDENCE:
            if any(hint in lowered for hint in self._hints.get(kind, ())):
                edits = kind is CallKind.EDIT
                return CallClass(kind, edits, _editor_writes(name, arguments) if edits else ())
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
        """A shell command's kind: a finish when its first segment finishes (mini-swe-agent
        stops when the output's first line is its submit word, whatever runs after: 1.x's
        `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached`, 2.x's
        `... && cat patch.txt`); else the strongest kind of any segment (see `_segment_kind`);
        mutating when it writes a file or a segment matches an edit pattern. Only its first
        `COMMAND_CHARS` are read."""
        read = read_command(command[:COMMAND_CHARS])
        kinds = [self._segment_kind(s.text, s.script is not None, bool(s.writes)) for s in read.segments]
        produced = [k for k, s in zip(kinds, read.segments, strict=True) if not _filters(s)]
        if any(k not in LOOKS for k in produced):  # `gradle build | tail`: the build's output, filtered
            kinds = produced
        found = set(kinds)
        writes = read.writes
        mutates = bool(writes) or CallKind.EDIT in found
        probe = read.inline and CallKind.VERIFY not in found
        kind: CallKind = next((k for k in _PRECEDENCE if k in found), CallKind.OTHER)
        if kinds and kinds[0] is CallKind.FINISH:
            kind = CallKind.FINISH
        return CallClass(kind, mutates, writes, probe, frozenset(found), read.guarded)

    def _segment_kind(self, text: str, runs_script: bool, writes: bool) -> CallKind:
        """One segment's kind: a check when it runs a program file; an edit when its output
        goes to a file (`cat > f.py` writes, it reads nothing); what its program is, when a
        read, search or poll pattern names it (`grep pytest` searches, it runs no test); else a
        check or an edit by pattern; else other. A program that installs or looks up (the
        `other` patterns) is other, whatever it names: `pip install pytest` runs no test."""
        if runs_script:
            return CallKind.VERIFY
        if writes:
            return CallKind.EDIT
        for kind in (*_BY_PROGRAM, CallKind.OTHER):
            if any(p.search(text) for p in self._patterns.get(kind, ())):
                return kind
        for kind in (CallKind.VERIFY, CallKind.EDIT):
            if any(p.search(text) for p in self._patterns.get(kind, ())):
                return kind
        return CallKind.OTHER
