"""A held edit's replacement that cannot be the text it replaces: a pattern for any text but these.

A held edit gives the model the lines to change as the text to replace and leaves it the
replacement. Asked for those lines "as they should be", Qwen2.5-Coder-1.5B copied them back
unchanged: 8 of the 14 edits the proxy asked for in its defaults arm on three new repositories
(issue 51, OpenHands style, seeds 1-2), each then refused as a no-op and re-asked, and the re-ask
copied them again. So the replacement is held to a pattern that matches any text but the lines
it may replace (`unlike`): the model may change a line as it likes, not write it back as it was.

    unlike(["    return a - b"])  -> ^(...)$, matching "    return a + b", "", "x", never "    return a - b"

The pattern is on the JSON text the model writes between the string's quotes, as llama.cpp reads
a `pattern` (`kept`, `sed_script`): one character of it a plain one or one of JSON's escapes of
one character, no `\\/` (a `/` only as itself) and no `\\u` escape, so each text has one JSON
text and a copy has no other spelling that would pass. One group deep, whatever the lengths
(llama.cpp turns a pattern nested past 100 groups into any string): the alternatives are every
way to leave the lines, after each prefix they share (a trie's nodes): another character there
then anything, or, where no line ends there, the end. None when a line holds a character JSON
writes as `\\u` (a control character): it cannot be written to the pattern.

Must never match: the JSON text of any of the lines, whole (a copy); an empty replacement (the
line deleted); and never nest groups past one, whatever the lines.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["JSON_CHAR", "json_text", "unlike"]

_ESCAPES = {'"': '"', "\\": "\\", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}
"""A character JSON writes as a backslash and one letter, and that letter."""
JSON_CHAR = r"""([^"\\\x00-\x1f\x7f]|[\\]["\\bfnrt])"""
"""One character of the JSON text of a string: plain, or an escape of one character (no `\\/`)."""
_META = frozenset("|.()[]{}*+?^$\\")
"""What a pattern reads as more than itself outside a class: written with a backslash."""
_IN_CLASS = frozenset("]\\-[^")
"""What a class reads as more than itself: written with a backslash."""


def json_text(text: str) -> list[str] | None:
    """The JSON text of `text` (between the quotes), one token per character; None when a
    character needs a `\\u` escape."""
    tokens: list[str] = []
    for ch in text:
        if ch in _ESCAPES:
            tokens.append("\\" + _ESCAPES[ch])
        elif ch < " " or ch == "\x7f":
            return None
        else:
            tokens.append(ch)
    return tokens


def _literal(token: str) -> str:
    if len(token) == 2:  # an escape: a backslash, then its letter (`"` or `\` written as a pattern has them)
        return "[\\\\]" + ("\\\\" if token[1] == "\\" else token[1])
    return "\\" + token if token in _META else token


def _other(children: Iterable[str]) -> str:
    """One JSON character that is none of `children` (tokens)."""
    plain = sorted({t for t in children if len(t) == 1})
    letters = {t[1] for t in children if len(t) == 2}
    excluded = "".join("\\" + c if c in _IN_CLASS else c for c in plain)
    alternatives = [f'[^"\\\\\\x00-\\x1f\\x7f{excluded}]']
    left = [c for c in '"\\bfnrt' if c not in letters]
    if left:
        alternatives.append("[\\\\][" + "".join("\\\\" if c == "\\" else c for c in left) + "]")
    return alternatives[0] if len(alternatives) == 1 else "(" + "|".join(alternatives) + ")"


def unlike(lines: Iterable[str]) -> str | None:
    """A pattern for the JSON text of any non-empty string but one of `lines`."""
    trie: dict[str, Any] = {}
    ends: set[tuple[str, ...]] = set()
    for line in lines:
        tokens = json_text(line)
        if tokens is None:
            return None
        node = trie
        for token in tokens:
            node = node.setdefault(token, {})
        ends.add(tuple(tokens))
    alternatives: list[str] = []
    stack: list[tuple[tuple[str, ...], dict[str, Any]]] = [((), trie)]
    while stack:
        prefix, node = stack.pop()
        written = "".join(_literal(t) for t in prefix)
        leave = f"{_other(node)}{JSON_CHAR}*"
        # where no line ends, the end is a way out too (not at the start: the replacement is never empty)
        ends_here = prefix in ends or not prefix
        alternatives.append(f"{written}{leave}" if ends_here else f"{written}({leave})?")
        stack.extend(((*prefix, token), child) for token, child in sorted(node.items()))
    return "^(" + "|".join(alternatives) + ")$"
