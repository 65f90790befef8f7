"""A command the shell could not parse ran nothing: read only where that is certain."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from proxy.engine.reading.unparsed import never_ran

OPEN_QUOTE = "sed -i 's/^    def pop(self):\\n        item = self.items.pop(0)\\n        print(\" } }"
"""Qwen2.5-Coder-1.5B's reply on the recovery bench (stack, one shell, seed 1): cut with its quote open."""
EOF_QUOTE = "bash: -c: line 1: unexpected EOF while looking for matching `''\n"


@pytest.mark.parametrize(
    ("command", "output", "unrun"),
    [
        pytest.param(OPEN_QUOTE + " stack.py", EOF_QUOTE, True, id="the bench's sed, its quote left open"),
        pytest.param(
            "cd /w && sed -i 's/a/b/' f.py; echo (x",
            "bash: -c: line 1: syntax error near unexpected token `x'\nbash: -c: line 1: `...'\n",
            True,
            id="one line: bash parses it whole before running any of it",
        ),
        pytest.param(
            "sed -i 's/a/b/' f.py; if true; then echo x",
            "bash: -c: line 2: syntax error: unexpected end of file\n",
            True,
            id="an if with no fi: the end of the text counted as line 2",
        ),
        pytest.param(
            "sed -i 's/a/b/' f.py; echo \"x",
            "sh: 1: Syntax error: Unterminated quoted string\n",
            True,
            id="dash's words",
        ),
        pytest.param(
            "sed -i 's/a/b/' f.py; echo \"x",
            "/bin/sh: -c: line 1: unexpected EOF while looking for matching `\"'\n",
            True,
            id="bash as /bin/sh",
        ),
        pytest.param(
            "sed -i 's/a/b/' f.py\necho \"x",
            "bash: -c: line 2: unexpected EOF while looking for matching `\"'\n",
            False,
            id="two lines: the first ran",
        ),
        pytest.param(
            "sed -i 's/a/b/' f.py && bash -c 'echo \"x'",
            EOF_QUOTE,
            False,
            id="a shell of its own complained: the sed ran first",
        ),
        pytest.param("sh fix.sh", "fix.sh: 3: Syntax error: end of file unexpected\n", False, id="a script's own"),
        pytest.param("sed -i 's/a/b/' f.py", "", False, id="no complaint"),
        pytest.param(
            "python -c 'print(1'",
            "  File \"<string>\", line 1\n    print(1\nSyntaxError: '(' was never closed\n",
            False,
            id="Python's syntax error, not the shell's",
        ),
    ],
)
def test_a_command_is_read_as_never_run_only_when_the_shell_refused_its_only_line(
    command: str, output: str, unrun: bool
) -> None:
    assert never_ran(command, output) is unrun


@pytest.mark.parametrize(
    ("shell", "command"),
    [
        ("bash", 'touch ran; echo "x'),
        ("bash", "touch ran && echo (x"),
        ("bash", "touch ran; if true; then echo x"),
        ("sh", 'touch ran; echo "x'),
    ],
)
def test_the_shells_themselves_run_nothing_of_a_line_they_cannot_parse(
    tmp_path: Path, shell: str, command: str
) -> None:
    """The rule's ground: the shells this machine has, asked the rows' commands."""
    done = subprocess.run([shell, "-c", command], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert never_ran(command, done.stderr)
    assert not (tmp_path / "ran").exists()
