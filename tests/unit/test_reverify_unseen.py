"""Edits a failing check cannot see (`reverify_owed.unseen_by`), as a table: a check that runs only
Python, after edits of sources no Python program loads."""

from __future__ import annotations

import pytest

from proxy.engine.detectors.reverify_owed import unseen_by
from proxy.engine.state.failure import DiagnosticClass, RepairState

JAVA = "src/main/java/com/acme/TextBuffer.java"


@pytest.mark.parametrize(
    ("command", "edited", "unseen"),
    [
        ("python reproduce_bug.py", (JAVA,), True),
        ("cd /repo && python3 reproduce_bug.py 2>&1 | tail -20", (JAVA, "web/app.ts"), True),
        ("pytest -q tests/test_x.py", ("cmd/main.go",), True),
        ("python reproduce_bug.py", (JAVA, "reproduce_bug.py"), False),  # the script itself changed
        ("python reproduce_bug.py", ("ext/speedups.c",), False),  # an extension the check may build
        ("python reproduce_bug.py", ("setup.cfg",), False),
        ("mvn -q test", (JAVA,), False),  # the check builds the Java
        ("bash run.sh", (JAVA,), False),  # what the script runs is not known
        ("python run.py && mvn test", (JAVA,), False),
    ],
)
def test_a_python_check_does_not_see_edits_of_sources_it_cannot_load(
    command: str, edited: tuple[str, ...], unseen: bool
) -> None:
    repair = RepairState(DiagnosticClass.FAIL, failing_command=command, edited_since_failure=edited)
    assert unseen_by(repair) is unseen
