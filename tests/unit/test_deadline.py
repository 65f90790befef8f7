"""The analysis budget bounds one request, not only one turn (issue #52): the fold of a request
stops where its reading is once the budget is spent, inside a turn and inside one long output,
and the engine keeps nothing of the turn it stopped in. Clocks here are counters (a budget of N
lasts N readings of the clock): nothing depends on how fast the machine is."""

from __future__ import annotations

import itertools
import traceback
from collections.abc import Callable

import pytest
from chat import Chat, edit, test_run

from proxy.dialects import CHAT, parse
from proxy.engine.core import Engine
from proxy.engine.state.budget import Budget, BudgetExceeded
from proxy.engine.text import deadline
from proxy.settings.policy import default_policy

HEADERS = {"X-Repair-Conversation": "one-long-turn"}
LONG = "tests/test_mod.py::test_case PASSED\n" * 1800 + "FAILED tests/test_calc.py::test_add - assert 4 == 3\n"
"""A failing test run's output of about 65,000 characters."""


class _Clock:
    """A clock that moves on by one each time it is read, counting its readings."""

    def __init__(self) -> None:
        self._ticks = itertools.count()
        self.read = 0

    def __call__(self) -> float:
        self.read += 1
        return float(next(self._ticks))


def _request(engine: Engine, chat: Chat):  # type: ignore[no-untyped-def]
    incoming = parse(CHAT, chat.bytes())
    assert incoming is not None
    return engine.request(incoming.translation, HEADERS)


def _stopped_in(fold: Callable[[], object]) -> list[str]:
    """The functions the fold was in when the budget stopped it (where the check raised, before
    the fold raised it again with what it kept)."""
    with pytest.raises(BudgetExceeded) as raised:
        fold()
    first = raised.value.__context__ or raised.value
    return [frame.name for frame in traceback.extract_tb(first.__traceback__)]


def test_a_request_of_one_turn_stops_inside_its_output_once_its_budget_is_spent() -> None:
    """One turn, one output: the checks before the user's message and before the turn pass (the
    budget is not spent yet), and the reading stops the fold at its next look at the clock."""
    engine = Engine.of(default_policy())
    request = _request(engine, Chat().turn(test_run(LONG)))
    clock = _Clock()
    inside = _stopped_in(lambda: engine.fold(request, Budget.of(2.5, clock)))
    assert clock.read == 4  # made, checked before the user's message, before the turn, inside it
    assert {"observe", "fold_turn", "normalise", "evidence"} & set(inside)  # in the turn's reading
    assert engine.cache.get(("default", request.conversation)) is None  # nothing of the turn kept


def test_stopped_inside_a_turn_the_turns_before_it_are_kept_and_it_is_read_again_next_time() -> None:
    """Stopped in the second turn: the first is kept (the next request reads on from the second),
    and the second, read again from its start, ends as if it had never been stopped."""
    engine = Engine.of(default_policy())
    chat = Chat().turn(test_run()).turn(edit()).turn(test_run(LONG))
    request = _request(engine, chat)
    stopped = True
    for budget in itertools.count(2):
        try:
            folded = engine.fold(request, Budget.of(budget + 0.5, _Clock()))
            break
        except BudgetExceeded as exc:
            stopped = stopped and exc.progress is not None
    assert stopped
    whole = Engine.of(default_policy()).fold(_request(Engine.of(default_policy()), chat))
    assert folded.state.turns == whole.state.turns == 3
    assert folded.state.repair == whole.state.repair


def test_the_clock_is_read_once_for_every_32k_characters_read_not_at_every_line() -> None:
    engine = Engine.of(default_policy())
    clock = _Clock()
    engine.fold(_request(engine, Chat().turn(test_run(LONG))), Budget.of(1e9, clock))
    assert 3 < clock.read <= 3 + 6 * len(LONG) // deadline.READ_STEP  # made, two events, the reading


def test_no_deadline_is_in_force_outside_a_fold() -> None:
    """Replay, tests and benchmarks read with none; a fold's ends with it, stopped or not."""
    deadline.checkpoint(10 * deadline.READ_STEP)  # does nothing
    engine = Engine.of(default_policy())
    with pytest.raises(BudgetExceeded):
        engine.fold(_request(engine, Chat().turn(test_run(LONG))), Budget.of(2.5, _Clock()))
    deadline.checkpoint(10 * deadline.READ_STEP)  # still nothing
