"""What the engine reads and what it asks to change, in chat-completions terms.

A dialect translates its request into a `Translation`, and writes an `Edit` back into its
own shape; the engine never sees the dialect.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    tool_choice: str | None = None
    """The request's own choice: `auto`, `none`, `required`, or the one tool it names; None: unset."""


@dataclass(frozen=True, slots=True)
class Edit:
    """What the plan changes, in chat terms; None leaves that part of the request as it came."""

    messages: list[Any] | None = None
    tool_choice: str | None = None
    """The one tool to force."""
    require_call: bool = False
    """Require some tool call (`tool_choice: "required"`), when no one tool is forced."""
    tools: list[str] | None = None
    """The names of the tools to keep."""
    seed: int | None = None
    """A sampling seed in place of the request's (chat completions): a gate's later retries, which
    would otherwise send the same body with the same seed and get the same reply back."""
    call_schema: Mapping[str, Any] | None = None
    """The reply's text constrained to one call as JSON (`callschema.py`), where the request sets
    no format of its own: for servers that take no `tool_choice`."""
    pinned: Mapping[str, Any] | None = None
    """Arguments of the forced tool's call held to these values by the call schema (a re-asked
    edit's text to replace, as the file has it)."""
    leaves_out: bool = False
    """Messages missing from `messages` are left out of the request (a gate's retry); otherwise a
    dialect keeps every original item it cannot place (Responses `input`)."""

    @property
    def empty(self) -> bool:
        return self.messages is None and self.tool_choice is None and not self.require_call and self.tools is None
