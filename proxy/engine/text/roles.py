"""What an agent's own system prompt says its role may not do.

Multi-agent scaffolds give each role its own conversation and prompt: a manager, a reproducer,
a debugger that only locates, a tester that only runs (CodeR's roles: "DO NOT EDIT THE CODE IN
THE REPOSITORY"). For such a role reading and searching turn after turn is the job, and an
instruction of ours to make an edit contradicts the prompt it works under. A prompt that only
protects the tests ("DO NOT EDIT ANY TEST CODE") leaves the role an editor.

Read once per conversation, from the first system message's first `_SCAN` characters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from proxy.engine.text.messages import content_text

__all__ = ["told_not_to_edit"]

_SCAN = 20_000
_READ_ONLY = re.compile(
    r"\b(?:do not|don't|never|must not|may not|are not allowed to)\s+(?:edit|modify|change|alter)\s+"
    r"(?:the|any)\s+(?:source\s+)?(?:code|files)\s+(?:in|of)\s+(?:the\s+)?(?:repository|repo|codebase|project)\b",
    re.IGNORECASE,
)


def told_not_to_edit(messages: Sequence[Any]) -> bool:
    """The conversation's system prompt tells the agent not to edit the repository's code."""
    first = messages[0] if messages else None
    if not isinstance(first, dict) or first.get("role") not in ("system", "developer"):
        return False
    return _READ_ONLY.search(content_text(first.get("content"))[:_SCAN]) is not None
