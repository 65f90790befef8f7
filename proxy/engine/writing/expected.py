"""What a failing test expects and what the code does instead, read from the failure's output.

An edit remedy that asks for a change "so that the failing check passes" was answered with a
change that made the test pass and not the code right: `count = 0` -> `count = 1`, `score =
int(score)` -> `score = int(score) + 1` (issue 61: every solve of the project's held-out tasks
with the defaults, each the answer to the held edit). So the remedy states what is expected and
what the code does, as the failure shows them, and asks for the code to do what is expected.

    E       assert 5 == 15                  -> Expectation("deposit(5)", "15", "5")
    E        +  where 5 = deposit(5)
    E       assert not True                 -> Expectation("is_leap(1900)", "false", "True", TRUTH)
    E        +  where True = is_leap(1900)
    E       Failed: DID NOT RAISE <class 'ValueError'>   -> raises ValueError, it does not
    AssertionError: 1 != 2 (unittest)       -> Expectation(None, "2", "1")
    Expected: 3 / Received: 2 (jest)        -> Expectation(None, "3", "2")

pytest writes the comparison as the test wrote it, its left side evaluated first; a test that
puts the expected value on the left (`assert 15 == deposit(5)`) is told apart by the test's own
line where the agent read it (`source`): the side that calls code is what the code gives. Nothing
is invented: an output that shows neither side gives None.

`documented` gives the first paragraph of each docstring in the lines to change: what the code
is meant to do, in the code's own words (countdown's "The numbers from `start` down to 1, both
ends included.").

Linear in the snippet (one scan per line, bounded lines).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from proxy.engine.outputs.excerpt import code_lines

__all__ = ["Expectation", "Kind", "documented", "expectation"]

_ASSERT = re.compile(r"^E\s+(?:AssertionError: )?assert (?P<body>.+?)\s*$")
_WHERE = re.compile(r"^E\s+\+\s+where (?P<value>.+?) = (?P<expression>.+?)\s*$")
_AT = re.compile(r"^(?P<file>\S+?):(?P<line>\d+): (?:AssertionError|Failed)\b")
_RAISE = re.compile(r"^E\s+Failed: DID NOT RAISE <class '(?P<error>[\w.]+)'>")
_UNITTEST = re.compile(r"^(?:E\s+)?AssertionError: (?P<left>.+?) != (?P<right>.+?)\s*$")
_JEST_EXPECTED = re.compile(r"^\s*Expected(?: value)?: (?P<value>.+?)\s*$")
_JEST_RECEIVED = re.compile(r"^\s*Received(?: value)?: (?P<value>.+?)\s*$")
_OPERATORS = (" == ", " != ", " is not ", " is ", " not in ", " in ", " >= ", " <= ", " > ", " < ")
_CALLS = re.compile(r"[\w\])]\s*\(")
"""A call: a name's last character (or a closing bracket) and its opening parenthesis."""
_STRINGS = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")
_WORDS = re.compile(r"\b[A-Za-z_]\w*\b")
_QUOTES = "'\""
_OPEN, _CLOSE = "([{", ")]}"
_MAX_VALUE = 80
_MAX_DOC = 200
_DOC_OPEN = re.compile(r'^\s*[rRbBuU]?("""|\'\'\'|"|\')')
_HEADER = re.compile(r"^\s*(?:async\s+)?def\s+(?P<name>\w+)\s*\(")


class Kind(StrEnum):
    EQUAL = "equal"
    """`expression == expected`: it gives `actual`."""
    TRUTH = "truth"
    """`expression` should be true or false (`expected`): it is `actual`."""
    RAISE = "raise"
    """`expected` should be raised: nothing was."""
    HOLD = "hold"
    """Another comparison (`expected`, written out) should hold: it does not."""


@dataclass(frozen=True, slots=True)
class Expectation:
    expression: str | None
    """The code under test as the test calls it (`countdown(3)`), when the output or the test's
    own line shows it."""
    expected: str
    actual: str
    kind: Kind = Kind.EQUAL


def _short(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 3] + "..."


def _top(body: str, needles: tuple[str, ...]) -> tuple[int, str] | None:
    """Where in `body` the first of `needles` stands outside brackets and quotes, and which."""
    depth, quote = 0, ""
    for i, ch in enumerate(body):
        if quote:
            quote = "" if ch == quote and body[i - 1] != "\\" else quote
        elif ch in _QUOTES:
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(0, depth - 1)
        elif depth == 0 and (found := next((n for n in needles if body.startswith(n, i)), None)) is not None:
            return i, found
    return None


def _split(body: str) -> tuple[str, str, str] | None:
    """`body` cut at its first comparison outside brackets and quotes: (left, operator, right)."""
    found = _top(body, _OPERATORS)
    if found is None:
        return None
    at, op = found
    return body[:at].strip(), op.strip(), body[at + len(op) :].strip()


def _calls(text: str) -> bool:
    return bool(_CALLS.search(text))


def _literal(text: str) -> bool:
    """`text` is a literal as written (numbers, strings, brackets, True/False/None): no name."""
    bare = _STRINGS.sub("''", text)
    return not any(word not in ("True", "False", "None") for word in _WORDS.findall(bare))


