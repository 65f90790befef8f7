"""The port's own footing: every pattern of ours is sorted into loop or not, and every ported
transcript is a valid chat transcript (each tool call answered, right after it, once)."""

from __future__ import annotations

import pytest
import test_peer_gemini_cli
import test_peer_openhands_sdk
import test_peer_openhands_v0
from peer_kit import Case, registry_is_sorted_into_loops_or_not, requests

SUITES = {
    "openhands_v0": test_peer_openhands_v0,
    "openhands_sdk": test_peer_openhands_sdk,
    "gemini_cli": test_peer_gemini_cli,
}
ALL = [pytest.param(c, id=f"{name}:{c.id}") for name, suite in SUITES.items() for c in suite.CASES]


def test_every_pattern_is_a_loop_pattern_or_not() -> None:
    """A new pattern must be sorted before it can count (or not) as our "stuck"."""
    assert registry_is_sorted_into_loops_or_not()


@pytest.mark.parametrize("suite", SUITES.values(), ids=SUITES.keys())
def test_case_ids_are_unique_within_a_suite(suite: object) -> None:
    ids = [c.id for c in suite.CASES]  # type: ignore[attr-defined]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("case", ALL)
def test_transcript_is_well_formed(case: Case) -> None:
    messages = case.convo.messages
    assert [m["role"] for m in messages[:2]] == ["system", "user"]
    seen: set[str] = set()
    for i, message in enumerate(messages):
        calls = [c["id"] for c in message.get("tool_calls") or []]
        answers = [m.get("tool_call_id") for m in messages[i + 1 : i + 1 + len(calls)]]
        assert answers == calls, f"message {i}: its calls are not answered right after it"
        assert not seen & set(calls)
        seen |= set(calls)
    assert sum(m["role"] == "tool" for m in messages) == len(seen)
    assert requests(messages)[-1] == len(messages)
    assert 0 <= case.since <= len(messages)
