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
    """When the request requires a tool call (`tool_choice: "required"`) and offers a finish tool,
    the hand-back is that tool's call carrying `text`: an agent that must be answered with a
    call (smolagents' `final_answer`, say) refuses a plain message, and its user never sees it."""

    @property
    def call_id(self) -> str:
        """A deterministic id for `finish_call`."""
        return f"call_repair_{self.conversation[:16]}_{self.turn}"

    @property
    def completion_id(self) -> str:
        """A deterministic id for the reply (the same request halts with the same id)."""
        return f"chatcmpl-repair-{self.conversation[:16]}-{self.turn}"
