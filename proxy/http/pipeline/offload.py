"""Where a request is analysed: on the event loop, or in a worker thread so that the loop goes on
serving meanwhile (other conversations, `/healthz`).

    the body's size      the text after the model's last reply    analysed
    >= OFFLOAD_BYTES     any                                        in a thread (parsed there too)
    smaller              >= FRESH_CHARS                             parsed on the loop, folded in a thread
    smaller              smaller                                    on the loop

What an analysis costs is the text it has not read yet: a request of a conversation already
folded folds its newest turn only, whatever the length of the transcript. So a small body whose
newest tool results (or user message) are long is analysed off the loop too: a 60,000-character
output costs 20-70 ms to read (`bench/hostile_outputs.py`), which on the loop every request of the
worker would wait through; in a thread the loop gets the interpreter back every few ms (no single
pattern holds it long: each is linear and each output read within its window).

Must never: send a request with little new in it to a thread (the hand-off costs about 0.3 ms of
CPU, more than such an analysis); walk more than the messages after the last reply to decide.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["FRESH_CHARS", "OFFLOAD_BYTES", "fresh_chars", "in_thread"]

OFFLOAD_BYTES = 1024 * 1024
"""Bodies at least this large are analysed in a worker thread. A smaller one is analysed in a few
ms (about 2.5 ms of CPU at 760 KB), and the hand-off costs about 0.3 ms of CPU per request on a
2-core machine (two cross-thread wake-ups, the collector paused and then walking the parse):
measured with `bench/turn_cost.py` at 600 messages, 760 KB, CPU per request 6.6 -> 6.1 ms with
this bound at 1 MB instead of 256 KB. What the thread bought the event loop at that size was
little: the worker holds the interpreter for most of the analysis (the loop waited up to 1.2-4 ms
for it, measured, against the analysis's 2.5 ms on the loop itself)."""
FRESH_CHARS = 32 * 1024
"""Characters after the model's last reply from which the analysis goes to a thread whatever the
body's size: a test run's report of this size takes about 10 ms to read."""


def fresh_chars(messages: Sequence[Any]) -> int:
    """Characters of text in the messages after the last assistant message (the newest tool
    results and user messages: what a conversation already folded has not read)."""
    count = 0
    for message in reversed(messages):
        if not isinstance(message, dict):
            continue
        if message.get("role") == "assistant":
            break
        content = message.get("content")
        if isinstance(content, str):
            count += len(content)
        elif isinstance(content, list):
            count += sum(len(p["text"]) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return count


def in_thread(size: int, fresh: int | None) -> bool:
    """The analysis of a body of `size` bytes, with `fresh` characters after the last reply (None:
    not parsed yet), goes to a worker thread."""
    return size >= OFFLOAD_BYTES or (fresh is not None and fresh >= FRESH_CHARS)
