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

from proxy.engine.outputs.labels import bookkeeping_dropped

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
    r"^(?:(?P<tag>[^\S\n]*</?(?:returncode|output|output_head|output_tail|elided_chars|warning)>[^\n]*)"
    r"|-?\d+</returncode>"
    r"|\[exit code: -?\d+\]"
    r"|\[Command finished with exit code -?\d+\]"
    r"|\S[^\s@]*+@\S[^\s:]*+:[^\n]*[#$] ?"
    r"|\(Open file: [^\n]*\)|\(Current directory: [^\n]*\)|bash-\$ ?"
    r"|OBSERVATION:"
    r"|Your command ran successfully and did not produce any output\.?"
    r"|\(?(?:The )?command (?:ran|completed|finished) (?:successfully )?(?:with|and produced) no output\.?\)?"
    r")\s*$",
    re.MULTILINE | re.IGNORECASE,
)
"""Lines an agent adds around every result, whatever the command printed: a tag line (with the
blank lines above it, see `_without_framing`), or a line that is the whole of a notice or a prompt
(`user@host:~$`: the first `@` past the word's first character, the first `:` past the one after
it; a prompt is one of those, whatever the later ones). Each line is read once: nothing here
starts again at every line of a run of blank lines or at every `@` of a long word."""
_INTERPRETER = re.compile(r"\[Python Interpreter: [^\]\n]*+(?P<closed>\])?")
"""OpenHands' note of the interpreter, written straight after the output's last character; up to
the end of its line when it is not closed there (taken whole and kept as it is: a later note on
that line is not closed either, and reading on from each was quadratic)."""


def _without_framing(text: str) -> str:
    r"""`text` without its framing lines. A tag line takes with it the lines of whitespace above it,
    back to the end of the last line kept (as `^\s*<output>` did, read once here, not again from
    every one of those lines)."""
    kept: list[str] = []
    at = 0
    for match in _FRAMING.finditer(text):
        start = match.start()
        if match.start("tag") >= 0:
            above = text[at:start]
            blank = at + len(above.rstrip())  # where the whitespace right above the tag line begins
            if blank == at and (at == 0 or text[at - 1] == "\n"):
                start = at
            else:
                newline = text.find("\n", blank, start)
                start = start if newline == -1 else newline + 1
        kept.append(text[at:start])
        at = match.end()
    kept.append(text[at:])
    return "".join(kept)


def _without_interpreter(text: str) -> str:
    return _INTERPRETER.sub(lambda note: "" if note["closed"] else note[0], text)


@lru_cache(maxsize=4)
def payload(text: str) -> str:
    """`text` without the agent's framing lines, stripped; empty when it said nothing else.
    Remembered for the last few texts: one result is read for its digest, its outcome and its
    evidence, each asking for its payload."""
    text = bookkeeping_dropped(text)
    if "[Python Interpreter: " in text:
        text = _without_interpreter(text)
    if "<" in text or "[" in text or "@" in text or "(" in text or "OBSERVATION" in text or "command" in text:
        text = _without_framing(text)
        text = text.replace("<returncode>", "").replace("</returncode>", "")
    return text.strip()
