"""Classification: what a call does (edit, verify, read, ...) and how its result came out.

Calls are classified by the policy: a tool with a fixed kind, a tool whose kind depends on
one argument, a shell tool whose command is matched against patterns, and for unknown
tools a shell-like argument or a hint in the name. Results are `fail`, `pass` or
`neutral`, from an error flag, an `{"error": ...}` payload, an exit code in one of the
shapes agents print, a test-runner or compiler summary, or a traceback.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import orjson

from proxy.engine.textscan import Marker, any_marker
from proxy.settings.kinds import CallKind
from proxy.settings.policy import Classification, NameHints, ShellPatterns

__all__ = ["FAIL_MARKERS", "PASS_MARKERS", "Classifier", "Outcome", "command_of", "result_outcome"]

_PRECEDENCE = (CallKind.VERIFY, CallKind.EDIT, CallKind.SEARCH, CallKind.READ, CallKind.POLL, CallKind.FINISH)
_SEGMENT_SPLIT = re.compile(r"\s*(?:&&|\|\||;|\||\n)\s*")
_LEADING_NOISE = re.compile(r"^(?:cd\s+\S+|export\s+\S+|source\s+\S+|(?:\w+=\S*\s+)+|timeout\s+\d+\w?\s+|time\s+)")


class Outcome(StrEnum):
    FAIL = "fail"
    PASS = "pass"
    NEUTRAL = "neutral"


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
        """A shell command's kind: the strongest kind of any segment; mutating if any segment writes."""
        found: set[CallKind] = set()
        for part in _SEGMENT_SPLIT.split(command.strip()):
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


# --- results -------------------------------------------------------------------------

_EXIT_CODE = re.compile(
    r"(?:exit(?:ed)?[ _](?:code|status)|exit_code|return ?code|returncode|exited with code|"
    r"process exited with code)\s*[:=>]?\s*\[?(-?\d+)",
    re.IGNORECASE,
)
FAIL_MARKERS = (
    Marker.of("failed", r"=+ .*\b\d+ failed\b.*=+"),  # pytest summary
    Marker.of("error", r"=+ .*\b\d+ errors?\b.*=+"),
    Marker.of("FAILED ", r"^FAILED \S+"),  # pytest short summary, unittest
    Marker.of("failed", r"^(?:Tests|Test Suites):\s+\d+ failed"),  # jest
    Marker.of("failed", r"^\s*Tests\s+\d+ failed"),  # vitest
    Marker.of("test result: FAILED"),  # cargo
    Marker.of("--- FAIL: "),  # go test
    Marker.of("FAIL", r"^FAIL\s"),
    Marker.of("error TS", r"\berror TS\d+:"),  # tsc
    Marker.of("error", r"^error(?:\[E\d+\])?: "),  # rustc / cargo
    Marker.of("Found ", r"^Found \d+ errors?\b"),  # mypy, ruff
    Marker.of(": error: ", r"^\S+:\d+: error: "),  # mypy lines
    Marker.of(": ", r"^\S+:\d+:\d+: [A-Z]+\d+ "),  # flake8 / ruff concise
    Marker.of("npm ERR! "),
    Marker.of("Traceback (most recent call last):"),
    Marker.of("panicked at "),
)
"""Output that says a check failed."""
PASS_MARKERS = (
    Marker.of("passed", r"=+ \d+ passed[^=\n]*=+"),  # pytest
    Marker.of("skipped", r"=+ \d+ skipped[^=\n]*=+"),
    Marker.of("no tests ran", r"=+ no tests ran[^=\n]*=+"),
    Marker.of("passed", r"^(?:Tests|Test Suites):\s+\d+ passed, \d+ total"),  # jest
    Marker.of("passed", r"^\s*Tests\s+\d+ passed"),  # vitest
    Marker.of("test result: ok."),  # cargo
    Marker.of("ok\t", r"^ok\t\S+"),  # go test
    Marker.of("ok ", r"^ok\s+\S+"),
    Marker.of("PASS\n", r"^PASS$"),
    Marker.of("OK", r"^OK(?: \(|$)"),  # unittest
    Marker.of("Success: no issues found"),  # mypy
    Marker.of("All checks passed!"),  # ruff
)
"""Output that says a check passed."""
_EDIT_FAILURE = re.compile(
    r"^\s*(?:error|failed|failure|no replacement was performed|<tool_use_error>)|"
    r"\b(?:did not appear verbatim|not found in|no match(?:es)? found|could not find)\b",
    re.IGNORECASE,
)


def _json_error(text: str) -> bool:
    stripped = text.lstrip()
    if not stripped.startswith("{"):
        return False
    try:
        payload = orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return False
    return isinstance(payload, dict) and bool(payload.get("error"))


def exit_code(text: str) -> int | None:
    """The last exit code the output states, if any."""
    # Agents print the code first (`<returncode>1</returncode>`) or last (`exit code: 1`).
    region = (text if len(text) <= 2000 else text[:400] + "\n" + text[-1600:]).lower()
    last: tuple[int, int] | None = None
    for needle in ("exit", "return", "process"):
        position = region.find(needle)
        while position != -1:
            match = _EXIT_CODE.match(region, position)
            if match and (last is None or position > last[0]):
                last = (position, int(match.group(1)))
            position = region.find(needle, position + 1)
    return None if last is None else last[1]


def result_outcome(kind: CallKind, text: str, is_error: bool) -> Outcome:
    """How one call's result came out, judged by what kind of call made it."""
    if is_error or _json_error(text):
        return Outcome.FAIL
    text = text if text.endswith("\n") else text + "\n"
    code = exit_code(text)
    if kind is CallKind.EDIT:
        if code not in (None, 0) or _EDIT_FAILURE.search(text[:400]):
            return Outcome.FAIL
        return Outcome.NEUTRAL
    if kind is CallKind.FINISH:
        return Outcome.NEUTRAL
    if kind in (CallKind.READ, CallKind.SEARCH, CallKind.POLL):
        # grep's exit 1 means "no match"; a read's content is not evidence of failure.
        return Outcome.FAIL if code not in (None, 0, 1) else Outcome.NEUTRAL
    if code not in (None, 0):
        return Outcome.FAIL
    if any_marker(PASS_MARKERS, text) and not _counts_failure(text):
        return Outcome.PASS if kind is CallKind.VERIFY else Outcome.NEUTRAL
    if any_marker(FAIL_MARKERS, text):
        return Outcome.FAIL
    if code == 0 and kind is CallKind.VERIFY:
        return Outcome.PASS
    return Outcome.NEUTRAL


_FAILED_COUNT = re.compile(r"\b[1-9]\d* (?:failed|errors?)\b|test result: FAILED|^--- FAIL", re.MULTILINE)


def _counts_failure(text: str) -> bool:
    return _FAILED_COUNT.search(text) is not None
