"""`no_effect`'s reading of whether a write was to the script a run names (the failure model then holds
its streak, so the same failure again is this pattern's to count): a table."""

from __future__ import annotations

import pytest

from proxy.engine.detectors.no_effect import _names


@pytest.mark.parametrize(
    ("command", "name", "named"),
    [
        ("python /workspace/repro.py", "repro.py", True),
        ("cd /workspace && python repro.py --fast", "repro.py", True),
        # the demo's run: a library file named like the test, not the test itself
        ("cd /workspace && python -m pytest tests/test_parse.py", "parse.py", False),
        ("python my-repro.py", "repro.py", False),
        ("bash run.sh", "run.sh", True),
    ],
)
def test_a_write_counts_as_the_runs_own_only_when_the_run_names_that_file(command: str, name: str, named: bool) -> None:
    assert _names(command, name) is named
