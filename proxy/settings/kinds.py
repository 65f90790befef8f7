"""The enums every layer shares: what a call does, what a trip does, where text goes."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["LOOKS", "Action", "Ask", "CallKind", "Mode", "Placement"]


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


LOOKS = frozenset({CallKind.READ, CallKind.SEARCH})
"""The kinds that only look: they show files (or what is in them) and change nothing."""


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


class Mode(StrEnum):
    """Whether a pattern's trips act, or only count (a pattern earns the right to act)."""

    ACT = "act"
    """Its trips do what its ladder says."""
    SHADOW = "shadow"
    """Its trips are logged, counted and replayed with the action they would take, and change
    nothing: no instruction, no pinned call, no tool taken away, no hand-back, no note for the next
    run, no words in a gate's retry, no refusal by the block rung (issue 61). The one exception is
    evidence the block gate owns and was measured for as its own (the corpus report's
    `gate:block`: no-op edits, `Refusal.owned`): refused whatever the mode of the pattern that
    reads it."""


class Ask(StrEnum):
    """The step a pattern's instruction asks the agent for: what the corpus report checks the
    recorded run against (did the agent take that step anyway, right after the trip?)."""

    RERUN = "rerun"
    """Re-run the failing check."""
    CHANGE = "change"
    """Make a change to the code."""
    STOP = "stop"
    """Stop making the call the trip names."""
    CALL = "call"
    """Make a (valid) tool call."""
    STEP = "step"
    """The next step on the live failure (`writing.failure_reads`): a read of the evidence not read
    since it appeared (the failing test, the line where it fails, the code under test), else a change."""


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
