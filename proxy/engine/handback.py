"""The incomplete hand-back: what the proxy answers with when it stops a run.

Only the content: each dialect writes it in its own reply shape, and the HTTP layer adds
its headers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

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

    @property
    def completion_id(self) -> str:
        """A deterministic id for the reply (the same request halts with the same id)."""
        return f"chatcmpl-repair-{self.conversation[:16]}-{self.turn}"
