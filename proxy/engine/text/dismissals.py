"""An agent's own word that a failure still standing is not its to fix.

Strong agents end runs with a test still failing, having said why: it fails on a function the
change does not touch, it failed before the change, the test's own setup is broken. Where the
transcript holds no run from before the change, the proxy cannot tell them wrong, and holding
the finish would send them after a failure their patch cannot fix (mini-swe-agent 2.x on
SWE-bench, corpus: "The test failure is unrelated to our changes", "This is a pre-existing issue
in the test file, not related to our changes", then the submit). Read from the agent's text
after the failing run (`plan.gates`), never from a tool's output.

    dismisses   the text says a failure is unrelated to the change, or was there before it
"""

from __future__ import annotations

import re

__all__ = ["DISMISSAL_CHARS", "dismisses"]

DISMISSAL_CHARS = 4000
"""Longest stretch of one message read (the statement sits in the agent's prose around a call)."""
_DISMISSED = re.compile(
    r"\b(?:unrelated|not related|independent)\s+(?:to|of)\s+(?:our|my|the|these|this)\s+"
    r"(?:\w+\s+)?(?:changes?|fix(?:es)?|patch|edits?|modifications?)\b"
    r"|\bpre-?existing\s+(?:\w+\s+)?(?:issue|failure|error|problem|bug)s?\b"
    r"|\b(?:was|were|is|are)\s+(?:already\s+)?failing\s+(?:before|prior to)\s+(?:our|my|the|any)\b",
    re.I,
)


def dismisses(text: str) -> bool:
    """The text says a failure is unrelated to the agent's change, or predates it."""
    return _DISMISSED.search(text[:DISMISSAL_CHARS]) is not None
