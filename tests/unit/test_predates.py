"""A failure there without the agent's work (`RepairState.predates`): it arose with the agent's
changes in place and came back with every one of them put back. Read as a table of turns; the
finish gate does not hold a finish over such a failure."""

from __future__ import annotations

from typing import Any

import pytest
from chat import OPENHANDS_TOOLS, Chat, bash, edit, test_run
from scenario_loader import analyse, engine

from proxy.engine.plan.reply import Gate

Turn = tuple[str, dict[str, Any], str]

PUT_BACK = bash("cd /workspace && git checkout -- src/parse.py", "")
PUT_BACK_AND_RUN = bash(
    "cd /workspace && git checkout -- src/parse.py && python -m pytest tests/test_parse.py", "@pytest_addition_a"
)
OTHER = edit("/workspace/src/other.py", "x = 1", "x = 2")
UNSEEN = bash("cd /workspace && git apply fix.patch", "")
FINISH = {"type": "function", "function": {"name": "finish", "parameters": {"type": "object"}}}

CASES: list[tuple[str, list[Turn], bool]] = [
    ("arose on a change, seen again with it put back", [edit(), test_run(), PUT_BACK_AND_RUN], True),
    ("the same, the put-back and the run in two turns", [edit(), test_run(), PUT_BACK, test_run()], True),
    (
        "it stays so for that failure after new changes",
        [edit(), test_run(), PUT_BACK_AND_RUN, edit(), test_run()],
        True,
    ),
    ("the failure the agent began from, put back or not", [test_run(), edit(), test_run(), PUT_BACK_AND_RUN], False),
    ("another changed file still in place", [OTHER, edit(), test_run(), PUT_BACK_AND_RUN], False),
    ("a change to files the command does not name", [UNSEEN, edit(), test_run(), PUT_BACK_AND_RUN], False),
    ("never seen without the change", [edit(), test_run(), test_run(), test_run()], False),
    (
        "seen on a change, cleared by a pass, then seen with every change put back",
        [edit(), test_run(), test_run("@pytest_pass"), PUT_BACK_AND_RUN],
        True,
    ),
    (
        "the task's own failure, brought back by a change and then seen with it put back",
        [test_run(), edit(), test_run("@pytest_pass"), edit(new="a - b"), test_run(), PUT_BACK_AND_RUN],
        False,
    ),
    (
        "a new failure after the put-back",
        [edit(), test_run(), PUT_BACK, test_run("@pytest_addition_other_value")],
        False,
    ),
]


def _repair(turns: list[Turn], tools: list[dict[str, Any]] | None = None) -> Any:
    chat = Chat(tools=tools) if tools is not None else Chat()
    for turn in turns:
        chat.turn(turn)
    planned = analyse(engine(), chat.bytes())
    assert planned is not None
    return planned


@pytest.mark.parametrize(("case", "turns", "predates"), CASES, ids=[c[0] for c in CASES])
def test_a_failure_predates_the_agents_work_only_when_seen_with_every_change_put_back(
    case: str, turns: list[Turn], predates: bool
) -> None:
    repair = _repair(turns).decision.state.repair
    assert repair.live and repair.predates is predates, case


def test_a_finish_over_a_failure_that_predates_the_agents_work_is_not_held() -> None:
    """The agent ends with a failure of the repository as it was (corpus: baseline failures the
    agents named and left, rightly): the finish gate stands aside; with the change in place, it holds."""
    tools = [*OPENHANDS_TOOLS, FINISH]
    assert Gate.FINISH in _repair([edit(), test_run()], tools).decision.reply.gates
    assert Gate.FINISH not in _repair([edit(), test_run(), PUT_BACK_AND_RUN], tools).decision.reply.gates
