"""Agents that write their calls and results as text, read from their own requests.

`tests/scenarios/clients/*.jsonl` are the requests two real clients sent (captured by the
client matrix, `tests/matrix`), one per line: smolagents 1.26 (`Calling tools:` in the
assistant's text, `Observation:` in a user message) and aider 0.86 (SEARCH/REPLACE edits in
the reply; `--auto-test` reports the failing run in a user message, twice, its history
reordered from one request to the next). Each run fails the same test three times: it must
trip `stuck_same_diagnostic` on its third failure. The near miss is the same run whose third
failure is a different one: it must not.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from scenario_loader import analyse, engine

CLIENTS = Path(__file__).resolve().parents[1] / "scenarios" / "clients"
FAILING = b"assert -1 == 5"
OTHER = b"assert 0 == 5"


def requests(name: str) -> list[bytes]:
    return (CLIENTS / f"{name}_stuck.jsonl").read_bytes().splitlines()


def replay(bodies: list[bytes]) -> list[tuple[int, list[str]]]:
    """(same-failure streak, trips) after each request, through one engine as the server would."""
    eng = engine()
    out = []
    for body in bodies:
        planned = analyse(eng, body)
        assert planned is not None
        out.append(
            (planned.decision.state.repair.same_diagnostic_streak, [t.pattern.name for t in planned.decision.new_trips])
        )
    return out


def third_failure_differs(bodies: list[bytes]) -> list[bytes]:
    """The same run, but the last request's newest report shows another failure (earlier
    reports, already in earlier requests, stay as they were)."""
    last = bodies[-1]
    cut = last.rfind(b"FAILED tests/test_calc.py::test_add")
    start = last.rfind(b"Observation:", 0, cut)
    start = max(start, last.rfind(b"I ran this command:", 0, cut))
    changed = last[:start] + last[start:].replace(FAILING, OTHER)
    assert orjson.loads(changed) and changed != last
    return [*bodies[:-1], changed]


@pytest.mark.parametrize("client", ["smolagents", "aider"])
def test_three_same_failures_written_as_text_trip_stuck_same_diagnostic(client: str) -> None:
    seen = replay(requests(client))
    assert [streak for streak, _ in seen] == [0, 1, 2, 3]
    assert seen[-1][1][0] == "stuck_same_diagnostic"  # aider's exact round of edit and test: ping_pong sees it too
    assert all(trips == [] for _, trips in seen[:-1])


@pytest.mark.parametrize("client", ["smolagents", "aider"])
def test_not_stuck_when_the_third_failure_is_a_different_one(client: str) -> None:
    seen = replay(third_failure_differs(requests(client)))
    assert seen[-1] == (1, [])
