"""What the engine reads and what it asks to change, in chat-completions terms.

A dialect translates its request into a `Translation`, and writes an `Edit` back into its
own shape; the engine never sees the dialect.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Edit", "Translation"]


@dataclass(frozen=True, slots=True)
class Translation:
    """A request read as chat-completions messages and tools."""

    messages: list[Any]
    tools: list[Any] | None
    stream: bool
    model: str


@dataclass(frozen=True, slots=True)
class Edit:
    """What the plan changes, in chat terms; None leaves that part of the request as it came."""

    messages: list[Any] | None = None
    tool_choice: str | None = None
    """The one tool to force."""
    tools: list[str] | None = None
    """The names of the tools to keep."""

    @property
    def empty(self) -> bool:
        return self.messages is None and self.tool_choice is None and self.tools is None
