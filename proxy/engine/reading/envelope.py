"""Tool results in envelopes, read as the output they carry; and the output without the
framing an agent puts around every result.

Some agents hand a command's result back as JSON: `{"returncode": 1, "output": "..."}`,
`{"exit_code": 1, "stdout": "...", "stderr": "..."}`, and the like. Inside, the output's lines
are escaped and its exit code is a key, so nothing that reads output line by line would see a
failure. `unwrap` gives the output as printed, with the exit code stated the way shells print
it, for any agent; anything else comes back unchanged.

`payload` is what a result says beyond the agent's framing: the tags mini-swe-agent wraps
around it (`<returncode>`, `<output>`), the exit-code notice and prompt lines OpenHands and
SWE-agent add after it, a fixed "no output" sentence. Two results with the same payload say
the same thing; a result whose payload is empty said nothing.
"""

from __future__ import annotations

import re
from functools import lru_cache

import orjson

from proxy.engine.reading.labels import bookkeeping_dropped

__all__ = ["CODE_KEYS", "TEXT_KEYS", "payload", "unwrap"]

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


_FRAMING = re.compile(
    r"^(?:\s*</?(?:returncode|output|output_head|output_tail|elided_chars|warning)>[^\n]*"
    r"|-?\d+</returncode>"
    r"|\[exit code: -?\d+\]"
    r"|\[Command finished with exit code -?\d+\]"
    r"|\S+@\S+:[^\n]*[#$] ?"
    r"|\(Open file: [^\n]*\)|\(Current directory: [^\n]*\)|bash-\$ ?"
    r"|OBSERVATION:"
    r"|Your command ran successfully and did not produce any output\.?"
    r"|\(?(?:The )?command (?:ran|completed|finished) (?:successfully )?(?:with|and produced) no output\.?\)?"
    r")\s*$",
    re.MULTILINE | re.IGNORECASE,
)
"""Lines an agent adds around every result, whatever the command printed."""
_INTERPRETER = re.compile(r"\[Python Interpreter: [^\]\n]*\]")
"""OpenHands' note of the interpreter, written straight after the output's last character."""


@lru_cache(maxsize=4)
def payload(text: str) -> str:
    """`text` without the agent's framing lines, stripped; empty when it said nothing else.
    Remembered for the last few texts: one result is read for its digest, its outcome and its
    evidence, each asking for its payload."""
    text = bookkeeping_dropped(text)
    if "[Python Interpreter: " in text:
        text = _INTERPRETER.sub("", text)
    if "<" in text or "[" in text or "@" in text or "(" in text or "OBSERVATION" in text or "command" in text:
        text = _FRAMING.sub("", text)
        text = text.replace("<returncode>", "").replace("</returncode>", "")
    return text.strip()
