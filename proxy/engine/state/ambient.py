"""Lines a run prints whatever it does, learnt from the conversation itself.

Some environments make every command print the same lines: an interpreter start that reports a
broken `.pth` file (`Error processing line 1 of distutils-precedence.pth` ... `ModuleNotFoundError:
No module named '_distutils_hack'`), a deprecation notice of the shell's profile, a tool's banner.
Such lines name no failure of the work, and when they look like one (a traceback, an `Error`
line) they become every failure's signature: eight different experiments read as one failure
repeated, then forces and a hand-back (the project's held-out runs). A list of known noise lines
(`outputs.noise`) misses the next environment's.

So a line counts as ambient once the evidence of `DISTINCT` different commands has printed it
(`evidence.evidence_lines`: the lines a failure's signature is made of, whatever the command's
outcome): a line printed whatever the command is says nothing about any one command. A failure's
signature leaves ambient lines out while any other line is left (`evidence.evidence`).

Must never: count two runs of one command as two commands (a failure re-run is still its own
evidence); learn from reads, searches or edits (a file's text is no run's output); grow without
bound (`KEPT` lines, oldest first out).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from proxy.engine.outputs.evidence import evidence_lines, line_digest
from proxy.engine.reading.observe import ObservedCall
from proxy.settings.kinds import CallKind

__all__ = ["DISTINCT", "KEPT", "Ambient"]

DISTINCT = 3
"""Different commands whose evidence must hold a line before it is ambient."""
KEPT = 256
"""Lines remembered (each with the commands that printed it, up to `DISTINCT`)."""
_RUNS = frozenset({CallKind.VERIFY, CallKind.OTHER})
_LINES_PER_RUN = 40


@dataclass(frozen=True, slots=True)
class Ambient:
    seen: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(line digest, digests of the commands whose evidence held it), oldest first."""

    @property
    def lines(self) -> frozenset[str]:
        """The ambient lines' digests."""
        return frozenset(line for line, commands in self.seen if len(commands) >= DISTINCT)

    def after(self, calls: Iterable[ObservedCall]) -> Ambient:
        """With the evidence lines of this turn's command runs counted."""
        runs = [c for c in calls if c.kind in _RUNS and c.command and not c.rejected and c.output]
        if not runs:
            return self
        known = dict(self.seen)
        for call in runs:
            picked, _marked = evidence_lines(call.output)
            command = line_digest(call.key)
            for _raw, norm in picked[:_LINES_PER_RUN]:
                line = line_digest(norm)
                commands = known.pop(line, ())
                if command not in commands and len(commands) < DISTINCT:
                    commands = (*commands, command)
                known[line] = commands  # moved to the newest end
        return Ambient(tuple(known.items())[-KEPT:])
