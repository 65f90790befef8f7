"""`shell.words` as a table: quotes, backslashes and redirections read the way bash reads them.

Each row was checked against bash itself (`printf '<%s>' <words>`); the cases come from the
corpus where a misread changed what the proxy said: a quoted `>` taken for a redirect made a
search an edit (mswea2 pvlib-1707), and a `\\"` inside a double-quoted `python3 -c "..."` ended
the program early, so its write went unread (mswea2 pydicom-1413).
"""

from __future__ import annotations

import pytest

from proxy.engine.reading.commands import read_command
from proxy.engine.reading.shell import Operator, words


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('grep -n ">= 90" f.py', ["grep", "-n", ">= 90", "f.py"]),
        ("echo a > out.txt", ["echo", "a", ">", "out.txt"]),
        ("python x.py 2>&1", ["python", "x.py", "2>&", "1"]),
        # inside double quotes a backslash escapes only ", \, $, ` and a line break
        (r'echo "a \"b\" \$x \\ \n"', ["echo", 'a "b" $x \\ \\n']),
        # inside single quotes nothing is escaped
        (r"echo 'a\"b\n'", ["echo", 'a\\"b\\n']),
        # outside quotes a backslash escapes the next character, a space included
        (r"ls my\ dir \>x", ["ls", "my dir", ">x"]),
        # a line continued
        ("pytest \\\n  -q", ["pytest", "-q"]),
        ("a\\\nb", ["ab"]),
        # a backslash at the very end is kept
        ("echo x\\", ["echo", "x\\"]),
    ],
)
def test_words(text: str, expected: list[str]) -> None:
    assert words(text) == expected


def test_only_unquoted_operators_are_operators() -> None:
    found = words('echo ">" > "<" \\> x')
    assert [type(w) is Operator for w in found] == [False, False, True, False, False, False]


def test_a_double_quoted_program_with_escaped_quotes_is_read_whole() -> None:
    """mswea2 pydicom-1413: the program writes its file after a `\\"\\"\\"` docstring."""
    command = (
        'python3 -c "\n'
        "with open('pkg/mod.py') as f:\n"
        "    s = f.read()\n"
        "s = s.replace('a', '''\\\"\\\"\\\"doc\\\"\\\"\\\"''')\n"
        "with open('pkg/mod.py', 'w') as f:\n"
        "    f.write(s)\n"
        '"'
    )
    assert [w.path for w in read_command(command).writes] == ["pkg/mod.py"]
