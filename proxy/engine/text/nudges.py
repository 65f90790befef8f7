"""What an agent says to its model when the model did not act: its own nudges, read as such.

An agent loop answers a reply that made no (valid) call with a fixed message of its own, and
asks again: a format error (mini-swe-agent's "provide EXACTLY ONE action", SWE-agent's "your
last output did not use any tool calls", a "no tool calls found"), or a plain "please
continue" (OpenHands). No person wrote these: they start no new episode, they are never the
task, and the same one again and again is a model that keeps failing to act (`format_error_loop`).

    complains   the message says the last reply had no call, or the wrong format, or that a
                reply must make one (and does not say not to)
    continues   a short message that only asks to go on
    same_text   two nudges are the same boilerplate, numbers and spacing aside ("found 0
                actions" and "found 2 actions" are one complaint)
"""

from __future__ import annotations

import re

__all__ = ["ASKS_FOR_CALL_CHARS", "asks_for_a_call", "boilerplate", "complains", "continues"]

ASKS_FOR_CALL_CHARS = 2000
"""Longest user message read for a request for a call (agents' nudges are a sentence or two)."""
_NO_CALL = re.compile(r"\b(?:no|missing|zero)\s+(?:valid\s+)?(?:tool|function)[ _-]?calls?\b", re.I)
_CALL_DEMANDED = re.compile(
    r"\b(?:must|should|please|always)\s+(?:\w+\s+){0,4}?(?:include|contain|make|call|use|provide)\s+"
    r"(?:\w+\s+){0,4}?(?:tools?|functions?|tool[ _-]?calls?|actions?|commands?)\b",
    re.I,
)
_CALL_REFUSED = re.compile(r"\b(?:don'?t|do\s+not|never|stop|without)\s+(?:\w+\s+){0,3}?(?:call|use|make)\b", re.I)
_FORMAT = re.compile(
    r"\bdid not use any (?:tool|function) calls?\b|\bfound \d+ actions?\b|\bexactly (?:one|_one_|1) "
    r"(?:action|function call|tool call|command|bash code block)\b|\b(?:output|response|reply) (?:was|is) not "
    r"(?:formatted|in the (?:right|correct) format)|\bformat(?:ting)? error\b|\btool call error\b"
    r"|\berror parsing (?:tool call|function call|the action)",
    re.I,
)
_CONTINUE = re.compile(
    r"^\W*+(?:please\s+)?(?:continue|go on|keep going|proceed)\b(?: working)?(?: on the task)?[^\n]{0,160}$", re.I
)
_NOISE = re.compile(r"[\d\W_]+")


def asks_for_a_call(text: str) -> bool:
    """The message says the last reply had no tool call, or that a reply must make one, and does
    not say not to call."""
    if len(text) > ASKS_FOR_CALL_CHARS or _CALL_REFUSED.search(text):
        return False
    return bool(_NO_CALL.search(text) or _CALL_DEMANDED.search(text))


def complains(text: str) -> bool:
    """The agent's complaint that the last reply made no call, or no valid one."""
    if len(text) > ASKS_FOR_CALL_CHARS:
        return False
    return _FORMAT.search(text) is not None or asks_for_a_call(text)


def continues(text: str) -> bool:
    """A short message that only asks the model to go on (its first line does)."""
    first = text.strip().split("\n", 1)[0]
    return len(text) <= ASKS_FOR_CALL_CHARS and _CONTINUE.match(first) is not None


def boilerplate(text: str) -> str:
    """A nudge's words, lower-cased: numbers, punctuation and spacing do not make two nudges differ."""
    return " ".join(_NOISE.sub(" ", text[:ASKS_FOR_CALL_CHARS].lower()).split())
