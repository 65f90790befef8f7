"""An agent's word that a failure is not its change's (`text/dismissals.py`), as a table: what
real agents wrote before submitting with a test failing (corpus, mini-swe-agent 2.x), and text
that only mentions the same words."""

from __future__ import annotations

import pytest

from proxy.engine.text.dismissals import dismisses

CASES = [
    ("The test failure is unrelated to our changes. It's probably a numerical precision issue.", True),
    ("This is a pre-existing issue in the test file, not related to our changes.", True),
    ("These errors are independent of my fix.", True),
    ("The test was already failing before our change.", True),
    ("Let me open an unrelated file to compare the style.", False),
    ("The fix is related to the changes in the parser.", False),
    ("I will fix the existing issue in parse().", False),
    ("The test still fails; the change is incomplete.", False),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[c[0][:48] for c in CASES])
def test_what_sets_a_failure_aside(text: str, expected: bool) -> None:
    assert dismisses(text) is expected
