"""The lines a held edit asks the model to change one of: of the code the failure points at, the
lines that do something, each one the editor can find in the file on its own.

A held edit quoted the whole function the failure calls as its text to replace and asked for
"those lines as they should be": Qwen2.5-Coder-1.5B copied them back unchanged in 8 of the 14
edits the proxy asked for (issue 51: three new repositories, OpenHands style, seeds 1-2), and a
copy of a function is what a small model writes most readily. Held to one line of it instead,
and to a replacement that is not that line (`unlike`), it can only change something, where the
change is (`vocabulary.change_one`). The lines, from the quoted code (`outputs.excerpt`: the function,
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

__all__ = ["MAX_LINES", "changeable", "tried_lines"]

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


def tried_lines(tried: tuple[tuple[str, str], ...], lines: tuple[str, ...]) -> tuple[str, ...]:
    """The lines the edits already made on the failure (`RepairState.tried`: each change's text
    and replacement) took out or put in, each as one of `lines` would be written (with its
    indentation), that are none of `lines`: replacements a held edit does not offer, as it does
    not offer a copy. The failure was seen with each of them in the file: written again, the
    edit undoes the one before (A -> B -> A) or makes the stuck start's own edit again (issue 61:
    16 of 44 answers to the held edit). A line both sides of a change hold is context, not a
    change, and is left out."""
    indents = dict.fromkeys(line[: len(line) - len(line.lstrip())] for line in lines)
    changed: dict[str, None] = {}
    for old, new in tried:
        before = {line.strip() for line in old.splitlines()}
        after = {line.strip() for line in new.splitlines()}
        for text in (line.strip() for line in (*old.splitlines(), *new.splitlines())):
            if text and (text in before) != (text in after):
                changed[text] = None
    found = (indent + text for text in changed for indent in indents)
    return tuple(dict.fromkeys(line for line in found if line not in lines))
