"""Tool results in JSON envelopes, read as the output they carry.

Some agents hand a command's result back as JSON: `{"returncode": 1, "output": "..."}`
(mini-swe-agent 2.x), `{"exit_code": 1, "stdout": "...", "stderr": "..."}`, and the like.
Inside, the output's lines are escaped and its exit code is a key, so nothing that reads
output line by line would see a failure. `unwrap` gives the output as printed, with the exit
code stated the way shells print it, for any agent; anything else comes back unchanged.
"""

from __future__ import annotations

import orjson

__all__ = ["CODE_KEYS", "TEXT_KEYS", "unwrap"]

CODE_KEYS = ("returncode", "exit_code", "exitcode", "exitCode", "return_code", "status_code")
"""Keys an envelope states the exit code under."""
TEXT_KEYS = ("output", "stdout", "stderr")
"""Keys an envelope carries the output under, in the order they are read."""
_MAX_CHARS = 4 * 1024 * 1024


def unwrap(text: str) -> str:
    """The output an envelope carries, ending `[exit code: N]` when it states one; else `text`."""
    head = text.lstrip()
    if (
        not head.startswith("{")
        or len(head) > _MAX_CHARS
        or not any(f'"{k}"' in head for k in (*CODE_KEYS, *TEXT_KEYS))
    ):
        return text
    try:
        data = orjson.loads(head)
    except orjson.JSONDecodeError:
        return text
    if not isinstance(data, dict):
        return text
    code = next((data[k] for k in CODE_KEYS if isinstance(data.get(k), int) and not isinstance(data[k], bool)), None)
    parts = [data[k] for k in TEXT_KEYS if isinstance(data.get(k), str) and data[k]]
    if code is None and not any(k in data for k in TEXT_KEYS):
        return text
    body = "\n".join(parts)
    return f"{body}\n[exit code: {code}]" if code is not None else body
