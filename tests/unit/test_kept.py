"""A held edit's replacement keeps the definitions of the lines it replaces (`writing.kept`).

The pattern is read here as llama.cpp reads it: on the JSON text between the string's quotes.
"""

from __future__ import annotations

import re

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from proxy.engine.writing.kept import definitions_kept

VOWELS = 'VOWELS = "aeio"\n\n\ndef count_vowels(text):\n    """Count the vowels."""\n    return sum(1 for ch in text if ch in VOWELS)'  # fmt: skip
FIXED_VOWELS = VOWELS.replace('"aeio"', '"aeiou"').replace("in text", "in text.lower()")
STACK = "class Stack:\n    def push(self, item):\n        self.items.append(item)\n\n    def pop(self):\n        return self.items.pop(0)"  # fmt: skip


def as_written(text: str) -> str:
    """`text` as the model writes it inside a JSON string."""
    return orjson.dumps(text).decode()[1:-1]


def holds(pattern: str, text: str) -> bool:
    return re.fullmatch(pattern, as_written(text)) is not None


@pytest.mark.parametrize(
    ("lines", "replacement", "kept"),
    [
        # Seen: the one line meant to change, the function the failing test calls deleted.
        (VOWELS, 'VOWELS = "aeiou"', False),
        (VOWELS, FIXED_VOWELS, True),
        (VOWELS, "def count_vowels_lower(text):\n    return 0", False),
        (VOWELS, "async def count_vowels(text):\n\treturn 0", True),
        (STACK, STACK.replace("pop(0)", "pop()"), True),
        (STACK, "class Stack:\n    def pop(self):\n        return self.items.pop()", False),
        (STACK, "def pop(self):\n    return 1\ndef push(self, item):\n    pass\nclass Stack(object): pass", False),
        ("class Bank(object):\n    pass", "class Bank(Base):\n    pass", True),
        ("class Bank(object):\n    pass", "class Banking:\n    pass", False),
    ],
)
def test_a_replacement_is_held_to_the_definitions_of_the_lines_it_replaces(
    lines: str, replacement: str, kept: bool
) -> None:
    pattern = definitions_kept(lines)
    assert pattern is not None and holds(pattern, replacement) is kept


@pytest.mark.parametrize("lines", ["x = 1", "    return a - b\n", "# def f(x): a comment, no header"])  # fmt: skip
def test_lines_with_no_definition_leave_the_replacement_free(lines: str) -> None:
    assert definitions_kept(lines) is None


@given(st.text(max_size=200))
def test_the_pattern_never_lets_through_text_that_is_not_a_json_string(text: str) -> None:
    """Whatever the text around the headers, the pattern admits it as written in JSON and nothing
    JSON would not read back: no bare quote, no control character, no unknown escape."""
    pattern = definitions_kept(VOWELS)
    assert pattern is not None
    written = f"{text}\ndef count_vowels(t):\n{text}"
    if all(0x20 <= ord(c) != 0x7F or c in "\n\t\r\b\f" for c in written) and "\\u" not in as_written(written):
        assert holds(pattern, written)
    for bad in ('def count_vowels(" ', "def count_vowels(\x01", r"def count_vowels(\x", r"def count_vowels(\u0041"):
        assert re.fullmatch(pattern, bad) is None
