"""The lines an edit should replace, cut from what the agent's own read of the file showed.

A directive to edit is only as good as what it hands the model: a template to fill
(`<the wrong code>`) gets the template back as `old_str`, and a quoted test assertion gets the
test's string. What the proxy can hand over instead is the code as the agent last saw it: the
whole function the failure names (a name called in the failing output that the file defines),
else the one holding the line the traceback points at. Never a line that was not in a read.

Reads come numbered or not: an editor's view and `cat -n` / `nl` (`     7\\tcode`), SWE-agent's
`open` (`7:code`), Claude Code's `Read` (`     7→code`); the numbers are taken off.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable
from difflib import SequenceMatcher

__all__ = ["MAX_EXCERPT_LINES", "called_names", "closest_span", "code_lines", "excerpt", "file_text"]

MAX_EXCERPT_LINES = 30
"""A longer function is not quoted whole (the model would copy it back with one slip): look instead."""

ALIKE = 0.6
"""How alike (difflib's ratio, indentation aside) a run of a file's lines must be to an edit's
unmatched `old_str` to be taken for the lines it meant."""
SPREAD = 2
"""How many lines more or fewer than an unmatched `old_str` the span it was meant to match may have."""

_NUMBERED = re.compile(r"^\s*(\d+)(?:\t|:|→)(.*)$")
_DEFINITION = re.compile(r"^(?P<indent>[ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]+(?P<name>\w+)")
_CALLED = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_FAILED_AT = re.compile(r"^>[ \t]+(.*)$", re.MULTILINE)
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")
_VALUE = re.compile(r"^([A-Za-z_]\w*)[ \t]*(?::[^=]*)?=(?!=).*[^\\,(\[{]$")
"""A one-line module-level assignment (not continued on the next line), and its name."""


def code_lines(shown: str) -> dict[int, str]:
    """The file's lines a read showed, by line number: its own numbers when it printed them,
    else counted from 1 (a whole-file `cat`)."""
    lines = shown.splitlines()
    numbered = [m for m in (_NUMBERED.match(line) for line in lines) if m]
    if numbered and len(numbered) * 5 >= len([line for line in lines if line.strip()]) * 4:
        return {int(m.group(1)): m.group(2) for m in numbered}
    return dict(enumerate(lines, start=1))


def file_text(shown: str) -> str:
    """The file's text as a read showed it, line numbers off."""
    return "\n".join(text for _n, text in sorted(code_lines(shown).items()))


def called_names(text: str) -> tuple[str, ...]:
    """Names called in a failure's text (`assert add(2, 3) == 5` -> `add`): those on the lines it
    failed at (pytest's `>`) first, then the rest in order. A test's whole body is shown, so
    `s = Stack()` comes before the `s.pop()` that failed, and the class is not what to change."""
    at = "\n".join(_FAILED_AT.findall(text))
    found = (n for n in (*_CALLED.findall(at), *_CALLED.findall(text)) if not keyword.iskeyword(n))
    return tuple(dict.fromkeys(found))


def _block(lines: dict[int, str], start: int) -> list[int] | None:
    """The definition at `start` and its body: up to the next line indented no deeper."""
    indent = len(lines[start]) - len(lines[start].lstrip())
    numbers = [start]
    for n in range(start + 1, start + MAX_EXCERPT_LINES + 1):
        if n not in lines:
            break
        text = lines[n]
        if text.strip() and len(text) - len(text.lstrip()) <= indent:
            break
        numbers.append(n)
    else:
        return None  # longer than we quote (a read that ends inside it gives the lines it showed)
    while numbers and not lines[numbers[-1]].strip():
        numbers.pop()
    return numbers


def excerpt(shown: str, names: Iterable[str], line: int | None = None) -> str | None:
    """The whole function (or class) of `shown` that one of `names` defines, else the one holding
    `line`, exactly as the read showed it, with the module's values it reads set just above it
    (`_with_values`); None when neither is in the read.

    Of the named ones, the first that holds no other: a method the failure calls, not the class
    around it (`assert Account(10).deposit(5) == 15` quotes `deposit`). The model copies what is
    quoted back twice, as the text to replace and its replacement, within the agent's reply
    budget: asked for an edit of a whole 13-line class, Qwen2.5-Coder-1.5B was cut off at the
    bench agent's 256 tokens in the middle of `new_str`, 9 times in 139 constrained retries
    (recovery bench, bank), and the agent got no call at all."""
    lines = code_lines(shown)
    definitions = {m.group("name"): n for n, m in ((n, _DEFINITION.match(t)) for n, t in lines.items()) if m}
    starts = [definitions[name] for name in names if name in definitions]
    if not starts and line is not None and line in lines:
        enclosing = [n for n in definitions.values() if n <= line]
        starts = [max(enclosing)] if enclosing else []
    blocks = [block for block in (_block(lines, start) for start in starts) if block]
    innermost = [block for block in blocks if not any(other[0] in block[1:] for other in blocks)]
    return "\n".join(lines[n] for n in _with_values(lines, innermost[0])) if innermost else None


def _with_values(lines: dict[int, str], block: list[int]) -> list[int]:
    """A top-level function's lines, with the module-level values it reads set just above it
    (`VOWELS = "aeio"` over `count_vowels`, blank lines and comments between): the fault may be
    the value (recovery bench, vowels: handed the function alone, Qwen2.5-Coder-1.5B copied it
    back unchanged five times). One-line assignments, those it does not read passed over (quoted
    only when between: the quote is one run of the file's lines); the first line that is none
    ends them."""
    if lines[block[0]][:1].isspace():
        return block
    used = set(_NAME.findall("\n".join(lines[n] for n in block[1:])))
    start, n = block[0], block[0] - 1
    while n in lines and len(block) + block[0] - n <= MAX_EXCERPT_LINES:
        text = lines[n]
        value = _VALUE.match(text)
        if value is not None:
            start = n if value.group(1) in used else start  # one it does not read: passed over
        elif text.strip() and not text.startswith("#"):
            break
        n -= 1
    return [*range(start, block[0]), *block]


def closest_span(shown: str, attempted: str) -> str | None:
    """The run of lines of `shown` that an edit's `old_str`, not found in the file, was meant to
    match: about as many lines as it has (up to `SPREAD` more or fewer: a misremembered line may
    be two in the file, or two one), the most alike (indentation aside; at equal likeness, the
    closest in length), exactly as the read showed them; None when no run is alike enough
    (`ALIKE`) or it is longer than we quote."""
    lines = [text for _n, text in sorted(code_lines(shown).items())]
    wanted = [line.strip() for line in attempted.strip("\n").splitlines()]
    size = len(wanted)
    if not size or size > MAX_EXCERPT_LINES:
        return None
    matcher = SequenceMatcher(None, autojunk=False)
    matcher.set_seq2("\n".join(wanted))
    best, found = ALIKE, None
    for width in sorted(range(max(1, size - SPREAD), min(len(lines), size + SPREAD) + 1), key=lambda w: abs(w - size)):
        at = None
        for start in range(len(lines) - width + 1):
            matcher.set_seq1("\n".join(line.strip() for line in lines[start : start + width]))
            ratio = _alike(matcher, best)
            # within a width the later run wins a tie (as ever); a farther width must do better
            if ratio is not None and (found is None or at is not None or ratio > best):
                best, at = ratio, start
        if at is not None:
            found = lines[at : at + width]
    return None if found is None else "\n".join(found)


def _alike(matcher: SequenceMatcher[str], floor: float) -> float | None:
    """The matcher's ratio when it is at least `floor` (the cheap bounds tried first)."""
    if matcher.real_quick_ratio() >= floor and matcher.quick_ratio() >= floor and (ratio := matcher.ratio()) >= floor:
        return ratio
    return None
