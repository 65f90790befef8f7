"""The script of a held in-place `sed`, as a pattern on the JSON text the model writes.

SED_SCRIPT          one single-quoted substitution, whole, on one line; any text
held_script(lines)  the same, its text to replace held to the end of one of `lines`
"""

from __future__ import annotations

import re

__all__ = ["SED_SCRIPT", "held_script"]

_NOT_PLAIN = r"""'/\\"\x00-\x1f\x7f"""
_PLAIN = f"[^{_NOT_PLAIN}]"
_OLD = rf"""({_PLAIN}|[\\]"|[\\][\\][^{_NOT_PLAIN}n])*"""
_NEW = rf"""({_PLAIN}|[\\]"|[\\][\\]{_PLAIN})*"""
SED_SCRIPT = rf"s/{_OLD}/{_NEW}/g?"
r"""A single-quoted `sed` substitution, whole (`s/old/new/`, `g` or not), on one line, as a pattern
on the JSON text the model writes between the string's quotes: llama.cpp turns a `pattern` into
grammar rules over those characters (`common/json-schema-to-grammar.cpp` copies a character class
as it is), so the pattern must keep that text valid JSON, or the server's parser fails the reply
(HTTP 500: recovery bench, a `\'` in vowels seed 0; stack seed 1 at e899580, six 500s on held
seds, whose text the server does not return, with a pattern that let a bare `"` through). So:
no `"` but as the escape `\"`, no control character (a line break, a tab: JSON escapes them), and
a backslash only as `\"` or `\\` (what sed reads as one backslash) followed by a plain
character; no quote (the shell's end of the script), no `/` but the three delimiters (sed's
`\/` is `\\/` in the JSON text, where the part ends at its slash: a held script cannot hold a
`/`). In the text to replace, no `\\n`: sed reads a line at a time and never sees a line break
there (`sed.never_matches`); in the replacement it writes one, and may. A server that reads
`pattern` on the decoded value instead (JSON Schema's own reading) holds the model to a `"`
written `\"`, which GNU sed reads as `"`."""


_NOT_IN_A_HELD_LINE = frozenset("'/\\*[]^$")
"""What a line held as the text to replace may not hold: the shell's quote, sed's delimiter, a
backslash, and what a basic regular expression reads as more than itself (`.` stays: it matches
itself too)."""
_REGEX_SPECIAL = frozenset("|.()[]{}*+?^$")
_QUOTE = r'[\\]"'
"""A `"` of the line, as the JSON text has it: `\\"` (as `SED_SCRIPT` writes it)."""
_WORD = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z_]")
_HEADER = re.compile(r"(async\s+)?(def|class)\s")
"""A header is held whole: held to its end, the model deleted `pop(self):` of `def pop(self):`."""


def held_script(lines: str) -> str:
    """`SED_SCRIPT` with its text to replace held to the end of one of `lines` as the file has
    it, from the line's start or from a name's (sed matches it anywhere in the line): the line
    whole, or `self.items.pop(0)` of `item = self.items.pop(0)`; never a bare name (`item` would
    match in other lines too), and a `def` or `class` header only whole. Written as the model
    writes it in the JSON string (`"` as `\\"`). Lines sed or the shell would not read as written
    are left out; with none left, the text is free (`SED_SCRIPT`).

    Held to whole lines, the model fixed stack in none of six runs where, held to nothing, its
    `s/self.items.pop(0)/self.items.pop(-1)/` had fixed it in six of twelve (recovery bench,
    `bash` style, block on: sixteenth and seventeenth runs against the twelfth to fifteenth);
    asked there for the finish gate's retry (`bench/held_edit.py --repo stack --style bash --gate
    finish`, temperature 0.7), whole lines were answered `s/return item/...` in 12 seeds of 12 and
    fixed none (the text to replace free: 2 of 12); a line's end from a name fixed 4 of 12, and
    5 deleted `pop(self):` of `def pop(self):`; with a header held whole, 10 of 11 (free: 3)."""
    held: list[str] = []
    for line in dict.fromkeys(line.strip() for line in lines.splitlines()):
        if not line or len(line) > 200 or not line.isascii() or not line.isprintable():
            continue
        if _NOT_IN_A_HELD_LINE.intersection(line):
            continue
        header = _HEADER.match(line) is not None
        starts = [0, *(m.start() for m in _WORD.finditer(line) if m.start() > 0 and not header)]
        if len(starts) > 1 and line[starts[-1] :].isidentifier():
            starts.pop()  # a bare name at the line's end: never alone
        pieces = [line[a:b] for a, b in zip(starts, [*starts[1:], len(line)], strict=True)]
        pattern = _escaped(pieces[0])
        for piece in pieces[1:]:
            pattern = f"({pattern})?{_escaped(piece)}"
        held.append(pattern)
    if not held:
        return SED_SCRIPT
    return rf"s/({'|'.join(held)})/{_NEW}/g?"


def _escaped(text: str) -> str:
    return "".join(_QUOTE if c == '"' else f"\\{c}" if c in _REGEX_SPECIAL else c for c in text)
