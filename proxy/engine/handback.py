"""The incomplete hand-back: what the proxy answers with when it stops a run.

Only the content: each dialect writes it in its own reply shape, and the HTTP layer adds
its headers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from proxy.engine.salvage import SalvagedCall

__all__ = ["Handback"]


@dataclass(frozen=True, slots=True)
class Handback:
    text: str
    """The assistant message: why the run stopped, what is still failing, what was tried."""
    reason: str
    """The pattern that halted the run."""
    current_failure: Mapping[str, object] | None
    """`{class, signature, snippet, same_diagnostic_streak}`, or None when nothing is failing."""
    conversation: str
    turn: int
    finish_call: SalvagedCall | None = None
    """The hand-back as a call that ends the agent's run, carrying `text` (see `plan._finish_call`):
    its shell tool running the policy's `repair.handback_command` (mini-swe-agent), or, when the
    request requires a tool call, its finish tool (smolagents' `final_answer`): such an agent
    refuses a plain message, and its user never sees it."""

    @property
    def call_id(self) -> str:
        """A deterministic id for `finish_call`."""
        return f"call_repair_{self.conversation[:16]}_{self.turn}"

    @property
    def completion_id(self) -> str:
        """A deterministic id for the reply (the same request halts with the same id)."""
        return f"chatcmpl-repair-{self.conversation[:16]}-{self.turn}"
