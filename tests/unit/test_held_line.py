"""The held edit of one line (issue 51): the lines a held edit may change one of
(`writing.pointed.changeable`) and the pattern its replacement is held to (`writing.unlike`),
each as a table of must and must-not."""

from __future__ import annotations

import json
import re

import pytest

from proxy.engine.writing.pointed import MAX_LINES, changeable
from proxy.engine.writing.unlike import unlike

TWICE = "def f(x):\n    return x\n\ndef g(y):\n    return x\n"
STRING = '    text = """a\n    b"""\n    return text\n'
CODE = (
    'VOWELS = "aeio"\n\n\n@cache\ndef count_vowels(text):\n    """How many vowels.\n\n    Counted once.\n    """\n'
    "    # the vowels of the text\n    return sum(1 for c in text if c in VOWELS)\n"
)


@pytest.mark.parametrize(
    ("quoted", "file", "offered"),
    [
        (CODE, CODE, ('VOWELS = "aeio"', "    return sum(1 for c in text if c in VOWELS)")),  # must: what acts
        (TWICE, TWICE, ()),  # must not: a line the file has twice (the editor would not apply it)
        (STRING, STRING, ("    return text",)),  # must not: a string's lines
        ("class A:\n    pass\n", "class A:\n    pass\n", ("    pass",)),  # must not: the header
    ],
)
def test_the_lines_a_held_edit_may_change(quoted: str, file: str, offered: tuple[str, ...]) -> None:
    assert changeable(quoted, file) == offered


def test_at_most_max_lines_are_offered() -> None:
    lines = "\n".join(f"    x{n} = {n}" for n in range(MAX_LINES + 5))
    assert len(changeable(lines, lines)) == MAX_LINES


LINES = ["    return a - b", '    s = "x\\ty"']


@pytest.mark.parametrize(
    ("replacement", "accepted"),
    [
        ("    return a + b", True),  # must: a change
        ("    return a - b\n    # and more", True),  # must: the line and more
        ("    return a -", True),  # must: a shorter line
        ('    s = "x y"', True),
        ("    return a - b", False),  # must not: the copy
        ('    s = "x\\ty"', False),  # must not: the other line, as it is (escapes and all)
        ("", False),  # must not: nothing
    ],
)
def test_the_replacement_is_any_text_but_a_copy(replacement: str, accepted: bool) -> None:
    pattern = unlike(LINES)
    assert pattern is not None
    written = json.dumps(replacement, ensure_ascii=False)[1:-1]  # the JSON text between the quotes
    assert (re.fullmatch(pattern, written) is not None) is accepted


def _depth(pattern: str) -> int:
    """How deep the pattern's groups nest (escapes and classes skipped)."""
    depth = deepest = 0
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif c == ")":
            depth -= 1
        i += 1
    return deepest


def test_the_pattern_nests_no_deeper_for_longer_lines_and_is_none_for_a_control_character() -> None:
    """llama.cpp turns a pattern nested past 100 groups into any string: the depth is fixed."""
    short, long = unlike(["xyz", "xyw"]), unlike(["x" * 300, "x" * 299 + "y"])
    assert short is not None and long is not None and _depth(long) == _depth(short) <= 3
    assert unlike(["a\x01b"]) is None
