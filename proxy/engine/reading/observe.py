"""Observation: a transcript turn with each answered call classified and judged.

A call is classified by what it is (`classify`) and judged by what it printed (`outputs.outcome`): a
command whose output is a test runner's report is a check whatever its name; a call that
could not run is an environment problem. Whether it changed the sources, or only a file of
the agent's own, is read against the workspace as the earlier calls left it (`workspace`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from proxy.engine.outputs.envelope import unwrap
from proxy.engine.outputs.outcome import Outcome, rejected, result_outcome, test_report
from proxy.engine.reading.canonical import call_identity, call_key, output_digest
from proxy.engine.reading.classify import PATH_ARGS, Classifier
from proxy.engine.reading.commands import Write
from proxy.engine.reading.noop import unchanging
from proxy.engine.reading.sed import script_refused
from proxy.engine.reading.unparsed import never_ran
from proxy.engine.reading.workspace import Workspace
from proxy.engine.text.deadline import checkpoint
from proxy.engine.text.transcript import ToolCall, Turn
from proxy.settings.kinds import CallKind
from proxy.settings.policy import DEFAULT_VOLATILE_KEYS

__all__ = ["SCAN_HEAD_CHARS", "SCAN_TAIL_CHARS", "ObservedCall", "ObservedTurn", "observe", "window"]

_TARGET_ARGS = (*PATH_ARGS, "dir_path")
SCAN_HEAD_CHARS = 16 * 1024
SCAN_TAIL_CHARS = 48 * 1024
"""How much of one result is read for its outcome and evidence: its head and its tail (failure
summaries sit at the end). The middle of a longer result is never scanned, so no result costs
more than a fixed amount to read, whatever it holds; its digest still covers all of it."""


def window(text: str) -> str:
    """`text`, or its head and tail when it is longer than the scan window."""
    if len(text) <= SCAN_HEAD_CHARS + SCAN_TAIL_CHARS:
        return text
    cut = len(text) - SCAN_HEAD_CHARS - SCAN_TAIL_CHARS
    return f"{text[:SCAN_HEAD_CHARS]}\n[... {cut} characters not scanned ...]\n{text[-SCAN_TAIL_CHARS:]}"


@dataclass(frozen=True, slots=True)
class ObservedCall:
    call: ToolCall
    kind: CallKind
    mutates: bool
    outcome: Outcome
    command: str | None
    """The shell command, for shell calls."""
    key: str
    """The canonical call: tool name and sorted-key arguments, volatile ids dropped."""
    digest: str | None
    """Digest of the result's payload; None when it has none."""
    rejected: bool = False
    """The tool turned the call down before running it (an argument missing or invalid)."""
    output: str = ""
    """The result as printed (a JSON envelope's output unwrapped, see `outputs.envelope`)."""
    writes: tuple[Write, ...] = ()
    """The files it writes, when they can be told."""
    probe: bool = False
    """A command running code given inline: an experiment, never a check by its name."""
    edits_source: bool = False
    """Its writes change files that are not the agent's own (see `workspace`)."""
    tries_source: bool = False
    """It set out to change files that are not the agent's own, whether or not it did: its writes
    (`edits_source`), or a write its program guarded (`if old in s:`) and did not say ran."""
    segments: frozenset[CallKind] = frozenset()
    """A shell command's segments' kinds (see `CallClass.segments`)."""
    no_op: bool = False
    """An edit that changed nothing, whatever it printed: its replacement is the text it replaces,
    or its sed pattern needs a line break (`noop`), it is a `sed` whose script sed refused to
    parse (`sed.script_refused`), a command the shell could not parse (`unparsed`), or it
    substitutes text its file, as last shown whole, lacks (`state.seen.settled`)."""

    @property
    def result(self) -> str:
        return self.output

    @property
    def target(self) -> str | None:
        """The file the call reads or writes, when it names one (an argument, the first file it
        writes, or a shell word: never one in the text an editor command puts in the file)."""
        arguments = self.call.arguments or {}
        for name in _TARGET_ARGS:
            value = arguments.get(name)
            if isinstance(value, str) and value:
                return value
        if self.writes:
            return self.writes[0].path
        if self.command:
            words = [w.strip("'\"") for w in self.command.split() if not w.startswith("-") and ("/" in w or "." in w)]
            words = [w for w in words if not w.startswith(("'", "s/")) and w not in (".", "..")]
            return words[-1] if words else None
        return None

    def describe(self) -> str:
        """`tool {"arg": ...}` or the shell command, as the agent wrote it."""
        if self.command:
            return f"{self.call.name}: `{self.command}`"
        return f"{self.call.name} {self.call.raw_arguments}".strip()

    @property
    def changed_sources(self) -> bool:
        """The call changed the sources (not only a file of the agent's own) and did not fail."""
        return self.edits_source and self.succeeded_mutation

    @property
    def succeeded_mutation(self) -> bool:
        """The call changed the workspace: an edit that did not fail, or a command that wrote
        before it ran its check (its failure is the check's, not the write's)."""
        if not self.mutates or self.no_op:
            return False
        return self.outcome is not Outcome.FAIL or self.kind is CallKind.VERIFY


