"""The lines that say a call could not run, or that the shell could not run it, as a table: each
is found by its marker (a substring search, then the line's pattern), and lines that only look
like them are not."""

from __future__ import annotations

import pytest

from proxy.engine.outputs.outcome import Outcome, environment_problem, result_outcome
from proxy.settings.kinds import CallKind

COULD_NOT_RUN = [
    "bash: pytest: command not found",
    "/bin/sh: 1: pytest: not found",
    "python: can't open file '/repo/reproduce.py': [Errno 2] No such file or directory",
    "/usr/bin/python3: No module named pytest",
    "/usr/bin/env: 'python': No such file or directory",
    "bash: line 1: ./mvnw: No such file or directory",
    "sh: ./run_tests.sh: No such file or directory",
    "FileNotFoundError: [Errno 2] No such file or directory: 'git'",
    "psycopg2.OperationalError: could not connect to server: Connection refused",
    "\tIs the server running on that host and accepting TCP/IP connections?",
    'could not translate host name "db" to address',
    "socket.gaierror: [Errno -3] Temporary failure in name resolution",
    "socket.gaierror: [Errno -2] Name or service not known",
    "OSError: [Errno 101] Network is unreachable",
    # Django run with no settings (a harness the agent wrote: the code it checks never ran)
    "django.core.exceptions.ImproperlyConfigured: Requested setting INSTALLED_APPS, but settings are not configured."
    " You must either define the environment variable DJANGO_SETTINGS_MODULE or call settings.configure() before"
    " accessing settings.",
]

RAN = [
    "AssertionError: expected 'not found' in message",  # the words, not the shell's line
    "tests/test_paths.py::test_missing_file_raises PASSED",
    "FileNotFoundError: [Errno 2] No such file or directory: 'data/input.csv'",  # the code's own file
    "ModuleNotFoundError: No module named 'mypackage.sub'",  # the work's own module, one of two errors
    "E   assert 'command' == 'commands'",
    "sh: warning: setlocale: LC_ALL: cannot change locale",
]


@pytest.mark.parametrize("line", COULD_NOT_RUN)
def test_a_line_saying_the_call_could_not_run_is_an_environment_problem(line: str) -> None:
    assert environment_problem(f"collecting ...\n{line}\n", 1)
    assert environment_problem(f"{'x' * 3000}\n{line}\n", 1)  # in the output's tail too


@pytest.mark.parametrize("line", RAN)
def test_a_line_that_only_looks_like_one_is_not(line: str) -> None:
    assert not environment_problem(f"Traceback (most recent call last):\nValueError: bad\n{line}\n", 1)


BROKE = [
    "bash: -c: line 1: unexpected EOF while looking for matching `''",
    "bash: -c: line 2: syntax error: unexpected end of file",
    "bash: -c: line 1: syntax error near unexpected token `('",
    "bash: line 1: cd: /repo/nowhere: No such file or directory",
    "EXECUTION TIMED OUT",
]


@pytest.mark.parametrize("line", BROKE)
def test_a_command_the_shell_could_not_run_fails_whatever_it_was(line: str) -> None:
    assert result_outcome(CallKind.READ, f"{line}\n[exit code 2]", False) is Outcome.FAIL


@pytest.mark.parametrize(
    "line",
    ["the run said EXECUTION TIMED OUT earlier", "echo 'syntax error' > notes.txt", "cd: a word in prose"],
)
def test_the_same_words_inside_a_line_that_ran_do_not_fail_a_read(line: str) -> None:
    assert result_outcome(CallKind.READ, f"{line}\n[exit code 0]", False) is Outcome.NEUTRAL
