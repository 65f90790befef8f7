"""The corpus report's measures that need no judge (`bench/measures.py`), each a case that counts
and one that does not: redundant, stale, late, repeated."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from chat import Chat

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from measures import Tripped, measure, observed_turns

from proxy.engine.plan.rules import Rules
from proxy.settings.kinds import Ask, CallKind
from proxy.settings.policy import default_policy

BASH = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    }
]
FAIL = "Traceback (most recent call last):\nValueError: bad\n[exit code: 1]"
CLASSIFIER = Rules.of(default_policy()).classifier


def _turns(steps: list[tuple[str, str]]) -> dict[int, list]:
    chat = Chat(tools=BASH)
    requests = []
    for command, printed in steps:
        chat.turn(("bash", {"command": command}, printed))
        requests.append(list(chat.messages))
    return observed_turns(requests, CLASSIFIER)


def _key(turns: dict[int, list], turn: int) -> str:
    return turns[turn][0].key


def test_a_rerun_asked_for_and_made_next_is_redundant() -> None:
    turns = _turns(
        [("python repro.py", FAIL), ("sed -i 's/a/b/' m.py", ""), ("cat m.py", "x"), ("python repro.py", FAIL)]
    )
    trip = Tripped("reverify_owed", Ask.RERUN, 3, 2, _key(turns, 1), ("repro.py",))
    assert measure(turns, trip).redundant is True


def test_a_rerun_asked_for_and_not_made_is_not() -> None:
    turns = _turns(
        [("python repro.py", FAIL), ("sed -i 's/a/b/' m.py", ""), ("cat m.py", "x"), ("ls", "m.py"), ("ls -a", "m.py")]
    )
    trip = Tripped("reverify_owed", Ask.RERUN, 3, 2, _key(turns, 1), ("repro.py",))
    measured = measure(turns, trip)
    assert measured.redundant is False and measured.late == 1


@pytest.mark.parametrize(("next_command", "redundant"), [("grep -n x m.py", True), ("cat a.py", False)])
def test_stopping_a_repeated_call_anyway_is_redundant(next_command: str, redundant: bool) -> None:
    turns = _turns([("cat a.py", "x")] * 3 + [(next_command, "y"), ("ls", "z")])
    trip = Tripped("repeat_call", Ask.STOP, 3, 1)
    measured = measure(turns, trip)
    assert measured.redundant is redundant and measured.repeated is (not redundant)


@pytest.mark.parametrize(("later", "stale"), [("result: 3", True), (FAIL, False)])
def test_a_failure_followed_by_a_clean_run_of_its_script_is_stale(later: str, stale: bool) -> None:
    turns = _turns([("python repro.py", FAIL), ("sed -i 's/a/b/' m.py", ""), ("python repro.py", later)])
    trip = Tripped("stuck_same_diagnostic", Ask.STEP, 3, 1, _key(turns, 1), ("repro.py",), step=(CallKind.EDIT, None))
    assert measure(turns, trip).stale is stale


@pytest.mark.parametrize(
    ("command", "stale"),
    [("python repro.py", True), ("python repro.py 2>&1 | tail -30", False), ("python repro.py || true", True)],
)
def test_a_piped_runs_exit_code_is_its_last_stages(command: str, stale: bool) -> None:
    """`<returncode>0</returncode>` over `1 failed`: taken at its word for the run itself (the plain
    rule), but through `| tail` the code is tail's, and the run is read by what it printed."""
    printed = "<returncode>0</returncode>\n<output>\nFAILED test_a.py::test_x - AssertionError\n1 failed</output>"
    turns = _turns([("python repro.py", FAIL), ("sed -i 's/a/b/' m.py", ""), (command, printed)])
    trip = Tripped("stuck_same_diagnostic", Ask.STEP, 3, 1, _key(turns, 1), ("repro.py",), step=(CallKind.EDIT, None))
    assert measure(turns, trip).stale is stale


def test_a_change_asked_for_and_made_next_is_redundant() -> None:
    turns = _turns([("cat a.py", "x"), ("cat b.py", "y"), ("sed -i 's/a/b/' a.py", "")])
    assert measure(turns, Tripped("read_stagnation", Ask.CHANGE, 1, 1)).redundant is True
    assert measure(turns, Tripped("read_stagnation", Ask.CHANGE, 3, 1)).redundant is None  # nothing after
