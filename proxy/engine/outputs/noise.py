"""Lines a run prints whatever it does, and the text without them: what says nothing about
whether the work is right (warnings, the interpreter's "Exception ignored" blocks, pip's notes)."""

from __future__ import annotations

import re

__all__ = ["noise_line", "without_noise"]

_NOISE = re.compile(
    r"^\s*+(?:[^\n]*Warning: |warnings\.warn\(|Exception ignored in|WARNING: (?:Running pip|You are using pip|"
    r"The directory|Ignoring invalid distribution|pip is configured)|\[notice\] )"
)
r"""Lines a run prints whatever it does: warnings, the interpreter's "Exception ignored", pip's notes.
Linear in the line: the leading whitespace is taken whole (what follows it is never whitespace),
and a warning is `Warning: ` anywhere on the first line that is not blank (`\b\w*` before it, as
it was written, always held and cost a rescan per blank)."""


def noise_line(line: str) -> bool:
    """A line that says nothing about whether the work is right (see `_NOISE`)."""
    return _NOISE.match(line) is not None


def without_noise(text: str) -> str:
    """`text` without noise: warning lines (with the source line Python prints under each) and
    whole "Exception ignored in" blocks (the traceback the interpreter prints at exit)."""
    if "Warning" not in text and "Exception ignored" not in text and "WARNING" not in text:
        return text
    kept: list[str] = []
    skipping = ""
    for line in text.split("\n"):
        if skipping == "ignored":
            if line and not line.startswith((" ", "\t", "Traceback")):
                skipping = ""  # the exception line ends the block
            continue
        if skipping == "warning" and line.startswith((" ", "\t")):
            skipping = ""
            continue
        skipping = ""
        if line.startswith("Exception ignored"):
            skipping = "ignored"
        elif noise_line(line):
            skipping = "warning"
        else:
            kept.append(line)
    return "\n".join(kept)
