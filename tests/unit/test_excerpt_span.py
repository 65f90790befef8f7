"""`closest_span`: the lines an unmatched `old_str` was meant to match, as a table of must-find and
must-not-find cases; `excerpt`: the function a failure names, as the read showed it; `called_names`."""

from __future__ import annotations

import pytest

from proxy.engine.outputs.excerpt import MAX_EXCERPT_LINES, called_names, closest_span, excerpt, file_text

FILE = (
    "     1\timport re\n"
    "     2\t\n"
    "     3\tdef slug(title):\n"
    "     4\t    words = re.findall(r'\\w+', title)\n"
    "     5\t    return '_'.join(words).lower()\n"
    "     6\t\n"
    "     7\tdef other():\n"
    "     8\t    return 1\n"
)


@pytest.mark.parametrize(
    ("attempted", "expected"),
    [
        pytest.param(
            "words = re.findall(r'\\w+', title)\nreturn '_'.join(words).lower()",
            "    words = re.findall(r'\\w+', title)\n    return '_'.join(words).lower()",
            id="indentation lost: both lines, as the file has them",
        ),
        pytest.param(
            "    return '-'.join(words).lower()",
            "    return '_'.join(words).lower()",
            id="one character misremembered",
        ),
        pytest.param(
            "def slug(title):\n    words = re.findall(r'\\w+', title)\n    joined = '_'.join(words)\n"
            "    return joined.lower()",
            "def slug(title):\n    words = re.findall(r'\\w+', title)\n    return '_'.join(words).lower()",
            id="one line of the file remembered as two: the span one line shorter",
        ),
        pytest.param(
            "import re\n\ndef slug(title):\n    words = re.findall(r'\\w+', title)\n    words = [w for w in words]\n"
            "    return '_'.join(words).lower()\n\ndef other():\n    return 1",
            "import re\n\ndef slug(title):\n    words = re.findall(r'\\w+', title)\n    return '_'.join(words).lower()\n"
            "\ndef other():\n    return 1",
            id="longer than the whole file by a line: the whole file (recovery bench, stack)",
        ),
        pytest.param("import os\nimport sys", None, id="lines the file does not have"),
        pytest.param("", None, id="nothing attempted"),
        pytest.param("x\n" * (MAX_EXCERPT_LINES + 1), None, id="longer than we quote"),
        pytest.param("a\n" * 20, None, id="longer than the read"),
    ],
)
def test_the_lines_an_unmatched_old_str_meant(attempted: str, expected: str | None) -> None:
    assert closest_span(FILE, attempted) == expected


STACK_FAILURE = (
    "    def test_pop_returns_the_last_pushed():\n        s = Stack()\n        s.push(1)\n        s.push(2)\n"
    ">       assert s.pop() == 2\nE       assert 1 == 2\nE        +  where 1 = pop()\n"
)


@pytest.mark.parametrize(
    ("output", "first"),
    [
        pytest.param(
            STACK_FAILURE,
            ("pop", "test_pop_returns_the_last_pushed", "Stack"),
            id="the line it failed at first: pop, not the class",
        ),
        pytest.param(
            STACK_FAILURE.replace(">       assert", "        assert"),
            ("test_pop_returns_the_last_pushed", "Stack", "push", "pop"),
            id="no line marked: in order",
        ),
        pytest.param("x = f(1)\n>   assert g(2)\n>   return h(3)\n", ("g", "h", "f"), id="every marked line, in order"),
    ],
)
def test_the_names_a_failure_calls_start_with_the_line_it_failed_at(output: str, first: tuple[str, ...]) -> None:
    assert called_names(output)[: len(first)] == first


