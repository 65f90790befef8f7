"""Shell lexing, well enough to read an agent's command: here-document bodies taken out, the
command split into simple commands outside quotes, and each split into words.

Linear in the command's length; what it cannot follow (an unclosed quote, an unterminated
here-document) ends where the text ends, never raised.
"""

from __future__ import annotations

import re

__all__ = ["Operator", "split_segments", "take_heredocs", "words"]

_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][\w.-]*)\2")


def take_heredocs(command: str) -> tuple[str, dict[int, str]]:
    """The command with here-document bodies taken out, and each body by the line it was on."""
    lines = command.split("\n")
    kept: list[str] = []
    bodies: dict[int, str] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        kept.append(line)
        markers = list(_HEREDOC.finditer(line))
        index += 1
        for marker in markers:
            strip_tabs, end = marker.group(1) == "-", marker.group(3)
            body: list[str] = []
            while index < len(lines):
                candidate = lines[index].lstrip("\t") if strip_tabs else lines[index]
                index += 1
                if candidate.strip() == end:
                    break
                body.append(lines[index - 1])
            bodies[len(kept) - 1] = (bodies.get(len(kept) - 1, "") + "\n".join(body)).strip("\n")
    return "\n".join(kept), bodies


def split_segments(text: str) -> list[tuple[str, int, bool]]:
    """The segments of `text` outside quotes, each with the line it starts on and whether it reads
    the output of the one before it (`a | b`: b does; `a || b` does not)."""
    parts: list[tuple[str, int, bool]] = []
    current: list[str] = []
    quote = ""
    line = start = 0
    piped = False
    at = 0
    while at < len(text):
        char = text[at]
        if quote:
            current.append(char)
            if char == "\\" and quote == '"' and at + 1 < len(text):
                current.append(text[at + 1])
                at += 1
            elif char == quote:
                quote = ""
            elif char == "\n":
                line += 1
        elif char in "'\"":
            quote = char
            current.append(char)
        elif char == "\\" and at + 1 < len(text):
            current.append(text[at : at + 2])
            at += 1
        elif char in "\n;" or text.startswith(("&&", "||"), at) or (char == "|" and text[at - 1] != ">"):
            parts.append(("".join(current), start, piped))
            current = []
            piped = char == "|" and not text.startswith("||", at)
            if char == "\n":
                line += 1
            elif text.startswith(("&&", "||"), at):
                at += 1
            start = line
        elif char == "#" and (at == 0 or text[at - 1] in " \t\n;&|("):
            end = text.find("\n", at)
            at = len(text) if end == -1 else end
            continue
        else:
            current.append(char)
        at += 1
    parts.append(("".join(current), start, piped))
    return [(part, first, reads_pipe) for part, first, reads_pipe in parts if part.strip()]


_ESCAPED_IN_DOUBLE = frozenset({"$", "`", '"', "\\", "\n"})
"""What a backslash escapes inside double quotes (POSIX): before any other character it is kept."""


def _escape(text: str, at: int, quote: str) -> str | None:
    """What the backslash at `at` stands for (None: one kept as it is): outside
    quotes the next character, inside double quotes one of `_ESCAPED_IN_DOUBLE`, inside single
    quotes nothing; before a line break, nothing at all (the line continued)."""
    follows = text[at + 1 : at + 2]
    if not follows or quote == "'" or (quote and follows not in _ESCAPED_IN_DOUBLE):
        return None
    return "" if follows == "\n" else follows


class Operator(str):
    """A redirection operator the shell would act on: written outside quotes. A quoted word that
    looks like one (`grep -n ">= 90" f.py`) is a plain `str`: an argument, never a redirect."""

    __slots__ = ()


def words(text: str) -> list[str]:
    """Shell words, quotes removed, with unquoted redirection operators as words of their own
    (`>`, `>>`, `2>`, `&>`, `<`, `<<`: a file descriptor before one is part of it), each an
    `Operator`; a backslash escapes as the shell reads it (outside quotes, the next character;
    inside double quotes, `"`, `\\`, `$`, a backquote or a line break); an unclosed quote ends the
    last word."""
    words: list[str] = []
    current: list[str] = []
    quote = ""
    started = False
    at = 0
    while at < len(text):
        char = text[at]
        escaped = _escape(text, at, quote) if char == "\\" else None
        if escaped is not None:
            current.append(escaped)
            started = started or bool(escaped)
            at += 2
            continue
        if quote:
            if char == quote:
                quote = ""
            else:
                current.append(char)
        elif char in "'\"":
            quote, started = char, True
        elif char.isspace():
            if started:
                words.append("".join(current))
                current, started = [], False
        elif char in "<>":
            prefix = "".join(current) if current and "".join(current) in ("1", "2", "&") else ""
            if started and not prefix:
                words.append("".join(current))
            current, started = [], False
            end = at + 1
            while end < len(text) and text[end] in "<>&|-" and end - at < 3:
                end += 1
            words.append(Operator(prefix + text[at:end]))
            at = end
            continue
        else:
            current.append(char)
            started = True
        at += 1
    if started:
        words.append("".join(current))
    return words
