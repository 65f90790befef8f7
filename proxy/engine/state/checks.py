"""What one turn's calls say to the failure model (`failure.py`), call by call: which is a
check and which fails first, whether the failing check's own script was written, whether only
reads ran, whether a call put files back as the repository had them, and the probes run; over
the whole conversation, the source files changed and not put back (`Changes`).

Pure functions of the observed calls; the failure model folds their answers.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from proxy.engine.outputs.evidence import evidence, project_frames
from proxy.engine.outputs.outcome import Outcome
from proxy.engine.reading.observe import ObservedCall
from proxy.engine.reading.workspace import among, same_file
from proxy.settings.kinds import LOOKS, CallKind

__all__ = [
    "DIAGNOSTIC_KINDS",
    "Changes",
    "exercised",
    "first_failure",
    "is_check",
    "probes_after",
    "quiet",
    "restored_from",
    "restores",
    "rewrites",
]

DIAGNOSTIC_KINDS = frozenset({CallKind.VERIFY})
"""Calls whose failures are evidence about the work (not a missing file or a bad edit)."""


def is_check(call: ObservedCall, probes: tuple[tuple[str, str], ...] = ()) -> bool:
    """The call is a check (rule 1): it verifies, or it is a probe run before (`probes`), and
    the tool ran it."""
    if call.rejected:
        return False
    if call.probe:
        return any(key == call.key for key, _ in probes)
    return call.kind in DIAGNOSTIC_KINDS


def first_failure(calls: tuple[ObservedCall, ...], probes: tuple[tuple[str, str], ...]) -> int | None:
    """The index of the first check that failed, if one did."""
    for index, call in enumerate(calls):
        if is_check(call, probes) and call.outcome is Outcome.FAIL:
            return index
    return None


def exercised(calls: tuple[ObservedCall, ...], edited: tuple[str, ...]) -> bool:
    """A run among `calls` failed with a traceback through a file in `edited`: the edits ran,
    though not by the failing check (corpus mswea1 django-12193 r13: after a sed of widgets.py, a
    probe importing it failed one class further on; the agent edits and checks in turn)."""
    return any(c.outcome is Outcome.FAIL and any(among(f, edited) for f, _ in project_frames(c.result)) for c in calls)


def rewrites(calls: tuple[ObservedCall, ...], scripts: tuple[str, ...]) -> bool:
    """Some call wrote one of `scripts` (the failing check's own program files)."""
    return bool(scripts) and any(
        same_file(w.path, s) for c in calls if c.succeeded_mutation for w in c.writes for s in scripts
    )


def quiet(calls: tuple[ObservedCall, ...]) -> bool:
    """Only reads and searches (every segment of a command too: `pip install -e . | tail`
    installs), and edits that changed nothing: an editor tool's edit that failed (`old_str` not
    found), one that writes the text it replaces, a `sed` whose script sed refused to parse,
    a command the shell could not parse (`no_op`). Not another shell edit that failed: it may
    have written part of what it meant to."""
    return all(
        (c.kind in LOOKS and c.segments <= LOOKS and not c.changed_sources)
        or c.no_op
        or (c.kind is CallKind.EDIT and c.command is None and not c.succeeded_mutation)
        for c in calls
    )


def restores(call: ObservedCall) -> bool:
    """The call puts files back as the repository or a kept copy had them (`git checkout --
    f.py`, `git restore f.py`, `cp f.py.bak f.py`): every file it writes, restored, and it ran
    (a check that fails ran what came before it)."""
    ran = call.outcome is not Outcome.FAIL or call.kind is CallKind.VERIFY
    return bool(call.writes) and all(w.restores for w in call.writes) and ran


def restored_from(files: list[str], call: ObservedCall) -> tuple[list[str], bool]:
    """`files` less those the restoring `call` writes, and whether it put any of them back
    (putting back a file not changed changes nothing)."""
    undone = [p for p in files if among(p, [w.path for w in call.writes])]
    return [p for p in files if p not in undone], bool(undone)


MAX_PROBES = 16
"""Probes remembered (the most recent)."""


def probes_after(
    probes: tuple[tuple[str, str], ...], calls: tuple[ObservedCall, ...], ambient: frozenset[str] = frozenset()
) -> tuple[tuple[str, str], ...]:
    """The probes with this turn's runs recorded (each with its failure's signature, or empty)."""
    runs = [
        (c.key, evidence(c.result, ambient).signature if c.outcome is Outcome.FAIL else "") for c in calls if c.probe
    ]
    if not runs:
        return probes
    kept = [p for p in probes if p[0] not in {key for key, _ in runs}]
    return (*kept, *dict(runs).items())[-MAX_PROBES:]


_MAX_CHANGED = 16
_MAX_SIGNATURES = 8
_UNKNOWN = "\x00"
"""A change whose file is not known (a command that writes files it does not name, or a file
past `_MAX_CHANGED`): no put-back can undo it. (A `python - <<EOF` that writes through a module
it imports is read as writing nothing: the proxy cannot tell, and such a change goes unseen.)"""


@dataclass(frozen=True, slots=True)
class Changes:
    """The source files the agent changed in the whole conversation and has not put back, and
    whether it put back every one it had changed and changed nothing since (`pristine`): the
    code then is as the repository had it before the agent's work."""

    changed: tuple[str, ...] = ()
    pristine: bool = False
    began: tuple[str, ...] = ()
    """Signatures of the failures seen before the agent changed anything: the task's own."""
    arisen: tuple[str, ...] = ()
    """Signatures of the failures first seen with changes of the agent's in place."""
    without: tuple[str, ...] = ()
    """Of `arisen`, those seen since with every change put back: there without the agent's work."""

    def saw(self, signature: str) -> Changes:
        """A failure with `signature` seen with the code as it is now."""
        if not self.changed and not self.pristine and signature not in self.began:
            return replace(self, began=(*self.began, signature)[-_MAX_SIGNATURES:])
        if self.changed and signature not in self.began and signature not in self.arisen:
            return replace(self, arisen=(*self.arisen, signature)[-_MAX_SIGNATURES:])
        if self.pristine and signature in self.arisen and signature not in self.without:
            return replace(self, without=(*self.without, signature)[-_MAX_SIGNATURES:])
        return self

    def predates(self, signature: str) -> bool:
        """A failure with `signature` is there without the agent's work: it first appeared on the
        agent's changes (not before any) and was seen with every one of them put back."""
        return signature in self.without

    def after(self, calls: tuple[ObservedCall, ...]) -> Changes:
        files, pristine = list(self.changed), self.pristine
        for call in calls:
            if restores(call):
                files, undid = restored_from(files, call)
                pristine = pristine or (undid and not files)
            elif call.changed_sources or (call.succeeded_mutation and not call.writes):
                pristine = False  # a command that writes where the proxy cannot see: unknown
                target = (call.target if call.changed_sources else None) or _UNKNOWN
                files += [target] if target not in files else []
        if len(files) > _MAX_CHANGED:
            files = [_UNKNOWN, *files[-_MAX_CHANGED:]]
        same = (tuple(files), pristine) == (self.changed, self.pristine)
        return self if same else replace(self, changed=tuple(files), pristine=pristine)
