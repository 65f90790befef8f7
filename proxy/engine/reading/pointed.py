"""The lines a held edit asks the model to change one of: of the code the failure points at, the
lines that do something, each one the editor can find in the file on its own.

A held edit quoted the whole function the failure calls as its text to replace and asked for
"those lines as they should be": Qwen2.5-Coder-1.5B copied them back unchanged in 8 of the 14
edits the proxy asked for (issue 51: three new repositories, OpenHands style, seeds 1-2), and a
copy of a function is what a small model writes most readily. Held to one line of it instead,
and to a replacement that is not that line (`unlike`), it can only change something, where the
change is (`vocabulary.change_one`). The lines, from the quoted code (`excerpt`: the function,
with the module's values it reads set above it):

    kept     a statement or expression line, a one-line module value (`VOWELS = "aeio"`)
    left     blank lines, comments, `def`/`class` headers and decorators (a held header was
             deleted: `sed_script.held_script`), a docstring's lines (words, not behaviour),
             a line whose text is in the file more than once (the editor replaces a text found
             once: `return item` of two methods would not apply)

    "VOWELS = 'aeio'\\n\\ndef count_vowels(text):\\n    \\"\\"\\"How many.\\"\\"\\"\\n    return sum(...)"
        -> ("VOWELS = 'aeio'", "    return sum(...)")

Must never offer: a `def`/`class` header or a decorator, a comment, a docstring's or a multi-line
string's lines, a line the file has more than once, more than `MAX_LINES` lines.
"""

from __future__ import annotations

import re

__all__ = ["MAX_LINES", "changeable"]

MAX_LINES = 12
"""At most this many lines are offered (the first ones of the quote): more is a function to read, not a line to pick."""
_SKIPPED = re.compile(r"^\s*(?:$|#|@|(?:async\s+)?(?:def|class)\s)")
_QUOTES = ('"""', "'''")


def changeable(quoted: str, file: str) -> tuple[str, ...]:
    """The lines of `quoted` (lines of `file`, as the file has them) a held edit may change one
    of, in their order; none when none is left."""
    kept: list[str] = []
    inside: str | None = None  # the quote of a string that runs over lines, while inside it
    for line in quoted.splitlines():
        stripped = line.strip()
        if inside is not None:
            inside = None if inside in stripped else inside
            continue
        opener = next((q for q in _QUOTES if stripped.startswith(q)), None)
        if opener is not None:  # a docstring (or a bare string): its lines are words
            inside = None if stripped.count(opener) >= 2 and len(stripped) >= 6 else opener
            continue
        opens = next((q for q in _QUOTES if stripped.count(q) % 2), None)
        if opens is not None:  # a string that runs over lines starts here: left, and its lines
            inside = opens
            continue
        if not _SKIPPED.match(line) and file.count(line) == 1:
            kept.append(line)
    return tuple(kept[:MAX_LINES])