BANK = (
    "     1\tclass Account:\n"
    "     2\t    def __init__(self, balance=0):\n"
    "     3\t        self.balance = balance\n"
    "     4\t\n"
    "     5\t    def deposit(self, amount):\n"
    "     6\t        self.balance -= amount\n"
    "     7\t        return self.balance\n"
    "     8\t\n"
    "     9\t    def withdraw(self, amount):\n"
    "    10\t        self.balance += amount\n"
    "    11\t        return self.balance\n"
    "    12\t\n"
    "    13\tdef opened(balance):\n"
    "    14\t    return Account(balance)\n"
)
BANK_LINES = file_text(BANK).splitlines()


def _lines(first: int, last: int) -> str:
    return "\n".join(BANK_LINES[first - 1 : last])


@pytest.mark.parametrize(
    ("names", "line", "expected"),
    [
        pytest.param(
            ("Account", "deposit"),
            None,
            _lines(5, 7),
            id="Account(10).deposit(5) failed: the method, not the class around it (recovery bench, bank)",
        ),
        pytest.param(("Account", "withdraw", "deposit"), None, _lines(9, 11), id="two methods named: the first"),
        pytest.param(("Account",), None, _lines(1, 11), id="only the class named: the class, whole"),
        pytest.param(("opened", "Account"), None, _lines(13, 14), id="a function holding no other: the first named"),
        pytest.param(("missing",), 10, _lines(9, 11), id="nothing named: the definition holding the line"),
        pytest.param(("missing",), None, None, id="nothing named, no line: nothing"),
    ],
)
def test_the_code_quoted_is_the_innermost_definition_the_failure_names(
    names: tuple[str, ...], line: int | None, expected: str | None
) -> None:
    assert excerpt(BANK, names, line) == expected


def test_a_read_that_ends_inside_the_function_gives_the_lines_it_showed() -> None:
    shown = "".join(BANK.splitlines(keepends=True)[:6])  # the read stopped at line 6
    assert excerpt(shown, ("Account", "deposit")) == _lines(5, 6)


MODULE = (
    'VOWELS = "aeio"\n'  # 1
    "LIMIT = 3  # not read by count_vowels\n"  # 2
    "# what counts\n"  # 3
    "SEPARATOR = (\n"  # 4
    '    ","\n'  # 5
    ")\n"  # 6
    'EXTRA = "y"\n'  # 7
    "\n"  # 8
    "\n"  # 9
    "def count_vowels(text):\n"  # 10
    "    return sum(1 for ch in text.lower() if ch in VOWELS or ch in EXTRA)\n"  # 11
    "\n"  # 12
    "\n"  # 13
    "class Counter:\n"  # 14
    "    VOWELS = 'x'\n"  # 15
    "    def count(self, text):\n"  # 16
    "        return len(VOWELS)\n"  # 17
)


@pytest.mark.parametrize(
    ("module", "names", "first"),
    [
        pytest.param(
            'VOWELS = "aeio"\n\n\ndef count_vowels(text):\n    return sum(1 for ch in text if ch in VOWELS)\n',
            ("count_vowels",),
            1,
            id="the value it reads, just above it (recovery bench, vowels: the fault is the value)",
        ),
        pytest.param(MODULE, ("count_vowels",), 7, id="the run of values above it ends at a line that is none"),
        pytest.param(
            'VOWELS = "aeio"\nLIMIT = 3\n\ndef count_vowels(text):\n    return sum(1 for ch in text if ch in VOWELS)\n',
            ("count_vowels",),
            1,
            id="a value it does not read, between: passed over",
        ),
        pytest.param(MODULE, ("count",), 16, id="a method: its lines alone"),
        pytest.param(
            "import os\nROOT = os.getcwd()\n\ndef where():\n    return 'here'\n",
            ("where",),
            4,
            id="a value it does not read: left out",
        ),
    ],
)
def test_a_top_level_function_is_quoted_with_the_values_it_reads_set_just_above_it(
    module: str, names: tuple[str, ...], first: int
) -> None:
    """The quote is one run of the file's lines (an edit's text to replace must be found whole)."""
    quoted = excerpt(module, names)
    assert quoted is not None and quoted.splitlines()[0] == module.splitlines()[first - 1]
    assert quoted in module
