"""Helpers the loop detectors share: how a call reads to a person, and which calls poll."""

from __future__ import annotations

from proxy.observe import ObservedCall
from proxy.policy import CallKind, Policy

__all__ = ["EXCERPT_CHARS", "describe", "excerpt", "is_poll"]

EXCERPT_CHARS = 300
"""Longest quote of an output placed in a remedy."""


def is_poll(call: ObservedCall, policy: Policy) -> bool:
    """A polling call: a tool named in `loops.poll_tools`, or a shell command classified poll."""
    return call.kind is CallKind.POLL or call.call.name in policy.loops.poll_tools


def describe(call: ObservedCall) -> str:
    """`tool {"arg": ...}` or the shell command, as the agent wrote it."""
    if call.command:
        return f"{call.call.name}: `{call.command}`"
    return f"{call.call.name} {call.call.raw_arguments}".strip()


def excerpt(text: str) -> str:
    """The start of an output, indentation kept, at most `EXCERPT_CHARS`."""
    text = text.strip("\n").rstrip()
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 3] + "..."
