"""The repair state: the current-failure model's six fields and what remedies quote.

Folded once per turn by `failure.fold_failure`; read by the detectors, the gates and the
remedies. A value: frozen, compared whole, the same on any replica after the same turns.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import StrEnum

from proxy.engine.outputs.evidence import Pointers
from proxy.engine.reading.workspace import same_file
from proxy.engine.state.ambient import Ambient
from proxy.engine.state.checks import Changes
from proxy.engine.state.seen import Seen, shown_whole

__all__ = ["MAX_TRIED", "SIX_FIELDS", "DiagnosticClass", "RepairState"]

MAX_TRIED = 8
"""The most changes `RepairState.tried` keeps."""


def _plain(value: object) -> object:
    return value.value if isinstance(value, StrEnum) else value


class DiagnosticClass(StrEnum):
    PASS = "pass"
    FAIL = "fail"


@dataclass(frozen=True, slots=True)
class RepairState:
    """The six fields of the current-failure model, plus what remedies quote."""

    last_diagnostic_class: DiagnosticClass | None = None
    last_diagnostic_signature: str | None = None
    write_epoch: int = 0
    same_diagnostic_streak: int = 0
    edit_since_failure: bool = False
    reverify_owed: bool = False
    snippet: str = ""
    """The live failure's evidence as printed."""
    failing_tool: str = ""
    failing_command: str = ""
    """The call that produced the live failure: its tool and its shell command (or raw arguments)."""
    failing_arguments: str = ""
    failing_key: str = ""
    """The failing call as `ObservedCall.key` (tool and sorted-key arguments): what a proposal of
    the same call again is compared with."""
    edits_on_failure: int = 0
    """Successful edits since this failure first appeared that did not change it."""
    pointers: Pointers = field(default_factory=Pointers)
    """The failing test and location the live failure's latest output states (else the last stated)."""
    read_since_failure: frozenset[str] = frozenset()
    """Files read since the live failure first appeared."""
    edited_since_failure: tuple[str, ...] = ()
    """Files changed since the live failure first appeared, in order."""
    failing_scripts: tuple[str, ...] = ()
    """The program files the failing command runs (the check, when it is the agent's script)."""
    check_rewritten: bool = False
    """One of `failing_scripts` was written since the failure was last seen."""
    called: tuple[str, ...] = ()
    """Functions the live failure points at: its test's name less `test_`, then the names called
    in its output, in order (at most `_MAX_CALLED`)."""
    seen: Seen = ()
    """The files read whole or in part, each with what its last read showed (`state.seen`),
    dropped when the file changes: what an edit directive quotes."""
    whole: frozenset[str] = frozenset()
    """Of `seen`, the files whose last read showed them whole."""
    probes: tuple[tuple[str, str], ...] = ()
    """Probes run so far (the most recent `checks.MAX_PROBES`): each call's key and the signature its
    last run failed with (empty: it did not fail)."""
    quiet_since_failure: bool = False
    """Since the live failure was last seen, only reads, searches and edits that changed nothing
    ran: nothing that could change what the failing check sees."""
    put_back: bool = False
    """Since the live failure was last seen, the agent put the files it had changed back as they
    were (`checks.restores`), and edited nothing after: the same failure next is the code without
    its changes, not one more that failed to change it."""
    ambient: Ambient = field(default_factory=Ambient, compare=False)
    """Lines every command prints, whatever it does: left out of failures' signatures (`ambient`)."""
    failing_since: int = 0
    """The turn the live failure first appeared on (its streak began there)."""
    changes: Changes = field(default_factory=Changes)
    """The source files changed and not put back over the whole conversation (`checks.Changes`)."""
    tried: tuple[tuple[str, str], ...] = ()
    """What the source edits made since the live failure first appeared changed, each (the text it
    replaced, its replacement) stripped, as its arguments say (`proposal.change_of`), the latest
    last (at most `MAX_TRIED`): the failure was seen with each side, so a held edit does not offer
    them again and an edit that undoes the last one changes nothing it needs (issue 61: the stuck
    start's own failed edit was the answer to the held edit 8 times of 44, `int`/`float` undoing
    each other 8 more)."""

    @property
    def live(self) -> bool:
        return self.last_diagnostic_class is DiagnosticClass.FAIL

    @property
    def predates(self) -> bool:
        """The live failure first appeared on the agent's changes and was seen with every one of
        them put back (`Changes.predates`): it is there without the agent's work, and not a failure
        the agent began from (corpus, sphinx-8035: a docutils warning that failed a test on the
        repository as it was, which the proxy told the agent to change the code for)."""
        signature = self.last_diagnostic_signature
        return self.live and signature is not None and self.changes.predates(signature)

    def as_dict(self) -> dict[str, object]:
        """The six fields, as replay and the admin API show them."""
        return {name: _plain(getattr(self, name)) for name in SIX_FIELDS}

    def current_failure(self) -> dict[str, object] | None:
        """The hand-back's `current_failure` block; None when nothing is failing."""
        if not self.live:
            return None
        return {
            "class": DiagnosticClass.FAIL.value,
            "signature": self.last_diagnostic_signature,
            "snippet": self.snippet,
            "same_diagnostic_streak": self.same_diagnostic_streak,
        }

    def shown_whole(self, path: str) -> str | None:
        """What the agent's last read of `path` showed, when it showed the file whole and it has
        not changed since."""
        return shown_whole(self.seen, self.whole, path)

    def shown(self, path: str) -> str | None:
        """What the agent's last read of `path` showed, when it read it and has not changed it
        since (paths compared as the agent wrote them, relative or absolute)."""
        return next((text for known, text in reversed(self.seen) if same_file(known, path)), None)


SIX_FIELDS = tuple(f.name for f in fields(RepairState))[:6]
"""The current-failure model's own fields (the first six), in the order they are shown."""