@dataclass(frozen=True, slots=True)
class ObservedTurn:
    turn: Turn
    calls: tuple[ObservedCall, ...]
    """Answered calls only, in call order."""
    ordinal: int
    """1-based position of this turn among the turns folded in the conversation."""

    @property
    def anchor(self) -> str:
        return self.turn.anchor

    @property
    def text(self) -> str:
        return self.turn.text


_EDITED_FILE = re.compile(r"^\[File: (\S+) \(\d+ lines total\)\]", re.MULTILINE)
"""The file SWE-agent's editor names at the top of what an edit printed."""


def _writes_told(writes: tuple[Write, ...], kind: CallKind, output: str) -> tuple[Write, ...]:
    """The call's writes; for an edit whose command named no file (SWE-agent's `edit 10:12`
    edits the open file), the file its output names."""
    if writes or kind is not CallKind.EDIT or "[File: " not in output[:200]:
        return writes
    match = _EDITED_FILE.search(output[:400])
    return (Write(match.group(1), False),) if match else writes


_MOVED_TO = re.compile(r"^\(Current directory: ([^\n]*)\)", re.MULTILINE)
"""The working directory SWE-agent's shell footer names after every command."""


def _digest_told(digest: str | None, command: str | None, output: str) -> str | None:
    """The result's digest; for a `cd` that printed nothing, of the directory it left the shell in
    (SWE-agent's footer): three `cd ..` climbing a tree are three different results."""
    if digest is not None or not command or not command.lstrip().startswith(("cd ", "pushd ", "popd")):
        return digest
    moved = _MOVED_TO.search(output[-400:])
    return output_digest(f"now in {moved.group(1)}") if moved else None


def observe(
    turn: Turn,
    ordinal: int,
    classifier: Classifier,
    skip: frozenset[str] = frozenset(),
    volatile: frozenset[str] = DEFAULT_VOLATILE_KEYS,
    workspace: Workspace | None = None,
) -> tuple[ObservedTurn, Workspace]:
    """Classify the turn's answered calls not in `skip` (already folded), in call order, and
    the workspace they leave."""
    calls: list[ObservedCall] = []
    space = workspace or Workspace()
    for call in turn.calls:
        if call.result is None or (skip and call_identity(call) in skip):
            continue
        checkpoint(min(len(call.result), SCAN_HEAD_CHARS + SCAN_TAIL_CHARS))  # the budget, before it is read
        cls = classifier.classify(call.name, call.arguments)
        full = unwrap(call.result)
        output = window(full)
        kind = cls.kind
        if (kind is CallKind.OTHER or (kind is CallKind.EDIT and cls.probe)) and test_report(output):
            kind = CallKind.VERIFY  # a test report: a check, whatever printed it (an inline edit that then tests)
        command = classifier.command(call.name, call.arguments)
        made = tuple(Write(g.path, g.whole) for g in cls.guarded if g.made(output))
        if made and kind in (CallKind.OTHER, CallKind.READ, CallKind.SEARCH):
            kind = CallKind.EDIT  # its program said its guarded write ran: an edit
        writes = (*_writes_told(cls.writes, kind, output), *made)
        mutates = cls.mutates or bool(made)
        edits = mutates and space.edits_source(writes)
        tried = tuple(Write(g.path, g.whole) for g in cls.guarded)
        observed = ObservedCall(
            call=call,
            kind=kind,
            mutates=mutates,
            outcome=result_outcome(kind, output, call.is_error),
            command=command,
            key=call_key(call.name, call.arguments, call.raw_arguments, volatile),
            digest=_digest_told(output_digest(output), command, output),
            rejected=rejected(output),
            output=output,
            writes=writes,
            probe=cls.probe and kind is not CallKind.VERIFY,
            edits_source=edits,
            tries_source=edits or (bool(tried) and space.edits_source(tried)),
            segments=cls.segments,
            no_op=(len(writes) <= 1 and unchanging(cls.kind, call.arguments) is not None)
            or (kind is CallKind.EDIT and command is not None and script_refused(command, output))
            or (mutates and command is not None and never_ran(command, output)),
        )
        calls.append(observed)
        if observed.succeeded_mutation or kind in (CallKind.READ, CallKind.SEARCH):
            read = observed.target if kind in (CallKind.READ, CallKind.SEARCH) else None
            space = space.after(writes if observed.succeeded_mutation else (), [read] if read else [])
    return ObservedTurn(turn=turn, calls=tuple(calls), ordinal=ordinal), space
