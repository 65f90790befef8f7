"""Helpers the loop detectors share: quoting an output, and which calls poll."""

from __future__ import annotations

from proxy.engine.reading.observe import ObservedCall
from proxy.settings.kinds import CallKind
from proxy.settings.policy import Policy

__all__ = ["EXCERPT_CHARS", "excerpt", "is_poll"]

EXCERPT_CHARS = 300
"""Longest quote of an output placed in a remedy."""


def is_poll(call: ObservedCall, policy: Policy) -> bool:
    """A polling call: a tool named in `loops.poll_tools`, or a shell command classified poll."""
    return call.kind is CallKind.POLL or call.call.name in policy.loops.poll_tools


def excerpt(text: str) -> str:
    """The start of an output, indentation kept, at most `EXCERPT_CHARS`."""
    text = text.strip("\n").rstrip()
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 3] + "..."
