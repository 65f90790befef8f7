"""A long history first seen (after a restart, on another replica) whose fold runs past the
analysis budget: each request is forwarded as it came, and what was folded by then is kept, so
the next request reads on from there. Before, nothing was kept: every later request of that
conversation started again, ran out again, and was never analysed (at 600 messages, every
request paid the whole budget and got no repair)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from chat import Chat, edit, test_run, view

from proxy.dialects import CHAT, parse
from proxy.engine.core import Behind, Engine, Folded
from proxy.engine.state.budget import Budget, BudgetExceeded
from proxy.settings.policy import default_policy

HEADERS = {"X-Repair-Conversation": "long-history"}


def _ticks() -> Callable[[], float]:
    """A clock that moves on by one each time it is read: a budget of N lasts N - 1 turns."""
    return itertools.count().__next__


def _long_chat(turns: int) -> Chat:
    chat = Chat()
    for index in range(turns):
        chat.turn((view, test_run, edit)[index % 3]())
    return chat


def _fold(engine: Engine, chat: Chat, turns_per_request: int) -> tuple[Folded, int]:
    """Fold the request with a budget of a few turns, as often as it takes; how many times."""
    incoming = parse(CHAT, chat.bytes())
    assert incoming is not None
    request = engine.request(incoming.translation, HEADERS)
    for attempt in range(1, 40):
        try:
            return engine.fold(request, Budget.of(turns_per_request + 0.5, _ticks())), attempt
        except BudgetExceeded:
            continue
    raise AssertionError("never caught up")


def test_a_history_too_long_for_one_budget_is_folded_over_a_few_requests_as_if_at_once() -> None:
    chat = _long_chat(30)
    folded, attempts = _fold(Engine.of(default_policy()), chat, turns_per_request=8)
    assert attempts == 4  # 30 turns, 8 a request
    incoming = parse(CHAT, chat.bytes())
    assert incoming is not None
    whole = Engine.of(default_policy()).fold(Engine.of(default_policy()).request(incoming.translation, HEADERS))
    assert folded.state.turns == whole.state.turns == 30
    assert folded.state.repair == whole.state.repair
    assert folded.state.detectors == whole.state.detectors


def test_the_next_turn_after_catching_up_folds_within_one_budget() -> None:
    engine = Engine.of(default_policy())
    chat = _long_chat(30)
    folded, _ = _fold(engine, chat, turns_per_request=8)
    engine.cache.put(("default", folded.request.conversation), folded.state)
    _, attempts = _fold(engine, chat.turn(test_run()), turns_per_request=8)
    assert attempts == 1


@pytest.mark.parametrize("budget", [0.5, 1.5])
def test_a_budget_spent_before_any_turn_keeps_nothing(budget: float) -> None:
    engine = Engine.of(default_policy())
    incoming = parse(CHAT, _long_chat(6).bytes())
    assert incoming is not None
    request = engine.request(incoming.translation, HEADERS)
    with pytest.raises(BudgetExceeded):
        engine.fold(request, Budget.of(budget, _ticks()))
    assert engine.cache.get(("default", request.conversation)) is None


def test_a_fold_run_a_step_at_a_time_equals_the_fold_at_once() -> None:
    """How a conversation is caught up beside the traffic (`http.runtime.catchup`): one event a step."""
    chat = _long_chat(30)
    incoming = parse(CHAT, chat.bytes())
    assert incoming is not None
    stepped, whole = Engine.of(default_policy()), Engine.of(default_policy())
    request = stepped.request(incoming.translation, HEADERS)
    with pytest.raises(Behind) as behind:
        stepped.fold(request, behind=20)
    folding = behind.value.folding
    assert folding.unread == len(chat.messages) and stepped.cache.get(("default", request.conversation)) is None
    steps = 0
    while not folding.done:
        folding.step()
        steps += 1
    assert steps == 31  # the task (a user message), then one a turn
    stepped.caught_up(request, folding)
    at_once = whole.fold(whole.request(incoming.translation, HEADERS))
    kept = stepped.cache.get(("default", request.conversation))
    assert kept is not None and kept.turns == at_once.state.turns == 30
    assert kept.repair == at_once.state.repair and kept.detectors == at_once.state.detectors
    assert kept.injections == at_once.state.injections and kept.cursor == at_once.state.cursor
    _, attempts = _fold(stepped, chat.turn(test_run()), turns_per_request=8)
    assert attempts == 1  # the next request reads only what it adds


def test_a_conversation_within_reach_is_folded_in_the_request() -> None:
    engine = Engine.of(default_policy())
    chat = _long_chat(30)
    incoming = parse(CHAT, chat.bytes())
    assert incoming is not None
    first = engine.fold(engine.request(incoming.translation, HEADERS))
    engine.cache.put(("default", first.request.conversation), first.state)
    incoming = parse(CHAT, chat.turn(test_run()).turn(edit()).bytes())
    assert incoming is not None
    folded = engine.fold(engine.request(incoming.translation, HEADERS), behind=20)  # 4 messages unread
    assert folded.state.turns == 32


def test_a_catch_up_does_not_put_back_a_state_a_later_request_got_past() -> None:
    engine = Engine.of(default_policy())
    chat = _long_chat(30)
    incoming = parse(CHAT, chat.bytes())
    assert incoming is not None
    request = engine.request(incoming.translation, HEADERS)
    with pytest.raises(Behind) as behind:
        engine.fold(request, behind=20)
    later = parse(CHAT, chat.turn(test_run()).bytes())
    assert later is not None
    ahead = engine.fold(engine.request(later.translation, HEADERS))  # folded whole meanwhile
    engine.cache.put(("default", request.conversation), ahead.state)
    folding = behind.value.folding
    while not folding.done:
        folding.step()
    engine.caught_up(request, folding)
    kept = engine.cache.get(("default", request.conversation))
    assert kept is not None and kept.turns == 31
