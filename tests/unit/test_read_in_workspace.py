"""Evidence from the workspace (issue 51): whatever a failure's pointers say, the step to read
(`failure_reads.evidence_to_read`, the options `next_read` picks from) is never a file of the
interpreter's library or of site-packages. After an edit broke an import, pytest's collection
error led the re-ask to pin a view of `importlib/__init__.py`, lines 111-141, twice. The
pointers themselves no longer point there (`evidence.in_library`, test_evidence); this is the
step's own guard, for pointers read by another runner's rule or kept from before.
"""

from __future__ import annotations

import pytest

from proxy.engine.outputs.evidence import Pointers
from proxy.engine.state.failure import DiagnosticClass, RepairState
from proxy.engine.writing.failure_reads import evidence_to_read

TEST = "/workspace/tests/test_stack.py"


@pytest.mark.parametrize(
    ("source", "read"),
    [
        ("/workspace/stack.py", ["/workspace/stack.py"]),  # must: the workspace file that failed to import
        ("/root/.pyenv/versions/3.11.7/lib/python3.11/importlib/__init__.py", [TEST]),  # must not: the interpreter's
        ("/usr/lib/python3/dist-packages/attr/_make.py", [TEST]),  # must not: a library's
        ("/work/.venv/lib/python3.11/site-packages/_pytest/python.py", [TEST]),  # must not: pytest's own
    ],
)
def test_the_step_to_read_is_never_a_library_file(source: str, read: list[str]) -> None:
    pointers = Pointers(test_id=None, test_file=TEST, source_file=source, source_line=126)
    state = RepairState(DiagnosticClass.FAIL, failing_command="python -m pytest", pointers=pointers)
    assert [path for path, _line, _why in evidence_to_read(state)] == read
