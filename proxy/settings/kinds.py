"""The enums every layer shares: what a call does, what a trip does, where text goes."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Action", "CallKind", "Placement"]


class CallKind(StrEnum):
    """What a tool call does to the work."""

    EDIT = "edit"
    VERIFY = "verify"
    READ = "read"
    SEARCH = "search"
    POLL = "poll"
    FINISH = "finish"
    """Ends the run (the agent's finish or submit tool)."""
    OTHER = "other"


class Action(StrEnum):
    """What a trip does, rung by rung of its pattern's ladder."""

    OBSERVE = "observe"
    """Log and count only."""
    NUDGE = "nudge"
    """Inject an instruction."""
    FORCE = "force"
    """Inject and set `tool_choice`."""
    RESTRICT = "restrict"
    """Inject and take the tool being misused out of `tools` for one request."""
    HALT = "halt"
    """Answer the agent with an incomplete hand-back; no upstream call."""


class Placement(StrEnum):
    """Where an instruction goes in the prompt."""

    SYSTEM = "system"
    USER = "user"
    TOOL_SUFFIX = "tool_suffix"


class FutileAgain(StrEnum):
    """What the agent gets when the model, asked again by a gate, proposes a call made in vain before."""

    HANDBACK = "handback"
    """The incomplete hand-back (the stop rung): the run has been told and did not change course."""
    PASS = "pass"
    """The model's first reply, as it came, marked `futile`."""