def _source_line(source: str | None, at: int | None) -> str | None:
    """The test's own line at `at`, as the agent's read showed it: its `assert ...` body."""
    if source is None or at is None:
        return None
    line = (code_lines(source).get(at) or "").strip()
    if not line.startswith("assert "):
        return None
    body = line.removeprefix("assert ").strip()
    message = _top(body, (",",))  # `assert x == y, "why"`: the message is no part of it
    return body[: message[0]].strip() if message is not None else body


def _compared(body: str, wheres: dict[str, str], written: str | None) -> Expectation | None:
    """An `assert left op right` line, read with its `where` lines and the test's own line."""
    parts = _split(body)
    if parts is None:
        return _truth(body, wheres, written)
    left, op, right = parts
    source = _split(written) if written is not None else None
    if op != "==":
        return Expectation(None, _short(written or body), _short(body), Kind.HOLD)
    swapped = source is not None and _calls(source[2]) and not _calls(source[0])
    if swapped:
        left, right = right, left
    expression = wheres.get(left)
    if source is not None:
        mine, theirs = (source[2], source[0]) if swapped else (source[0], source[2])
        expression = mine if _calls(mine) else expression
        right = theirs if _literal(theirs) else right  # as the test wrote it: never cut short
    return Expectation(_short(expression) if expression else None, _short(right), _short(left))


def _truth(body: str, wheres: dict[str, str], written: str | None) -> Expectation:
    negated = body.startswith("not ")
    value = body.removeprefix("not ").strip()
    expression = wheres.get(value)
    if written is not None:
        mine = written.removeprefix("not ").strip()
        expression = mine if _calls(mine) else expression
    wanted = "false" if negated else "true"
    return Expectation(_short(expression) if expression else None, wanted, _short(value), Kind.TRUTH)


def _pytest(lines: list[str], source: str | None) -> Expectation | None:
    for i, line in enumerate(lines):
        raised = _RAISE.match(line)
        if raised:
            return Expectation(None, raised.group("error"), "nothing raised", Kind.RAISE)
        found = _ASSERT.match(line)
        if found is None:
            continue
        wheres: dict[str, str] = {}
        at: int | None = None
        for after in lines[i + 1 :]:
            where = _WHERE.match(after)
            if where is not None:
                wheres.setdefault(where.group("value").strip(), where.group("expression").strip())
                continue
            if (located := _AT.match(after)) is not None:
                at = int(located.group("line"))
                break
            if after.startswith("FAILED ") or _ASSERT.match(after):
                break
        return _compared(found.group("body"), wheres, _source_line(source, at))
    return None


def expectation(snippet: str, source: str | None = None) -> Expectation | None:
    """What the first failure of `snippet` (a failing output's evidence lines) expects and what
    the code gives instead; `source`: the failing test's file as the agent's read showed it, to
    tell which side of a comparison the code is. None when the output shows neither."""
    lines = snippet.splitlines()[:80]
    found = _pytest(lines, source)
    if found is not None:
        return found
    for line in lines:
        if (unit := _UNITTEST.match(line)) is not None:
            return Expectation(None, _short(unit.group("right")), _short(unit.group("left")))
    expected = next((m.group("value") for line in lines if (m := _JEST_EXPECTED.match(line))), None)
    received = next((m.group("value") for line in lines if (m := _JEST_RECEIVED.match(line))), None)
    if expected is not None and received is not None:
        return Expectation(None, _short(expected), _short(received))
    return None


def documented(lines: str | None, names: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(function, the first paragraph of its docstring) for each function of `lines` that has one,
    those named in `names` first: what the code is meant to do, in its own words."""
    if not lines:
        return []
    text = lines.splitlines()
    found: list[tuple[str, str]] = []
    for i, line in enumerate(text):
        header = _HEADER.match(line)
        if header is None:
            continue
        end = next((k for k in range(i, min(len(text), i + 10)) if text[k].rstrip().endswith(":")), None)
        body = next((k for k in range(end + 1, len(text)) if text[k].strip()), None) if end is not None else None
        opened = _DOC_OPEN.match(text[body]) if body is not None else None
        if body is not None and opened is not None and (doc := _docstring(text, body, opened.group(1))):
            found.append((header.group("name"), doc))
    wanted = list(names)
    return sorted(found, key=lambda item: wanted.index(item[0]) if item[0] in wanted else len(wanted))


def _docstring(text: list[str], start: int, quote: str) -> str:
    """The first paragraph of the docstring opening at `text[start]` with `quote`."""
    first = text[start].split(quote, 1)[1]
    parts: list[str] = []
    rest = [first, *text[start + 1 : start + 40]]
    for line in rest:
        piece = line.split(quote, 1)[0].strip()
        if not piece and parts:
            break
        if piece:
            parts.append(piece)
        if quote in line:
            break
    doc = " ".join(parts)
    return doc if len(doc) <= _MAX_DOC else doc[: _MAX_DOC - 3] + "..."
